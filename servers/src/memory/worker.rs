//! A workload thread of the memory system: the seed paper's benchmark on its core, then the
//! checks (see the [module docs](super)).

use core::fmt::Write as _;
use core::sync::atomic::Ordering::Relaxed;

use pager::protocol::{label, PagerError, Reply, Request, Stats};
use pager::Algorithm;

use super::shared::Shared;
use super::{window, Setup, PAGE};
use crate::debug::{self, test};
use crate::image::bench::{record, BATCH, MAX_RUNS};
use crate::image::info;
use crate::sys::{self, slot as s};
use pager::PagerLock;

/// Worker slots from here: pager `p`'s endpoint (WRITE, badge `w + 1`), for every pager.
pub const EP_SLOT: usize = 1;
/// Worker slot: the loader's notification (WRITE, badge `1 << w`), signalled when done.
pub const DONE: usize = 10;

/// Runs worker `w`: the timed tasks, then the checks, then tells the loader.
pub fn run<L: PagerLock>(setup: Setup, w: usize) -> ! {
    let sh = Shared::<L>::get();
    let me = Worker {
        w,
        setup,
        ep: s(EP_SLOT + setup.pager_of(w)),
        base: window(w),
    };
    let runs = debug::info(info::RUNS).clamp(1, MAX_RUNS);
    let pages = setup.spec.pages;

    // The benchmark: per task, touch `pages` fresh pages (a fault each), then free them one by
    // one (an IPC each); each sample is one task.
    let mut bad = 0;
    for t in 0..runs {
        let t0 = sys::cycles();
        for i in 0..pages {
            bad += usize::from(!me.touch(i, t));
        }
        let t1 = sys::cycles();
        for i in 0..pages {
            bad += usize::from(me.free(i, 1) != Ok(()));
        }
        let t2 = sys::cycles();
        debug::bench_report(record::MEM_ALLOC, t, t1.wrapping_sub(t0));
        debug::bench_report(record::MEM_FREE, t, t2.wrapping_sub(t1));
    }
    test(
        &name("memory:workload_cpu", w),
        bad == 0,
        format_args!("{runs} tasks of {pages} pages: {bad} failed touches or frees"),
    );

    // Touching N fresh pages gives N faults, served by the pager of this core (per-core mode)
    // or by the global one on core 0; a freed page faults again.
    let counters = &sh.counters[w];
    let remote = setup.pager_of(w) != w;
    // The second round touches the pages the first one freed.
    for check in [
        "memory:fault_per_fresh_page_cpu",
        "memory:refault_after_free_cpu",
    ] {
        let (s0, c0) = (
            counters.served.load(Relaxed),
            counters.served_cross.load(Relaxed),
        );
        let touched = (0..pages).filter(|&i| me.touch(i, 7)).count();
        let (s1, c1) = (
            counters.served.load(Relaxed),
            counters.served_cross.load(Relaxed),
        );
        let freed = (0..pages).filter(|&i| me.free(i, 1) == Ok(())).count();
        let want_cross = if remote { pages } else { 0 };
        test(
            &name(check, w),
            touched == pages && freed == pages && s1 - s0 == pages && c1 - c0 == want_cross,
            format_args!(
                "{touched} pages touched, {} faults served, {} of them across cores (want \
                 {want_cross}), {freed} freed",
                s1 - s0,
                c1 - c0
            ),
        );
    }

    if w == 0 {
        me.request_checks();
        if !setup.spec.global && setup.cores > 1 {
            me.borrow_check();
            me.ipc_cost(runs);
        }
    }
    // Tell the loader (a failure here shows as the loader waiting forever: reported by xtask).
    let _ = sys::signal(s(DONE));
    sys::park()
}

/// `prefix` followed by the core number.
fn name(prefix: &str, w: usize) -> heapless::String<64> {
    let mut n = heapless::String::new();
    let _ = write!(n, "{prefix}{w}");
    n
}

struct Worker {
    w: usize,
    setup: Setup,
    ep: abi::CapSlot,
    base: usize,
}

impl Worker {
    /// Writes `value` into the first word of page `i` of the window and reads it back.
    fn touch(&self, i: usize, value: usize) -> bool {
        let p = (self.base + i * PAGE) as *mut usize;
        // SAFETY: page `i` of this worker's own window: nothing else of this program uses it;
        // if it is not mapped the access faults, the pager maps a fresh frame there and the
        // kernel restarts the instruction.
        unsafe {
            p.write_volatile(value ^ i);
            p.read_volatile() == value ^ i
        }
    }

    /// Asks the pager to free `n` pages from page `i` on.
    fn free(&self, i: usize, n: usize) -> Result<(), PagerError> {
        self.ask_to(
            self.ep,
            Request::FreePages {
                addr: self.base + i * PAGE,
                pages: n,
            }
            .encode(),
        )
        .and_then(|r| match r {
            Reply::Ok => Ok(()),
            Reply::Error(e) => Err(e),
            _ => Err(PagerError::Unexpected),
        })
    }

    fn ask(&self, msg: abi::Msg) -> Result<Reply, PagerError> {
        self.ask_to(self.ep, msg)
    }

    fn ask_to(&self, ep: abi::CapSlot, msg: abi::Msg) -> Result<Reply, PagerError> {
        let (_, m) = sys::call(ep, msg).map_err(|_| PagerError::Unexpected)?;
        Reply::decode(&m).map_err(|_| PagerError::Malformed)
    }

    fn stats(&self) -> Option<Stats> {
        match self.ask(Request::Stats.encode()) {
            Ok(Reply::Stats(st)) => Some(st),
            _ => None,
        }
    }

    /// Malformed requests, a free of pages the pager did not map for this worker, and an
    /// algorithm switch while pages are outstanding.
    fn request_checks(&self) {
        let global = self.setup.spec.global;
        let before = self.stats();
        let unknown = self.ask([0x1234, 0, 0, 0]);
        let unaligned = self.ask([label::FREE_PAGES, self.base + 1, 1, 0]);
        let after = self.stats();
        let unchanged = |a: Option<Stats>, b: Option<Stats>| {
            global || a.is_some() && a.map(|s| (s.free, s.owned)) == b.map(|s| (s.free, s.owned))
        };
        let malformed = Ok(Reply::Error(PagerError::Malformed));
        test(
            "memory:malformed_request_refused",
            unknown == malformed && unaligned == malformed && unchanged(before, after),
            format_args!("unknown label: {unknown:?}, unaligned free: {unaligned:?}; before {before:?}, after {after:?}"),
        );

        // A page of its own window that is not mapped, and (with another core) a page of
        // another worker's window.
        let before = self.stats();
        let unmapped = self.free(self.setup.spec.pages + 10, 1);
        let foreign = if self.setup.cores > 1 {
            let req = Request::FreePages {
                addr: window(1),
                pages: 1,
            };
            match self.ask(req.encode()) {
                Ok(Reply::Ok) => Ok(()),
                Ok(Reply::Error(e)) => Err(e),
                _ => Err(PagerError::Unexpected),
            }
        } else {
            Err(PagerError::NotOwned)
        };
        let after = self.stats();
        test(
            "memory:foreign_free_refused",
            unmapped == Err(PagerError::NotOwned)
                && foreign == Err(PagerError::NotOwned)
                && unchanged(before, after),
            format_args!("unmapped page: {unmapped:?}, another worker's page: {foreign:?}; before {before:?}, after {after:?}"),
        );

        // Switch while 32 pages are outstanding; freeing them afterwards loses nothing.
        let n = 32.min(self.setup.spec.pages);
        let start = self.stats();
        let touched = (0..n).filter(|&i| self.touch(i, 3)).count();
        let from = start.map(|s| s.algorithm);
        let to = match from {
            Some(Algorithm::Avl) => Algorithm::Buddy,
            _ => Algorithm::Avl,
        };
        let switched = self.ask(Request::SetAlgorithm(to).encode());
        let during = self.stats();
        let freed = self.free(0, n);
        let end = self.stats();
        let back = from.map(|a| self.ask(Request::SetAlgorithm(a).encode()));
        test(
            "memory:algorithm_switch_with_pages_outstanding",
            touched == n
                && switched == Ok(Reply::Ok)
                && during.map(|s| s.algorithm) == Some(to)
                && freed == Ok(())
                && unchanged(start, end)
                && back == Some(Ok(Reply::Ok)),
            format_args!(
                "{touched} of {n} pages touched, switch to {to:?}: {switched:?}, \
                          free: {freed:?}; before {start:?}, after {end:?}"
            ),
        );
    }

    /// Touches more pages than the partition holds (the pager borrows), frees them, and
    /// checks that the pager owns exactly its partition again.
    fn borrow_check(&self) {
        let part = self.setup.partition_pages();
        let n = part + 256;
        let touched = (0..n).filter(|&i| self.touch(i, 5)).count();
        let peak = self.stats();
        let freed = (0..n).filter(|&i| self.free(i, 1) == Ok(())).count();
        let end = self.stats();
        test(
            "memory:borrow_beyond_partition_then_return",
            touched == n
                && freed == n
                && peak.is_some_and(|s| s.owned > part)
                && end.is_some_and(|s| s.owned == part && s.free == part),
            format_args!(
                "partition {part} pages, {touched} of {n} touched, owned at the peak {:?}, \
                 {freed} freed, owned and free after {:?}",
                peak.map(|s| s.owned),
                end.map(|s| (s.owned, s.free))
            ),
        );
    }

    /// Same-core vs cross-core IPC: `runs` batches of [`BATCH`] null requests (statistics) to
    /// this core's pager and to core 1's.
    fn ipc_cost(&self, runs: usize) {
        for (rec, pager) in [(record::MEM_IPC_SAME, self.w), (record::MEM_IPC_CROSS, 1)] {
            let ep = s(EP_SLOT + pager);
            let msg = Request::Stats.encode();
            for _ in 0..BATCH {
                let _ = sys::call(ep, msg);
            }
            for t in 0..runs {
                let t0 = sys::cycles();
                for _ in 0..BATCH {
                    let _ = sys::call(ep, msg);
                }
                debug::bench_report(rec, t, sys::cycles().wrapping_sub(t0));
            }
        }
    }
}
