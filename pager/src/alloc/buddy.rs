//! The buddy allocator: free blocks of 2^k frames, aligned to their size, in one free list per
//! order k up to `MAX_ORDER`.
//!
//! The alternative the seed paper names for per-pager customisation (and what Fiasco.OC's kernel
//! allocator uses): a single-frame allocation pops the smallest block and splits it, a free
//! merges a block with its buddy (the block whose address differs only in bit k) while the buddy
//! is free. Alignment is absolute (frame number modulo 2^k), so two pagers' blocks never claim to
//! be buddies across a partition boundary unless both halves are owned by the same allocator.
//!
//! Blocks are nodes of a fixed pool, one singly linked list per order. Finding a buddy walks
//! its order's list: buddy coalescing keeps those lists short, and the walk costs no memory; a
//! per-order hash index is the optimisation to make if the benchmark shows it. A range that is not
//! aligned costs one node per aligned piece (at most 2 * MAX_ORDER + ranges / 2^MAX_ORDER), so the
//! pool is sized for the largest free range, not the number of outstanding pages.
//!
//! Operations that touch several blocks check the pool's room before changing anything
//! (conservatively: as if no piece merged), so a full pool is an error and the allocator is
//! unchanged.

use super::{order_for, Algorithm, AllocError, FrameAllocator, FreeSet};
use crate::range::{FrameRange, RangeSet};

const NIL: u32 = u32::MAX;
/// Orders the lists can hold (the largest order is `MAX_ORDER`, at most 62).
const ORDERS: usize = 63;

#[derive(Clone, Copy, Debug)]
struct Node {
    start: usize,
    next: u32,
}

/// Buddy blocks of order `0..=MAX_ORDER` in a pool of `N` nodes; owns at most `N` separate
/// ranges.
#[derive(Clone, Debug)]
pub struct BuddyAllocator<const N: usize, const MAX_ORDER: usize> {
    nodes: [Node; N],
    heads: [u32; ORDERS],
    lengths: [usize; ORDERS],
    /// Unused nodes, linked through `next`.
    spare: u32,
    spare_count: usize,
    free_frames: usize,
    owned: RangeSet<N>,
}

impl<const N: usize, const MAX_ORDER: usize> Default for BuddyAllocator<N, MAX_ORDER> {
    fn default() -> Self {
        Self::new()
    }
}

/// Calls `f(start, order)` for the maximal aligned blocks (of order at most `max_order`) that
/// tile `range`, in address order.
fn pieces(range: FrameRange, max_order: usize, mut f: impl FnMut(usize, usize)) {
    let mut p = range.start;
    let end = range.end();
    while p < end {
        let align = if p == 0 {
            usize::BITS
        } else {
            p.trailing_zeros()
        } as usize;
        let fit = (usize::BITS - 1 - (end - p).leading_zeros()) as usize;
        let o = align.min(fit).min(max_order);
        f(p, o);
        p += 1 << o;
    }
}

fn piece_count(range: FrameRange, max_order: usize) -> usize {
    let mut n = 0;
    pieces(range, max_order, |_, _| n += 1);
    n
}

impl<const N: usize, const MAX_ORDER: usize> BuddyAllocator<N, MAX_ORDER> {
    /// An allocator that owns nothing.
    pub fn new() -> Self {
        assert!(
            MAX_ORDER < ORDERS && MAX_ORDER < usize::BITS as usize - 1,
            "MAX_ORDER too large"
        );
        assert!(N < NIL as usize, "node pool too large for u32 links");
        let mut nodes = [Node {
            start: 0,
            next: NIL,
        }; N];
        for (i, n) in nodes.iter_mut().enumerate() {
            n.next = if i + 1 < N { (i + 1) as u32 } else { NIL };
        }
        Self {
            nodes,
            heads: [NIL; ORDERS],
            lengths: [0; ORDERS],
            spare: if N > 0 { 0 } else { NIL },
            spare_count: N,
            free_frames: 0,
            owned: RangeSet::new(),
        }
    }

    /// Number of free blocks of order `order`.
    pub fn blocks(&self, order: usize) -> usize {
        self.lengths.get(order).copied().unwrap_or(0)
    }

    /// The list entry before the block `start` of order `order`: `Some(prev)` (NIL when it is
    /// the head) if the block is free.
    fn find(&self, order: usize, start: usize) -> Option<u32> {
        let (mut prev, mut i) = (NIL, self.heads[order]);
        while i != NIL {
            if self.nodes[i as usize].start == start {
                return Some(prev);
            }
            (prev, i) = (i, self.nodes[i as usize].next);
        }
        None
    }

    fn unlink(&mut self, order: usize, prev: u32) -> usize {
        let i = if prev == NIL {
            self.heads[order]
        } else {
            self.nodes[prev as usize].next
        };
        let next = self.nodes[i as usize].next;
        if prev == NIL {
            self.heads[order] = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        self.lengths[order] -= 1;
        self.free_frames -= 1 << order;
        let start = self.nodes[i as usize].start;
        self.nodes[i as usize].next = self.spare;
        self.spare = i;
        self.spare_count += 1;
        start
    }

    /// Adds a block without merging; the caller made sure a node is spare.
    fn push(&mut self, order: usize, start: usize) {
        let i = self.spare;
        debug_assert!(i != NIL, "room checked by the caller");
        self.spare = self.nodes[i as usize].next;
        self.spare_count -= 1;
        self.nodes[i as usize] = Node {
            start,
            next: self.heads[order],
        };
        self.heads[order] = i;
        self.lengths[order] += 1;
        self.free_frames += 1 << order;
    }

    /// Frees a block, merging it with its buddy as long as the buddy is free.
    fn free_block(&mut self, mut start: usize, mut order: usize) {
        while order < MAX_ORDER {
            let buddy = start ^ (1 << order);
            match self.find(order, buddy) {
                Some(prev) => {
                    self.unlink(order, prev);
                    start = start.min(buddy);
                    order += 1;
                }
                None => break,
            }
        }
        self.push(order, start);
    }

    /// The free block holding `frame`: (order, start, list predecessor).
    fn containing(&self, frame: usize) -> Option<(usize, usize, u32)> {
        (0..=MAX_ORDER).find_map(|o| {
            let start = frame & !((1usize << o) - 1);
            self.find(o, start).map(|prev| (o, start, prev))
        })
    }

    fn overlaps_free(&self, range: &FrameRange) -> bool {
        (0..=MAX_ORDER).any(|o| {
            let mut i = self.heads[o];
            while i != NIL {
                if FrameRange::new(self.nodes[i as usize].start, 1 << o).overlaps(range) {
                    return true;
                }
                i = self.nodes[i as usize].next;
            }
            false
        })
    }

    /// Frees `range` (owned, all allocated), or fails for want of nodes, changing nothing.
    fn insert_free(&mut self, range: FrameRange) -> Result<(), AllocError> {
        let n = piece_count(range, MAX_ORDER);
        let room = if n == 1 && self.spare_count == 0 {
            // A single block fits in a full pool when it merges, which frees its buddy's node.
            let o = range.count.trailing_zeros() as usize;
            o < MAX_ORDER && self.find(o, range.start ^ (1 << o)).is_some()
        } else {
            self.spare_count >= n
        };
        if !room {
            return Err(AllocError::OutOfCapacity);
        }
        pieces(range, MAX_ORDER, |s, o| self.free_block(s, o));
        Ok(())
    }

    /// Takes the free `range` out of the free lists, splitting the blocks at its ends.
    fn remove_free(&mut self, range: FrameRange) -> Result<(), AllocError> {
        // Pass 1: every frame free, and room for the pieces left over at the ends.
        let (mut p, mut needed) = (range.start, 0);
        while p < range.end() {
            let (o, s, _) = self.containing(p).ok_or(AllocError::Busy)?;
            let block = FrameRange::new(s, 1 << o);
            if s < range.start {
                needed += piece_count(FrameRange::new(s, range.start - s), MAX_ORDER);
            }
            if block.end() > range.end() {
                needed += piece_count(
                    FrameRange::new(range.end(), block.end() - range.end()),
                    MAX_ORDER,
                );
            }
            p = block.end();
        }
        if needed > self.spare_count {
            return Err(AllocError::OutOfCapacity);
        }
        // Pass 2: unlink the blocks, put back what lies outside the range. The leftover pieces
        // are maximal inside their block and their buddies are in the range, so none merges.
        let mut p = range.start;
        while p < range.end() {
            let (o, s, prev) = self.containing(p).expect("checked in pass 1");
            self.unlink(o, prev);
            let block = FrameRange::new(s, 1 << o);
            if s < range.start {
                pieces(FrameRange::new(s, range.start - s), MAX_ORDER, |s, o| {
                    self.push(o, s)
                });
            }
            if block.end() > range.end() {
                let rest = FrameRange::new(range.end(), block.end() - range.end());
                pieces(rest, MAX_ORDER, |s, o| self.push(o, s));
            }
            p = block.end();
        }
        Ok(())
    }
}

impl<const N: usize, const MAX_ORDER: usize> FreeSet for BuddyAllocator<N, MAX_ORDER> {
    fn owned_covers(&self, r: &FrameRange) -> bool {
        self.owned.covers(r)
    }
    fn owned_can_remove(&self, r: &FrameRange) -> Result<(), AllocError> {
        Ok(self.owned.can_remove(r)?)
    }
    fn owned_remove(&mut self, r: FrameRange) {
        self.owned.remove(r).expect("checked by owned_can_remove");
    }
    fn overlaps_free(&self, r: &FrameRange) -> bool {
        Self::overlaps_free(self, r)
    }
    fn insert_free(&mut self, r: FrameRange) -> Result<(), AllocError> {
        Self::insert_free(self, r)
    }
    fn remove_free(&mut self, r: FrameRange) -> Result<(), AllocError> {
        Self::remove_free(self, r)
    }
}

impl<const N: usize, const MAX_ORDER: usize> FrameAllocator for BuddyAllocator<N, MAX_ORDER> {
    fn algorithm(&self) -> Algorithm {
        Algorithm::Buddy
    }

    fn add_range(&mut self, range: FrameRange) -> Result<(), AllocError> {
        if !range.is_valid() {
            return Err(AllocError::Invalid);
        }
        if self.owned.overlaps(&range) {
            return Err(AllocError::AlreadyOwned);
        }
        if self.spare_count < piece_count(range, MAX_ORDER) {
            return Err(AllocError::OutOfCapacity);
        }
        self.owned.insert(range)?;
        self.insert_free(range).expect("room checked");
        Ok(())
    }

    fn alloc_contiguous(&mut self, count: usize) -> Result<FrameRange, AllocError> {
        if count == 0 {
            return Err(AllocError::Invalid);
        }
        if self.free_frames == 0 {
            return Err(AllocError::OutOfMemory);
        }
        let order = order_for(count) as usize;
        let k = (order..=MAX_ORDER)
            .find(|&k| self.heads[k] != NIL)
            .ok_or(AllocError::NoContiguousRun)?;
        let range = FrameRange::new(self.nodes[self.heads[k] as usize].start, count);
        self.remove_free(range)?;
        Ok(range)
    }

    checked_operations!();

    fn take_range(&mut self, max: usize) -> Result<FrameRange, AllocError> {
        if max == 0 {
            return Err(AllocError::Invalid);
        }
        if self.free_frames == 0 {
            return Err(AllocError::OutOfMemory);
        }
        let fit = (usize::BITS - 1 - max.leading_zeros()) as usize;
        // The largest whole block that fits, else the front of the smallest block.
        let range = match (0..=fit.min(MAX_ORDER))
            .rev()
            .find(|&k| self.heads[k] != NIL)
        {
            Some(k) => FrameRange::new(self.nodes[self.heads[k] as usize].start, 1 << k),
            None => {
                let k = (0..=MAX_ORDER)
                    .find(|&k| self.heads[k] != NIL)
                    .expect("free frames exist");
                FrameRange::new(self.nodes[self.heads[k] as usize].start, max)
            }
        };
        self.withdraw(range)?;
        Ok(range)
    }

    fn free_count(&self) -> usize {
        self.free_frames
    }

    fn owned_ranges(&self) -> &[FrameRange] {
        self.owned.ranges()
    }

    fn is_free(&self, frame: usize) -> bool {
        self.containing(frame).is_some()
    }

    fn for_each_free(&self, f: &mut dyn FnMut(FrameRange)) {
        for o in 0..=MAX_ORDER {
            let mut i = self.heads[o];
            while i != NIL {
                f(FrameRange::new(self.nodes[i as usize].start, 1 << o));
                i = self.nodes[i as usize].next;
            }
        }
    }

    fn check(&self) -> Result<(), &'static str> {
        let (mut frames, mut blocks) = (0, 0);
        for o in 0..ORDERS {
            let mut i = self.heads[o];
            let mut len = 0;
            while i != NIL {
                if o > MAX_ORDER || len > N {
                    return Err("block of a bad order, or a cycle");
                }
                let s = self.nodes[i as usize].start;
                let block = FrameRange::new(s, 1 << o);
                if s % (1 << o) != 0 {
                    return Err("misaligned block");
                }
                if !self.owned.covers(&block) {
                    return Err("free block not owned");
                }
                if o < MAX_ORDER && self.find(o, s ^ (1 << o)).is_some() {
                    return Err("free buddies not merged");
                }
                let mut overlaps = 0;
                self.for_each_free(&mut |r| overlaps += usize::from(r.overlaps(&block)));
                if overlaps != 1 {
                    return Err("free blocks overlap");
                }
                frames += 1 << o;
                len += 1;
                i = self.nodes[i as usize].next;
            }
            if len != self.lengths[o] {
                return Err("list length differs");
            }
            blocks += len;
        }
        if frames != self.free_frames {
            return Err("free count differs");
        }
        let mut spare = 0;
        let mut i = self.spare;
        while i != NIL && spare <= N {
            spare += 1;
            i = self.nodes[i as usize].next;
        }
        if spare != self.spare_count || spare + blocks != N {
            return Err("node pool leaked");
        }
        Ok(())
    }
}
