//! Partition policies: how the loader divides RAM among the per-core pagers.
//!
//! The seed paper's loader splits memory evenly among the cores (step 1 of its Fig. 7), or, on a
//! NUMA machine, first by memory node and then evenly among each node's cores (§4.3), so that a
//! pager hands out memory local to its core. Both policies here produce, for each core, a
//! [`RangeSet`] of frames; the parts are disjoint, cover every input frame, and differ in size by
//! at most one frame among the cores sharing a node. Input ranges are frame ranges
//! ([`FrameRange::from_bytes`](crate::FrameRange::from_bytes) rounds byte ranges inwards to whole
//! pages). A core's share may span several input ranges, which is why it is a set.

use crate::range::{FrameRange, RangeSet, RangeSetError};

/// Why a partition failed. The output may be partly filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionError {
    /// No cores, or the output has a different number of parts than there are cores.
    NoCores,
    /// An input range is empty, wraps, or overlaps another.
    BadRange,
    /// A core's share needs more ranges than its set holds.
    Full,
    /// The node list's length differs from the range list's.
    LengthMismatch,
}

impl From<RangeSetError> for PartitionError {
    fn from(e: RangeSetError) -> Self {
        match e {
            RangeSetError::Full => PartitionError::Full,
            _ => PartitionError::BadRange,
        }
    }
}

fn check_ranges<'a>(
    ranges: impl Iterator<Item = &'a FrameRange> + Clone,
) -> Result<(), PartitionError> {
    for (i, a) in ranges.clone().enumerate() {
        if !a.is_valid() || ranges.clone().skip(i + 1).any(|b| a.overlaps(b)) {
            return Err(PartitionError::BadRange);
        }
    }
    Ok(())
}

/// Deals the frames of the selected `ranges` (in the order given) to `cores` (in order), in
/// equal shares: the first `total % n` cores get one frame more.
fn deal<const M: usize>(
    ranges: &[FrameRange],
    selected: impl Fn(usize) -> bool,
    cores: impl Iterator<Item = usize> + Clone,
    out: &mut [RangeSet<M>],
) -> Result<(), PartitionError> {
    let n = cores.clone().count();
    let picked = || {
        ranges
            .iter()
            .enumerate()
            .filter(|(i, _)| selected(*i))
            .map(|(_, r)| *r)
    };
    let total: usize = picked().map(|r| r.count).sum();
    let mut cores = cores.enumerate();
    let (mut k, mut core) = cores.next().ok_or(PartitionError::NoCores)?;
    let share = |k: usize| total / n + usize::from(k < total % n);
    let mut quota = share(k);
    for r in picked() {
        let (mut p, mut left) = (r.start, r.count);
        while left > 0 {
            while quota == 0 {
                // The quotas add up to the total, so a core is left while frames are.
                (k, core) = cores.next().ok_or(PartitionError::NoCores)?;
                quota = share(k);
            }
            let take = quota.min(left);
            out[core].insert(FrameRange::new(p, take))?;
            p += take;
            left -= take;
            quota -= take;
        }
    }
    Ok(())
}

/// Splits `ranges` evenly among `out.len()` cores: core `i`'s share goes to `out[i]`.
pub fn split_even<const M: usize>(
    ranges: &[FrameRange],
    out: &mut [RangeSet<M>],
) -> Result<(), PartitionError> {
    if out.is_empty() {
        return Err(PartitionError::NoCores);
    }
    check_ranges(ranges.iter())?;
    deal(ranges, |_| true, 0..out.len(), out)
}

/// Splits `ranges` by memory node, then evenly among each node's cores: `range_nodes[i]` is the
/// node of `ranges[i]`, `core_nodes[c]` the node of core `c`, whose share goes to `out[c]`.
/// Memory of a node with no core (a memory-only node) is split evenly among all cores.
pub fn split_numa<const M: usize>(
    ranges: &[FrameRange],
    range_nodes: &[usize],
    core_nodes: &[usize],
    out: &mut [RangeSet<M>],
) -> Result<(), PartitionError> {
    if out.is_empty() || core_nodes.len() != out.len() {
        return Err(PartitionError::NoCores);
    }
    if range_nodes.len() != ranges.len() {
        return Err(PartitionError::LengthMismatch);
    }
    check_ranges(ranges.iter())?;
    for (i, &node) in range_nodes.iter().enumerate() {
        if range_nodes[..i].contains(&node) {
            continue; // dealt with at its first range
        }
        let local = (0..core_nodes.len()).filter(move |&c| core_nodes[c] == node);
        let of_node = |j: usize| range_nodes[j] == node;
        if local.clone().next().is_some() {
            deal(ranges, of_node, local, out)?;
        } else {
            deal(ranges, of_node, 0..out.len(), out)?;
        }
    }
    Ok(())
}
