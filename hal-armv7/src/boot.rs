//! Entry points, stacks, the exception vector table, and the early per-core setup.
//!
//! # Entry (`_start`, ARM state, MMU and caches off)
//! QEMU jumps to the ELF entry on core 0 only (sabrelite: the SRC holds the others in reset;
//! virt: the others are powered off until PSCI CPU_ON). The entry code
//! 1. records the entry CPSR and, if QEMU entered in HYP mode (`-M virt,virtualization=on`),
//!    sets CNTVOFF = 0 and drops to SVC with `eret`,
//! 2. masks IRQ, FIQ and asynchronous aborts,
//! 3. takes the core index from MPIDR.Aff0 and points the UND/FIQ, ABT/IRQ and SVC stack
//!    pointers into that core's [`STACK_SIZE`] area (exception modes get their own stacks so a
//!    fault on a broken SVC stack can still be reported),
//! 4. (core 0) zeroes `.bss` with plain word stores (no stack, no Rust yet),
//! 5. calls the Rust entry, which never returns.
//!
//! Secondary cores enter at `hal_armv7_secondary_start` (the address given to the SRC or to
//! PSCI) and do steps 1-3 and 5.
//!
//! # Early Rust setup, per core, in this order (why: see [`cache`])
//! (core 0: UART) -> VBAR -> (core 0, A9: SCU on; core 0: build the table, caches still off)
//! -> ACTLR.SMP -> invalidate L1/BP/TLB -> MMU + caches on -> only now locks and atomic
//! read-modify-writes -> (core 0: GIC distributor, cycle source, PSCI, command line) -> GIC
//! CPU interface -> online.
//!
//! Core 0 finds PERIPHBASE in CBAR (`mrc p15, 4, Rt, c15, c0, 0`); QEMU leaves CBAR at 0 when
//! run with `-smp 1`, so the i.MX6's fixed 0x00A0_0000 is used then.
//!
//! A secondary core reads only `BootParams` before its MMU is on; core 0 writes it with its
//! own caches on, so it cleans the lines to the point of coherency first.
//!
//! # Vectors
//! The table is installed in VBAR (SCTLR.V = 0). IRQs are handled on the interrupted core's
//! SVC stack: the stub saves LR_irq/SPSR_irq there with `srsdb`, switches to SVC, saves the
//! caller-saved registers, realigns the stack to 8 bytes (AAPCS) and calls the Rust handler,
//! returning with `rfeia`. SVC has its own stub that can return (for the semihosting
//! fallback). The other exceptions save a full frame on their mode's stack, fetch SP/LR of the
//! interrupted mode by briefly switching to it, and call the fault reporter.

use core::cell::UnsafeCell;
use core::sync::atomic::Ordering;

use crate::exception::{fault_entry, irq_entry, svc_entry};
use crate::fault::Mode;
use crate::machine::{a9, Machine, IMX6_PERIPHBASE, VIRT_GICC, VIRT_GICD};
use crate::percpu::{CpuIndex, MAX_CPUS, PERCPU};
use crate::psci::Conduit;
use crate::{cache, console, cpu, gic, mmu, psci, timer, Platform, PLATFORM};

/// Size of each core's stack area: SVC stack on top, then the abort and undefined stacks,
/// each above an unmapped guard page:
///
/// | offset          | what                                   |
/// |-----------------|----------------------------------------|
/// | `0 .. 4K`       | guard (not mapped, see [`mmu`])        |
/// | `4K .. 12K`     | UND (and FIQ) stack                    |
/// | `12K .. 16K`    | guard                                  |
/// | `16K .. 24K`    | ABT (and IRQ-mode) stack               |
/// | `24K .. 28K`    | guard                                  |
/// | `28K .. 256K`   | SVC stack (the kernel's)               |
///
/// 256 KiB: the SVC stack must hold a kernel object being constructed (`Kernel::new` returns
/// it by value; ~50 KiB on ARMv7, more with the fine-grained strategy). A stack that runs off
/// its bottom hits its guard page: a data abort, taken on the (separate) abort stack and
/// reported as a kernel stack overflow (see [`stack_guard_at`]) instead of overwriting the
/// stack below.
pub const STACK_SIZE: usize = 256 * 1024;
/// Size of a guard page.
pub const GUARD_SIZE: usize = 4096;
/// Top of the undefined-instruction (and FIQ) stack, from the area's base.
const UND_TOP: usize = 12 * 1024;
/// Top of the abort (and unused IRQ-mode) stack, from the area's base.
const ABT_TOP: usize = 24 * 1024;
/// Lowest abort-stack pointer (from the area's base) the abort vectors accept: 1 KiB above
/// the abort stack's guard page. Below it the abort stack counts as overflowed and restarts
/// at its top (see `HAL_ABT_STACK_CHECK`); the abort stubs and the fault path need far less
/// than 1 KiB to report.
const ABT_FLOOR: usize = UND_TOP + GUARD_SIZE + 1024;
const _: () = assert!(ABT_FLOOR < ABT_TOP && (ABT_FLOOR << 14) >> 14 == ABT_FLOOR);
/// The guard pages' offsets in a core's stack area, with the stack each protects.
const GUARDS: [(usize, &str); 3] = [(0, "UND/FIQ"), (UND_TOP, "ABT/IRQ"), (ABT_TOP, "SVC")];
const _: () = assert!(
    STACK_SIZE == 1 << 18,
    "the entry code shifts the core index by 18"
);

/// Per-core stack areas (in `.stacks`, NOLOAD, not zeroed).
#[repr(C, align(4096))]
struct Stacks(UnsafeCell<[[u8; STACK_SIZE]; MAX_CPUS]>);

// SAFETY: each core uses only its own area, through its stack pointers; Rust code never
// accesses the array as such.
unsafe impl Sync for Stacks {}

#[link_section = ".stacks"]
static STACKS: Stacks = Stacks(UnsafeCell::new([[0; STACK_SIZE]; MAX_CPUS]));

/// Test support (`mode=stackoverflow stack=abort`): switches the calling core to ABT mode and
/// recurses on the abort stack until it hits its guard page. Never returns: the abort handler
/// must report the overflow (`kernel stack overflow ... the ABT/IRQ stack`) and stop.
pub fn overflow_abort_stack() -> ! {
    // SAFETY: deliberately runs Rust code in ABT mode on the (empty) abort stack with IRQs
    // masked as they are in the kernel; the recursion never returns, and the data abort it
    // ends in is fatal by design.
    unsafe {
        core::arch::asm!(
            "cps #0x17",
            "mov r0, #0",
            "bl {recurse}",
            recurse = sym recurse_on_stack,
            options(noreturn)
        )
    }
}

/// Recurses with a 256-byte frame until the stack runs out.
#[inline(never)]
#[allow(unconditional_recursion)] // the point: only the guard page ends it
extern "C" fn recurse_on_stack(depth: usize) -> usize {
    let frame = core::hint::black_box([depth; 64]);
    let below = recurse_on_stack(core::hint::black_box(depth + 1));
    core::hint::black_box(frame)[depth % 64].wrapping_add(below)
}

/// Top of core `cpu`'s SVC stack.
pub fn stack_top(cpu: CpuIndex) -> usize {
    STACKS.0.get() as usize + (cpu + 1) * STACK_SIZE
}

/// A guard page that an address falls in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackGuard {
    /// The stack it protects (`"SVC"`, `"ABT/IRQ"`, `"UND/FIQ"`).
    pub stack: &'static str,
    /// The core that stack belongs to.
    pub owner: CpuIndex,
    /// The guard page's address.
    pub guard: usize,
}

/// The stack guard page `addr` lies in, if any (of any core).
pub fn stack_guard_at(addr: usize) -> Option<StackGuard> {
    let base = STACKS.0.get() as usize;
    let off = addr.checked_sub(base)?;
    let owner = off / STACK_SIZE;
    if owner >= MAX_CPUS {
        return None;
    }
    let in_area = off % STACK_SIZE;
    GUARDS
        .iter()
        .find(|(g, _)| (*g..*g + GUARD_SIZE).contains(&in_area))
        .map(|&(g, stack)| StackGuard {
            stack,
            owner,
            guard: base + owner * STACK_SIZE + g,
        })
}

/// Every stack guard page, for the page tables and the self-tests.
pub fn stack_guards() -> impl Iterator<Item = usize> {
    let base = STACKS.0.get() as usize;
    (0..MAX_CPUS).flat_map(move |c| GUARDS.iter().map(move |(g, _)| base + c * STACK_SIZE + g))
}

/// What a secondary core needs before its MMU is on.
#[repr(C, align(64))]
struct BootParams {
    /// TTBR0 value (boot translation table and walk attributes).
    ttbr0: u32,
    /// Whether the cores are Cortex-A9s (ACTLR.FW).
    a9: u32,
}

struct BootCell(UnsafeCell<BootParams>);

// SAFETY: written by core 0 before any secondary starts, read-only afterwards.
unsafe impl Sync for BootCell {}

static BOOT_PARAMS: BootCell = BootCell(UnsafeCell::new(BootParams { ttbr0: 0, a9: 0 }));

core::arch::global_asm!(
    r#"
    .section .text.hal_armv7_entry, "ax"
    .arm
    .arch_extension virt
    .arch_extension sec

    @ If the CPSR in r4 says HYP: CNTVOFF = 0, then continue in SVC with A/I/F masked.
    @ Clobbers r5.
    .macro HAL_LEAVE_HYP
        and     r5, r4, #0x1f
        cmp     r5, #0x1a
        bne     9f
        mov     r5, #0
        mcrr    p15, 4, r5, r5, c14         @ CNTVOFF = 0: virtual counter = physical
        adr     r5, 9f
        msr     elr_hyp, r5
        mov     r5, #0x1d3                  @ SVC mode, A, I, F masked, ARM state
        msr     spsr_cxsf, r5               @ SPSR_hyp (banked access to it is not allowed in Hyp)
        eret
    9:
    .endm

    @ Stack pointers of the core whose index is in r6 (< MAX_CPUS). Clobbers r7.
    .macro HAL_SET_STACKS
        ldr     r7, ={stacks}
        add     r7, r7, r6, lsl #18         @ STACK_SIZE = 256 KiB
        cps     #0x1b                       @ UND
        add     sp, r7, #{und_top}
        cps     #0x11                       @ FIQ (shares UND's stack: both are fatal)
        add     sp, r7, #{und_top}
        cps     #0x17                       @ ABT
        add     sp, r7, #{abt_top}
        cps     #0x12                       @ IRQ (the IRQ stub moves to SVC's stack)
        add     sp, r7, #{abt_top}
        cps     #0x13                       @ SVC: the kernel's mode
        add     sp, r7, #{stack_size}
    .endm

    .global _start
    .type _start, %function
_start:
    mov     r8, r2                          @ a boot loader's device tree (U-Boot bootm)
    mrs     r4, cpsr
    HAL_LEAVE_HYP
    cpsid   aif
    mrc     p15, 0, r6, c0, c0, 5           @ MPIDR
    and     r6, r6, #0xff                   @ Aff0 = core index
    cmp     r6, #0
    bne     hal_armv7_park                  @ others start at hal_armv7_secondary_start
    HAL_SET_STACKS
    ldr     r0, =__bss_start
    ldr     r1, =__bss_end
    mov     r2, #0
1:  cmp     r0, r1
    strlo   r2, [r0], #4
    blo     1b
    mov     r0, r4
    mov     r1, r8
    bl      {primary}
    b       hal_armv7_park

    .global hal_armv7_secondary_start
    .type hal_armv7_secondary_start, %function
hal_armv7_secondary_start:
    mov     r8, r2                          @ a boot loader's device tree (U-Boot bootm)
    mrs     r4, cpsr
    HAL_LEAVE_HYP
    cpsid   aif
    mrc     p15, 0, r6, c0, c0, 5
    and     r6, r6, #0xff
    cmp     r6, #{max_cpus}
    bhs     hal_armv7_park
    HAL_SET_STACKS
    mov     r0, r6
    mov     r1, r4
    bl      {secondary}

    .global hal_armv7_park
hal_armv7_park:
    wfe
    b       hal_armv7_park
    .ltorg

    .section .text.hal_armv7_vectors, "ax"
    .balign 32
    .global hal_armv7_vectors
hal_armv7_vectors:
    b       hal_armv7_vec_reset             @ 0x00
    b       hal_armv7_vec_und               @ 0x04
    b       hal_armv7_vec_svc               @ 0x08
    b       hal_armv7_vec_pabt              @ 0x0c
    b       hal_armv7_vec_dabt              @ 0x10
    b       hal_armv7_vec_unused            @ 0x14
    b       hal_armv7_vec_irq               @ 0x18
    b       hal_armv7_vec_fiq               @ 0x1c

    @ Branches to `target` if the exception came from USR mode (SPSR.M = 0x10). Borrows r0
    @ through this mode's stack; `ldmfd` leaves the flags of the `cmp` alone.
    .macro HAL_IF_USER target
        stmfd   sp!, {{r0}}
        mrs     r0, spsr
        and     r0, r0, #0x1f
        cmp     r0, #0x10
        ldmfd   sp!, {{r0}}
        beq     \target
    .endm

    @ Exception from USR mode (LR already the resume address). SP_svc is the end of the
    @ current thread's saved context (hal_armv7_enter_user left it there): saves
    @ [r0-r12, SP_usr, LR_usr, pc, CPSR] straight into it, switches to SVC and to this core's
    @ SVC stack top (STACKS + (core + 1) * STACK_SIZE, the core index from TPIDRURO, see
    @ `percpu`) and calls user_trap(frame, vector),
    @ which does not return; a system call calls the installed kernel's system-call entry
    @ (a word of USER, UserMode::SYSCALL_ENTRY) with (USER, frame) instead: no vector to
    @ test and no Rust function between the stub and the kernel on the IPC path (`target`
    @ = `syscall`).
    .macro HAL_USER_STUB vector, target=user_trap
        .ifc \target,user_trap
        srsdb   sp!, #0x13                  @ LR and SPSR of this mode into the context
        cps     #0x13                       @ (a system call is in SVC mode already, and
        .endif                              @ hal_armv7_vec_svc made the `srsdb`)
        sub     sp, sp, #60
        stm     sp, {{r0-r14}}^             @ user r0-r12, SP_usr, LR_usr
        .ifc \target,user_trap
        mov     r0, sp                      @ the frame, in the thread's context
        .else
        mov     r1, sp                      @ (second argument of the system-call entry)
        .endif
        mrc     p15, 0, r2, c13, c0, 3      @ TPIDRURO: the core index (percpu)
        ldr     r3, ={stacks}+{stack_size}  @ the top of core r2's area
        add     sp, r3, r2, lsl #{stack_shift}
        .ifc \target,user_trap
        mov     r1, #\vector
        bl      {user_trap}
        .else
        ldr     r0, ={user}                 @ the installed kernel's system-call entry:
        ldr     r3, [r0, #{syscall_entry}]  @ entry(USER, frame, r2 = core), a word of USER
        blx     r3                          @ (UserMode::SYSCALL_ENTRY, below 4 KiB)
        .endif
        b       hal_armv7_park
    .endm

    @ Fatal exceptions: frame = [r0-r12, faulting pc] on this mode's stack. From USR mode
    @ they go to the kernel (user_trap) instead.
    .macro HAL_FAULT_STUB name, vector, offset, abort_stack=0
hal_armv7_vec_\name:
        .if \abort_stack
        HAL_ABT_STACK_CHECK
        .endif
        sub     lr, lr, #\offset
        HAL_IF_USER hal_armv7_user_\name
        stmfd   sp!, {{r0-r12, lr}}
        mov     r0, #\vector
        b       hal_armv7_fault_common
hal_armv7_user_\name:
        HAL_USER_STUB \vector
    .endm

    @ The abort vectors run in ABT mode, whose stack may be the one that overflowed (an
    @ abort taken while the abort handler ran out of stack). A push onto its guard page would
    @ abort again with SP_abt unchanged (ARMv7 restores the base register of an aborted
    @ `stm`), for ever. So before anything touches the stack: if SP_abt lies below ABT_FLOOR
    @ in this core's area, restart the abort stack at its top (its contents are lost; the
    @ fault report that follows names the guard page). r0 is parked in TPIDRPRW meanwhile (no
    @ stack needed; the kernel does not use TPIDRPRW); `mrc` leaves the flags alone.
    .macro HAL_ABT_STACK_CHECK
        mcr     p15, 0, r0, c13, c0, 4
        ldr     r0, ={stacks}
        sub     r0, sp, r0
        lsl     r0, r0, #14                 @ offset in the core's 256 KiB area, << 14
        cmp     r0, #({abt_floor} << 14)
        lsrlo   r0, r0, #14
        sublo   sp, sp, r0                  @ the area's base
        addlo   sp, sp, #{abt_top}          @ the abort stack's top
        mrc     p15, 0, r0, c13, c0, 4
    .endm

    HAL_FAULT_STUB reset, 0, 4
    HAL_FAULT_STUB pabt, 3, 4, 1
    HAL_FAULT_STUB dabt, 4, 8, 1
    HAL_FAULT_STUB unused, 5, 4
    HAL_FAULT_STUB fiq, 7, 4

    @ r0 = vector number. Adds [sp, lr, spsr] of the interrupted mode below the frame and
    @ calls fault_entry(vector, &frame), which does not return.
hal_armv7_fault_common:
    mrs     r4, spsr
    mrs     r5, cpsr
    and     r6, r4, #0x1f
    cmp     r6, #0x10
    moveq   r6, #0x1f                       @ User's sp/lr are System mode's
    mov     r2, #0
    mov     r3, #0
    cmp     r6, #0x11                       @ only modes msr may switch to (not HYP/MON)
    cmpne   r6, #0x12
    cmpne   r6, #0x13
    cmpne   r6, #0x17
    cmpne   r6, #0x1b
    cmpne   r6, #0x1f
    bne     2f
    bic     r7, r5, #0x1f
    orr     r7, r7, r6
    msr     cpsr_c, r7                      @ interrupted mode, I still set
    mov     r2, sp
    mov     r3, lr
    msr     cpsr_c, r5                      @ back to the exception mode
2:  push    {{r2, r3, r4}}
    mov     r1, sp
    bic     sp, sp, #7                      @ AAPCS: 8-byte aligned at calls
    bl      {fault}
    b       hal_armv7_park

    @ SVC. First LR_svc and SPSR_svc go below SP_svc (`srsdb`), which from USR mode is the
    @ end of the thread's context, the system-call stub's first step. The kernel makes no SVC
    @ of its own (semihosting traps with HLT, see `exit`), so every SVC is a system call:
    @ release builds do not test the mode it came from (three instructions per system call).
    @ Debug builds do (M[3:0] = 0 only in USR mode, tested in LR, free after the `srsdb`):
    @ from a kernel mode the two words went onto the kernel's SVC stack, LR comes back and
    @ they are dropped, and svc_entry(&frame = [r0-r12, return address]) reports it.
hal_armv7_vec_svc:
    srsdb   sp!, #0x13
    .if {check_svc_mode}
    mrs     lr, spsr
    tst     lr, #0xf
    beq     hal_armv7_user_svc
    ldr     lr, [sp], #8
    stmfd   sp!, {{r0-r12, lr}}
    mov     r0, sp
    bic     sp, sp, #7
    bl      {svc}
    .endif
hal_armv7_user_svc:                         @ a system call: LR_svc and SPSR_svc saved already
    HAL_USER_STUB 2, syscall

    @ Undefined instruction. From a kernel mode it may be a semihosting call (HLT #0xF000,
    @ see `exit`) made without `-semihosting` or a debugger: then r0 = -1 (unavailable) and
    @ the caller resumes after it, its other registers as they were (this mode has its own
    @ stack and LR). Anything else is fatal, as in HAL_FAULT_STUB.
hal_armv7_vec_und:
    sub     lr, lr, #4                      @ the undefined instruction (ARM state)
    HAL_IF_USER hal_armv7_user_und
    stmfd   sp!, {{r0-r12, lr}}
    ldr     r0, [lr]
    ldr     r1, ={hlt_semihosting}
    cmp     r0, r1
    mov     r0, #1                          @ (the vector number; flags unchanged)
    bne     hal_armv7_fault_common
    ldmfd   sp!, {{r0-r12, lr}}
    mvn     r0, #0
    add     lr, lr, #4
    movs    pc, lr                          @ resume after the HLT, CPSR from SPSR_und
hal_armv7_user_und:
    HAL_USER_STUB 1

    @ IRQ: handled on the SVC stack of the interrupted code (from USR mode: user_trap).
hal_armv7_vec_irq:
    sub     lr, lr, #4                      @ return address
    HAL_IF_USER hal_armv7_user_irq
    srsdb   sp!, #0x13                      @ push LR_irq, SPSR_irq onto the SVC stack
    cps     #0x13
    push    {{r0-r3, r12, lr}}              @ caller-saved registers and LR_svc
    and     r1, sp, #4                      @ realign to 8 bytes, remember by how much
    sub     sp, sp, r1
    push    {{r1, r2}}
    bl      {irq}
    pop     {{r1, r2}}
    add     sp, sp, r1
    pop     {{r0-r3, r12, lr}}
    rfeia   sp!                             @ return: pc and CPSR from the SVC stack
hal_armv7_user_irq:
    HAL_USER_STUB 6
"#,
    stacks = sym STACKS,
    stack_shift = const STACK_SIZE.trailing_zeros(),
    und_top = const UND_TOP,
    abt_top = const ABT_TOP,
    abt_floor = const ABT_FLOOR,
    stack_size = const STACK_SIZE,
    max_cpus = const MAX_CPUS,
    primary = sym primary_entry,
    secondary = sym secondary_entry,
    fault = sym fault_entry,
    svc = sym svc_entry,
    check_svc_mode = const cfg!(debug_assertions) as u32,
    hlt_semihosting = const crate::exit::HLT_SEMIHOSTING,
    irq = sym irq_entry,
    user_trap = sym crate::usermode::user_trap,
    user = sym crate::usermode::USER,
    syscall_entry = const hal_common::usermode::UserMode::<crate::usermode::ArmUser, MAX_CPUS>::SYSCALL_ENTRY,
);

// The system-call stub loads the entry word at an immediate offset from `USER`, which an `ldr`
// encodes up to 4095.
const _: () = assert!(
    hal_common::usermode::UserMode::<crate::usermode::ArmUser, MAX_CPUS>::SYSCALL_ENTRY < 4096,
    "UserMode::SYSCALL_ENTRY out of an ldr's reach: give UserMode's entry word a lower offset"
);

unsafe extern "C" {
    /// The vector table (32-byte aligned, in `.text.hal_armv7_vectors`).
    static hal_armv7_vectors: [u32; 8];
    /// Entry of secondary cores (given to the SRC or PSCI CPU_ON).
    static hal_armv7_secondary_start: [u32; 1];
}

unsafe extern "Rust" {
    /// The kernel's main function, defined by [`entry_point!`](crate::entry_point).
    safe fn hal_armv7_kernel_main(platform: &'static Platform) -> !;
}

/// Physical (= virtual) address of the secondary cores' entry point.
pub fn secondary_entry_address() -> u32 {
    core::ptr::addr_of!(hal_armv7_secondary_start) as u32
}

/// Address of the exception vector table (what VBAR holds on every core).
pub fn vectors_address() -> u32 {
    core::ptr::addr_of!(hal_armv7_vectors) as u32
}

/// Points VBAR at the vector table.
fn install_vectors() {
    let v = core::ptr::addr_of!(hal_armv7_vectors) as u32;
    // SAFETY: a 32-byte aligned ARM vector table with handlers for every entry.
    unsafe { aarch32_cpu::register::Vbar::write(aarch32_cpu::register::Vbar(v)) };
    // The next exception must already use the new base.
    cpu::isb();
}

/// Joins coherency, invalidates the local caches and TLB, and turns the MMU and caches on.
///
/// # Safety
/// `ttbr0` comes from [`mmu::build`]; called once per core during its bring-up.
unsafe fn enable_caches_and_mmu(a9: bool, ttbr0: u32) {
    cache::join_coherency(a9);
    cache::invalidate_local();
    // SAFETY: forwarded contract; coherency joined and caches invalidated just above.
    unsafe { mmu::enable(ttbr0) };
}

/// Command line buffer (semihosting or the device tree's `/chosen/bootargs`).
struct CmdlineBuf(UnsafeCell<[u8; 256]>);
// SAFETY: written once by core 0 during boot, read-only afterwards.
unsafe impl Sync for CmdlineBuf {}
static CMDLINE: CmdlineBuf = CmdlineBuf(UnsafeCell::new([0; 256]));

/// Where the kernel command line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmdlineSource {
    /// QEMU's `-append`, through semihosting (which also gives QEMU's exit status).
    Semihosting,
    /// `/chosen/bootargs` of the device tree a boot loader passed (no semihosting).
    DeviceTree,
    /// Neither: the defaults.
    None,
}

impl CmdlineSource {
    /// For the boot log.
    pub fn name(self) -> &'static str {
        match self {
            CmdlineSource::Semihosting => "semihosting",
            CmdlineSource::DeviceTree => "device tree",
            CmdlineSource::None => "none",
        }
    }
}

/// The value of `key=value` in `cmdline`, if present (the first one).
pub(crate) fn cmdline_value<'a>(cmdline: &'a str, key: &str) -> Option<&'a str> {
    cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|rest| rest.strip_prefix('=')))
}

/// First Rust code on core 0 (IRQs masked, MMU off, `.bss` zeroed).
extern "C" fn primary_entry(entry_psr: u32, boot_r2: usize) -> ! {
    let midr = cpu::midr();
    let Some(machine) = Machine::from_midr(midr) else {
        // No known UART to report on: the exit status is all we can give.
        crate::exit::exit_qemu(crate::exit::ExitCode::Failure)
    };
    // SAFETY: core 0, once, nothing else runs; the machine's UART, MMU off.
    unsafe { console::init_early(machine) };
    install_vectors();

    let a9 = machine == Machine::Sabrelite;
    // CBAR gives PERIPHBASE, except that QEMU sets it only for more than one core (with
    // `-smp 1` it reads 0): fall back to the i.MX6's fixed address then.
    let periphbase = match (a9, cpu::a9_periphbase_if(a9)) {
        (false, _) => 0,
        (true, 0) => IMX6_PERIPHBASE,
        (true, cbar) => cbar,
    };
    if a9 {
        cache::scu_enable(periphbase);
    }
    // SAFETY: core 0, once, MMU off, no other core running.
    let ttbr0 = unsafe { mmu::build(machine) };
    // SAFETY: the table was just built.
    unsafe { enable_caches_and_mmu(a9, ttbr0) };

    // Caches are on: publish what secondaries read before their MMU is on, and clean it to
    // memory, which is where they will read it.
    // SAFETY: no other core runs yet.
    unsafe {
        BOOT_PARAMS.0.get().write_volatile(BootParams {
            ttbr0,
            a9: u32::from(a9),
        });
    }
    cache::clean_to_poc(
        BOOT_PARAMS.0.get() as usize,
        core::mem::size_of::<BootParams>(),
    );

    // SAFETY: core 0, once, before any other core runs; LDREX/STREX now work.
    unsafe { console::enable_locking() };

    // The command line: QEMU's `-append` through semihosting, else the device tree a boot
    // loader passed (its memory is still untouched: nothing is allocated yet). It may move the
    // console (`console=uart2` on the Sabre Lite) before the GIC keeps the console's line.
    // SAFETY: core 0, once; the buffer is not read before this returns.
    let buf = unsafe { &mut *CMDLINE.0.get() };
    let from_semihosting = crate::exit::cmdline(buf);
    let semihosting = from_semihosting.is_some();
    let (cmdline, source) = match from_semihosting {
        Some(c) if !c.trim().is_empty() => (c, CmdlineSource::Semihosting),
        _ => {
            // SAFETY: as above; the semihosting answer (empty) is not used any more.
            let buf = unsafe { &mut *CMDLINE.0.get() };
            match crate::bootargs::from_device_tree(machine, boot_r2, buf) {
                Some(c) => (c, CmdlineSource::DeviceTree),
                None if semihosting => ("", CmdlineSource::Semihosting),
                None => ("", CmdlineSource::None),
            }
        }
    };
    if machine == Machine::Sabrelite && cmdline_value(cmdline, "console") == Some("uart2") {
        crate::machine::use_uart2_console();
        // SAFETY: core 0, during boot, no other core runs.
        unsafe { console::reselect(machine) };
    }
    PERCPU[0].entry_psr.store(entry_psr, Ordering::Relaxed);
    PERCPU[0].mpidr.store(cpu::mpidr(), Ordering::Relaxed);
    crate::percpu::publish_index(0);

    timer::init(machine, periphbase);
    crate::paging::init(machine);
    let (gicd, gicc) = match machine {
        Machine::Sabrelite => (periphbase + a9::GICD, periphbase + a9::GICC),
        Machine::Virt => (VIRT_GICD, VIRT_GICC),
    };
    let gic_info = gic::init_distributor(gicd, gicc, machine.kernel_spis());
    if gic_info.readback_errors > 0 {
        crate::println!(
            "hal-armv7: GIC distributor: {} setting(s) read back wrong",
            gic_info.readback_errors
        );
    }
    gic::init_cpu();

    let psci = match machine {
        Machine::Sabrelite => None,
        Machine::Virt if Mode::from_psr(entry_psr) == Mode::Hyp => Some(Conduit::Smc),
        Machine::Virt => Some(Conduit::Hvc),
    };
    let psci_version = psci.map(psci::version);

    PERCPU[0].set_online();
    let platform = PLATFORM.set(Platform {
        machine,
        midr,
        entry_psr,
        mode: Mode::from_psr(cpu::cpsr()),
        periphbase,
        gicd,
        gicc,
        gic_lines: gic_info.lines,
        gic_cpus: gic_info.cpus,
        gic_available_spis: gic_info.available_spis,
        gic_readback_errors: gic_info.readback_errors,
        psci,
        psci_version,
        cmdline,
        semihosting,
        cmdline_source: source,
        stack_top: stack_top(0),
    });
    hal_armv7_kernel_main(platform)
}

/// First Rust code on a secondary core (IRQs masked, MMU off).
extern "C" fn secondary_entry(cpu_index: u32, entry_psr: u32) -> ! {
    install_vectors();
    // SAFETY: written and cleaned to memory by core 0 before it started this core; read with
    // the MMU (and so the data cache) off, i.e. from memory.
    let params = unsafe { BOOT_PARAMS.0.get().read_volatile() };
    // SAFETY: the table core 0 built; once, during this core's bring-up.
    unsafe { enable_caches_and_mmu(params.a9 != 0, params.ttbr0) };

    let cpu = cpu_index as CpuIndex;
    gic::init_cpu();
    PERCPU[cpu].entry_psr.store(entry_psr, Ordering::Relaxed);
    PERCPU[cpu].mpidr.store(cpu::mpidr(), Ordering::Relaxed);
    crate::percpu::publish_index(cpu);
    PERCPU[cpu].set_online();
    crate::smp::run_ap_main(cpu)
}
