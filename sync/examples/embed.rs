//! Embedding the `kernel-locks` crate in another kernel, through `lock_api`.
//!
//! A kernel provides two things: the index of the CPU it runs on ([`CurrentCpu`]; here a
//! thread-local set when each "CPU" thread starts, in a kernel a per-core register such as
//! `TPIDRPRW` on ARMv7 or `GS`-based per-CPU data on x86_64), and a choice of lock per use. Then it
//! gets `lock_api`'s `Mutex` / `RwLock` with guards that must be dropped on the CPU that took them.
//!
//! Run with `cargo run -p kernel-locks --features lock_api --example embed`.

use std::cell::Cell;

use kernel_locks::lock_api_adapter::{CurrentCpu, Mutex, RwLock};
use kernel_locks::{BrLock, CpuId, KernelLock, Relax, TicketLock};

/// How many CPUs this "machine" has.
const CPUS: usize = 4;

thread_local! {
    /// Stands for the kernel's per-core register holding the CPU index.
    static THIS_CPU: Cell<Option<CpuId>> = const { Cell::new(None) };
}

/// The kernel's answer to "which CPU am I on?".
struct PerCpuRegister;

impl CurrentCpu for PerCpuRegister {
    fn current() -> CpuId {
        THIS_CPU
            .with(Cell::get)
            .expect("CPU id not set up on this core")
    }
}

/// The kernel's wait hook, called in every lock wait loop. A kernel would spin here (`Spin`) or
/// service cross-core requests; these "CPUs" are threads that the host may deschedule, even while
/// they hold a lock or are next in a FIFO queue, so waiting ones give their core away.
#[derive(Default)]
struct HostRelax;

impl Relax for HostRelax {
    fn relax(&mut self, _cpu: CpuId) {
        std::thread::yield_now();
    }
}

/// Call counts per CPU, behind a FIFO ticket lock.
static STATS: Mutex<TicketLock<HostRelax>, PerCpuRegister, [u64; CPUS]> = Mutex::new([0; CPUS]);

/// A routing table read on every "system call" and rarely changed: a big-reader lock, whose read
/// side touches only the reading CPU's own cache line.
static ROUTES: RwLock<BrLock<CPUS, HostRelax>, PerCpuRegister, Routes> = RwLock::new(Routes {
    generation: 0,
    targets: [0; CPUS],
});

/// Every entry of `targets` equals `generation` once an update is complete.
struct Routes {
    generation: u64,
    targets: [u64; CPUS],
}

fn main() {
    // Small: four FIFO-lock "CPUs" on a host with fewer cores convoy (the next in line may be
    // descheduled), which a kernel never sees but a CI machine does.
    const CALLS: u64 = 2_000;
    std::thread::scope(|s| {
        for cpu in 0..CPUS {
            s.spawn(move || {
                // What a kernel does once per core at boot.
                THIS_CPU.with(|c| c.set(Some(cpu)));
                for call in 0..CALLS {
                    // Readers on every CPU, all the time.
                    {
                        let routes = ROUTES.read();
                        assert!(routes.targets.iter().all(|&t| t == routes.generation));
                    }
                    // Now and then, CPU 0 republishes the table.
                    if cpu == 0 && call % 100 == 0 {
                        let mut routes = ROUTES.write();
                        routes.generation += 1;
                        let generation = routes.generation;
                        routes.targets.iter_mut().for_each(|t| *t = generation);
                    }
                    STATS.lock()[cpu] += 1;
                }
            });
        }
    });

    THIS_CPU.with(|c| c.set(Some(0)));
    let stats = STATS.lock();
    let routes = ROUTES.read();
    // SAFETY: only the lock's name is read, nothing is locked through it.
    let (mutex_lock, rw_lock) = unsafe { (STATS.raw().inner(), ROUTES.raw().inner()) };
    println!("{CPUS} CPUs made {CALLS} calls each");
    println!(
        "  per-CPU call counts under the `{}` lock: {:?}",
        mutex_lock.name(),
        *stats
    );
    println!(
        "  routing table republished {} times under the `{}` lock; no reader saw a torn update",
        routes.generation,
        rw_lock.name()
    );
    assert_eq!(stats.iter().sum::<u64>(), CPUS as u64 * CALLS);
    assert_eq!(routes.generation, CALLS.div_ceil(100));
}
