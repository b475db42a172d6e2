//! Attribute values as frontends pass them (MXNet's attribute spelling), and
//! their typed, validated reading: every error names the operator and the
//! attribute.

use crate::error::{Error, Result};
use crate::shape::Shape;
use crate::{Context, DType};

/// An attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    /// Python None.
    None,
    /// bool
    Bool(bool),
    /// int
    Int(i64),
    /// float
    Float(f64),
    /// str
    Str(String),
    /// tuple of ints
    Ints(Vec<i64>),
    /// tuple of floats (with at least one non-integer element)
    Floats(Vec<f64>),
}

impl std::fmt::Display for Attr {
    /// Python's spelling, for error messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Attr::None => write!(f, "None"),
            Attr::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            Attr::Int(v) => write!(f, "{v}"),
            Attr::Float(v) => write!(f, "{v:?}"),
            Attr::Str(s) => write!(f, "'{s}'"),
            Attr::Ints(v) => {
                let s: Vec<String> = v.iter().map(|x| x.to_string()).collect();
                if v.len() == 1 {
                    write!(f, "({},)", s[0])
                } else {
                    write!(f, "({})", s.join(", "))
                }
            }
            Attr::Floats(v) => {
                let s: Vec<String> = v.iter().map(|x| format!("{x:?}")).collect();
                write!(f, "({}{})", s.join(", "), if v.len() == 1 { "," } else { "" })
            }
        }
    }
}

/// Named attributes of one call.
#[derive(Clone, Debug, Default)]
pub struct Attrs(pub Vec<(String, Attr)>);

impl Attrs {
    pub(crate) fn get(&self, k: &str) -> Option<&Attr> {
        self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v).filter(|v| **v != Attr::None)
    }
    fn err(op: &str, k: &str, what: &str, v: &Attr) -> Error {
        Error::Type { op: op.into(), msg: format!("attribute '{k}' must be {what}, got {v}") }
    }
    /// Float attribute.
    pub fn f64(&self, op: &str, k: &str, d: f64) -> Result<f64> {
        match self.get(k) {
            None => Ok(d),
            Some(Attr::Float(v)) => Ok(*v),
            Some(Attr::Int(v)) => Ok(*v as f64),
            Some(Attr::Bool(v)) => Ok(*v as i64 as f64),
            Some(v) => Err(Self::err(op, k, "a number", v)),
        }
    }
    /// Optional float attribute.
    pub fn opt_f64(&self, op: &str, k: &str) -> Result<Option<f64>> {
        if self.get(k).is_none() {
            return Ok(None);
        }
        self.f64(op, k, 0.0).map(Some)
    }
    /// Int attribute.
    pub fn i64(&self, op: &str, k: &str, d: i64) -> Result<i64> {
        match self.get(k) {
            None => Ok(d),
            Some(Attr::Int(v)) => Ok(*v),
            Some(Attr::Bool(v)) => Ok(*v as i64),
            Some(Attr::Float(v)) if v.fract() == 0.0 => Ok(*v as i64),
            Some(v) => Err(Self::err(op, k, "an integer", v)),
        }
    }
    /// Optional int attribute.
    pub fn opt_i64(&self, op: &str, k: &str) -> Result<Option<i64>> {
        if self.get(k).is_none() {
            return Ok(None);
        }
        self.i64(op, k, 0).map(Some)
    }
    /// Int attribute where an explicit `None` means something (MXNet's
    /// `axis=None`: flatten): absent gives `Some(d)`, `None` gives `None`.
    pub fn i64_or_none(&self, op: &str, k: &str, d: i64) -> Result<Option<i64>> {
        match self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v) {
            None => Ok(Some(d)),
            Some(Attr::None) => Ok(None),
            Some(_) => self.i64(op, k, d).map(Some),
        }
    }
    /// Required int-tuple attribute.
    pub fn req_ints(&self, op: &str, k: &str) -> Result<Vec<i64>> {
        self.ints(op, k)?.ok_or_else(|| Error::value(op, format!("required attribute '{k}' is missing")))
    }
    /// Bool attribute.
    pub fn bool(&self, op: &str, k: &str, d: bool) -> Result<bool> {
        match self.get(k) {
            None => Ok(d),
            Some(Attr::Bool(v)) => Ok(*v),
            Some(Attr::Int(v)) => Ok(*v != 0),
            Some(v) => Err(Self::err(op, k, "a bool", v)),
        }
    }
    /// String attribute.
    pub fn str<'a>(&'a self, op: &str, k: &str, d: &'a str) -> Result<&'a str> {
        match self.get(k) {
            None => Ok(d),
            Some(Attr::Str(v)) => Ok(v),
            Some(v) => Err(Self::err(op, k, "a string", v)),
        }
    }
    /// Int-tuple attribute (an int becomes a 1-tuple).
    pub fn ints(&self, op: &str, k: &str) -> Result<Option<Vec<i64>>> {
        match self.get(k) {
            None => Ok(None),
            Some(Attr::Ints(v)) => Ok(Some(v.clone())),
            Some(Attr::Int(v)) => Ok(Some(vec![*v])),
            Some(v) => Err(Self::err(op, k, "an int or tuple of ints", v)),
        }
    }
    /// Float-tuple attribute (a number becomes a 1-tuple; int tuples convert).
    pub fn floats(&self, op: &str, k: &str) -> Result<Option<Vec<f64>>> {
        match self.get(k) {
            None => Ok(None),
            Some(Attr::Floats(v)) => Ok(Some(v.clone())),
            Some(Attr::Ints(v)) => Ok(Some(v.iter().map(|&x| x as f64).collect())),
            Some(Attr::Int(v)) => Ok(Some(vec![*v as f64])),
            Some(Attr::Float(v)) => Ok(Some(vec![*v])),
            Some(v) => Err(Self::err(op, k, "a number or tuple of numbers", v)),
        }
    }
    /// Shape attribute (required unless `d` given).
    pub fn shape(&self, op: &str, k: &str) -> Result<Shape> {
        let v = self.ints(op, k)?.unwrap_or_default();
        if v.iter().any(|&d| d < 0) {
            return Err(Error::value(op, format!("negative dimensions are not allowed: {v:?}")));
        }
        Ok(Shape::new(&v.iter().map(|&d| d as usize).collect::<Vec<_>>()))
    }
    /// Dtype attribute.
    pub fn dtype(&self, op: &str, k: &str, d: DType) -> Result<DType> {
        match self.get(k) {
            None => Ok(d),
            Some(Attr::Str(s)) => DType::from_name(s).map_err(|_| Error::dtype(op, format!("unknown dtype '{s}'"))),
            Some(v) => Err(Self::err(op, k, "a dtype name", v)),
        }
    }
    /// Context attribute (`"cpu(0)"`, `"cpu_pinned(0)"`).
    pub fn ctx(&self, op: &str, k: &str) -> Result<Context> {
        match self.get(k) {
            None => Ok(Context::default()),
            Some(Attr::Str(s)) => parse_ctx(s).ok_or_else(|| Error::value(op, format!("bad context '{s}'"))),
            Some(v) => Err(Self::err(op, k, "a context", v)),
        }
    }
}

/// Parses `cpu(0)`, `cpu_pinned(0)`, `cpu_shared(0)`, `gpu(0)`.
pub fn parse_ctx(s: &str) -> Option<Context> {
    let (kind, rest) = s.split_once('(')?;
    let id: u32 = rest.trim_end_matches(')').trim().parse().ok()?;
    match kind.trim() {
        "cpu" => Some(Context::cpu(id)),
        "cpu_pinned" => Some(Context::cpu_pinned(id)),
        "cpu_shared" => Some(Context::cpu_shared(id)),
        "gpu" => Some(Context::gpu(id)),
        _ => None,
    }
}
