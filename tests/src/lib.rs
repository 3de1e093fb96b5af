//! The project's hosted testing: the kernel core on host threads, without a HAL or a machine.
//!
//! Two parts, used by different targets of this crate:
//! * [`harness`]: the hosted harness the integration tests (`tests/*.rs`) run the kernel in: a
//!   recording HAL ([`FakeHal`]), one host thread per kernel core ([`run`]), user programs as
//!   Rust state machines ([`Programs`]), the workloads ([`workload`]) and, with the `trace`
//!   feature, lock-trace recording ([`tracing`]);
//! * [`bench`]: the hosted benchmarks (`benches/ipc_hosted.rs`, `benches/memory_hosted.rs`,
//!   run by `cargo xtask bench --platform hosted`): the kernel's IPC paths and the memory
//!   system timed per locking strategy, with their own no-op HAL, writing the records of
//!   `docs/bench-protocol.md`;
//! * with the `lockdep` feature, [`lockdep`]: the lock order that the fine-grained strategy's
//!   runs followed, as the lock-order checker recorded it.
//!
//! The harness's items are re-exported here, so a test names them `tests::FakeHal`,
//! `tests::run`, `tests::workload`...

pub mod bench;
pub mod harness;
#[cfg(feature = "lockdep")]
pub mod lockdep;

pub use harness::*;
