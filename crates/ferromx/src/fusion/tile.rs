//! Typed tiles: the per-element buffers a fused kernel evaluates into.
//!
//! A fused elementwise program runs tile by tile: each tile of `TILE`
//! elements is loaded once from the program's inputs, every operator of the
//! chain is applied to it (in L1/L2 cache) with the same per-element
//! function its own kernel uses, and the values something still references
//! are stored once; inputs are read in place. [`Buf`] is one value's tile (an owned vector of the
//! value's element type); [`InRef`]/[`OutRef`] are the program's inputs and
//! outputs as typed slices. All of it is safe code: the typed slices come
//! from [`crate::storage::Kernel`].

use crate::dtype::{DType, Elem};
use crate::storage::Kernel;
use half::{bf16, f16};

/// Elements per tile (4 KiB of f32: a program's live tiles stay in L1/L2).
///
/// Each step of a program is a call per tile (its operator's tile kernel), so a
/// tile must be long enough to hide that call: on the 16M-element
/// `exp(x*2+1)*x-(x*2+1)`, 256-element tiles ran 9.9–10.9 ms and 1024-element
/// ones 7.7–8.1 (a Xeon with AVX-512, 2 cores, alternating runs); 2048 and 4096
/// were no faster.
pub(crate) const TILE: usize = 1024;

macro_rules! tiles {
    ($( $v:ident $t:ty ),*) => {
        /// One value's tile.
        pub(crate) enum Buf { $( $v(Vec<$t>), )* }
        /// A program input as a typed slice.
        pub(crate) enum InRef<'a> { $( $v(&'a [$t]), )* }
        /// A program output (or a piece of one) as a typed slice.
        pub(crate) enum OutRef<'a> { $( $v(&'a mut [$t]), )* }

        impl Buf {
            /// A zeroed tile of `n` elements of `dt`.
            pub(crate) fn new(dt: DType, n: usize) -> Buf {
                match dt { $( DType::$v => Buf::$v(vec![<$t>::default(); n]), )* }
            }
            /// The front `m` elements as a step's destination.
            #[inline]
            pub(crate) fn as_out(&mut self, m: usize) -> OutRef<'_> {
                match self { $( Buf::$v(v) => OutRef::$v(&mut v[..m]), )* }
            }
            /// Element `i` as f64.
            pub(crate) fn get_f64(&self, i: usize) -> f64 {
                match self { $( Buf::$v(v) => v[i].to_f64(), )* }
            }
            /// The front `m` elements as an operand.
            #[inline]
            pub(crate) fn as_in(&self, m: usize) -> InRef<'_> {
                match self { $( Buf::$v(v) => InRef::$v(&v[..m]), )* }
            }
        }

        impl<'a> InRef<'a> {
            /// Input `i` of a kernel.
            #[inline]
            pub(crate) fn of(k: &Kernel<'a>, i: usize) -> InRef<'a> {
                match k.in_dtype(i) { $( DType::$v => InRef::$v(k.input::<$t>(i)), )* }
            }
            /// The element type.
            pub(crate) fn dtype(&self) -> DType {
                match self { $( InRef::$v(_) => DType::$v, )* }
            }
            /// Elements `start..start + len`.
            #[inline]
            pub(crate) fn sub(&self, start: usize, len: usize) -> InRef<'a> {
                match self { $( InRef::$v(s) => InRef::$v(&s[start..start + len]), )* }
            }
            /// Prefetches elements `start..start + len` (clamped to the slice).
            #[inline]
            pub(crate) fn prefetch(&self, start: usize, len: usize) {
                match self { $( InRef::$v(s) => crate::storage::prefetch(window(s, start, len), false), )* }
            }
        }

        impl<'a> OutRef<'a> {
            /// Output `i` of a kernel.
            #[inline]
            pub(crate) fn of(k: &Kernel<'a>, i: usize) -> OutRef<'a> {
                match k.out_dtype(i) { $( DType::$v => OutRef::$v(k.output::<$t>(i)), )* }
            }
            /// The element type.
            pub(crate) fn dtype(&self) -> DType {
                match self { $( OutRef::$v(_) => DType::$v, )* }
            }
            /// Elements `start..start + len`, reborrowed as a step's destination.
            #[inline]
            pub(crate) fn sub_mut(&mut self, start: usize, len: usize) -> OutRef<'_> {
                match self { $( OutRef::$v(s) => OutRef::$v(&mut s[start..start + len]), )* }
            }
            /// Prefetches elements `start..start + len` (clamped) for writing.
            #[inline]
            pub(crate) fn prefetch(&self, start: usize, len: usize) {
                match self { $( OutRef::$v(s) => crate::storage::prefetch(window(s, start, len), true), )* }
            }
            /// Copies the elements of `src` (same dtype and length) in.
            pub(crate) fn copy_from(&mut self, src: &InRef) {
                match (self, src) {
                    $( (OutRef::$v(d), InRef::$v(s)) => d.copy_from_slice(s), )*
                    _ => panic!("fused kernel: copy between tiles of different dtypes (internal error)"),
                }
            }
            /// Sets every element to `c` converted to the element type (as `_full`'s kernel).
            pub(crate) fn fill(&mut self, c: f64) {
                match self { $( OutRef::$v(d) => d.fill(<$t as Elem>::from_f64(c)), )* }
            }
            /// Splits into consecutive pieces of `chunk` elements.
            pub(crate) fn split(self, chunk: usize) -> Vec<OutRef<'a>> {
                match self { $( OutRef::$v(s) => s.chunks_mut(chunk).map(OutRef::$v).collect(), )* }
            }
            /// Stores the front `len` elements of `b` at `start`.
            pub(crate) fn store(&mut self, start: usize, len: usize, b: &Buf) {
                match (self, b) {
                    $( (OutRef::$v(d), Buf::$v(s)) => d[start..start + len].copy_from_slice(&s[..len]), )*
                    _ => panic!("fused kernel: output tile dtype mismatch (internal error)"),
                }
            }
        }

        $( impl TileElem for $t {
            fn of<'a>(r: &InRef<'a>) -> &'a [$t] {
                match r { InRef::$v(v) => v, _ => panic!("fused kernel: operand dtype mismatch (internal error)") }
            }
            fn get_mut<'b>(o: &'b mut OutRef<'_>) -> &'b mut [$t] {
                match o { OutRef::$v(v) => v, _ => panic!("fused kernel: tile dtype mismatch (internal error)") }
            }
        } )*
    };
}

/// `s[start..start + len]`, clamped to `s` (empty past its end).
#[inline]
pub(crate) fn window<T>(s: &[T], start: usize, len: usize) -> &[T] {
    let lo = start.min(s.len());
    &s[lo..(lo + len).min(s.len())]
}

/// Element types a tile can hold: typed views of a [`Buf`].
pub(crate) trait TileElem: Elem {
    /// An operand's elements (panics, an internal error, on a dtype mismatch).
    fn of<'a>(r: &InRef<'a>) -> &'a [Self];
    /// A destination's elements.
    fn get_mut<'b>(o: &'b mut OutRef<'_>) -> &'b mut [Self];
}

tiles!(F32 f32, F64 f64, F16 f16, BF16 bf16, U8 u8, I8 i8, I32 i32, I64 i64, Bool bool);

#[cfg(test)]
mod tests {
    use super::window;

    #[test]
    fn a_prefetch_window_is_clamped_to_its_slice() {
        let s = [0u8; 10];
        assert_eq!(window(&s, 2, 5).len(), 5);
        assert_eq!(window(&s, 8, 5).len(), 2, "past the end: the rest");
        assert!(window(&s, 12, 5).is_empty(), "wholly past the end: nothing");
    }
}
