//! A stand-in for another project's `no_std` kernel that embeds `kernel-locks` by path, the way an
//! outside kernel does: its own workspace, its own `mod sync`, its own `--cfg loom` runs, a core
//! count learnt at boot, and data behind locks taken with explicit CPU ids. The counters that its
//! timer interrupt updates too are locked with the interrupt-safe guards
//! (`lock_irqsave`), over the CPU's own mask on bare metal ([`Irq`]).
//!
//! It builds for `x86_64-unknown-none` and `armv7a-none-eabi` (no std, no allocator) and its
//! `tests/stress.rs` runs every lock with several threads on the host, with exact totals.
//! [`irq_cost_plain`] and [`irq_cost_irqsave`] are the two halves of the interrupt-safe
//! guard's cost figures in the lock crate's `irq` documentation: the same ticket lock taken and
//! released plainly and interrupt-safely, out of line so that their disassembly can be read.
#![no_std]

/// The kernel's own synchronisation module. Its name is what the lock crate was once called
/// (`sync`): with the crate named `kernel_locks`, both coexist.
pub mod sync {
    pub use kernel_locks::{BrLock, ClhLock, Mutex, RwLock, TicketLock};

    /// The compile-time bound on cores; the real count comes at boot.
    pub const MAX_CPUS: usize = 8;
}

use kernel_locks::lock_api_adapter::{self, CurrentCpu};
use kernel_locks::{ConstInit, CpuId, KernelLock, KernelLockIrq, Relax, RtmLock};

/// The kernel's interrupt mask: the CPU's (RFLAGS.IF, CPSR.I) on bare metal.
#[cfg(target_os = "none")]
pub type Irq = kernel_locks::irq::Native;
/// The kernel's interrupt mask: on a host, where user mode cannot mask interrupts, the lock
/// crate's per-thread double.
#[cfg(not(target_os = "none"))]
pub type Irq = kernel_locks::irq::testing::TestInterrupts;
use sync::{BrLock, ClhLock, Mutex, RwLock, TicketLock, MAX_CPUS};

/// Per-CPU system-call counts and their total, kept consistent under one lock.
#[derive(Debug, Default)]
pub struct Counters {
    /// Calls made on each CPU.
    pub per_cpu: [u64; MAX_CPUS],
    /// The sum of `per_cpu`, updated in the same critical section.
    pub total: u64,
    /// Timer interrupts taken on each CPU (updated by the interrupt handler).
    pub ticks: [u64; MAX_CPUS],
}

/// A routing table: every entry equals `generation` once an update is complete.
#[derive(Debug, Default)]
pub struct Routes {
    /// Bumped by every update.
    pub generation: u64,
    /// Each entry is set to `generation` by the update.
    pub targets: [u64; 4],
}

/// The kernel's state, with one lock per kind of data. `R` is the kernel's wait strategy.
pub struct Kernel<R: Relax> {
    /// The big lock: a CLH queue lock sized at boot.
    pub counters: Mutex<ClhLock<MAX_CPUS, R>, Counters>,
    /// Read on every call, written rarely: a big-reader lock sized at boot.
    pub routes: RwLock<BrLock<MAX_CPUS, R>, Routes>,
    /// A ticket lock that range-checks the boot-time count.
    pub tickets: Mutex<TicketLock<R>, u64>,
    /// Lock elision over a ticket fallback (the fallback path without RTM).
    pub elided: Mutex<RtmLock<TicketLock<R>, MAX_CPUS, R>, u64>,
}

impl<R: Relax> Kernel<R> {
    /// The kernel for `cpus` cores (`1..=MAX_CPUS`), as found at boot.
    pub fn boot(cpus: usize) -> Self {
        Self {
            counters: Mutex::new(ClhLock::with_cpus(cpus), Counters::default()),
            routes: RwLock::new(BrLock::with_cpus(cpus), Routes::default()),
            tickets: Mutex::new(TicketLock::with_relax_and_cpus(cpus), 0),
            elided: Mutex::new(RtmLock::new(TicketLock::with_relax_and_cpus(cpus)), 0),
        }
    }

    /// How many cores the kernel was booted with.
    pub fn cpus(&self) -> usize {
        self.counters.raw().max_cpus()
    }

    /// One "system call" on `cpu`: reads the routes, then updates every counter.
    pub fn syscall(&self, cpu: CpuId) {
        {
            let routes = self.routes.read(cpu);
            let first = routes.targets[0];
            assert!(
                routes.targets.iter().all(|t| *t == first) && first == routes.generation,
                "torn routing table seen by a reader"
            );
        }
        {
            // The timer interrupt takes this lock too: masked while it is held.
            let mut counters = self.counters.lock_irqsave::<Irq>(cpu);
            counters.per_cpu[cpu] += 1;
            counters.total += 1;
        }
        *self.tickets.lock(cpu) += 1;
        *self.elided.lock(cpu) += 1;
    }

    /// The timer interrupt handler on `cpu` (entered with interrupts masked): counts the tick
    /// under the same lock as [`syscall`](Self::syscall), whose interrupt-safe guard keeps this
    /// handler from arriving on a CPU that holds it.
    pub fn timer_tick(&self, cpu: CpuId) {
        self.counters.lock_irqsave::<Irq>(cpu).ticks[cpu] += 1;
    }

    /// Rewrites the routing table on `cpu`, entry by entry (a reader in between would see it).
    pub fn update_routes(&self, cpu: CpuId) {
        let mut routes = self.routes.write(cpu);
        routes.generation += 1;
        let generation = routes.generation;
        for target in routes.targets.iter_mut() {
            *target = generation;
        }
    }
}

/// A kernel without per-CPU registers yet (early boot): everything runs on CPU 0.
pub struct BootCpu;

impl CurrentCpu for BootCpu {
    fn current() -> CpuId {
        0
    }
}

/// A boot log behind the `lock_api` adapter, built in a constant (needs `ConstInit`, which a
/// kernel's `--cfg loom` must not remove).
pub static BOOT_LOG: lock_api_adapter::Mutex<TicketLock, BootCpu, [u8; 16]> =
    lock_api_adapter::Mutex::new([0; 16]);

/// A lock in a static, built by a `const fn` constructor.
pub static EARLY: Mutex<ClhLock<MAX_CPUS>, u32> = Mutex::new(ClhLock::new(), 0);

/// A lock built through `ConstInit` (which a kernel's `--cfg loom` must not remove either).
pub static BY_CONST_INIT: Mutex<TicketLock, ()> = Mutex::new(<TicketLock as ConstInit>::INIT, ());

/// Takes and releases `lock` for `cpu` plainly: the baseline of the interrupt-safe guard's cost.
#[inline(never)]
pub fn irq_cost_plain(lock: &TicketLock, cpu: CpuId) {
    lock.lock(cpu);
    // SAFETY: `cpu` took the lock just above.
    unsafe { lock.unlock(cpu) };
}

/// Takes and releases `lock` for `cpu` with interrupts masked around it (`lock_irqsave`,
/// `unlock_irqrestore`): [`irq_cost_plain`] plus the masking.
#[inline(never)]
pub fn irq_cost_irqsave(lock: &TicketLock, cpu: CpuId) {
    let saved = lock.lock_irqsave::<Irq>(cpu);
    // SAFETY: `cpu` took the lock just above, with this token.
    unsafe { lock.unlock_irqrestore(cpu, saved) };
}
