//! Per-dtype scalar arithmetic with NumPy semantics (ints wrap, integer
//! division by zero gives 0, bool arithmetic is logical).

use crate::dtype::Elem;
use half::{bf16, f16};

/// Arithmetic every dtype supports.
pub trait Arith: Elem {
    /// a + b
    fn add(self, b: Self) -> Self;
    /// a - b
    fn sub(self, b: Self) -> Self;
    /// a * b
    fn mul(self, b: Self) -> Self;
    /// a / b
    fn div(self, b: Self) -> Self;
    /// Python-style modulo (sign of the divisor).
    fn rem(self, b: Self) -> Self;
    /// a ** b
    fn pow_(self, b: Self) -> Self;
    /// max (NaN-propagating for floats)
    fn max_(self, b: Self) -> Self;
    /// min (NaN-propagating for floats)
    fn min_(self, b: Self) -> Self;
    /// -a
    fn neg(self) -> Self;
    /// |a|
    fn abs_(self) -> Self;
    /// max ignoring NaN (`fmax`)
    fn fmax_(self, b: Self) -> Self;
    /// min ignoring NaN (`fmin`)
    fn fmin_(self, b: Self) -> Self;
    /// The C remainder (sign of the dividend); integer division by zero gives 0.
    fn fmod_(self, b: Self) -> Self;
    /// Greatest common divisor (integers; other dtypes never reach it).
    fn gcd_(self, b: Self) -> Self;
    /// Least common multiple (integers; other dtypes never reach it).
    fn lcm_(self, b: Self) -> Self;
    /// Whether this is a NaN.
    fn is_nan(self) -> bool {
        false
    }
    /// Sum of a slice, accumulated in f64 (f32 overrides with a blocked SIMD-friendly sum).
    fn sum_slice(x: &[Self]) -> f64 {
        x.iter().map(|v| v.to_f64()).sum()
    }
}

/// Blocked f32 sum: 16 lanes within 4096-element blocks, blocks accumulated in f64.
pub fn sum_f32(x: &[f32]) -> f64 {
    let mut total = 0f64;
    for block in x.chunks(4096) {
        let mut acc = [0f32; 16];
        let mut it = block.chunks_exact(16);
        for c in &mut it {
            for j in 0..16 {
                acc[j] += c[j];
            }
        }
        let mut s: f32 = it.remainder().iter().sum();
        s += acc.iter().sum::<f32>();
        total += s as f64;
    }
    total
}

macro_rules! float_arith {
    ($t:ty, $w:ty, $sum:ident) => {
        impl Arith for $t {
            #[inline(always)]
            fn add(self, b: Self) -> Self {
                self + b
            }
            #[inline(always)]
            fn sub(self, b: Self) -> Self {
                self - b
            }
            #[inline(always)]
            fn mul(self, b: Self) -> Self {
                self * b
            }
            #[inline(always)]
            fn div(self, b: Self) -> Self {
                self / b
            }
            #[inline(always)]
            /// Python's modulo (sign of the divisor); as in MXNet, `x % 0` is 0,
            /// and a zero result carries the divisor's sign (NumPy), never -0 for b > 0.
            fn rem(self, b: Self) -> Self {
                let (a, b) = (<$w>::from(self), <$w>::from(b));
                if b == 0.0 {
                    return <$t>::from_f64(0.0);
                }
                let r = a % b;
                let r = if r == 0.0 {
                    (0.0 as $w).copysign(b)
                } else if (r < 0.0) != (b < 0.0) {
                    r + b
                } else {
                    r
                };
                <$t>::from_f64(r as f64)
            }
            #[inline(always)]
            fn pow_(self, b: Self) -> Self {
                <$t>::from_f64((<$w>::from(self)).powf(<$w>::from(b)) as f64)
            }
            #[inline(always)]
            fn max_(self, b: Self) -> Self {
                if self.is_nan() || self > b {
                    self
                } else {
                    b
                }
            }
            #[inline(always)]
            fn min_(self, b: Self) -> Self {
                if self.is_nan() || self < b {
                    self
                } else {
                    b
                }
            }
            #[inline(always)]
            fn fmax_(self, b: Self) -> Self {
                if self.is_nan() || b > self {
                    b
                } else {
                    self
                }
            }
            #[inline(always)]
            fn fmin_(self, b: Self) -> Self {
                if self.is_nan() || b < self {
                    b
                } else {
                    self
                }
            }
            #[inline(always)]
            fn fmod_(self, b: Self) -> Self {
                <$t>::from_f64((<$w>::from(self) % <$w>::from(b)) as f64)
            }
            fn gcd_(self, _b: Self) -> Self {
                <$t>::from_f64(f64::NAN) // rejected at the call: integers only
            }
            fn lcm_(self, _b: Self) -> Self {
                <$t>::from_f64(f64::NAN)
            }
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            #[inline(always)]
            fn abs_(self) -> Self {
                if self < <$t>::default() {
                    -self
                } else {
                    self
                }
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                self != self
            }
            fn sum_slice(x: &[Self]) -> f64 {
                $sum(x)
            }
        }
    };
}
fn sum_generic<T: Elem>(x: &[T]) -> f64 {
    x.iter().map(|v| v.to_f64()).sum()
}
float_arith!(f32, f32, sum_f32);
float_arith!(f64, f64, sum_generic);
float_arith!(f16, f32, sum_generic);
float_arith!(bf16, f32, sum_generic);

macro_rules! int_arith {
    ($t:ty) => {
        impl Arith for $t {
            #[inline(always)]
            fn add(self, b: Self) -> Self {
                self.wrapping_add(b)
            }
            #[inline(always)]
            fn sub(self, b: Self) -> Self {
                self.wrapping_sub(b)
            }
            #[inline(always)]
            fn mul(self, b: Self) -> Self {
                self.wrapping_mul(b)
            }
            #[inline(always)]
            /// Truncating division; by zero, the C cast of the float quotient
            /// (±inf/NaN -> the int minimum, as MXNet computes `2 / x`).
            fn div(self, b: Self) -> Self {
                if b == 0 {
                    <$t as crate::dtype::Elem>::from_f64(self as f64 / 0.0)
                } else {
                    self.wrapping_div(b)
                }
            }
            #[inline(always)]
            fn rem(self, b: Self) -> Self {
                if b == 0 {
                    return 0;
                }
                let r = self.wrapping_rem(b);
                #[allow(unused_comparisons)]
                if r != 0 && ((r < 0) != (b < 0)) {
                    r.wrapping_add(b)
                } else {
                    r
                }
            }
            #[inline(always)]
            /// As MXNet: a float power and a C cast (exact whenever the result
            /// fits; overflow gives the cast of a huge value, e.g. 0 for uint8),
            /// except int64, which is computed exactly (wrapping) for `b >= 0`.
            fn pow_(self, b: Self) -> Self {
                #[allow(unused_comparisons)]
                if b < 0 || std::mem::size_of::<$t>() <= 4 {
                    return <$t as crate::dtype::Elem>::from_f64((self as f64).powf(b as f64));
                }
                let mut r: $t = 1;
                let mut base = self;
                let mut e = b as u64;
                while e > 0 {
                    if e & 1 == 1 {
                        r = r.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                r
            }
            #[inline(always)]
            fn max_(self, b: Self) -> Self {
                if self > b {
                    self
                } else {
                    b
                }
            }
            #[inline(always)]
            fn min_(self, b: Self) -> Self {
                if self < b {
                    self
                } else {
                    b
                }
            }
            #[inline(always)]
            fn fmax_(self, b: Self) -> Self {
                self.max_(b)
            }
            #[inline(always)]
            fn fmin_(self, b: Self) -> Self {
                self.min_(b)
            }
            #[inline(always)]
            fn fmod_(self, b: Self) -> Self {
                if b == 0 {
                    0
                } else {
                    self.wrapping_rem(b)
                }
            }
            fn gcd_(self, b: Self) -> Self {
                // in i128, so the minimum's magnitude does not overflow
                let (mut x, mut y) = ((self as i128).abs(), (b as i128).abs());
                while y != 0 {
                    (x, y) = (y, x % y);
                }
                x as $t
            }
            fn lcm_(self, b: Self) -> Self {
                let g = self.gcd_(b) as i128;
                if g == 0 {
                    return 0;
                }
                ((self as i128).abs() / g * (b as i128).abs()) as $t
            }
            #[inline(always)]
            fn neg(self) -> Self {
                (0 as $t).wrapping_sub(self)
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn abs_(self) -> Self {
                if self < 0 {
                    (0 as $t).wrapping_sub(self)
                } else {
                    self
                }
            }
        }
    };
}
int_arith!(u8);
int_arith!(i8);
int_arith!(i32);
int_arith!(i64);

impl Arith for bool {
    fn add(self, b: Self) -> Self {
        self | b
    }
    fn sub(self, b: Self) -> Self {
        self ^ b
    }
    fn mul(self, b: Self) -> Self {
        self & b
    }
    fn div(self, b: Self) -> Self {
        self & b
    }
    fn rem(self, _b: Self) -> Self {
        false
    }
    fn pow_(self, b: Self) -> Self {
        self | !b
    }
    fn max_(self, b: Self) -> Self {
        self | b
    }
    fn min_(self, b: Self) -> Self {
        self & b
    }
    fn fmax_(self, b: Self) -> Self {
        self | b
    }
    fn fmin_(self, b: Self) -> Self {
        self & b
    }
    fn fmod_(self, _b: Self) -> Self {
        false
    }
    fn gcd_(self, b: Self) -> Self {
        self | b
    }
    fn lcm_(self, b: Self) -> Self {
        self & b
    }
    fn neg(self) -> Self {
        self
    }
    fn abs_(self) -> Self {
        self
    }
}
