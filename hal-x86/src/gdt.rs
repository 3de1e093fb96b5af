//! Per-core GDT and TSS.
//!
//! Every core has its own GDT because the TSS descriptor differs per core (each TSS holds that
//! core's IST stack pointers, and `ltr` marks the descriptor busy). The segment order fits the
//! later `syscall`/`sysret` convention (STAR: kernel CS, kernel SS = CS + 8; user SS = base + 8,
//! user CS = base + 16 with base = [`KERNEL_DATA`]):
//!
//! | selector | descriptor           |
//! |----------|----------------------|
//! | 0x08     | kernel code (64-bit) |
//! | 0x10     | kernel data          |
//! | 0x1B     | user data (RPL 3)    |
//! | 0x23     | user code (RPL 3)    |
//! | 0x28     | TSS (16 bytes)       |
//!
//! The double fault handler runs on IST1, a separate per-core stack, so that a kernel stack
//! overflow (or a bad RSP) still produces a report instead of a triple fault.

use core::arch::asm;

use crate::percpu::{CpuIndex, FAULT_STACKS, PERCPU};

/// Kernel code selector.
pub const KERNEL_CODE: u16 = 0x08;
/// Kernel data selector.
pub const KERNEL_DATA: u16 = 0x10;
/// User data selector (with RPL 3).
pub const USER_DATA: u16 = 0x18 | 3;
/// User code selector (with RPL 3).
pub const USER_CODE: u16 = 0x20 | 3;
/// TSS selector.
pub const TSS_SELECTOR: u16 = 0x28;

/// IST slot (1-based, as in the IDT entry) used by the double-fault handler.
pub const DOUBLE_FAULT_IST: u8 = 1;

/// A GDT: null, four segments, a 16-byte TSS descriptor.
#[repr(C, align(16))]
pub struct Gdt([u64; 7]);

impl Gdt {
    pub(crate) const fn new() -> Self {
        Self([0; 7])
    }
}

/// The 64-bit task-state segment (only stack pointers matter in long mode).
#[repr(C, packed(4))]
pub struct Tss {
    _reserved0: u32,
    rsp: [u64; 3],
    _reserved1: u64,
    ist: [u64; 7],
    _reserved2: u64,
    _reserved3: u16,
    iomap_base: u16,
}

impl Tss {
    pub(crate) const fn new() -> Self {
        Self {
            _reserved0: 0,
            rsp: [0; 3],
            _reserved1: 0,
            ist: [0; 7],
            _reserved2: 0,
            _reserved3: 0,
            iomap_base: size_of::<Tss>() as u16,
        }
    }
}

const _: () = assert!(size_of::<Tss>() == 104);

/// Builds and loads core `cpu`'s GDT and TSS, reloads all segment registers and the task
/// register.
///
/// # Safety
/// Called once per core, by core `cpu` itself, before its GS base is relied on (loading GS
/// with a selector would clear the base: this function leaves FS/GS alone).
pub(crate) unsafe fn init(cpu: CpuIndex) {
    let pc = &PERCPU[cpu];
    let mut tss = Tss::new();
    let mut ist = [0u64; 7];
    ist[usize::from(DOUBLE_FAULT_IST) - 1] = FAULT_STACKS.top(cpu);
    tss.ist = ist;
    // Interrupts and exceptions from user mode switch to the top of this core's kernel stack
    // (the same stack the `syscall` entry uses; the kernel keeps no state on it across returns
    // to user mode).
    tss.rsp = [crate::percpu::KERNEL_STACKS.top(cpu), 0, 0];
    let tss_ptr = pc.tss.get();
    // SAFETY: only this core touches its TSS cell, and only here, before `ltr`.
    unsafe { tss_ptr.write(tss) };

    let base = tss_ptr as u64;
    let limit = (size_of::<Tss>() - 1) as u64;
    let tss_low = (limit & 0xFFFF)
        | ((base & 0xFF_FFFF) << 16)
        | (0x89 << 40) // present, type 9 = available 64-bit TSS
        | (((limit >> 16) & 0xF) << 48)
        | (((base >> 24) & 0xFF) << 56);
    let tss_high = base >> 32;
    let gdt = Gdt([
        0,
        0x00AF_9A00_0000_FFFF, // kernel code: present, DPL0, exec/read, L=1
        0x00CF_9200_0000_FFFF, // kernel data: present, DPL0, read/write
        0x00CF_F200_0000_FFFF, // user data: DPL3
        0x00AF_FA00_0000_FFFF, // user code: DPL3, L=1
        tss_low,
        tss_high,
    ]);
    let gdt_ptr = pc.gdt.get();
    // SAFETY: only this core touches its GDT cell, and only here, before `lgdt`.
    unsafe { gdt_ptr.write(gdt) };

    #[repr(C, packed)]
    struct Pointer {
        limit: u16,
        base: u64,
    }
    let ptr = Pointer {
        limit: (size_of::<Gdt>() - 1) as u16,
        base: gdt_ptr as u64,
    };
    // SAFETY: the GDT is static and valid; the far return reloads CS with the kernel code
    // selector (same meaning as the boot GDT's), data segments get the kernel data selector, and
    // `ltr` loads this core's (not yet busy) TSS descriptor.
    unsafe {
        asm!(
            "lgdt [{ptr}]",
            "push {cs}",
            "lea {tmp}, [rip + 2f]",
            "push {tmp}",
            "retfq",
            "2:",
            "mov ds, {ds:x}",
            "mov es, {ds:x}",
            "mov ss, {ds:x}",
            "ltr {tss:x}",
            ptr = in(reg) &ptr,
            cs = const KERNEL_CODE as u64,
            tmp = out(reg) _,
            ds = in(reg) u64::from(KERNEL_DATA),
            tss = in(reg) u64::from(TSS_SELECTOR),
        );
    }
}
