//! The kernel instance a `lock=` choice boots: the one place that maps a [`LockChoice`] to a
//! [`kernel::Strategy`] value, and that states why the lock-free strategy is sound for the
//! systems the images build.

use kernel::config::MAX_CPUS;
use kernel::{BigLock, FineGrained, NoLock, Rtm, Strategy};
use kernel_locks::ticket::TicketLock;
use kernel_locks::{qspin_node_pool, ClhLock, McsLock, QSpinLock};

use crate::cmdline::{Config, LockChoice};
use crate::lockcost::KernelLockOf;

// The queue nodes of the `qspin` big lock, for the image's one kernel: four per core, one for
// each nesting context the lock crate provides (task, soft interrupt, interrupt, NMI), of
// which the kernel needs one. It takes the big lock once per entry, in the entry's own
// context, whether the entry is a system call, an exception or an interrupt (from user mode or
// from the idle loop), and its entries never nest: the HALs enter the kernel with the core's
// interrupts masked and keep them so until the return to user mode or the idle loop
// (`hal_common::usermode`; the kernel's entry panics on a nested one), so no interrupt arrives
// while a core waits for the lock or holds it, and every wait uses the core's first node.
// NMIs, machine checks and double faults are fatal and take no lock, and the images' locks
// wait with `Spin`, which takes none either.
qspin_node_pool!(pub KernelQNodes, MAX_CPUS);

/// What an image does with the strategy it was given: build the system and run it.
pub trait Boot {
    /// Builds the initial system on a kernel with `strategy` and starts it; never returns.
    /// (The kernel's lock of the strategy is what the lock-cost measurement of benchmark mode
    /// times: [`KernelLockOf`].)
    fn boot<S: Strategy + KernelLockOf + 'static>(self, strategy: S, cfg: Config) -> !;
}

/// Boots `image` with the strategy `lock` names, its locks made for the `cfg.cores` cores the
/// kernel runs on (the run-time count of the lock crate's `with_cpus`: a core beyond it that
/// entered the kernel would panic in the lock, and the big-reader writer drains only their
/// slots). Their memory is still that of [`MAX_CPUS`].
pub fn boot_with<B: Boot>(lock: LockChoice, cfg: Config, image: B) -> ! {
    let n = cfg.cores;
    match lock {
        LockChoice::Clh => image.boot(BigLock::new(ClhLock::<MAX_CPUS>::with_cpus(n)), cfg),
        LockChoice::Ticket => image.boot(BigLock::new(TicketLock::with_cpus(n)), cfg),
        LockChoice::Mcs => image.boot(BigLock::new(McsLock::<MAX_CPUS>::with_cpus(n)), cfg),
        // The pool's cores, all `MAX_CPUS` (a pool has no run-time count): the kernel refuses
        // an entry from a core beyond `n` itself.
        LockChoice::Qspin => image.boot(BigLock::new(QSpinLock::<KernelQNodes>::new()), cfg),
        LockChoice::Fine => image.boot(FineGrained::<kernel_locks::Spin>::with_cpus(n), cfg),
        // Without RTM (AMD, QEMU TCG, ARMv7-A) `kernel_locks::Rtm` detects that at run time and always
        // takes its fallback CLH lock.
        LockChoice::Rtm => image.boot(
            Rtm::<_, kernel_locks::Rtm, kernel_locks::Spin>::new(ClhLock::<MAX_CPUS>::with_cpus(n)),
            cfg,
        ),
        LockChoice::None => {
            // SAFETY: the demo's, the test suite's and the benchmarks' objects are per core:
            // every thread of core c uses only endpoints, notifications and address spaces of
            // core c, the root task makes its management calls before any other core enters the
            // kernel (the other cores wait for its RELEASE), the pager test (a management call
            // after the release) is left out under this strategy (see `system::build`), and the
            // command line refuses the shared client-server benchmark, the memory benchmark and
            // the network server on several cores (`Cmdline::on_cores`).
            image.boot(unsafe { NoLock::new() }, cfg)
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use core::cell::Cell;

    use kernel_locks::KernelLock;

    use super::*;
    use crate::cmdline::Cmdline;
    use crate::lockcost::WithLock;

    /// An image that, instead of booting, stops with the name of the lock its strategy lends
    /// the lock-cost measurement (`None`: no one lock).
    struct Lent;

    struct Name<'a>(&'a Cell<Option<&'static str>>);

    impl WithLock for Name<'_> {
        fn with<L: KernelLock>(self, lock: &L) {
            self.0.set(Some(lock.name()));
        }
    }

    impl Boot for Lent {
        fn boot<S: Strategy + KernelLockOf + 'static>(self, strategy: S, _cfg: Config) -> ! {
            let name = Cell::new(None);
            strategy.with_kernel_lock(Name(&name));
            std::panic::panic_any(name.get())
        }
    }

    #[test]
    fn the_lock_cost_records_name_the_lock_each_strategy_lends() {
        for e in lock_registry::ENTRIES {
            let cfg = Cmdline::parse(|k| (k == "lock").then_some(e.name))
                .and_then(|c| c.on_cores(1))
                .unwrap();
            let stop = std::panic::catch_unwind(|| boot_with(e.lock, cfg, Lent)).unwrap_err();
            let lent = *stop.downcast::<Option<&'static str>>().unwrap();
            // The records of the kernel's lock carry the boot's `lock=` word: planned exactly
            // where the strategy lends a lock of that name other than the ticket lock (which
            // the `ticket` records measure).
            assert_eq!(
                crate::bench::measures_kernel_lock(e.name),
                lent.is_some_and(|n| n != "ticket"),
                "{}: lends {lent:?}",
                e.name
            );
            if crate::bench::measures_kernel_lock(e.name) {
                assert_eq!(lent, Some(e.name));
            }
        }
    }
}
