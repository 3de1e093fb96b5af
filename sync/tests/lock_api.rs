//! The `lock_api` adapters over the ticket, CLH and big-reader locks: the same tests for
//! `lock_api` 0.4 (`--features lock_api`, module `v04`) and 0.5 (`--features lock_api_05`, module
//! `v05`), each with its own statics.
#![cfg(all(
    any(feature = "lock_api", feature = "lock_api_05"),
    not(kernel_locks_loom)
))]

mod common;

use std::cell::Cell;

use kernel_locks::lock_api_adapter::CurrentCpu;
use kernel_locks::{BrLock, ClhLock, CpuId, TicketLock};

use common::Yield;

const ITERS: usize = 2_000;
const MAX: usize = 64;

thread_local! {
    static CPU: Cell<Option<CpuId>> = const { Cell::new(None) };
}

/// The CPU id source: a thread-local standing for a kernel's per-CPU register.
struct ThreadCpu;

impl CurrentCpu for ThreadCpu {
    fn current() -> CpuId {
        CPU.with(|cpu| cpu.get())
            .expect("this test thread has no CPU id")
    }
}

fn set_cpu(cpu: CpuId) {
    CPU.with(|c| c.set(Some(cpu)));
}

type Ticket = TicketLock<Yield>;
type Clh = ClhLock<MAX, Yield>;
type Br = BrLock<MAX, Yield>;

/// Runs `body` on `threads` threads, thread `i` being CPU `i`.
fn on_cpus(threads: usize, body: impl Fn(CpuId) + Sync) {
    assert!(threads <= MAX);
    std::thread::scope(|s| {
        for cpu in 0..threads {
            let body = &body;
            s.spawn(move || {
                set_cpu(cpu);
                body(cpu);
            });
        }
    });
}

/// Takes a guard with `acquire` on CPU `from` and drops it on CPU `to`, as if its holder had
/// migrated between the two (debug builds check that it may not).
#[cfg(debug_assertions)]
fn drop_migrated<G>(from: CpuId, to: CpuId, acquire: impl FnOnce() -> G) {
    set_cpu(from);
    let guard = acquire();
    set_cpu(to);
    drop(guard);
}

/// The tests of one `lock_api` version: `$version` names both the adapter module
/// (`kernel_locks::lock_api_adapter::$version`) and the test module. `$read_migrated` is the panic
/// of a read guard dropped on another CPU: the lock's own check under 0.4, whose guards carry no
/// state, and the adapter's under 0.5, whose guards carry the CPU that took the lock.
macro_rules! adapter_tests {
    ($version:ident, read_migrated: $read_migrated:literal) => {
        mod $version {
            use kernel_locks::lock_api_adapter::$version::{Mutex, MutexGuard, RwLock};
            use kernel_locks::lock_api_adapter::{RawKernelMutex, RawKernelRwLock};
            use kernel_locks::raw::ConstInit;
            use kernel_locks::{BrLock, KernelLock, TicketLock};

            #[cfg(debug_assertions)]
            use super::drop_migrated;
            use super::{common, on_cpus, set_cpu, Br, Clh, ThreadCpu, Ticket, ITERS};

            static COUNTER: Mutex<Ticket, ThreadCpu, u64> = Mutex::new(0);
            static CLH_AS_MUTEX: Mutex<Clh, ThreadCpu, u64> = Mutex::new(0);
            static BR_AS_MUTEX: Mutex<Br, ThreadCpu, u64> = Mutex::new(0);
            static PAIR: RwLock<Br, ThreadCpu, (u64, u64)> = RwLock::new((0, 0));

            fn bump(mut guard: MutexGuard<'_, impl KernelLock + ConstInit, ThreadCpu, u64>) {
                let v = *guard;
                std::hint::spin_loop();
                *guard = v + 1;
            }

            #[test]
            fn static_mutexes_count_exactly() {
                let threads = common::stress_threads();
                on_cpus(threads, |_| {
                    for _ in 0..ITERS {
                        bump(COUNTER.lock());
                        bump(CLH_AS_MUTEX.lock());
                        bump(BR_AS_MUTEX.lock());
                    }
                });
                set_cpu(0);
                let total = (threads * ITERS) as u64;
                assert_eq!(*COUNTER.lock(), total);
                assert_eq!(*CLH_AS_MUTEX.lock(), total);
                assert_eq!(*BR_AS_MUTEX.lock(), total);
            }

            #[test]
            fn try_lock_and_is_locked() {
                set_cpu(0);
                let mutex: Mutex<Ticket, ThreadCpu, u32> = Mutex::new(5);
                assert!(!mutex.is_locked());
                let guard = mutex.try_lock().expect("free mutex");
                assert!(mutex.is_locked());
                assert!(mutex.try_lock().is_none());
                drop(guard);
                assert!(!mutex.is_locked());
                // SAFETY: only its name is read.
                assert_eq!(unsafe { mutex.raw() }.inner().name(), "ticket");
                assert_eq!(mutex.into_inner(), 5);
            }

            #[test]
            fn rwlock_readers_never_see_half_a_write() {
                let threads = common::stress_threads();
                on_cpus(threads, |cpu| {
                    for i in 0..ITERS {
                        if (i + cpu) % 4 == 0 {
                            let mut pair = PAIR.write();
                            pair.0 += 1;
                            if i % 16 == 0 {
                                std::thread::yield_now();
                            }
                            pair.1 += 1;
                        } else {
                            let pair = PAIR.read();
                            assert_eq!(pair.0, pair.1, "a reader saw half a write");
                        }
                    }
                });
                let writes = (0..threads)
                    .map(|cpu| (0..ITERS).filter(|i| (i + cpu) % 4 == 0).count() as u64)
                    .sum::<u64>();
                set_cpu(0);
                assert_eq!(*PAIR.read(), (writes, writes));
            }

            #[test]
            fn read_guards_overlap_across_cpus() {
                let rw: RwLock<BrLock<2>, ThreadCpu, u8> = RwLock::new(7);
                set_cpu(0);
                let first = rw.read();
                set_cpu(1);
                let second = rw.try_read().expect("readers overlap");
                assert!(rw.try_write().is_none());
                assert_eq!(*first + *second, 14);
                drop(second);
                set_cpu(0);
                drop(first);
                assert!(!rw.is_locked());
                *rw.write() += 1;
                assert_eq!(*rw.read(), 8);
                // SAFETY: only its state is read.
                assert!(!unsafe { rw.raw() }.inner().is_locked());
            }

            #[test]
            fn is_locked_exclusive_only_reads() {
                let rw: RwLock<BrLock<2>, ThreadCpu, ()> = RwLock::new(());
                set_cpu(1);
                assert!(!rw.is_locked_exclusive());
                let read = rw.read();
                // Asked by the CPU that holds a shared hold (a trial shared lock would panic).
                assert!(rw.is_locked() && !rw.is_locked_exclusive());
                drop(read);
                let write = rw.write();
                assert!(rw.is_locked() && rw.is_locked_exclusive());
                drop(write);
                assert!(!rw.is_locked() && !rw.is_locked_exclusive());
            }

            #[test]
            fn raw_locks_wrap_an_existing_lock() {
                set_cpu(1);
                let mutex = Mutex::<TicketLock, ThreadCpu, _>::from_raw(
                    RawKernelMutex::from_lock(TicketLock::with_cpus(2)),
                    'x',
                );
                assert_eq!(*mutex.lock(), 'x');
                let rw = RwLock::<BrLock<2>, ThreadCpu, _>::from_raw(
                    RawKernelRwLock::from_lock(BrLock::new()),
                    1,
                );
                *rw.write() += 1;
                assert_eq!(*rw.read(), 2);
            }

            #[test]
            #[cfg(debug_assertions)]
            #[should_panic(expected = "lock_api adapter: guard taken on CPU 0 released on CPU 1")]
            fn mutex_guard_released_on_other_cpu_panics() {
                let mutex: Mutex<Ticket, ThreadCpu, ()> = Mutex::new(());
                drop_migrated(0, 1, || mutex.lock());
            }

            #[test]
            #[cfg(debug_assertions)]
            #[should_panic(expected = "lock_api adapter: guard taken on CPU 1 released on CPU 0")]
            fn write_guard_released_on_other_cpu_panics() {
                let rw: RwLock<BrLock<2>, ThreadCpu, ()> = RwLock::new(());
                drop_migrated(1, 0, || rw.write());
            }

            #[test]
            #[cfg(debug_assertions)]
            #[should_panic(expected = $read_migrated)]
            fn read_guard_released_on_other_cpu_panics() {
                let rw: RwLock<BrLock<2>, ThreadCpu, ()> = RwLock::new(());
                drop_migrated(1, 0, || rw.read());
            }

            /// The panic of a migrated exclusive guard comes after the release: the lock is free.
            #[test]
            #[cfg(debug_assertions)]
            fn migrated_exclusive_guards_release_before_panicking() {
                use std::panic::{catch_unwind, AssertUnwindSafe};

                let mutex: Mutex<Clh, ThreadCpu, ()> = Mutex::new(());
                let rw: RwLock<BrLock<2>, ThreadCpu, ()> = RwLock::new(());
                set_cpu(0);
                let (guard, write) = (mutex.lock(), rw.write());
                set_cpu(1);
                assert!(catch_unwind(AssertUnwindSafe(|| drop(guard))).is_err());
                assert!(catch_unwind(AssertUnwindSafe(|| drop(write))).is_err());
                assert!(!mutex.is_locked() && !rw.is_locked());
                // CPU 1 can take both, and CPU 0 after it.
                drop((mutex.lock(), rw.write()));
                set_cpu(0);
                drop((mutex.lock(), rw.write()));
            }

            /// Release builds: a migrated exclusive guard releases the hold of the CPU that
            /// took it (no check, no panic), so the lock is free for every CPU afterwards.
            #[test]
            #[cfg(not(debug_assertions))]
            fn release_migrated_exclusive_guards_leave_the_lock_free() {
                let mutex: Mutex<Clh, ThreadCpu, u32> = Mutex::new(0);
                let rw: RwLock<BrLock<2>, ThreadCpu, u32> = RwLock::new(0);
                set_cpu(0);
                let (mut guard, mut write) = (mutex.lock(), rw.write());
                (*guard, *write) = (1, 1);
                set_cpu(1);
                drop((guard, write));
                assert!(!mutex.is_locked() && !rw.is_locked());
                *mutex.lock() += 1;
                *rw.write() += 1;
                set_cpu(0);
                assert_eq!((*mutex.lock(), *rw.read()), (2, 2));
            }
        }
    };
}

#[cfg(feature = "lock_api")]
adapter_tests!(
    v04,
    read_migrated: "BrLock: read_unlock by CPU 0, which does not hold the lock shared"
);

#[cfg(feature = "lock_api_05")]
adapter_tests!(
    v05,
    read_migrated: "lock_api adapter: guard taken on CPU 1 released on CPU 0"
);

/// What only `lock_api` 0.5 has: guard state, here the CPU that took the lock.
#[cfg(feature = "lock_api_05")]
mod v05_guard_state {
    use kernel_locks::lock_api_adapter::{RawKernelMutex, RawKernelRwLock};
    use kernel_locks::BrLock;
    use lock_api_05::{RawMutex, RawRwLock};

    use super::{set_cpu, ThreadCpu, Ticket};

    #[test]
    fn guard_state_names_the_cpu_that_locked() {
        set_cpu(3);
        let raw: RawKernelMutex<Ticket, ThreadCpu> = RawMutex::INIT;
        let held = raw.lock();
        assert_eq!(held.cpu(), 3);
        assert!(raw.try_lock().is_none());
        // SAFETY: `held` is the state of the acquisition just above, on this CPU.
        unsafe { raw.unlock(held) };
        let rw: RawKernelRwLock<BrLock<4>, ThreadCpu> = RawRwLock::INIT;
        let shared = rw.try_lock_shared().expect("a free lock");
        assert_eq!(shared.cpu(), 3);
        assert!(rw.is_locked() && !rw.is_locked_exclusive());
        // SAFETY: the state of the shared acquisition just above, on this CPU.
        unsafe { rw.unlock_shared(shared) };
        assert!(!rw.is_locked());
    }

    /// A migrated read guard releases the hold of the CPU that took it, then panics (debug
    /// builds): a writer is not locked out by a reader slot left raised.
    #[test]
    #[cfg(debug_assertions)]
    fn migrated_read_guard_releases_before_panicking() {
        use std::panic::{catch_unwind, AssertUnwindSafe};

        use kernel_locks::lock_api_adapter::v05::RwLock;

        let rw: RwLock<BrLock<2>, ThreadCpu, u8> = RwLock::new(0);
        set_cpu(1);
        let read = rw.read();
        set_cpu(0);
        assert!(catch_unwind(AssertUnwindSafe(|| drop(read))).is_err());
        assert!(!rw.is_locked());
        *rw.try_write().expect("no reader left") += 1;
        set_cpu(1);
        assert_eq!(*rw.read(), 1);
    }
}
