//! Allocator invariants for both algorithms, step by step against a model (a `BTreeSet` of free
//! frames and one of owned frames), with fixed scenarios and proptest sequences.

use std::collections::BTreeSet;

use pager::{AllocError, AvlAllocator, BuddyAllocator, FrameAllocator, FrameRange};
use proptest::prelude::*;

type Avl = AvlAllocator<128>;
type Buddy = BuddyAllocator<256, 4>;

/// The allocator under test and the model it must agree with.
struct Checked<A> {
    a: A,
    free: BTreeSet<usize>,
    owned: BTreeSet<usize>,
}

impl<A: FrameAllocator> Checked<A> {
    fn new(a: A) -> Self {
        Self {
            a,
            free: BTreeSet::new(),
            owned: BTreeSet::new(),
        }
    }

    fn allocated(&self) -> BTreeSet<usize> {
        self.owned.difference(&self.free).copied().collect()
    }

    /// Everything the allocator reports matches the model, and its own invariants hold.
    fn verify(&self) {
        self.a.check().unwrap();
        assert_eq!(self.a.free_count(), self.free.len());
        let mut free = BTreeSet::new();
        self.a.for_each_free(&mut |r| {
            for f in r.start..r.end() {
                assert!(free.insert(f), "frame {f} reported free twice");
            }
        });
        assert_eq!(free, self.free, "free sets differ");
        let owned: BTreeSet<usize> = self
            .a
            .owned_ranges()
            .iter()
            .flat_map(|r| r.start..r.end())
            .collect();
        assert_eq!(owned, self.owned, "owned sets differ");
        for f in self.owned.iter().take(200) {
            assert_eq!(self.a.is_free(*f), self.free.contains(f));
        }
    }

    fn add(&mut self, r: FrameRange) -> Result<(), AllocError> {
        let res = self.a.add_range(r);
        if res.is_ok() {
            for f in r.start..r.end() {
                assert!(self.owned.insert(f) && self.free.insert(f));
            }
        } else if res == Err(AllocError::AlreadyOwned) {
            assert!((r.start..r.end()).any(|f| self.owned.contains(&f)));
        }
        self.verify();
        res
    }

    fn alloc(&mut self, count: usize) -> Result<FrameRange, AllocError> {
        let res = self.a.alloc_contiguous(count);
        match res {
            Ok(r) => {
                assert_eq!(r.count, count);
                for f in r.start..r.end() {
                    assert!(self.free.remove(&f), "allocated frame {f} was not free");
                }
            }
            Err(AllocError::OutOfMemory) => assert!(self.free.is_empty()),
            Err(AllocError::NoContiguousRun) => assert!(count > 1 && !self.free.is_empty()),
            Err(AllocError::OutOfCapacity) => {}
            Err(AllocError::Invalid) => assert_eq!(count, 0),
            Err(e) => panic!("unexpected {e:?}"),
        }
        self.verify();
        res
    }

    fn free(&mut self, r: FrameRange) -> Result<(), AllocError> {
        let res = self.a.free_range(r);
        let frames = r.start..r.end();
        let expected = if !frames.clone().all(|f| self.owned.contains(&f)) {
            Err(AllocError::NotOwned)
        } else if frames.clone().any(|f| self.free.contains(&f)) {
            Err(AllocError::DoubleFree)
        } else {
            Ok(())
        };
        if res == Err(AllocError::OutOfCapacity) {
            assert!(expected.is_ok());
        } else {
            assert_eq!(res, expected);
        }
        if res.is_ok() {
            self.free.extend(frames);
        }
        self.verify();
        res
    }

    fn withdraw(&mut self, r: FrameRange) -> Result<(), AllocError> {
        let res = self.a.withdraw(r);
        let frames = r.start..r.end();
        if res.is_ok() {
            for f in frames {
                assert!(self.free.remove(&f) && self.owned.remove(&f));
            }
        } else if res == Err(AllocError::Busy) {
            assert!(frames.clone().any(|f| !self.free.contains(&f)));
        }
        self.verify();
        res
    }

    fn take(&mut self, max: usize) -> Result<FrameRange, AllocError> {
        let res = self.a.take_range(max);
        match res {
            Ok(r) => {
                assert!(r.count >= 1 && r.count <= max);
                for f in r.start..r.end() {
                    assert!(self.free.remove(&f) && self.owned.remove(&f));
                }
            }
            Err(AllocError::OutOfMemory) => assert!(self.free.is_empty()),
            Err(e) => assert_eq!(e, AllocError::OutOfCapacity),
        }
        self.verify();
        res
    }

    /// Frees everything still allocated: each maximal allocated run at once, or frame by frame
    /// when the run does not fit in the pool yet. A small pool may refuse a free that would
    /// leave an isolated extent for now; some free always makes progress, since the fully
    /// coalesced state fits in the pool.
    fn free_all(&mut self) {
        while !self.allocated().is_empty() {
            let mut progress = false;
            let held: Vec<usize> = self.allocated().into_iter().collect();
            let mut i = 0;
            while i < held.len() {
                let mut n = 1;
                while i + n < held.len()
                    && held[i + n] == held[i] + n
                    && self.owned.contains(&held[i + n])
                {
                    n += 1;
                }
                let run = FrameRange::new(held[i], n);
                match self.free(run) {
                    Ok(()) => progress = true,
                    Err(e) => {
                        assert_eq!(e, AllocError::OutOfCapacity);
                        for f in run.start..run.end() {
                            match self.free(FrameRange::new(f, 1)) {
                                Ok(()) => progress = true,
                                Err(e) => assert_eq!(e, AllocError::OutOfCapacity),
                            }
                        }
                    }
                }
                i += n;
            }
            assert!(
                progress,
                "no free possible with {} frames held",
                self.allocated().len()
            );
        }
    }
}

fn ranges() -> [FrameRange; 3] {
    [
        FrameRange::new(3, 50),
        FrameRange::new(96, 64),
        FrameRange::new(1000, 37),
    ]
}

/// Allocates everything one frame at a time, frees in a scattered order, and checks the free
/// set is fully coalesced again.
fn alloc_all_free_all<A: FrameAllocator>(a: A) -> Checked<A> {
    let mut c = Checked::new(a);
    for r in ranges() {
        c.add(r).unwrap();
    }
    let total = c.free.len();
    let mut got = Vec::new();
    for _ in 0..total {
        got.push(c.alloc(1).unwrap().start);
    }
    assert_eq!(c.alloc(1), Err(AllocError::OutOfMemory));
    // Every other frame first, then the rest: maximal fragmentation on the way.
    let (even, odd): (Vec<_>, Vec<_>) = got.iter().partition(|f| *f % 2 == 0);
    for f in even.into_iter().chain(odd) {
        c.free(FrameRange::new(f, 1)).unwrap();
    }
    assert_eq!(c.a.free_count(), total);
    c
}

#[test]
fn avl_coalesces_to_one_extent_per_range() {
    let c = alloc_all_free_all(Avl::new());
    let mut extents = Vec::new();
    c.a.for_each_free(&mut |r| extents.push(r));
    assert_eq!(extents, ranges());
    assert_eq!(c.a.extents(), 3);
}

#[test]
fn buddy_coalesces_to_maximal_blocks() {
    let c = alloc_all_free_all(Buddy::new());
    let mut blocks = Vec::new();
    c.a.for_each_free(&mut |r| blocks.push(r));
    blocks.sort();
    // The largest aligned blocks (at most order 4) tiling each range, worked out by hand:
    // [3, 53) = 3 | 4..8 | 8..16 | 16..32 | 32..48 | 48..52 | 52, [96, 160) = four of 16,
    // [1000, 1037) = 1000..1008 | 1008..1024 | 1024..1032 | 1032..1036 | 1036.
    let expected: Vec<FrameRange> = [
        (3, 1),
        (4, 4),
        (8, 8),
        (16, 16),
        (32, 16),
        (48, 4),
        (52, 1),
        (96, 16),
        (112, 16),
        (128, 16),
        (144, 16),
        (1000, 8),
        (1008, 16),
        (1024, 8),
        (1032, 4),
        (1036, 1),
    ]
    .into_iter()
    .map(|(s, n)| FrameRange::new(s, n))
    .collect();
    assert_eq!(blocks, expected);
    assert_eq!(c.a.blocks(4), 7);
}

#[test]
fn errors_for_double_free_and_foreign_frames() {
    fn run<A: FrameAllocator>(a: A) {
        let mut c = Checked::new(a);
        c.add(FrameRange::new(10, 8)).unwrap();
        assert_eq!(c.add(FrameRange::new(17, 2)), Err(AllocError::AlreadyOwned));
        assert_eq!(c.add(FrameRange::new(17, 0)), Err(AllocError::Invalid));
        let r = c.alloc(3).unwrap();
        assert_eq!(c.free(FrameRange::new(r.start, 1)), Ok(()));
        assert_eq!(
            c.free(FrameRange::new(r.start, 1)),
            Err(AllocError::DoubleFree)
        );
        assert_eq!(c.free(FrameRange::new(9, 1)), Err(AllocError::NotOwned));
        assert_eq!(
            c.free(FrameRange::new(r.end() - 1, 2)),
            Err(AllocError::DoubleFree)
        );
        assert_eq!(
            c.withdraw(FrameRange::new(r.start + 1, 1)),
            Err(AllocError::Busy)
        );
        assert_eq!(c.alloc(0), Err(AllocError::Invalid));
        assert_eq!(c.alloc(100), Err(AllocError::NoContiguousRun));
        c.free_all();
    }
    run(Avl::new());
    run(Buddy::new());
}

#[test]
fn avl_pool_exhaustion_is_an_error() {
    let mut c = Checked::new(AvlAllocator::<4>::new());
    for i in 0..4 {
        c.add(FrameRange::new(i * 10, 2)).unwrap();
    }
    assert_eq!(
        c.add(FrameRange::new(100, 1)),
        Err(AllocError::OutOfCapacity)
    );
    // Adjacent to an owned range: no node needed, so it still fits.
    c.add(FrameRange::new(2, 2)).unwrap();
    let mut c = Checked::new(AvlAllocator::<2>::new());
    c.add(FrameRange::new(0, 10)).unwrap();
    c.alloc(10).unwrap();
    c.free(FrameRange::new(1, 1)).unwrap();
    c.free(FrameRange::new(3, 1)).unwrap();
    // A third isolated extent needs a third node: refused, nothing lost.
    assert_eq!(
        c.free(FrameRange::new(5, 1)),
        Err(AllocError::OutOfCapacity)
    );
    c.free(FrameRange::new(2, 1)).unwrap();
    c.free(FrameRange::new(5, 1)).unwrap();
}

#[test]
fn buddy_pool_exhaustion_is_an_error() {
    let mut c = Checked::new(BuddyAllocator::<3, 4>::new());
    // [1, 16) needs 4 pieces.
    assert_eq!(
        c.add(FrameRange::new(1, 15)),
        Err(AllocError::OutOfCapacity)
    );
    c.add(FrameRange::new(0, 16)).unwrap();
    c.alloc(16).unwrap();
    c.free(FrameRange::new(0, 1)).unwrap();
    c.free(FrameRange::new(2, 1)).unwrap();
    c.free(FrameRange::new(4, 1)).unwrap();
    assert_eq!(
        c.free(FrameRange::new(6, 1)),
        Err(AllocError::OutOfCapacity)
    );
    // Frame 1 merges with its buddy 0: a free that merges fits in a full pool.
    c.free(FrameRange::new(1, 1)).unwrap();
    assert_eq!(
        c.free(FrameRange::new(6, 1)),
        Err(AllocError::OutOfCapacity)
    );
    // Frame 3 merges with 2, then with 0..2: two nodes now, so 6 fits.
    c.free(FrameRange::new(3, 1)).unwrap();
    assert_eq!(c.a.blocks(2), 1);
    c.free(FrameRange::new(6, 1)).unwrap();
    c.free_all();
    assert_eq!(c.a.blocks(4), 1);
}

#[test]
fn avl_stays_balanced_under_sequential_frees() {
    let mut c = Checked::new(AvlAllocator::<600>::new());
    c.add(FrameRange::new(0, 1024)).unwrap();
    c.alloc(1024).unwrap();
    // Every other frame: 512 isolated extents inserted in ascending order, the worst case for
    // an unbalanced tree.
    for f in (0..1024).step_by(2) {
        c.a.free(f).unwrap();
        c.free.insert(f);
    }
    c.verify();
    assert_eq!(c.a.extents(), 512);
    assert!(c.a.height() <= 13, "height {}", c.a.height());
    c.free_all();
    assert_eq!(c.a.extents(), 1);
}

#[test]
fn take_range_gives_up_free_memory_only() {
    fn run<A: FrameAllocator>(a: A) {
        let mut c = Checked::new(a);
        c.add(FrameRange::new(0, 40)).unwrap();
        let held = c.alloc(5).unwrap();
        let mut taken = 0;
        while let Ok(r) = c.take(7) {
            taken += r.count;
        }
        assert_eq!(taken, 35);
        assert_eq!(c.a.owned_count(), 5);
        c.free(held).unwrap();
    }
    run(Avl::new());
    run(Buddy::new());
}

#[derive(Clone, Debug)]
enum Op {
    Add(usize, usize),
    Alloc(usize),
    /// Free the `n`-th allocated frame (modulo), with `len` following frames.
    FreeHeld(usize, usize),
    /// Free an arbitrary frame range (often foreign or already free).
    FreeAny(usize, usize),
    Withdraw(usize, usize),
    Take(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (0usize..300, 1usize..40).prop_map(|(s, n)| Op::Add(s, n)),
        4 => (1usize..9).prop_map(Op::Alloc),
        4 => (any::<usize>(), 1usize..4).prop_map(|(i, n)| Op::FreeHeld(i, n)),
        1 => (0usize..340, 1usize..4).prop_map(|(s, n)| Op::FreeAny(s, n)),
        1 => (0usize..340, 1usize..6).prop_map(|(s, n)| Op::Withdraw(s, n)),
        1 => (1usize..20).prop_map(Op::Take),
    ]
}

fn run_ops<A: FrameAllocator>(a: A, ops: &[Op]) {
    let mut c = Checked::new(a);
    for op in ops {
        match *op {
            Op::Add(s, n) => drop(c.add(FrameRange::new(s, n))),
            Op::Alloc(n) => drop(c.alloc(n)),
            Op::FreeHeld(i, n) => {
                let held: Vec<_> = c.allocated().into_iter().collect();
                if !held.is_empty() {
                    let f = held[i % held.len()];
                    let n = (f..f + n).take_while(|x| c.allocated().contains(x)).count();
                    c.free(FrameRange::new(f, n)).unwrap_or_else(|e| {
                        assert_eq!(e, AllocError::OutOfCapacity);
                    });
                }
            }
            Op::FreeAny(s, n) => drop(c.free(FrameRange::new(s, n))),
            Op::Withdraw(s, n) => drop(c.withdraw(FrameRange::new(s, n))),
            Op::Take(n) => drop(c.take(n)),
        }
    }
    c.free_all();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn avl_matches_model(ops in prop::collection::vec(op(), 1..120)) {
        run_ops(AvlAllocator::<16>::new(), &ops);
    }

    #[test]
    fn buddy_matches_model(ops in prop::collection::vec(op(), 1..120)) {
        run_ops(BuddyAllocator::<48, 3>::new(), &ops);
    }
}
