//! Kernel locks for small multicore kernels, behind one [`KernelLock`] trait.
//!
//! This crate is the synchronisation foundation of the project: the kernel is generic over a
//! [`KernelLock`], and so can be any other kernel that embeds this crate. It needs no allocator and
//! builds for `x86_64-unknown-none`, `armv7a-none-eabi` and hosted targets.
//!
//! | lock | algorithm | fair | per-CPU state |
//! |------|-----------|------|---------------|
//! | [`ClhLock`] | CLH queue lock, as seL4's big kernel lock | FIFO | queue node per CPU |
//! | [`McsLock`] | MCS queue lock, each waiter spinning on its own node | FIFO | queue node per CPU |
//! | [`CnaLock`] | compact NUMA-aware lock (Dice and Kogan): the qspinlock's word, its queue head hands over to a waiter on its own NUMA node first, within a fairness bound | FIFO within a node; waiters of other nodes wait for at most a bounded number of hand-offs | four queue nodes per CPU, in a [`CnaNodePool`]; the embedder's CPU-to-node [`NumaMap`] |
//! | [`QSpinLock`] | Linux's queued spinlock: one 32-bit word, pending bit, per-CPU MCS nodes for four nesting contexts shared by every lock | FIFO (after the pending waiter) | four queue nodes per CPU, in a [`QNodePool`] shared by all locks |
//! | [`TicketLock`] | ticket lock, optional proportional back-off | FIFO | none |
//! | [`BrLock`] | big-reader lock (reader slot per CPU) | writer-preferring | reader slot per CPU |
//! | [`RtmLock`] | Intel RTM lock elision over any fallback lock | as the fallback | statistics, deferred work |
//! | [`NoLock`] | nothing: the unsafe baseline for disjoint data | - | none |
//!
//! [`Mutex<L, T>`](Mutex) and [`RwLock<L, T>`](RwLock) wrap data in any of these locks: they are
//! locked with an explicit CPU id and hand out guards that release the lock on drop, on the CPU
//! that took it (guards are `!Send`: each holds a [`CpuBound`] marker, which the compiler names
//! when a guard is moved to another thread).
//!
//! # Design
//! * Every lock operation names the CPU that performs it ([`CpuId`]). Queue locks and the
//!   big-reader lock own per-CPU state, so the caller (a kernel, which always knows its core and
//!   runs its lock holders with preemption disabled) passes its index. An index out of range panics
//!   with a clear message in every build: it is a kernel bug, never silent corruption.
//! * Wait loops call a [`Relax`] strategy chosen as a type parameter of the lock: [`Spin`] (pause /
//!   yield), [`Backoff`] (exponential), [`Wfe`] (ARM wait-for-event; unlock then signals with SEV),
//!   or the kernel's own, which can service cross-core requests while spinning, as seL4 does.
//! * Type parameters come in one order in every lock: what the lock is made of and its size
//!   (`ClhLock<N, ..>`, `McsLock<N, ..>`, `BrLock<N, ..>`, `RtmLock<L, N, ..>`, and
//!   `QSpinLock<P, ..>`, whose node pool `P` holds the CPU count), then the wait strategy `R`,
//!   then the lock's own tuning with a default (the alignment `A`, the ticket `BACKOFF`, the RTM
//!   engine `E`). Choosing a wait strategy never means naming an unrelated parameter.
//! * A size given twice is checked at compile time: [`MaxCpus`] states each lock type's CPU
//!   bound (`N`, or none), and `RtmLock<L, N>` does not compile over a fallback `L` whose bound
//!   is another `N` (`RtmLock<ClhLock<2>, 4>`).
//! * A lock that an interrupt handler takes is taken elsewhere with the CPU's interrupts
//!   masked, or the handler deadlocks on the lock its own CPU holds: [`irq`] has the
//!   interrupt-safe forms, `lock_irqsave` and its relatives for the raw locks
//!   ([`KernelLockIrq`]) and for [`Mutex`] / [`RwLock`], over an [`irq::Interrupts`] mask
//!   (x86_64 RFLAGS.IF, ARMv7 CPSR.I/F, AArch64 DAIF, or a test double). They mask before the
//!   lock is taken and restore after it is released; the plain operations mask nothing, for a
//!   kernel that enters its locks with interrupts off already.
//! * Every atomic ordering is explained where it is used, and the ARMv7 barrier it becomes.
//! * Under `--cfg kernel_locks_loom` the atomics come from loom so the model tests explore every
//!   interleaving.
//! * With the `lock_api` feature, `lock_api_adapter` turns any lock that implements
//!   `raw::ConstInit` into a `lock_api::Mutex` / `RwLock`; the embedding kernel says how to find
//!   the current CPU (see `examples/embed.rs`). The `lock_api_05` feature does the same for
//!   `lock_api` 0.5 (`lock_api_adapter::v05`), over the same raw locks.
//!
//! # Cargo features
//!
//! | feature | default | what it adds |
//! |---------|---------|--------------|
//! | `lock_api` | no | `lock_api_adapter`: `lock_api` 0.4 `Mutex` / `RwLock` over any lock that implements `raw::ConstInit` |
//! | `lock_api_05` | no | `lock_api_adapter::v05`: the same for `lock_api` 0.5; needs Rust 1.95 |
//! | `testing` | no | `rtm::testing`: simulated transaction engines for tests of `RtmLock` and of code built on it; `irq::testing` (hosted targets): an interrupt-mask double per thread (test scaffolding) |
//! | `lockdep` | no | `lockdep`: a lock-order checker (classes, per-CPU held stacks, an order graph) and `lockdep::Checked`, any lock with its acquisitions checked; a debugging aid, nothing of it compiled in without the feature |
//!
//! Loom model checking is not a feature but a cfg of this crate's own,
//! `RUSTFLAGS="--cfg kernel_locks_loom"`, so that a kernel running its own loom tests with
//! `--cfg loom` gets this crate unchanged.
//!
//! # Minimum supported Rust version
//!
//! Rust 1.85, checked by the workspace's `cargo xtask test` (step `lock-crate:msrv`), for every
//! feature but `lock_api_05`: `lock_api` 0.5 needs Rust 1.95, and so does that feature.
#![no_std]
#![warn(missing_docs)]

// The interrupt-mask double (`irq::testing`) keeps its state in a `std` thread-local: hosted
// targets only.
#[cfg(any(
    test,
    kernel_locks_loom,
    all(feature = "testing", not(target_os = "none"))
))]
extern crate std;

#[macro_use]
mod shim;
#[macro_use]
mod guarded;

pub mod brlock;
pub mod clh;
pub mod cna;
pub mod irq;
#[cfg(all(
    any(feature = "lock_api", feature = "lock_api_05"),
    not(kernel_locks_loom)
))]
pub mod lock_api_adapter;
#[cfg(all(feature = "lockdep", not(kernel_locks_loom)))]
pub mod lockdep;
pub mod mcs;
pub mod mutex;
pub mod nolock;
pub mod pad;
pub mod qspin;
pub mod raw;
pub mod relax;
pub mod rtm;
pub mod rwlock;
pub mod ticket;

pub use brlock::BrLock;
pub use clh::ClhLock;
pub use cna::{CnaLock, CnaNodePool, NumaMap, NumaTable, Uniform};
pub use irq::{IrqGuard, IrqGuarded, KernelLockIrq};
pub use mcs::McsLock;
pub use mutex::{Mutex, MutexGuard};
pub use nolock::NoLock;
pub use pad::{CacheLine, CachePadded, Erg, Padded};
pub use qspin::{QNodePool, QSpinLock};
#[cfg(not(kernel_locks_loom))]
pub use raw::ConstInit;
pub use raw::{CpuBound, CpuId, KernelLock, KernelRwLock, MaxCpus};
pub use relax::{Backoff, Relax, Spin, Wfe};
pub use rtm::{AbortCause, AbortStatus, DeferFull, Rtm, RtmLock, RtmPolicy, RtmStats, TxEngine};
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use ticket::{TicketBackoffLock, TicketLock};

/// The examples of the crate's `README.md`, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
