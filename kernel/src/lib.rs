//! The architecture-neutral microkernel core: seL4-style capabilities, synchronous IPC,
//! notifications and scheduling, generic over the locking strategy that synchronises its cores
//! (big kernel lock over any `kernel_locks::KernelLock`, fine-grained, RTM elision, none).
//!
//! `no_std` and allocation-free: every object lives in a fixed-capacity table of [`Kernel`]
//! (capacities in [`config`]), named by typed indices ([`ThreadId`], [`EndpointId`], ...).
//!
//! # Object model
//! * **Threads (TCBs)**: state ([`ThreadState`]), priority, core (affinity), address space,
//!   pager endpoint, result registers, a CSpace, and a reply slot.
//! * **Capabilities** ([`cap`]): each thread names objects only through the slots of its own
//!   CSpace. A capability carries rights (READ/WRITE/GRANT/MANAGE) and a badge; every system
//!   call checks the object type and the rights it needs and returns a typed [`Error`]
//!   otherwise. Reference counts per object are kept and checked against the CSpaces.
//! * **Endpoints**: rendezvous IPC. An endpoint holds a FIFO of blocked senders or of blocked
//!   receivers, linked through the TCBs (intrusive, no allocation). A message is four words
//!   plus the sender capability's badge.
//! * **Replies**: `Call` blocks the caller and gives the receiver a one-shot reply capability,
//!   kept in the receiver's TCB reply slot (seL4 without MCS); `Reply`/`ReplyRecv` consume it.
//! * **Notifications**: a word of bits ORed by `Signal` and a queue of `Wait`ers.
//! * **Memory regions and address spaces** ([`mem`]): capabilities to physical ranges of RAM
//!   or device memory, split, merged, revoked, mapped page by page with rights and cache
//!   attributes; the page tables (written through the HAL, each leaf tagged with its region)
//!   are the record of what is mapped. Removing a mapping flushes the local TLB and shoots down
//!   the TLBs of other cores that may cache the address space, and the call returns only once
//!   they acknowledged their flush (protocol in `kernel/shootdown.rs`). Address spaces are deleted (refused
//!   while live threads are bound) and their slots reused only once no core can run on them
//!   or cache them ([`mgmt`]). `WriteRegisters` sets where an inactive thread starts.
//! * **IRQ handlers**: an interrupt masks its line and signals the bound notification; the
//!   driver acknowledges (unmasks) with `AckIrq`.
//! * **Page faults** become a Call to the thread's pager endpoint; the pager's reply restarts
//!   the thread.
//!
//! # System calls in two phases
//! See [`syscall`] for registers and [`Syscall`] for the calls. As in seL4, a call is first
//! decoded and validated completely (capability lookups, rights, free slots, mapping table
//! space, and through [`Hal::prepare_map`] the page tables a mapping needs, whose allocation is
//! not observable) without changing anything, and may fail with an error returned to the
//! caller; then
//! it is executed, and execution cannot fail. That is what allows hardware actions (IPIs,
//! address-space switches, TLB flushes, IRQ mask/unmask) to be queued per core and run after
//! the lock is released or the transaction commits.
//!
//! # Scheduling
//! Per-core run queues with [`NUM_PRIOS`](config::NUM_PRIOS) priorities (FIFO within one),
//! a current thread per core (`None` = the core's idle thread). Waking a thread of another core
//! enqueues it there and sends a Reschedule IPI if it should preempt. Threads are moved between
//! cores with `SetAffinity`. See [`mgmt`] for deleting threads that run on other cores.
//!
//! # Locking strategies
//! See [`strategy`]: [`BigLock`], [`FineGrained`], [`Rtm`], [`NoLock`].
//!
//! # Entry points
//! The HAL saves the user context and calls [`Kernel::syscall`], [`Kernel::interrupt`],
//! [`Kernel::timer_tick`], [`Kernel::ipi`], [`Kernel::page_fault`] or [`Kernel::exception`]; each returns an [`Exit`]
//! naming the thread to restore on this core and its result registers.
#![cfg_attr(not(test), no_std)]

pub mod cap;
mod check;
pub mod config;
pub mod error;
mod fastpath;
pub mod hal;
#[cfg(any(test, feature = "hosted"))]
pub mod hosted;
mod ids;
mod kernel;
pub mod mem;
pub mod mgmt;
mod ops;
mod sched;
pub mod strategy;
pub mod syscall;
#[cfg(feature = "trace")]
pub mod trace;

#[cfg(test)]
mod tests;

pub use cap::{CSpace, Cap, ObjKind, ObjRef, Rights};
pub use check::{Summary, Violation};
pub use error::Error;
pub use hal::{Hal, IpiKind, Leaf, MapPrepError, MapTag, PageAttrs, PhysAddr, SweepAction};
pub use ids::*;
pub use kernel::{
    Exit, ExitTo, Kernel, Life, SavedRegs, ThreadState, EXCEPTION_LABEL, FAULT_LABEL,
};
pub use kernel_locks::CpuId;
pub use mem::MemKind;
pub use strategy::{BigLock, FineGrained, NoLock, Rtm, Strategy};
pub use syscall::{MintTarget, Msg, Regs, Syscall};
