//! Starting the application processors (APs): INIT-SIPI-SIPI and the real-mode trampoline.
//!
//! An AP wakes up from a STARTUP IPI in 16-bit real mode at physical address `vector << 12`,
//! so its first code must sit in the first megabyte, 4 KiB aligned, in RAM that nothing else
//! uses. The HAL copies the trampoline to [`TRAMPOLINE_PHYS`] = 0x8000 (SIPI vector 0x08):
//! above the real-mode IVT and BIOS data area (0..0x500) and the traditional boot sector at
//! 0x7C00, far below the EBDA (~0x9FC00) and the video/BIOS areas (0xA0000..), and usable RAM in
//! the PVH memory map of every QEMU machine (checked at run time). The PVH start info, which the
//! loader also puts in low memory, has been copied into kernel statics before (see
//! [`pvh`](crate::pvh)).
//!
//! The trampoline goes real mode -> 32-bit protected mode (own GDT, flat segments) -> long mode
//! with the kernel's page tables (CR3 from the data block; the kernel tables map the trampoline
//! page at its physical address, the only identity mapping they have, so that it stays mapped
//! across the switch; EFER.NXE is set together with EFER.LME, before paging, because the
//! kernel tables use the execute-disable bit) -> jumps to the higher-half `ap_entry` on the
//! stack the bootstrap processor chose, with the core index in `rdi`. APs are started one at a
//! time because they share the trampoline's data block; each AP reports its progress there
//! (1 = real mode, 2 = protected mode, 3 = long mode), so a failed start says where it stopped.

use core::arch::global_asm;
use core::sync::atomic::{AtomicU64, Ordering};

use hal_common::smp::Bringup;

use crate::acpi::AcpiInfo;
use crate::paging::phys_to_virt;
use crate::percpu::{self, CpuIndex, KERNEL_STACKS, MAX_CPUS, PERCPU};
use crate::time::wait_until;
use crate::{apic, gdt, interrupts};

/// Physical address of the AP trampoline (STARTUP vector 0x08).
pub const TRAMPOLINE_PHYS: u64 = 0x8000;

global_asm!(
    r#"
    .section .rodata.hal_trampoline, "a"
    .balign 16
    .global hal_trampoline_start
hal_trampoline_start:
    .code16
    cli
    cld
    movw %cs, %ax
    movw %ax, %ds
    movw $1, (hal_tramp_flag - hal_trampoline_start)
    lgdtl (hal_tramp_gdtr - hal_trampoline_start)
    movl %cr0, %eax
    orl $1, %eax
    movl %eax, %cr0
    .byte 0x66, 0xEA
    .long {base} + (hal_tramp_pm32 - hal_trampoline_start)
    .word 0x08

    .code32
hal_tramp_pm32:
    movw $0x10, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movl $2, ({base} + (hal_tramp_flag - hal_trampoline_start))
    movl ({base} + (hal_tramp_cr3 - hal_trampoline_start)), %eax
    movl %eax, %cr3
    movl %cr4, %eax
    orl $0xA0, %eax
    movl %eax, %cr4
    movl $0xC0000080, %ecx
    rdmsr
    orl $0x900, %eax
    wrmsr
    movl %cr0, %eax
    orl $0x80010001, %eax
    movl %eax, %cr0
    .byte 0xEA
    .long {base} + (hal_tramp_lm64 - hal_trampoline_start)
    .word 0x18

    .code64
hal_tramp_lm64:
    movw $0x10, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movq ({base} + (hal_tramp_stack - hal_trampoline_start)), %rsp
    movq ({base} + (hal_tramp_cpu - hal_trampoline_start)), %rdi
    movq ({base} + (hal_tramp_entry - hal_trampoline_start)), %rax
    movl $3, ({base} + (hal_tramp_flag - hal_trampoline_start))
    xorl %ebp, %ebp
    callq *%rax
    ud2

    .balign 8
hal_tramp_gdt:
    .quad 0
    .quad 0x00CF9A000000FFFF
    .quad 0x00CF92000000FFFF
    .quad 0x00AF9A000000FFFF
hal_tramp_gdtr:
    .word 31
    .long {base} + (hal_tramp_gdt - hal_trampoline_start)

    .balign 8
    .global hal_trampoline_data
hal_trampoline_data:
hal_tramp_cr3:
    .quad 0
hal_tramp_stack:
    .quad 0
hal_tramp_entry:
    .quad 0
hal_tramp_cpu:
    .quad 0
hal_tramp_flag:
    .quad 0
    .global hal_trampoline_end
hal_trampoline_end:
    .code64
    .text
"#,
    base = const TRAMPOLINE_PHYS,
    options(att_syntax),
);

/// The data block at the end of the trampoline (must match the assembly above).
#[repr(C)]
struct TrampolineData {
    cr3: u64,
    stack: u64,
    entry: u64,
    cpu: u64,
    flag: u64,
}

unsafe extern "C" {
    static hal_trampoline_start: u8;
    static hal_trampoline_data: u8;
    static hal_trampoline_end: u8;
}

/// Wait between INIT and the first STARTUP IPI, in microseconds; `u64::MAX` = default: 10 ms
/// as the MultiProcessor Specification asks, 0 under a hypervisor (CPUID.01H:ECX[31]), whose
/// virtual CPUs process INIT at once (saves 10 ms per AP under QEMU).
static INIT_DELAY_US: AtomicU64 = AtomicU64::new(u64::MAX);

/// Overrides the wait between INIT and STARTUP (default: 10 ms on hardware, 0 under a
/// hypervisor).
pub fn set_init_delay_us(us: u64) {
    INIT_DELAY_US.store(us, Ordering::Relaxed);
}

static BRINGUP: Bringup = Bringup::new();

/// Number of cores online (the bootstrap processor included).
pub fn online_count() -> usize {
    hal_common::smp::online_count(PERCPU.iter().map(|c| &**c))
}

/// Number of cores the HAL knows (started or tried), after [`start_aps`].
pub fn cpu_count() -> usize {
    BRINGUP.cpu_count()
}

/// One AP that did not come up.
#[derive(Clone, Copy, Debug)]
pub struct StartFailure {
    /// Its local APIC id.
    pub apic_id: u32,
    /// The core index it was given.
    pub cpu: CpuIndex,
    /// How far it got: 0 = never ran, 1 = real mode, 2 = protected mode, 3 = long mode (but
    /// did not reach Rust / report online).
    pub stage: u64,
}

/// Outcome of [`start_aps`]: `expected` counts the enabled processors the MADT lists (bounded
/// by [`MAX_CPUS`]).
pub type StartReport = hal_common::smp::StartReport<StartFailure, MAX_CPUS>;

/// Starts every enabled processor of the MADT except the caller (the bootstrap processor), one
/// after the other; each AP runs `ap_main(its index)` once its GDT, TSS, IDT and local APIC are
/// set up. Waits for each AP with a timeout (500 ms) and reports failures instead of hanging.
///
/// Call once, from the bootstrap processor, after [`init`](crate::boot).
pub fn start_aps(acpi: &AcpiInfo, ap_main: fn(CpuIndex) -> !) -> StartReport {
    BRINGUP.set_ap_main(ap_main);
    let bsp_apic = percpu::PERCPU[0].apic_id();
    let mut report = StartReport::new(1, 0);

    // SAFETY: the symbols delimit the trampoline blob in .rodata.
    let (start, data, end) = unsafe {
        (
            &hal_trampoline_start as *const u8,
            &hal_trampoline_data as *const u8,
            &hal_trampoline_end as *const u8,
        )
    };
    let len = end as usize - start as usize;
    let dst = phys_to_virt(TRAMPOLINE_PHYS);
    // SAFETY: 0x8000.. is usable low RAM that nothing else uses (see the module docs; the PVH
    // data there was copied out during boot), mapped by the physical window; `len` < 4 KiB.
    unsafe { core::ptr::copy_nonoverlapping(start, dst, len) };
    // SAFETY: same page; the data block lies inside the copied blob, 8-byte aligned.
    let block = unsafe { dst.add(data as usize - start as usize) } as *mut TrampolineData;

    let init_delay = match INIT_DELAY_US.load(Ordering::Relaxed) {
        u64::MAX if crate::platform().is_some_and(|p| p.cpu.hypervisor) => 0,
        u64::MAX => 10_000,
        us => us,
    };
    let mut next = 1;
    for lapic in acpi.enabled_cpus() {
        if lapic.apic_id == bsp_apic {
            continue;
        }
        if next >= MAX_CPUS {
            report.skipped += 1;
            continue;
        }
        report.expected += 1;
        let cpu = next;
        next += 1;
        percpu::register(cpu, lapic.apic_id);
        let td = TrampolineData {
            cr3: crate::paging::current_root(),
            stack: KERNEL_STACKS.top(cpu),
            entry: ap_entry as extern "C" fn(CpuIndex) -> ! as usize as u64,
            cpu: cpu as u64,
            flag: 0,
        };
        // SAFETY: the block is in the copied trampoline; no AP reads it now: the previous AP
        // either reached Rust (it read the block before) or was parked with INIT.
        unsafe { block.write_volatile(td) };
        core::sync::atomic::fence(Ordering::SeqCst);

        let stage = || {
            // SAFETY: `flag` is a field of the mapped block; APs write it, hence volatile.
            unsafe { core::ptr::addr_of!((*block).flag).read_volatile() }
        };
        apic::send_init(lapic.apic_id);
        crate::time::delay_us(init_delay);
        apic::send_startup(lapic.apic_id, (TRAMPOLINE_PHYS >> 12) as u8);
        if !wait_until(1_000, || stage() != 0) {
            apic::send_startup(lapic.apic_id, (TRAMPOLINE_PHYS >> 12) as u8);
        }
        let up = wait_until(500_000, || PERCPU[cpu].is_online());
        if up {
            report.started();
        } else {
            report.failed(StartFailure {
                apic_id: lapic.apic_id,
                cpu,
                stage: stage(),
            });
            // Park it: a late AP must not run on a data block rewritten for the next one.
            apic::send_init(lapic.apic_id);
        }
    }
    BRINGUP.set_cpu_count(next);
    // Every AP has left the trampoline (or was parked with INIT): its writable and executable
    // identity page goes (see `paging::init_kernel_space`).
    crate::paging::unmap_trampoline();
    report
}

/// First Rust code of an AP, called by the trampoline on the AP's own kernel stack.
extern "C" fn ap_entry(cpu: CpuIndex) -> ! {
    let rdtscp = crate::platform().map(|p| p.cpu.rdtscp).unwrap_or(false);
    // SAFETY: `cpu` is this core's index, chosen by `start_aps`; done first, as `cpu_id` needs it.
    unsafe { percpu::install(cpu, rdtscp) };
    percpu::record_efer(cpu);
    // SAFETY: once per core, by the core itself.
    unsafe { gdt::init(cpu) };
    interrupts::load_idt();
    apic::init_local();
    PERCPU[cpu].set_online();
    match BRINGUP.ap_main() {
        Some(f) => f(cpu),
        None => unreachable!("start_aps sets ap_main before it starts an AP"),
    }
}
