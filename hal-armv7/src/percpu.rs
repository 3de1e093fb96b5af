//! Per-core state, indexed by the core number.
//!
//! The core index is MPIDR.Aff0: QEMU's sabrelite (one Cortex-A9 cluster) and virt (clusters
//! of 8 for GICv2) number the cores 0, 1, 2, ... in Aff0, and so does the real i.MX6Q. Reading
//! MPIDR is one `mrc`, cheap enough that no per-core pointer register is needed (TPIDRPRW
//! is only a scratch register of the abort vectors, see `boot`). The user-mode entry stubs
//! read the index from TPIDRURO instead, which each core sets to it at boot
//! (`publish_index`): one `mrc` without the `and` that extracts Aff0, per kernel entry. User
//! code can read TPIDRURO too (it is the user read-only thread ID register), so it learns the
//! core it runs on, as x86's `rdpid` tells; it cannot write it.

use core::sync::atomic::{AtomicU32, Ordering};

/// Most cores the HAL supports (static arrays and stacks are sized by it).
pub const MAX_CPUS: usize = 8;

pub use hal_common::percpu::{CoreStats, CpuIndex};

/// State of one core. Every field is atomic: other cores read it (online flags, counters).
pub struct PerCpu {
    index: CpuIndex,
    /// Online (set once the core runs Rust code with its MMU, caches and GIC interface on),
    /// timer ticks and IPIs (SGIs); reached through `Deref`.
    stats: CoreStats,
    /// CPSR value at this core's entry (mode it was started in).
    pub(crate) entry_psr: AtomicU32,
    /// MPIDR of this core.
    pub(crate) mpidr: AtomicU32,
}

impl PerCpu {
    const fn new(index: CpuIndex) -> Self {
        Self {
            index,
            stats: CoreStats::new(),
            entry_psr: AtomicU32::new(0),
            mpidr: AtomicU32::new(0),
        }
    }

    /// This core's index.
    pub fn index(&self) -> CpuIndex {
        self.index
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

impl core::ops::Deref for PerCpu {
    type Target = CoreStats;
    fn deref(&self) -> &CoreStats {
        &self.stats
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
    let id = (crate::cpu::mpidr() & 0xFF) as CpuIndex;
    // SAFETY: the entry code parks any core whose Aff0 is MAX_CPUS or more before it runs
    // Rust code (`boot`), so every caller's Aff0 is below MAX_CPUS. Stated, so that indexing
    // a per-core table with it needs no bounds check (on the kernel's system-call path).
    unsafe { core::hint::assert_unchecked(id < MAX_CPUS) };
    id
}

/// Sets TPIDRURO to the calling core's index `cpu`, for the user-mode entry stubs (module
/// docs). Once per core at boot, before the core enters user mode.
pub(crate) fn publish_index(cpu: CpuIndex) {
    debug_assert_eq!(cpu, cpu_id());
    // SAFETY: TPIDRURO is a software thread ID register: nothing in the hardware reads it, and
    // only the entry stubs use it (as the core index).
    unsafe {
        core::arch::asm!(
            "mcr p15, 0, {}, c13, c0, 3",
            in(reg) cpu as u32,
            options(nomem, nostack, preserves_flags)
        )
    };
}

/// The calling core's state.
#[inline]
pub fn this_cpu() -> &'static PerCpu {
    &PERCPU[cpu_id()]
}
