//! Element types.

use crate::error::{Error, Result};
use half::{bf16, f16};
use std::fmt;

/// The element type of an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// 32-bit float (default).
    F32,
    /// 64-bit float.
    F64,
    /// IEEE half.
    F16,
    /// bfloat16.
    BF16,
    /// Unsigned byte.
    U8,
    /// Signed byte.
    I8,
    /// 32-bit int.
    I32,
    /// 64-bit int.
    I64,
    /// Boolean (one byte, 0 or 1).
    Bool,
}

impl DType {
    /// All dtypes.
    pub const ALL: [DType; 9] =
        [DType::F32, DType::F64, DType::F16, DType::BF16, DType::U8, DType::I8, DType::I32, DType::I64, DType::Bool];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F64 | DType::I64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::U8 | DType::I8 | DType::Bool => 1,
        }
    }

    /// NumPy name (`float32`, `int64`, `bool`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::Bool => "bool",
        }
    }

    /// Parses a NumPy-style name.
    pub fn from_name(s: &str) -> Result<DType> {
        Ok(match s {
            "float32" | "f4" | "float" => DType::F32,
            "float64" | "f8" | "double" => DType::F64,
            "float16" | "f2" | "half" => DType::F16,
            "bfloat16" => DType::BF16,
            "uint8" | "u1" => DType::U8,
            "int8" | "i1" => DType::I8,
            "int32" | "i4" | "int" => DType::I32,
            "int64" | "i8" | "long" => DType::I64,
            "bool" | "bool_" | "?" => DType::Bool,
            _ => return Err(Error::Type { op: "dtype".into(), msg: format!("unknown dtype '{s}'") }),
        })
    }

    /// Floating point?
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
    }

    /// Integer (not bool)?
    pub fn is_int(self) -> bool {
        matches!(self, DType::U8 | DType::I8 | DType::I32 | DType::I64)
    }

    /// The float type math ops (exp, log, ...) compute in for this input:
    /// floats keep their type, ints and bool become float32.
    pub fn float_result(self) -> DType {
        if self.is_float() {
            self
        } else {
            DType::F32
        }
    }

    /// NumPy-like promotion of two dtypes for binary arithmetic.
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        if a == b {
            return a;
        }
        let rank = |d: DType| match d {
            Bool => 0,
            U8 => 1,
            I8 => 2,
            I32 => 3,
            I64 => 4,
            F16 => 5,
            BF16 => 6,
            F32 => 7,
            F64 => 8,
        };
        match (a, b) {
            (U8, I8) | (I8, U8) => I32,
            (F16, BF16) | (BF16, F16) => F32,
            _ => {
                if rank(a) >= rank(b) {
                    a
                } else {
                    b
                }
            }
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type stored in arrays. Conversions go through `f64` (exact for
/// every type but the widest ints, which have dedicated `i64` paths).
pub trait Elem: Copy + Send + Sync + Default + PartialOrd + fmt::Debug + 'static {
    /// The dtype tag.
    const DTYPE: DType;
    /// Converts to f64.
    fn to_f64(self) -> f64;
    /// Converts from f64 (for ints: truncating and wrapping, like a C cast on x86).
    fn from_f64(v: f64) -> Self;
    /// Converts to i64.
    fn to_i64(self) -> i64 {
        self.to_f64() as i64
    }
    /// Converts from i64.
    fn from_i64(v: i64) -> Self {
        Self::from_f64(v as f64)
    }
    /// Converts to f32.
    #[inline]
    fn to_f32(self) -> f32 {
        self.to_f64() as f32
    }
    /// Converts from f32.
    #[inline]
    fn from_f32(v: f32) -> Self {
        Self::from_f64(v as f64)
    }
}

macro_rules! int_elem {
    ($t:ty, $d:ident, $via:ty) => {
        impl Elem for $t {
            const DTYPE: DType = DType::$d;
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
            /// A C cast as x86 performs it (MXNet's and NumPy's behaviour):
            /// truncate toward zero; NaN and values outside the range of the
            /// intermediate `int`/`int64` become its minimum; narrower types
            /// keep the low bits (so -1.0 -> 255 for uint8, 300.0 -> 44).
            #[inline]
            fn from_f64(v: f64) -> Self {
                let w = if v >= <$via>::MIN as f64 && v < -(<$via>::MIN as f64) { v as $via } else { <$via>::MIN };
                w as $t
            }
            #[inline]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
        }
    };
}
int_elem!(u8, U8, i32);
int_elem!(i8, I8, i32);
int_elem!(i32, I32, i32);
int_elem!(i64, I64, i64);

impl Elem for f32 {
    const DTYPE: DType = DType::F32;
    #[inline]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline]
    fn from_f32(v: f32) -> Self {
        v
    }
}
impl Elem for f64 {
    const DTYPE: DType = DType::F64;
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v
    }
}
impl Elem for f16 {
    const DTYPE: DType = DType::F16;
    #[inline]
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
    #[inline]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline]
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
}
impl Elem for bf16 {
    const DTYPE: DType = DType::BF16;
    #[inline]
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        bf16::from_f64(v)
    }
    #[inline]
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
    #[inline]
    fn from_f32(v: f32) -> Self {
        bf16::from_f32(v)
    }
}
impl Elem for bool {
    const DTYPE: DType = DType::Bool;
    #[inline]
    fn to_f64(self) -> f64 {
        if self {
            1.0
        } else {
            0.0
        }
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
}

/// Runs `$body` with `$T` bound to `f32` or `f64`, for kernels that take only those two;
/// any other dtype returns an [`OpFailure`](crate::engine::OpFailure) from the enclosing
/// kernel, naming `$what` ("convolution kernels").
#[macro_export]
macro_rules! with_f32_f64 {
    ($dt:expr, $T:ident, $what:expr, $body:expr) => {
        match $dt {
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            d => {
                return Err($crate::engine::OpFailure::new(
                    $crate::engine::ErrorKind::Runtime,
                    format!("{} take float32/float64, got {d}", $what),
                ))
            }
        }
    };
}

/// Runs `$body` with `$T` bound to the Rust type of `$dt`.
#[macro_export]
macro_rules! with_dtype {
    ($dt:expr, $T:ident, $body:expr) => {
        match $dt {
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::F16 => {
                type $T = half::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::Bool => {
                type $T = bool;
                $body
            }
        }
    };
}

/// Like [`with_dtype!`] but only for float dtypes; other dtypes evaluate `$other`.
#[macro_export]
macro_rules! with_float_dtype {
    ($dt:expr, $T:ident, $body:expr, $other:expr) => {
        match $dt {
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::F16 => {
                type $T = half::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            _ => $other,
        }
    };
}
