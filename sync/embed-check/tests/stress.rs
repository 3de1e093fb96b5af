//! The embedding kernel on host threads (thread `i` acting as CPU `i`): exact totals for every
//! lock after many concurrent system calls and route updates.

use std::sync::Barrier;

use kernel_locks::irq::{without_interrupts, Interrupts};
use kernel_locks::{CpuId, KernelLock, Relax, TicketLock};
use kernel_locks_embed_check::{
    irq_cost_irqsave, irq_cost_plain, Irq, Kernel, BOOT_LOG, BY_CONST_INIT, EARLY,
};

/// Spin a little, then give the host core away: more threads than cores would otherwise
/// convoy behind a descheduled FIFO waiter (a kernel has one CPU per waiter).
#[derive(Default)]
struct HostRelax(u32);

impl Relax for HostRelax {
    fn relax(&mut self, _cpu: CpuId) {
        self.0 += 1;
        if self.0 % 16 == 0 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

#[test]
fn every_lock_keeps_exact_totals_across_threads() {
    const CALLS: u64 = 20_000;
    const UPDATES_EVERY: u64 = 50;
    const TICK_EVERY: u64 = 7;
    let cpus = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .clamp(4, 8);
    let kernel = Kernel::<HostRelax>::boot(cpus);
    assert_eq!(kernel.cpus(), cpus);
    let start = Barrier::new(cpus);
    std::thread::scope(|s| {
        for cpu in 0..cpus {
            let (kernel, start) = (&kernel, &start);
            s.spawn(move || {
                start.wait();
                for call in 0..CALLS {
                    kernel.syscall(cpu);
                    if call % UPDATES_EVERY == 0 {
                        kernel.update_routes(cpu);
                    }
                    if call % TICK_EVERY == 0 {
                        // An interrupt handler is entered masked.
                        without_interrupts::<Irq, _>(|| kernel.timer_tick(cpu));
                    }
                    assert!(Irq::are_enabled(), "a guard left interrupts masked");
                }
            });
        }
    });
    let total = cpus as u64 * CALLS;
    let counters = kernel.counters.lock(0);
    assert_eq!(counters.total, total, "CLH: lost updates");
    assert_eq!(counters.per_cpu[..cpus].iter().sum::<u64>(), total);
    assert!(counters.per_cpu[..cpus].iter().all(|c| *c == CALLS));
    assert!(
        counters.ticks[..cpus]
            .iter()
            .all(|t| *t == CALLS.div_ceil(TICK_EVERY)),
        "lost ticks: {:?}",
        counters.ticks
    );
    drop(counters);
    assert_eq!(*kernel.tickets.lock(1), total, "ticket: lost updates");
    assert_eq!(*kernel.elided.lock(2), total, "rtm: lost updates");
    let routes = kernel.routes.read(3);
    assert_eq!(
        routes.generation,
        cpus as u64 * CALLS.div_ceil(UPDATES_EVERY)
    );
    assert!(routes.targets.iter().all(|t| *t == routes.generation));
}

#[test]
fn statics_and_the_lock_api_adapter_work() {
    BOOT_LOG.lock()[0] = b'k';
    assert_eq!(BOOT_LOG.lock()[0], b'k');
    *EARLY.lock(7) += 1;
    assert_eq!(*EARLY.lock(0), 1);
    assert!(!EARLY.raw().is_locked());
    drop(BY_CONST_INIT.lock(5));
}

#[test]
#[should_panic(expected = "BrLock: CPU id 4 out of range (this lock supports CPUs 0..4)")]
fn a_cpu_beyond_the_boot_count_panics() {
    Kernel::<HostRelax>::boot(4).syscall(4);
}

#[test]
fn the_cost_functions_take_and_release_the_lock() {
    let lock = TicketLock::new();
    irq_cost_plain(&lock, 0);
    irq_cost_irqsave(&lock, 1);
    assert!(!lock.is_locked());
    assert!(Irq::are_enabled());
}
