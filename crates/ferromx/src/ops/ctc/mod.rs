//! `CTCLoss` (`ctc_loss`, `contrib.CTCLoss`): connectionist temporal classification
//! (Graves et al., 2006) as one kernel.
//!
//! Why one kernel: the loss is a dynamic programme over time and the extended label
//! sequence; composed of array operators it costs a handful of engine ops per time step.
//! As MXNet's operator, the forward computes the gradient with respect to the activations
//! too (the forward-backward recursions share their work) and keeps it for the backward,
//! which only scales it by the output gradient of each sample.

mod cpu;
#[cfg(test)]
mod tests;

use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{param, push_call, Aliases, Attrs, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamKind as K};
use crate::ops;
use crate::shape::Shape;

const PARAMS: &[crate::opdef::ParamDef] = &[
    param("use_data_lengths", K::Bool, Some("False"), "Read each sequence's length from `data_lengths`."),
    param("use_label_lengths", K::Bool, Some("False"), "Read each label's length from `label_lengths`."),
    param(
        "blank_label",
        K::Str,
        Some("'first'"),
        "'first': class 0 is the blank and labels are padded with 0; 'last': class C-1 is the blank \
         and labels are padded with -1.",
    ),
];

/// The CTC operator.
pub static DEFS: &[OpDef] = &[OpDef {
    name: "CTCLoss",
    aliases: Aliases { nd: &["ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"], np: &[], npx: &[], fluent: false },
    inputs: &["data", "label", "data_lengths", "label_lengths"],
    params: PARAMS,
    doc: "The CTC loss of unnormalised activations `data` (time, batch, classes) for `label` (batch, \
          label length): one negative log-likelihood per sample; differentiable in `data`.",
    forward,
    infer: Some(infer),
    cpu: KernelSlot::Call(cpu::ctc_kernel),
    graph: crate::opdef::GraphForm {
        inputs: Some(crate::opdef::inputs_with_used_lengths),
        // MXNet's node keeps the activation gradient as a second, hidden output, and
        // names its outputs by number (`output0`)
        total: crate::opdef::OutputCount::Fixed(2),
        ..crate::opdef::GraphForm::PLAIN
    },
    ..OpDef::BASE
}];

/// What the flags say about the inputs after `data` and `label`.
struct Cfg {
    use_data: bool,
    use_label: bool,
    blank_first: bool,
}

fn cfg(name: &str, attrs: &Attrs) -> Result<Cfg> {
    let blank = attrs.str(name, "blank_label", "first")?;
    let blank_first = match blank.trim_matches('\'') {
        "first" => true,
        "last" => false,
        other => return Err(Error::value(name, format!("blank_label must be 'first' or 'last', got '{other}'"))),
    };
    Ok(Cfg {
        use_data: attrs.bool(name, "use_data_lengths", false)?,
        use_label: attrs.bool(name, "use_label_lengths", false)?,
        blank_first,
    })
}

/// Checks the shapes: data (T, N, C), label (N, L), lengths (N,).
fn check(name: &str, c: &Cfg, ins: &[&Shape]) -> Result<()> {
    let want = 2 + usize::from(c.use_data) + usize::from(c.use_label);
    if ins.len() != want {
        return Err(Error::value(
            name,
            format!(
                "expects {want} inputs (data, label{}{}), got {}",
                if c.use_data { ", data_lengths" } else { "" },
                if c.use_label { ", label_lengths" } else { "" },
                ins.len()
            ),
        ));
    }
    let (d, l) = (ins[0], ins[1]);
    if d.ndim() != 3 || l.ndim() != 2 || l.dims()[0] != d.dims()[1] {
        return Err(Error::shape(name, &[d, l], "data must be (time, batch, classes) and label (batch, length)"));
    }
    if d.dims()[2] < 2 {
        return Err(Error::shape(name, &[d], "needs at least 2 classes (one is the blank)"));
    }
    for s in &ins[2..] {
        if s.dims() != [d.dims()[1]] {
            return Err(Error::shape(name, &[d, s], "a lengths input must be (batch,)"));
        }
    }
    Ok(())
}

fn infer(def: &OpDef, attrs: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let c = cfg(def.name, attrs)?;
    let shapes: Vec<&Shape> = ins.iter().map(|m| &m.shape).collect();
    check(def.name, &c, &shapes)?;
    let d = &ins[0];
    if !d.dtype.is_float() {
        return Err(Error::dtype(def.name, format!("data must be a float array, got {:?}", d.dtype)));
    }
    Ok(vec![Meta { shape: Shape::from(vec![d.shape.dims()[1]]), dtype: d.dtype, ctx: d.ctx }])
}

fn forward(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let name = i.def.name;
    let c = cfg(name, i.attrs)?;
    let ins = i.all();
    let refs: Vec<&NDArray> = ins.iter().collect();
    let metas: Vec<Meta> = ins.iter().map(Meta::of).collect();
    let loss_meta = infer(i.def, i.attrs, &metas)?.remove(0);
    let data = refs[0];
    let loss = NDArray::empty(loss_meta.shape, loss_meta.dtype, loss_meta.ctx)?;
    let grad = data.empty_like()?;
    if data.size() > 0 || loss.size() > 0 {
        let (d, l) = (data.dims(), refs[1].dims());
        let ints = [
            i64::from(c.use_data),
            i64::from(c.use_label),
            i64::from(c.blank_first),
            d[0] as i64,
            d[1] as i64,
            d[2] as i64,
            l[1] as i64,
        ];
        push_call(OpCall::new(i.def, &refs, &[&loss, &grad]).with_ints(&ints))?;
    }
    if needs_record(&refs[..1]) {
        let n = data.dims()[1];
        let saved = grad.clone();
        record(
            name,
            &refs[..1],
            &[&loss],
            Box::new(move |g| {
                // d loss_n / d data[t, n, c] was computed by the forward; scale it per sample
                let scale = ops::reshape_to(&g[0], Shape::from(vec![1, n, 1]))?;
                Ok(vec![Some(ops::mul(&saved, &scale)?)])
            }),
        );
    }
    Ok(vec![loss])
}
