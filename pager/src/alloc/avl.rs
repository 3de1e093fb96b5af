//! The balanced-tree allocator: free extents in an AVL tree keyed by start frame.
//!
//! This is the seed paper's allocator (Fiasco.OC's user-level pager, after [7, 8] there): one
//! tree node per maximal run of free frames, so memory that is mostly free costs a handful of
//! nodes whatever its size, and a free merges with both neighbours at once. Each node also caches
//! the largest extent in its subtree, so a contiguous request finds the lowest-addressed run that
//! fits in O(log n) instead of walking every extent.
//!
//! Nodes live in a fixed pool of `N` entries linked by index (no heap). Allocation always takes
//! frames from the front of an extent, so it never needs a node; a free needs one only when it
//! touches no free neighbour, and then a full pool is [`AllocError::OutOfCapacity`]. The cost the
//! paper measured (slower with more outstanding pages) is the tree's depth: outstanding pages cut
//! the free memory into more extents.

use super::{Algorithm, AllocError, FrameAllocator, FreeSet};
use crate::range::{FrameRange, RangeSet};

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Node {
    start: usize,
    count: usize,
    left: u32,
    right: u32,
    height: u32,
    /// Largest `count` in this subtree.
    max: usize,
}

const EMPTY: Node = Node {
    start: 0,
    count: 0,
    left: NIL,
    right: NIL,
    height: 0,
    max: 0,
};

/// Free extents in an AVL tree of at most `N` nodes; owns at most `N` separate ranges.
#[derive(Clone, Debug)]
pub struct AvlAllocator<const N: usize> {
    nodes: [Node; N],
    root: u32,
    /// Unused nodes, linked through `left`.
    spare: u32,
    used: usize,
    free_frames: usize,
    owned: RangeSet<N>,
}

impl<const N: usize> Default for AvlAllocator<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> AvlAllocator<N> {
    /// An allocator that owns nothing.
    pub fn new() -> Self {
        assert!(N < NIL as usize, "node pool too large for u32 links");
        let mut nodes = [EMPTY; N];
        for (i, n) in nodes.iter_mut().enumerate() {
            n.left = if i + 1 < N { (i + 1) as u32 } else { NIL };
        }
        Self {
            nodes,
            root: NIL,
            spare: if N > 0 { 0 } else { NIL },
            used: 0,
            free_frames: 0,
            owned: RangeSet::new(),
        }
    }

    /// Number of tree nodes in use (free extents).
    pub fn extents(&self) -> usize {
        self.used
    }

    /// Height of the tree (0 when empty).
    pub fn height(&self) -> u32 {
        self.h(self.root)
    }

    fn h(&self, i: u32) -> u32 {
        if i == NIL {
            0
        } else {
            self.nodes[i as usize].height
        }
    }

    fn mx(&self, i: u32) -> usize {
        if i == NIL {
            0
        } else {
            self.nodes[i as usize].max
        }
    }

    fn node(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    fn update(&mut self, i: u32) {
        let (l, r) = (self.node(i).left, self.node(i).right);
        let height = 1 + self.h(l).max(self.h(r));
        let max = self.node(i).count.max(self.mx(l)).max(self.mx(r));
        let n = &mut self.nodes[i as usize];
        n.height = height;
        n.max = max;
    }

    fn rotate_right(&mut self, i: u32) -> u32 {
        let l = self.node(i).left;
        self.nodes[i as usize].left = self.node(l).right;
        self.nodes[l as usize].right = i;
        self.update(i);
        self.update(l);
        l
    }

    fn rotate_left(&mut self, i: u32) -> u32 {
        let r = self.node(i).right;
        self.nodes[i as usize].right = self.node(r).left;
        self.nodes[r as usize].left = i;
        self.update(i);
        self.update(r);
        r
    }

    fn rebalance(&mut self, i: u32) -> u32 {
        self.update(i);
        let (l, r) = (self.node(i).left, self.node(i).right);
        if self.h(l) > self.h(r) + 1 {
            let (ll, lr) = (self.node(l).left, self.node(l).right);
            if self.h(lr) > self.h(ll) {
                self.nodes[i as usize].left = self.rotate_left(l);
            }
            self.rotate_right(i)
        } else if self.h(r) > self.h(l) + 1 {
            let (rl, rr) = (self.node(r).left, self.node(r).right);
            if self.h(rl) > self.h(rr) {
                self.nodes[i as usize].right = self.rotate_right(r);
            }
            self.rotate_left(i)
        } else {
            i
        }
    }

    fn insert_node(&mut self, at: u32, new: u32) -> u32 {
        if at == NIL {
            return new;
        }
        if self.node(new).start < self.node(at).start {
            let l = self.insert_node(self.node(at).left, new);
            self.nodes[at as usize].left = l;
        } else {
            let r = self.insert_node(self.node(at).right, new);
            self.nodes[at as usize].right = r;
        }
        self.rebalance(at)
    }

    /// Detaches the minimum of the subtree at `at`: (new subtree root, the minimum).
    fn remove_min(&mut self, at: u32) -> (u32, u32) {
        let l = self.node(at).left;
        if l == NIL {
            return (self.node(at).right, at);
        }
        let (nl, min) = self.remove_min(l);
        self.nodes[at as usize].left = nl;
        (self.rebalance(at), min)
    }

    /// Detaches the node keyed `start` from the subtree at `at` (which must hold it).
    fn remove_node(&mut self, at: u32, start: usize) -> u32 {
        let n = *self.node(at);
        if start < n.start {
            let l = self.remove_node(n.left, start);
            self.nodes[at as usize].left = l;
        } else if start > n.start {
            let r = self.remove_node(n.right, start);
            self.nodes[at as usize].right = r;
        } else {
            if n.left == NIL || n.right == NIL {
                return if n.left == NIL { n.right } else { n.left };
            }
            let (nr, min) = self.remove_min(n.right);
            self.nodes[min as usize].left = n.left;
            self.nodes[min as usize].right = nr;
            return self.rebalance(min);
        }
        self.rebalance(at)
    }

    /// Recomputes the cached fields on the path to the node keyed `start` after it changed in
    /// place (its key may change only within its neighbours' keys).
    fn refresh(&mut self, at: u32, start: usize) {
        if at == NIL {
            return;
        }
        let n = *self.node(at);
        if start < n.start {
            self.refresh(n.left, start);
        } else if start > n.start {
            self.refresh(n.right, start);
        }
        self.update(at);
    }

    /// The node with the largest start `<= key`.
    fn find_le(&self, key: usize) -> Option<u32> {
        let (mut i, mut best) = (self.root, None);
        while i != NIL {
            if self.node(i).start <= key {
                best = Some(i);
                i = self.node(i).right;
            } else {
                i = self.node(i).left;
            }
        }
        best
    }

    /// The node with the smallest start `>= key`.
    fn find_ge(&self, key: usize) -> Option<u32> {
        let (mut i, mut best) = (self.root, None);
        while i != NIL {
            if self.node(i).start >= key {
                best = Some(i);
                i = self.node(i).left;
            } else {
                i = self.node(i).right;
            }
        }
        best
    }

    /// The lowest-addressed extent with at least `count` frames.
    fn first_fit(&self, count: usize) -> Option<u32> {
        let mut i = self.root;
        while i != NIL && self.mx(i) >= count {
            let n = self.node(i);
            if self.mx(n.left) >= count {
                i = n.left;
            } else if n.count >= count {
                return Some(i);
            } else {
                i = n.right;
            }
        }
        None
    }

    /// The extent with the most frames.
    fn largest(&self) -> Option<u32> {
        let mut i = self.root;
        while i != NIL {
            let n = self.node(i);
            if n.count == n.max {
                return Some(i);
            }
            i = if self.mx(n.left) == n.max {
                n.left
            } else {
                n.right
            };
        }
        None
    }

    fn new_node(&mut self, range: FrameRange) -> Result<u32, AllocError> {
        if self.spare == NIL {
            return Err(AllocError::OutOfCapacity);
        }
        let i = self.spare;
        self.spare = self.node(i).left;
        self.nodes[i as usize] = Node {
            start: range.start,
            count: range.count,
            ..EMPTY
        };
        self.used += 1;
        Ok(i)
    }

    fn delete(&mut self, i: u32) {
        self.root = self.remove_node(self.root, self.node(i).start);
        self.nodes[i as usize] = Node {
            left: self.spare,
            ..EMPTY
        };
        self.spare = i;
        self.used -= 1;
    }

    /// Whether any frame of `range` is free.
    fn overlaps_free(&self, range: &FrameRange) -> bool {
        self.find_le(range.end() - 1)
            .is_some_and(|i| self.node(i).start + self.node(i).count > range.start)
    }

    /// Adds the range (disjoint from every free extent) to the free set, merging neighbours.
    fn insert_free(&mut self, range: FrameRange) -> Result<(), AllocError> {
        let prev = self
            .find_le(range.start)
            .filter(|&i| self.node(i).start + self.node(i).count == range.start);
        let next = self
            .find_ge(range.end())
            .filter(|&i| self.node(i).start == range.end());
        match (prev, next) {
            (Some(p), Some(n)) => {
                let extra = range.count + self.node(n).count;
                self.delete(n);
                self.nodes[p as usize].count += extra;
                self.refresh(self.root, self.node(p).start);
            }
            (Some(p), None) => {
                self.nodes[p as usize].count += range.count;
                self.refresh(self.root, self.node(p).start);
            }
            (None, Some(n)) => {
                let node = &mut self.nodes[n as usize];
                node.start = range.start;
                node.count += range.count;
                self.refresh(self.root, range.start);
            }
            (None, None) => {
                let i = self.new_node(range)?;
                self.update(i);
                self.root = self.insert_node(self.root, i);
            }
        }
        self.free_frames += range.count;
        Ok(())
    }

    /// Removes `range`, which must be free, from the free set.
    fn remove_free(&mut self, range: FrameRange) -> Result<(), AllocError> {
        let i = self
            .find_le(range.start)
            .filter(|&i| FrameRange::new(self.node(i).start, self.node(i).count).covers(&range))
            .ok_or(AllocError::Busy)?;
        let e = FrameRange::new(self.node(i).start, self.node(i).count);
        let before = range.start - e.start;
        let after = e.end() - range.end();
        match (before > 0, after > 0) {
            (true, true) => {
                let j = self.new_node(FrameRange::new(range.end(), after))?;
                self.nodes[i as usize].count = before;
                self.refresh(self.root, e.start);
                self.update(j);
                self.root = self.insert_node(self.root, j);
            }
            (true, false) => {
                self.nodes[i as usize].count = before;
                self.refresh(self.root, e.start);
            }
            (false, true) => {
                let n = &mut self.nodes[i as usize];
                n.start = range.end();
                n.count = after;
                self.refresh(self.root, range.end());
            }
            (false, false) => self.delete(i),
        }
        self.free_frames -= range.count;
        Ok(())
    }

    fn check_subtree(
        &self,
        i: u32,
        lo: usize,
        hi: usize,
        seen: &mut (usize, usize),
    ) -> Result<(), &'static str> {
        if i == NIL {
            return Ok(());
        }
        let n = *self.node(i);
        if n.count == 0 || n.start < lo || n.start.checked_add(n.count).is_none_or(|e| e > hi) {
            return Err("extent empty or out of order");
        }
        if n.height != 1 + self.h(n.left).max(self.h(n.right)) {
            return Err("stale height");
        }
        if self.h(n.left).abs_diff(self.h(n.right)) > 1 {
            return Err("unbalanced");
        }
        if n.max != n.count.max(self.mx(n.left)).max(self.mx(n.right)) {
            return Err("stale max");
        }
        if !self.owned.covers(&FrameRange::new(n.start, n.count)) {
            return Err("free extent not owned");
        }
        // Children must not touch the parent either: neighbours are always merged.
        self.check_subtree(n.left, lo, n.start.saturating_sub(1), seen)?;
        self.check_subtree(n.right, n.start + n.count + 1, hi, seen)?;
        seen.0 += 1;
        seen.1 += n.count;
        Ok(())
    }
}

impl<const N: usize> FreeSet for AvlAllocator<N> {
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

impl<const N: usize> FrameAllocator for AvlAllocator<N> {
    fn algorithm(&self) -> Algorithm {
        Algorithm::Avl
    }

    fn add_range(&mut self, range: FrameRange) -> Result<(), AllocError> {
        if !range.is_valid() {
            return Err(AllocError::Invalid);
        }
        if self.owned.overlaps(&range) {
            return Err(AllocError::AlreadyOwned);
        }
        self.owned.insert(range)?;
        if let Err(e) = self.insert_free(range) {
            // Undoing an insert never needs more room than the set had before it.
            self.owned.remove(range).expect("undo of an insert");
            return Err(e);
        }
        Ok(())
    }

    fn alloc_contiguous(&mut self, count: usize) -> Result<FrameRange, AllocError> {
        if count == 0 {
            return Err(AllocError::Invalid);
        }
        if self.free_frames == 0 {
            return Err(AllocError::OutOfMemory);
        }
        let i = self.first_fit(count).ok_or(AllocError::NoContiguousRun)?;
        let range = FrameRange::new(self.node(i).start, count);
        // Taking the front of an extent never needs a node.
        self.remove_free(range)?;
        Ok(range)
    }

    checked_operations!();

    fn take_range(&mut self, max: usize) -> Result<FrameRange, AllocError> {
        if max == 0 {
            return Err(AllocError::Invalid);
        }
        let i = self.largest().ok_or(AllocError::OutOfMemory)?;
        let n = self.node(i);
        let count = n.count.min(max);
        // The top of the extent: a pager keeps its low memory and the tree keeps its node.
        let range = FrameRange::new(n.start + n.count - count, count);
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
        self.find_le(frame)
            .is_some_and(|i| self.node(i).start + self.node(i).count > frame)
    }

    fn for_each_free(&self, f: &mut dyn FnMut(FrameRange)) {
        fn walk<const N: usize>(a: &AvlAllocator<N>, i: u32, f: &mut dyn FnMut(FrameRange)) {
            if i != NIL {
                let n = a.node(i);
                walk(a, n.left, f);
                f(FrameRange::new(n.start, n.count));
                walk(a, n.right, f);
            }
        }
        walk(self, self.root, f);
    }

    fn check(&self) -> Result<(), &'static str> {
        let mut seen = (0, 0);
        self.check_subtree(self.root, 0, usize::MAX, &mut seen)?;
        if seen.0 != self.used {
            return Err("node count differs");
        }
        if seen.1 != self.free_frames {
            return Err("free count differs");
        }
        // An AVL tree of n nodes is at most 1.44 log2(n + 2) high.
        if self.used > 0 && max_avl_height(self.used) < self.height() {
            return Err("tree too high");
        }
        let mut spare = 0;
        let mut i = self.spare;
        while i != NIL && spare <= N {
            spare += 1;
            i = self.node(i).left;
        }
        if spare + self.used != N {
            return Err("node pool leaked");
        }
        Ok(())
    }
}

/// The greatest height an AVL tree of `n` nodes can have.
fn max_avl_height(n: usize) -> u32 {
    // Minimum nodes of an AVL tree of height h: m(h) = m(h-1) + m(h-2) + 1.
    let (mut a, mut b, mut h) = (0usize, 1usize, 1u32);
    while b <= n {
        (a, b) = (b, a.saturating_add(b).saturating_add(1));
        h += 1;
    }
    h - 1
}
