//! Per-core state, indexed by the core number.
//!
//! The core index is MPIDR.Aff0: QEMU's sabrelite (one Cortex-A9 cluster) and virt (clusters
//! of 8 for GICv2) number the cores 0, 1, 2, ... in Aff0, and so does the real i.MX6Q. Reading
//! MPIDR is one `mrc`, cheap enough that no per-core pointer register is needed yet (TPIDRPRW
//! stays free for the kernel).

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// Most cores the HAL supports (static arrays and stacks are sized by it).
pub const MAX_CPUS: usize = 8;

/// Index of a core, `0..MAX_CPUS`, 0 being the boot core. Same meaning as `kernel_locks::CpuId`.
pub type CpuIndex = usize;

/// State of one core. Every field is atomic: other cores read it (online flags, counters).
pub struct PerCpu {
    index: CpuIndex,
    /// Set by the core once it runs Rust code with its MMU, caches and GIC interface on.
    pub(crate) online: AtomicBool,
    /// Timer interrupts taken.
    pub(crate) ticks: AtomicU64,
    /// Software-generated interrupts (IPIs) received.
    pub(crate) ipis: AtomicU64,
    /// CPSR value at this core's entry (mode it was started in).
    pub(crate) entry_psr: AtomicU32,
    /// MPIDR of this core.
    pub(crate) mpidr: AtomicU32,
}

impl PerCpu {
    const fn new(index: CpuIndex) -> Self {
        Self {
            index,
            online: AtomicBool::new(false),
            ticks: AtomicU64::new(0),
            ipis: AtomicU64::new(0),
            entry_psr: AtomicU32::new(0),
            mpidr: AtomicU32::new(0),
        }
    }

    /// This core's index.
    pub fn index(&self) -> CpuIndex {
        self.index
    }

    /// Whether the core is up.
    pub fn is_online(&self) -> bool {
        self.online.load(Ordering::Acquire)
    }

    /// Timer interrupts taken.
    pub fn ticks(&self) -> u64 {
        self.ticks.load(Ordering::Relaxed)
    }

    /// IPIs (SGIs) received.
    pub fn ipis(&self) -> u64 {
        self.ipis.load(Ordering::Acquire)
    }

    /// CPSR at entry.
    pub fn entry_psr(&self) -> u32 {
        self.entry_psr.load(Ordering::Relaxed)
    }

    /// MPIDR of the core.
    pub fn mpidr(&self) -> u32 {
        self.mpidr.load(Ordering::Relaxed)
    }
}

const fn make_percpu() -> [PerCpu; MAX_CPUS] {
    let mut i = 0;
    let mut a = [const { PerCpu::new(0) }; MAX_CPUS];
    while i < MAX_CPUS {
        a[i] = PerCpu::new(i);
        i += 1;
    }
    a
}

/// Every core's state.
pub static PERCPU: [PerCpu; MAX_CPUS] = make_percpu();

/// Index of the calling core (MPIDR.Aff0).
#[inline]
pub fn cpu_id() -> CpuIndex {
    (crate::cpu::mpidr() & 0xFF) as CpuIndex
}

/// The calling core's state.
#[inline]
pub fn this_cpu() -> &'static PerCpu {
    // The entry code parks any core with Aff0 >= MAX_CPUS, so the index is in range.
    &PERCPU[cpu_id() % MAX_CPUS]
}
