//! User-level pagers: one per core, each owning a partition of physical memory; page faults
//! arrive as IPC.
//!
//! Why per core: in a microkernel, allocating memory is IPC to a user-level pager, and one global
//! pager serialises every core's faults behind cross-core IPC (the seed paper,
//! `per-core-pager-fiasco.txt`: >240% slower at 48 cores, against ~5% with one pager per core).
//! This crate is the host-testable core of that design, `no_std` with no allocator
//! (every structure has a capacity fixed by const generics, and running out is an error):
//! - [`alloc`]: frame allocators behind [`FrameAllocator`]: the paper's AVL tree of free extents
//!   and a buddy allocator;
//! - [`pager`]: a [`Pager`] that serves protocol requests and switches algorithm at run time
//!   while pages are outstanding;
//! - [`partition`]: the loader's policies, an even split and a NUMA-aware one;
//! - [`balance`]: MEM_LOW / MEM_HIGH load balancing with a donor ledger;
//! - [`locked`]: the pagers and the ledger behind the kernel's locks ([`PagerLock`], a type
//!   parameter: CLH, ticket, big-reader, RTM elision or none);
//! - [`protocol`]: the typed messages and their encoding in the kernel's four message words.
//!
//! The pager and loader programs that run these on the kernel are `servers::memory`
//! (`docs/memory.md`), which instantiate [`locked`] with the kernel's lock algorithm (chosen by
//! `lock=`); the hosted memory benchmark in `tests` does the same on host threads.
#![no_std]

pub mod alloc;
pub mod balance;
pub mod locked;
pub mod pager;
pub mod partition;
pub mod protocol;
pub mod range;

pub use alloc::{Algorithm, AllocError, AvlAllocator, BuddyAllocator, FrameAllocator};
pub use locked::{lock_two, LockedLedger, LockedPager, PagerLock};
pub use pager::{Allocator, Pager};
pub use range::{FrameRange, RangeSet, RangeSetError, PAGE_SIZE};
