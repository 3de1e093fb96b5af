//! The machine's memory nodes for the memory system (`mode=bench bench=memory`).
//!
//! An image's HAL reads what the firmware says about memory nodes (x86: the ACPI SRAT, see
//! `hal_x86::acpi::Srat`) and hands it over in the firmware's own terms, as a [`Firmware`]:
//! the proximity domain of each kernel core and the memory ranges of each domain. [`layout`]
//! turns that, together with the free RAM the root task is about to receive, into what the
//! loader takes ([`Topology`](servers::image::memory::Topology) in its argument word): nodes
//! numbered densely (0, 1, ... in the order of the domains), the node of each core, and the
//! free RAM cut at node boundaries, each region with its node. The loader then carves each node's share of the pool from its own
//! node's memory, and deals it among that node's cores.
//!
//! A description the image cannot use is reported and dropped (the loader then falls back to
//! `nodes=`), never a boot failure: a kernel core the firmware does not place, free RAM no
//! range covers (Linux drops an SRAT for the same reason), more than
//! [`MAX_NODES`] nodes, a core whose node has no free RAM, or more regions than the root task
//! has slots for.

use core::fmt;

use kernel::config::{MAX_CPUS, PAGE_SIZE};
use servers::image::memory::{Nodes, NumaSource, MAX_NODES, MAX_TOPOLOGY_CORES, TOPOLOGY_REGIONS};

/// Most memory ranges a [`Firmware`] description holds.
pub const MAX_FIRMWARE_RANGES: usize = 16;
/// Most pieces the free RAM is cut into before they are checked against the root's slots.
const MAX_PIECES: usize = 2 * MAX_FIRMWARE_RANGES;

/// The memory nodes as the firmware describes them: proximity domains, whatever their numbers.
#[derive(Clone, Copy, Debug)]
pub struct Firmware {
    /// Where the description comes from.
    pub source: NumaSource,
    /// The domain of each kernel core, `None` where the firmware does not list the core.
    pub core_domain: [Option<u32>; MAX_CPUS],
    /// Memory ranges `(start, end, domain)`, byte addresses, `start < end`.
    pub ranges: [(u64, u64, u32); MAX_FIRMWARE_RANGES],
    /// How many entries of `ranges` are valid.
    pub range_count: usize,
}

impl Firmware {
    /// A description from `source` with nothing in it yet.
    pub const fn new(source: NumaSource) -> Self {
        Firmware {
            source,
            core_domain: [None; MAX_CPUS],
            ranges: [(0, 0, 0); MAX_FIRMWARE_RANGES],
            range_count: 0,
        }
    }

    /// Adds the range `[start, end)` of `domain`; `false` (nothing added) if it is empty or
    /// the description is full.
    pub fn push_range(&mut self, start: u64, end: u64, domain: u32) -> bool {
        if start >= end || self.range_count == MAX_FIRMWARE_RANGES {
            return false;
        }
        self.ranges[self.range_count] = (start, end, domain);
        self.range_count += 1;
        true
    }

    /// The valid ranges.
    pub fn ranges(&self) -> &[(u64, u64, u32)] {
        &self.ranges[..self.range_count]
    }

    /// The domain of the byte at `phys` and where its range ends, if a range holds it (the
    /// first in table order).
    fn at(&self, phys: u64) -> Option<(u32, u64)> {
        self.ranges()
            .iter()
            .find(|r| (r.0..r.1).contains(&phys))
            .map(|r| (r.2, r.1))
    }

    /// The first range start above `phys`, if any (where another domain may begin).
    fn next_start(&self, phys: u64) -> Option<u64> {
        self.ranges()
            .iter()
            .map(|r| r.0)
            .filter(|&s| s > phys)
            .min()
    }
}

/// Why a [`Firmware`] description is not used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unusable {
    /// The firmware does not place this kernel core.
    CoreWithoutDomain(usize),
    /// No range covers this free RAM (first byte of it).
    RamWithoutDomain(u64),
    /// The cores and the free RAM lie in this many domains, more than [`MAX_NODES`].
    TooManyNodes(usize),
    /// This domain has kernel cores but no free RAM.
    NodeWithoutRam(u32),
    /// Cut at node boundaries, the free RAM makes this many regions, more than the root task's
    /// RAM slots.
    TooManyRegions(usize),
}

impl fmt::Display for Unusable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Unusable::CoreWithoutDomain(c) => write!(f, "it does not place core {c}"),
            Unusable::RamWithoutDomain(a) => write!(f, "no range of it covers free RAM at {a:#x}"),
            Unusable::TooManyNodes(n) => write!(f, "{n} nodes, more than {MAX_NODES}"),
            Unusable::NodeWithoutRam(d) => {
                write!(f, "proximity domain {d} has cores but no free RAM")
            }
            Unusable::TooManyRegions(n) => write!(
                f,
                "cut at node boundaries the free RAM makes {n} regions, more than the root's \
                 {TOPOLOGY_REGIONS} slots"
            ),
        }
    }
}

/// What the loader is given: the free RAM in regions that each lie in one node, and the nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Free RAM `(start, end)`, page-aligned, in address order: the root's RAM regions.
    pub regions: [(u64, u64); TOPOLOGY_REGIONS],
    /// How many entries of `regions` are valid.
    pub region_count: usize,
    /// The nodes of the cores and of the regions.
    pub nodes: Nodes,
    /// The firmware's domain of each node.
    pub domains: [u32; MAX_NODES],
}

/// Turns the firmware's description into the loader's [`Layout`] for the kernel cores
/// `0..cores` and the free RAM `free` (`(start, end)`, page-aligned, as
/// [`Arch::take_free_ram`](crate::Arch::take_free_ram) gives it): each free range is cut where
/// a firmware range ends or another begins (at a page boundary), adjacent pieces of one
/// domain are joined again, and the domains of the cores and the pieces are numbered 0, 1, ...
/// in ascending order.
pub fn layout(fw: &Firmware, cores: usize, free: &[(u64, u64)]) -> Result<Layout, Unusable> {
    let cores = cores.min(MAX_CPUS).min(MAX_TOPOLOGY_CORES);
    let mut core_domain = [0u32; MAX_CPUS];
    for (c, d) in core_domain.iter_mut().enumerate().take(cores) {
        *d = fw.core_domain[c].ok_or(Unusable::CoreWithoutDomain(c))?;
    }

    // The free RAM cut at domain boundaries: (start, end, domain).
    let mut pieces = [(0u64, 0u64, 0u32); MAX_PIECES];
    let mut n: usize = 0;
    let page = PAGE_SIZE as u64;
    for &(start, end) in free {
        let mut p = start;
        while p < end {
            // A page belongs to the domain of its last byte (so one that straddles a boundary
            // goes to the domain it ends in); the piece runs to the first page that ends
            // outside that range or in another range.
            let last = p.saturating_add(page).min(end) - 1;
            let (domain, range_end) = fw.at(last).ok_or(Unusable::RamWithoutDomain(p))?;
            let bound = fw.next_start(last).map_or(range_end, |s| s.min(range_end));
            // `bound > last`, so a whole page fits below it unless the free range ends first.
            let cut = if bound >= end {
                end
            } else {
                bound & !(page - 1)
            };
            match n.checked_sub(1).map(|i| &mut pieces[i]) {
                Some(prev) if prev.1 == p && prev.2 == domain => prev.1 = cut,
                _ if n == MAX_PIECES => return Err(Unusable::TooManyRegions(n + 1)),
                _ => {
                    pieces[n] = (p, cut, domain);
                    n += 1;
                }
            }
            p = cut;
        }
    }
    let pieces = &pieces[..n];

    // Dense node numbers: the distinct domains of the cores and the pieces, ascending.
    let mut domains = [0u32; MAX_CPUS + MAX_PIECES];
    let mut count = 0;
    for d in core_domain[..cores]
        .iter()
        .copied()
        .chain(pieces.iter().map(|p| p.2))
    {
        if !domains[..count].contains(&d) {
            domains[count] = d;
            count += 1;
        }
    }
    let domains = &mut domains[..count];
    domains.sort_unstable();
    if count > MAX_NODES {
        return Err(Unusable::TooManyNodes(count));
    }
    if let Some(&d) = core_domain[..cores]
        .iter()
        .find(|&&d| !pieces.iter().any(|p| p.2 == d))
    {
        return Err(Unusable::NodeWithoutRam(d));
    }
    if n > TOPOLOGY_REGIONS {
        return Err(Unusable::TooManyRegions(n));
    }
    let node = |d: u32| domains.iter().position(|&e| e == d).unwrap_or(0) as u8;
    let mut layout = Layout {
        regions: [(0, 0); TOPOLOGY_REGIONS],
        region_count: n,
        nodes: Nodes {
            source: fw.source,
            count,
            core: [0; MAX_TOPOLOGY_CORES],
            region: [0; TOPOLOGY_REGIONS],
        },
        domains: [0; MAX_NODES],
    };
    layout.domains[..count].copy_from_slice(domains);
    for (c, &d) in core_domain[..cores].iter().enumerate() {
        layout.nodes.core[c] = node(d);
    }
    for (i, p) in pieces.iter().enumerate() {
        layout.regions[i] = (p.0, p.1);
        layout.nodes.region[i] = node(p.2);
    }
    Ok(layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// QEMU's `-M pc` with two nodes of 128 MiB, cores 0-1 and 2-3 (the SRAT's ranges).
    fn two_nodes() -> Firmware {
        let mut fw = Firmware::new(NumaSource::Srat);
        fw.core_domain[..4].copy_from_slice(&[Some(0), Some(0), Some(1), Some(1)]);
        assert!(fw.push_range(0, 0xA_0000, 0));
        assert!(fw.push_range(MIB, 128 * MIB, 0));
        assert!(fw.push_range(128 * MIB, 256 * MIB, 1));
        fw
    }

    #[test]
    fn free_ram_is_cut_at_the_node_boundary() {
        let free = [(0x80_0000, 0xFFE_0000)];
        let l = layout(&two_nodes(), 4, &free).unwrap();
        assert_eq!(
            &l.regions[..l.region_count],
            [(0x80_0000, 128 * MIB), (128 * MIB, 0xFFE_0000)]
        );
        assert_eq!(l.nodes.count, 2);
        assert_eq!(l.nodes.core[..4], [0, 0, 1, 1]);
        assert_eq!(l.nodes.region[..2], [0, 1]);
        assert_eq!(l.domains[..2], [0, 1]);
    }

    #[test]
    fn domains_are_numbered_densely_in_order() {
        let mut fw = Firmware::new(NumaSource::Srat);
        fw.core_domain[..2].copy_from_slice(&[Some(7), Some(3)]);
        fw.push_range(0, 64 * MIB, 7);
        fw.push_range(64 * MIB, 96 * MIB, 7);
        fw.push_range(96 * MIB, 128 * MIB, 3);
        let l = layout(&fw, 2, &[(MIB, 128 * MIB)]).unwrap();
        // The two ranges of domain 7 make one region.
        assert_eq!(
            &l.regions[..l.region_count],
            [(MIB, 96 * MIB), (96 * MIB, 128 * MIB)]
        );
        assert_eq!(l.domains[..2], [3, 7]);
        assert_eq!(l.nodes.core[..2], [1, 0]);
        assert_eq!(l.nodes.region[..2], [1, 0]);
        // Only the cores the kernel uses count: core 1's domain is not needed with one core.
        let l = layout(&fw, 1, &[(MIB, 64 * MIB)]).unwrap();
        assert_eq!((l.nodes.count, l.region_count), (1, 1));
    }

    #[test]
    fn unaligned_boundaries_give_the_page_to_the_next_node() {
        let mut fw = Firmware::new(NumaSource::Srat);
        fw.core_domain[0] = Some(0);
        fw.core_domain[1] = Some(1);
        fw.push_range(0, 0x10_0800, 0);
        fw.push_range(0x10_0800, 0x20_0000, 1);
        let l = layout(&fw, 2, &[(0x8_0000, 0x20_0000)]).unwrap();
        assert_eq!(
            &l.regions[..l.region_count],
            [(0x8_0000, 0x10_0000), (0x10_0000, 0x20_0000)]
        );
        assert_eq!(l.nodes.region[..2], [0, 1]);
    }

    #[test]
    fn unusable_descriptions_say_why() {
        let free = [(0x80_0000, 0xFFE_0000)];
        let mut fw = two_nodes();
        fw.core_domain[3] = None;
        assert_eq!(layout(&fw, 4, &free), Err(Unusable::CoreWithoutDomain(3)));
        // With three cores, core 3 does not matter.
        assert!(layout(&fw, 3, &free).is_ok());

        let fw = two_nodes();
        assert_eq!(
            layout(&fw, 4, &[(0x80_0000, 0x1000_1000)]),
            Err(Unusable::RamWithoutDomain(256 * MIB))
        );
        // Node 1's cores but all free RAM in node 0.
        assert_eq!(
            layout(&fw, 4, &[(MIB, 64 * MIB)]),
            Err(Unusable::NodeWithoutRam(1))
        );

        let mut fw = Firmware::new(NumaSource::Srat);
        for d in 0..5u32 {
            fw.push_range(u64::from(d) * 64 * MIB, u64::from(d + 1) * 64 * MIB, d);
        }
        fw.core_domain[0] = Some(0);
        assert_eq!(
            layout(&fw, 1, &[(0, 320 * MIB)]),
            Err(Unusable::TooManyNodes(5))
        );
        assert!(layout(&fw, 1, &[(0, 256 * MIB)]).is_ok());

        // Four nodes, node 1's free RAM in two ranges: five regions.
        let mut fw = Firmware::new(NumaSource::Srat);
        for d in 0..4u32 {
            fw.push_range(u64::from(d) * 64 * MIB, u64::from(d + 1) * 64 * MIB, d);
        }
        fw.core_domain[0] = Some(0);
        let free: [(u64, u64); 2] = [(MIB, 100 * MIB), (110 * MIB, 256 * MIB)];
        assert_eq!(layout(&fw, 1, &free), Err(Unusable::TooManyRegions(5)));
    }

    #[test]
    fn full_descriptions_refuse_more_ranges() {
        let mut fw = Firmware::new(NumaSource::Srat);
        assert!(!fw.push_range(5, 5, 0));
        for i in 0..MAX_FIRMWARE_RANGES as u64 {
            assert!(fw.push_range(i * MIB, (i + 1) * MIB, 0));
        }
        assert!(!fw.push_range(100 * MIB, 101 * MIB, 0));
        assert_eq!(fw.ranges().len(), MAX_FIRMWARE_RANGES);
    }
}
