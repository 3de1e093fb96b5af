//! Physical frame allocators behind one trait.
//!
//! A pager serves page faults from the frames it owns. How it finds a free frame is a policy the
//! seed paper wants per pager ("customizability", §4.2 of per-core-pager-fiasco.txt): its
//! Fiasco.OC pager used an AVL tree of free chunks, and it observed that the tree's cost grows with
//! the number of outstanding pages, which a buddy allocator avoids. So both live behind
//! [`FrameAllocator`] and a [`Pager`](crate::Pager) can switch between them at run time.
//!
//! The allocators keep their bookkeeping in fixed arrays (a pager has no heap: it *is* the
//! heap's source) and never touch the frames they manage (a user-level pager does not map the
//! memory it hands out). Running out of bookkeeping space is [`AllocError::OutOfCapacity`], never
//! a panic, and every operation either succeeds or leaves the allocator exactly as it was: a bad
//! request loses nothing.
//!
//! Each allocator also records what it *owns* (free or allocated) in a
//! [`RangeSet`](crate::RangeSet), so a free of a frame it never had ([`AllocError::NotOwned`]) is
//! told apart from a double free ([`AllocError::DoubleFree`]).

/// The checked [`FrameAllocator`] operations of an allocator that implements [`FreeSet`]
/// (`free_range`, `reserve`, `withdraw`), written once for both allocators' `impl` blocks.
macro_rules! checked_operations {
    () => {
        fn free_range(&mut self, range: FrameRange) -> Result<(), AllocError> {
            $crate::alloc::checked_free(self, range)
        }

        fn reserve(&mut self, range: FrameRange) -> Result<(), AllocError> {
            $crate::alloc::checked_reserve(self, range)
        }

        fn withdraw(&mut self, range: FrameRange) -> Result<(), AllocError> {
            $crate::alloc::checked_withdraw(self, range)
        }
    };
}

mod avl;
mod buddy;

pub use avl::AvlAllocator;
pub use buddy::BuddyAllocator;

use crate::range::{FrameRange, RangeSetError};

/// Why an allocator refused a request. The allocator is unchanged when it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// The range is empty, overflows, or the count is zero.
    Invalid,
    /// No free frame at all.
    OutOfMemory,
    /// Free frames exist but no contiguous run of the size asked for.
    NoContiguousRun,
    /// The fixed bookkeeping storage (tree nodes, block nodes, owned ranges) is full.
    OutOfCapacity,
    /// A frame of the range is already free.
    DoubleFree,
    /// A frame of the range does not belong to this allocator.
    NotOwned,
    /// Adding: a frame of the range already belongs to this allocator.
    AlreadyOwned,
    /// Reserving or withdrawing: a frame of the range is allocated.
    Busy,
}

impl From<RangeSetError> for AllocError {
    fn from(e: RangeSetError) -> Self {
        match e {
            RangeSetError::Invalid => AllocError::Invalid,
            RangeSetError::Overlap => AllocError::AlreadyOwned,
            RangeSetError::NotPresent => AllocError::NotOwned,
            RangeSetError::Full => AllocError::OutOfCapacity,
        }
    }
}

/// Which algorithm an allocator runs (the protocol's "set algorithm" argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// [`AvlAllocator`]: free extents in a balanced tree keyed by address.
    Avl,
    /// [`BuddyAllocator`]: power-of-two blocks in free lists per order.
    Buddy,
}

/// A physical frame allocator. Every method either succeeds or changes nothing.
pub trait FrameAllocator {
    /// Which algorithm this is.
    fn algorithm(&self) -> Algorithm;

    /// Takes ownership of `range`; its frames become free.
    fn add_range(&mut self, range: FrameRange) -> Result<(), AllocError>;

    /// Allocates a contiguous run of `count` frames.
    fn alloc_contiguous(&mut self, count: usize) -> Result<FrameRange, AllocError>;

    /// Allocates one frame.
    fn alloc(&mut self) -> Result<usize, AllocError> {
        self.alloc_contiguous(1).map(|r| r.start)
    }

    /// Frees every frame of `range`: each must be owned ([`AllocError::NotOwned`]) and allocated
    /// ([`AllocError::DoubleFree`]). Frees need not match allocations: any sub-range of an
    /// allocated run may be freed on its own.
    fn free_range(&mut self, range: FrameRange) -> Result<(), AllocError>;

    /// Frees one frame.
    fn free(&mut self, frame: usize) -> Result<(), AllocError> {
        self.free_range(FrameRange::new(frame, 1))
    }

    /// Marks the free range `range` as allocated (still owned); [`AllocError::Busy`] if a frame
    /// of it is allocated. Used to rebuild outstanding allocations in another allocator.
    fn reserve(&mut self, range: FrameRange) -> Result<(), AllocError>;

    /// Gives up the free range `range` (no longer owned); [`AllocError::Busy`] if a frame of it
    /// is allocated. Used to return borrowed memory to its owner.
    fn withdraw(&mut self, range: FrameRange) -> Result<(), AllocError>;

    /// Gives up some free run of at most `max` frames (the largest the allocator can hand out
    /// cheaply), for donation to another pager.
    fn take_range(&mut self, max: usize) -> Result<FrameRange, AllocError>;

    /// Number of free frames.
    fn free_count(&self) -> usize;

    /// What the allocator owns (free and allocated), sorted and coalesced.
    fn owned_ranges(&self) -> &[FrameRange];

    /// Number of frames owned.
    fn owned_count(&self) -> usize {
        self.owned_ranges().iter().map(|r| r.count).sum()
    }

    /// Whether `frame` is owned and free.
    fn is_free(&self, frame: usize) -> bool;

    /// Calls `f` with every free extent or block (in no particular order).
    fn for_each_free(&self, f: &mut dyn FnMut(FrameRange));

    /// Checks the internal invariants (for tests and debug builds): structure sound, free frames
    /// disjoint, owned, and counted right, and neighbours fully coalesced.
    fn check(&self) -> Result<(), &'static str>;
}

/// The free-set primitives each allocator implements. The checked operations of
/// [`FrameAllocator`] (free, reserve, withdraw) are written once on top of them
/// ([`checked_free`], [`checked_reserve`], [`checked_withdraw`]), so both allocators refuse bad
/// input the same way, in the same order.
pub(crate) trait FreeSet {
    /// Whether the allocator owns every frame of `r`.
    fn owned_covers(&self, r: &FrameRange) -> bool;
    /// Whether `r` can leave the owned set (whole owned ranges or their ends).
    fn owned_can_remove(&self, r: &FrameRange) -> Result<(), AllocError>;
    /// Removes `r` from the owned set (after [`owned_can_remove`](Self::owned_can_remove)).
    fn owned_remove(&mut self, r: FrameRange);
    /// Whether any frame of `r` is free.
    fn overlaps_free(&self, r: &FrameRange) -> bool;
    /// Makes the allocated frames `r` free.
    fn insert_free(&mut self, r: FrameRange) -> Result<(), AllocError>;
    /// Makes the free frames `r` allocated ([`AllocError::Busy`] if one is not free).
    fn remove_free(&mut self, r: FrameRange) -> Result<(), AllocError>;
}

/// [`FrameAllocator::free_range`]: owned, allocated, then freed.
pub(crate) fn checked_free(a: &mut impl FreeSet, range: FrameRange) -> Result<(), AllocError> {
    if !range.is_valid() {
        return Err(AllocError::Invalid);
    }
    if !a.owned_covers(&range) {
        return Err(AllocError::NotOwned);
    }
    if a.overlaps_free(&range) {
        return Err(AllocError::DoubleFree);
    }
    a.insert_free(range)
}

/// [`FrameAllocator::reserve`]: owned and free, then allocated.
pub(crate) fn checked_reserve(a: &mut impl FreeSet, range: FrameRange) -> Result<(), AllocError> {
    if !range.is_valid() {
        return Err(AllocError::Invalid);
    }
    if !a.owned_covers(&range) {
        return Err(AllocError::NotOwned);
    }
    a.remove_free(range)
}

/// [`FrameAllocator::withdraw`]: removable from the owned set and free, then given up.
pub(crate) fn checked_withdraw(a: &mut impl FreeSet, range: FrameRange) -> Result<(), AllocError> {
    if !range.is_valid() {
        return Err(AllocError::Invalid);
    }
    a.owned_can_remove(&range)?;
    a.remove_free(range)?;
    a.owned_remove(range);
    Ok(())
}

/// Copies the owned and free sets of `from` into the empty allocator `to`: the free sets and the
/// outstanding allocations are the same afterwards. On error `to` is partly filled and must be
/// dropped; `from` is never changed.
pub fn transfer<A: FrameAllocator + ?Sized, B: FrameAllocator + ?Sized>(
    from: &A,
    to: &mut B,
) -> Result<(), AllocError> {
    for &r in from.owned_ranges() {
        to.add_range(r)?;
        to.reserve(r)?;
    }
    let mut result = Ok(());
    from.for_each_free(&mut |r| {
        if result.is_ok() {
            result = to.free_range(r);
        }
    });
    result
}

/// `ceil(log2(n))` for `n >= 1`.
pub(crate) fn order_for(n: usize) -> u32 {
    usize::BITS - (n - 1).leading_zeros()
}
