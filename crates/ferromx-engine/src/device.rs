//! Devices: each has its own worker pool.

use std::fmt;

/// Kind of device an operation runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceKind {
    /// Host CPU.
    Cpu,
    /// Host CPU, page-locked memory (copies to and from accelerators).
    CpuPinned,
    /// Host CPU memory meant to be shared between processes (MXNet's `cpu_shared`, which
    /// DataLoader workers use). ferromx has no shared-memory storage: it is host memory,
    /// but arrays keep the context they were asked for, as MXNet's do.
    CpuShared,
    /// An accelerator (no backend exists yet; pools can still be created for it).
    Gpu,
}

/// A device: kind plus ordinal. `cpu(0)` is the default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Device {
    /// Device kind.
    pub kind: DeviceKind,
    /// Ordinal within the kind.
    pub id: u32,
}

impl Device {
    /// `cpu(id)`.
    pub const fn cpu(id: u32) -> Self {
        Self { kind: DeviceKind::Cpu, id }
    }
    /// `cpu_pinned(id)`.
    pub const fn cpu_pinned(id: u32) -> Self {
        Self { kind: DeviceKind::CpuPinned, id }
    }
    /// `cpu_shared(id)`.
    pub const fn cpu_shared(id: u32) -> Self {
        Self { kind: DeviceKind::CpuShared, id }
    }
    /// `gpu(id)`.
    pub const fn gpu(id: u32) -> Self {
        Self { kind: DeviceKind::Gpu, id }
    }
}

impl Default for Device {
    fn default() -> Self {
        Self::cpu(0)
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = match self.kind {
            DeviceKind::Cpu => "cpu",
            DeviceKind::CpuPinned => "cpu_pinned",
            DeviceKind::CpuShared => "cpu_shared",
            DeviceKind::Gpu => "gpu",
        };
        write!(f, "{k}({})", self.id)
    }
}
