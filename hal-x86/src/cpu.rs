//! Thin wrappers over single x86_64 instructions: port I/O, MSRs, `cpuid`, the TSC, control
//! registers, `hlt`, and the interrupt flag; plus the boot-time feature report.
//!
//! These are hand-written `asm!` rather than the `x86_64` crate so that the HAL has one
//! dependency (`spin`) and builds on stable without feature juggling.

use core::arch::asm;

/// Writes a byte to an I/O port.
///
/// # Safety
/// Port writes reach devices directly; the caller must know what the device at `port` does.
#[inline]
pub unsafe fn outb(port: u16, value: u8) {
    // SAFETY: the caller vouches for the device side effects; `out` touches no memory.
    unsafe {
        asm!("out dx, al", in("dx") port, in("al") value, options(nomem, nostack, preserves_flags))
    }
}

/// Reads a byte from an I/O port.
///
/// # Safety
/// Port reads can have device side effects (for example acknowledging a status).
#[inline]
pub unsafe fn inb(port: u16) -> u8 {
    let value: u8;
    // SAFETY: the caller vouches for the device side effects; `in` touches no memory.
    unsafe {
        asm!("in al, dx", in("dx") port, out("al") value, options(nomem, nostack, preserves_flags))
    }
    value
}

/// Writes a 32-bit value to an I/O port.
///
/// # Safety
/// As for [`outb`].
#[inline]
pub unsafe fn outl(port: u16, value: u32) {
    // SAFETY: as for `outb`.
    unsafe {
        asm!("out dx, eax", in("dx") port, in("eax") value, options(nomem, nostack, preserves_flags))
    }
}

/// Reads a 32-bit value from an I/O port.
///
/// # Safety
/// As for [`inb`].
#[inline]
pub unsafe fn inl(port: u16) -> u32 {
    let value: u32;
    // SAFETY: as for `inb`.
    unsafe {
        asm!("in eax, dx", in("dx") port, out("eax") value, options(nomem, nostack, preserves_flags))
    }
    value
}

/// Reads a model-specific register.
///
/// # Safety
/// Reading an MSR the CPU does not implement raises #GP.
#[inline]
pub unsafe fn rdmsr(msr: u32) -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: the caller guarantees the MSR exists; `rdmsr` touches no memory.
    unsafe {
        asm!("rdmsr", in("ecx") msr, out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags))
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Writes a model-specific register.
///
/// # Safety
/// MSRs control the CPU (GS base, EFER, APIC base...): the caller must keep the machine sound.
#[inline]
pub unsafe fn wrmsr(msr: u32, value: u64) {
    // SAFETY: the caller guarantees the write is sound.
    unsafe {
        asm!("wrmsr", in("ecx") msr, in("eax") value as u32, in("edx") (value >> 32) as u32,
             options(nostack, preserves_flags))
    }
}

/// The four registers returned by `cpuid`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuidResult {
    /// `eax` output.
    pub eax: u32,
    /// `ebx` output.
    pub ebx: u32,
    /// `ecx` output.
    pub ecx: u32,
    /// `edx` output.
    pub edx: u32,
}

/// Executes `cpuid` for `leaf` / `subleaf`.
#[inline]
pub fn cpuid(leaf: u32, subleaf: u32) -> CpuidResult {
    let (eax, ebx, ecx, edx): (u32, u32, u32, u32);
    // SAFETY: `cpuid` exists on every x86_64 CPU and has no side effects; LLVM reserves rbx, so
    // it is saved in a scratch register around the instruction.
    unsafe {
        asm!(
            "mov {tmp:r}, rbx",
            "cpuid",
            "xchg {tmp:r}, rbx",
            tmp = out(reg) ebx,
            inout("eax") leaf => eax,
            inout("ecx") subleaf => ecx,
            out("edx") edx,
            options(nomem, nostack, preserves_flags),
        )
    }
    CpuidResult { eax, ebx, ecx, edx }
}

/// Reads the time-stamp counter (`rdtsc`; not ordered with respect to earlier instructions).
#[inline]
pub fn rdtsc() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: `rdtsc` is allowed in ring 0 and only reads the counter.
    unsafe { asm!("rdtsc", out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags)) }
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Reads the time-stamp counter with `rdtscp`, which waits for earlier instructions, and
/// returns it with `IA32_TSC_AUX` (which the HAL sets to the core index).
///
/// Check [`CpuFeatures::rdtscp`] first: without it the instruction raises #UD.
#[inline]
pub fn rdtscp() -> (u64, u32) {
    let (lo, hi, aux): (u32, u32, u32);
    // SAFETY: callers check `rdtscp` support (a #UD would be reported, not undefined behaviour).
    unsafe {
        asm!("rdtscp", out("eax") lo, out("edx") hi, out("ecx") aux, options(nomem, nostack, preserves_flags))
    }
    ((u64::from(hi) << 32) | u64::from(lo), aux)
}

/// Reads CR2 (the faulting address of the last page fault).
#[inline]
pub fn read_cr2() -> u64 {
    let v: u64;
    // SAFETY: reading CR2 in ring 0 has no side effects.
    unsafe { asm!("mov {}, cr2", out(reg) v, options(nomem, nostack, preserves_flags)) }
    v
}

/// `IA32_EFER`, the extended feature enable register.
pub const IA32_EFER: u32 = 0xC000_0080;
/// EFER.NXE: the execute-disable bit (bit 63 of page-table entries) is honoured. Without it
/// that bit is reserved and any entry that sets it faults.
pub const EFER_NXE: u64 = 1 << 11;

/// Reads `IA32_EFER`.
pub fn read_efer() -> u64 {
    // SAFETY: EFER exists on every x86_64 CPU (long mode is on).
    unsafe { rdmsr(IA32_EFER) }
}

/// Sets EFER.NXE on the calling core (the bootstrap processor; application processors set it
/// in the trampoline, before paging). Call only where CPUID reports NX
/// ([`CpuFeatures::nx`]).
pub fn enable_nx() {
    // SAFETY: the caller checked CPUID.80000001H:EDX[20], so the bit is not reserved; setting
    // it only gives meaning to a page-table bit that no entry in use sets yet.
    unsafe { wrmsr(IA32_EFER, read_efer() | EFER_NXE) }
}

/// Reads CR3 (physical address of the current top-level page table, plus flags).
#[inline]
pub fn read_cr3() -> u64 {
    let v: u64;
    // SAFETY: reading CR3 in ring 0 has no side effects.
    unsafe { asm!("mov {}, cr3", out(reg) v, options(nomem, nostack, preserves_flags)) }
    v
}

/// Writes CR3, switching address space (and flushing non-global TLB entries).
///
/// # Safety
/// `value` must point at a valid PML4 that maps the kernel (code, stacks, per-core data) exactly
/// as the current one does.
#[inline]
pub unsafe fn write_cr3(value: u64) {
    // SAFETY: the caller guarantees the new tables map the running kernel.
    unsafe { asm!("mov cr3, {}", in(reg) value, options(nostack, preserves_flags)) }
}

/// Stops this core until the next interrupt.
#[inline]
pub fn hlt() {
    // SAFETY: `hlt` in ring 0 only waits.
    unsafe { asm!("hlt", options(nomem, nostack, preserves_flags)) }
}

/// Spin-loop hint (`pause`).
#[inline]
pub fn pause() {
    core::hint::spin_loop();
}

/// Enables interrupts on this core.
#[inline]
pub fn enable_interrupts() {
    // SAFETY: the IDT is loaded before any code calls this (see `init`); `sti` touches no memory,
    // but it is not `nomem` so that it orders with surrounding accesses like a compiler fence.
    unsafe { asm!("sti", options(nostack)) }
}

/// Disables interrupts on this core.
#[inline]
pub fn disable_interrupts() {
    // SAFETY: `cli` only clears IF.
    unsafe { asm!("cli", options(nostack)) }
}

/// Whether interrupts are enabled on this core (RFLAGS.IF).
#[inline]
pub fn interrupts_enabled() -> bool {
    let flags: u64;
    // SAFETY: reads RFLAGS through the stack (push/pop), nothing else.
    unsafe { asm!("pushfq", "pop {}", out(reg) flags, options(nomem, preserves_flags)) }
    flags & (1 << 9) != 0
}

/// Runs `f` with interrupts masked on this core, restoring the previous state afterwards.
#[inline]
pub fn without_interrupts<R>(f: impl FnOnce() -> R) -> R {
    <crate::X86Hal as hal_common::console::IrqMask>::without_interrupts(f)
}

/// Disables interrupts and halts this core forever.
pub fn halt_forever() -> ! {
    disable_interrupts();
    loop {
        hlt();
    }
}

/// CPU features the HAL reports at boot and that later code may branch on.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuFeatures {
    /// Vendor string from leaf 0 (`GenuineIntel`, `AuthenticAMD`, ...), ASCII.
    pub vendor: [u8; 12],
    /// Highest basic leaf.
    pub max_leaf: u32,
    /// Intel RTM (`xbegin`/`xend`), CPUID.07H:EBX bit 11. QEMU TCG does not offer it.
    pub rtm: bool,
    /// Intel HLE, CPUID.07H:EBX bit 4.
    pub hle: bool,
    /// `rdtscp` and `IA32_TSC_AUX`, CPUID.80000001H:EDX bit 27.
    pub rdtscp: bool,
    /// Invariant TSC (constant rate in all power states), CPUID.80000007H:EDX bit 8.
    pub invariant_tsc: bool,
    /// x2APIC mode, CPUID.01H:ECX bit 21 (TCG in QEMU 7.2 does not offer it).
    pub x2apic: bool,
    /// TSC-deadline LAPIC timer mode, CPUID.01H:ECX bit 24.
    pub tsc_deadline: bool,
    /// Execute-disable page bit (EFER.NXE), CPUID.80000001H:EDX bit 20.
    pub nx: bool,
    /// 1 GiB pages, CPUID.80000001H:EDX bit 26.
    pub page_1g: bool,
    /// Running under a hypervisor, CPUID.01H:ECX bit 31.
    pub hypervisor: bool,
}

impl CpuFeatures {
    /// Queries `cpuid` on the calling core.
    pub fn detect() -> Self {
        let l0 = cpuid(0, 0);
        let mut vendor = [0u8; 12];
        vendor[0..4].copy_from_slice(&l0.ebx.to_le_bytes());
        vendor[4..8].copy_from_slice(&l0.edx.to_le_bytes());
        vendor[8..12].copy_from_slice(&l0.ecx.to_le_bytes());
        let l1 = cpuid(1, 0);
        let l7 = if l0.eax >= 7 {
            cpuid(7, 0)
        } else {
            CpuidResult::default()
        };
        let max_ext = cpuid(0x8000_0000, 0).eax;
        let e1 = if max_ext >= 0x8000_0001 {
            cpuid(0x8000_0001, 0)
        } else {
            CpuidResult::default()
        };
        let e7 = if max_ext >= 0x8000_0007 {
            cpuid(0x8000_0007, 0)
        } else {
            CpuidResult::default()
        };
        Self {
            vendor,
            max_leaf: l0.eax,
            rtm: l7.ebx & (1 << 11) != 0,
            hle: l7.ebx & (1 << 4) != 0,
            rdtscp: e1.edx & (1 << 27) != 0,
            invariant_tsc: e7.edx & (1 << 8) != 0,
            x2apic: l1.ecx & (1 << 21) != 0,
            tsc_deadline: l1.ecx & (1 << 24) != 0,
            nx: e1.edx & (1 << 20) != 0,
            page_1g: e1.edx & (1 << 26) != 0,
            hypervisor: l1.ecx & (1 << 31) != 0,
        }
    }

    /// The vendor string as `&str` (`"?"` if it is not ASCII).
    pub fn vendor_str(&self) -> &str {
        core::str::from_utf8(&self.vendor).unwrap_or("?")
    }
}
