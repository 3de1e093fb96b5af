//! The loader: the root task of `mode=bench bench=memory` (see the [module docs](super)).

use core::sync::atomic::Ordering::Relaxed;

use abi::{MintTarget, PageAttrs, Rights};
use pager::partition::{split_even, split_numa};
use pager::{FrameAllocator, FrameRange, RangeSet};

use super::shared::{self, frames, PagerLock, Part, Shared, AREA_PAGES, LOADER_ID};
use super::{
    entry_arg, pagerd, worker, Setup, MAX_CORES, PAGE, SHARED_VA, STACKS_VA, STACK_PAGES,
    STACK_STRIDE,
};
use crate::abi::bench::{param, record};
use crate::abi::memory::{Spec, LOCKS};
use crate::abi::slot;
use crate::debug::{self, test};
use crate::sys::{self, slot as s};
use crate::uprintln;

/// Loader slots: pager `p`'s endpoint.
const L_EP: usize = 1;
/// Loader slot: its working memory (the shared area and the stacks).
const L_OWN: usize = 9;
/// Loader slot: the pool the pagers share out.
const L_POOL: usize = 10;
/// Loader slots: worker `w`'s address space (from the image).
const L_SPACE: usize = slot::ROOT_MEMORY_SPACES;
/// Loader slot: the park notification of the threads it creates.
const L_PARK: usize = 19;
/// Loader slot: the notification the workers signal when done.
const L_DONE: usize = 20;
/// Loader slot: the thread being set up.
const L_THREAD: usize = 21;
/// Loader slot: the notification the pagers signal when ready.
const L_READY: usize = 22;

const _: () = assert!(L_EP + MAX_CORES <= L_OWN && L_POOL < L_SPACE);
const _: () = assert!(L_SPACE + MAX_CORES <= L_PARK && L_READY < slot::ROOT_MEM);

/// Priority of the pagers: above their workers, so a worker never delays its pager.
const PAGER_PRIO: usize = 20;
/// Priority of the workers.
const WORKER_PRIO: usize = 10;

/// Runs the loader with the spec word and core count the image passed.
pub fn run(spec: u64, cores: u64) -> ! {
    let cores = cores as usize;
    let Some(spec) = Spec::from_word(spec as usize).filter(|_| (1..=MAX_CORES).contains(&cores))
    else {
        fail(format_args!("bad arguments: spec {spec:#x}, {cores} cores"))
    };
    if LOCKS[spec.lock] == "none" && cores > 1 {
        // The image refuses this command line already; a pager borrowing from another core
        // would share memory between cores with no lock at all.
        fail(format_args!(
            "lock=none shares nothing safely between {cores} cores"
        ))
    }
    shared::dispatch!(spec.lock, self::build(Setup { spec, cores }))
}

fn fail(args: core::fmt::Arguments<'_>) -> ! {
    uprintln!("loader: {args}");
    test("memory:loader_started_the_system", false, args);
    debug::done();
    sys::park()
}

/// Bottom of the stack of created thread `k` (pagers first, then workers), and its top.
fn stack(k: usize) -> (usize, usize) {
    let bottom = STACKS_VA + k * STACK_STRIDE;
    (bottom, bottom + STACK_PAGES * PAGE)
}

/// The initial stack pointer at `top`: x86_64 enters a function with the stack 8 bytes below
/// 16-byte alignment (as after a `call`); ARMv7 with it 8-byte aligned.
fn initial_sp(top: usize) -> usize {
    if cfg!(target_arch = "x86_64") {
        top - 8
    } else {
        top
    }
}

fn build<L: PagerLock>(setup: Setup) -> ! {
    let Spec {
        global,
        buddy,
        nodes,
        pages,
        lock,
    } = setup.spec;
    let cores = setup.cores;
    let npagers = setup.pagers();
    uprintln!(
        "loader: {cores} cores, {} pager{} ({}), {} allocator, {nodes} memory node{}, tasks of \
         {pages} pages, pager locks: {}",
        npagers,
        if npagers > 1 { "s" } else { "" },
        if global {
            "global, on core 0"
        } else {
            "one per core"
        },
        if buddy { "buddy" } else { "AVL-tree" },
        if nodes > 1 { "s" } else { "" },
        LOCKS[lock]
    );

    // The largest RAM region: working memory first, then the pool.
    let ram = (0..slot::ROOT_MEM_SLOTS)
        .map(|i| slot::ROOT_MEM + i)
        .filter_map(|sl| {
            sys::mem_info(s(sl))
                .ok()
                .map(|(base, n, kind)| (sl, base, n, kind))
        })
        .filter(|r| r.3 == 0)
        .max_by_key(|r| r.2);
    let threads = npagers + cores;
    let own = AREA_PAGES + threads * STACK_PAGES;
    let pool = setup.pool_pages();
    let Some((ram, base, ram_pages, _)) = ram.filter(|r| r.2 >= own + pool) else {
        fail(format_args!(
            "needs one RAM region of {} pages ({} MiB); the largest has {:?}",
            own + pool,
            ((own + pool) * PAGE) >> 20,
            ram.map(|r| r.2)
        ))
    };
    uprintln!(
        "loader: {own} pages of working memory and a pool of {pool} pages from the region at \
         {base:#x} ({ram_pages} pages)"
    );
    let map_own = || -> Result<(), abi::Error> {
        sys::mem_split(s(ram), s(L_OWN), 0, own)?;
        sys::mem_split(s(ram), s(L_POOL), own, pool)?;
        let aspace = s(slot::ROOT_ASPACE);
        for i in 0..AREA_PAGES {
            let va = SHARED_VA + i * PAGE;
            sys::map_page(aspace, s(L_OWN), i, va, PageAttrs::WRITE)?;
            // Workers read the counters: read-only in their spaces.
            for w in 0..cores {
                sys::map_page(s(L_SPACE + w), s(L_OWN), i, va, PageAttrs::empty())?;
            }
        }
        for k in 0..threads {
            // Pagers' stacks in the loader's space, each worker's in its own.
            let space = if k < npagers {
                aspace
            } else {
                s(L_SPACE + k - npagers)
            };
            for i in 0..STACK_PAGES {
                let off = AREA_PAGES + k * STACK_PAGES + i;
                sys::map_page(
                    space,
                    s(L_OWN),
                    off,
                    stack(k).0 + i * PAGE,
                    PageAttrs::WRITE,
                )?;
            }
        }
        Ok(())
    };
    if let Err(e) = map_own() {
        fail(format_args!("mapping the working memory: {e:?}"))
    }

    // The partitions: the pool split evenly among the pagers, or by node (the pool cut into
    // `nodes` consecutive ranges, core `c` on node `c * nodes / cores`).
    let first = base / PAGE + own;
    let mut sets: [RangeSet<1>; MAX_CORES] = core::array::from_fn(|_| RangeSet::new());
    let split = if nodes > 1 && !global {
        let chunk = pool / nodes;
        let mut ranges = [FrameRange::new(0, 0); crate::abi::memory::MAX_NODES];
        let mut range_nodes = [0; crate::abi::memory::MAX_NODES];
        for n in 0..nodes {
            let len = if n + 1 == nodes {
                pool - chunk * n
            } else {
                chunk
            };
            ranges[n] = FrameRange::new(first + chunk * n, len);
            range_nodes[n] = n;
        }
        let mut core_nodes = [0; MAX_CORES];
        for (c, node) in core_nodes.iter_mut().enumerate().take(cores) {
            *node = setup.node_of(c);
        }
        split_numa(
            &ranges[..nodes],
            &range_nodes[..nodes],
            &core_nodes[..cores],
            &mut sets[..cores],
        )
    } else {
        split_even(&[FrameRange::new(first, pool)], &mut sets[..npagers])
    };
    if let Err(e) = split {
        fail(format_args!("partitioning the pool: {e:?}"))
    }
    let mut parts = [Part::default(); MAX_CORES];
    for p in 0..npagers {
        let Some(r) = sets[p].ranges().first().copied() else {
            fail(format_args!("partition {p} is empty"))
        };
        parts[p] = Part {
            base: r.start,
            pages: r.count,
        };
    }
    if nodes > 1 {
        // Each partition lies in the memory of its core's node.
        let chunk = pool / nodes;
        let ok = (0..npagers).all(|p| {
            let n = setup.node_of(p);
            let lo = first + chunk * n;
            let hi = if n + 1 == nodes {
                first + pool
            } else {
                lo + chunk
            };
            parts[p].base >= lo && parts[p].base + parts[p].pages <= hi
        }) || global;
        test(
            "memory:partitions_follow_nodes",
            ok,
            format_args!("{nodes} nodes, partitions {:?}", &parts[..npagers]),
        );
    }

    // SAFETY: `map_own` mapped `AREA_PAGES` writable pages at `SHARED_VA`, used for nothing
    // else, and no other thread of this system exists yet.
    let sh = unsafe {
        Shared::<L>::init(
            parts,
            Part {
                base: first,
                pages: pool,
            },
        )
    };

    let control = s(slot::ROOT_CONTROL);
    let objects = || -> Result<(), abi::Error> {
        sys::create_notification(control, s(L_PARK))?;
        sys::create_notification(control, s(L_DONE))?;
        sys::create_notification(control, s(L_READY))?;
        for p in 0..npagers {
            sys::create_endpoint(control, s(L_EP + p))?;
        }
        Ok(())
    };
    if let Err(e) = objects() {
        fail(format_args!(
            "creating the endpoints and notifications: {e:?}"
        ))
    }
    // The pagers first, all of them ready before any worker runs: a pager that borrows must
    // find every other one in the shared state.
    for p in 0..npagers {
        if let Err(e) = start_pager(setup, p) {
            fail(format_args!("starting pager {p}: {e:?}"))
        }
    }
    debug::release_cores();
    wait_all(L_READY, npagers, "pagers");
    for w in 0..cores {
        if let Err(e) = start_worker(setup, w, npagers + w) {
            fail(format_args!("starting worker {w}: {e:?}"))
        }
    }
    uprintln!("loader: {npagers} pagers ready, {cores} workers started");
    wait_all(L_DONE, cores, "workers");
    report(sh, setup);
    debug::done();
    sys::park()
}

/// Waits until the notification in `slot` has seen bits `0..n` (one per thread).
fn wait_all(slot: usize, n: usize, who: &str) {
    let all = (1usize << n) - 1;
    let mut seen = 0;
    while seen != all {
        match sys::wait(s(slot)) {
            Ok(bits) => seen |= bits,
            Err(e) => fail(format_args!("waiting for the {who}: {e:?}")),
        }
    }
}

/// Creates thread `k` (stack `k`) in `space` on `core` at `prio`, with its park notification,
/// and leaves its capability in `L_THREAD`.
fn create(k: usize, space: usize, core: usize, prio: usize, arg: usize) -> Result<(), abi::Error> {
    let t = s(L_THREAD);
    sys::create_thread(s(slot::ROOT_CONTROL), t, s(space), prio, core)?;
    sys::mint(
        s(L_PARK),
        MintTarget::Thread(t),
        s(slot::PARK),
        Rights::READ,
        0,
    )?;
    let entry = super::entry as extern "C" fn(usize) -> ! as usize;
    sys::write_registers(t, entry, initial_sp(stack(k).1), arg)
}

/// Starts the thread in `L_THREAD` and drops the loader's capability to it.
fn resume_and_forget() -> Result<(), abi::Error> {
    sys::resume(s(L_THREAD))?;
    sys::cap_delete(s(L_THREAD))
}

fn start_pager(setup: Setup, p: usize) -> Result<(), abi::Error> {
    let arg = entry_arg(setup, true, p);
    create(p, slot::ROOT_ASPACE, setup.pager_of(p), PAGER_PRIO, arg)?;
    let t = MintTarget::Thread(s(L_THREAD));
    sys::mint(s(L_EP + p), t, s(pagerd::EP), Rights::READ, 0)?;
    for w in (0..setup.cores).filter(|&w| setup.pager_of(w) == p) {
        sys::mint(s(L_SPACE + w), t, s(pagerd::ASPACE + w), Rights::WRITE, 0)?;
    }
    let rw = Rights::READ | Rights::WRITE;
    sys::mint(s(L_POOL), t, s(pagerd::POOL), rw, 0)?;
    sys::mint(s(L_READY), t, s(pagerd::READY), Rights::WRITE, 1 << p)?;
    resume_and_forget()
}

fn start_worker(setup: Setup, w: usize, k: usize) -> Result<(), abi::Error> {
    create(k, L_SPACE + w, w, WORKER_PRIO, entry_arg(setup, false, w))?;
    let t = MintTarget::Thread(s(L_THREAD));
    for p in 0..setup.pagers() {
        sys::mint(s(L_EP + p), t, s(worker::EP_SLOT + p), Rights::WRITE, w + 1)?;
    }
    sys::mint(s(L_DONE), t, s(worker::DONE), Rights::WRITE, 1 << w)?;
    sys::bind_pager(s(L_THREAD), s(L_EP + setup.pager_of(w)))?;
    resume_and_forget()
}

/// After the workload: the counters into the records' `extra`, and the conservation check.
fn report<L: PagerLock>(sh: &Shared<L>, setup: Setup) {
    let n = setup.pagers();
    let sum = |f: &dyn Fn(&shared::Counters) -> usize| -> usize {
        sh.counters[..n].iter().map(|c| f(c)).sum()
    };
    let same = sum(&|c| c.faults_same.load(Relaxed));
    let cross = sum(&|c| c.faults_cross.load(Relaxed));
    let borrowed =
        sum(&|c| c.borrowed_same_node.load(Relaxed) + c.borrowed_other_node.load(Relaxed));
    let returned = sum(&|c| c.returned.load(Relaxed));
    let errors = sum(&|c| c.errors.load(Relaxed));
    for (k, v) in [same, cross, borrowed, returned].into_iter().enumerate() {
        debug::bench_report(record::MEM_ALLOC, param::EXTRA + k, v as u64);
    }
    uprintln!(
        "loader: faults served on the faulting core {same}, across cores {cross}; pages \
         borrowed {borrowed}, returned {returned}; requests refused {errors}"
    );

    // Conservation: every pager's allocator sound and idle (all it owns is free), the pool
    // owned exactly once, no loan left, nothing mapped.
    let mut owned = 0;
    let mut problem: Option<&'static str> = None;
    let guards: heapless::Vec<_, MAX_CORES> =
        sh.pagers[..n].iter().map(|m| m.lock(LOADER_ID)).collect();
    for (p, g) in guards.iter().enumerate() {
        let Some(me) = g.as_deref() else {
            problem = Some("a pager never started");
            break;
        };
        if let Err(e) = me.alloc.check() {
            problem = Some(e);
        }
        if me.alloc.free_count() != me.alloc.owned_count() {
            problem = Some("pages still allocated");
        }
        owned += me.alloc.owned_count();
        for q in guards.iter().skip(p + 1).filter_map(|g| g.as_deref()) {
            let overlap = me
                .alloc
                .owned_ranges()
                .iter()
                .any(|r| q.alloc.owned_ranges().iter().any(|x| x.overlaps(r)));
            if overlap {
                problem = Some("a frame has two owners");
            }
        }
    }
    drop(guards);
    let loans = sh.ledger.lock(LOADER_ID).loans().len();
    let mapped = frames().iter().filter(|e| e.load(Relaxed) != 0).count();
    test(
        "memory:conservation_after_workload",
        problem.is_none() && owned == setup.pool_pages() && loans == 0 && mapped == 0,
        format_args!(
            "pool {} pages, owned {owned}, loans left {loans}, pages still mapped {mapped}, \
             problem: {problem:?}",
            setup.pool_pages()
        ),
    );
    if setup.spec.nodes > 1 && borrowed > 0 {
        let c = &sh.counters[0];
        let (same_node, other) = (
            c.borrowed_same_node.load(Relaxed),
            c.borrowed_other_node.load(Relaxed),
        );
        // Core 0's node has another core when cores per node >= 2: it must lend first.
        let neighbour = setup.node_of(1) == 0;
        test(
            "memory:loans_prefer_same_node",
            if neighbour {
                same_node > 0 && other == 0
            } else {
                other > 0
            },
            format_args!(
                "pager 0 borrowed {same_node} pages on its node, {other} from another (a \
                 neighbour on its node: {neighbour})"
            ),
        );
    }
}
