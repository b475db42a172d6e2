//! [`OpCall`]: one operator applied to arrays, the unit the engine runs.

use super::{KernelSlot, OpDef};
use crate::engine::OpFailure;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::storage::{push_op_call, Kernel, View};
use smallvec::SmallVec;

/// A kernel: runs one call with typed access to its inputs and outputs.
pub type KernelFn = fn(&OpCall, &Kernel) -> std::result::Result<(), OpFailure>;

/// A definition, its numeric parameters and its input and output views.
///
/// This is what is pushed to the engine: the closure the engine runs is the
/// definition's kernel for the outputs' device applied to this value. Being
/// plain data (not an opaque closure), a call can be inspected, merged with
/// its neighbours by a fusion pass, or retargeted to another device.
pub struct OpCall {
    /// The operator.
    pub def: &'static OpDef,
    /// Numeric parameters the kernel reads, in the definition's parameter order
    /// (a scalar operator's `scalar`).
    pub nums: SmallVec<[f64; 4]>,
    /// Integer parameters the kernel reads: axis lists, shapes, modes, or the
    /// layout the frontend resolved from them (`(outer, n, inner)` extents,
    /// strides). A definition whose kernel reads `ints` documents their order
    /// at its kernel; what is here is everything a kernel needs besides the
    /// views, so a call stays plain, inspectable data.
    pub ints: SmallVec<[i64; 8]>,
    /// Text a kernel puts in the error it raises (the function a check runs for and what
    /// it expects: `exponential: expect scale >= 0`); `None` for almost every call.
    pub label: Option<std::sync::Arc<str>>,
    pub(crate) inputs: Vec<View>,
    pub(crate) outputs: Vec<View>,
}

impl OpCall {
    /// A call of `def` reading `ins` and writing `outs`.
    pub fn new(def: &'static OpDef, ins: &[&NDArray], outs: &[&NDArray]) -> OpCall {
        OpCall {
            def,
            nums: SmallVec::new(),
            ints: SmallVec::new(),
            label: None,
            inputs: ins.iter().map(|x| x.view()).collect(),
            outputs: outs.iter().map(|x| x.view()).collect(),
        }
    }

    /// The same call with numeric parameters.
    pub fn with_nums(mut self, nums: &[f64]) -> OpCall {
        self.nums = SmallVec::from_slice(nums);
        self
    }
}

impl OpCall {
    /// The same call with integer parameters.
    pub fn with_ints(mut self, ints: &[i64]) -> OpCall {
        self.ints = SmallVec::from_slice(ints);
        self
    }

    /// The same call with a label for its kernel's errors.
    pub fn with_label(mut self, label: impl Into<std::sync::Arc<str>>) -> OpCall {
        self.label = Some(label.into());
        self
    }

    /// Integer parameter `i` as a `usize` (layouts and extents; negative values read as 0).
    pub fn us(&self, i: usize) -> usize {
        self.ints.get(i).copied().unwrap_or(0).max(0) as usize
    }
}

/// Pushes a call to the engine with the definition's kernel for the device
/// its outputs live on; fails when that device kind has no kernel.
pub fn push_call(call: OpCall) -> Result<()> {
    let ctx = call.outputs.first().or(call.inputs.first()).map(|v| v.chunk.ctx).unwrap_or_default();
    let f = match call.def.kernel(ctx) {
        KernelSlot::Call(f) => *f,
        _ => {
            return Err(Error::Device {
                op: call.def.name.into(),
                ctx: ctx.to_string(),
                msg: "no kernel for this device kind".into(),
            })
        }
    };
    let call = match crate::fusion::bulk::try_add(call, f) {
        Ok(()) => return Ok(()),
        Err(call) => call,
    };
    let call = match crate::fusion::try_defer(call) {
        Ok(()) => return Ok(()),
        Err(call) => call,
    };
    push_op_call(call, f);
    Ok(())
}
