//! The `lock_api` adapters over the ticket and big-reader locks (needs `--features lock_api`).
#![cfg(all(feature = "lock_api", not(kernel_locks_loom)))]

mod common;

use std::cell::Cell;

use kernel_locks::lock_api_adapter::{
    CurrentCpu, Mutex, MutexGuard, RawKernelMutex, RawKernelRwLock, RwLock,
};
use kernel_locks::raw::ConstInit;
use kernel_locks::{BrLock, CpuId, KernelLock, TicketLock};

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
type Br = BrLock<MAX, Yield>;

static COUNTER: Mutex<Ticket, ThreadCpu, u64> = Mutex::new(0);
static BR_AS_MUTEX: Mutex<Br, ThreadCpu, u64> = Mutex::new(0);
static PAIR: RwLock<Br, ThreadCpu, (u64, u64)> = RwLock::new((0, 0));

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
            bump(BR_AS_MUTEX.lock());
        }
    });
    set_cpu(0);
    assert_eq!(*COUNTER.lock(), (threads * ITERS) as u64);
    assert_eq!(*BR_AS_MUTEX.lock(), (threads * ITERS) as u64);
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
fn raw_locks_wrap_an_existing_lock() {
    set_cpu(1);
    let mutex = Mutex::<TicketLock, ThreadCpu, _>::from_raw(
        RawKernelMutex::from_lock(TicketLock::with_max_cpus(2)),
        'x',
    );
    assert_eq!(*mutex.lock(), 'x');
    let rw =
        RwLock::<BrLock<2>, ThreadCpu, _>::from_raw(RawKernelRwLock::from_lock(BrLock::new()), 1);
    *rw.write() += 1;
    assert_eq!(*rw.read(), 2);
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "lock_api adapter: guard taken on CPU 0 released on CPU 1")]
fn mutex_guard_released_on_other_cpu_panics() {
    let mutex: Mutex<Ticket, ThreadCpu, ()> = Mutex::new(());
    set_cpu(0);
    let guard = mutex.lock();
    set_cpu(1); // as if the holder migrated to another core
    drop(guard);
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "lock_api adapter: guard taken on CPU 1 released on CPU 0")]
fn write_guard_released_on_other_cpu_panics() {
    let rw: RwLock<BrLock<2>, ThreadCpu, ()> = RwLock::new(());
    set_cpu(1);
    let guard = rw.write();
    set_cpu(0);
    drop(guard);
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "BrLock: read_unlock by CPU 0, which does not hold the lock shared")]
fn read_guard_released_on_other_cpu_panics() {
    let rw: RwLock<BrLock<2>, ThreadCpu, ()> = RwLock::new(());
    set_cpu(1);
    let guard = rw.read();
    set_cpu(0);
    drop(guard);
}
