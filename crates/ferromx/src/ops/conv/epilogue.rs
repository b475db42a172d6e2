//! What a fused convolution (`_fused_convolution`, `fused.rs`) does to each
//! output row right after the convolution wrote it: BatchNorm's inference
//! affine, a residual sum and ReLU.
//!
//! Why rows: the kernels write the output a block of samples (im2col) or a
//! chunk of tile rows (Winograd) at a time, so a row is still in L1/L2 when
//! the epilogue runs over it. Unfused, each of these steps is one more pass
//! over the whole output through memory (about 8 % of a ResNet-18 forward).
//! The arithmetic is the unfused operators' own, in their order, so a fused
//! call is bitwise equal to the chain it replaces.

use super::cpu::ConvElem;

/// BatchNorm in inference: per output channel, `(v - mean) * scale + shift`.
#[derive(Clone, Copy)]
pub(crate) struct BnAffine<'a, T> {
    /// The moving mean.
    pub mean: &'a [T],
    /// `gamma · invstd` (`invstd` alone under `fix_gamma`), as `BatchNorm` computes it.
    pub scale: &'a [T],
    /// beta.
    pub shift: &'a [T],
}

/// The steps after the convolution, in this order: BatchNorm, `+ sum`, ReLU.
#[derive(Clone, Copy)]
pub(crate) struct Epilogue<'a, T> {
    /// BatchNorm's inference affine.
    pub bn: Option<BnAffine<'a, T>>,
    /// An array of the output's shape added elementwise (a residual branch),
    /// indexed like the output slice the kernel is handed.
    pub sum: Option<&'a [T]>,
    /// `max(v, 0)` last (NaN stays NaN, as `relu` does).
    pub relu: bool,
}

impl<'a, T: ConvElem> Epilogue<'a, T> {
    /// Nothing after the convolution.
    pub const NONE: Epilogue<'static, T> = Epilogue { bn: None, sum: None, relu: false };

    /// Whether there is nothing to apply.
    #[inline(always)]
    pub fn is_none(&self) -> bool {
        self.bn.is_none() && self.sum.is_none() && !self.relu
    }

    /// The same epilogue for the output slice starting `at` elements further on
    /// (a block of samples): only the sum's indexing moves.
    pub fn offset(&self, at: usize) -> Epilogue<'a, T> {
        Epilogue { sum: self.sum.map(|s| &s[at..]), ..*self }
    }

    /// Applies the steps to `row`, output channel `o`, which starts `at`
    /// elements into the output slice.
    #[inline(always)]
    pub fn apply(&self, o: usize, at: usize, row: &mut [T]) {
        if let Some(bn) = &self.bn {
            let (mu, sc, b) = (bn.mean[o], bn.scale[o], bn.shift[o]);
            row.iter_mut().for_each(|v| *v = (*v - mu) * sc + b);
        }
        if let Some(s) = self.sum {
            let s = &s[at..at + row.len()];
            row.iter_mut().zip(s).for_each(|(v, &r)| *v = r + *v);
        }
        if self.relu {
            // ReLU's float kernel: NaN passes through
            let z = T::zero();
            row.iter_mut().for_each(|v| *v = if *v > z || v.is_nan() { *v } else { z });
        }
    }
}
