//! Typed system calls. Each function builds a [`abi::Syscall`], encodes it with the kernel's
//! own encoder, traps, and decodes the result registers with [`abi::syscall::result`].
//!
//! x86_64 convention (see `hal-x86`'s `usermode`): number in `rax`, arguments in `rdi, rsi,
//! rdx, r10, r8`, results in the same six registers; `rcx` and `r11` are clobbered.

pub use abi::{CapSlot, Error, MintTarget, Msg, PageAttrs, Regs, Rights, Syscall};

/// Result of a call: `(word, message)` (badge or notification word, received message).
pub type Reply = Result<(usize, Msg), Error>;

/// `asm!` with the six system-call registers bound: `regs` in, the result registers out, and
/// the registers the trap clobbers. The instructions and any further operands come in braces,
/// the `options` after them. Written once for the plain trap ([`raw`]) and the fuzzer's
/// hostile one (`programs::fuzz::raw_hostile`), which differ only in what surrounds the trap
/// instruction. Must be used inside `unsafe`.
///
/// x86_64: `rax, rdi, rsi, rdx, r10, r8`, with `rcx` and `r11` clobbered.
#[cfg(target_arch = "x86_64")]
#[macro_export]
macro_rules! trap_asm {
    ($($args:tt)*) => {
        $crate::trap_asm_in!(["rax", "rdi", "rsi", "rdx", "r10", "r8"], [out("rcx") _, out("r11") _,] $($args)*)
    };
}

/// ARMv7: as on x86_64, with the registers `r0..r5` (nothing else is clobbered).
#[cfg(target_arch = "arm")]
#[macro_export]
macro_rules! trap_asm {
    ($($args:tt)*) => {
        $crate::trap_asm_in!(["r0", "r1", "r2", "r3", "r4", "r5"], [] $($args)*)
    };
}

/// The body of [`trap_asm!`] for any architecture: the six register names and the clobbered
/// operands first, then `trap_asm!`'s own arguments.
#[doc(hidden)]
#[macro_export]
macro_rules! trap_asm_in {
    (
        [$a:tt, $b:tt, $c:tt, $d:tt, $e:tt, $f:tt], [$($clobber:tt)*]
        $regs:expr, { $($asm:tt)* } $(, $opt:ident)*
    ) => {{
        let regs: $crate::sys::Regs = $regs;
        let (r0, r1, r2, r3, r4, r5): (usize, usize, usize, usize, usize, usize);
        core::arch::asm!(
            $($asm)*,
            inlateout($a) regs[0] => r0,
            inlateout($b) regs[1] => r1,
            inlateout($c) regs[2] => r2,
            inlateout($d) regs[3] => r3,
            inlateout($e) regs[4] => r4,
            inlateout($f) regs[5] => r5,
            $($clobber)*
            options($($opt),*),
        );
        [r0, r1, r2, r3, r4, r5]
    }};
}

/// Traps into the kernel with raw registers and returns the raw result registers.
///
/// x86_64: `syscall`, `rcx` and `r11` clobbered. ARMv7 (see `hal-armv7`'s `usermode`): `svc
/// #0` with number and arguments in `r0..r5`, results in the same registers; everything else
/// is preserved.
#[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
#[inline(always)]
pub fn raw(regs: Regs) -> Regs {
    // SAFETY: the trap enters the kernel, which preserves every register but the six result
    // registers (and, on x86_64, rcx/r11, declared clobbered); it touches no memory of this
    // program.
    #[cfg(target_arch = "x86_64")]
    let r = unsafe { trap_asm!(regs, { "syscall" }, nostack) };
    // SAFETY: as above.
    #[cfg(target_arch = "arm")]
    let r = unsafe { trap_asm!(regs, { "svc #0" }, nostack) };
    r
}

/// Traps into the kernel: no user-mode ABI exists for this architecture, so every call fails
/// with [`Error::UnknownSyscall`].
#[cfg(not(any(target_arch = "x86_64", target_arch = "arm")))]
pub fn raw(_regs: Regs) -> Regs {
    [Error::UnknownSyscall.code(), 0, 0, 0, 0, 0]
}

/// Performs `call` and decodes the result.
pub fn invoke(call: Syscall) -> Reply {
    abi::syscall::result(&raw(call.encode()))
}

/// A capability slot; panics on an index outside the CSpace (a program bug).
pub fn slot(i: usize) -> CapSlot {
    CapSlot::new(i).expect("capability slot out of range")
}

/// Sends `msg` on the endpoint in `ep` and waits for the reply (needs WRITE).
pub fn call(ep: CapSlot, msg: Msg) -> Reply {
    invoke(Syscall::Call { ep, msg })
}

/// Sends `msg` on `ep`, blocking until received (needs WRITE).
pub fn send(ep: CapSlot, msg: Msg) -> Result<(), Error> {
    invoke(Syscall::Send { ep, msg }).map(|_| ())
}

/// Waits for a message on `ep` (needs READ); returns the sender's badge and the message.
pub fn recv(ep: CapSlot) -> Reply {
    invoke(Syscall::Recv { ep })
}

/// Answers the current caller.
pub fn reply(msg: Msg) -> Result<(), Error> {
    invoke(Syscall::Reply { msg }).map(|_| ())
}

/// Answers the current caller (if any) with `msg`, then waits for the next message on `ep`.
pub fn reply_recv(ep: CapSlot, msg: Msg) -> Reply {
    invoke(Syscall::ReplyRecv { ep, msg })
}

/// Signals the notification in `ntfn` (needs WRITE).
pub fn signal(ntfn: CapSlot) -> Result<(), Error> {
    invoke(Syscall::Signal { ntfn }).map(|_| ())
}

/// Waits on the notification in `ntfn` (needs READ); returns the word.
pub fn wait(ntfn: CapSlot) -> Result<usize, Error> {
    invoke(Syscall::Wait { ntfn }).map(|(w, _)| w)
}

/// Gives the core to the next ready thread of equal priority.
pub fn yield_now() {
    // Yield cannot fail.
    let _ = invoke(Syscall::Yield);
}

/// Makes the inactive thread in `thread` runnable (needs MANAGE).
pub fn resume(thread: CapSlot) -> Result<(), Error> {
    invoke(Syscall::Resume { thread }).map(|_| ())
}

/// Sends `thread`'s faults to the endpoint in `ep`.
pub fn bind_pager(thread: CapSlot, ep: CapSlot) -> Result<(), Error> {
    invoke(Syscall::BindPager { thread, ep }).map(|_| ())
}

/// Maps page `offset` of the memory region in `mem` at `vaddr` of the address space in
/// `aspace`, with `attrs` (see [`abi::Syscall::MapPage`]).
pub fn map_page(
    aspace: CapSlot,
    mem: CapSlot,
    offset: usize,
    vaddr: usize,
    attrs: PageAttrs,
) -> Result<(), Error> {
    invoke(Syscall::MapPage {
        aspace,
        mem,
        vaddr,
        attrs,
        offset,
    })
    .map(|_| ())
}

/// Unmaps the page at `vaddr` of the address space in `aspace`.
pub fn unmap_page(aspace: CapSlot, vaddr: usize) -> Result<(), Error> {
    invoke(Syscall::UnmapPage { aspace, vaddr }).map(|_| ())
}

/// Splits pages `[offset, offset + pages)` of the region in `mem` off into `dest`; returns the
/// new region's index.
pub fn mem_split(mem: CapSlot, dest: CapSlot, offset: usize, pages: usize) -> Result<usize, Error> {
    invoke(Syscall::MemSplit {
        mem,
        dest,
        offset,
        pages,
    })
    .map(|(i, _)| i)
}

/// Merges the region in `b` into the adjacent region in `a`.
pub fn mem_merge(a: CapSlot, b: CapSlot) -> Result<(), Error> {
    invoke(Syscall::MemMerge { a, b }).map(|_| ())
}

/// Destroys every region split from the one in `mem` (and their mappings).
pub fn mem_revoke(mem: CapSlot) -> Result<(), Error> {
    invoke(Syscall::MemRevoke { mem }).map(|_| ())
}

/// A region's physical base, size in pages and kind (0 RAM, 1 device).
pub fn mem_info(mem: CapSlot) -> Result<(usize, usize, usize), Error> {
    invoke(Syscall::MemInfo { mem }).map(|(base, m)| (base, m[0], m[1]))
}

/// Empties a slot of the caller's CSpace.
pub fn cap_delete(slot: CapSlot) -> Result<(), Error> {
    invoke(Syscall::CapDelete { slot }).map(|_| ())
}

/// Creates an endpoint (needs the control capability in `control`) in `dest`.
pub fn create_endpoint(control: CapSlot, dest: CapSlot) -> Result<usize, Error> {
    invoke(Syscall::CreateEndpoint { control, dest }).map(|(i, _)| i)
}

/// Creates a notification (needs the control capability in `control`) in `dest`.
pub fn create_notification(control: CapSlot, dest: CapSlot) -> Result<usize, Error> {
    invoke(Syscall::CreateNotification { control, dest }).map(|(i, _)| i)
}

/// Makes the handler of device interrupt line `irq` (needs the control capability in
/// `control`) in `dest`.
pub fn issue_irq_handler(control: CapSlot, irq: usize, dest: CapSlot) -> Result<(), Error> {
    invoke(Syscall::IssueIrqHandler { control, irq, dest }).map(|_| ())
}

/// Delivers the interrupt of the handler in `handler` to the notification in `ntfn` on core
/// `core`, and unmasks the line.
pub fn bind_irq(handler: CapSlot, ntfn: CapSlot, core: usize) -> Result<(), Error> {
    invoke(Syscall::BindIrq {
        handler,
        ntfn,
        core,
    })
    .map(|_| ())
}

/// Acknowledges (unmasks) the interrupt of the handler in `handler`.
pub fn ack_irq(handler: CapSlot) -> Result<(), Error> {
    invoke(Syscall::AckIrq { handler }).map(|_| ())
}

/// A kernel statistic (keys in [`abi::syscall::info`]).
pub fn kernel_info(key: usize) -> Result<usize, Error> {
    invoke(Syscall::KernelInfo { key }).map(|(v, _)| v)
}

/// The null system call (benchmarks: the bare entry and exit path).
pub fn null() {
    // No error is possible: the call takes no argument.
    let _ = invoke(Syscall::Null);
}

/// Spins `cycles` counter ticks inside the kernel, holding the kernel lock (benchmarks, at most
/// [`abi::syscall::BUSY_MAX_CYCLES`]). Returns the ticks the kernel actually spun.
pub fn kernel_busy(cycles: usize) -> Result<usize, Error> {
    invoke(Syscall::KernelBusy { cycles }).map(|(v, _)| v)
}

/// Zeroes the kernel's entry counters of every core (benchmarks). `UnknownSyscall` from a
/// kernel built without the `trace` feature, which keeps no counters.
pub fn zero_kernel_counters() -> Result<(), Error> {
    invoke(Syscall::KernelCounters {
        op: abi::syscall::counters::ZERO,
        core: 0,
    })
    .map(|_| ())
}

/// The kernel's counters of `core` since the last zero (benchmarks): `(entries of core,
/// counter ticks core spent in traced kernel entries, entries of every core)`.
/// `UnknownSyscall` from a kernel built without the `trace` feature.
pub fn read_kernel_counters(core: usize) -> Result<(usize, usize, usize), Error> {
    invoke(Syscall::KernelCounters {
        op: abi::syscall::counters::READ,
        core,
    })
    .map(|(entries, m)| (entries, m[0], m[1]))
}

/// Creates an inactive thread in the address space in `aspace` with `priority` on `core`; its
/// capability (all rights) goes to the empty slot `dest`. Returns its thread index.
pub fn create_thread(
    control: CapSlot,
    dest: CapSlot,
    aspace: CapSlot,
    priority: usize,
    core: usize,
) -> Result<usize, Error> {
    invoke(Syscall::CreateThread {
        control,
        dest,
        aspace,
        priority,
        core,
    })
    .map(|(v, _)| v)
}

/// Sets where the inactive thread in `thread` starts: `pc`, `sp` and one argument.
pub fn write_registers(thread: CapSlot, pc: usize, sp: usize, arg: usize) -> Result<(), Error> {
    invoke(Syscall::WriteRegisters {
        thread,
        pc,
        sp,
        arg,
    })
    .map(|_| ())
}

/// The initial stack pointer of a thread whose stack ends at `top` (for [`write_registers`]):
/// x86_64 enters a function with the stack 8 bytes below 16-byte alignment (as after a
/// `call`); ARMv7 with it 8-byte aligned.
pub fn initial_sp(top: usize) -> usize {
    if cfg!(target_arch = "x86_64") {
        top - 8
    } else {
        top
    }
}

/// Copies the capability in `src` with `rights` and `badge` into slot `dest` of `target`'s
/// CSpace (see [`abi::Syscall::Mint`]).
pub fn mint(
    src: CapSlot,
    target: MintTarget,
    dest: CapSlot,
    rights: Rights,
    badge: usize,
) -> Result<(), Error> {
    invoke(Syscall::Mint {
        src,
        target,
        dest,
        rights,
        badge,
    })
    .map(|_| ())
}

/// Blocks for good: waits on the park notification nobody signals.
pub fn park() -> ! {
    loop {
        let _ = wait(slot(crate::image::slot::PARK));
    }
}

/// How this program reads time, as the image said ([`info::COUNTER`](crate::image::info::COUNTER)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// No counter: every read gives 0.
    None,
    /// x86_64 `rdtsc`.
    Tsc,
    /// ARMv7 PMCCNTR, readable in user mode.
    Pmccntr,
    /// The image's `COUNTER` debug call (the kernel reads its counter).
    DebugCall,
}

impl Counter {
    /// The counter the image tells this program to use (one debug call).
    pub fn detect() -> Counter {
        use crate::image::counter;
        match crate::debug::info(crate::image::info::COUNTER) {
            counter::TSC if cfg!(target_arch = "x86_64") => Counter::Tsc,
            counter::PMCCNTR if cfg!(target_arch = "arm") => Counter::Pmccntr,
            counter::DEBUGCALL => Counter::DebugCall,
            _ => Counter::None,
        }
    }

    /// The name the benchmark records use (`counter` field).
    pub fn name(self) -> &'static str {
        match self {
            Counter::None => "none",
            Counter::Tsc => "tsc",
            Counter::Pmccntr => "pmccntr",
            Counter::DebugCall => "debugcall",
        }
    }

    /// Reads the counter. Inlined so that a benchmark's read sits right next to the system
    /// call it times.
    #[inline(always)]
    pub fn read(self) -> u64 {
        match self {
            Counter::Tsc => read_tsc(),
            Counter::Pmccntr => read_pmccntr(),
            Counter::DebugCall => {
                let r = raw([crate::image::debug_nr::COUNTER, 0, 0, 0, 0, 0]);
                (r[1] as u64 & 0xFFFF_FFFF) | ((r[2] as u64) << 32)
            }
            Counter::None => 0,
        }
    }
}

/// Reads the TSC.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn read_tsc() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: `rdtsc` is allowed in user mode (CR4.TSD clear) and only reads the counter.
    unsafe {
        core::arch::asm!("rdtsc", out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags))
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

/// No TSC on this architecture ([`Counter::detect`] never picks it here).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn read_tsc() -> u64 {
    0
}

/// Reads PMCCNTR (32 bits).
#[cfg(target_arch = "arm")]
#[inline(always)]
fn read_pmccntr() -> u64 {
    let v: u32;
    // SAFETY: `mrc p15, 0, r, c9, c13, 0` only reads the cycle counter; the image reports
    // `Counter::Pmccntr` only when the HAL set PMUSERENR.EN on every core, so it does not trap.
    unsafe {
        core::arch::asm!("mrc p15, 0, {}, c9, c13, 0", out(reg) v,
            options(nomem, nostack, preserves_flags))
    }
    u64::from(v)
}

/// No PMCCNTR on this architecture ([`Counter::detect`] never picks it here).
#[cfg(not(target_arch = "arm"))]
#[inline(always)]
fn read_pmccntr() -> u64 {
    0
}

/// Reads the counter the image names (one `INFO` debug call to ask, then the read): the TSC
/// on x86_64, PMCCNTR on ARM virt in benchmark mode, else the kernel's counter through a debug
/// call (the A9 global timer on sabrelite, CNTVCT on virt).
/// Benchmarks ask once ([`Counter::detect`]) and read with [`Counter::read`] instead. (No
/// cached answer: a user static in `.bss` would need its own loadable segment.)
pub fn cycles() -> u64 {
    Counter::detect().read()
}
