//! The analysis of kernel lock traces and a trace-replay simulator.
//!
//! Our machines have two real cores, but the question the project asks is about 4 to 64. Like
//! the OKL4 giant-lock thesis (`giant-lock-thesis-okl4.txt` in the seeds), we record a light
//! trace of every kernel entry (when the lock was requested, acquired and released) and replay it
//! in a discrete-event simulator on more simulated cores than were recorded, under the big lock,
//! fine-grained object locks or no lock. Unlike the thesis's simulator, ours has a switchable
//! cache-coherence cost model, because the thesis found that missing model made it ~10x too
//! optimistic from 3 to 4 cores.
//!
//! - [`trace`]: the binary format the kernel writes, from the `trace-format` crate.
//! - `analysis` (std): per-core and total statistics of a trace, as JSON.
//! - `config` (std): the simulator's JSON configuration, and the calibration file that holds
//!   measured cache models (`cargo xtask sim --calibrate`).
//! - `simulate` (std): the event-chain simulator, the cache model and the 1..64-core sweep.
//!
//! Without the default `std` feature only `trace` is built.
#![cfg_attr(not(feature = "std"), no_std)]

/// The trace format (records, header, reader and writer, [`Trace`](trace::Trace) with `std`):
/// the `trace-format` crate under the name the analysis, the simulator and their callers use.
pub use trace_format as trace;

#[cfg(feature = "std")]
pub mod analysis;
#[cfg(feature = "std")]
pub mod config;
#[cfg(feature = "std")]
pub mod simulate;
