//! The IDT, the interrupt entry stubs, exception reports and interrupt dispatch.
//!
//! One IDT serves every core (it is built once by the bootstrap processor and read-only
//! afterwards); what differs per core (stacks) lives in the per-core TSS, see [`gdt`](crate::gdt).
//!
//! Each of the 256 vectors has a small assembly stub that pushes a zero error code when the CPU
//! does not push one, then the vector number, and jumps to a common path that saves all
//! general-purpose registers into a [`TrapFrame`] and calls `trap_dispatch`. Stable Rust has
//! no `x86-interrupt` ABI, hence the hand-written stubs. The kernel is built soft-float
//! (x86_64-unknown-none), so no SSE state needs saving.
//!
//! Interrupts and exceptions from user mode (CS.RPL = 3) `swapgs` on entry and exit (see
//! [`percpu`](crate::percpu)) and go to [`usermode`](crate::usermode): a user exception is
//! reported and handed to the kernel (pager or stop), a timer tick or IPI enters the kernel,
//! which may switch threads. A timer tick or IPI that wakes an idle core does the same.
//!
//! Device interrupts (I/O APIC lines, vectors [`DEVICE_VECTOR_BASE`]`+ GSI`, see
//! [`ioapic`](crate::ioapic)) are masked at their I/O APIC, then acknowledged at the local
//! APIC, then handed to the kernel (`kernel::Kernel::interrupt`) the same way.
//!
//! Exceptions (vectors 0..32) in kernel mode are fatal: the handler prints vector, name, error code,
//! RIP, CS (and so whether user or kernel code faulted), RFLAGS, RSP, CR2 and the core index,
//! then exits QEMU with [`ExitCode::Failure`](crate::exit::ExitCode) (or halts on hardware).
//! It never hangs silently.

use core::arch::{asm, global_asm};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::gdt::{DOUBLE_FAULT_IST, KERNEL_CODE};
pub use crate::ioapic::DEVICE_VECTOR_BASE;

/// Vector of the local APIC timer.
pub const TIMER_VECTOR: u8 = 0x20;
/// First vector used for IPIs (see [`IpiKind`](crate::apic::IpiKind)).
pub const IPI_VECTOR_BASE: u8 = 0xF0;
/// Number of IPI vectors.
pub const IPI_VECTORS: u8 = 4;
/// Spurious-interrupt vector programmed into the local APIC (needs no EOI).
pub const SPURIOUS_VECTOR: u8 = 0xFF;

/// Registers saved on interrupt entry, lowest address first.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TrapFrame {
    /// Saved `rax` (general-purpose registers are saved by the common stub; the system-call
    /// registers `rax, rdi, rsi, rdx, r10, r8` first and in that order, so that they are the
    /// kernel's `Regs` in place, see `X86User::syscall_regs_ptr`).
    pub rax: u64,
    /// Saved `rdi`.
    pub rdi: u64,
    /// Saved `rsi`.
    pub rsi: u64,
    /// Saved `rdx`.
    pub rdx: u64,
    /// Saved `r10`.
    pub r10: u64,
    /// Saved `r8`.
    pub r8: u64,
    /// Saved `r15`.
    pub r15: u64,
    /// Saved `r14`.
    pub r14: u64,
    /// Saved `r13`.
    pub r13: u64,
    /// Saved `r12`.
    pub r12: u64,
    /// Saved `r9`.
    pub r9: u64,
    /// Saved `rbp`.
    pub rbp: u64,
    /// Saved `rbx`.
    pub rbx: u64,
    /// Saved `r11` (not written by the `syscall` entry: `syscall` replaced it with RFLAGS,
    /// saved in `rflags`; a system call's frame returns with `sysretq`, which reads that).
    pub r11: u64,
    /// Saved `rcx` (not written by the `syscall` entry either: it holds the return address
    /// then, saved in `rip`).
    pub rcx: u64,
    /// Vector number (pushed by the per-vector stub; not written by the `syscall` entry).
    pub vector: u64,
    /// Error code (pushed by the CPU, or 0 by the stub).
    pub error_code: u64,
    /// Interrupted instruction pointer (pushed by the CPU).
    pub rip: u64,
    /// Interrupted code segment; `cs & 3` is the privilege level that was running.
    pub cs: u64,
    /// Interrupted RFLAGS.
    pub rflags: u64,
    /// Interrupted stack pointer.
    pub rsp: u64,
    /// Interrupted stack segment.
    pub ss: u64,
}

/// The 15 general-purpose register pushes that build a [`TrapFrame`] below the vector and
/// error code (AT&T syntax; `rcx` first, so `rax` ends at the lowest address, in
/// [`TrapFrame`]'s order). Shared by the interrupt stubs and the `syscall` entry, whose frames
/// must be the same: the entry leaves out the first two (`push_syscall_clobbered`), which
/// `syscall` overwrote, and pushes the rest (`push_gprs_kept`).
macro_rules! push_gprs {
    () => {
        concat!(push_syscall_clobbered!(), push_gprs_kept!())
    };
}

/// The pushes of RCX and R11, which `syscall` overwrites (with the return address and
/// RFLAGS): the `syscall` entry skips their slots, next to the vector's and the error code's,
/// with one subtraction.
macro_rules! push_syscall_clobbered {
    () => {
        "
    pushq %rcx
    pushq %r11
"
    };
}

/// The other 13 general-purpose register pushes of `push_gprs`.
macro_rules! push_gprs_kept {
    () => {
        "
    pushq %rbx
    pushq %rbp
    pushq %r9
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    pushq %r8
    pushq %r10
    pushq %rdx
    pushq %rsi
    pushq %rdi
    pushq %rax
"
    };
}
pub(crate) use push_gprs_kept;

/// The register pops that undo `push_gprs`, leaving the vector at the stack pointer.
macro_rules! pop_gprs {
    () => {
        "
    popq %rax
    popq %rdi
    popq %rsi
    popq %rdx
    popq %r10
    popq %r8
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %r9
    popq %rbp
    popq %rbx
    popq %r11
    popq %rcx
"
    };
}
pub(crate) use pop_gprs;

// The per-vector stubs and the common path. Vectors 8, 10-14, 17, 21, 29 and 30 get an error
// code from the CPU; the others push a zero so that every frame has the same layout. Each stub's
// address goes into `hal_isr_table` (read by `init_idt`). The frame on entry to the common path
// is 7 quadwords (5 CPU + error + vector); with the 15 register pushes it is 22 quadwords, so RSP
// stays 16-byte aligned (the CPU aligns it before pushing) and the `call` follows the ABI.
global_asm!(
    concat!(
    r#"
    .section .rodata.hal_isr_table, "a"
    .balign 8
    .global hal_isr_table
hal_isr_table:
    .text
    .set hal_vec, 0
    .rept 256
    .balign 16
2:
    .if (hal_vec == 8) || ((hal_vec >= 10) && (hal_vec <= 14)) || (hal_vec == 17) || (hal_vec == 21) || (hal_vec == 29) || (hal_vec == 30)
    .else
    pushq $0
    .endif
    pushq $hal_vec
    jmp hal_isr_common
    .pushsection .rodata.hal_isr_table, "a"
    .quad 2b
    .popsection
    .set hal_vec, hal_vec + 1
    .endr

hal_isr_common:
    cld
    testb $3, 24(%rsp)
    jz 7f
    swapgs
7:
"#,
    push_gprs!(),
    r#"
    movq %rsp, %rdi
    call {dispatch}
"#,
    pop_gprs!(),
    r#"
    addq $16, %rsp
    testb $3, 8(%rsp)
    jz 8f
    swapgs
8:
    iretq
    .text
"#),
    dispatch = sym trap_dispatch,
    options(att_syntax),
);

#[derive(Clone, Copy)]
#[repr(C)]
struct IdtEntry {
    offset_low: u16,
    selector: u16,
    ist: u8,
    type_attr: u8,
    offset_mid: u16,
    offset_high: u32,
    _reserved: u32,
}

impl IdtEntry {
    const MISSING: Self = Self {
        offset_low: 0,
        selector: 0,
        ist: 0,
        type_attr: 0,
        offset_mid: 0,
        offset_high: 0,
        _reserved: 0,
    };

    fn new(handler: u64, ist: u8) -> Self {
        Self {
            offset_low: handler as u16,
            selector: KERNEL_CODE,
            ist,
            type_attr: 0x8E, // present, DPL0, 64-bit interrupt gate (IF cleared on entry)
            offset_mid: (handler >> 16) as u16,
            offset_high: (handler >> 32) as u32,
            _reserved: 0,
        }
    }
}

#[repr(C, align(16))]
struct Idt(UnsafeCell<[IdtEntry; 256]>);

// SAFETY: written once by the bootstrap processor in `init_idt`, before any core loads it;
// read-only (by the CPU) afterwards.
unsafe impl Sync for Idt {}

static IDT: Idt = Idt(UnsafeCell::new([IdtEntry::MISSING; 256]));

/// Fills the shared IDT. Called once, by the bootstrap processor, before [`load_idt`].
pub(crate) fn init_idt() {
    unsafe extern "C" {
        static hal_isr_table: [u64; 256];
    }
    // SAFETY: `hal_isr_table` is the 256-entry table emitted by the stub assembly above.
    let table = unsafe { &hal_isr_table };
    // SAFETY: only the bootstrap processor runs this, before any core has loaded the IDT.
    let idt = unsafe { &mut *IDT.0.get() };
    for (vector, entry) in idt.iter_mut().enumerate() {
        let ist = if vector == 8 { DOUBLE_FAULT_IST } else { 0 };
        *entry = IdtEntry::new(table[vector], ist);
    }
}

/// Loads the shared IDT on the calling core.
pub(crate) fn load_idt() {
    #[repr(C, packed)]
    struct Pointer {
        limit: u16,
        base: u64,
    }
    let ptr = Pointer {
        limit: (size_of::<[IdtEntry; 256]>() - 1) as u16,
        base: IDT.0.get() as u64,
    };
    // SAFETY: the IDT is static and fully initialised by `init_idt` before any core gets here.
    unsafe { asm!("lidt [{}]", in(reg) &ptr, options(readonly, nostack, preserves_flags)) }
}

/// Name of exception vector `v` (`"?"` past 31).
pub fn exception_name(v: u64) -> &'static str {
    const NAMES: [&str; 32] = [
        "#DE divide error",
        "#DB debug",
        "NMI",
        "#BP breakpoint",
        "#OF overflow",
        "#BR bound range",
        "#UD invalid opcode",
        "#NM device not available",
        "#DF double fault",
        "coprocessor segment overrun",
        "#TS invalid TSS",
        "#NP segment not present",
        "#SS stack fault",
        "#GP general protection",
        "#PF page fault",
        "reserved (15)",
        "#MF x87 floating point",
        "#AC alignment check",
        "#MC machine check",
        "#XM SIMD floating point",
        "#VE virtualization",
        "#CP control protection",
        "reserved (22)",
        "reserved (23)",
        "reserved (24)",
        "reserved (25)",
        "reserved (26)",
        "reserved (27)",
        "#HV hypervisor injection",
        "#VC VMM communication",
        "#SX security",
        "reserved (31)",
    ];
    NAMES.get(v as usize).copied().unwrap_or("?")
}

/// A handler for the timer or IPIs: called with the interrupted frame, after the HAL counted the
/// event and before it acknowledges it.
pub type InterruptHook = fn(&mut TrapFrame);

static TIMER_HOOK: AtomicUsize = AtomicUsize::new(0);
static IPI_HOOK: AtomicUsize = AtomicUsize::new(0);

/// Installs the function called on every local timer tick (on every core).
pub fn set_timer_hook(hook: InterruptHook) {
    TIMER_HOOK.store(hook as usize, Ordering::Release);
}

/// Installs the function called on every IPI (on the receiving core); `frame.vector` tells the
/// kind (see [`ipi_of_vector`](crate::apic::ipi_of_vector)).
pub fn set_ipi_hook(hook: InterruptHook) {
    IPI_HOOK.store(hook as usize, Ordering::Release);
}

fn call_hook(hook: &AtomicUsize, frame: &mut TrapFrame) {
    let f = hook.load(Ordering::Acquire);
    if f != 0 {
        // SAFETY: non-zero values are only ever stored from an `InterruptHook` fn pointer.
        let f: InterruptHook = unsafe { core::mem::transmute::<usize, InterruptHook>(f) };
        f(frame);
    }
}

extern "C" fn trap_dispatch(frame: &mut TrapFrame) {
    let v = frame.vector;
    if v < 32 {
        if frame.cs & 3 == 3 {
            // A user thread faulted: reported and handed to the kernel, never fatal.
            crate::usermode::user_exception(frame);
        }
        exception(frame);
    }
    let cpu = crate::percpu::this_cpu();
    match v as u8 {
        TIMER_VECTOR => {
            cpu.count_tick();
            hal_common::irq::run_tick_hook();
            call_hook(&TIMER_HOOK, frame);
            // Acknowledged before the kernel runs: the kernel entry below may not return here
            // (it can switch to another thread), and interrupts stay off until user mode.
            crate::apic::eoi();
            crate::usermode::interrupt(frame, hal_common::usermode::Event::Timer);
        }
        x if (IPI_VECTOR_BASE..IPI_VECTOR_BASE + IPI_VECTORS).contains(&x) => {
            cpu.count_ipi();
            call_hook(&IPI_HOOK, frame);
            crate::apic::eoi();
            if let Some(kind) = crate::apic::ipi_of_vector(v) {
                crate::usermode::interrupt(frame, hal_common::usermode::Event::Ipi(kind));
            }
        }
        SPURIOUS_VECTOR => {}
        x if crate::ioapic::gsi_of_vector(u64::from(x)).is_some() => {
            let gsi = (v - u64::from(DEVICE_VECTOR_BASE)) as u32;
            crate::ioapic::count(gsi);
            // Mask before the EOI: the EOI broadcast clears a level-triggered line's Remote
            // IRR, and a line the device still asserts would be delivered again at once. Both
            // are uncached stores, performed in program order. The kernel (or, before there
            // is one, nobody) unmasks the line when its driver acknowledges it.
            crate::ioapic::mask(gsi);
            crate::apic::eoi();
            crate::usermode::interrupt(frame, hal_common::usermode::Event::Device(gsi as usize));
        }
        _ => {
            crate::console::emergency_print(format_args!(
                "hal-x86: cpu {}: unexpected interrupt vector {:#x} at rip {:#x}\n",
                cpu.index(),
                v,
                frame.rip
            ));
            crate::apic::eoi();
        }
    }
}

/// Prints the fault report for an exception frame and stops (QEMU exits with failure).
///
/// A kernel page fault or double fault whose address (CR2) or stack pointer lies in a stack
/// guard page is reported first as `kernel stack overflow on CPU n (stack guard at 0x...)`.
/// A kernel stack that runs into its guard usually arrives here as a double fault: the page
/// fault on the guard cannot push its frame onto the exhausted stack, so the CPU raises #DF,
/// which runs on this core's IST1 stack (itself guarded); the frame's RSP is the interrupted
/// one and CR2 the guard address the push hit.
pub(crate) fn exception(frame: &TrapFrame) -> ! {
    let cpu = crate::percpu::cpu_id();
    if frame.cs & 3 == 0 && (frame.vector == 14 || frame.vector == 8) {
        let cr2 = crate::cpu::read_cr2();
        let hit =
            crate::percpu::stack_guard_at(cr2).or_else(|| crate::percpu::stack_guard_at(frame.rsp));
        if let Some(g) = hit {
            let what = match g.kind {
                crate::percpu::StackKind::Kernel => "kernel",
                crate::percpu::StackKind::DoubleFault => "double-fault (IST1)",
            };
            crate::console::emergency_print(format_args!(
                "\n!!! kernel stack overflow on CPU {cpu} (stack guard at {:#x}: the {what} stack \
                 of cpu {})\n!!!   {} at rip {:#018x}, rsp {:#018x}, cr2 {cr2:#018x}\n",
                g.guard,
                g.owner,
                exception_name(frame.vector),
                frame.rip,
                frame.rsp,
            ));
        }
    }
    let mode = if frame.cs & 3 == 3 { "user" } else { "kernel" };
    crate::console::emergency_print(format_args!(
        "\n!!! EXCEPTION on cpu {cpu}: vector {} ({}), error code {:#x}\n\
         !!!   rip {:#018x}  cs {:#x} ({mode})  rflags {:#x}\n\
         !!!   rsp {:#018x}  ss {:#x}  cr2 {:#018x}\n\
         !!!   rax {:#x} rbx {:#x} rcx {:#x} rdx {:#x} rsi {:#x} rdi {:#x} rbp {:#x}\n\
         !!! cpu {cpu} stopped; exiting QEMU with failure\n",
        frame.vector,
        exception_name(frame.vector),
        frame.error_code,
        frame.rip,
        frame.cs,
        frame.rflags,
        frame.rsp,
        frame.ss,
        crate::cpu::read_cr2(),
        frame.rax,
        frame.rbx,
        frame.rcx,
        frame.rdx,
        frame.rsi,
        frame.rdi,
        frame.rbp,
    ));
    crate::exit::exit_qemu(crate::exit::ExitCode::Failure)
}
