//! MXNet's legacy vision layers: the spatial transformer's `GridGenerator`,
//! `BilinearSampler` and `SpatialTransformer`, Fast R-CNN's `ROIPooling`, Mask R-CNN's
//! `contrib.ROIAlign` (`roi_align.rs`), R-FCN's `contrib.PSROIPooling` (`psroi.rs`) and its deformable form (`deformable_psroi.rs`), FlowNet's `Correlation`, and the fully
//! convolutional networks' `Crop`.
//!
//! Why kernels, not compositions of array operators: each is a gather whose addresses
//! depend on the data (sample positions, region bounds, displacements), which array
//! operators express only through index tensors as large as the output. The kernels
//! follow MXNet's CPU arithmetic (operation order, boundary rules, rounding of region
//! corners), so values agree with MXNet 1.9.1 to rounding. Each gradient is its own
//! table operator (`_backward_*`), one engine op.

mod correlation;
mod crop;
mod deformable_psroi;
mod psroi;
mod roi;
mod roi_align;
mod sampler;
#[cfg(test)]
mod tests;

use crate::autograd::{needs_record, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{push_call, OpCall, OpDef};
use crate::shape::Shape;

/// Positions in [`DEFS`] of the definitions the forwards push.
const GRID_I: usize = 0;
const GRID_BACKWARD_I: usize = 1;
const SAMPLER_I: usize = 2;
const SAMPLER_BACKWARD_I: usize = 3;
const ROI_I: usize = 5;
const ROI_BACKWARD_I: usize = 6;
const CORR_I: usize = 7;
const CORR_BACKWARD_I: usize = 8;
const ROI_ALIGN_I: usize = 10;
const ROI_ALIGN_BACKWARD_I: usize = 11;
const PSROI_I: usize = 12;
const PSROI_BACKWARD_I: usize = 13;
const DPSROI_BACKWARD_I: usize = 16;

/// The family's operators.
pub static DEFS: &[OpDef] = &[
    sampler::GRID,
    sampler::GRID_BACKWARD,
    sampler::SAMPLER,
    sampler::SAMPLER_BACKWARD,
    sampler::STN,
    roi::ROI,
    roi::ROI_BACKWARD,
    correlation::CORR,
    correlation::CORR_BACKWARD,
    crop::CROP,
    roi_align::ROI_ALIGN,
    roi_align::ROI_ALIGN_BACKWARD,
    psroi::PSROI,
    psroi::PSROI_BACKWARD,
    roi_align::RROI_ALIGN,
    deformable_psroi::DPSROI,
    deformable_psroi::DPSROI_BACKWARD,
];

/// The kernels' dtypes (MXNet's real types but half precision).
fn check_float(name: &str, dt: DType) -> Result<()> {
    if matches!(dt, DType::F32 | DType::F64) {
        Ok(())
    } else {
        Err(Error::dtype(name, format!("takes float32 or float64, got {dt}")))
    }
}

/// [`with_f32_f64`](crate::with_f32_f64) for the vision kernels.
macro_rules! float_kernel {
    ($dt:expr, $T:ident, $body:expr) => {
        $crate::with_f32_f64!($dt, $T, "vision kernels", $body)
    };
}
use float_kernel;

/// A region operator's call: the forward and backward definitions and the numbers both
/// kernels read (`ints`, `nums`).
struct RegionCall {
    fwd: &'static OpDef,
    bwd: &'static OpDef,
    ints: Vec<i64>,
    nums: Vec<f64>,
}

/// Pushes a region operator (`data`, `rois` -> an output of `shape`) and records its
/// backward: `bwd` on (`dy`, `data`, `rois`) gives the data gradient, the regions' is 0.
fn region_op(c: RegionCall, x: &NDArray, rois: &NDArray, shape: Shape) -> Result<NDArray> {
    crate::ops::check_ctx(c.fwd.name, x, rois)?;
    let out = NDArray::empty(shape, x.dtype(), x.ctx())?;
    if out.size() > 0 {
        push_call(OpCall::new(c.fwd, &[x, rois], &[&out]).with_ints(&c.ints).with_nums(&c.nums))?;
    }
    if needs_record(&[x]) {
        let (xc, rc, name) = (x.clone(), rois.clone(), c.fwd.name);
        record(
            name,
            &[x, rois],
            &[&out],
            Box::new(move |dy| {
                Ok(vec![Some(region_backward(&c, &dy[0], &xc, &rc)?), Some(crate::ops::zeros_like(&rc)?)])
            }),
        );
    }
    Ok(out)
}

/// The data gradient of a region operator: its backward definition on (`dy`, `x`, `rois`).
fn region_backward(c: &RegionCall, dy: &NDArray, x: &NDArray, rois: &NDArray) -> Result<NDArray> {
    let dx = x.empty_like()?;
    if dx.size() > 0 {
        push_call(OpCall::new(c.bwd, &[dy, x, rois], &[&dx]).with_ints(&c.ints).with_nums(&c.nums))?;
    }
    Ok(dx)
}

/// Inference of a region operator's backward (`out_grad`, `data`, `rois`): the data's.
fn infer_data_grad(
    def: &'static OpDef,
    _: &crate::opdef::Attrs,
    ins: &[crate::opdef::Meta],
) -> Result<Vec<crate::opdef::Meta>> {
    ins.get(1).cloned().map(|m| vec![m]).ok_or_else(|| Error::value(def.name, "needs out_grad, data and rois"))
}

/// Fails unless a backward call's `out_grad` has the forward output's shape.
fn check_out_grad(name: &str, dy: &NDArray, x: &NDArray, want: &Shape) -> Result<()> {
    if dy.shape() != want {
        return Err(Error::shape(name, &[dy.shape(), x.shape()], "out_grad must have the output's shape"));
    }
    Ok(())
}

/// `v` in a kernel's float type.
fn cast<T: num_traits::Float>(v: f64) -> T {
    T::from(v).unwrap_or_else(T::nan)
}
