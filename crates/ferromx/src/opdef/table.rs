//! The operator table: every family's definitions, looked up by name.

use super::{Aliases, Attr, Attrs, Grad, GraphForm, Invocation, KernelSlot, OpDef, ParamDef, ParamKind};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops;
use crate::{Context, DType};
use std::collections::HashMap;
use std::sync::OnceLock;

/// Every family's definitions. Adding a family is one line here.
fn families() -> [&'static [OpDef]; 34] {
    [
        ops::creation::DEFS,
        ops::unary::DEFS,
        ops::binary::DEFS,
        ops::predicate::DEFS,
        ops::reduce::DEFS,
        ops::linalg::DEFS,
        ops::linalg::decomp::DEFS,
        ops::binary::bitwise::DEFS,
        ops::shape::DEFS,
        ops::index::DEFS,
        ops::sort::DEFS,
        ops::nn::DEFS,
        ops::conv::DEFS,
        ops::pool::DEFS,
        ops::norm::DEFS,
        ops::optim::DEFS,
        ops::random::DEFS,
        ops::image::DEFS,
        ops::sequence::DEFS,
        ops::loss_head::DEFS,
        ops::allclose::DEFS,
        ops::cumsum::DEFS,
        ops::ctc::DEFS,
        ops::conv::unfold::DEFS,
        ops::add_n::DEFS,
        ops::vision::DEFS,
        ops::sparse_reg::DEFS,
        ops::detect::DEFS,
        ops::contrib::DEFS,
        ops::output_heads::DEFS,
        ops::pad::DEFS,
        ops::random::domain::DEFS,
        ops::quantization::DEFS,
        ops::DEFS,
    ]
}

/// Every operator definition, in family order.
pub fn table() -> &'static [&'static OpDef] {
    static T: OnceLock<Vec<&'static OpDef>> = OnceLock::new();
    T.get_or_init(|| families().iter().flat_map(|f| f.iter()).collect())
}

/// The definition named `name` (MXNet's name).
pub fn find(name: &str) -> Option<&'static OpDef> {
    static M: OnceLock<HashMap<&'static str, &'static OpDef>> = OnceLock::new();
    M.get_or_init(|| table().iter().map(|d| (d.name, *d)).collect()).get(name).copied()
}

/// Runs operator `name` on `inputs` with `attrs`.
pub fn invoke(name: &str, inputs: &[Option<NDArray>], attrs: &Attrs) -> Result<Vec<NDArray>> {
    let def = find(name).ok_or_else(|| Error::value(name, "no such operator"))?;
    invoke_def(def, inputs, attrs)
}

/// Runs a definition on `inputs` with `attrs`; errors name the operator.
pub fn invoke_def(def: &'static OpDef, inputs: &[Option<NDArray>], attrs: &Attrs) -> Result<Vec<NDArray>> {
    check_attrs(def, attrs)?;
    let outs = (def.forward)(&Invocation { def, inputs, attrs }).map_err(|e| e.in_op(def.name))?;
    if crate::autograd::is_recording() {
        let ins: Vec<Option<&NDArray>> = inputs.iter().map(|x| x.as_ref()).collect();
        let orefs: Vec<&NDArray> = outs.iter().collect();
        crate::autograd::annotate(def.name, attrs, &ins, &orefs);
    }
    Ok(outs)
}

/// Attributes the definition does not declare are an error naming them.
fn check_attrs(def: &OpDef, attrs: &Attrs) -> Result<()> {
    for (k, _) in &attrs.0 {
        if !def.params.iter().any(|p| p.name == *k) {
            let known: Vec<&str> = def.params.iter().map(|p| p.name).collect();
            return Err(Error::value(
                def.name,
                format!(
                    "unknown parameter '{k}' (parameters: {})",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                ),
            ));
        }
    }
    Ok(())
}

/// A forward that fails: the base of definitions that must set their own.
fn no_forward(inv: &Invocation<'_>) -> Result<Vec<NDArray>> {
    Err(Error::value(inv.def.name, "operator has no forward"))
}

impl OpDef {
    /// Defaults for struct-update syntax in family tables (`..OpDef::BASE`).
    pub const BASE: OpDef = OpDef {
        name: "",
        aliases: Aliases::NONE,
        inputs: &[],
        outputs: &["output"],
        aux: &[],
        params: &[],
        doc: "",
        infer: None,
        forward: no_forward,
        grad: Grad::Recorded,
        mutates: &[],
        workspace: None,
        cpu: KernelSlot::Inline,
        gpu: KernelSlot::Empty,
        scalar: None,
        example: None,
        graph: GraphForm::PLAIN,
    };

    /// The declared parameter `k` (a programming error when undeclared).
    pub fn param(&self, k: &str) -> Result<&ParamDef> {
        self.params
            .iter()
            .find(|p| p.name == k)
            .ok_or_else(|| Error::value(self.name, format!("internal error: parameter '{k}' is not declared")))
    }
}

/// Parses a default written in Python spelling.
pub(crate) fn parse_default(kind: ParamKind, s: &str) -> Attr {
    let s = s.trim();
    if s == "None" {
        return Attr::None;
    }
    if s == "True" || s == "False" {
        return Attr::Bool(s == "True");
    }
    if let Some(q) = s.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
        return Attr::Str(q.to_string());
    }
    if let Some(t) = s.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        if kind == ParamKind::Floats {
            return Attr::Floats(t.split(',').filter_map(|p| p.trim().parse().ok()).collect());
        }
        return Attr::Ints(
            t.split(',').filter(|p| !p.trim().is_empty()).filter_map(|p| p.trim().parse().ok()).collect(),
        );
    }
    match kind {
        ParamKind::Float => s.parse().map(Attr::Float).unwrap_or(Attr::None),
        _ => s
            .parse()
            .map(Attr::Int)
            .or_else(|_| s.parse().map(Attr::Float))
            .unwrap_or_else(|_| Attr::Str(s.to_string())),
    }
}

/// Typed reading of a call's attributes, with the definition's defaults.
impl Invocation<'_> {
    fn default_attrs(&self, k: &str) -> Result<Attrs> {
        let p = self.def.param(k)?;
        let d = p.default.map(|d| parse_default(p.kind, d)).unwrap_or(Attr::None);
        Ok(Attrs(vec![(k.to_string(), d)]))
    }
    fn given(&self, k: &str) -> bool {
        self.attrs.get(k).is_some()
    }
    fn pick<T>(&self, k: &str, f: impl Fn(&Attrs) -> Result<T>) -> Result<T> {
        if self.given(k) {
            self.def.param(k)?;
            f(self.attrs)
        } else {
            f(&self.default_attrs(k)?)
        }
    }
    /// Float parameter.
    pub fn f64(&self, k: &str) -> Result<f64> {
        let n = self.def.name;
        self.pick(k, |a| a.opt_f64(n, k))?.ok_or_else(|| missing(n, k))
    }
    /// Optional float parameter (default `None`).
    pub fn opt_f64(&self, k: &str) -> Result<Option<f64>> {
        self.pick(k, |a| a.opt_f64(self.def.name, k))
    }
    /// Int parameter.
    pub fn i64(&self, k: &str) -> Result<i64> {
        let n = self.def.name;
        self.pick(k, |a| a.opt_i64(n, k))?.ok_or_else(|| missing(n, k))
    }
    /// Optional int parameter.
    pub fn opt_i64(&self, k: &str) -> Result<Option<i64>> {
        self.pick(k, |a| a.opt_i64(self.def.name, k))
    }
    /// Int parameter where an explicit `None` means something (`axis=None`: flatten).
    pub fn i64_or_none(&self, k: &str) -> Result<Option<i64>> {
        let n = self.def.name;
        match self.attrs.0.iter().find(|(name, _)| name == k).map(|(_, v)| v) {
            Some(Attr::None) => Ok(None),
            Some(_) => self.attrs.opt_i64(n, k),
            None => self.default_attrs(k)?.opt_i64(n, k),
        }
    }
    /// Bool parameter.
    pub fn bool(&self, k: &str) -> Result<bool> {
        self.pick(k, |a| a.bool(self.def.name, k, false))
    }
    /// String parameter.
    pub fn str(&self, k: &str) -> Result<String> {
        let n = self.def.name;
        self.pick(k, |a| a.str(n, k, "").map(str::to_string))
    }
    /// Optional int-tuple parameter.
    pub fn ints(&self, k: &str) -> Result<Option<Vec<i64>>> {
        self.pick(k, |a| a.ints(self.def.name, k))
    }
    /// Float-tuple parameter.
    pub fn floats(&self, k: &str) -> Result<Option<Vec<f64>>> {
        self.pick(k, |a| a.floats(self.def.name, k))
    }
    /// Required int-tuple parameter.
    pub fn req_ints(&self, k: &str) -> Result<Vec<i64>> {
        self.ints(k)?.ok_or_else(|| missing(self.def.name, k))
    }
    /// Shape parameter.
    pub fn shape(&self, k: &str) -> Result<crate::Shape> {
        self.pick(k, |a| a.shape(self.def.name, k))
    }
    /// Dtype parameter (`default` when absent and the definition's default is `None`).
    pub fn dtype(&self, k: &str, default: DType) -> Result<DType> {
        self.pick(k, |a| a.dtype(self.def.name, k, default))
    }
    /// Context parameter.
    pub fn ctx(&self, k: &str) -> Result<Context> {
        self.pick(k, |a| a.ctx(self.def.name, k))
    }
}

fn missing(op: &str, k: &str) -> Error {
    Error::value(op, format!("required parameter '{k}' is missing"))
}
