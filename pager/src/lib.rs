//! User-level pagers: one per core, each owning a partition of physical memory; page faults
//! arrive as IPC.
#![no_std]

pub mod alloc;
pub mod range;

pub use alloc::{Algorithm, AllocError, AvlAllocator, BuddyAllocator, FrameAllocator};
pub use range::{FrameRange, RangeSet, RangeSetError, PAGE_SIZE};
