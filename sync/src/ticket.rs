//! A FIFO ticket lock, with optional proportional back-off.
//!
//! # Algorithm
//! Two counters, as at a bakery counter: `next` is the next ticket to hand out, `serving` the
//! ticket now allowed in. To lock, a CPU takes a ticket (`my = next.fetch_add(1)`) and waits until
//! `serving == my`; to unlock, the holder advances `serving` to `my + 1`, which lets exactly the
//! next ticket holder in. CPUs enter in the order they took tickets (FIFO), so no CPU starves.
//! The lock needs no per-CPU state, so the [`CpuId`] is only validated (the `_prechecked`
//! variants leave that to their caller) and passed to the wait strategy while waiting.
//!
//! The lock is free exactly when `next == serving`; while some CPU holds it, `next - serving` is
//! the number of CPUs holding or waiting for it. Both counters wrap around (`usize` arithmetic
//! modulo 2^BITS), which is harmless as long as fewer than 2^BITS CPUs wait at once.
//!
//! # Layout: both counters on one cache line
//! This is the classic layout (Linux's ARM32 ticket spinlock keeps both halves in one word). The
//! alternative, `next` and `serving` on separate lines, would spare the waiters the invalidation
//! that every newcomer's `fetch_add` on `next` causes on the line they poll; but it costs an
//! uncontended lock-unlock pair two line misses instead of one, and makes
//! [`is_locked`](KernelLock::is_locked) read two lines (two entries of an RTM transaction's read
//! set instead of one). Kernel locks are mostly uncontended and with few CPUs, so the single line
//! wins. Wrap the lock in a [`Padded`](crate::Padded) to keep *other* data off its line.
//!
//! # Memory orderings (and what they become on x86_64 / ARMv7)
//! * Taking a ticket: `next.fetch_add(1, Relaxed)` (x86 `lock xadd`; ARM no barrier, a few
//!   lines of `asm!`, see `take_turn`). It only has to hand out unique tickets, which
//!   atomicity alone guarantees; ordering the critical section is the job of the acquire fence
//!   below. On ARM one `ldrexd`/`strexd` pair takes the ticket and reads `serving` in the same
//!   atomic step (the `strexd` writes back the `serving` it read, and fails if any core wrote
//!   either word meanwhile), so the uncontended acquisition is 6 instructions with no separate
//!   load; a failed `strexd` or a ticket not yet served goes to an out-of-line path.
//! * Waiting: `serving.load(Relaxed)` until it reads `my`, then one `fence(Acquire)` (x86 no
//!   instruction; ARMv7 plain `ldr` polls and one `dmb ish` at the end, as one acquire load
//!   costs uncontended). The relaxed load that reads `my` from the previous holder's release
//!   store, followed by the fence, synchronises with it, so everything the previous holders
//!   wrote in their critical sections is visible, and no access of ours moves above the fence.
//! * Unlock: `serving.store(my + 1, Release)` (x86 plain `mov`; ARMv7 `dmb ish; str`). Only the
//!   holder ever writes `serving` (it is the only CPU whose ticket is being served), so a plain
//!   load + store is enough, and cheaper than a `fetch_add` (x86 `lock xadd` is a full barrier,
//!   ARMv7 a retry loop). The holder's own relaxed load of `serving` reads `my`: it observed `my`
//!   with its acquire load, and nobody else may write `serving` before the holder does.
//!   After the store, [`Relax::after_release`] wakes `WFE` sleepers (ARM `dsb ish; sev`).
//! * `try_lock`: `serving.load(Acquire)` then `next.compare_exchange(s, s + 1, Relaxed, Relaxed)`.
//!   The CAS succeeds only if no ticket beyond `s` was handed out, so the lock was free and we hold
//!   ticket `s`; the acquire *load* is what synchronises with the release store of ticket `s - 1`
//!   (the CAS on `next` cannot: unlock never writes `next`). Accesses of the critical section
//!   cannot move above that acquire load, and cannot read a later holder's writes since those
//!   happen after our own release.
//! * `is_locked`: `serving.load(Acquire)` then `next.load(Relaxed)`. Only reads. Reading `serving`
//!   first (and keeping the second load after it, which is what `Acquire` buys on ARM; x86 never
//!   reorders loads) makes "free" answers sound: `serving` only grows and never exceeds `next`, so
//!   `serving_then == next_later` implies the lock was free at the first read.
//!
//! # Misuse: a stray unlock is caught by the next acquisition
//! An unlock of a free lock (a stray or double unlock) moves `serving` past `next`: every later
//! ticket would wait for a turn that never comes. Checking `next` at every unlock would cost the
//! fast path a load, a compare and a branch per release (x86_64: 4 instructions with the spill of
//! the address; 12 per one-way IPC of this project's fine-grained kernel, which releases three
//! ticket locks). Instead release builds check where it is free: a waiter whose ticket is
//! *behind* `serving` (the served ticket can never legitimately pass one still waiting) and a
//! `try_lock` whose compare-and-swap finds `next` behind the `serving` it read both panic, from
//! the cold polling loop and the failed-CAS path. A `lock` that panics so has absorbed one
//! stray increment with its own ticket: after as many such panics as there were stray unlocks
//! the lock is consistent and free again. The price: the panic names the next acquirer's
//! call, not the culprit's unlock.
//!
//! Debug builds keep an owner word beside the counters (the holder's id + 1, written by the
//! holder only): a CPU that locks the lock it holds panics before it takes a ticket (it would
//! wait for its own release forever), and an unlock by a CPU that does not hold it (a stray or
//! double unlock, or one naming another CPU than the holder) panics at the unlock, naming the
//! holder, before anything is released. `unlock_all` checks every lock before it releases any.
//!
//! | misuse | debug builds | release builds |
//! |---|---|---|
//! | CPU id out of range (`with_cpus`) | panics at `lock` / `try_lock` | the same |
//! | re-lock by the holder | panics at the `lock` | deadlocks (no owner: a store per acquisition) |
//! | stray or double unlock | panics at the unlock | panics at the next acquisition |
//! | unlock by a CPU other than the holder | panics at the unlock, naming the holder | not caught (no owner) |
//! | a lock named twice in `unlock_all` | panics before any release | released once |
//!
//! # Several locks, one barrier each way
//! [`TicketLock::lock_all`] takes several locks in order and orders them all with the one
//! `fence(Acquire)` after the last (each lock's relaxed poll that read its turn, followed by the
//! fence, synchronises with that lock's last release); [`TicketLock::unlock_all`] releases
//! several with one `fence(Release)` before relaxed stores (a release fence followed by a store
//! synchronises with any acquire that reads the store). Correct in the language's memory model
//! (the loom model `ticket_lock_all_against_single_locks` checks it), and on ARMv7 one `dmb ish`
//! each way instead of one per lock: this project's kernel takes a TCB and a run-queue lock
//! together on its IPC fastpath and releases them with the endpoint's, 3 barriers per one-way
//! IPC instead of 6.
//!
//! # Proportional back-off
//! With `BACKOFF > 0` a waiter that sees it is `d` tickets away from being served also executes
//! `d * BACKOFF` spin-loop hints (capped at [`MAX_BACKOFF_HINTS`]) between polls, on top of its
//! [`Relax`] strategy: CPUs far back in the queue poll less, so the line carrying `serving` is
//! handed over with less coherence traffic. `BACKOFF` should be well below one critical section's
//! length in spin-loop hints. [`TicketBackoffLock`] picks [`DEFAULT_BACKOFF`].

use core::fmt;
use core::marker::PhantomData;

use crate::raw::{check_cpu, CpuId, KernelLock};
use crate::relax::{Relax, Spin};
use crate::shim::{fence, AtomicUsize, Ordering};

/// Upper bound on the spin-loop hints of one proportional back-off pause.
pub const MAX_BACKOFF_HINTS: usize = 1 << 12;

/// The back-off base (spin-loop hints per ticket ahead) of [`TicketBackoffLock`].
pub const DEFAULT_BACKOFF: usize = 16;

/// A FIFO ticket lock; see the [module documentation](self) for the algorithm and orderings.
///
/// `R` is the wait strategy; `BACKOFF` is the proportional back-off base in spin-loop hints per
/// ticket ahead (0, the default, disables it). [`new`](TicketLock::new) and
/// [`with_cpus`](TicketLock::with_cpus) build the common `TicketLock` (`Spin`, no back-off)
/// and [`with_backoff`](TicketLock::with_backoff) a [`TicketBackoffLock`], with no type
/// annotation; [`with_relax`](Self::with_relax) and
/// [`with_relax_and_cpus`](Self::with_relax_and_cpus) build any other, named by its type.
///
/// ```
/// use kernel_locks::{KernelLock, TicketBackoffLock, TicketLock, Wfe};
///
/// let lock = TicketLock::with_cpus(2); // ids 0 and 1, waiting with `Spin`
/// lock.lock(1);
/// assert_eq!(lock.queue_len(), 1);
/// assert!(!lock.try_lock(0));
/// // SAFETY: CPU 1 holds the lock.
/// unsafe { lock.unlock(1) };
/// assert!(!lock.is_locked());
///
/// // With proportional back-off (16 spin hints per ticket ahead), in a static:
/// static RUN_QUEUE: TicketBackoffLock = TicketLock::with_backoff();
/// RUN_QUEUE.lock(0);
/// // SAFETY: CPU 0 holds the lock.
/// unsafe { RUN_QUEUE.unlock(0) };
/// assert_eq!(RUN_QUEUE.name(), "ticket-backoff");
///
/// // Another wait strategy: named in the type, built with `with_relax`.
/// let woken = TicketLock::<Wfe>::with_relax();
/// woken.lock(0);
/// // SAFETY: CPU 0 holds the lock.
/// unsafe { woken.unlock(0) };
/// ```
// `repr(C)` with 8-byte alignment: `next` and `serving` form the doubleword that ARM's
// `ldrexd`/`strexd` take (`take_turn`), which must be 8-byte aligned.
#[repr(C, align(8))]
pub struct TicketLock<R: Relax = Spin, const BACKOFF: usize = 0> {
    /// The next ticket to hand out.
    next: AtomicUsize,
    /// The ticket allowed into the critical section; written only by the holder.
    serving: AtomicUsize,
    /// Valid CPU ids are `0..max_cpus`.
    max_cpus: usize,
    /// Debug builds: the holder's id + 1 (0 when free), written only by the holder, so that a
    /// re-lock, an unlock by another CPU and a stray unlock panic where they happen. Release
    /// builds keep no owner (see the module documentation's misuse table).
    #[cfg(debug_assertions)]
    owner: AtomicUsize,
    /// The wait strategy is only a type; `fn() -> R` keeps the lock `Send + Sync` whatever `R` is.
    _relax: PhantomData<fn() -> R>,
}

/// A ticket lock with proportional back-off of [`DEFAULT_BACKOFF`] hints per ticket ahead.
pub type TicketBackoffLock<R = Spin> = TicketLock<R, DEFAULT_BACKOFF>;

impl TicketLock {
    maybe_const_fn! {
        /// An unlocked lock that waits with [`Spin`], without back-off, and accepts any CPU id
        /// (`max_cpus() == usize::MAX`): the ticket lock keeps no per-CPU state, so no id can
        /// corrupt it. Use [`with_cpus`](Self::with_cpus) to have ids out of the machine's range
        /// panic. The type needs no annotation (`let lock = TicketLock::new();`); other wait
        /// strategies and back-offs are built with [`with_relax`](Self::with_relax).
        pub fn new() -> Self {
            Self::with_relax()
        }
    }

    maybe_const_fn! {
        /// An unlocked lock that waits with [`Spin`], without back-off, and accepts CPU ids
        /// `0..cpus` (others panic, in every build): the run-time core count a kernel learns at
        /// boot. The lock has no per-CPU state, so any count costs the same memory. Other wait
        /// strategies and back-offs: [`with_relax_and_cpus`](Self::with_relax_and_cpus).
        ///
        /// # Panics
        /// If `cpus` is 0.
        #[track_caller]
        pub fn with_cpus(cpus: usize) -> Self {
            Self::with_relax_and_cpus(cpus)
        }
    }
}

impl TicketBackoffLock {
    maybe_const_fn! {
        /// An unlocked [`TicketBackoffLock`] (back-off of [`DEFAULT_BACKOFF`] hints per ticket
        /// ahead) that waits with [`Spin`] and accepts any CPU id, as [`new`](TicketLock::new):
        /// `let lock = TicketLock::with_backoff();` needs no annotation.
        pub fn with_backoff() -> Self {
            Self::with_relax()
        }
    }

    maybe_const_fn! {
        /// An unlocked [`TicketBackoffLock`] that waits with [`Spin`] and accepts CPU ids
        /// `0..cpus` (others panic, in every build), as [`with_cpus`](TicketLock::with_cpus).
        ///
        /// # Panics
        /// If `cpus` is 0.
        #[track_caller]
        pub fn with_backoff_and_cpus(cpus: usize) -> Self {
            Self::with_relax_and_cpus(cpus)
        }
    }
}

impl<R: Relax, const BACKOFF: usize> TicketLock<R, BACKOFF> {
    maybe_const_fn! {
        /// An unlocked lock with any wait strategy `R` and back-off `BACKOFF`, accepting any CPU
        /// id, as [`new`](TicketLock::new). `R` and `BACKOFF` come from the type, which the
        /// caller names: `TicketLock::<Wfe>::with_relax()`, or a `static` or `let` of type
        /// `TicketLock<Wfe>`; generic code over `R` builds its locks with this.
        pub fn with_relax() -> Self {
            Self::with_relax_and_cpus(usize::MAX)
        }
    }

    maybe_const_fn! {
        /// An unlocked lock that accepts CPU ids `0..cpus` (others panic, in every build),
        /// with any wait strategy `R` and back-off `BACKOFF`, as
        /// [`with_cpus`](TicketLock::with_cpus); the type as for
        /// [`with_relax`](Self::with_relax).
        ///
        /// # Panics
        /// If `cpus` is 0.
        #[track_caller]
        pub fn with_relax_and_cpus(cpus: usize) -> Self {
            assert!(cpus > 0, "TicketLock: a lock for 0 CPUs (with_cpus(0))");
            Self {
                next: AtomicUsize::new(0),
                serving: AtomicUsize::new(0),
                max_cpus: cpus,
                #[cfg(debug_assertions)]
                owner: AtomicUsize::new(0),
                _relax: PhantomData,
            }
        }
    }

    maybe_const_fn! {
        /// [`with_relax_and_cpus`](Self::with_relax_and_cpus) (the same lock), or
        /// [`with_cpus`](TicketLock::with_cpus) for a `TicketLock<Spin>`: every lock of the crate
        /// takes its run-time CPU count through a `with_cpus`.
        ///
        /// # Panics
        /// If `cpus` is 0.
        #[deprecated(
            note = "use `with_cpus(cpus)` (TicketLock<Spin>) or `with_relax_and_cpus(cpus)` (any \
                    wait strategy and back-off), the same constructor"
        )]
        #[track_caller]
        pub fn with_max_cpus(cpus: usize) -> Self {
            Self::with_relax_and_cpus(cpus)
        }
    }

    /// How many CPUs hold or wait for the lock (0 when free). A racy snapshot, like
    /// [`is_locked`](KernelLock::is_locked) and with the same orderings.
    pub fn queue_len(&self) -> usize {
        let serving = self.serving.load(Ordering::Acquire);
        self.next.load(Ordering::Relaxed).wrapping_sub(serving)
    }

    /// Takes every lock of `locks`, in that order (the caller's lock order), as calling
    /// [`lock`](KernelLock::lock) on each would, but with one acquire barrier after the last
    /// instead of one per lock (ARMv7: one `dmb ish`; see the module documentation). The
    /// critical sections are ordered only once the call returns, so nothing guarded by the
    /// first lock can be read before the last is taken: that is why one call takes them all.
    ///
    /// A lock named twice deadlocks, as locking it twice would.
    ///
    /// # Panics
    /// If `cpu` is out of any lock's range (every lock is checked before the first is taken).
    ///
    /// ```
    /// use kernel_locks::{KernelLock, TicketLock};
    ///
    /// let (tcb, run_queue) = (TicketLock::new(), TicketLock::new());
    /// TicketLock::lock_all([&tcb, &run_queue], 0);
    /// assert!(tcb.is_locked() && run_queue.is_locked());
    /// // SAFETY: CPU 0 holds both, each named once.
    /// unsafe { TicketLock::unlock_all([&run_queue, &tcb], 0) };
    /// assert!(!tcb.is_locked() && !run_queue.is_locked());
    /// ```
    #[inline(always)]
    #[track_caller]
    pub fn lock_all<const K: usize>(locks: [&Self; K], cpu: CpuId) {
        for lock in locks {
            check_cpu("TicketLock", cpu, lock.max_cpus);
        }
        Self::lock_all_prechecked(locks, cpu);
    }

    /// [`lock_all`](Self::lock_all) for a caller that has checked `cpu` against every lock's
    /// range already: no check per lock (debug builds still check). For a kernel that checks
    /// its core id once per entry (taking its big-reader lock, say) and then takes several
    /// ticket locks built with the same bound: on its IPC path the checks repeated the entry's
    /// once per lock (x86_64: a load, a compare and a branch each; ARMv7 the same).
    ///
    /// Nothing unsafe can follow from a wrong id: the lock keeps no per-CPU state, and the id
    /// only reaches the wait strategy's [`Relax::relax`] while waiting.
    ///
    /// ```
    /// use kernel_locks::{KernelLock, TicketLock};
    ///
    /// let tcb = TicketLock::with_cpus(2);
    /// let run_queue = TicketLock::with_cpus(2);
    /// let cpu = 1;
    /// assert!(cpu < tcb.max_cpus() && cpu < run_queue.max_cpus()); // the caller's one check
    /// TicketLock::lock_all_prechecked([&tcb, &run_queue], cpu);
    /// // SAFETY: CPU 1 holds both, each named once.
    /// unsafe { TicketLock::unlock_all([&run_queue, &tcb], cpu) };
    /// ```
    #[inline(always)]
    #[track_caller]
    pub fn lock_all_prechecked<const K: usize>(locks: [&Self; K], cpu: CpuId) {
        // By reference: iterating the array by value hands out `Option<&Self>`, whose `None`
        // niche is the null pointer, and LLVM kept a null test of each lock's address (ARMv7:
        // one branch per acquisition of an object lock, whose address it cannot prove non-null).
        for lock in &locks {
            if cfg!(debug_assertions) {
                check_cpu("TicketLock", cpu, lock.max_cpus);
            }
            lock.check_not_held_by(cpu);
            // Relaxed, as in `lock`: the fence below orders every critical section.
            lock.take_turn(cpu);
        }
        // Pairs with each lock's last release (module documentation).
        fence(Ordering::Acquire);
        for lock in &locks {
            lock.record_owner(cpu);
        }
    }

    /// Debug builds: panics if `cpu` holds the lock already (taking a ticket would wait for
    /// its own release forever). Nothing in release builds.
    #[inline(always)]
    #[track_caller]
    fn check_not_held_by(&self, _cpu: CpuId) {
        // Relaxed: only the holder writes `owner`; a CPU always reads its own latest write
        // (coherence), so it finds its own id exactly when it holds the lock.
        #[cfg(debug_assertions)]
        if self.owner.load(Ordering::Relaxed) == _cpu + 1 {
            crate::raw::relocked("TicketLock", _cpu);
        }
    }

    /// Debug builds: records `cpu`, which has just acquired the lock, as its holder.
    #[inline(always)]
    fn record_owner(&self, _cpu: CpuId) {
        // Relaxed: ordered after the acquisition by its acquire fence or load, and before the
        // next holder's write by this holder's release.
        #[cfg(debug_assertions)]
        self.owner.store(_cpu + 1, Ordering::Relaxed);
    }

    /// Debug builds: panics unless `cpu` holds the lock (a stray, double or wrong-CPU unlock,
    /// caught at the unlock itself). Nothing in release builds.
    #[inline(always)]
    #[track_caller]
    fn check_owner(&self, _cpu: CpuId) {
        #[cfg(debug_assertions)]
        {
            let owner = self.owner.load(Ordering::Relaxed);
            if owner != _cpu + 1 {
                crate::raw::not_holder("TicketLock", _cpu, owner.checked_sub(1));
            }
        }
    }

    /// Debug builds: forgets the holder, right before the release.
    #[inline(always)]
    fn clear_owner(&self) {
        #[cfg(debug_assertions)]
        self.owner.store(0, Ordering::Relaxed);
    }

    /// [`check_owner`](Self::check_owner), then [`clear_owner`](Self::clear_owner).
    #[inline(always)]
    #[track_caller]
    fn check_and_clear_owner(&self, cpu: CpuId) {
        self.check_owner(cpu);
        self.clear_owner();
    }

    /// [`lock`](KernelLock::lock) for a caller that has checked `cpu` against this lock's range
    /// already, as [`lock_all_prechecked`](Self::lock_all_prechecked) for one lock.
    #[inline(always)]
    #[track_caller]
    pub fn lock_prechecked(&self, cpu: CpuId) {
        Self::lock_all_prechecked([self], cpu);
    }

    /// Releases every lock of `locks`, as calling [`unlock`](KernelLock::unlock) on each would,
    /// but with one release barrier before the first store instead of one per lock (ARMv7: one
    /// `dmb ish`). A lock that was free is caught by its next acquisition, as for `unlock`
    /// ([module documentation](self#misuse-a-stray-unlock-is-caught-by-the-next-acquisition)).
    ///
    /// # Safety
    /// `cpu` holds every lock of `locks`, and each is named once (a lock named twice is
    /// released once; debug builds check).
    #[inline(always)]
    #[track_caller]
    pub unsafe fn unlock_all<const K: usize>(locks: [&Self; K], cpu: CpuId) {
        debug_assert!(
            (0..K).all(|i| (i + 1..K).all(|j| !core::ptr::eq(locks[i], locks[j]))),
            "TicketLock::unlock_all: a lock named twice"
        );
        // Every lock checked before any is touched: a misuse panics with every lock as it was.
        for lock in &locks {
            lock.check_owner(cpu);
        }
        for lock in &locks {
            lock.clear_owner();
        }
        // One release fence for every store below (module documentation).
        fence(Ordering::Release);
        for lock in &locks {
            lock.serve_next();
        }
        R::after_release();
    }

    /// [`unlock`](KernelLock::unlock) for a caller that has executed `fence(Release)` (or a
    /// stronger fence) after its critical section: relaxed stores only, so that several
    /// releases (of this and other locks) share one barrier (ARMv7: no `dmb` here). A release
    /// fence followed by a store synchronises with any acquire that reads the store, as in
    /// [`unlock_all`](Self::unlock_all).
    ///
    /// # Safety
    /// `cpu` holds the lock, and executed a release fence after its last access of the
    /// critical section.
    #[inline(always)]
    #[track_caller]
    pub unsafe fn unlock_fenced(&self, cpu: CpuId) {
        self.check_and_clear_owner(cpu);
        self.serve_next();
        R::after_release();
    }

    /// Advances `serving` with a relaxed store, for a holder whose release fence came before.
    #[inline(always)]
    fn serve_next(&self) {
        // Relaxed: only the holder writes `serving` (as in `unlock`).
        let serving = self.serving.load(Ordering::Relaxed);
        self.serving
            .store(serving.wrapping_add(1), Ordering::Relaxed);
    }

    /// Takes a ticket and returns once it is served: `next.fetch_add(1, Relaxed)`, then
    /// [`await_turn`](Self::await_turn). The caller's `fence(Acquire)` orders the critical
    /// section.
    #[inline(always)]
    #[track_caller]
    fn take_turn(&self, cpu: CpuId) {
        // The ARM targets with 64-bit atomics (ARMv6K and later, A and R profiles) are those
        // with `ldrexd`/`strexd`; the others (M profile) keep `fetch_add`.
        #[cfg(all(target_arch = "arm", target_has_atomic = "64", not(kernel_locks_loom)))]
        {
            let (next, unserved, failed): (usize, usize, usize);
            // SAFETY: `ldrexd` reads `next` and `serving` (adjacent words, 8-byte aligned by
            // the struct's `repr`) as one single-copy atomic doubleword; `strexd` writes
            // `next + 1` and the `serving` just read back only if no other observer wrote
            // either word since the `ldrexd` (a store by another core to the marked words
            // clears the exclusive monitor), so it never puts back a stale `serving`: it is
            // `next.fetch_add(1, Relaxed)` plus a relaxed load of `serving` taken at the same
            // instant. The block touches only these two words, which this lock owns, and no
            // stack. `ldrexd`/`strexd` need an even/odd register pair: r0, r1, of the three
            // pairs the one that costs the kernel's IPC paths no moves around the block (with
            // r4, r5 ARMv7's fine-grained round trip takes 14 instructions more, the ticket
            // lock's 10). The status register is an `out` operand, so it is neither the
            // address nor the pair.
            unsafe {
                core::arch::asm!(
                    "ldrexd r0, r1, [{p}]",
                    "eor {u}, r0, r1",
                    "add r0, r0, #1",
                    "strexd {f}, r0, r1, [{p}]",
                    p = in(reg) self.next.as_ptr(),
                    u = out(reg) unserved,
                    f = out(reg) failed,
                    out("r0") next,
                    out("r1") _,
                    options(nostack),
                );
            }
            // One `orrs` and one branch: the uncontended acquisition is `ldrexd`, `eor`, `add`,
            // `strexd`, `orrs`, `bne` (the `ldrex`/`strex` loop and a separate load of
            // `serving` take 8 instructions).
            if unserved | failed != 0 {
                self.take_turn_slow(next, failed != 0, cpu);
            }
        }
        #[cfg(not(all(target_arch = "arm", target_has_atomic = "64", not(kernel_locks_loom))))]
        {
            // Relaxed: unique tickets need atomicity only (module documentation).
            let my = self.next.fetch_add(1, Ordering::Relaxed);
            self.await_turn(my, cpu);
        }
    }

    /// ARM's [`take_turn`](Self::take_turn) when its one attempt did not end served: the
    /// `strexd` failed (no ticket was taken: take one now), or ticket `next - 1` is not served
    /// yet (wait for it).
    #[cfg(all(target_arch = "arm", target_has_atomic = "64", not(kernel_locks_loom)))]
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn take_turn_slow(&self, next: usize, failed: bool, cpu: CpuId) {
        if failed {
            let my = self.next.fetch_add(1, Ordering::Relaxed);
            self.await_turn(my, cpu);
        } else {
            self.wait_for_turn(next.wrapping_sub(1), cpu);
        }
    }

    /// Returns once ticket `my` is served: in line, one relaxed load and compare when it is
    /// served already (the uncontended case); the polling loop is out of line, so that a
    /// caller that takes several locks keeps them all in line without a call (and the spills
    /// around it) per lock. The caller's `fence(Acquire)` after it synchronises with the
    /// release store of the previous holder (see the module documentation).
    #[inline(always)]
    #[track_caller]
    fn await_turn(&self, my: usize, cpu: CpuId) {
        if self.serving.load(Ordering::Relaxed) != my {
            self.wait_for_turn(my, cpu);
        }
    }

    /// Waits until ticket `my` is served, with relaxed polls (see [`await_turn`](Self::await_turn)).
    ///
    /// # Panics
    /// If `serving` is ahead of `my`: a stray unlock happened (module documentation).
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn wait_for_turn(&self, my: usize, cpu: CpuId) {
        let mut relax = R::default();
        loop {
            let serving = self.serving.load(Ordering::Relaxed);
            if serving == my {
                return;
            }
            // Only the holder of ticket `t` advances `serving` to `t + 1`, and ours is not
            // served yet, so a legitimate `serving` is never past `my`.
            if is_ahead(serving, my) {
                stray_unlock();
            }
            crate::shim::wait_hint();
            relax.relax(cpu);
            if BACKOFF != 0 {
                // `serving <= my` for a waiter, so this is the number of tickets ahead of us.
                let ahead = my.wrapping_sub(serving);
                let hints = ahead.saturating_mul(BACKOFF).min(MAX_BACKOFF_HINTS);
                for _ in 0..hints {
                    core::hint::spin_loop();
                }
            }
        }
    }
}

impl<R: Relax, const BACKOFF: usize> Default for TicketLock<R, BACKOFF> {
    fn default() -> Self {
        Self::with_relax()
    }
}

impl<R: Relax, const BACKOFF: usize> fmt::Debug for TicketLock<R, BACKOFF> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TicketLock")
            .field("next", &self.next.load(Ordering::Relaxed))
            .field("serving", &self.serving.load(Ordering::Relaxed))
            .field("backoff", &BACKOFF)
            .finish()
    }
}

/// No per-CPU state, no bound (an instance's run-time count is its own, see
/// [`with_cpus`](TicketLock::with_cpus)).
impl<R: Relax, const BACKOFF: usize> crate::raw::MaxCpus for TicketLock<R, BACKOFF> {
    const MAX_CPUS: usize = usize::MAX;
}

#[cfg(not(kernel_locks_loom))]
impl<R: Relax, const BACKOFF: usize> crate::raw::ConstInit for TicketLock<R, BACKOFF> {
    const INIT: Self = Self::with_relax();
}

/// Whether counter value `a` is past `b` (wrapping: by less than half the counter's range).
#[inline(always)]
fn is_ahead(a: usize, b: usize) -> bool {
    (a.wrapping_sub(b) as isize) > 0
}

/// The panic of an acquisition that finds `serving` past `next` or past its own ticket: an
/// earlier unlock of a free lock. Out of line and cold.
#[cold]
#[inline(never)]
#[track_caller]
fn stray_unlock() -> ! {
    panic!(
        "TicketLock: serving counter ahead of the tickets handed out: an earlier unlock of a \
         lock that was not held (a stray or double unlock); found at this acquisition"
    );
}

// SAFETY: mutual exclusion: tickets are unique (atomic `fetch_add` / CAS on `next`) and only the
// holder of ticket `t` may store `serving = t + 1`, so exactly one ticket is served at a time.
// Acquire (the fence after the poll that ends a wait, the `serving` load before the `try_lock`
// CAS) and release (the unlock store) as explained in the module documentation. `is_locked`
// only loads.
unsafe impl<R: Relax, const BACKOFF: usize> KernelLock for TicketLock<R, BACKOFF> {
    fn name(&self) -> &'static str {
        if BACKOFF == 0 {
            "ticket"
        } else {
            "ticket-backoff"
        }
    }

    fn max_cpus(&self) -> usize {
        self.max_cpus
    }

    #[inline(always)]
    fn lock(&self, cpu: CpuId) {
        check_cpu("TicketLock", cpu, self.max_cpus);
        // A relaxed `fetch_add` for a unique ticket, the wait, one acquire fence (module
        // documentation).
        self.lock_prechecked(cpu);
    }

    // The id is not used to acquire (a ticket lock keeps no per-CPU state): the caller's
    // check stands for the range check, which debug builds still make.
    #[inline(always)]
    #[track_caller]
    unsafe fn lock_unchecked(&self, cpu: CpuId) {
        self.lock_prechecked(cpu);
    }

    #[inline]
    fn try_lock(&self, cpu: CpuId) -> bool {
        check_cpu("TicketLock", cpu, self.max_cpus);
        // Acquire: if the CAS below succeeds, this load read the release store of the previous
        // holder, which is what orders its critical section before ours.
        let serving = self.serving.load(Ordering::Acquire);
        // Relaxed: succeeds only if `next == serving`, i.e. the lock is free and we take the ticket
        // being served. A strong CAS, so that a free lock is never reported busy spuriously.
        match self.next.compare_exchange(
            serving,
            serving.wrapping_add(1),
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            Ok(_) => {
                self.record_owner(cpu);
                true
            }
            // `next` never falls behind a `serving` read before it: the unlock that wrote that
            // `serving` came after the `fetch_add` of its ticket, which our acquire load of
            // `serving` makes visible to the CAS. Behind means a stray unlock (module docs).
            Err(next) if is_ahead(serving, next) => stray_unlock(),
            Err(_) => false,
        }
    }

    #[inline(always)]
    unsafe fn unlock(&self, cpu: CpuId) {
        // No range check here: ids are checked where the lock is taken, and the lock keeps no
        // per-CPU state an id could index. Release builds make no stray-unlock check either:
        // the next acquisition catches it at no cost to this path; debug builds catch it here
        // (module documentation).
        self.check_and_clear_owner(cpu);
        // Relaxed: only the holder writes `serving`, and it read the current value with its
        // acquire load when it entered, so this reads its own ticket.
        let serving = self.serving.load(Ordering::Relaxed);
        // Release: publishes our critical section to the next ticket holder (ARMv7 `dmb ish; str`).
        self.serving
            .store(serving.wrapping_add(1), Ordering::Release);
        R::after_release();
    }

    #[inline]
    fn is_locked(&self) -> bool {
        // `serving` first, with Acquire so the `next` load stays after it (see module docs).
        let serving = self.serving.load(Ordering::Acquire);
        self.next.load(Ordering::Relaxed) != serving
    }
}
