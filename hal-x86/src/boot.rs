//! The PVH entry point: from QEMU's 32-bit hand-off to Rust on the bootstrap processor.
//!
//! QEMU's `-kernel` loader looks for an ELF note named `"Xen"` of type 18
//! (`XEN_ELFNOTE_PHYS32_ENTRY`) whose descriptor is the 32-bit physical entry address, and
//! starts the kernel there in 32-bit protected mode, paging off, with `ebx` pointing at the
//! `hvm_start_info`. The note section is 4-byte aligned because QEMU computes the descriptor
//! offset as `align_up(namesz, p_align)`: with the usual alignment 8 of 64-bit notes it would
//! read the descriptor 4 bytes too far and refuse the kernel.
//!
//! The entry code (in `.boot`, linked at its physical address, see `link.ld`):
//! 1. zeroes `.bss` (QEMU zero-fills segments too, but the code does not rely on it);
//! 2. builds the boot page tables described in [`paging`](crate::paging) (2 MiB pages, all
//!    writable and executable: they only live until `bsp_entry` replaces them);
//! 3. enables PAE, long mode (EFER.LME) and paging, loads a minimal GDT and far-jumps to 64-bit
//!    code, then to the higher half;
//! 4. switches to core 0's kernel stack (above its guard page) and calls `bsp_entry` with the
//!    start info address.
//!
//! `bsp_entry` first sets up the per-core pointer (GS), then checks that the CPU has the
//! execute-disable bit, sets EFER.NXE and switches to the W^X kernel page tables
//! ([`paging::init_kernel_space`]: text read-only and executable, everything else
//! non-executable, stack guard pages unmapped), then sets up the console, GDT/TSS/IDT and the
//! local APIC, reads ACPI, masks every I/O APIC line (`ioapic::init`), calibrates the clocks
//! and calls the kernel's main function, named with [`entry_point!`](crate::entry_point).

use core::arch::global_asm;

use crate::acpi::{self, PhysMemory};
use crate::cpu::{outb, CpuFeatures};
use crate::paging::{self, phys_to_virt, PHYS_MAP_SIZE};
use crate::percpu::{self, BOOT_STACK_TOP_OFFSET, KERNEL_STACKS, PERCPU};
use crate::{apic, console, gdt, interrupts, ioapic, time, Platform, PLATFORM};

global_asm!(
    r#"
    .section .note.pvh, "a", @note
    .balign 4
    .long 4
    .long 4
    .long 18
    .asciz "Xen"
    .balign 4
    .long hal_pvh_start32
    .balign 4

    .section .boot.text, "ax"
    .code32
    .global hal_pvh_start32
hal_pvh_start32:
    cli
    cld
    movl %ebx, %esi

    movl $__bss_start_phys, %edi
    movl $__bss_size, %ecx
    xorl %eax, %eax
    rep stosb

    movl $hal_boot_tables, %edi
    movl $(hal_boot_tables_end - hal_boot_tables) / 4, %ecx
    xorl %eax, %eax
    rep stosl

    movl $hal_boot_pdpt_low + 3, %eax
    movl %eax, hal_boot_pml4
    movl %eax, hal_boot_pml4 + 256 * 8
    movl $hal_boot_pdpt_high + 3, %eax
    movl %eax, hal_boot_pml4 + 511 * 8

    movl $hal_boot_pd + 3, %eax
    movl %eax, hal_boot_pdpt_low
    movl %eax, hal_boot_pdpt_high + 510 * 8
    addl $4096, %eax
    movl %eax, hal_boot_pdpt_low + 8
    movl %eax, hal_boot_pdpt_high + 511 * 8
    addl $4096, %eax
    movl %eax, hal_boot_pdpt_low + 16
    addl $4096, %eax
    movl %eax, hal_boot_pdpt_low + 24

    xorl %ecx, %ecx
2:
    movl %ecx, %eax
    shll $21, %eax
    orl $0x83, %eax
    cmpl $2032, %ecx
    jb 3f
    orl $0x18, %eax
3:
    movl %eax, hal_boot_pd(, %ecx, 8)
    incl %ecx
    cmpl $2048, %ecx
    jb 2b

    movl $hal_boot_pml4, %eax
    movl %eax, %cr3
    movl %cr4, %eax
    orl $0xA0, %eax
    movl %eax, %cr4
    movl $0xC0000080, %ecx
    rdmsr
    orl $0x100, %eax
    wrmsr
    movl %cr0, %eax
    orl $0x80010001, %eax
    movl %eax, %cr0
    lgdt hal_boot_gdtr
    ljmp $0x08, $hal_boot_long64

    .code64
hal_boot_long64:
    movw $0x10, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    xorl %eax, %eax
    movw %ax, %fs
    movw %ax, %gs
    movabsq $hal_boot_high64, %rax
    jmpq *%rax

    .section .boot.data, "aw"
    .balign 16
hal_boot_gdt:
    .quad 0
    .quad 0x00AF9A000000FFFF
    .quad 0x00CF92000000FFFF
hal_boot_gdtr:
    .word 23
    .long hal_boot_gdt

    .section .boot.bss, "aw", @nobits
    .balign 4096
hal_boot_tables:
    .global hal_boot_pml4
hal_boot_pml4:
    .skip 4096
hal_boot_pdpt_low:
    .skip 4096
hal_boot_pdpt_high:
    .skip 4096
hal_boot_pd:
    .skip 4 * 4096
hal_boot_tables_end:

    .text
hal_boot_high64:
    movabsq ${stacks} + {stack_size}, %rsp
    xorl %ebp, %ebp
    movl %esi, %edi
    callq {entry}
    ud2
    .code64
    .text
"#,
    stacks = sym KERNEL_STACKS,
    stack_size = const BOOT_STACK_TOP_OFFSET,
    entry = sym bsp_entry,
    options(att_syntax),
);

/// The kernel's view of physical memory, for the ACPI reader.
struct PhysWindow;

impl PhysMemory for PhysWindow {
    fn read(&self, phys: u64, len: usize) -> Option<&[u8]> {
        let end = phys.checked_add(len as u64)?;
        if end > PHYS_MAP_SIZE {
            return None;
        }
        // SAFETY: the range lies in the physical window, mapped for the kernel's lifetime;
        // firmware tables are not written while the kernel reads them.
        Some(unsafe { core::slice::from_raw_parts(phys_to_virt(phys), len) })
    }
}

/// Masks both legacy 8259 PICs, so that only the local APIC delivers interrupts.
fn mask_pic() {
    // SAFETY: writing the interrupt-mask registers of the 8259 pair (absent ports are ignored).
    unsafe {
        outb(0x21, 0xFF);
        outb(0xA1, 0xFF);
    }
}

unsafe extern "Rust" {
    /// The kernel's main function, defined by [`entry_point!`](crate::entry_point).
    safe fn hal_x86_kernel_main(platform: &'static Platform) -> !;
}

/// First Rust code on the bootstrap processor.
extern "C" fn bsp_entry(start_info_phys: u32) -> ! {
    time::mark_boot();
    let cpu = CpuFeatures::detect();
    // SAFETY: core 0 is the bootstrap processor; done before anything uses `cpu_id`.
    unsafe { percpu::install(0, cpu.rdtscp) };
    if !cpu.nx {
        // The W^X page tables need the execute-disable bit (every x86_64 CPU QEMU models and
        // every real one since 2004 has it); without it NX would be a reserved bit.
        console::init();
        crate::println!(
            "hal-x86: the CPU has no execute-disable (NX) bit; cannot protect the kernel"
        );
        crate::exit::exit_qemu(crate::exit::ExitCode::Failure);
    }
    crate::cpu::enable_nx();
    // SAFETY: once, on the bootstrap processor, still on the boot tables, before any other
    // core runs; EFER.NXE is set just above.
    unsafe { paging::init_kernel_space() };
    percpu::record_efer(0);
    console::init();
    // SAFETY: once, by core 0 itself.
    unsafe { gdt::init(0) };
    interrupts::init_idt();
    interrupts::load_idt();
    mask_pic();

    // SAFETY: once, on the bootstrap processor, with the loader's `ebx` (bit 0 set by the
    // multiboot2 entry).
    let boot = match unsafe { crate::multiboot2::boot_info(start_info_phys) } {
        Ok(b) => b,
        Err(e) => {
            crate::println!("hal-x86: no usable boot information (PVH or multiboot2): {e:?}");
            crate::exit::exit_qemu(crate::exit::ExitCode::Failure);
        }
    };
    let acpi = match boot.rsdp {
        Some(rsdp) => acpi::parse(&PhysWindow, rsdp),
        None => Err(acpi::AcpiError::Unreadable(0)),
    };
    let bsp_apic_id = apic::init_local();
    percpu::register(0, bsp_apic_id);
    PERCPU[0].set_online();
    let ioapic = ioapic::init(acpi.as_ref().ok(), bsp_apic_id);
    let clock = time::calibrate(acpi.as_ref().ok(), boot.cmdline_value("clock"));
    let platform = PLATFORM.set(Platform {
        boot,
        cpu,
        acpi,
        bsp_apic_id,
        ioapic,
        clock,
        stack_top: KERNEL_STACKS.top(0),
    });
    hal_x86_kernel_main(platform)
}
