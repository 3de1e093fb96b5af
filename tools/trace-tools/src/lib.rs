//! The trace commands and the glue between them and the simulator.
//!
//! * [`trace`]: `cargo xtask trace`, its options and modes (executed-instruction traces per
//!   lock and machine, `--hosted`, `--image`).
//! * [`imagetrace`]: the kernel lock traces the QEMU images record themselves (`trace --image`).
//! * [`sim`]: `cargo xtask sim`, a lock trace's analysis, replay and core sweep in the `sim`
//!   crate's simulator, and the hosted trace recordings it starts from.
//! * [`simval`]: `cargo xtask sim --validate`, the simulator's predictions against measured
//!   runs.
//!
//! The executed-instruction measurement itself lives in [`qemu_runner::exectrace`], because
//! the benchmarks take it too; this crate builds on the benchmarks' plots and records.

pub mod imagetrace;
pub mod sim;
pub mod simval;
pub mod trace;
