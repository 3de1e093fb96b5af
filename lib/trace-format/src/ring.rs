//! A per-core ring buffer of trace records that records without a lock.
//!
//! Why: a lock on the recording path would itself serialise the cores whose serialisation we are
//! trying to measure (the thesis's shared log used an atomic offset, which still bounces one
//! cache line between all cores on every entry). Each core owns one [`Ring`]; only that core
//! calls [`Ring::record`], so the writer needs no read-modify-write at all: it announces the
//! record it begins, stores the record's words and then publishes the new count with a release
//! store. When the ring is full the oldest records are overwritten (the newest window is what a
//! dump after a benchmark wants).
//!
//! A slot is the record's 28 words in the file's layout ([`Record::put_words`]), stored one by
//! one as they are built from the record's fields: one plain store each on x86_64 and ARMv7.
//!
//! A reader on another core (the dump path, or a host thread in the hosted harness) takes a
//! consistent snapshot while the writer keeps going, seqlock style: it reads the count, copies
//! the slots, and after an acquire fence reads the begun count; a slot the writer may have begun
//! to overwrite in between is discarded and reported as lost. Everything is an atomic word, so
//! even a misuse (two writers on one ring) can lose or garble records but is never undefined
//! behaviour, and there is no `unsafe` here.
//!
//! The count is a `usize`; on 32-bit targets it wraps after 2^32 records, which at one record
//! per microsecond is over an hour of continuous tracing: reset the ring between runs.

use core::sync::atomic::{fence, AtomicU32, AtomicUsize, Ordering};

use crate::{Record, RECORD_WORDS as WORDS};

/// A single-writer ring of the last `N` [`Record`]s of one core.
pub struct Ring<const N: usize> {
    /// Records written since creation or the last [`Ring::reset`].
    head: AtomicUsize,
    /// Records begun: `head + 1` while the writer is storing a record, else `head`.
    begun: AtomicUsize,
    slots: [[AtomicU32; WORDS]; N],
}

/// What [`Ring::snapshot`] copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Records written into the output, oldest first.
    pub copied: usize,
    /// Records written to the ring but not copied (overwritten, or not fitting the output).
    pub lost: usize,
}

impl<const N: usize> Default for Ring<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Ring<N> {
    /// An empty ring (usable in a `static`).
    pub const fn new() -> Self {
        Ring {
            head: AtomicUsize::new(0),
            begun: AtomicUsize::new(0),
            slots: [const { [const { AtomicU32::new(0) }; WORDS] }; N],
        }
    }

    /// Appends `r`, overwriting the oldest record when full.
    ///
    /// Only the core that owns this ring may call it (one writer); readers may run concurrently.
    ///
    /// The record goes in as its words ([`Record::put_words`], built from whole fields), each
    /// stored as it is made: one plain store per word on x86_64 and ARMv7, no byte array in
    /// between and no copy of the record.
    pub fn record(&self, r: &Record) {
        let h = self.head.load(Ordering::Relaxed);
        self.begun.store(h.wrapping_add(1), Ordering::Relaxed);
        // Orders `begun` before the stores below, so that a reader that sees any of the new
        // words also sees a `begun` count that marks the slot stale.
        fence(Ordering::Release);
        let slot = &self.slots[h % N];
        r.put_words(|i, w| slot[i].store(w, Ordering::Relaxed));
        self.head.store(h.wrapping_add(1), Ordering::Release);
    }

    /// Loads slot `i mod N`'s words (relaxed; the callers check them against `begun`).
    fn load(&self, i: usize) -> [u32; WORDS] {
        let slot = &self.slots[i % N];
        core::array::from_fn(|k| slot[k].load(Ordering::Relaxed))
    }

    /// Records written so far (including overwritten ones).
    pub fn written(&self) -> usize {
        self.head.load(Ordering::Acquire)
    }

    /// Forgets all records. Only the owning core may call it, like [`Ring::record`].
    pub fn reset(&self) {
        self.begun.store(0, Ordering::Relaxed);
        self.head.store(0, Ordering::Release);
    }

    /// Copies the retained records, oldest first, into `out` without stopping the writer; when
    /// `out` is smaller than the ring, the newest records that fit.
    pub fn snapshot(&self, out: &mut [Record]) -> Snapshot {
        let h1 = self.head.load(Ordering::Acquire);
        let start = h1.saturating_sub(N.min(out.len()));
        for i in start..h1 {
            let words = self.load(i);
            // A record that does not decode was torn by an overwrite; if the count check below
            // does not already discard it (only a second writer could cause that) it is dropped.
            out[i - start] = Record::from_words(&words, i).unwrap_or(TORN);
        }
        // Orders the slot loads above before the second count load (pairs with the writer's
        // release fence): a slot holding any word of record i + N implies begun > i + N.
        fence(Ordering::Acquire);
        let begun = self.begun.load(Ordering::Relaxed);
        // Record i is intact if the writer had not begun record i + N: begun <= i + N.
        let valid_from = begun.saturating_sub(N).max(start);
        let mut copied = 0;
        for j in (valid_from - start)..(h1 - start) {
            if out[j] != TORN {
                out[copied] = out[j];
                copied += 1;
            }
        }
        Snapshot {
            copied,
            lost: h1 - copied,
        }
    }
}

impl<const N: usize> Ring<N> {
    /// Calls `f` with each retained record among the first `head` written (oldest first),
    /// without a buffer and without stopping the writer (the images' console dump, which has no
    /// room for a copy of the ring): each record is checked after it is copied, as
    /// [`Ring::snapshot`] checks them, and one the writer may have begun to overwrite is
    /// skipped and counted as lost. `head` (at most [`Ring::written`]) fixes the end, so that
    /// several rings can be cut at one moment and records written meanwhile are left out.
    pub fn visit(&self, head: usize, mut f: impl FnMut(&Record)) -> Snapshot {
        let h = head.min(self.written());
        let mut copied = 0;
        for i in h.saturating_sub(N)..h {
            let words = self.load(i);
            // Pairs with the writer's release fence, as in `snapshot`.
            fence(Ordering::Acquire);
            if self.begun.load(Ordering::Relaxed) > i.saturating_add(N) {
                continue;
            }
            if let Ok(r) = Record::from_words(&words, i) {
                f(&r);
                copied += 1;
            }
        }
        Snapshot {
            copied,
            lost: h - copied,
        }
    }
}

/// Marks a torn slot during [`Ring::snapshot`]; no decoded record has this many object locks.
const TORN: Record = Record {
    object_count: u8::MAX,
    ..Record::EMPTY
};

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64};
    use std::sync::Arc;

    /// A record whose fields all derive from `i`, so a torn mix of two records is detectable.
    fn rec(i: u64) -> Record {
        Record {
            entry: i * 1000,
            lock_requested: 1,
            lock_acquired: 2,
            lock_released: 3 + (i % 50) as u32,
            exit: 100,
            thread: i as u32,
            number: (i % 7) as u16,
            ..Record::EMPTY
        }
    }

    fn consistent(r: &Record) -> bool {
        let i = r.entry / 1000;
        *r == rec(i)
    }

    #[test]
    fn keeps_the_newest_n_in_order() {
        let ring: Ring<8> = Ring::new();
        let mut out = [Record::EMPTY; 8];
        assert_eq!(ring.snapshot(&mut out), Snapshot { copied: 0, lost: 0 });
        for i in 0..5 {
            ring.record(&rec(i));
        }
        assert_eq!(ring.snapshot(&mut out), Snapshot { copied: 5, lost: 0 });
        assert_eq!(out[..5], [rec(0), rec(1), rec(2), rec(3), rec(4)]);
        for i in 5..20 {
            ring.record(&rec(i));
        }
        assert_eq!(ring.written(), 20);
        assert_eq!(
            ring.snapshot(&mut out),
            Snapshot {
                copied: 8,
                lost: 12
            }
        );
        assert!(out.iter().zip(12..).all(|(r, i)| *r == rec(i)));
        let mut small = [Record::EMPTY; 3];
        assert_eq!(
            ring.snapshot(&mut small),
            Snapshot {
                copied: 3,
                lost: 17
            }
        );
        assert_eq!(small, [rec(17), rec(18), rec(19)]);
        ring.reset();
        assert_eq!(ring.snapshot(&mut out), Snapshot { copied: 0, lost: 0 });
    }

    #[test]
    fn visit_cuts_at_a_head_and_counts_the_overwritten() {
        let ring: Ring<8> = Ring::new();
        for i in 0..5 {
            ring.record(&rec(i));
        }
        let mut seen = std::vec::Vec::new();
        let s = ring.visit(3, |r| seen.push(*r));
        assert_eq!(s, Snapshot { copied: 3, lost: 0 });
        assert_eq!(seen, [rec(0), rec(1), rec(2)]);
        for i in 5..20 {
            ring.record(&rec(i));
        }
        seen.clear();
        let s = ring.visit(usize::MAX, |r| seen.push(*r));
        assert_eq!(
            s,
            Snapshot {
                copied: 8,
                lost: 12
            }
        );
        assert!(seen.iter().zip(12..).all(|(r, i)| *r == rec(i)));
    }

    /// Every field survives the ring (stored as words, read back by `snapshot` and `visit`):
    /// all object-lock slots, both flags, 64-bit timestamps.
    #[test]
    fn full_records_come_back_whole() {
        use crate::{
            EntryKind, ObjectLock, RtmOutcome, FLAG_CONTENDED, FLAG_OBJECTS_TRUNCATED, MAX_OBJECTS,
        };
        let full = |i: u32| Record {
            entry: 0xfedc_ba98_7654_0000 + u64::from(i),
            lock_requested: 3,
            lock_acquired: 0x40 + i,
            lock_released: 0x0100_0000,
            exit: 0xffff_fff0,
            thread: 0xa1b2_c3d4 ^ i,
            core: 0xfe01,
            number: 0x8002,
            kind: EntryKind::Fault,
            in_kernel: 0xc3,
            flags: FLAG_CONTENDED | FLAG_OBJECTS_TRUNCATED,
            rtm_outcome: RtmOutcome::FellBack,
            rtm_retries: 0xe7,
            rtm_abort_cause: 0x5a,
            object_count: MAX_OBJECTS as u8,
            objects: core::array::from_fn(|k| ObjectLock {
                id: 0x8765_4321 ^ (k as u32) << 28 ^ i,
                acquired: 0x80 + i + k as u32,
                wait: 0x7f,
            }),
        };
        let ring: Ring<4> = Ring::new();
        for i in 0..6 {
            ring.record(&full(i));
        }
        let mut out = [Record::EMPTY; 4];
        assert_eq!(ring.snapshot(&mut out), Snapshot { copied: 4, lost: 2 });
        assert_eq!(out, [full(2), full(3), full(4), full(5)]);
        let mut seen = std::vec::Vec::new();
        ring.visit(usize::MAX, |r| seen.push(*r));
        assert_eq!(seen, out);
    }

    /// A writer thread records without pause while a reader thread snapshots: every snapshot
    /// must be a run of consecutive, untorn records.
    ///
    /// Every 10,000 records the writer also waits for two snapshots to complete, so that some
    /// snapshots are sure to find records: a writer that stores whole words can write the 16
    /// slots over several times during one snapshot (which then rightly copies nothing), and
    /// without the pauses a fast writer could finish before any snapshot got a record through.
    #[test]
    fn concurrent_snapshots_are_consistent() {
        let ring: Arc<Ring<16>> = Arc::new(Ring::new());
        let done = Arc::new(AtomicBool::new(false));
        let snaps = Arc::new(AtomicU64::new(0));
        let writer = {
            let (ring, done, snaps) = (Arc::clone(&ring), Arc::clone(&done), Arc::clone(&snaps));
            std::thread::spawn(move || {
                for i in 0..200_000 {
                    ring.record(&rec(i));
                    if i % 10_000 == 9_999 {
                        let s = snaps.load(Ordering::Acquire);
                        while snaps.load(Ordering::Acquire) < s + 2 {
                            std::hint::spin_loop();
                        }
                    }
                }
                done.store(true, Ordering::Release);
            })
        };
        let mut out = [Record::EMPTY; 16];
        let mut snapshots = 0u64;
        let mut nonempty = 0u64;
        while !done.load(Ordering::Acquire) || snapshots == 0 {
            let s = ring.snapshot(&mut out);
            snapshots += 1;
            snaps.store(snapshots, Ordering::Release);
            let got = &out[..s.copied];
            assert!(got.iter().all(consistent), "torn record in {got:?}");
            assert!(
                got.windows(2).all(|w| w[1].entry == w[0].entry + 1000),
                "not consecutive"
            );
            if let Some(last) = got.last() {
                nonempty += 1;
                assert_eq!(s.copied + s.lost, (last.entry / 1000 + 1) as usize);
            }
        }
        writer.join().unwrap();
        let s = ring.snapshot(&mut out);
        assert_eq!(
            s,
            Snapshot {
                copied: 16,
                lost: 200_000 - 16
            }
        );
        assert_eq!(out[15], rec(199_999));
        // At least one snapshot per pause of the writer found records.
        assert!(
            nonempty >= 20,
            "{nonempty} of {snapshots} snapshots found records"
        );
    }
}
