//! Elementwise operator family: unary, binary (broadcasting), scalar and in-place forms.

pub mod arith;
pub mod binary;
pub mod unary;
