//! The memory the memory system's threads share (see the [module docs](super)): the pagers'
//! allocators behind their locks, the donor ledger, counters, the partitions, and who mapped
//! which frame at which page.
//!
//! The loader maps the area at [`SHARED_VA`](super::SHARED_VA) and builds it in place, field by
//! field (a lock at a time: the loader's stack is small), before any other thread of the
//! system exists; the threads it creates find the area through [`Shared::get`]. This file and [`frames`] hold the only `unsafe` code of
//! the memory system: turning mapped memory into Rust objects.

use core::mem::size_of;
use core::ptr::addr_of_mut;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use kernel_locks::{
    cna_node_pool, numa_map, qspin_node_pool, BrLock, CachePadded, ClhLock, CnaLock, McsLock,
    Mutex, QSpinLock, RtmLock, TicketLock,
};
use pager::balance::{Ledger, Thresholds};
use pager::{LockedLedger, Pager, PagerLock};

use super::{MAX_CORES, PAGE, SHARED_VA, WINDOW_PAGES};
use crate::image::memory::MAX_NODES;

/// A pager's allocator: 256 bookkeeping nodes, buddy blocks up to 2^12 pages.
pub type PagerState = Pager<256, 12>;
/// Loans the ledger can hold.
pub const LOANS: usize = 64;
/// Lock ids: one per pager (its core), and the loader's.
pub const IDS: usize = MAX_CORES + 1;
/// The loader's lock id (it checks the state after the workload, on core 0 beside pager 0).
pub const LOADER_ID: usize = MAX_CORES;

/// The balancing thresholds, in pages: ask below 16 free, give down to 256, in chunks of 256.
pub const THRESHOLDS: Thresholds = Thresholds {
    low: 16,
    high: 256,
    chunk: 256,
};

/// Bytes reserved for [`Shared`] at [`SHARED_VA`].
const SHARED_BYTES: usize = 64 * 1024;
/// Where the frame table starts (see [`frames`]).
const FRAMES_VA: usize = SHARED_VA + SHARED_BYTES;
/// Entries in the frame table: one per page of every window.
const FRAME_ENTRIES: usize = MAX_CORES * WINDOW_PAGES;
/// Where the pagers' allocators start, one page-aligned slot each.
const PAGERS_VA: usize = FRAMES_VA + FRAME_ENTRIES * size_of::<u32>();
/// Bytes per allocator slot.
const PAGER_SLOT: usize = size_of::<PagerState>().div_ceil(PAGE) * PAGE;

/// Pages the loader maps at [`SHARED_VA`] for all of this.
pub const AREA_PAGES: usize = (PAGERS_VA - SHARED_VA + MAX_CORES * PAGER_SLOT) / PAGE;

// The lock kinds of `lock=`, in the order of `LOCKS` (`Spec::lock`): the pagers' locks are
// the kernel's algorithms ([`PagerLock`] builds them at run time).
/// `lock=clh`.
pub type Clh = ClhLock<IDS>;
/// `lock=ticket`.
pub type Ticket = TicketLock;
/// `lock=fine`: the big-reader lock's exclusive side (the pagers have no read-mostly state).
pub type Br = BrLock<IDS>;
/// `lock=rtm`: elision over a CLH lock (the CLH lock itself where RTM is absent).
pub type Rtm = RtmLock<ClhLock<IDS>, IDS>;
/// `lock=mcs`.
pub type Mcs = McsLock<IDS>;
/// `lock=qspin`: its per-id queue nodes in [`PagerQNodes`].
pub type Qspin = QSpinLock<PagerQNodes>;
/// `lock=cna`: its per-id queue nodes in [`PagerCnaNodes`], each id's memory node in
/// [`PagerNuma`].
pub type Cna = CnaLock<PagerCnaNodes, PagerNuma>;

// The queue nodes of the pagers' queued spinlocks and CNA locks, one per lock id, shared by
// every lock of the kind: statics of this program, so one set for all the pagers, which run in
// the loader's address space (a worker's copy of the program never takes these locks).
qspin_node_pool!(pub PagerQNodes, IDS);
cna_node_pool!(pub PagerCnaNodes, IDS);
// Each lock id's memory node for the CNA locks: the loader fills it from its node plan
// ([`fill_numa`]) before it creates the pagers.
numa_map!(pub PagerNuma, IDS);

/// Puts each pager's lock id on the memory node of the core it runs on, and the loader's id on
/// core 0's, for the pagers' CNA locks ([`PagerNuma`]). The stores are `Relaxed`: the pagers
/// read the table only after the loader's `CreateThread`/`Resume` system calls, which order
/// them (the kernel's lock release and acquire), and the lock reads the map only as a hint.
pub fn fill_numa(pagers: usize, node_of_pager: impl Fn(usize) -> usize, loader_node: usize) {
    let table = PagerNuma::table();
    for p in 0..pagers.min(MAX_CORES) {
        table.set(p, node_of_pager(p) as u32);
    }
    table.set(LOADER_ID, loader_node as u32);
}

/// Calls `$m::$f::<L>(args)` with `L` the pagers' lock for lock index `$lock`
/// ([`Spec::lock`](crate::image::memory::Spec::lock)).
macro_rules! dispatch {
    ($lock:expr, $m:ident :: $f:ident ( $($a:expr),* )) => {
        match $lock {
            0 => $m::$f::<$crate::memory::shared::Clh>($($a),*),
            1 => $m::$f::<$crate::memory::shared::Ticket>($($a),*),
            2 => $m::$f::<$crate::memory::shared::Br>($($a),*),
            3 => $m::$f::<$crate::memory::shared::Rtm>($($a),*),
            5 => $m::$f::<$crate::memory::shared::Mcs>($($a),*),
            6 => $m::$f::<$crate::memory::shared::Qspin>($($a),*),
            7 => $m::$f::<$crate::memory::shared::Cna>($($a),*),
            // 4, `none` (`Spec::from_word` refuses any index beyond `LOCKS`).
            _ => $m::$f::<kernel_locks::NoLock>($($a),*),
        }
    };
}
pub(crate) use dispatch;

/// One pager's counters, and (the last two) one worker's: index `i` is pager `i` and worker
/// `i` (atomics, read by the loader and the workers).
#[derive(Debug, Default)]
pub struct Counters {
    /// Faults of a worker on the pager's own core.
    pub faults_same: AtomicUsize,
    /// Faults of a worker on another core (cross-core IPC).
    pub faults_cross: AtomicUsize,
    /// Pages freed.
    pub frees: AtomicUsize,
    /// Requests answered with an error, and faults it could not serve.
    pub errors: AtomicUsize,
    /// Pages borrowed from a pager on the same memory node.
    pub borrowed_same_node: AtomicUsize,
    /// Pages borrowed from a pager on another node.
    pub borrowed_other_node: AtomicUsize,
    /// Pages returned to their lender.
    pub returned: AtomicUsize,
    /// Pages borrowed and not returned yet (the ledger's count, readable without its lock).
    pub holding: AtomicUsize,
    /// As a worker's counters: its faults served, by any pager.
    pub served: AtomicUsize,
    /// As a worker's counters: its faults served by a pager on another core.
    pub served_cross: AtomicUsize,
}

/// One partition: frames `[base, base + pages)` of the pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Part {
    /// First frame (physical address / 4096).
    pub base: usize,
    /// Frames.
    pub pages: usize,
}

/// The memory nodes the pagers work with: how many, and each core's (from the firmware or
/// `nodes=`, see the [loader](super::loader)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeMap {
    /// Nodes (1 = no NUMA).
    pub nodes: usize,
    /// The node of each core.
    pub core: [usize; MAX_CORES],
}

impl NodeMap {
    /// The node of core `c` (0 for a core out of range).
    pub fn node_of(&self, c: usize) -> usize {
        self.core.get(c).copied().unwrap_or(0)
    }
}

/// The shared state (see the module docs).
pub struct Shared<L> {
    /// Per pager: its allocator once it started.
    pub pagers: [Mutex<L, Option<&'static mut PagerState>>; MAX_CORES],
    /// The donor ledger.
    pub ledger: LockedLedger<L, LOANS>,
    /// Per pager: counters.
    pub counters: [CachePadded<Counters>; MAX_CORES],
    /// The partitions.
    pub parts: [Part; MAX_CORES],
    /// The pool: one part per region the pagers map from (pager slot `POOL + k` holds part
    /// `k`'s region; unused parts have no pages), one per memory node it was carved from.
    pub pools: [Part; MAX_NODES],
    /// The memory nodes.
    pub numa: NodeMap,
    /// Bit `i`: pager `i`'s allocator was made ([`Shared::make_pager`]).
    pub made: AtomicUsize,
}

impl<L: PagerLock> Shared<L> {
    /// Builds the state in the mapped area with the partitions `parts`, the pool's parts
    /// `pools` and the memory nodes `numa`.
    ///
    /// # Safety
    /// [`AREA_PAGES`] pages from [`SHARED_VA`] on must be mapped writable in this address
    /// space, used for nothing else, and no other thread may use the area yet (call once,
    /// before creating the pagers and workers). With `L` = `NoLock` the system runs on one
    /// core ([`PagerLock::make`]'s contract).
    pub unsafe fn init(
        parts: [Part; MAX_CORES],
        pools: [Part; MAX_NODES],
        numa: NodeMap,
    ) -> &'static Self {
        const { assert!(size_of::<Self>() <= SHARED_BYTES) };
        const { assert!(core::mem::align_of::<Self>() <= PAGE) };
        let p = SHARED_VA as *mut Self;
        // SAFETY: by the contract the area is mapped, writable, page-aligned (align checked
        // above) and ours alone; each field is written once through a raw pointer before any
        // reference to the whole exists. The locks: the loader refuses `lock=none` on more
        // than one core (see `loader::run`), so under `NoLock` one pager and its worker share
        // one core, and no two critical sections overlap.
        unsafe {
            let pagers =
                addr_of_mut!((*p).pagers) as *mut Mutex<L, Option<&'static mut PagerState>>;
            let counters = addr_of_mut!((*p).counters) as *mut CachePadded<Counters>;
            for i in 0..MAX_CORES {
                pagers.add(i).write(Mutex::new(L::make(), None));
                counters.add(i).write(CachePadded::new(Counters::default()));
            }
            addr_of_mut!((*p).ledger).write(Mutex::new(L::make(), Ledger::new()));
            addr_of_mut!((*p).parts).write(parts);
            addr_of_mut!((*p).pools).write(pools);
            addr_of_mut!((*p).numa).write(numa);
            addr_of_mut!((*p).made).write(AtomicUsize::new(0));
            // The frame table: all zero (nothing mapped).
            core::ptr::write_bytes(FRAMES_VA as *mut u8, 0, FRAME_ENTRIES * size_of::<u32>());
            &*p
        }
    }

    /// The state the loader built (only threads the loader created after `init` call this:
    /// pagers in the loader's space, workers in theirs, where it is mapped read-only).
    pub fn get() -> &'static Self {
        // SAFETY: the loader built the state (`init`) before it created the calling thread
        // (the kernel's thread start orders the two); the area is never moved or unmapped while
        // the system runs, and only shared references to it exist (a worker only reads its
        // atomics, through its read-only mapping).
        unsafe { &*(SHARED_VA as *const Self) }
    }

    /// Builds pager `i`'s allocator (`make`) in its slot and hands it out; `None` if that pager
    /// was made already. The caller puts it into [`Shared::pagers`]`[i]`. The value is made
    /// where it is written, not passed in: each move of it would be another 10 KiB of the
    /// pager's stack.
    pub fn make_pager(
        &self,
        i: usize,
        make: impl FnOnce() -> PagerState,
    ) -> Option<&'static mut PagerState> {
        let bit = 1usize.checked_shl(i as u32).filter(|_| i < MAX_CORES)?;
        if self.made.fetch_or(bit, Ordering::AcqRel) & bit != 0 {
            return None;
        }
        let p = (PAGERS_VA + i * PAGER_SLOT) as *mut PagerState;
        // SAFETY: slot `i` of the mapped area (contract of `init`; `PAGER_SLOT` is a whole
        // number of pages, so the slot is aligned) is handed out once (the bit above), so no
        // other reference to it exists, now or later.
        unsafe {
            p.write(make());
            Some(&mut *p)
        }
    }
}

/// The frame table: entry `w * WINDOW_PAGES + i` is the frame mapped at page `i` of worker
/// `w`'s window, plus one (0: nothing mapped). Only the pager serving worker `w` writes its
/// entries.
pub fn frames() -> &'static [AtomicU32] {
    // SAFETY: `Shared::init` zeroed the table inside the mapped area before the setup was
    // published (callers run after that); `AtomicU32` has the size and alignment of `u32`,
    // any bit pattern is valid, and the table is only ever accessed through this slice.
    unsafe { core::slice::from_raw_parts(FRAMES_VA as *const AtomicU32, FRAME_ENTRIES) }
}
