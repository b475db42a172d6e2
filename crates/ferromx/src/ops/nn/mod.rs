//! Neural-network operators.

mod activation;
mod fc;
mod softmax;

pub use activation::*;
pub use fc::*;
pub use softmax::*;
