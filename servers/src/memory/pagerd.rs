//! A pager thread of the memory system: serves page faults and requests on its endpoint,
//! borrowing from the other pagers when it runs short (see the [module docs](super)).

use core::sync::atomic::Ordering::Relaxed;

use abi::{PageAttrs, EXCEPTION_LABEL, FAULT_LABEL};
use pager::balance::{donate, return_loans};
use pager::protocol::{PagerError, Reply, Request, Stats};
use pager::{lock_two, PagerLock};
use pager::{Algorithm, AllocError, FrameAllocator, FrameRange};

use super::shared::{frames, Counters, PagerState, Shared, THRESHOLDS};
use super::{window, window_of, Setup, PAGE, WINDOW_PAGES};
use crate::debug;
use crate::image::memory::MAX_NODES;
use crate::sys::{self, slot as s};
use crate::uprintln;

/// Pager slot: its endpoint (READ).
pub const EP: usize = 1;
/// Pager slots from here: worker `w`'s address space (WRITE), for every worker it serves.
pub const ASPACE: usize = 2;
/// Pager slots from here: the pool's regions (READ | WRITE), one per memory node the pool was
/// carved from ([`Shared::pools`]). Every pager holds the whole pool: which frames are whose is
/// the allocators' and the ledger's business (a pager maps frames it borrowed from another
/// partition, and another node, too), and these slots fit any core count.
pub const POOL: usize = 10;
/// Pager slot: the loader's notification (WRITE, badge `1 << index`), signalled once the
/// pager's allocator is in the shared state (so no borrower finds it missing).
pub const READY: usize = POOL + MAX_NODES;

const _: () = assert!(ASPACE + super::MAX_CORES <= POOL && READY < abi::limits::CSPACE_SLOTS);

/// Runs pager `i`: builds its allocator over its partition, then serves forever.
///
/// Stack: a pager's allocator is about 10 KiB by value, and building it (and switching its
/// algorithm, see [`set_algorithm`]) keeps copies of it in the frame that does it. Those frames
/// are functions of their own, never in line: [`start`]'s is gone before [`serve`] runs, and
/// [`serve`]'s own frame stays small, so the deepest stack is one of them plus the serving
/// path, well inside the thread's stack (`STACK_PAGES`). In line, the frames added up: `run`
/// 43 KiB and `serve` 25 KiB or more, past the 64 KiB stack, and which build overflowed
/// depended on the inliner (a pager that faults on its own stack stops, and its workers wait
/// for it forever).
pub fn run<L: PagerLock>(setup: Setup, i: usize) -> ! {
    let sh = Shared::<L>::get();
    if !start(sh, setup, i) {
        debug::panicked();
        sys::park()
    }
    serve(sh, setup, i)
}

/// Builds pager `i`'s allocator over its partition, publishes it and tells the loader:
/// whether it could (it said why if not). Out of line: see [`run`].
#[inline(never)]
fn start<L: PagerLock>(sh: &'static Shared<L>, setup: Setup, i: usize) -> bool {
    let algorithm = if setup.spec.buddy {
        Algorithm::Buddy
    } else {
        Algorithm::Avl
    };
    let part = sh.parts[i];
    let started = sh
        .make_pager(i, || PagerState::new(i, sh.numa.node_of(i), algorithm))
        .and_then(|me| {
            let range = FrameRange::new(part.base, part.pages);
            me.alloc.add_range(range).ok().map(|()| me)
        });
    let Some(me) = started else {
        uprintln!("pager {i}: could not take its partition {part:?}");
        return false;
    };
    *sh.pagers[i].lock(i) = Some(me);
    if let Err(e) = sys::signal(s(READY)) {
        uprintln!("pager {i}: cannot tell the loader it is ready: {e:?}");
    }
    true
}

fn serve<L: PagerLock>(sh: &'static Shared<L>, setup: Setup, i: usize) -> ! {
    let ep = s(EP);
    let mut answer: Option<abi::Msg> = None;
    loop {
        let got = match answer.take() {
            Some(m) => sys::reply_recv(ep, m),
            None => sys::recv(ep),
        };
        let (badge, msg) = match got {
            Ok(x) => x,
            Err(e) => {
                uprintln!("pager {i}: receive failed: {e:?}");
                continue;
            }
        };
        answer = match msg[0] {
            FAULT_LABEL => fault(sh, setup, i, msg[1]),
            EXCEPTION_LABEL => {
                uprintln!("pager {i}: a client raised exception {msg:?}; it stays stopped");
                sh.counters[i].errors.fetch_add(1, Relaxed);
                None
            }
            _ => {
                let reply = request(sh, setup, i, badge, &msg);
                if matches!(reply, Reply::Error(_)) {
                    sh.counters[i].errors.fetch_add(1, Relaxed);
                }
                Some(reply.encode())
            }
        };
    }
}

/// Serves a page fault at `addr`: `Some` (any reply resumes the thread) once the page is
/// mapped, `None` when it cannot be (the thread stays blocked; reported).
fn fault<L: PagerLock>(
    sh: &'static Shared<L>,
    setup: Setup,
    i: usize,
    addr: usize,
) -> Option<abi::Msg> {
    let outcome = window_of(addr)
        .filter(|&(w, _)| w < setup.cores && setup.pager_of(w) == i)
        .ok_or(PagerError::NotOwned)
        .and_then(|(w, page)| {
            let entry = &frames()[w * WINDOW_PAGES + page];
            if entry.load(Relaxed) != 0 {
                return Err(PagerError::Unexpected); // mapped already: not a missing page
            }
            let frame = alloc(sh, setup, i)?;
            let va = window(w) + page * PAGE;
            if let Err(e) = map(sh, w, frame, va) {
                uprintln!("pager {i}: MapPage of frame {frame:#x} at {va:#x} failed: {e:?}");
                free_frames(sh, i, frame, 1);
                return Err(PagerError::Unexpected);
            }
            entry.store(frame as u32 + 1, Relaxed);
            let c = &sh.counters;
            // Pager `i` runs on core `i`, worker `w` on core `w`.
            if w == i {
                c[i].faults_same.fetch_add(1, Relaxed);
            } else {
                c[i].faults_cross.fetch_add(1, Relaxed);
                c[w].served_cross.fetch_add(1, Relaxed);
            }
            c[w].served.fetch_add(1, Relaxed);
            Ok(())
        });
    match outcome {
        Ok(()) => Some([0; 4]),
        Err(e) => {
            uprintln!("pager {i}: cannot serve the fault at {addr:#x}: {e:?}");
            sh.counters[i].errors.fetch_add(1, Relaxed);
            None
        }
    }
}

/// Maps `frame` at `va` in worker `w`'s address space, through the region of the pool's part
/// that holds it.
fn map<L: PagerLock>(sh: &Shared<L>, w: usize, frame: usize, va: usize) -> Result<(), abi::Error> {
    let (k, offset) = sh
        .pools
        .iter()
        .enumerate()
        .find_map(|(k, p)| {
            let o = frame.checked_sub(p.base).filter(|&o| o < p.pages)?;
            Some((k, o))
        })
        .ok_or(abi::Error::OutOfRange)?;
    sys::map_page(s(ASPACE + w), s(POOL + k), offset, va, PageAttrs::WRITE)
}

/// Serves a request of the client with `badge` (worker `badge - 1`).
fn request<L: PagerLock>(
    sh: &'static Shared<L>,
    setup: Setup,
    i: usize,
    badge: usize,
    msg: &abi::Msg,
) -> Reply {
    let req = match Request::decode(msg) {
        Ok(r) => r,
        Err(_) => return Reply::Error(PagerError::Malformed),
    };
    match req {
        Request::FreePages { addr, pages } => match free_pages(sh, setup, i, badge, addr, pages) {
            Ok(()) => Reply::Ok,
            Err(e) => Reply::Error(e),
        },
        Request::Stats => {
            let c = &sh.counters[i];
            let g = sh.pagers[i].lock(i);
            match g.as_deref() {
                Some(me) => Reply::Stats(Stats {
                    free: me.alloc.free_count(),
                    owned: me.alloc.owned_count(),
                    faults: c.faults_same.load(Relaxed) + c.faults_cross.load(Relaxed),
                    algorithm: me.alloc.algorithm(),
                }),
                None => Reply::Error(PagerError::Unexpected),
            }
        }
        Request::SetAlgorithm(a) => set_algorithm(sh, i, a),
        // Frames are the pagers' business, not their clients'; loans are made on the shared
        // state (module docs); the loader initialised this pager before it started.
        Request::PageFault { .. }
        | Request::Free { .. }
        | Request::MemoryLow { .. }
        | Request::MemoryReturn { .. }
        | Request::Init { .. } => Reply::Error(PagerError::Unexpected),
    }
}

/// Switches pager `i`'s allocation algorithm. Out of line: the new allocator is built in this
/// frame (about 10 KiB), which must not stay in [`serve`]'s (see [`run`]).
#[inline(never)]
fn set_algorithm<L: PagerLock>(sh: &Shared<L>, i: usize, a: Algorithm) -> Reply {
    let mut g = sh.pagers[i].lock(i);
    match g.as_deref_mut().map(|me| me.set_algorithm(a)) {
        Some(Ok(())) => Reply::Ok,
        Some(Err(e)) => Reply::Error(e.into()),
        None => Reply::Error(PagerError::Unexpected),
    }
}

/// Unmaps and frees `pages` pages from `addr` on, all of which this pager must have mapped in
/// the calling worker's window; otherwise nothing changes.
fn free_pages<L: PagerLock>(
    sh: &'static Shared<L>,
    setup: Setup,
    i: usize,
    badge: usize,
    addr: usize,
    pages: usize,
) -> Result<(), PagerError> {
    let w = badge.checked_sub(1).ok_or(PagerError::NotOwned)?;
    let (first_w, first) = window_of(addr).ok_or(PagerError::NotOwned)?;
    let table = frames();
    let entries = first_w * WINDOW_PAGES + first..first_w * WINDOW_PAGES + first + pages;
    let mine = first_w == w
        && w < setup.cores
        && setup.pager_of(w) == i
        && first + pages <= WINDOW_PAGES
        && table[entries.clone()].iter().all(|e| e.load(Relaxed) != 0);
    if !mine {
        return Err(PagerError::NotOwned);
    }
    for (k, e) in table[entries].iter().enumerate() {
        let va = addr + k * PAGE;
        if let Err(err) = sys::unmap_page(s(ASPACE + w), va) {
            // The kernel refused (it cannot, for a page this pager mapped): keep the frame
            // allocated rather than hand out a page that may still be mapped.
            uprintln!("pager {i}: UnmapPage at {va:#x} failed: {err:?}");
            return Err(PagerError::Unexpected);
        }
        let frame = e.swap(0, Relaxed) as usize - 1;
        free_frames(sh, i, frame, 1);
    }
    sh.counters[i].frees.fetch_add(pages, Relaxed);
    if sh.counters[i].holding.load(Relaxed) > 0 {
        memory_return(sh, setup, i);
    }
    Ok(())
}

/// Gives frames back to pager `i`'s allocator (they came from it).
fn free_frames<L: PagerLock>(sh: &Shared<L>, i: usize, frame: usize, pages: usize) {
    let mut g = sh.pagers[i].lock(i);
    let freed = g
        .as_deref_mut()
        .map(|me| me.alloc.free_range(FrameRange::new(frame, pages)));
    drop(g);
    if freed != Some(Ok(())) {
        uprintln!("pager {i}: freeing frame {frame:#x} failed: {freed:?}");
        sh.counters[i].errors.fetch_add(1, Relaxed);
    }
}

/// One frame for pager `i`, borrowing when it is out of memory, and asking for more after an
/// allocation that leaves it below MEM_LOW.
fn alloc<L: PagerLock>(sh: &Shared<L>, setup: Setup, i: usize) -> Result<usize, PagerError> {
    let take = || {
        let mut g = sh.pagers[i].lock(i);
        let me = g.as_deref_mut().ok_or(PagerError::Unexpected)?;
        Ok::<_, PagerError>((me.alloc.alloc(), me.alloc.free_count()))
    };
    let frame = match take()? {
        (Ok(f), free) => {
            if free < THRESHOLDS.low {
                memory_low(sh, setup, i); // best effort: this allocation succeeded
            }
            f
        }
        (Err(AllocError::OutOfMemory), _) => {
            memory_low(sh, setup, i);
            take()?.0?
        }
        (Err(e), _) => return Err(e.into()),
    };
    Ok(frame)
}

/// "Memory low" for pager `i`: donors above MEM_HIGH give down to MEM_HIGH, donors on `i`'s
/// node first; if `i` still has nothing free, donors above MEM_LOW give down to MEM_LOW.
/// Locks: the ledger, then the two pagers in index order.
fn memory_low<L: PagerLock>(sh: &Shared<L>, setup: Setup, i: usize) -> usize {
    let want = THRESHOLDS.chunk;
    let mut got = 0;
    let mut ledger = sh.ledger.lock(i);
    let node = sh.numa.node_of(i);
    for bar in [THRESHOLDS.high, THRESHOLDS.low] {
        if bar == THRESHOLDS.low && free_count(sh, i) > 0 {
            break;
        }
        for same_node in [true, false] {
            for q in (0..setup.pagers()).filter(|&q| q != i) {
                if (sh.numa.node_of(q) == node) != same_node {
                    continue;
                }
                while got < want {
                    let (mut a, mut b) = lock_two(&sh.pagers, q, i, i);
                    let (Some(lender), Some(borrower)) = (a.as_deref_mut(), b.as_deref_mut())
                    else {
                        break;
                    };
                    let spare = lender.alloc.free_count().saturating_sub(bar);
                    if spare == 0 {
                        break;
                    }
                    match donate(lender, borrower, &mut ledger, spare.min(want - got)) {
                        Ok(r) => {
                            got += r.count;
                            let c: &Counters = &sh.counters[i];
                            let moved = if same_node {
                                &c.borrowed_same_node
                            } else {
                                &c.borrowed_other_node
                            };
                            moved.fetch_add(r.count, Relaxed);
                            c.holding.fetch_add(r.count, Relaxed);
                        }
                        Err(_) => break,
                    }
                }
            }
        }
    }
    got
}

/// "Memory return" for pager `i`: every loan it holds that is entirely free goes home, as
/// long as it keeps MEM_LOW free pages; then every other borrower does the same until none
/// can (a loan of borrowed memory can go home only after the loan it came from).
fn memory_return<L: PagerLock>(sh: &Shared<L>, setup: Setup, i: usize) {
    let mut ledger = sh.ledger.lock(i);
    let n = setup.pagers();
    let mut first = true;
    loop {
        let mut pass = 0;
        for b in 0..n {
            let borrows = if first {
                b == i
            } else {
                ledger.borrowed_by(b) > 0
            };
            if !borrows {
                continue;
            }
            for l in (0..n).filter(|&l| l != b) {
                let (mut x, mut y) = lock_two(&sh.pagers, b, l, i);
                let (Some(borrower), Some(lender)) = (x.as_deref_mut(), y.as_deref_mut()) else {
                    continue;
                };
                if let Ok(r) = return_loans(borrower, lender, &mut ledger, THRESHOLDS.low) {
                    sh.counters[b].returned.fetch_add(r, Relaxed);
                    sh.counters[b].holding.fetch_sub(r, Relaxed);
                    pass += r;
                }
            }
        }
        if pass == 0 {
            return;
        }
        first = false;
    }
}

fn free_count<L: PagerLock>(sh: &Shared<L>, i: usize) -> usize {
    sh.pagers[i]
        .lock(i)
        .as_deref()
        .map_or(0, |me| me.alloc.free_count())
}
