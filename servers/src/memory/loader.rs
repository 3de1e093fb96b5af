//! The loader: the root task of `mode=bench bench=memory` (see the [module docs](super)).
//!
//! # Memory nodes
//! The partitions follow the machine's memory nodes, from one of three sources, printed as
//! `numa: ...`:
//! * `srat`: the firmware describes more than one node (x86: the ACPI SRAT; the image cuts the
//!   free RAM at node boundaries and passes each core's node and each RAM region's node in the
//!   [`Topology`] word). Each node's share of the pool (2048 pages per core of the node; with
//!   the global pager the whole pool, from core 0's node) is carved from the largest RAM region
//!   of that node, then dealt evenly among the node's cores. This overrides `nodes=`.
//! * `config`: `nodes=N` with N > 1 (and no usable firmware description): the pool is carved
//!   from the largest region and cut into N consecutive ranges that stand for the nodes, core
//!   `c` on node `c * N / cores`.
//! * `none`: one node; the pool is split evenly.
//!
//! Either way the pagers see the same thing: their node ([`NodeMap`]) and one pool region per
//! part ([`Shared::pools`]); "memory low" asks donors on the same node first.

use core::sync::atomic::Ordering::Relaxed;

use abi::{MintTarget, PageAttrs, Rights};
use pager::partition::{split_even, split_numa};
use pager::{FrameAllocator, FrameRange, RangeSet};

use super::shared::{self, frames, NodeMap, Part, Shared, AREA_PAGES, LOADER_ID};
use super::{
    entry_arg, pagerd, worker, Setup, MAX_CORES, PAGE, SHARED_VA, STACKS_VA, STACK_PAGES,
    STACK_STRIDE,
};
use crate::debug::{self, test};
use crate::image::bench::{param, record};
use crate::image::memory::{Nodes, Spec, Topology, LOCKS, MAX_NODES, PARTITION_PAGES};
use crate::image::slot;
use crate::sys::{self, slot as s};
use crate::uprintln;
use pager::PagerLock;

/// Loader slots: pager `p`'s endpoint.
const L_EP: usize = 1;
/// Loader slot: its working memory (the shared area and the stacks).
const L_OWN: usize = 9;
/// Loader slot: the thread being set up.
const L_THREAD: usize = 10;
/// Loader slots: worker `w`'s address space (from the image).
const L_SPACE: usize = slot::ROOT_MEMORY_SPACES;
/// Loader slots: the pool's parts, one region per memory node it is carved from.
const L_POOL: usize = 19;
/// Loader slot: the park notification of the threads it creates.
const L_PARK: usize = 23;
/// Loader slot: the notification the workers signal when done. The loader drives no device:
/// it empties its device-region slots and uses them for its notifications.
const L_DONE: usize = slot::ROOT_DEVICE;
/// Loader slot: the notification the pagers signal when ready.
const L_READY: usize = slot::ROOT_DEVICE + 1;

const _: () = assert!(L_EP + MAX_CORES <= L_OWN && L_THREAD < L_SPACE);
const _: () = assert!(L_SPACE + MAX_CORES <= L_POOL && L_POOL + MAX_NODES <= L_PARK);
const _: () = assert!(L_PARK < slot::ROOT_MEM && slot::ROOT_DEVICE_SLOTS >= 2);

/// Priority of the pagers: above their workers, so a worker never delays its pager.
const PAGER_PRIO: usize = 20;
/// Priority of the workers.
const WORKER_PRIO: usize = 10;

/// Runs the loader with the spec word and topology word the image passed.
pub fn run(spec: u64, topology: u64) -> ! {
    let (Some(spec), Some(topology)) = (
        Spec::from_word(spec as usize),
        Topology::from_word(topology as usize).filter(|t| t.cores <= MAX_CORES),
    ) else {
        fail(format_args!(
            "bad arguments: spec {spec:#x}, topology {topology:#x}"
        ))
    };
    let cores = topology.cores;
    if LOCKS[spec.lock] == "none" && cores > 1 {
        // The image refuses this command line already; a pager borrowing from another core
        // would share memory between cores with no lock at all.
        fail(format_args!(
            "lock=none shares nothing safely between {cores} cores"
        ))
    }
    shared::dispatch!(spec.lock, self::build(Setup { spec, cores }, topology))
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

/// A RAM region the image gave the loader.
#[derive(Clone, Copy, Debug, Default)]
struct Region {
    /// Its slot.
    slot: usize,
    /// First frame.
    base: usize,
    /// Frames.
    pages: usize,
    /// Its memory node (from the firmware; 0 without).
    node: usize,
}

/// Where the partitions' nodes come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// The firmware (`numa: srat, N nodes`).
    Firmware,
    /// `nodes=` (`numa: config nodes=N`).
    Config,
    /// One node (`numa: none`).
    None,
}

/// Where the memory comes from: the working memory and the pool's parts, each `pages` frames
/// at frame `offset` of region `region` (an index into the regions).
#[derive(Clone, Copy, Debug, Default)]
struct Chunk {
    region: usize,
    offset: usize,
    pages: usize,
    node: usize,
}

/// The loader's memory plan: the working memory, the pool's parts, the nodes, and what each
/// node's memory is (for the check that the partitions follow the nodes).
struct Plan {
    source: Source,
    own: Chunk,
    pool: heapless::Vec<Chunk, MAX_NODES>,
    numa: NodeMap,
    /// Frame ranges and their node: the firmware's regions, or `nodes=`'s slices of the pool.
    node_memory: heapless::Vec<(FrameRange, usize), { slot::ROOT_MEM_SLOTS + MAX_NODES }>,
}

/// The firmware's plan: each node's share of the pool from the largest region of that node
/// with room for it (the working memory first, from the largest region of all). `Err` says
/// why it does not fit.
fn firmware_plan(
    setup: Setup,
    nodes: &Nodes,
    regions: &[Region],
    own: usize,
) -> Result<Plan, heapless::String<96>> {
    let mut used = [0usize; slot::ROOT_MEM_SLOTS];
    let largest = (0..regions.len()).max_by_key(|&r| regions[r].pages);
    let own_region = largest
        .filter(|&r| regions[r].pages >= own)
        .ok_or_else(|| {
            msg(format_args!(
                "no region of {own} pages for the working memory"
            ))
        })?;
    used[own_region] = own;
    let mut numa = NodeMap {
        nodes: nodes.count,
        core: [0; MAX_CORES],
    };
    for (c, n) in numa.core.iter_mut().enumerate().take(setup.cores) {
        *n = usize::from(nodes.core[c]);
    }
    let mut pool = heapless::Vec::new();
    for node in 0..nodes.count {
        let share = if setup.spec.global {
            if numa.node_of(0) == node {
                setup.pool_pages()
            } else {
                0
            }
        } else {
            (0..setup.cores)
                .filter(|&c| numa.node_of(c) == node)
                .count()
                * PARTITION_PAGES
        };
        if share == 0 {
            continue;
        }
        let room = |r: usize| regions[r].pages - used[r];
        let Some(r) = (0..regions.len())
            .filter(|&r| regions[r].node == node && room(r) >= share)
            .max_by_key(|&r| room(r))
        else {
            return Err(msg(format_args!(
                "node {node} has no region with {share} free pages"
            )));
        };
        let chunk = Chunk {
            region: r,
            offset: used[r],
            pages: share,
            node,
        };
        used[r] += share;
        // At most one part per node: `nodes.count <= MAX_NODES`.
        let _ = pool.push(chunk);
    }
    let mut node_memory = heapless::Vec::new();
    for r in regions {
        let _ = node_memory.push((FrameRange::new(r.base, r.pages), r.node));
    }
    Ok(Plan {
        source: Source::Firmware,
        own: Chunk {
            region: own_region,
            offset: 0,
            pages: own,
            node: regions[own_region].node,
        },
        pool,
        numa,
        node_memory,
    })
}

/// The plan without the firmware: the working memory and then the pool from the largest
/// region; with `nodes=` N > 1 the pool's N consecutive slices stand for the nodes.
fn config_plan(setup: Setup, regions: &[Region], own: usize) -> Result<Plan, usize> {
    let pool_pages = setup.pool_pages();
    let largest = (0..regions.len()).max_by_key(|&r| regions[r].pages);
    let r = largest
        .filter(|&r| regions[r].pages >= own + pool_pages)
        .ok_or(largest.map_or(0, |r| regions[r].pages))?;
    let nodes = setup.spec.nodes;
    let mut numa = NodeMap {
        nodes,
        core: [0; MAX_CORES],
    };
    for (c, n) in numa.core.iter_mut().enumerate().take(setup.cores) {
        *n = setup.node_of(c);
    }
    let first = regions[r].base + own;
    let chunk = pool_pages / nodes;
    let mut node_memory = heapless::Vec::new();
    for n in 0..nodes {
        let len = if n + 1 == nodes {
            pool_pages - chunk * n
        } else {
            chunk
        };
        let _ = node_memory.push((FrameRange::new(first + chunk * n, len), n));
    }
    let mut pool = heapless::Vec::new();
    let _ = pool.push(Chunk {
        region: r,
        offset: own,
        pages: pool_pages,
        node: 0,
    });
    Ok(Plan {
        source: if nodes > 1 {
            Source::Config
        } else {
            Source::None
        },
        own: Chunk {
            region: r,
            offset: 0,
            pages: own,
            node: 0,
        },
        pool,
        numa,
        node_memory,
    })
}

/// A short message, cut at 96 bytes.
fn msg(args: core::fmt::Arguments<'_>) -> heapless::String<96> {
    let mut m = heapless::String::new();
    let _ = core::fmt::write(&mut m, args);
    m
}

fn build<L: PagerLock>(setup: Setup, topology: Topology) -> ! {
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
        "loader: {cores} cores, {} pager{} ({}), {} allocator, nodes={nodes}, tasks of {pages} \
         pages, pager locks: {}",
        npagers,
        if npagers > 1 { "s" } else { "" },
        if global {
            "global, on core 0"
        } else {
            "one per core"
        },
        if buddy { "buddy" } else { "AVL-tree" },
        LOCKS[lock]
    );
    // No device for the loader: the slots take its notifications (see `L_DONE`). An empty
    // slot is fine.
    for i in 0..slot::ROOT_DEVICE_SLOTS {
        let _ = sys::cap_delete(s(slot::ROOT_DEVICE + i));
    }

    // The RAM regions, with their nodes.
    let mut regions: heapless::Vec<Region, { slot::ROOT_MEM_SLOTS }> = heapless::Vec::new();
    for i in 0..slot::ROOT_MEM_SLOTS {
        let sl = slot::ROOT_MEM + i;
        if let Ok((base, n, 0)) = sys::mem_info(s(sl)) {
            let node = topology.nodes.map_or(0, |t| usize::from(t.region[i]));
            let _ = regions.push(Region {
                slot: sl,
                base: base / PAGE,
                pages: n,
                node,
            });
        }
    }
    let threads = npagers + cores;
    let own = AREA_PAGES + threads * STACK_PAGES;
    let pool = setup.pool_pages();

    // The memory nodes: the firmware's when it describes several, else `nodes=`.
    let mut plan = None;
    if let Some(fw) = topology.nodes.filter(|n| n.count > 1) {
        match firmware_plan(setup, &fw, &regions, own) {
            Ok(p) => {
                uprintln!("numa: {}, {} nodes", fw.source.name(), fw.count);
                plan = Some(p);
            }
            Err(why) => uprintln!(
                "loader: the {} describes {} nodes, but {why}: using the configuration",
                fw.source.name(),
                fw.count
            ),
        }
    }
    let plan = match plan {
        Some(p) => p,
        None => match config_plan(setup, &regions, own) {
            Ok(p) => {
                match topology.nodes {
                    Some(fw) if fw.count == 1 && p.source == Source::Config => {
                        uprintln!("numa: config nodes={nodes} ({}: 1 node)", fw.source.name())
                    }
                    Some(fw) if fw.count == 1 => {
                        uprintln!("numa: none ({}: 1 node)", fw.source.name())
                    }
                    _ if p.source == Source::Config => uprintln!("numa: config nodes={nodes}"),
                    _ => uprintln!("numa: none"),
                }
                p
            }
            Err(largest) => fail(format_args!(
                "needs one RAM region of {} pages ({} MiB); the largest has {largest}",
                own + pool,
                ((own + pool) * PAGE) >> 20,
            )),
        },
    };
    let region_of = |c: &Chunk| regions[c.region];
    uprintln!(
        "loader: {own} pages of working memory from the region at {:#x}, a pool of {pool} \
         pages in {} part{}",
        region_of(&plan.own).base * PAGE,
        plan.pool.len(),
        if plan.pool.len() > 1 { "s" } else { "" },
    );
    for (k, c) in plan.pool.iter().enumerate() {
        let r = region_of(c);
        let at = (r.base + c.offset) * PAGE;
        if plan.source == Source::Firmware {
            uprintln!(
                "loader: pool part {k}: {} pages at {at:#x} on node {} (region at {:#x}, {} pages)",
                c.pages,
                c.node,
                r.base * PAGE,
                r.pages
            );
        } else {
            uprintln!(
                "loader: pool part {k}: {} pages at {at:#x} (region at {:#x}, {} pages)",
                c.pages,
                r.base * PAGE,
                r.pages
            );
        }
    }
    let map_own = || -> Result<(), abi::Error> {
        let own_slot = s(region_of(&plan.own).slot);
        sys::mem_split(own_slot, s(L_OWN), plan.own.offset, own)?;
        for (k, c) in plan.pool.iter().enumerate() {
            sys::mem_split(s(region_of(c).slot), s(L_POOL + k), c.offset, c.pages)?;
        }
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

    // The partitions: by node (each node's memory dealt evenly among its cores), or the pool
    // split evenly (one node, or the global pager, which owns it all).
    let mut pools = [Part::default(); MAX_NODES];
    let mut ranges = [FrameRange::new(0, 0); MAX_NODES];
    let mut range_nodes = [0; MAX_NODES];
    let parts_n = plan.pool.len();
    for (k, c) in plan.pool.iter().enumerate() {
        let base = region_of(c).base + c.offset;
        pools[k] = Part {
            base,
            pages: c.pages,
        };
        ranges[k] = FrameRange::new(base, c.pages);
        range_nodes[k] = c.node;
    }
    let mut sets: [RangeSet<1>; MAX_CORES] = core::array::from_fn(|_| RangeSet::new());
    let core_nodes = &plan.numa.core[..cores];
    let split = match plan.source {
        _ if global => split_even(&ranges[..parts_n], &mut sets[..npagers]),
        Source::Firmware => split_numa(
            &ranges[..parts_n],
            &range_nodes[..parts_n],
            core_nodes,
            &mut sets[..cores],
        ),
        Source::Config => {
            let n = plan.node_memory.len();
            let mut config_ranges = [FrameRange::new(0, 0); MAX_NODES];
            let mut config_nodes = [0; MAX_NODES];
            for (i, &(r, node)) in plan.node_memory.iter().enumerate() {
                config_ranges[i] = r;
                config_nodes[i] = node;
            }
            split_numa(
                &config_ranges[..n],
                &config_nodes[..n],
                core_nodes,
                &mut sets[..cores],
            )
        }
        Source::None => split_even(&ranges[..parts_n], &mut sets[..npagers]),
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
    if plan.numa.nodes > 1 {
        // Each partition lies in the memory of its core's node (the global pager's on core 0:
        // under `nodes=` its pool spans every node's slice).
        let ok = (0..npagers).all(|p| {
            let node = plan.numa.node_of(setup.pager_of(p));
            let part = FrameRange::new(parts[p].base, parts[p].pages);
            plan.node_memory.iter().any(|&(r, n)| {
                n == node && r.start <= part.start && part.start + part.count <= r.start + r.count
            })
        }) || (global && plan.source == Source::Config);
        test(
            "memory:partitions_follow_nodes",
            ok,
            format_args!(
                "{} nodes ({}), partitions {:?}, cores' nodes {:?}",
                plan.numa.nodes,
                match plan.source {
                    Source::Firmware => "firmware",
                    _ => "nodes=",
                },
                &parts[..npagers],
                core_nodes
            ),
        );
    }

    shared::fill_numa(
        npagers,
        |p| plan.numa.node_of(setup.pager_of(p)),
        plan.numa.node_of(0),
    );
    // SAFETY: `map_own` mapped `AREA_PAGES` writable pages at `SHARED_VA`, used for nothing
    // else, and no other thread of this system exists yet.
    let sh = unsafe { Shared::<L>::init(parts, pools, plan.numa) };

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
        if let Err(e) = start_pager(setup, p, parts_n) {
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
    sys::write_registers(t, entry, sys::initial_sp(stack(k).1), arg)
}

/// Starts the thread in `L_THREAD` and drops the loader's capability to it.
fn resume_and_forget() -> Result<(), abi::Error> {
    sys::resume(s(L_THREAD))?;
    sys::cap_delete(s(L_THREAD))
}

/// Starts pager `p`, with the pool's `pool_parts` regions.
fn start_pager(setup: Setup, p: usize, pool_parts: usize) -> Result<(), abi::Error> {
    let arg = entry_arg(setup, true, p);
    create(p, slot::ROOT_ASPACE, setup.pager_of(p), PAGER_PRIO, arg)?;
    let t = MintTarget::Thread(s(L_THREAD));
    sys::mint(s(L_EP + p), t, s(pagerd::EP), Rights::READ, 0)?;
    for w in (0..setup.cores).filter(|&w| setup.pager_of(w) == p) {
        sys::mint(s(L_SPACE + w), t, s(pagerd::ASPACE + w), Rights::WRITE, 0)?;
    }
    let rw = Rights::READ | Rights::WRITE;
    for k in 0..pool_parts {
        sys::mint(s(L_POOL + k), t, s(pagerd::POOL + k), rw, 0)?;
    }
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
    if sh.numa.nodes > 1 && borrowed > 0 {
        let c = &sh.counters[0];
        let (same_node, other) = (
            c.borrowed_same_node.load(Relaxed),
            c.borrowed_other_node.load(Relaxed),
        );
        // Core 0's node has another core when cores per node >= 2: it must lend first.
        let neighbour = setup.cores > 1 && sh.numa.node_of(1) == sh.numa.node_of(0);
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
