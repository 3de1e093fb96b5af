//! The memory system of `mode=bench bench=memory` (after the per-core-pager seed paper): a
//! loader, user-level pagers that own physical memory through capabilities, and the paper's
//! workload, with the checks that show the design works.
//!
//! # The pieces
//! * [`loader`]: the root task. It splits the RAM it received at boot into its own working
//!   memory and a pool, partitions the pool (evenly, or by memory node: the firmware's, x86's
//!   ACPI SRAT, where it describes several, else `nodes=`; see the loader's docs), and
//!   creates at run time, with `CreateThread` / `WriteRegisters` / `Mint` / `BindPager`, one
//!   pager per core pinned to it (or one global pager on core 0, `pager=global`, like Fiasco.OC's
//!   sigma0) and one workload thread per core whose page faults go to its core's pager.
//! * [`pagerd`]: a pager thread: page faults arrive as IPC (the kernel's fault message), it
//!   allocates a frame from its allocator (the `pager` crate: AVL tree or buddy, switchable at run
//!   time) and maps it with `MapPage`; explicit frees unmap with `UnmapPage`.
//! * [`worker`]: per core, `runs` tasks that each touch `pages` fresh pages (one fault each) and
//!   then free them one by one, timed separately (records `memory-alloc`, `memory-free`); then
//!   the checks (`TEST memory:...` lines), and on core 0 the same-core vs cross-core IPC cost.
//!
//! # Shared state and why it is locked the way it is
//! All threads of the memory system run in the loader's address space, so the pagers share
//! memory: the loader maps one area ([`shared::Shared`]) holding each pager's allocator behind
//! its own lock, the donor ledger behind another, and per-pager counters (atomics). A pager
//! takes only its own lock on the fault path (uncontended in per-core mode: that is the paper's
//! point); balancing ("memory low": borrow from a pager above MEM_HIGH, same node first;
//! "memory return": give whole free loans back) takes the ledger lock, then the two pagers'
//! locks in index order, so no two pagers can deadlock. The locks are the kernel's algorithm
//! (`lock=`): CLH, ticket, MCS, the queued spinlock, CNA (each pager on its core's memory node),
//! the big-reader lock's write side, RTM elision over CLH, or none (one core only, where nothing
//! is shared). Each pager passes its own index as the lock's CPU id
//! (one pager per core, so no two threads use one id; the loader uses `MAX_CPUS`), and no
//! critical section makes a system call (an RTM transaction would abort on it).
//!
//! Balancing is a call on this shared state rather than an IPC between pagers: a pager that
//! blocked in a Call to another pager while that one called it back would deadlock both, and
//! avoiding that would need a second thread per pager. The protocol's `MemoryLow` /
//! `MemoryReturn` messages describe the same transfers.
//!
//! # Address spaces (both architectures; ARMv7 user space ends at 0x4000_0000)
//! The loader and the pagers share the loader's address space; each worker runs in one of its
//! own (the image loads the user ELF into `cores` spaces for them), like the paper's one
//! process per core. So a worker's unmapped page needs no TLB shoot-down on other cores
//! (nothing else runs in its space), except under the global pager, whose unmaps from core 0
//! reach the worker's core: part of what the global pager costs.
//! [`SHARED_VA`]: the shared area (also mapped read-only into each worker's space, for the
//! counters); [`STACKS_VA`]: 64 KiB stacks with 64 KiB unmapped gaps; [`WINDOWS_VA`]: worker
//! `w` touches pages in its 16 MiB window from `WINDOWS_VA + w * WINDOW_BYTES` on, which only
//! its pager maps (windows differ per worker so that one frame table covers them all).

pub mod loader;
pub mod pagerd;
pub mod shared;
pub mod worker;

use crate::image::memory::Spec;

/// Page size.
pub const PAGE: usize = 4096;
/// The shared area (see [`shared`]).
pub const SHARED_VA: usize = 0x1000_0000;
/// The stacks of the threads the loader creates.
pub const STACKS_VA: usize = 0x1800_0000;
/// Distance between two stacks.
pub const STACK_STRIDE: usize = 0x2_0000;
/// Pages mapped for each stack (the rest of the stride stays unmapped, as a guard).
pub const STACK_PAGES: usize = 16;
/// The workers' windows.
pub const WINDOWS_VA: usize = 0x2000_0000;
/// Pages in one worker's window.
pub const WINDOW_PAGES: usize = 4096;
/// Bytes in one worker's window.
pub const WINDOW_BYTES: usize = WINDOW_PAGES * PAGE;

/// Most cores (pagers, workers).
pub const MAX_CORES: usize = abi::limits::MAX_CPUS;

/// The window of worker `w`.
pub const fn window(w: usize) -> usize {
    WINDOWS_VA + w * WINDOW_BYTES
}

/// The worker whose window holds `addr`, and the page's index in it.
pub fn window_of(addr: usize) -> Option<(usize, usize)> {
    let off = addr.checked_sub(WINDOWS_VA)?;
    let w = off / WINDOW_BYTES;
    (w < MAX_CORES).then_some((w, (off % WINDOW_BYTES) / PAGE))
}

/// What every thread of the memory system knows: the spec and the cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    /// The command line's choices.
    pub spec: Spec,
    /// Cores the kernel runs on (one worker each).
    pub cores: usize,
}

impl Setup {
    /// Pagers: one per core, or the global one.
    pub fn pagers(&self) -> usize {
        if self.spec.global {
            1
        } else {
            self.cores
        }
    }

    /// The pager serving worker `w`.
    pub fn pager_of(&self, w: usize) -> usize {
        if self.spec.global {
            0
        } else {
            w
        }
    }

    /// The memory node of core `c` under `nodes=`: cores are split into `nodes` consecutive
    /// groups. (The firmware's nodes, where the loader uses them, are in
    /// [`shared::Shared::numa`], which the pagers read.)
    pub fn node_of(&self, c: usize) -> usize {
        c * self.spec.nodes / self.cores.max(1)
    }

    /// Pages each pager starts with.
    pub fn partition_pages(&self) -> usize {
        crate::image::memory::PARTITION_PAGES * self.cores / self.pagers()
    }

    /// Pages in the pool the pagers share out.
    pub fn pool_pages(&self) -> usize {
        crate::image::memory::PARTITION_PAGES * self.cores
    }
}

/// The argument of [`entry`]: what a thread the loader creates runs. One word of at most 32
/// bits (ARMv7): bits 0..3 the index, bit 4 pager (else worker), bits 5..7 cores - 1, bits
/// 8..31 the [`Spec`] word. A worker runs in an address space of its own, where the loader's
/// statics are not, so everything it needs travels here.
pub fn entry_arg(setup: Setup, pager: bool, index: usize) -> usize {
    index | usize::from(pager) << 4 | (setup.cores - 1) << 5 | setup.spec.to_word() << 8
}

/// Decodes [`entry_arg`]: the setup, pager or not, and the index.
pub fn decode_entry_arg(arg: usize) -> Option<(Setup, bool, usize)> {
    let spec = Spec::from_word(arg >> 8)?;
    let setup = Setup {
        spec,
        cores: (arg >> 5 & 7) + 1,
    };
    Some((setup, arg & 1 << 4 != 0, arg & 0xF))
}

/// Entry point of the threads the loader creates (`WriteRegisters` sets the program counter
/// here, the stack pointer and `arg`, see [`entry_arg`]).
pub extern "C" fn entry(arg: usize) -> ! {
    let Some((setup, pager, index)) = decode_entry_arg(arg) else {
        crate::uprintln!("memory: thread started with a bad argument {arg:#x}");
        crate::debug::panicked();
        crate::sys::park()
    };
    if pager {
        shared::dispatch!(setup.spec.lock, pagerd::run(setup, index))
    } else {
        shared::dispatch!(setup.spec.lock, worker::run(setup, index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_map_back_to_their_worker() {
        assert_eq!(window_of(window(3) + 5 * PAGE + 7), Some((3, 5)));
        assert_eq!(window_of(WINDOWS_VA - 1), None);
        assert_eq!(window_of(window(MAX_CORES)), None);
        assert!(
            window(MAX_CORES) <= 0x3000_0000,
            "below the ARMv7 root stack"
        );
    }

    #[test]
    fn setup_shares_memory_out() {
        let spec = Spec {
            global: false,
            buddy: false,
            nodes: 2,
            pages: 64,
            lock: 0,
        };
        let s = Setup { spec, cores: 4 };
        assert_eq!((s.pagers(), s.pager_of(3)), (4, 3));
        assert_eq!(
            (0..4)
                .map(|c| s.node_of(c))
                .collect::<heapless::Vec<_, 4>>(),
            [0, 0, 1, 1]
        );
        let g = Setup {
            spec: Spec {
                global: true,
                ..spec
            },
            cores: 4,
        };
        assert_eq!((g.pagers(), g.pager_of(3)), (1, 0));
        assert_eq!(g.partition_pages(), s.pool_pages());
    }

    #[test]
    fn topologies_round_trip_in_30_bits() {
        use crate::image::memory::{Nodes, NumaSource, Topology};
        let plain = Topology {
            cores: 4,
            nodes: None,
        };
        assert_eq!(Topology::from_word(plain.to_word()), Some(plain));
        // A topology with SRAT nodes.
        let srat = |cores, count, core, region| Topology {
            cores,
            nodes: Some(Nodes {
                source: NumaSource::Srat,
                count,
                core,
                region,
            }),
        };
        let t = srat(8, 4, [0, 0, 1, 1, 2, 2, 3, 3], [0, 1, 2, 3]);
        assert!(t.to_word() < 1 << 30);
        assert_eq!(Topology::from_word(t.to_word()), Some(t));
        // A node beyond the count, a node for an absent core, bits above 29: refused.
        let w = srat(2, 2, [0, 1, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0]).to_word();
        assert!(Topology::from_word(w).is_some());
        assert_eq!(Topology::from_word(w | 2 << 22), None);
        assert_eq!(Topology::from_word(w | 1 << 10), None);
        assert_eq!(Topology::from_word(w | 1 << 30), None);
        assert_eq!(Topology::from_word(3 | 1 << 4), None);
    }

    #[test]
    fn entry_arguments_round_trip_in_32_bits() {
        let spec = Spec {
            global: true,
            buddy: true,
            nodes: 4,
            pages: crate::image::memory::MAX_PAGES,
            lock: 4,
        };
        let s = Setup { spec, cores: 8 };
        let arg = entry_arg(s, true, 7);
        assert!(arg <= u32::MAX as usize);
        assert_eq!(decode_entry_arg(arg), Some((s, true, 7)));
        assert_eq!(
            decode_entry_arg(entry_arg(s, false, 0)),
            Some((s, false, 0))
        );
    }
}
