//! The kernel instance a `lock=` choice boots: the one place that maps a [`LockChoice`] to a
//! [`kernel::Strategy`] value, and that states why the lock-free strategy is sound for the
//! systems the images build.
//!
//! The queue locks' per-core nodes live here too, and so does the CPU-to-NUMA-node map of the
//! `cna` big lock ([`KernelNuma`]): the boot core fills it from what the firmware describes
//! ([`CnaNodes`]: on x86 the ACPI SRAT's processor affinity, the cores' proximity domains;
//! ARMv7 describes none and every core stays on node 0) before the other cores enter the
//! kernel. The map is a hint to the lock: a core on the wrong node costs locality only.

use kernel::config::MAX_CPUS;
use kernel::{BigLock, FineGrained, NoLock, Rtm, Strategy};
use kernel_locks::cna::{NumaMap, NumaTable};
use kernel_locks::ticket::TicketLock;
use kernel_locks::{
    cna_node_pool, numa_map, qspin_node_pool, ClhLock, CnaLock, McsLock, QSpinLock,
};
use servers::image::memory::NumaSource;

use crate::cmdline::{Config, LockChoice};
use crate::lockcost::KernelLockOf;
use crate::numa::Firmware;

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

// The queue nodes of the `cna` big lock, four per core for the same reasons as
// [`KernelQNodes`] (the kernel uses each core's first), and the cores' NUMA nodes, which the
// boot core fills in (`boot::start`, from [`CnaNodes`] of the firmware's description) before
// the other cores enter the kernel; a core the firmware does not place, and every core where
// it describes nothing, is on node 0.
cna_node_pool!(pub KernelCnaNodes, MAX_CPUS);
numa_map!(pub KernelNuma, MAX_CPUS);

/// The NUMA node of each kernel core for the `cna` big lock, as the firmware describes them
/// ([`Arch::numa`](crate::Arch::numa)): a core's node is its proximity domain, the firmware's
/// own number (the lock only compares them), and 0 for a core the firmware does not place or
/// when it describes nothing. `Display` is the boot line (`cna: ...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CnaNodes {
    /// Where the nodes come from; `None` where the firmware describes none.
    pub source: Option<NumaSource>,
    /// The kernel cores (`0..cores`), at most [`MAX_CPUS`].
    pub cores: usize,
    /// The node of each core (0 from `cores` on).
    pub node: [u32; MAX_CPUS],
    /// How many of the cores the firmware does not place (they are on node 0).
    pub unplaced: usize,
}

impl CnaNodes {
    /// The nodes of the kernel cores `0..cores` in the firmware's description `fw`.
    pub fn of(fw: Option<&Firmware>, cores: usize) -> Self {
        let cores = cores.min(MAX_CPUS);
        let mut nodes = CnaNodes {
            source: fw.map(|fw| fw.source),
            cores,
            node: [0; MAX_CPUS],
            unplaced: 0,
        };
        if let Some(fw) = fw {
            for (node, domain) in nodes.node[..cores].iter_mut().zip(&fw.core_domain) {
                match domain {
                    Some(d) => *node = *d,
                    None => nodes.unplaced += 1,
                }
            }
        }
        nodes
    }

    /// The nodes of the kernel cores.
    pub fn nodes(&self) -> &[u32] {
        &self.node[..self.cores]
    }

    /// Puts each kernel core on its node in `table` (the kernel's is [`KernelNuma::table`]).
    pub fn fill(&self, table: &NumaTable<MAX_CPUS>) {
        for (cpu, &node) in self.nodes().iter().enumerate() {
            table.set(cpu, node);
        }
    }

    /// The same description with each core's node as the map `M` answers it, which is what a
    /// lock over `M` reads (the boot line shows the kernel's map so, once filled).
    pub fn as_read_by<M: NumaMap>(mut self) -> Self {
        for (cpu, node) in self.node[..self.cores].iter_mut().enumerate() {
            *node = M::node_of(cpu);
        }
        self
    }
}

impl core::fmt::Display for CnaNodes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.source {
            None => f.write_str("cna: no NUMA description from the firmware, every core on node 0"),
            Some(source) => {
                write!(
                    f,
                    "cna: cores' NUMA nodes {:?} ({} proximity domains",
                    self.nodes(),
                    source.name()
                )?;
                match self.unplaced {
                    0 => f.write_str(")"),
                    n => write!(f, "; {n} of the cores not placed by it, on node 0)"),
                }
            }
        }
    }
}

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
        // The same for the pool; its map is filled before the other cores enter the kernel.
        LockChoice::Cna => image.boot(
            BigLock::new(CnaLock::<KernelCnaNodes, KernelNuma>::new()),
            cfg,
        ),
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

    /// An SRAT as QEMU's `-M pc -numa` builds it (memory in domains 0 and 1), its cores on
    /// `domains`.
    fn srat(domains: &[Option<u32>]) -> Firmware {
        let mut fw = Firmware::new(NumaSource::Srat);
        fw.core_domain[..domains.len()].copy_from_slice(domains);
        assert!(fw.push_range(0, 128 << 20, 0));
        assert!(fw.push_range(128 << 20, 256 << 20, 1));
        fw
    }

    #[test]
    fn the_cna_lock_puts_each_core_on_its_proximity_domain() {
        let fw = srat(&[Some(0), Some(0), Some(1), Some(1)]);
        let nodes = CnaNodes::of(Some(&fw), 4);
        assert_eq!(nodes.nodes(), [0, 0, 1, 1]);
        assert_eq!(nodes.unplaced, 0);
        assert_eq!(
            std::format!("{nodes}"),
            "cna: cores' NUMA nodes [0, 0, 1, 1] (srat proximity domains)"
        );
        // Only the kernel's cores: with two, both on domain 0.
        assert_eq!(CnaNodes::of(Some(&fw), 2).nodes(), [0, 0]);

        numa_map!(Filled, MAX_CPUS);
        Filled::table().set(5, 9);
        // Read from the map before it is filled: every core on node 0.
        assert_eq!(nodes.as_read_by::<Filled>().nodes(), [0; 4]);
        nodes.fill(Filled::table());
        assert_eq!(nodes.as_read_by::<Filled>(), nodes);
        assert_eq!(
            (0..4).map(Filled::node_of).collect::<std::vec::Vec<_>>(),
            [0, 0, 1, 1]
        );
        // The cores beyond the kernel's are left alone.
        assert_eq!(Filled::node_of(5), 9);
    }

    #[test]
    fn the_cna_lock_keeps_the_firmwares_numbers_and_puts_unplaced_cores_on_node_0() {
        let fw = srat(&[Some(7), None, Some(3)]);
        let nodes = CnaNodes::of(Some(&fw), 3);
        assert_eq!(nodes.nodes(), [7, 0, 3]);
        assert_eq!(nodes.unplaced, 1);
        assert_eq!(
            std::format!("{nodes}"),
            "cna: cores' NUMA nodes [7, 0, 3] (srat proximity domains; 1 of the cores not \
             placed by it, on node 0)"
        );
        let table = NumaTable::<MAX_CPUS>::new();
        table.set(1, 4);
        nodes.fill(&table);
        assert_eq!([table.get(0), table.get(1), table.get(2)], [7, 0, 3]);
    }

    #[test]
    fn without_a_description_every_core_is_on_node_0() {
        let nodes = CnaNodes::of(None, 4);
        assert_eq!(
            (nodes.source, nodes.nodes(), nodes.unplaced),
            (None, &[0; 4][..], 0)
        );
        assert_eq!(
            std::format!("{nodes}"),
            "cna: no NUMA description from the firmware, every core on node 0"
        );
        // More cores than the kernel is built for: its own.
        assert_eq!(CnaNodes::of(None, MAX_CPUS + 3).nodes().len(), MAX_CPUS);
    }
}
