//! The former operator registry, kept so Rust code written against it keeps
//! working: operators are defined in [`crate::opdef`] now, and this module
//! re-exports its lookup.

pub use crate::opdef::{invoke, parse_ctx, Attr, Attrs};

use std::sync::LazyLock;

/// One operator's signature: input names (`*` prefix: variadic) and parameter names.
pub struct OpInfo {
    /// Name.
    pub name: &'static str,
    /// Input names.
    pub inputs: &'static [&'static str],
    /// Parameter names in positional order.
    pub attrs: Vec<&'static str>,
}

/// Every operator's signature, from the table.
pub static OPS: LazyLock<Vec<OpInfo>> = LazyLock::new(|| {
    crate::opdef::table()
        .iter()
        .map(|d| OpInfo { name: d.name, inputs: d.inputs, attrs: d.params.iter().map(|p| p.name).collect() })
        .collect()
});
