//! Algorithm switch, partition policies, balancing conservation (model and threads) and the
//! protocol encoding.

use std::collections::{BTreeMap, BTreeSet};

use kernel_locks::{BrLock, ClhLock, Mutex, NoLock, RtmLock, TicketLock};
use pager::balance::{donate, return_loans, BalanceError, Cluster, Ledger, Thresholds};
use pager::locked::{lock_two, LockedLedger, LockedPager, PagerLock};
use pager::partition::{split_even, split_numa, PartitionError};
use pager::protocol::{label, DecodeError, PagerError, Reply, Request, Stats};
use pager::{Algorithm, AllocError, FrameAllocator, FrameRange, Pager, RangeSet};
use proptest::prelude::*;

type P = Pager<128, 5>;

fn free_set(p: &P) -> BTreeSet<usize> {
    let mut s = BTreeSet::new();
    p.alloc.for_each_free(&mut |r| s.extend(r.start..r.end()));
    s
}

#[test]
fn switch_keeps_outstanding_pages() {
    let mut p = P::new(0, 0, Algorithm::Avl);
    p.alloc.add_range(FrameRange::new(5, 60)).unwrap();
    p.alloc.add_range(FrameRange::new(200, 33)).unwrap();
    let held: Vec<usize> = (0..40).map(|_| p.alloc.alloc().unwrap()).collect();
    // Free every third: a fragmented free set.
    for f in held.iter().step_by(3) {
        p.alloc.free(*f).unwrap();
    }
    let before = free_set(&p);
    for algo in [Algorithm::Buddy, Algorithm::Avl, Algorithm::Buddy] {
        p.set_algorithm(algo).unwrap();
        p.alloc.check().unwrap();
        assert_eq!(p.alloc.algorithm(), algo);
        assert_eq!(free_set(&p), before);
        assert_eq!(p.alloc.owned_count(), 93);
    }
    // The outstanding pages are still allocated: freeing them works once, then is a double free.
    for (i, f) in held.iter().enumerate() {
        if i % 3 != 0 {
            p.alloc.free(*f).unwrap();
            assert_eq!(p.alloc.free(*f), Err(AllocError::DoubleFree));
        }
    }
    assert_eq!(p.alloc.free_count(), 93);
    p.set_algorithm(Algorithm::Avl).unwrap();
    assert_eq!(p.counters().1, 4);
}

#[test]
fn failed_switch_changes_nothing() {
    // Three free runs of 3 frames: 3 tree nodes, but 6 buddy blocks ({1}, {2, 3}, ...).
    fn fragmented<const N: usize>() -> Pager<N, 3> {
        let mut p = Pager::new(0, 0, Algorithm::Avl);
        p.alloc.add_range(FrameRange::new(0, 16)).unwrap();
        p.alloc.alloc_contiguous(16).unwrap();
        for start in [1, 5, 9] {
            p.alloc.free_range(FrameRange::new(start, 3)).unwrap();
        }
        p
    }
    let mut small = fragmented::<4>();
    assert_eq!(
        small.set_algorithm(Algorithm::Buddy),
        Err(AllocError::OutOfCapacity)
    );
    assert_eq!(small.alloc.algorithm(), Algorithm::Avl);
    assert_eq!(small.alloc.free_count(), 9);
    small.alloc.check().unwrap();
    let mut big = fragmented::<8>();
    big.set_algorithm(Algorithm::Buddy).unwrap();
    assert_eq!(big.alloc.free_count(), 9);
    big.alloc.check().unwrap();
}

#[test]
fn pager_serves_protocol_requests() {
    let mut p = P::new(3, 0, Algorithm::Buddy);
    p.alloc.add_range(FrameRange::new(16, 2)).unwrap();
    let fault = Request::decode(&[abi::FAULT_LABEL, 0x4000_1234, 1, 7]).unwrap();
    let Reply::Map { page, frame } = p.handle(fault) else {
        panic!()
    };
    assert_eq!(page, 0x4000_1000);
    assert!((16..18).contains(&frame));
    let other = match p.handle(fault) {
        Reply::Map { frame, .. } => frame,
        r => panic!("{r:?}"),
    };
    assert_eq!(p.handle(fault), Reply::Error(PagerError::OutOfMemory));
    assert_eq!(
        p.handle(Request::Free {
            frame: 99,
            pages: 1
        }),
        Reply::Error(PagerError::NotOwned)
    );
    assert_eq!(p.handle(Request::Free { frame, pages: 1 }), Reply::Ok);
    assert_eq!(
        p.handle(Request::Free { frame, pages: 1 }),
        Reply::Error(PagerError::DoubleFree)
    );
    assert_eq!(p.handle(Request::SetAlgorithm(Algorithm::Avl)), Reply::Ok);
    assert_eq!(
        p.handle(Request::Free {
            frame: other,
            pages: 1
        }),
        Reply::Ok
    );
    assert_eq!(
        p.handle(Request::Stats),
        Reply::Stats(Stats {
            free: 2,
            owned: 2,
            faults: 2,
            algorithm: Algorithm::Avl
        })
    );
    assert_eq!(
        p.handle(Request::Init {
            core: 0,
            node: 0,
            regions: 1
        }),
        Reply::Error(PagerError::Unexpected)
    );
}

fn request() -> impl Strategy<Value = Request> {
    let algo = prop_oneof![Just(Algorithm::Avl), Just(Algorithm::Buddy)];
    prop_oneof![
        (any::<usize>(), any::<bool>(), any::<usize>()).prop_map(|(addr, write, thread)| {
            Request::PageFault {
                addr,
                write,
                thread,
            }
        }),
        (0usize..1 << 40, 1usize..1 << 20)
            .prop_map(|(frame, pages)| Request::Free { frame, pages }),
        (0usize..1 << 40, 1usize..1 << 20).prop_map(|(page, pages)| Request::FreePages {
            addr: page * 4096,
            pages
        }),
        algo.prop_map(Request::SetAlgorithm),
        Just(Request::Stats),
        (any::<usize>(), any::<usize>(), 1usize..)
            .prop_map(|(from, node, pages)| Request::MemoryLow { from, node, pages }),
        (any::<usize>(), 0usize..1 << 40, 1usize..1 << 20)
            .prop_map(|(from, frame, pages)| Request::MemoryReturn { from, frame, pages }),
        (any::<usize>(), any::<usize>(), 1usize..).prop_map(|(core, node, regions)| {
            Request::Init {
                core,
                node,
                regions,
            }
        }),
    ]
}

fn reply() -> impl Strategy<Value = Reply> {
    let algo = prop_oneof![Just(Algorithm::Avl), Just(Algorithm::Buddy)];
    let err = prop_oneof![
        Just(PagerError::Malformed),
        Just(PagerError::OutOfMemory),
        Just(PagerError::OutOfCapacity),
        Just(PagerError::NotOwned),
        Just(PagerError::DoubleFree),
        Just(PagerError::Unexpected),
    ];
    prop_oneof![
        Just(Reply::Ok),
        (any::<usize>(), any::<usize>()).prop_map(|(p, frame)| Reply::Map {
            page: p & !0xFFF,
            frame
        }),
        (
            0usize..1 << 30,
            0usize..1 << 30,
            0usize..usize::MAX >> 1,
            algo
        )
            .prop_map(|(free, extra, faults, algorithm)| Reply::Stats(Stats {
                free,
                owned: free + extra,
                faults,
                algorithm
            })),
        (0usize..1 << 40, 1usize..1 << 20).prop_map(|(frame, pages)| Reply::Grant { frame, pages }),
        err.prop_map(Reply::Error),
    ]
}

proptest! {
    #[test]
    fn requests_round_trip(r in request()) {
        prop_assert_eq!(Request::decode(&r.encode()), Ok(r));
    }

    #[test]
    fn replies_round_trip(r in reply()) {
        prop_assert_eq!(Reply::decode(&r.encode()), Ok(r));
    }

    /// Arbitrary words never panic, and whatever decodes re-encodes to the same words.
    #[test]
    fn arbitrary_words_decode_or_fail(w in prop::array::uniform4(prop_oneof![0usize..4, any::<usize>(),
            Just(label::FREE), Just(label::FREE_PAGES), Just(label::MAP), Just(label::ERROR), Just(abi::FAULT_LABEL)])) {
        if let Ok(r) = Request::decode(&w) {
            prop_assert_eq!(r.encode(), w);
        }
        if let Ok(r) = Reply::decode(&w) {
            prop_assert_eq!(r.encode(), w);
        }
    }
}

#[test]
fn malformed_messages_are_errors() {
    let bad = DecodeError::BadArgument;
    assert_eq!(
        Request::decode(&[0x1234, 0, 0, 0]),
        Err(DecodeError::UnknownLabel)
    );
    assert_eq!(Request::decode(&[abi::FAULT_LABEL, 0x1000, 2, 0]), Err(bad));
    assert_eq!(Request::decode(&[label::FREE, 5, 0, 0]), Err(bad));
    assert_eq!(Request::decode(&[label::FREE, usize::MAX, 2, 0]), Err(bad));
    assert_eq!(Request::decode(&[label::FREE, 5, 1, 9]), Err(bad));
    assert_eq!(
        Request::decode(&[label::FREE_PAGES, 0x1001, 1, 0]),
        Err(bad)
    );
    assert_eq!(
        Request::decode(&[label::FREE_PAGES, 0x1000, 0, 0]),
        Err(bad)
    );
    assert_eq!(
        Request::decode(&[label::FREE_PAGES, 0x1000, 1, 1]),
        Err(bad)
    );
    assert_eq!(Request::decode(&[label::SET_ALGORITHM, 2, 0, 0]), Err(bad));
    assert_eq!(Request::decode(&[label::STATS, 0, 1, 0]), Err(bad));
    assert_eq!(Request::decode(&[label::MEMORY_LOW, 1, 0, 0]), Err(bad));
    assert_eq!(Request::decode(&[label::INIT, 0, 0, 0]), Err(bad));
    assert_eq!(Reply::decode(&[label::MAP, 0x1001, 3, 0]), Err(bad));
    assert_eq!(Reply::decode(&[label::ERROR, 99, 0, 0]), Err(bad));
    assert_eq!(Reply::decode(&[label::STATS_REPLY, 5, 4, 0]), Err(bad));
    assert_eq!(Reply::decode(&[label::OK, 1, 0, 0]), Err(bad));
    assert_eq!(
        Reply::decode(&[label::FREE, 0, 0, 0]),
        Err(DecodeError::UnknownLabel)
    );
}

/// Every input frame in exactly one part.
fn assert_partition<const M: usize>(ranges: &[FrameRange], parts: &[RangeSet<M>]) {
    let input: BTreeSet<usize> = ranges.iter().flat_map(|r| r.start..r.end()).collect();
    let mut seen = BTreeSet::new();
    for part in parts {
        for r in part.ranges() {
            for f in r.start..r.end() {
                assert!(seen.insert(f), "frame {f} in two parts");
            }
        }
    }
    assert_eq!(seen, input);
}

#[test]
fn even_split_is_disjoint_covering_and_even() {
    let ranges = [
        FrameRange::new(100, 7),
        FrameRange::new(0x1000, 1000),
        FrameRange::new(20, 13),
    ];
    for cores in 1..9 {
        let mut parts = vec![RangeSet::<8>::new(); cores];
        split_even(&ranges, &mut parts).unwrap();
        assert_partition(&ranges, &parts);
        let sizes: Vec<usize> = parts.iter().map(|p| p.frames()).collect();
        assert!(
            sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1,
            "{sizes:?}"
        );
    }
    assert_eq!(
        split_even::<8>(&ranges, &mut []),
        Err(PartitionError::NoCores)
    );
    let overlapping = [FrameRange::new(0, 10), FrameRange::new(9, 2)];
    assert_eq!(
        split_even(&overlapping, &mut [RangeSet::<8>::new()]),
        Err(PartitionError::BadRange)
    );
    // A byte range rounds inwards to whole pages.
    assert_eq!(
        FrameRange::from_bytes(0x1800, 0x3000),
        Some(FrameRange::new(2, 2))
    );
}

#[test]
fn numa_split_keeps_memory_on_its_node() {
    // Node 0: two ranges; node 1: one range; node 2: memory only.
    let ranges = [
        FrameRange::new(0, 100),
        FrameRange::new(1000, 1000),
        FrameRange::new(200, 51),
        FrameRange::new(5000, 8),
    ];
    let range_nodes = [0, 1, 0, 2];
    let core_nodes = [0, 0, 0, 1, 1];
    let mut parts = vec![RangeSet::<8>::new(); 5];
    split_numa(&ranges, &range_nodes, &core_nodes, &mut parts).unwrap();
    assert_partition(&ranges, &parts);
    for (c, part) in parts.iter().enumerate() {
        for r in part.ranges() {
            let node = ranges
                .iter()
                .position(|x| x.covers(r))
                .map(|i| range_nodes[i])
                .unwrap();
            assert!(
                node == core_nodes[c] || node == 2,
                "core {c} got {r:?} of node {node}"
            );
        }
    }
    // 151 node-0 frames over 3 cores; 1000 node-1 frames over 2; 8 node-2 frames over 5.
    let local = |c: usize, lo: usize, hi: usize| {
        parts[c]
            .ranges()
            .iter()
            .filter(|r| r.start >= lo && r.start < hi)
            .map(|r| r.count)
            .sum::<usize>()
    };
    assert_eq!([0, 1, 2].map(|c| local(c, 0, 1000)), [51, 50, 50]);
    assert_eq!([3, 4].map(|c| local(c, 1000, 2000)), [500, 500]);
    assert_eq!(
        (0..5).map(|c| local(c, 5000, 6000)).collect::<Vec<_>>(),
        [2, 2, 2, 1, 1]
    );
    assert_eq!(
        split_numa(&ranges, &[0], &core_nodes, &mut parts),
        Err(PartitionError::LengthMismatch)
    );
}

proptest! {
    #[test]
    fn partitions_cover_disjointly(
        sizes in prop::collection::vec((1usize..300, 0usize..50, 0usize..3), 1..6),
        core_nodes in prop::collection::vec(0usize..3, 1..7),
    ) {
        let mut start = 0;
        let mut ranges = Vec::new();
        let mut nodes = Vec::new();
        for (len, gap, node) in sizes {
            start += gap;
            ranges.push(FrameRange::new(start, len));
            nodes.push(node);
            start += len;
        }
        let mut even = vec![RangeSet::<16>::new(); core_nodes.len()];
        split_even(&ranges, &mut even).unwrap();
        assert_partition(&ranges, &even);
        let mut numa = vec![RangeSet::<16>::new(); core_nodes.len()];
        split_numa(&ranges, &nodes, &core_nodes, &mut numa).unwrap();
        assert_partition(&ranges, &numa);
    }
}

type Small = Pager<64, 4>;

fn cluster(
    parts: [FrameRange; 4],
    nodes: [usize; 4],
    algos: [Algorithm; 4],
) -> Cluster<4, 64, 4, 32> {
    let pagers = std::array::from_fn(|i| {
        let mut p = Small::new(i, nodes[i], algos[i]);
        p.alloc.add_range(parts[i]).unwrap();
        p
    });
    Cluster::new(
        pagers,
        Thresholds {
            low: 8,
            high: 32,
            chunk: 16,
        },
    )
}

/// A model of who holds which allocated page, checked against the cluster at every step.
struct Sim {
    c: Cluster<4, 64, 4, 32>,
    total: usize,
    held: BTreeMap<usize, usize>,
}

impl Sim {
    fn step_check(&self) {
        self.c.check(self.total).unwrap();
        for (&frame, &p) in &self.held {
            let a = &self.c.pagers[p].alloc;
            assert!(a.owned_ranges().iter().any(|r| r.contains(frame)) && !a.is_free(frame));
        }
        let allocated: usize = self
            .c
            .pagers
            .iter()
            .map(|p| p.alloc.owned_count() - p.alloc.free_count())
            .sum();
        assert_eq!(allocated, self.held.len());
    }

    fn alloc(&mut self, p: usize) -> Result<usize, BalanceError> {
        let r = self.c.alloc(p);
        if let Ok(f) = r {
            assert!(
                self.held.insert(f, p).is_none(),
                "frame {f} handed out twice"
            );
        }
        self.step_check();
        r
    }

    fn free(&mut self, frame: usize) {
        let p = self.held.remove(&frame).unwrap();
        self.c.free(p, frame).unwrap();
        self.step_check();
    }
}

#[test]
fn borrowing_and_returning_conserve_pages() {
    let parts = [
        FrameRange::new(0, 64),
        FrameRange::new(64, 64),
        FrameRange::new(128, 64),
        FrameRange::new(192, 64),
    ];
    let c = cluster(
        parts,
        [0, 0, 1, 1],
        [
            Algorithm::Avl,
            Algorithm::Buddy,
            Algorithm::Avl,
            Algorithm::Buddy,
        ],
    );
    let mut s = Sim {
        c,
        total: 256,
        held: BTreeMap::new(),
    };
    // Pager 0 takes far more than its partition.
    let mut frames = Vec::new();
    for _ in 0..150 {
        frames.push(s.alloc(0).unwrap());
    }
    assert!(s.c.ledger.borrowed_by(0) >= 150 - 64);
    // The same node's pager (1) lent before the other node's went below MEM_HIGH.
    let from_1: usize =
        s.c.ledger
            .loans()
            .iter()
            .filter(|l| l.lender == 1)
            .map(|l| l.range.count)
            .sum();
    assert_eq!(from_1, 64 - 32, "pager 1 gives down to MEM_HIGH");
    assert_eq!(
        s.c.ledger.loans()[0].lender,
        1,
        "the same node is asked first"
    );
    // Switch the borrower's algorithm while borrowed pages are outstanding.
    s.c.pagers[0].set_algorithm(Algorithm::Buddy).unwrap();
    s.step_check();
    for f in frames {
        s.free(f);
    }
    // Everything went home.
    assert!(s.c.ledger.loans().is_empty(), "{:?}", s.c.ledger.loans());
    for (i, p) in s.c.pagers.iter().enumerate() {
        assert_eq!(p.alloc.owned_ranges(), &[parts[i]], "pager {i}");
    }
}

#[test]
fn exhaustion_is_an_error_and_loses_nothing() {
    let parts = [
        FrameRange::new(0, 16),
        FrameRange::new(16, 16),
        FrameRange::new(32, 16),
        FrameRange::new(48, 16),
    ];
    let c = cluster(parts, [0, 1, 0, 1], [Algorithm::Buddy; 4]);
    let mut s = Sim {
        c,
        total: 64,
        held: BTreeMap::new(),
    };
    let frames: Vec<usize> = (0..64).map(|i| s.alloc(i % 4).unwrap()).collect();
    assert_eq!(
        s.alloc(2),
        Err(BalanceError::Alloc(AllocError::OutOfMemory))
    );
    for f in frames {
        s.free(f);
    }
    assert!(s.c.ledger.loans().is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random allocations, frees and algorithm switches on 4 pagers: conservation and single
    /// ownership after every step, and all loans home after everything is freed.
    #[test]
    fn balancing_conserves(ops in prop::collection::vec((0usize..4, 0u8..10, any::<usize>()), 1..300)) {
        let parts = [FrameRange::new(0, 40), FrameRange::new(100, 70), FrameRange::new(300, 20), FrameRange::new(400, 60)];
        let c = cluster(parts, [0, 1, 1, 0], [Algorithm::Avl, Algorithm::Buddy, Algorithm::Avl, Algorithm::Buddy]);
        let mut s = Sim { c, total: 190, held: BTreeMap::new() };
        for (p, kind, pick) in ops {
            match kind {
                0..=5 => drop(s.alloc(p)),
                6..=8 if !s.held.is_empty() => {
                    let f = *s.held.keys().nth(pick % s.held.len()).unwrap();
                    s.free(f);
                }
                _ => {
                    let algo = if pick % 2 == 0 { Algorithm::Avl } else { Algorithm::Buddy };
                    s.c.pagers[p].set_algorithm(algo).unwrap();
                    s.step_check();
                }
            }
        }
        let held: Vec<usize> = s.held.keys().copied().collect();
        for f in held {
            s.free(f);
        }
        prop_assert!(s.c.ledger.loans().is_empty());
        for (i, p) in s.c.pagers.iter().enumerate() {
            prop_assert_eq!(p.alloc.owned_ranges(), &[parts[i]]);
        }
    }
}

/// `T` threads, each with its own pager, sharing the ledger behind a lock of kind `L`; two
/// pagers that trade are locked in index order ([`lock_two`]). Thread `i` uses CPU id `i`.
fn threads_share_a_ledger<L: PagerLock, const T: usize>() {
    // SAFETY: `NoLock` is instantiated with one thread only (see the tests below), so no two
    // critical sections overlap; the checks after the scope run after that thread was joined.
    let make = || unsafe { L::make() };
    let pagers: [LockedPager<L, 64, 4>; T] = std::array::from_fn(|i| {
        let mut p = Small::new(
            i,
            i % 2,
            if i % 2 == 0 {
                Algorithm::Avl
            } else {
                Algorithm::Buddy
            },
        );
        p.alloc.add_range(FrameRange::new(i * 1000, 100)).unwrap();
        Mutex::new(make(), p)
    });
    let ledger: LockedLedger<L, 64> = Mutex::new(make(), Ledger::new());
    std::thread::scope(|s| {
        for me in 0..T {
            let (pagers, ledger) = (&pagers, &ledger);
            s.spawn(move || {
                let mut held = Vec::new();
                for round in 0..200 {
                    // Thread 0 wants much more than its share; the others little.
                    let want = if me == 0 {
                        3
                    } else {
                        usize::from(round % 3 == 0)
                    };
                    for _ in 0..want {
                        let got = pagers[me].lock(me).alloc.alloc();
                        match got {
                            Ok(f) => held.push(f),
                            Err(_) if T > 1 => {
                                let donor = (me + 1 + round) % T;
                                let donor = if donor == me { (donor + 1) % T } else { donor };
                                let (mut lender, mut borrower) = lock_two(pagers, donor, me, me);
                                let _ =
                                    donate(&mut lender, &mut borrower, &mut ledger.lock(me), 10);
                            }
                            Err(_) => {}
                        }
                    }
                    if held.len() > 120 || (me != 0 && held.len() > 5) {
                        let f = held.remove(0);
                        pagers[me].lock(me).alloc.free(f).unwrap();
                    }
                }
                for f in held {
                    pagers[me].lock(me).alloc.free(f).unwrap();
                }
            });
        }
    });
    // Everything freed: all loans go home. A borrower may have lent borrowed memory on, so
    // repeat until a pass returns nothing.
    let mut progress = true;
    while progress {
        progress = false;
        for me in 0..T {
            for other in (0..T).filter(|&o| o != me) {
                let (mut borrower, mut lender) = lock_two(&pagers, me, other, 0);
                let mut ledger = ledger.lock(0);
                progress |= return_loans(&mut borrower, &mut lender, &mut ledger, 0).unwrap() > 0;
            }
        }
    }
    assert!(ledger.lock(0).loans().is_empty());
    for (i, p) in pagers.iter().enumerate() {
        let p = p.lock(0);
        p.alloc.check().unwrap();
        assert_eq!(p.alloc.owned_ranges(), &[FrameRange::new(i * 1000, 100)]);
        assert_eq!(p.alloc.free_count(), 100);
    }
}

/// One test per lock of `kernel-locks`, each running [`threads_share_a_ledger`].
macro_rules! share_a_ledger_under {
    ($($name:ident: $lock:ty, $threads:expr;)*) => {
        $(
            #[test]
            fn $name() {
                threads_share_a_ledger::<$lock, $threads>();
            }
        )*
    };
}

share_a_ledger_under! {
    threads_share_a_ledger_clh: ClhLock<4>, 4;
    threads_share_a_ledger_ticket: TicketLock, 4;
    threads_share_a_ledger_brlock: BrLock<4>, 4;
    threads_share_a_ledger_rtm: RtmLock<ClhLock<4>, 4>, 4;
    // No exclusion: one thread, whose pager does not trade.
    threads_share_a_ledger_none: NoLock, 1;
}
