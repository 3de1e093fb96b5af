//! Single-producer single-consumer rings of fixed-size frame slots, and a doorbell, for
//! passing network frames between threads on different cores through shared memory: the
//! kernel is not on the data path, only on the wake-up path when the other side sleeps.
//!
//! The network server (`servers::net`) gives every core's TCP/IP stack two rings: received
//! frames from the NIC driver on core 0, and frames to send back to it. A slot holds one
//! frame, so the stack's TCP/IP code reads and writes it in place (no copy between the ring
//! and the stack); the driver copies between the ring and the device's DMA buffers.
//!
//! # Protocol and memory ordering
//! `head` counts the frames published (written only by the producer), `tail` the frames taken
//! (written only by the consumer); both run freely and wrap, the slot of frame `i` is
//! `i mod N` (`N` a power of two), and the ring is full when `head - tail == N`.
//! - The producer writes the slot (bytes and length), then stores `head + 1` with `Release`.
//!   The consumer loads `head` with `Acquire` before it reads the slot, so it sees the bytes.
//! - The consumer reads the slot, then stores `tail + 1` with `Release`. The producer loads
//!   `tail` with `Acquire` before it reuses the slot, so the consumer's reads are done.
//!
//! On ARMv7 (which QEMU on x86 does not reorder like a real Cortex-A9 would) `Release` is a
//! `dmb ish` before the store and `Acquire` one after the load: the slot writes cannot pass
//! the `head` store, and the slot reads cannot move before the `head` load. On x86_64 both are
//! plain moves (TSO). The loom models (`tests/loom_ring.rs`) check the protocol under the C++
//! memory model, which allows at least the reorderings ARMv7 does.
//!
//! # The doorbell
//! [`Doorbell`] lets the consumer sleep (in the kernel) when its ring is empty without missing
//! a frame published as it falls asleep: a Dekker-style handshake with a sequentially
//! consistent fence on each side, so that either the consumer sees the frame or the producer
//! sees that the consumer sleeps (and wakes it). See its docs.

#![no_std]

mod shim;

use core::ptr::addr_of_mut;

use shim::{fence, AtomicU32, Ordering, UnsafeCell};

/// One cache line (two on x86_64, whose adjacent-line prefetcher pulls lines in pairs) for a
/// counter, so that the producer's `head` and the consumer's `tail` never share one. A
/// private wrapper rather than a padding crate: it is one field type, never dereferenced.
#[repr(C, align(128))]
struct Line<T>(T);

/// A slot: a frame of up to `SIZE` bytes.
#[repr(C)]
struct Slot<const SIZE: usize> {
    len: UnsafeCell<u32>,
    data: UnsafeCell<[u8; SIZE]>,
}

/// A ring of `N` slots of `SIZE` bytes (`N` a power of two, at most 2^31).
///
/// Use it through one [`Producer`] and one [`Consumer`], on any two threads. It can live in
/// memory shared by several address spaces: it holds no pointers.
#[repr(C)]
pub struct FrameRing<const N: usize, const SIZE: usize> {
    head: Line<AtomicU32>,
    tail: Line<AtomicU32>,
    slots: [Slot<SIZE>; N],
}

// SAFETY: the slots are the only non-`Sync` parts. A slot is written only by the one producer
// while it is not published (`head` not yet past it) and read only by the one consumer while
// it is published and not yet taken (`tail` not yet past it); the Release/Acquire pairs on
// `head` and `tail` order those accesses (module docs). `producer` and `consumer` are unsafe
// and require their uniqueness.
unsafe impl<const N: usize, const SIZE: usize> Sync for FrameRing<N, SIZE> {}

impl<const N: usize, const SIZE: usize> FrameRing<N, SIZE> {
    const VALID: () = assert!(
        N > 0 && N.is_power_of_two() && N <= 1 << 31 && SIZE <= u32::MAX as usize,
        "a FrameRing needs a power-of-two slot count of at most 2^31 and slots below 4 GiB"
    );

    /// The number of slots.
    pub const CAPACITY: usize = N;
    /// The largest frame a slot holds.
    pub const FRAME_SIZE: usize = SIZE;

    /// An empty ring. It is as large as its slots (`N * SIZE` bytes and a little): for a large
    /// ring in memory of one's own, use [`init`](Self::init) instead, which does not build it
    /// on the stack first.
    pub fn new() -> Self {
        let () = Self::VALID;
        FrameRing {
            head: Line(AtomicU32::new(0)),
            tail: Line(AtomicU32::new(0)),
            slots: core::array::from_fn(|_| Slot {
                len: UnsafeCell::new(0),
                data: UnsafeCell::new([0; SIZE]),
            }),
        }
    }

    /// Makes an empty ring at `ring`, in place (counters zero, slots zeroed).
    ///
    /// # Safety
    /// `ring` is valid for writes of a `FrameRing<N, SIZE>` and aligned for it, and nothing
    /// else uses that memory while this runs.
    pub unsafe fn init(ring: *mut Self) {
        let () = Self::VALID;
        #[cfg(frame_ring_loom)]
        // SAFETY: the caller's promise; loom's cells cannot be written field by field.
        unsafe {
            ring.write(Self::new())
        };
        #[cfg(not(frame_ring_loom))]
        // SAFETY: every field written lies inside `*ring`, which the caller lets us write; the
        // slot bytes are written through `u8` pointers (`UnsafeCell` is `repr(transparent)`
        // over the array), so nothing is read before it is initialised.
        unsafe {
            addr_of_mut!((*ring).head).write(Line(AtomicU32::new(0)));
            addr_of_mut!((*ring).tail).write(Line(AtomicU32::new(0)));
            let slots = addr_of_mut!((*ring).slots).cast::<Slot<SIZE>>();
            for i in 0..N {
                let slot = slots.add(i);
                addr_of_mut!((*slot).len).write(UnsafeCell::new(0));
                addr_of_mut!((*slot).data).cast::<u8>().write_bytes(0, SIZE);
            }
        }
    }

    /// Frames published and not yet taken, as seen now by any thread (the producer's
    /// [`Producer::free`] and the consumer's [`Consumer::len`] are lower bounds from cached
    /// counters; this loads both).
    pub fn len(&self) -> usize {
        let tail = self.tail.0.load(Ordering::Acquire);
        let head = self.head.0.load(Ordering::Acquire);
        head.wrapping_sub(tail) as usize
    }

    /// Whether no frame is waiting, as seen now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The producer's handle.
    ///
    /// # Safety
    /// No other [`Producer`] of this ring is used from now until this one is dropped.
    pub unsafe fn producer(&self) -> Producer<'_, N, SIZE> {
        Producer {
            ring: self,
            head: self.head.0.load(Ordering::Relaxed),
            tail: self.tail.0.load(Ordering::Acquire),
        }
    }

    /// The consumer's handle.
    ///
    /// # Safety
    /// No other [`Consumer`] of this ring is used from now until this one is dropped.
    pub unsafe fn consumer(&self) -> Consumer<'_, N, SIZE> {
        Consumer {
            ring: self,
            tail: self.tail.0.load(Ordering::Relaxed),
            head: self.head.0.load(Ordering::Acquire),
        }
    }

    fn slot(&self, index: u32) -> &Slot<SIZE> {
        &self.slots[index as usize & (N - 1)]
    }
}

impl<const N: usize, const SIZE: usize> Default for FrameRing<N, SIZE> {
    fn default() -> Self {
        Self::new()
    }
}

/// The one writer of a ring.
pub struct Producer<'a, const N: usize, const SIZE: usize> {
    ring: &'a FrameRing<N, SIZE>,
    /// Our own count of published frames (the ring's `head`).
    head: u32,
    /// The consumer's count as last loaded.
    tail: u32,
}

impl<const N: usize, const SIZE: usize> Producer<'_, N, SIZE> {
    /// Free slots: at least this many. The consumer only adds to them, and the producer
    /// reloads the consumer's count only when its cached one says the ring is full, so a pop
    /// shows here once the ring looked full ([`push`](Self::push) and
    /// [`is_full`](Self::is_full) are exact: they reload then).
    pub fn free(&mut self) -> usize {
        if self.head.wrapping_sub(self.tail) as usize == N {
            self.tail = self.ring.tail.0.load(Ordering::Acquire);
        }
        N - self.head.wrapping_sub(self.tail) as usize
    }

    /// Whether every slot is taken.
    pub fn is_full(&mut self) -> bool {
        self.free() == 0
    }

    /// Publishes one frame: `fill` gets the next free slot's `SIZE` bytes and returns how many
    /// it wrote (at most `SIZE`; more is cut to `SIZE`) and a result. `None`, without calling
    /// `fill`, when the ring is full.
    pub fn push<R>(&mut self, fill: impl FnOnce(&mut [u8; SIZE]) -> (usize, R)) -> Option<R> {
        if self.is_full() {
            return None;
        }
        let slot = self.ring.slot(self.head);
        // SAFETY: the slot is not published (`head` is not past it) and the consumer is done
        // with its previous frame (`tail`, loaded with Acquire in `free`, is past it), so only
        // we touch it (see the `Sync` impl).
        let (len, r) = slot.data.with_mut(|p| fill(unsafe { &mut *p }));
        // SAFETY: as above.
        slot.len.with_mut(|p| unsafe { *p = len.min(SIZE) as u32 });
        self.head = self.head.wrapping_add(1);
        self.ring.head.0.store(self.head, Ordering::Release);
        Some(r)
    }
}

/// The one reader of a ring.
pub struct Consumer<'a, const N: usize, const SIZE: usize> {
    ring: &'a FrameRing<N, SIZE>,
    /// Our own count of taken frames (the ring's `tail`).
    tail: u32,
    /// The producer's count as last loaded.
    head: u32,
}

impl<const N: usize, const SIZE: usize> Consumer<'_, N, SIZE> {
    /// Frames waiting: at least this many. The producer only adds to them, and the consumer
    /// reloads the producer's count only when its cached one says the ring is empty
    /// ([`pop`](Self::pop) and [`is_empty`](Self::is_empty) are exact: they reload then).
    pub fn len(&mut self) -> usize {
        if self.head == self.tail {
            self.head = self.ring.head.0.load(Ordering::Acquire);
        }
        self.head.wrapping_sub(self.tail) as usize
    }

    /// Whether no frame is waiting.
    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }

    /// Takes the oldest frame: `read` gets its bytes, and the slot is free again once it
    /// returns. `None`, without calling `read`, when the ring is empty.
    pub fn pop<R>(&mut self, read: impl FnOnce(&[u8]) -> R) -> Option<R> {
        if self.is_empty() {
            return None;
        }
        let slot = self.ring.slot(self.tail);
        // SAFETY: the slot is published (`head`, loaded with Acquire in `len`, is past it) and
        // not yet taken, so the producer does not touch it (see the `Sync` impl).
        let len = slot.len.with(|p| unsafe { *p }) as usize;
        // SAFETY: as above; `len` is cut to the slot, whatever was stored.
        let r = slot.data.with(|p| read(unsafe { &(&*p)[..len.min(SIZE)] }));
        self.tail = self.tail.wrapping_add(1);
        self.ring.tail.0.store(self.tail, Ordering::Release);
        Some(r)
    }
}

/// Whether a consumer sleeps, so that a producer knows when to wake it (a kernel call: a
/// notification, a futex) and never does otherwise.
///
/// The consumer, finding nothing to do, calls [`prepare_sleep`](Self::prepare_sleep), checks
/// its rings once more and only then sleeps (or calls [`awake`](Self::awake) and goes on if
/// something came). The producer, after publishing, asks [`needs_wake`](Self::needs_wake).
///
/// Why no wake-up is lost: the consumer's `asleep = 1` store and its check of the ring (a
/// load of `head`) are separated by a `SeqCst` fence, as are the producer's `head` store and
/// its load of `asleep`. With the two fences in the single total order of `SeqCst` fences,
/// whichever comes second sees the other side's store: the consumer sees the frame, or the
/// producer sees `asleep` and wakes it (or both: one wake-up too many, which the kernel's
/// notification absorbs). On ARMv7 each fence is a `dmb ish`; on x86_64 an `mfence`. The
/// model `tests/loom_ring.rs` checks this, and fails without the fences.
#[derive(Debug)]
pub struct Doorbell {
    asleep: AtomicU32,
}

impl Doorbell {
    /// A doorbell whose consumer is awake.
    #[cfg(not(frame_ring_loom))]
    pub const fn new() -> Self {
        Doorbell {
            asleep: AtomicU32::new(0),
        }
    }

    /// A doorbell whose consumer is awake.
    #[cfg(frame_ring_loom)]
    pub fn new() -> Self {
        Doorbell {
            asleep: AtomicU32::new(0),
        }
    }

    /// The consumer: about to sleep. Check for work once more after this, then sleep.
    pub fn prepare_sleep(&self) {
        self.asleep.store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// The consumer: awake again (it found work after [`prepare_sleep`](Self::prepare_sleep),
    /// or it was woken).
    pub fn awake(&self) {
        self.asleep.store(0, Ordering::Relaxed);
    }

    /// The producer, after publishing: whether the consumer may be asleep and must be woken.
    /// Answers `true` once per sleep (it clears the mark), so a burst of frames costs one
    /// wake-up.
    pub fn needs_wake(&self) -> bool {
        fence(Ordering::SeqCst);
        self.asleep.load(Ordering::Relaxed) != 0 && self.asleep.swap(0, Ordering::Relaxed) != 0
    }
}

impl Default for Doorbell {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(frame_ring_loom)))]
mod tests {
    use super::*;

    extern crate std;
    use std::boxed::Box;
    use std::vec::Vec;

    fn push_bytes<const N: usize, const S: usize>(p: &mut Producer<'_, N, S>, b: &[u8]) -> bool {
        p.push(|slot| {
            slot[..b.len()].copy_from_slice(b);
            (b.len(), ())
        })
        .is_some()
    }

    #[test]
    fn frames_come_out_in_order_and_whole_across_the_wrap() {
        let ring = FrameRing::<4, 16>::new();
        // SAFETY: the only handles of this ring.
        let (mut p, mut c) = unsafe { (ring.producer(), ring.consumer()) };
        let mut seen = Vec::new();
        for i in 0u8..40 {
            assert!(push_bytes(&mut p, &[i; 3][..usize::from(i % 3) + 1]));
            if i % 3 == 2 {
                while let Some(f) = c.pop(|f| f.to_vec()) {
                    seen.push(f);
                }
            }
        }
        while let Some(f) = c.pop(|f| f.to_vec()) {
            seen.push(f);
        }
        assert_eq!(seen.len(), 40);
        for (i, f) in seen.iter().enumerate() {
            assert_eq!(f, &[i as u8; 3][..i % 3 + 1]);
        }
        assert!(ring.is_empty());
    }

    /// Found by the `frame_ring` fuzz target: the docs called the producer's free count
    /// exact, but a pop shows in it only once the ring looked full.
    #[test]
    fn free_and_len_are_lower_bounds_until_full_or_empty() {
        let ring = FrameRing::<2, 8>::new();
        // SAFETY: the only handles of this ring.
        let (mut p, mut c) = unsafe { (ring.producer(), ring.consumer()) };
        assert_eq!(p.push(|_| (1, ())), Some(()));
        assert_eq!(c.pop(|b| b.len()), Some(1));
        // The consumer took the frame; the producer's cached count has not seen it.
        assert_eq!(p.free(), 1);
        assert_eq!(ring.len(), 0);
        assert_eq!(p.push(|_| (1, ())), Some(()));
        // Full by the cache: `free` reloads and sees the slot the pop gave back.
        assert_eq!(p.free(), 1);
        assert!(!p.is_full());
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn a_full_ring_refuses_without_calling_fill_and_takes_again_after_a_pop() {
        let ring = FrameRing::<2, 8>::new();
        // SAFETY: the only handles of this ring.
        let (mut p, mut c) = unsafe { (ring.producer(), ring.consumer()) };
        assert!(push_bytes(&mut p, b"a"));
        assert!(push_bytes(&mut p, b"b"));
        assert!(p.is_full());
        assert_eq!(
            p.push(|_| -> (usize, ()) { panic!("called on a full ring") }),
            None
        );
        assert_eq!(ring.len(), 2);
        assert_eq!(c.pop(|f| f.to_vec()), Some(b"a".to_vec()));
        assert_eq!(p.free(), 1);
        assert!(push_bytes(&mut p, b"c"));
        assert_eq!(c.pop(|f| f.to_vec()), Some(b"b".to_vec()));
        assert_eq!(c.pop(|f| f.to_vec()), Some(b"c".to_vec()));
        assert_eq!(c.pop(|_| -> () { panic!("called on an empty ring") }), None);
    }

    #[test]
    fn an_overlong_length_is_cut_to_the_slot() {
        let ring = FrameRing::<2, 8>::new();
        // SAFETY: the only handles of this ring.
        let (mut p, mut c) = unsafe { (ring.producer(), ring.consumer()) };
        p.push(|s| {
            s.fill(7);
            (1000, ())
        });
        assert_eq!(c.pop(|f| f.len()), Some(8));
    }

    #[test]
    fn init_in_place_makes_an_empty_ring_out_of_any_bytes() {
        let mut mem = Box::new(core::mem::MaybeUninit::<FrameRing<8, 64>>::uninit());
        // SAFETY: scribble over the memory first, as a reused page would be.
        unsafe {
            mem.as_mut_ptr()
                .cast::<u8>()
                .write_bytes(0xA5, size_of::<FrameRing<8, 64>>())
        };
        // SAFETY: the box's memory is ours, aligned and writable.
        unsafe { FrameRing::init(mem.as_mut_ptr()) };
        // SAFETY: `init` initialised every field.
        let ring = unsafe { mem.assume_init_ref() };
        assert!(ring.is_empty());
        // SAFETY: the only handles of this ring.
        let (mut p, mut c) = unsafe { (ring.producer(), ring.consumer()) };
        assert_eq!(p.free(), 8);
        assert!(push_bytes(&mut p, b"frame"));
        assert_eq!(c.pop(|f| f.to_vec()), Some(b"frame".to_vec()));
    }

    #[test]
    fn handles_made_later_continue_where_the_ring_is() {
        let ring = FrameRing::<4, 8>::new();
        {
            // SAFETY: the only producer while it lives.
            let mut p = unsafe { ring.producer() };
            assert!(push_bytes(&mut p, b"x"));
        }
        // SAFETY: the only handles from here on.
        let (mut p, mut c) = unsafe { (ring.producer(), ring.consumer()) };
        assert_eq!(p.free(), 3);
        assert_eq!(c.pop(|f| f.to_vec()), Some(b"x".to_vec()));
    }

    #[test]
    fn the_doorbell_rings_once_per_sleep() {
        let bell = Doorbell::new();
        assert!(!bell.needs_wake(), "an awake consumer needs no wake-up");
        bell.prepare_sleep();
        assert!(bell.needs_wake());
        assert!(!bell.needs_wake(), "one wake-up per sleep");
        bell.prepare_sleep();
        bell.awake();
        assert!(!bell.needs_wake());
    }
}
