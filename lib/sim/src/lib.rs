//! Kernel lock traces and a trace-replay simulator (issue 12).
//!
//! Our machines have two real cores, but the question the project asks is about 4 to 64. Like
//! the OKL4 giant-lock thesis (`giant-lock-thesis-okl4.txt` in the seeds), we record a light
//! trace of every kernel entry (when the lock was requested, acquired and released) and replay it
//! in a discrete-event simulator on more simulated cores than were recorded, under the big lock,
//! fine-grained object locks or no lock. Unlike the thesis's simulator, ours has a switchable
//! cache-coherence cost model, because the thesis found that missing model made it ~10x too
//! optimistic from 3 to 4 cores.
//!
//! - [`trace`]: the binary format (no_std; the kernel writes it) and its reader and writer.
//! - [`ring`]: a per-core ring buffer that records without a lock (no_std).
//! - `analysis` (std): per-core and total statistics of a trace, as JSON.
//! - `config` (std): the simulator's JSON configuration, and the calibration file that holds
//!   measured cache models (`cargo xtask sim --calibrate`).
//! - `simulate` (std): the event-chain simulator, the cache model and the 1..64-core sweep.
//!
//! Without the default `std` feature only `trace` and `ring` are built, for the kernel's targets.
#![cfg_attr(not(feature = "std"), no_std)]

pub mod ring;
pub mod trace;

#[cfg(feature = "std")]
pub mod analysis;
#[cfg(feature = "std")]
pub mod config;
#[cfg(feature = "std")]
pub mod simulate;
