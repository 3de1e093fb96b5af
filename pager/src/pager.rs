//! A pager: one allocator whose algorithm can change at run time, and its statistics.
//!
//! The seed paper lets each pager pick its allocation algorithm through the pager API
//! (§4.2). The allocator is an enum rather than a trait object because a pager has no heap; both
//! variants' storage is fixed at compile time. Switching builds the new allocator beside the old
//! one from the old one's owned and free sets ([`transfer`]): outstanding
//! pages stay allocated (and can be freed after the switch), free pages stay free, and if the new
//! allocator cannot hold the state the switch fails and the old allocator is kept untouched.

use crate::alloc::{transfer, Algorithm, AllocError, AvlAllocator, BuddyAllocator, FrameAllocator};
use crate::protocol::{PagerError, Reply, Request, Stats};
use crate::range::{FrameRange, PAGE_SIZE};

/// The allocator a pager runs: `N` bookkeeping nodes either way, buddy blocks up to order
/// `MAX_ORDER`.
#[derive(Clone, Debug)]
// Both variants are large fixed arrays by design: a pager has no heap to box one into.
#[allow(clippy::large_enum_variant)]
pub enum Allocator<const N: usize, const MAX_ORDER: usize> {
    /// The balanced-tree allocator.
    Avl(AvlAllocator<N>),
    /// The buddy allocator.
    Buddy(BuddyAllocator<N, MAX_ORDER>),
}

impl<const N: usize, const MAX_ORDER: usize> Allocator<N, MAX_ORDER> {
    /// An empty allocator running `algorithm`.
    pub fn new(algorithm: Algorithm) -> Self {
        match algorithm {
            Algorithm::Avl => Self::Avl(AvlAllocator::new()),
            Algorithm::Buddy => Self::Buddy(BuddyAllocator::new()),
        }
    }

    fn inner(&self) -> &dyn FrameAllocator {
        match self {
            Self::Avl(a) => a,
            Self::Buddy(b) => b,
        }
    }

    fn inner_mut(&mut self) -> &mut dyn FrameAllocator {
        match self {
            Self::Avl(a) => a,
            Self::Buddy(b) => b,
        }
    }
}

impl<const N: usize, const MAX_ORDER: usize> FrameAllocator for Allocator<N, MAX_ORDER> {
    fn algorithm(&self) -> Algorithm {
        self.inner().algorithm()
    }
    fn add_range(&mut self, range: FrameRange) -> Result<(), AllocError> {
        self.inner_mut().add_range(range)
    }
    fn alloc_contiguous(&mut self, count: usize) -> Result<FrameRange, AllocError> {
        self.inner_mut().alloc_contiguous(count)
    }
    fn free_range(&mut self, range: FrameRange) -> Result<(), AllocError> {
        self.inner_mut().free_range(range)
    }
    fn reserve(&mut self, range: FrameRange) -> Result<(), AllocError> {
        self.inner_mut().reserve(range)
    }
    fn withdraw(&mut self, range: FrameRange) -> Result<(), AllocError> {
        self.inner_mut().withdraw(range)
    }
    fn take_range(&mut self, max: usize) -> Result<FrameRange, AllocError> {
        self.inner_mut().take_range(max)
    }
    fn free_count(&self) -> usize {
        self.inner().free_count()
    }
    fn owned_ranges(&self) -> &[FrameRange] {
        self.inner().owned_ranges()
    }
    fn is_free(&self, frame: usize) -> bool {
        self.inner().is_free(frame)
    }
    fn for_each_free(&self, f: &mut dyn FnMut(FrameRange)) {
        self.inner().for_each_free(f)
    }
    fn check(&self) -> Result<(), &'static str> {
        self.inner().check()
    }
}

/// One pager: its identity, its memory node, its allocator and counters.
#[derive(Clone, Debug)]
pub struct Pager<const N: usize, const MAX_ORDER: usize> {
    /// Which pager (the core it serves).
    pub id: usize,
    /// The memory (NUMA) node its core belongs to.
    pub node: usize,
    /// The allocator; use [`Pager::set_algorithm`] to change its kind.
    pub alloc: Allocator<N, MAX_ORDER>,
    faults: usize,
    frees: usize,
    switches: usize,
}

impl<const N: usize, const MAX_ORDER: usize> Pager<N, MAX_ORDER> {
    /// A pager owning no memory yet.
    pub fn new(id: usize, node: usize, algorithm: Algorithm) -> Self {
        Self {
            id,
            node,
            alloc: Allocator::new(algorithm),
            faults: 0,
            frees: 0,
            switches: 0,
        }
    }

    /// Switches the allocation algorithm, keeping every outstanding page allocated and every
    /// free page free. On error (the new allocator's pool is too small for the current state)
    /// nothing changed.
    pub fn set_algorithm(&mut self, algorithm: Algorithm) -> Result<(), AllocError> {
        if algorithm == self.alloc.algorithm() {
            return Ok(());
        }
        let mut next = Allocator::new(algorithm);
        transfer(&self.alloc, &mut next)?;
        self.alloc = next;
        self.switches += 1;
        Ok(())
    }

    /// The counters the protocol's statistics request reports.
    pub fn stats(&self) -> Stats {
        Stats {
            free: self.alloc.free_count(),
            owned: self.alloc.owned_count(),
            faults: self.faults,
            algorithm: self.alloc.algorithm(),
        }
    }

    /// Number of successful frees and algorithm switches so far.
    pub fn counters(&self) -> (usize, usize) {
        (self.frees, self.switches)
    }

    /// Serves one request from a client: a page fault gets a frame to map, a free releases
    /// pages, set-algorithm switches, statistics reports. Requests between pagers and from the
    /// loader are the balancing layer's ([`crate::balance`]), freeing by address is the pager
    /// program's (it knows the mappings); they get [`PagerError::Unexpected`].
    /// A failed request changes nothing.
    pub fn handle(&mut self, request: Request) -> Reply {
        match request {
            Request::PageFault { addr, .. } => match self.alloc.alloc() {
                Ok(frame) => {
                    self.faults += 1;
                    Reply::Map {
                        page: addr & !(PAGE_SIZE - 1),
                        frame,
                    }
                }
                Err(e) => Reply::Error(e.into()),
            },
            Request::Free { frame, pages } => {
                match self.alloc.free_range(FrameRange::new(frame, pages)) {
                    Ok(()) => {
                        self.frees += 1;
                        Reply::Ok
                    }
                    Err(e) => Reply::Error(e.into()),
                }
            }
            Request::SetAlgorithm(a) => match self.set_algorithm(a) {
                Ok(()) => Reply::Ok,
                Err(e) => Reply::Error(e.into()),
            },
            Request::Stats => Reply::Stats(self.stats()),
            // Freeing by address needs the pager's mappings, which its program keeps (see
            // `servers::memory`); balancing and initialisation are the layers above.
            Request::FreePages { .. }
            | Request::MemoryLow { .. }
            | Request::MemoryReturn { .. }
            | Request::Init { .. } => Reply::Error(PagerError::Unexpected),
        }
    }
}
