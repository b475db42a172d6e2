//! # ferromx-engine
//!
//! The asynchronous dependency engine under ferromx. It schedules closures
//! against versioned variables ([`Var`]) and knows nothing of tensors.
//!
//! * [`Engine::push`] returns at once; ops sharing a var, one writing it, run
//!   in push order; everything else may run concurrently.
//! * Waits ([`Engine::wait_to_read`], [`Engine::wait_to_write`],
//!   [`Engine::wait_all`]) block only for the work they need, may be called
//!   from any thread, and refuse to run inside an op (that would deadlock).
//! * A failing or panicking op marks the vars it writes as failed; ops that
//!   touch a failed var are skipped and inherit the failure; the next wait on
//!   the var returns the original error once.
//! * Work in flight is bounded by op count and declared bytes.
//! * `FERROMX_ENGINE_TYPE=NaiveEngine` runs every op on the pushing thread.
//! * Listeners receive op, wait, var and counter events; with no listener the
//!   cost is one relaxed atomic load per hook.
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

mod config;
mod cpu;
mod device;
mod engine;
mod error;
mod events;
mod signal;
mod var;
mod worker;

pub use config::{EngineConfig, EngineMode};
pub use device::{Device, DeviceKind};
pub use engine::{
    flush_deferred, frontend_calls_here, in_engine_op, set_deferred, set_flush_hook, set_held_here, Engine, Op, OpFn,
    WaitTicket,
};
pub use error::{EngineError, ErrorKind, OpFailure, Result, SharedError};
pub use events::{EngineEvent, Listener, WaitTarget};
pub use var::Var;
