//! Runtime CPU dispatch for auto-vectorised kernels.
//!
//! Portable builds target baseline x86-64 (SSE2), which leaves most of the
//! vector width of the machines we run on unused. [`dispatch`] runs a closure
//! inside a function compiled with AVX-512 or AVX2+FMA enabled when the CPU
//! has them (detected once). The closure is generic and inlined into that
//! function, so its loops are compiled for the wider instruction set.
//!
//! Safety: a `#[target_feature]` function may only be called on a CPU that
//! supports the features; `level()` establishes exactly that with
//! `is_x86_feature_detected!` before either wide variant is ever called.

#[cfg(target_arch = "x86_64")]
fn level() -> u8 {
    use std::sync::OnceLock;
    static LEVEL: OnceLock<u8> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        if std::env::var_os("FERROMX_NO_SIMD_DISPATCH").is_some() {
            0
        } else if is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
        {
            2
        } else if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            1
        } else {
            0
        }
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn run_v4<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_v3<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Runs `f` compiled for the widest vector instruction set this CPU supports.
#[inline(always)]
pub fn dispatch<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        match level() {
            // SAFETY: level() == 2 only when every feature run_v4 enables was detected.
            2 => unsafe { run_v4(f) },
            // SAFETY: level() == 1 only when AVX2 and FMA were detected.
            1 => unsafe { run_v3(f) },
            _ => f(),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        f()
    }
}

/// Asks the CPU to bring `s`'s cache lines into L1 ahead of use (for reading,
/// or with `write` for writing: the line is fetched for ownership); a hint
/// only, with no effect on values.
///
/// Why: a fused elementwise program reads its inputs and writes its outputs
/// only in its first and last steps of each tile; between them it computes on
/// cache-resident tiles and issues no memory traffic, so without a prefetch
/// its memory time and its arithmetic time added up instead of overlapping
/// (16M-element `exp(x*2+1)*x-(x*2+1)`: 3.0 ms of streaming + 3.5 ms of
/// arithmetic = 6.6–6.9 ms).
#[inline]
pub fn prefetch<T>(s: &[T], write: bool) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0, _MM_HINT_T0};
        let base = s.as_ptr() as *const i8;
        let bytes = std::mem::size_of_val(s);
        for off in (0..bytes).step_by(64) {
            // SAFETY: a prefetch is a hint that never faults or changes memory,
            // and `base + off` lies inside the slice.
            unsafe {
                let p = base.add(off);
                if write {
                    _mm_prefetch::<_MM_HINT_ET0>(p);
                } else {
                    _mm_prefetch::<_MM_HINT_T0>(p);
                }
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (s, write);
    }
}

/// `s` as `&[f32]` when `T` is `f32` (a kernel's specialised float32 path
/// inside a generic one).
pub fn as_f32s<T: 'static>(s: &[T]) -> Option<&[f32]> {
    if std::any::TypeId::of::<T>() != std::any::TypeId::of::<f32>() {
        return None;
    }
    // SAFETY: `T` is `f32` (same TypeId), so this is the same slice, type and length unchanged.
    Some(unsafe { std::slice::from_raw_parts(s.as_ptr() as *const f32, s.len()) })
}

/// [`as_f32s`] for a mutable slice.
pub fn as_f32s_mut<T: 'static>(s: &mut [T]) -> Option<&mut [f32]> {
    if std::any::TypeId::of::<T>() != std::any::TypeId::of::<f32>() {
        return None;
    }
    // SAFETY: as in `as_f32s`; the exclusive borrow of `s` moves to the result.
    Some(unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut f32, s.len()) })
}
