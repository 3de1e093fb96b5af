//! Per-core state, reached through the GS base.
//!
//! Each core's `IA32_GS_BASE` points at its [`PerCpu`] in the static [`PERCPU`] array, whose
//! first field is the core index, so [`cpu_id`] is one `mov rax, gs:[0]`. The local APIC id ->
//! index table [`index_of_apic_id`] serves the other direction (MADT entries, IPI targets).
//!
//! Core indices are dense: 0 is the bootstrap processor, APs get 1, 2, ... in MADT order. APIC
//! ids need not be dense.
//!
//! User code runs with its own (zero) GS base: every kernel entry from user mode (`syscall`,
//! interrupts and exceptions with CS.RPL = 3) executes `swapgs` first, and every return to
//! user mode executes it last, so user code can never choose the GS base the kernel trusts
//! (see [`usermode`](crate::usermode)).

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

use crate::gdt::{Gdt, Tss};

/// Most cores the HAL supports (static arrays are sized by it).
pub const MAX_CPUS: usize = 16;

pub use hal_common::percpu::{CoreStats, CpuIndex};

/// Size of each core's kernel stack. Large enough for the bootstrap processor to build the
/// kernel object (up to about 120 KiB, returned by value) on it, even in debug builds, where the
/// boot path also keeps copies of the strategy (up to about 40 KiB for the fine-grained one)
/// in the frames it passes through.
pub const KERNEL_STACK_SIZE: usize = 512 * 1024;

/// Offset of [`PerCpu::kstack_top`] from the GS base (used by the `syscall` entry assembly).
pub const PERCPU_KSTACK_OFFSET: usize = core::mem::offset_of!(PerCpu, kstack_top);
/// Offset of [`PerCpu::scratch`] from the GS base.
pub const PERCPU_SCRATCH_OFFSET: usize = core::mem::offset_of!(PerCpu, scratch);
/// Offset of [`PerCpu::user_frame_top`] from the GS base.
pub const PERCPU_USER_FRAME_OFFSET: usize = core::mem::offset_of!(PerCpu, user_frame_top);
/// Size of each core's double-fault (IST1) stack.
pub const FAULT_STACK_SIZE: usize = 16 * 1024;

/// State owned by one core. Fields other than `index` are atomics or cells touched only by the
/// owning core (GDT, TSS) or during its bring-up.
#[repr(C)]
pub struct PerCpu {
    /// Core index; must stay the first field (`gs:[0]`).
    index: usize,
    /// Top of this core's kernel stack (`gs:[8]`, read by the `syscall` entry to switch stacks).
    pub(crate) kstack_top: AtomicU64,
    /// Scratch slot for the user stack pointer during `syscall` entry (`gs:[16]`).
    pub(crate) scratch: AtomicU64,
    /// The end of the saved context of the thread this core last returned to user mode
    /// (`gs:[24]`): the `syscall` entry pushes that thread's registers straight into it
    /// (see [`usermode`](crate::usermode)).
    pub(crate) user_frame_top: AtomicU64,
    /// Local APIC id of this core.
    pub(crate) apic_id: AtomicU32,
    /// Online (set once the core runs Rust code with its GDT, IDT and LAPIC set up), timer
    /// ticks and IPIs; reached through `Deref`.
    stats: CoreStats,
    /// This core's GDT (written once by the owning core before `lgdt`).
    pub(crate) gdt: UnsafeCell<Gdt>,
    /// This core's TSS (written once by the owning core before `ltr`).
    pub(crate) tss: UnsafeCell<Tss>,
}

// SAFETY: the cells are only written by the owning core during its own initialisation, before
// the CPU (not Rust code) reads them; every other field is atomic.
unsafe impl Sync for PerCpu {}

impl PerCpu {
    const fn new(index: usize) -> Self {
        Self {
            index,
            kstack_top: AtomicU64::new(0),
            scratch: AtomicU64::new(0),
            user_frame_top: AtomicU64::new(0),
            apic_id: AtomicU32::new(u32::MAX),
            stats: CoreStats::new(),
            gdt: UnsafeCell::new(Gdt::new()),
            tss: UnsafeCell::new(Tss::new()),
        }
    }

    /// This core's index.
    pub fn index(&self) -> CpuIndex {
        self.index
    }

    /// This core's local APIC id.
    pub fn apic_id(&self) -> u32 {
        self.apic_id.load(Ordering::Relaxed)
    }
}

impl core::ops::Deref for PerCpu {
    type Target = CoreStats;
    fn deref(&self) -> &CoreStats {
        &self.stats
    }
}

const fn make_percpu() -> [PerCpu; MAX_CPUS] {
    let mut a = [const { PerCpu::new(0) }; MAX_CPUS];
    let mut i = 0;
    while i < MAX_CPUS {
        a[i].index = i;
        i += 1;
    }
    a
}

/// Every core's state, indexed by [`CpuIndex`].
pub static PERCPU: [PerCpu; MAX_CPUS] = make_percpu();

/// Size of the unmapped guard page below every kernel and fault stack.
pub const GUARD_SIZE: usize = 4096;

/// A stack with its guard page below it, page aligned. The guard is ordinary `.bss` as far as
/// the linker knows; [`paging::init_kernel_space`](crate::paging::init_kernel_space) leaves it
/// out of the kernel's page tables, so that a push or call that runs off the bottom of the
/// stack faults (and is reported, see [`stack_guard_at`]) instead of overwriting whatever lies
/// below (the previous core's stack).
#[repr(C, align(4096))]
pub(crate) struct Stack<const N: usize> {
    guard: UnsafeCell<[u8; GUARD_SIZE]>,
    stack: UnsafeCell<[u8; N]>,
}

/// One stack per core; only raw pointers to them are ever formed.
pub(crate) struct Stacks<const N: usize>([Stack<N>; MAX_CPUS]);

// SAFETY: the HAL only hands out the top address of a stack, each to exactly one core; the
// guard pages are never accessed (they are not mapped).
unsafe impl<const N: usize> Sync for Stacks<N> {}

impl<const N: usize> Stacks<N> {
    const fn new() -> Self {
        const { assert!(N % GUARD_SIZE == 0, "stack sizes are whole pages") };
        Self(
            [const {
                Stack {
                    guard: UnsafeCell::new([0; GUARD_SIZE]),
                    stack: UnsafeCell::new([0; N]),
                }
            }; MAX_CPUS],
        )
    }

    /// The initial stack pointer (one past the end) of core `cpu`'s stack.
    pub(crate) fn top(&self, cpu: CpuIndex) -> u64 {
        self.0[cpu].stack.get() as u64 + N as u64
    }

    /// The address of core `cpu`'s guard page.
    pub(crate) fn guard(&self, cpu: CpuIndex) -> u64 {
        self.0[cpu].guard.get() as u64
    }

    /// The core whose guard page contains `addr`, if any.
    fn guard_owner(&self, addr: u64) -> Option<CpuIndex> {
        (0..MAX_CPUS).find(|&c| (self.guard(c)..self.guard(c) + GUARD_SIZE as u64).contains(&addr))
    }
}

/// Offset of core 0's kernel stack top from `KERNEL_STACKS` (for the boot assembly).
pub(crate) const BOOT_STACK_TOP_OFFSET: usize = GUARD_SIZE + KERNEL_STACK_SIZE;

/// Kernel stacks; core 0's is set up by the boot assembly.
pub(crate) static KERNEL_STACKS: Stacks<KERNEL_STACK_SIZE> = Stacks::new();
/// Double-fault stacks (IST1).
pub(crate) static FAULT_STACKS: Stacks<FAULT_STACK_SIZE> = Stacks::new();

/// Which kind of stack a guard page protects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackKind {
    /// A core's kernel stack (`syscall`, interrupts, the kernel).
    Kernel,
    /// A core's double-fault (IST1) stack.
    DoubleFault,
}

/// A guard page that an address falls in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackGuard {
    /// The stack it protects.
    pub kind: StackKind,
    /// The core that stack belongs to.
    pub owner: CpuIndex,
    /// The guard page's address.
    pub guard: u64,
}

/// The guard page `addr` lies in, if it lies in one (of any core's kernel or fault stack).
pub fn stack_guard_at(addr: u64) -> Option<StackGuard> {
    let hit = |kind, stacks_guard: Option<CpuIndex>, guard: fn(CpuIndex) -> u64| {
        stacks_guard.map(|owner| StackGuard {
            kind,
            owner,
            guard: guard(owner),
        })
    };
    hit(StackKind::Kernel, KERNEL_STACKS.guard_owner(addr), |c| {
        KERNEL_STACKS.guard(c)
    })
    .or_else(|| {
        hit(
            StackKind::DoubleFault,
            FAULT_STACKS.guard_owner(addr),
            |c| FAULT_STACKS.guard(c),
        )
    })
}

/// Every guard page (kernel stacks, then fault stacks), for the page-table set-up and the
/// self-tests.
pub fn stack_guards() -> impl Iterator<Item = u64> {
    (0..MAX_CPUS)
        .map(|c| KERNEL_STACKS.guard(c))
        .chain((0..MAX_CPUS).map(|c| FAULT_STACKS.guard(c)))
}

/// Each core's `IA32_EFER` as it found it after switching to the kernel page tables (for the
/// self-test that every core runs with EFER.NXE).
static EFER_AT_BOOT: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

/// Records the calling core's EFER (core `cpu`, once it runs on the kernel page tables).
pub(crate) fn record_efer(cpu: CpuIndex) {
    EFER_AT_BOOT[cpu].store(crate::cpu::read_efer(), Ordering::Release);
}

/// Core `cpu`'s EFER as recorded during its bring-up (0 if it never came up).
pub fn efer_at_boot(cpu: CpuIndex) -> u64 {
    EFER_AT_BOOT[cpu].load(Ordering::Acquire)
}

const NO_CPU: u8 = u8::MAX;
static APIC_TO_INDEX: [AtomicU8; 256] = [const { AtomicU8::new(NO_CPU) }; 256];

/// Records that the core with local APIC id `apic_id` has index `cpu`.
pub(crate) fn register(cpu: CpuIndex, apic_id: u32) {
    PERCPU[cpu].apic_id.store(apic_id, Ordering::Relaxed);
    if let Some(slot) = APIC_TO_INDEX.get(apic_id as usize) {
        slot.store(cpu as u8, Ordering::Release);
    }
}

/// The core index of local APIC id `apic_id`, if such a core was registered.
pub fn index_of_apic_id(apic_id: u32) -> Option<CpuIndex> {
    let v = APIC_TO_INDEX.get(apic_id as usize)?.load(Ordering::Acquire);
    (v != NO_CPU).then_some(v as usize)
}

/// Points this core's GS base (and `IA32_TSC_AUX`, read by `rdtscp`) at core `cpu`.
///
/// # Safety
/// Called once per core, early, with the core's own index.
pub(crate) unsafe fn install(cpu: CpuIndex, rdtscp: bool) {
    let base = &PERCPU[cpu] as *const PerCpu as u64;
    PERCPU[cpu]
        .kstack_top
        .store(KERNEL_STACKS.top(cpu), Ordering::Relaxed);
    // SAFETY: IA32_GS_BASE (0xC000_0101) exists on every x86_64 CPU; the caller guarantees the
    // index is this core's. IA32_TSC_AUX exists when rdtscp does.
    unsafe {
        crate::cpu::wrmsr(0xC000_0101, base);
        if rdtscp {
            crate::cpu::wrmsr(0xC000_0103, cpu as u64);
        }
    }
}

/// Index of the calling core.
#[inline]
pub fn cpu_id() -> CpuIndex {
    let id: usize;
    // SAFETY: GS base points at this core's `PerCpu` from the first Rust instruction on (boot and
    // AP entry install it first), and `index` is at offset 0.
    unsafe {
        core::arch::asm!("mov {}, gs:[0]", out(reg) id, options(nostack, readonly, preserves_flags))
    }
    // SAFETY: the word is the `index` of the `PERCPU` element that GS points at (`install`
    // took its address with a checked index), which `make_percpu` set to its position, below
    // MAX_CPUS. Stated, so that indexing a per-core table with it needs no bounds check (three
    // per system call on the kernel's path).
    unsafe { core::hint::assert_unchecked(id < MAX_CPUS) };
    id
}

/// Sets the calling core's [`PerCpu::user_frame_top`] through GS: one store (indexing
/// `PERCPU` with the core's index took a multiply and an address computation, on every
/// return to user mode).
#[inline(always)]
pub(crate) fn set_user_frame_top(top: u64) {
    // SAFETY: GS base points at this core's `PerCpu` in the kernel (as for `cpu_id`); the
    // field is an `AtomicU64`, which this aligned 8-byte store writes as a relaxed store
    // would; only this core reads it (its `syscall` entry).
    unsafe {
        core::arch::asm!(
            "mov gs:[{off}], {top}",
            off = const PERCPU_USER_FRAME_OFFSET,
            top = in(reg) top,
            options(nostack, preserves_flags)
        )
    }
}

/// The calling core's state.
#[inline]
pub fn this_cpu() -> &'static PerCpu {
    &PERCPU[cpu_id()]
}
