//! User-level pagers: one per core, each owning a partition of physical memory; page faults
//! arrive as IPC.
#![no_std]

pub mod alloc;
pub mod balance;
pub mod pager;
pub mod partition;
pub mod protocol;
pub mod range;

pub use alloc::{Algorithm, AllocError, AvlAllocator, BuddyAllocator, FrameAllocator};
pub use pager::{Allocator, Pager};
pub use range::{FrameRange, RangeSet, RangeSetError, PAGE_SIZE};
