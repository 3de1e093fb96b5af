//! The interrupt-safe operations (`kernel_locks::irq`) over the interrupt-mask double
//! (`irq::testing::TestInterrupts`, one simulated CPU per thread): saves and restores nest, the
//! lock is released before interrupts are restored (a raised interrupt's handler finds it free),
//! every lock kind and both data wrappers, `without_interrupts`, and a thread stress where every
//! critical section is interrupted by a handler that takes the same lock, with exact totals.
#![cfg(not(kernel_locks_loom))]

mod common;

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use kernel_locks::irq::testing::{Event, TestInterrupts as I};
use kernel_locks::irq::{without_interrupts, Interrupts, IrqGuard, KernelLockIrq};
use kernel_locks::{
    BrLock, ClhLock, CpuId, KernelLock, Mutex, NoLock, RtmLock, RwLock, TicketLock,
};

/// A lock that logs its acquisitions and releases in the calling thread's interrupt log, so that
/// a test sees where they fall between the saves and restores.
struct Logged<L>(L);

// SAFETY: every operation is the inner lock's, which provides the guarantees; the log entries
// only add a thread-local write around them.
unsafe impl<L: KernelLock> KernelLock for Logged<L> {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn max_cpus(&self) -> usize {
        self.0.max_cpus()
    }

    fn lock(&self, cpu: CpuId) {
        self.0.lock(cpu);
        I::note("locked");
    }

    fn try_lock(&self, cpu: CpuId) -> bool {
        let got = self.0.try_lock(cpu);
        I::note(if got { "locked" } else { "busy" });
        got
    }

    unsafe fn unlock(&self, cpu: CpuId) {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.unlock(cpu) };
        I::note("unlocked");
    }

    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }
}

const SAVE_ON: Event = Event::Save {
    was_enabled: true,
    depth: 0,
};
const RESTORE_ON: Event = Event::Restore {
    enabled: true,
    depth: 0,
};

#[test]
fn a_guard_masks_and_restores_what_it_found() {
    I::reset(true);
    {
        let g = IrqGuard::<I>::new();
        assert!(!I::are_enabled());
        assert!(g.saved().enabled);
    }
    assert!(I::are_enabled());

    // Entered masked (an interrupt handler): the guard leaves it masked.
    I::reset(false);
    drop(IrqGuard::<I>::new());
    assert!(!I::are_enabled());
    assert_eq!(
        I::take_log(),
        [
            Event::Save {
                was_enabled: false,
                depth: 0
            },
            Event::Restore {
                enabled: false,
                depth: 0
            },
        ]
    );
}

#[test]
fn nested_guards_unmask_only_at_the_outermost_restore() {
    I::reset(true);
    let a = Mutex::new(TicketLock::new(), 1u32);
    let b = Mutex::new(ClhLock::<4>::new(), 2u32);
    {
        let outer = a.lock_irqsave::<I>(0);
        {
            let inner = b.lock_irqsave::<I>(0);
            assert_eq!(*outer + *inner, 3);
            assert_eq!(I::depth(), 2);
        }
        assert!(
            !I::are_enabled(),
            "the inner guard unmasked while the outer lock is held"
        );
        assert!(a.is_locked() && !b.is_locked());
    }
    assert!(I::are_enabled() && !a.is_locked());
    assert_eq!(I::depth(), 0);
}

#[test]
#[should_panic(expected = "restored out of order")]
fn dropping_an_outer_guard_first_is_caught() {
    I::reset(true);
    let outer = IrqGuard::<I>::new();
    let inner = IrqGuard::<I>::new();
    drop(outer);
    drop(inner);
}

#[test]
fn the_raw_lock_is_released_before_interrupts_are_restored() {
    I::reset(true);
    let lock = Logged(ClhLock::<4>::new());
    let token = lock.lock_irqsave::<I>(1);
    assert!(!I::are_enabled() && lock.is_locked());
    // SAFETY: CPU 1 took the lock just above, with this token.
    unsafe { lock.unlock_irqrestore(1, token) };
    assert!(I::are_enabled() && !lock.is_locked());
    assert_eq!(
        I::take_log(),
        [
            SAVE_ON,
            Event::Note("locked"),
            Event::Note("unlocked"),
            RESTORE_ON
        ]
    );
}

#[test]
fn an_interrupt_raised_while_held_runs_after_the_release() {
    static LOCK: Mutex<TicketLock, u64> = Mutex::new(TicketLock::new(), 0);
    static HANDLED: AtomicU64 = AtomicU64::new(0);
    I::reset(true);
    {
        let mut held = LOCK.lock_irqsave::<I>(0);
        // The handler takes the same lock: run while the lock is held, it would deadlock
        // (`try_lock` fails then, and the handler records nothing).
        I::raise(|| {
            if let Some(mut v) = LOCK.try_lock_irqsave::<I>(0) {
                *v += 10;
                HANDLED.fetch_add(1, Ordering::Relaxed);
            }
        });
        *held += 1;
        assert_eq!(I::pending(), 1, "delivered while masked");
        assert_eq!(HANDLED.load(Ordering::Relaxed), 0);
    }
    assert_eq!(
        HANDLED.load(Ordering::Relaxed),
        1,
        "the handler did not find the lock free"
    );
    assert_eq!(*LOCK.lock(0), 11);
    assert_eq!(I::pending(), 0);
}

/// `lock_irqsave` / `unlock_irqrestore` and both outcomes of `try_lock_irqsave` on `lock`, with
/// their saves and restores around the acquisitions.
fn raw_irqsave_on<L: KernelLock>(lock: L) {
    I::reset(true);
    let lock = Logged(lock);
    let token = lock.lock_irqsave::<I>(0);
    assert!(!I::are_enabled(), "{}: unmasked while held", lock.name());
    // SAFETY: CPU 0 holds the lock through `token`.
    unsafe { lock.unlock_irqrestore(0, token) };
    assert!(I::are_enabled());
    let token = lock.try_lock_irqsave::<I>(0).expect("a free lock");
    // SAFETY: as above.
    unsafe { lock.unlock_irqrestore(0, token) };
    let want = [
        SAVE_ON,
        Event::Note("locked"),
        Event::Note("unlocked"),
        RESTORE_ON,
    ];
    assert_eq!(
        I::take_log(),
        [want.clone(), want].concat(),
        "{}",
        lock.name()
    );
}

#[test]
fn every_lock_kind_masks_around_its_critical_section() {
    raw_irqsave_on(ClhLock::<4>::new());
    raw_irqsave_on(TicketLock::new());
    raw_irqsave_on(BrLock::<4>::new());
    raw_irqsave_on(RtmLock::<_, 4>::new(TicketLock::new()));
    // SAFETY: one thread, one critical section at a time.
    raw_irqsave_on(unsafe { NoLock::new() });
}

#[test]
fn a_failed_try_restores_at_once() {
    for lock in [
        &ClhLock::<4>::new() as &dyn KernelLock,
        &TicketLock::new(),
        &BrLock::<4>::new(),
        &RtmLock::<_, 4>::new(TicketLock::new()),
    ] {
        I::reset(true);
        lock.lock(1);
        let busy = lock.try_lock_irqsave::<I>(0);
        assert!(busy.is_none(), "{}: got a held lock", lock.name());
        assert!(
            I::are_enabled(),
            "{}: a failed try left interrupts masked",
            lock.name()
        );
        assert_eq!(I::take_log(), [SAVE_ON, RESTORE_ON]);
        // SAFETY: CPU 1 took it above.
        unsafe { lock.unlock(1) };
    }
}

#[test]
fn mutex_guards_release_then_restore() {
    I::reset(true);
    let m = Mutex::new(Logged(ClhLock::<4>::new()), [0u8; 4]);
    {
        let mut g = m.lock_irqsave::<I>(2);
        g[2] = 7;
        assert_eq!(g.guard().cpu(), 2);
        assert!(!I::are_enabled());
    }
    {
        let g = m.try_lock_irqsave::<I>(3).expect("free");
        assert_eq!(g[2], 7);
        assert!(m.try_lock_irqsave::<I>(1).is_none(), "a second holder");
        assert!(
            !I::are_enabled(),
            "the failed try unmasked under the held lock"
        );
    }
    assert!(I::are_enabled() && !m.is_locked());
    let log = I::take_log();
    let one = [
        SAVE_ON,
        Event::Note("locked"),
        Event::Note("unlocked"),
        RESTORE_ON,
    ];
    assert_eq!(log[..4], one);
    assert_eq!(log[4..6], [SAVE_ON, Event::Note("locked")]);
    // The failed try inside: saved masked, restored masked.
    assert_eq!(
        log[6..9],
        [
            Event::Save {
                was_enabled: false,
                depth: 1
            },
            Event::Note("busy"),
            Event::Restore {
                enabled: false,
                depth: 1
            },
        ]
    );
    assert_eq!(log[9..], [Event::Note("unlocked"), RESTORE_ON]);
}

#[test]
fn rwlock_guards_release_then_restore() {
    I::reset(true);
    let rw = RwLock::new(BrLock::<4>::new(), 5u32);
    {
        let mut w = rw.write_irqsave::<I>(0);
        *w += 1;
        assert!(rw.try_read_irqsave::<I>(1).is_none());
        assert!(!I::are_enabled());
    }
    assert!(I::are_enabled());
    {
        let r0 = rw.read_irqsave::<I>(0);
        let r1 = rw.try_read_irqsave::<I>(1).expect("readers share");
        assert_eq!(*r0 + *r1, 12);
        assert!(
            rw.try_write_irqsave::<I>(2).is_none(),
            "a writer beside readers"
        );
        assert_eq!(I::depth(), 2);
    }
    assert!(I::are_enabled() && !rw.is_locked());
    assert_eq!(*rw.try_write_irqsave::<I>(3).expect("free"), 6);
    assert_eq!(I::depth(), 0);
}

#[test]
fn without_interrupts_masks_the_closure_and_restores_on_unwind() {
    I::reset(true);
    assert_eq!(
        without_interrupts::<I, _>(|| (I::are_enabled(), I::depth())),
        (false, 1)
    );
    assert!(I::are_enabled());
    let unwound = std::panic::catch_unwind(|| without_interrupts::<I, ()>(|| panic!("in f")));
    assert!(unwound.is_err());
    assert!(
        I::are_enabled() && I::depth() == 0,
        "not restored on unwind"
    );
    I::reset(false);
    without_interrupts::<I, _>(|| ());
    assert!(!I::are_enabled());
}

#[test]
fn threads_interrupted_in_every_critical_section_keep_exact_totals() {
    static COUNT: Mutex<ClhLock<64, common::Yield>, u64> = Mutex::new(ClhLock::new(), 0);
    static HANDLED: AtomicU64 = AtomicU64::new(0);
    std::thread_local! {
        /// Whether this thread (CPU) is inside its critical section.
        static HOLDING: Cell<bool> = const { Cell::new(false) };
    }
    const ITERS: usize = 5_000;
    let threads = common::stress_threads().max(2);
    common::on_cpus(threads, ITERS, |cpu| {
        {
            let mut held = COUNT.lock_irqsave::<I>(cpu);
            HOLDING.set(true);
            // The handler waits for the lock: delivered on this CPU while it holds the lock,
            // it would deadlock. Other CPUs' holds it waits out.
            I::raise(move || {
                assert!(
                    !HOLDING.get(),
                    "interrupt delivered inside the critical section"
                );
                *COUNT.lock_irqsave::<I>(cpu) += 1;
                HANDLED.fetch_add(1, Ordering::Relaxed);
            });
            let v = *held;
            for _ in 0..4 {
                std::hint::spin_loop();
            }
            *held = v + 1;
            HOLDING.set(false);
        }
        assert!(I::are_enabled() && I::depth() == 0 && I::pending() == 0);
    });
    let total = (threads * ITERS) as u64;
    assert_eq!(HANDLED.load(Ordering::Relaxed), total);
    assert_eq!(*COUNT.lock(0), 2 * total, "lost updates");
    assert!(!COUNT.is_locked());
}
