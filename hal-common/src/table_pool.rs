//! The page-table pool: frames for user page tables, reserved at boot and recycled.
//!
//! A frame that held a page table cannot be reused the moment its last entry is removed:
//! another core's TLB (or its table walker's cache of intermediate entries) may still point
//! into it until that core's shoot-down completed. So an emptied table is *retired* on the
//! list of the core that unlinked it, and returns to the free list only when the kernel says
//! that core's shoot-down is done ([`TablePool::reclaim`]). Free and retired frames are linked
//! through their first word, so the pool needs no memory of its own besides a few counters.
//!
//! Both page-table formats (x86-64's four levels, ARMv7's short descriptors) draw their
//! second-level tables from here; the architecture only says how to reach a frame
//! ([`FrameWindow`]: a physical window on x86, identity on ARMv7).

use core::marker::PhantomData;

use kernel::PhysAddr;
use spin::mutex::SpinMutex;

use crate::console::IrqMask;

/// Size of a page-table frame.
pub const FRAME_SIZE: usize = kernel::config::PAGE_SIZE;

/// How the kernel reaches a physical frame.
pub trait FrameWindow {
    /// The kernel address of the frame at `phys` (FRAME_SIZE bytes, writable).
    fn frame_ptr(phys: PhysAddr) -> *mut u8;
}

/// The end of a list.
const NONE: PhysAddr = PhysAddr::MAX;

struct Inner<const CPUS: usize> {
    /// The part of the reserved range never handed out yet: `[next, end)`.
    next: PhysAddr,
    end: PhysAddr,
    /// Head of the free list.
    free: PhysAddr,
    n_free: usize,
    total: usize,
    /// Heads of the per-core retired lists.
    retired: [PhysAddr; CPUS],
    n_retired: [usize; CPUS],
}

/// A pool of page-table frames for `CPUS` cores.
pub struct TablePool<W, I, const CPUS: usize> {
    inner: SpinMutex<Inner<CPUS>>,
    _arch: PhantomData<fn() -> (W, I)>,
}

impl<W: FrameWindow, I: IrqMask, const CPUS: usize> TablePool<W, I, CPUS> {
    /// An empty pool.
    pub const fn new() -> Self {
        Self {
            inner: SpinMutex::new(Inner {
                next: 0,
                end: 0,
                free: NONE,
                n_free: 0,
                total: 0,
                retired: [NONE; CPUS],
                n_retired: [0; CPUS],
            }),
            _arch: PhantomData,
        }
    }

    /// Gives the pool the frames `[start, end)` (frame aligned, RAM the kernel reaches through
    /// [`FrameWindow`] and nothing else uses). Once, at boot.
    pub fn reserve(&self, start: PhysAddr, end: PhysAddr) {
        let start = start.next_multiple_of(FRAME_SIZE as u64);
        let end = end.max(start) & !(FRAME_SIZE as u64 - 1);
        let frames = ((end - start) / FRAME_SIZE as u64) as usize;
        I::without_interrupts(|| {
            let mut p = self.inner.lock();
            assert!(p.total == 0, "table pool reserved twice");
            p.next = start;
            p.end = end;
            p.n_free = frames;
            p.total = frames;
        });
    }

    fn link(f: PhysAddr) -> *mut PhysAddr {
        W::frame_ptr(f).cast()
    }

    /// A zeroed frame (`None`: the pool is exhausted).
    pub fn alloc(&self) -> Option<PhysAddr> {
        let f = I::without_interrupts(|| {
            let mut p = self.inner.lock();
            let f = if p.free != NONE {
                let f = p.free;
                // SAFETY: a free-list frame holds the next link in its first word.
                p.free = unsafe { Self::link(f).read_volatile() };
                f
            } else if p.next < p.end {
                let f = p.next;
                p.next += FRAME_SIZE as u64;
                f
            } else {
                return None;
            };
            p.n_free -= 1;
            Some(f)
        })?;
        // SAFETY: the frame was just taken from the pool; nobody else has it.
        unsafe { core::ptr::write_bytes(W::frame_ptr(f), 0, FRAME_SIZE) };
        Some(f)
    }

    /// Puts a table frame that no entry points at any more on core `cpu`'s retired list.
    pub fn retire(&self, cpu: usize, f: PhysAddr) {
        let cpu = cpu.min(CPUS - 1);
        I::without_interrupts(|| {
            let mut p = self.inner.lock();
            // SAFETY: `f` is a table frame of this pool that nothing points at (the caller
            // unlinked it); its first word links the list.
            unsafe { Self::link(f).write_volatile(p.retired[cpu]) };
            p.retired[cpu] = f;
            p.n_retired[cpu] += 1;
        });
    }

    /// Returns core `cpu`'s retired frames to the free list (its TLB shoot-down completed).
    pub fn reclaim(&self, cpu: usize) {
        let cpu = cpu.min(CPUS - 1);
        I::without_interrupts(|| {
            let mut p = self.inner.lock();
            while p.retired[cpu] != NONE {
                let f = p.retired[cpu];
                // SAFETY: retired frames link through their first word.
                p.retired[cpu] = unsafe { Self::link(f).read_volatile() };
                // SAFETY: as above; the frame now goes on the free list.
                unsafe { Self::link(f).write_volatile(p.free) };
                p.free = f;
                p.n_free += 1;
            }
            p.n_retired[cpu] = 0;
        });
    }

    /// `(free, total)` frames. Retired frames count as neither free nor lost: they are in use
    /// until their core reclaims them.
    pub fn counts(&self) -> (usize, usize) {
        I::without_interrupts(|| {
            let p = self.inner.lock();
            (p.n_free, p.total)
        })
    }

    /// Frames retired on core `cpu` and not reclaimed yet.
    pub fn retired(&self, cpu: usize) -> usize {
        I::without_interrupts(|| self.inner.lock().n_retired[cpu.min(CPUS - 1)])
    }
}

impl<W: FrameWindow, I: IrqMask, const CPUS: usize> Default for TablePool<W, I, CPUS> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Identity: "physical" addresses are host addresses of a leaked buffer.
    struct Identity;
    impl FrameWindow for Identity {
        fn frame_ptr(phys: PhysAddr) -> *mut u8 {
            phys as usize as *mut u8
        }
    }
    struct NoIrq;
    impl IrqMask for NoIrq {
        fn without_interrupts<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
    }

    type Pool = TablePool<Identity, NoIrq, 2>;

    /// A pool over `frames` frames of host memory.
    fn pool(frames: usize) -> (Pool, PhysAddr, PhysAddr) {
        let mem = vec![0xA5u8; (frames + 1) * FRAME_SIZE].leak();
        let start = (mem.as_mut_ptr() as u64).next_multiple_of(FRAME_SIZE as u64);
        let end = start + (frames * FRAME_SIZE) as u64;
        let p = Pool::new();
        p.reserve(start, end);
        (p, start, end)
    }

    #[test]
    fn frames_are_distinct_zeroed_and_in_range_until_exhausted() {
        let (p, start, end) = pool(8);
        assert_eq!(p.counts(), (8, 8));
        let mut seen = HashSet::new();
        while let Some(f) = p.alloc() {
            assert!(f >= start && f < end && f % FRAME_SIZE as u64 == 0);
            assert!(seen.insert(f), "frame {f:#x} handed out twice");
            // SAFETY: a frame of the test's buffer, just allocated.
            let bytes = unsafe { core::slice::from_raw_parts(f as *const u8, FRAME_SIZE) };
            assert!(bytes.iter().all(|&b| b == 0), "not zeroed");
        }
        assert_eq!(seen.len(), 8);
        assert_eq!(p.counts(), (0, 8));
    }

    #[test]
    fn retired_frames_come_back_only_after_their_core_reclaims() {
        let (p, ..) = pool(2);
        let a = p.alloc().unwrap();
        let b = p.alloc().unwrap();
        p.retire(1, a);
        p.retire(0, b);
        assert_eq!(p.alloc(), None, "retired frames are not free yet");
        assert_eq!((p.retired(0), p.retired(1)), (1, 1));
        p.reclaim(0);
        assert_eq!(p.alloc(), Some(b));
        assert_eq!(p.alloc(), None, "core 1 has not reclaimed");
        p.reclaim(1);
        assert_eq!(p.counts(), (1, 2));
        assert_eq!(p.alloc(), Some(a));
    }

    #[test]
    fn many_cycles_leak_nothing() {
        let (p, ..) = pool(16);
        for round in 0..10_000usize {
            let got: Vec<_> = (0..1 + round % 16).map(|_| p.alloc().unwrap()).collect();
            for (i, f) in got.into_iter().enumerate() {
                p.retire(i % 2, f);
            }
            p.reclaim(0);
            p.reclaim(1);
            assert_eq!(p.counts(), (16, 16));
        }
    }
}
