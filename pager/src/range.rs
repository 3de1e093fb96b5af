//! Frame ranges and a fixed-capacity set of them.
//!
//! Everything in this crate counts in *frames* (physical page numbers), not bytes: a pager hands
//! out whole pages, and frame numbers keep the arithmetic free of alignment checks. Byte
//! addresses appear only at the edges ([`FrameRange::from_bytes`], the protocol's fault address).
//!
//! [`RangeSet`] is the record of what an allocator *owns* (free or allocated): without it an
//! allocator could not tell "this frame is allocated" from "this frame was never mine", and a
//! free of a foreign frame would silently add memory the pager does not hold.

/// Size of a page (a frame) in bytes on both architectures.
pub const PAGE_SIZE: usize = 4096;

/// A run of `count` frames starting at frame number `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FrameRange {
    /// First frame number.
    pub start: usize,
    /// Number of frames.
    pub count: usize,
}

impl FrameRange {
    /// The range `[start, start + count)`.
    pub const fn new(start: usize, count: usize) -> Self {
        Self { start, count }
    }

    /// The whole pages inside the byte range `[base, base + size)` (rounded inwards), or `None`
    /// when it holds no whole page or overflows.
    pub fn from_bytes(base: usize, size: usize) -> Option<Self> {
        let end = base.checked_add(size)?;
        let first = base.checked_add(PAGE_SIZE - 1)? / PAGE_SIZE;
        let last = end / PAGE_SIZE;
        (last > first).then(|| Self::new(first, last - first))
    }

    /// One past the last frame (saturating, so a malformed range never wraps).
    pub const fn end(&self) -> usize {
        self.start.saturating_add(self.count)
    }

    /// Whether the range is non-empty and `start + count` does not overflow.
    pub const fn is_valid(&self) -> bool {
        self.count > 0 && self.start.checked_add(self.count).is_some()
    }

    /// Whether `frame` lies inside.
    pub const fn contains(&self, frame: usize) -> bool {
        frame >= self.start && frame < self.end()
    }

    /// Whether `other` lies entirely inside.
    pub const fn covers(&self, other: &FrameRange) -> bool {
        other.start >= self.start && other.end() <= self.end()
    }

    /// Whether the two ranges share a frame.
    pub const fn overlaps(&self, other: &FrameRange) -> bool {
        self.start < other.end() && other.start < self.end()
    }

    /// Byte address of the first frame.
    pub const fn base_address(&self) -> usize {
        self.start.wrapping_mul(PAGE_SIZE)
    }
}

/// Why a [`RangeSet`] refused a change. Nothing changed when it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeSetError {
    /// The range is empty or overflows.
    Invalid,
    /// Inserting: the range overlaps one already in the set.
    Overlap,
    /// Removing: the range is not entirely inside one element of the set.
    NotPresent,
    /// The change needs more elements than the capacity.
    Full,
}

/// A set of frames stored as at most `N` sorted, disjoint, non-adjacent ranges (adjacent
/// ranges are always merged, so the representation is canonical).
#[derive(Clone, Debug)]
pub struct RangeSet<const N: usize> {
    ranges: [FrameRange; N],
    len: usize,
}

impl<const N: usize> Default for RangeSet<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> RangeSet<N> {
    /// The empty set.
    pub const fn new() -> Self {
        Self {
            ranges: [FrameRange::new(0, 0); N],
            len: 0,
        }
    }

    /// The elements, sorted by start.
    pub fn ranges(&self) -> &[FrameRange] {
        &self.ranges[..self.len]
    }

    /// Number of frames in the set.
    pub fn frames(&self) -> usize {
        self.ranges().iter().map(|r| r.count).sum()
    }

    /// Whether the set has no frame.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Index of the first element whose end is beyond `frame` (the only one that can contain it).
    fn search(&self, frame: usize) -> usize {
        self.ranges().partition_point(|r| r.end() <= frame)
    }

    /// Whether `frame` is in the set.
    pub fn contains(&self, frame: usize) -> bool {
        let i = self.search(frame);
        i < self.len && self.ranges[i].contains(frame)
    }

    /// Whether every frame of `range` is in the set.
    pub fn covers(&self, range: &FrameRange) -> bool {
        let i = self.search(range.start);
        range.is_valid() && i < self.len && self.ranges[i].covers(range)
    }

    /// Whether any frame of `range` is in the set.
    pub fn overlaps(&self, range: &FrameRange) -> bool {
        let i = self.search(range.start);
        i < self.len && self.ranges[i].overlaps(range)
    }

    /// Adds `range`, merging it with adjacent elements.
    pub fn insert(&mut self, range: FrameRange) -> Result<(), RangeSetError> {
        if !range.is_valid() {
            return Err(RangeSetError::Invalid);
        }
        if self.overlaps(&range) {
            return Err(RangeSetError::Overlap);
        }
        // Elements before `i` end at or before range.start.
        let i = self.search(range.start);
        let joins_prev = i > 0 && self.ranges[i - 1].end() == range.start;
        let joins_next = i < self.len && self.ranges[i].start == range.end();
        match (joins_prev, joins_next) {
            (true, true) => {
                self.ranges[i - 1].count += range.count + self.ranges[i].count;
                self.ranges.copy_within(i + 1..self.len, i);
                self.len -= 1;
            }
            (true, false) => self.ranges[i - 1].count += range.count,
            (false, true) => {
                self.ranges[i].start = range.start;
                self.ranges[i].count += range.count;
            }
            (false, false) => {
                if self.len == N {
                    return Err(RangeSetError::Full);
                }
                self.ranges.copy_within(i..self.len, i + 1);
                self.ranges[i] = range;
                self.len += 1;
            }
        }
        Ok(())
    }

    /// Whether [`remove`](Self::remove) of `range` would succeed.
    pub fn can_remove(&self, range: &FrameRange) -> Result<(), RangeSetError> {
        if !range.is_valid() {
            return Err(RangeSetError::Invalid);
        }
        let i = self.search(range.start);
        if i >= self.len || !self.ranges[i].covers(range) {
            return Err(RangeSetError::NotPresent);
        }
        let r = self.ranges[i];
        if r.start != range.start && r.end() != range.end() && self.len == N {
            return Err(RangeSetError::Full);
        }
        Ok(())
    }

    /// Removes `range`, which must lie inside one element (splitting it if needed).
    pub fn remove(&mut self, range: FrameRange) -> Result<(), RangeSetError> {
        self.can_remove(&range)?;
        let i = self.search(range.start);
        let r = self.ranges[i];
        let before = FrameRange::new(r.start, range.start - r.start);
        let after = FrameRange::new(range.end(), r.end() - range.end());
        match (before.count > 0, after.count > 0) {
            (true, true) => {
                self.ranges.copy_within(i + 1..self.len, i + 2);
                self.ranges[i] = before;
                self.ranges[i + 1] = after;
                self.len += 1;
            }
            (true, false) => self.ranges[i] = before,
            (false, true) => self.ranges[i] = after,
            (false, false) => {
                self.ranges.copy_within(i + 1..self.len, i);
                self.len -= 1;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_bytes_rounds_inwards() {
        assert_eq!(
            FrameRange::from_bytes(0x1001, 0x3000),
            Some(FrameRange::new(2, 2))
        );
        assert_eq!(
            FrameRange::from_bytes(0x1000, 0x1000),
            Some(FrameRange::new(1, 1))
        );
        assert_eq!(FrameRange::from_bytes(0x1001, 0x1000), None);
        assert_eq!(FrameRange::from_bytes(usize::MAX, 2), None);
    }

    #[test]
    fn insert_merges_and_remove_splits() {
        let mut s = RangeSet::<2>::new();
        s.insert(FrameRange::new(10, 5)).unwrap();
        s.insert(FrameRange::new(20, 5)).unwrap();
        assert_eq!(s.insert(FrameRange::new(30, 1)), Err(RangeSetError::Full));
        assert_eq!(
            s.insert(FrameRange::new(14, 2)),
            Err(RangeSetError::Overlap)
        );
        s.insert(FrameRange::new(15, 5)).unwrap();
        assert_eq!(s.ranges(), &[FrameRange::new(10, 15)]);
        s.remove(FrameRange::new(12, 3)).unwrap();
        assert_eq!(
            s.ranges(),
            &[FrameRange::new(10, 2), FrameRange::new(15, 10)]
        );
        assert_eq!(s.remove(FrameRange::new(17, 2)), Err(RangeSetError::Full));
        assert_eq!(
            s.remove(FrameRange::new(11, 2)),
            Err(RangeSetError::NotPresent)
        );
        assert!(s.contains(11) && !s.contains(12) && s.covers(&FrameRange::new(15, 10)));
        s.remove(FrameRange::new(10, 2)).unwrap();
        s.remove(FrameRange::new(15, 10)).unwrap();
        assert!(s.is_empty());
    }
}
