//! Graph inference rules of the shape family: input shapes from output shapes for
//! `split` and `concat` (the backward half of MXNet's `FInferShape`), on partial shapes
//! (0 dims unknown).

use crate::error::Result;
use crate::opdef::Invocation;
use crate::shape::Shape;

/// `split`'s input from one of its (equal) outputs: the split axis `num_outputs` times
/// longer, or inserted with `squeeze_axis`.
pub(super) fn split_input_shapes(
    i: &Invocation<'_>,
    ins: &[Option<Shape>],
    outs: &[Option<Shape>],
) -> Result<Vec<Option<Shape>>> {
    let mut res = vec![None; ins.len()];
    let Some(out) = outs.iter().flatten().next() else { return Ok(res) };
    let (o, k, axis) = (out.dims(), i.i64("num_outputs")?.max(0) as usize, i.i64("axis")?);
    if res.is_empty() {
        return Ok(res);
    }
    let norm = |n: usize| -> Option<usize> {
        let a = if axis < 0 { axis + n as i64 } else { axis };
        (0..n as i64).contains(&a).then_some(a as usize)
    };
    if i.bool("squeeze_axis")? {
        if let Some(ax) = norm(o.len() + 1) {
            let mut d = o.to_vec();
            d.insert(ax, k);
            res[0] = Some(Shape::new(&d));
        }
    } else if let Some(ax) = norm(o.len()) {
        let mut d = o.to_vec();
        d[ax] *= k;
        res[0] = Some(Shape::new(&d));
    }
    Ok(res)
}

/// `concat`'s inputs from its output: each input has the output's shape off the join
/// axis (its own length on it); a single input of unknown length on the axis gets what
/// the others leave of the output's.
pub(super) fn concat_input_shapes(
    i: &Invocation<'_>,
    ins: &[Option<Shape>],
    outs: &[Option<Shape>],
) -> Result<Vec<Option<Shape>>> {
    let Some(out) = outs.first().cloned().flatten() else { return Ok(vec![None; ins.len()]) };
    let o = out.dims();
    let dim = i.i64("dim")?;
    let a = if dim < 0 { dim + o.len() as i64 } else { dim };
    if !(0..o.len() as i64).contains(&a) {
        return Ok(vec![None; ins.len()]);
    }
    let ax = a as usize;
    let own = |s: &Option<Shape>| s.as_ref().filter(|s| s.ndim() == o.len()).map_or(0, |s| s.dims()[ax]);
    let mut res: Vec<Option<Shape>> = ins
        .iter()
        .map(|s| {
            let mut d = o.to_vec();
            d[ax] = own(s);
            Some(Shape::new(&d))
        })
        .collect();
    let unknown: Vec<usize> = (0..ins.len()).filter(|&k| own(&ins[k]) == 0).collect();
    if let ([u], true) = (unknown.as_slice(), o[ax] > 0) {
        let rest: usize = (0..ins.len()).filter(|k| k != u).map(|k| own(&ins[k])).sum();
        if let (Some(slot), Some(left)) = (res.get_mut(*u), o[ax].checked_sub(rest)) {
            let mut d = o.to_vec();
            d[ax] = left;
            *slot = Some(Shape::new(&d));
        }
    }
    Ok(res)
}
