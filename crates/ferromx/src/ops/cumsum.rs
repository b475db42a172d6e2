//! `_np_cumsum`: the running sum along one axis, as one sequential pass per line.
//!
//! Sequential in the array's own dtype on purpose: NumPy (and MXNet) add in the element
//! type, so a float16 running sum rounds at every step; a tree of shifted additions gives
//! other (more precise) float16 values than the ones programs compare against.

use crate::autograd::{needs_record, record};
use crate::dtype::Elem;
use crate::error::Result;
use crate::ndarray::NDArray;
use crate::opdef::{one, param, push_call, Aliases, Attrs, Example, KernelSlot, Meta, OpCall, OpDef, ParamKind as K};
use crate::with_dtype;

/// The running sum of `x` along `axis` (from the end when `reverse`, which is the
/// gradient's direction). The dtype is kept; the caller casts first for `dtype=`.
pub fn cumsum(x: &NDArray, axis: i64, reverse: bool) -> Result<NDArray> {
    let name = DEFS[0].name;
    let ax = x.shape().axis(name, axis)?;
    let (outer, n, inner) = x.shape().around(ax);
    let out = x.empty_like()?;
    if out.size() > 0 {
        let ints = [outer as i64, n as i64, inner as i64, i64::from(reverse)];
        push_call(OpCall::new(&DEFS[0], &[x], &[&out]).with_ints(&ints))?;
    }
    if needs_record(&[x]) {
        record(name, &[x], &[&out], Box::new(move |g| Ok(vec![Some(cumsum(&g[0], ax as i64, !reverse)?)])));
    }
    Ok(out)
}

fn cumsum_kernel(c: &OpCall, k: &crate::storage::Kernel) -> std::result::Result<(), ferromx_engine::OpFailure> {
    // ints: (outer, n, inner) extents around the axis, then 1 to run from the end
    let (outer, n, inner) = (c.ints[0] as usize, c.ints[1] as usize, c.ints[2] as usize);
    let reverse = c.ints[3] != 0;
    with_dtype!(k.out_dtype(0), T, {
        let (x, o) = (k.input::<T>(0), k.output::<T>(0));
        let float = T::DTYPE.is_float();
        for b in 0..outer {
            for j in 0..inner {
                let (mut fa, mut ia) = (0.0f64, 0i64);
                for s in 0..n {
                    let t = if reverse { n - 1 - s } else { s };
                    let idx = (b * n + t) * inner + j;
                    // one rounding to T per step, as an addition in T
                    o[idx] = if float {
                        fa = T::from_f64(fa + x[idx].to_f64()).to_f64();
                        T::from_f64(fa)
                    } else {
                        ia = ia.wrapping_add(x[idx].to_i64());
                        T::from_i64(ia)
                    };
                }
            }
        }
    });
    Ok(())
}

fn infer_cumsum(_d: &OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    Ok(vec![ins[0].clone()])
}

/// `_np_cumsum` (called by `np.cumsum`, `nd.cumsum` and the `cumsum` method, which flatten
/// for `axis=None` and cast for `dtype=`).
pub static DEFS: &[OpDef] = &[OpDef {
    name: "_np_cumsum",
    aliases: Aliases::NONE,
    inputs: &["a"],
    params: &[param("axis", K::Int, Some("0"), "The axis to sum along.")],
    doc: "The running sum along `axis`, added in the array's dtype.",
    forward: |i| one(cumsum(i.x(0)?, i.i64("axis")?, false)),
    infer: Some(infer_cumsum),
    cpu: KernelSlot::Call(cumsum_kernel),
    example: Some(Example { shapes: &[&[2, 3]], attrs: "axis=1", range: (0.5, 1.5) }),
    ..OpDef::BASE
}];
