//! Memory capabilities against a model: random split / give / map / unmap / revoke / delete
//! sequences from two cores sharing an address space (proptest), checked after every step:
//! the page tables hold exactly the model's mappings, each tagged with a live region and inside
//! it, nothing stays mapped through a destroyed region, every unmap or revoke that removed a
//! leaf returned only after the other core flushed, and the page-table pool is back to its
//! start count once nothing is mapped. Plus 10^5 map/unmap cycles without a leaked table.

use std::collections::BTreeMap;

use kernel::config::MAX_CPUS;
use kernel::syscall::result;
use kernel::{BigLock, CapSlot, Kernel, MemKind, ObjRef, PageAttrs, Rights, Syscall};
use kernel_locks::TicketLock;
use proptest::prelude::*;
use tests::{FakeHal, HalEvent, HostRelax};

type K = Kernel<BigLock<TicketLock<HostRelax>>, FakeHal>;

const ROOT: u64 = 0xA000;
const BASE: u64 = 0x100_0000;
const PAGES: usize = 64;
/// Memory slots 0..8 of each thread; slot 8 the address space, 9 the other thread.
const MEM_SLOTS: usize = 8;

fn s(i: usize) -> CapSlot {
    CapSlot::new(i).unwrap()
}

/// Calls `sc` on `cpu` while a host thread plays the other core, entering the kernel for every
/// TLB shoot-down aimed at it (as a real core takes the IPI).
fn call(k: &K, cpu: usize, sc: Syscall) -> Result<usize, kernel::Error> {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    let other = 1 - cpu;
    let done = AtomicBool::new(false);
    std::thread::scope(|sc_| {
        sc_.spawn(|| {
            while !done.load(SeqCst) {
                if k.shootdown_pending(other) {
                    k.ipi(other, kernel::IpiKind::TlbShootdown);
                }
                std::thread::yield_now();
            }
        });
        let e = k.syscall(cpu, sc.encode());
        done.store(true, SeqCst);
        result(&e.regs).map(|(w, _)| w)
    })
}

fn kernel() -> (Box<K>, [kernel::ThreadId; 2]) {
    let mut k = Box::new(Kernel::new(
        BigLock::new(TicketLock::<HostRelax>::with_relax_and_cpus(MAX_CPUS)),
        FakeHal::new(2),
        2,
    ));
    let a = k.create_address_space(ROOT).unwrap();
    let m = k.create_memory(BASE, PAGES, MemKind::Ram).unwrap();
    let t = [
        k.create_thread(10, 0, Some(a)).unwrap(),
        k.create_thread(10, 1, Some(a)).unwrap(),
    ];
    for (i, &th) in t.iter().enumerate() {
        k.install_cap(th, s(8), ObjRef::AddressSpace(a), Rights::WRITE, 0)
            .unwrap();
        k.install_cap(th, s(9), ObjRef::Thread(t[1 - i]), Rights::ALL, 0)
            .unwrap();
        k.start(th).unwrap();
    }
    k.install_cap(t[0], s(0), ObjRef::Memory(m), Rights::ALL, 0)
        .unwrap();
    k.timer_tick(0);
    k.timer_tick(1);
    (k, t)
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Split {
        cpu: usize,
        mem: usize,
        dest: usize,
        offset: usize,
        pages: usize,
    },
    Give {
        cpu: usize,
        mem: usize,
        dest: usize,
    },
    Map {
        cpu: usize,
        mem: usize,
        offset: usize,
        page: usize,
        write: bool,
    },
    Unmap {
        cpu: usize,
        page: usize,
    },
    Revoke {
        cpu: usize,
        mem: usize,
    },
    Delete {
        cpu: usize,
        mem: usize,
    },
    Merge {
        cpu: usize,
        a: usize,
        b: usize,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let c = 0..2usize;
    let m = 0..MEM_SLOTS;
    prop_oneof![
        (c.clone(), m.clone(), m.clone(), 0..PAGES, 1..16usize).prop_map(
            |(cpu, mem, dest, offset, pages)| Step::Split {
                cpu,
                mem,
                dest,
                offset,
                pages
            }
        ),
        (c.clone(), m.clone(), m.clone()).prop_map(|(cpu, mem, dest)| Step::Give {
            cpu,
            mem,
            dest
        }),
        (c.clone(), m.clone(), 0..16usize, 0..32usize, any::<bool>()).prop_map(
            |(cpu, mem, offset, page, write)| Step::Map {
                cpu,
                mem,
                offset,
                page,
                write
            }
        ),
        (c.clone(), 0..32usize).prop_map(|(cpu, page)| Step::Unmap { cpu, page }),
        (c.clone(), m.clone()).prop_map(|(cpu, mem)| Step::Revoke { cpu, mem }),
        (c.clone(), m.clone()).prop_map(|(cpu, mem)| Step::Delete { cpu, mem }),
        (c, m.clone(), m).prop_map(|(cpu, a, b)| Step::Merge { cpu, a, b }),
    ]
}

const VA: usize = 0x40_0000;

/// Whether core `other` flushed after the last event at or after `from` that removed a leaf.
fn flushed_after_removal(log: &[(usize, HalEvent)], from: usize, other: usize) -> bool {
    let removal = log[from..]
        .iter()
        .rposition(|(_, e)| matches!(e, HalEvent::Unmap(..) | HalEvent::Sweep(..)));
    match removal {
        None => true,
        Some(i) => log[from + i..]
            .iter()
            .any(|&(c, e)| c == other && matches!(e, HalEvent::Flush(_, None))),
    }
}

fn run_steps(steps: &[Step]) -> Result<(), TestCaseError> {
    let (mut k, t) = kernel();
    let order = k.hal().order();
    let free0 = k.hal().pt.table_frames().0;
    for st in steps {
        let from = order.lock().unwrap().len();
        let cpu = match *st {
            Step::Split { cpu, .. }
            | Step::Give { cpu, .. }
            | Step::Map { cpu, .. }
            | Step::Unmap { cpu, .. }
            | Step::Revoke { cpu, .. }
            | Step::Delete { cpu, .. }
            | Step::Merge { cpu, .. } => cpu,
        };
        let sc = match *st {
            Step::Split {
                mem,
                dest,
                offset,
                pages,
                ..
            } => Syscall::MemSplit {
                mem: s(mem),
                dest: s(dest),
                offset,
                pages,
            },
            Step::Give { mem, dest, .. } => Syscall::Mint {
                src: s(mem),
                target: kernel::MintTarget::Thread(s(9)),
                dest: s(dest),
                rights: Rights::ALL,
                badge: 0,
            },
            Step::Map {
                mem,
                offset,
                page,
                write,
                ..
            } => Syscall::MapPage {
                aspace: s(8),
                mem: s(mem),
                vaddr: VA + page * 4096,
                attrs: if write {
                    PageAttrs::WRITE
                } else {
                    PageAttrs::empty()
                },
                offset,
            },
            Step::Unmap { page, .. } => Syscall::UnmapPage {
                aspace: s(8),
                vaddr: VA + page * 4096,
            },
            Step::Revoke { mem, .. } => Syscall::MemRevoke { mem: s(mem) },
            Step::Delete { mem, .. } => Syscall::CapDelete { slot: s(mem) },
            Step::Merge { a, b, .. } => Syscall::MemMerge { a: s(a), b: s(b) },
        };
        // What the model expects of a map: the page of the region in that slot.
        let expect = match (
            *st,
            k.cap_of(
                t[cpu],
                s(match *st {
                    Step::Map { mem, .. } => mem,
                    _ => 0,
                }),
            ),
        ) {
            (Step::Map { offset, .. }, Some(c)) => match c.obj {
                ObjRef::Memory(m) => k
                    .memory(m)
                    .filter(|r| offset < r.1)
                    .map(|r| (r.0 + offset as u64 * 4096, m)),
                _ => None,
            },
            _ => None,
        };
        let before: BTreeMap<usize, kernel::Leaf> = k.hal().pt.leaves(ROOT).into_iter().collect();
        let res = call(&k, cpu, sc);
        let after: BTreeMap<usize, kernel::Leaf> = k.hal().pt.leaves(ROOT).into_iter().collect();
        if let (Step::Map { page, .. }, Ok(_)) = (st, res) {
            let leaf = after.get(&(VA + page * 4096));
            prop_assert!(
                leaf.is_some_and(
                    |l| Some((l.phys, l.tag)) == expect.map(|e| (e.0, e.1.index() as u16 + 1))
                ),
                "{st:?}: leaf {leaf:?}, expected {expect:?}"
            );
        }
        if res.is_err() {
            prop_assert_eq!(
                &before,
                &after,
                "{:?} failed ({:?}) but changed the tables",
                st,
                res
            );
        }
        // Every leaf names a live region and lies inside it; no dangling tag.
        k.check_memory()
            .map_err(|v| TestCaseError::fail(format!("{st:?}: {v:?}")))?;
        k.check_invariants()
            .map_err(|v| TestCaseError::fail(format!("{st:?}: {v:?}")))?;
        prop_assert!(
            flushed_after_removal(&order.lock().unwrap(), from, 1 - cpu),
            "{:?}: returned before the other core flushed",
            st
        );
        if after.is_empty() {
            prop_assert_eq!(
                k.hal().pt.table_frames().0,
                free0,
                "page tables leaked after {:?}",
                st
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn random_memory_operations_match_the_model(steps in proptest::collection::vec(step(), 1..40)) {
        run_steps(&steps)?;
    }
}

/// 10^5 map/unmap cycles over 64 pages spread across 2 MiB tables: the pool ends where it began.
#[test]
fn map_unmap_cycles_leak_no_page_table() {
    let (k, _) = kernel();
    let free0 = k.hal().pt.table_frames().0;
    for i in 0..100_000usize {
        let page = (i * 7919) % 64;
        let vaddr = VA + page * (512 * 4096 / 8);
        let map = Syscall::MapPage {
            aspace: s(8),
            mem: s(0),
            vaddr: vaddr & !0xFFF,
            attrs: PageAttrs::WRITE,
            offset: page,
        };
        let e = k.syscall(0, map.encode());
        assert!(result(&e.regs).is_ok(), "map {i}: {:?}", e.regs);
        // Core 1 never ran the address space's threads' entries beyond boot: its flush is
        // requested only if it may cache the space; service it like a real core would.
        let unmap = Syscall::UnmapPage {
            aspace: s(8),
            vaddr: vaddr & !0xFFF,
        };
        assert!(call(&k, 0, unmap).is_ok(), "unmap {i}");
    }
    assert_eq!(k.hal().pt.table_frames().0, free0);
    assert_eq!(k.hal().pt.retired(), 0);
}
