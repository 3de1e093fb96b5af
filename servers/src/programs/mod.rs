//! The programs of the user ELF, declared in [`PROGRAMS`] and selected by role (see
//! [`image::role`](crate::image::role)).
//!
//! This module holds the root task, the IPC ping-pong client and server, the fault and error
//! tests and the pager test; the larger programs have modules of their own:
//! * [`memtest`], [`devtest`]: the root task's tests of memory capabilities and of a device
//!   interrupt, in test mode;
//! * [`bench`](mod@bench): the kernel IPC benchmark programs (one-way IPC, round trips,
//!   throughput);
//! * [`fuzz`]: the in-guest system-call fuzzer of `mode=fuzz` and its drain server;
//! * [`hello`]: the example program.
//!
//! The memory system's programs (loader, pagers, workers) are [`crate::memory`]'s, the network
//! server is [`crate::net`]; their entries in [`PROGRAMS`] call into those modules.

pub mod bench;
pub mod devtest;
pub mod fuzz;
pub mod hello;
pub mod memtest;

use core::fmt::Write as _;

use abi::{Error, EXCEPTION_LABEL, FAULT_LABEL};

use crate::debug::{self, test};
use crate::image::{fault, role, slot, PAGER_TEST_ADDR};
use crate::sys::{self, slot as s};
use crate::uprintln;

/// How a program tells the system that it finished: the image's builder reads this to know
/// which threads must report `DONE` before the run can end (and names a program that reports
/// when none was expected of it, or never does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reports {
    /// Calls `debug::done()` once when it finished.
    Done,
    /// Calls `debug::done()` in test mode only (the root task, after its device test).
    DoneInTests,
    /// Never reports (servers, pagers, faulting programs, the fuzzer's drain).
    Never,
}

/// One program of the user ELF: everything the system needs to know to run it. Adding a
/// program is one entry in [`PROGRAMS`] (and its role number in [`image::role`](crate::image::role)),
/// plus the threads the image's builder starts with it (`docs/programs.md`).
#[derive(Clone, Copy, Debug)]
pub struct Program {
    /// Its role number (`_start`'s first argument).
    pub role: u64,
    /// Its name in reports (`... never reported`).
    pub name: &'static str,
    /// Whether and when it reports `DONE`.
    pub reports: Reports,
    /// Its code, with `_start`'s other two arguments.
    pub main: fn(u64, u64) -> !,
}

impl Program {
    /// Whether a thread running it must report `DONE` in a run (`test`: test mode).
    pub const fn must_report(&self, test: bool) -> bool {
        match self.reports {
            Reports::Done => true,
            Reports::DoneInTests => test,
            Reports::Never => false,
        }
    }
}

/// Every program, by role.
pub const PROGRAMS: &[Program] = &[
    Program {
        role: role::ROOT,
        name: "root",
        reports: Reports::DoneInTests,
        main: |threads, pager_for| root(threads as usize, pager_for as usize),
    },
    Program {
        role: role::CLIENT,
        name: "ping-pong client",
        reports: Reports::Done,
        main: |core, rounds| client(core as usize, rounds as usize),
    },
    Program {
        role: role::SERVER,
        name: "ping-pong server",
        reports: Reports::Never,
        main: |core, _| server(core as usize),
    },
    Program {
        role: role::FAULT,
        name: "faulter",
        reports: Reports::Never,
        main: |kind, _| faulter(kind),
    },
    Program {
        role: role::ERRORS,
        name: "system-call error checks",
        reports: Reports::Done,
        main: |_, _| errors(),
    },
    Program {
        role: role::PAGER,
        name: "pager",
        reports: Reports::Never,
        main: |_, _| pager(),
    },
    Program {
        role: role::PAGED,
        name: "paged program",
        reports: Reports::Done,
        main: |_, _| paged(),
    },
    Program {
        role: role::BENCH_IPC_CLIENT,
        name: "one-way IPC benchmark client",
        reports: Reports::Done,
        main: |variant, _| crate::programs::bench::ipc_client(variant),
    },
    Program {
        role: role::BENCH_IPC_SERVER,
        name: "one-way IPC benchmark server",
        reports: Reports::Never,
        main: |_, _| crate::programs::bench::ipc_server(),
    },
    Program {
        role: role::BENCH_TP_CLIENT,
        name: "throughput benchmark client",
        reports: Reports::Done,
        main: |rec, interval| crate::programs::bench::tp_client(rec as usize, interval),
    },
    Program {
        role: role::BENCH_TP_SERVER,
        name: "throughput benchmark server",
        reports: Reports::Never,
        main: |_, _| crate::programs::bench::tp_server(),
    },
    Program {
        role: role::STACK_OVERFLOW,
        name: "stack overflow",
        reports: Reports::Never,
        main: |_, _| stack_overflow(),
    },
    Program {
        role: role::FUZZ,
        name: "fuzzer",
        reports: Reports::Done,
        main: |calls, seed| crate::programs::fuzz::run(calls as usize, seed, false),
    },
    Program {
        role: role::FUZZ_COMMON_ONLY,
        name: "fuzzer (common calls)",
        reports: Reports::Done,
        main: |calls, seed| crate::programs::fuzz::run(calls as usize, seed, true),
    },
    Program {
        role: role::FUZZ_DRAIN,
        name: "fuzzer's drain server",
        reports: Reports::Never,
        main: |_, _| crate::programs::fuzz::drain(),
    },
    Program {
        role: role::LOADER,
        name: "memory-system loader",
        reports: Reports::Done,
        main: |spec, topology| crate::memory::loader::run(spec, topology),
    },
    Program {
        role: role::NET,
        name: "network server",
        reports: Reports::Never,
        main: |_, _| crate::net::run(),
    },
    Program {
        role: role::HELLO,
        name: "hello",
        reports: Reports::Done,
        main: |core, _| crate::programs::hello::run(core as usize),
    },
];

/// The program of `role`, if one is declared.
pub fn find(role: u64) -> Option<&'static Program> {
    PROGRAMS.iter().find(|p| p.role == role)
}

/// Runs the program `role` with arguments `a` and `b`; never returns (finished programs park).
pub fn run(role: u64, a: u64, b: u64) -> ! {
    match find(role) {
        Some(p) => (p.main)(a, b),
        None => {
            uprintln!("unknown role {role}: not declared in servers::programs::PROGRAMS");
            debug::panicked();
            sys::park()
        }
    }
}

/// The root task: starts every other thread (capabilities in slots `ROOT_FIRST_THREAD ..
/// ROOT_FIRST_THREAD + threads`), binds the pager of the pager test (thread slot `pager_for`, 0
/// for none) and lets the other cores run. In test mode it first runs the memory tests and
/// sets up the device-interrupt test, whose rounds it runs after the release (then it reports
/// DONE like the other finite programs). It starts them all before any other core enters the
/// kernel, so even the lock-free `none` strategy sees no concurrent management call.
fn root(threads: usize, pager_for: usize) -> ! {
    uprintln!(
        "root: {} cpus, starting {threads} threads",
        debug::info(crate::image::info::CPUS)
    );
    if pager_for != 0 {
        match sys::bind_pager(s(pager_for), s(slot::ROOT_PAGER_EP)) {
            Ok(()) => uprintln!("root: pager bound for the thread in slot {pager_for}"),
            Err(e) => uprintln!("root: BindPager failed: {e:?}"),
        }
    }
    let test_mode = debug::info(crate::image::info::TEST_MODE) == 1;
    let device = test_mode.then(|| {
        crate::programs::memtest::run();
        crate::programs::devtest::prepare()
    });
    let mut started = 0;
    for i in 0..threads {
        match sys::resume(s(slot::ROOT_FIRST_THREAD + i)) {
            Ok(()) => started += 1,
            Err(e) => uprintln!(
                "root: Resume of slot {} failed: {e:?}",
                slot::ROOT_FIRST_THREAD + i
            ),
        }
    }
    uprintln!("root: started {started} threads; releasing the other cores");
    debug::release_cores();
    if let Some(device) = device {
        crate::programs::devtest::run(device);
        debug::done();
    }
    sys::park()
}

/// `mode=stackoverflow`: the only program; asks the image to overflow the kernel stack. The
/// machine stops there with the overflow report; getting past the call is a failure.
fn stack_overflow() -> ! {
    uprintln!(
        "stackoverflow: asking for a kernel stack overflow on cpu {}",
        debug::cpu()
    );
    debug::kernel_stack_overflow();
    uprintln!("stackoverflow: the debug call returned: no overflow happened");
    debug::panicked();
    debug::exit(false);
    sys::park()
}

/// Ping-pong client: `rounds` Calls to its server, checking every reply (including that the
/// server saw this client's badge, `core + 1`).
fn client(core: usize, rounds: usize) -> ! {
    let ep = s(slot::EP);
    let start = sys::cycles();
    let mut bad = 0usize;
    let mut last = [0; 4];
    for i in 0..rounds {
        match sys::call(ep, [i, i * 2, 0xC0DE, core]) {
            Ok((_, msg)) => {
                last = msg;
                if msg != [i + 1, i * 2 + 1, 0xC0DE, core + 1] {
                    bad += 1;
                }
            }
            Err(_) => bad += 1,
        }
    }
    let cycles = sys::cycles().wrapping_sub(start);
    let per = cycles / (rounds.max(1) as u64);
    uprintln!(
        "client cpu {core}: {rounds} Call/ReplyRecv round trips with its server, {bad} bad \
         replies, last reply {last:?}, {per} cycles per round trip"
    );
    if debug::test_mode() {
        test(
            &pingpong_name(core),
            bad == 0 && rounds > 0,
            format_args!("{rounds} calls, {bad} bad, server saw badge {}", last[3]),
        );
    }
    debug::done();
    sys::park()
}

/// `user:ipc_pingpong_cpu<N>` without an allocator.
fn pingpong_name(core: usize) -> heapless::String<48> {
    let mut n = heapless::String::new();
    // Cannot overflow: 21 characters and at most 20 digits.
    let _ = write!(n, "user:ipc_pingpong_cpu{core}");
    n
}

/// Ping-pong server: answers every Call with the first two words incremented, the third kept and
/// the caller's badge in the fourth.
fn server(core: usize) -> ! {
    let ep = s(slot::EP);
    uprintln!("server cpu {core}: waiting for calls");
    let mut next = sys::recv(ep);
    loop {
        let msg = match next {
            // The badge says which client called (the boot code minted core + 1).
            Ok((badge, m)) => [m[0] + 1, m[1] + 1, m[2], badge],
            Err(e) => {
                uprintln!("server cpu {core}: receive failed: {e:?}");
                [0; 4]
            }
        };
        next = sys::reply_recv(ep, msg);
    }
}

/// Faults on purpose; the kernel must stop it (no pager), so the lines after the fault never
/// run.
fn faulter(kind: u64) -> ! {
    match kind {
        fault::BAD_POINTER => uprintln!("faulter: reading the unmapped address 0xdead0000"),
        fault::INVALID_OPCODE => uprintln!("faulter: executing ud2"),
        fault::WRITE_READ_ONLY => uprintln!("faulter: writing to its own code (read-only)"),
        fault::EXECUTE_DATA => uprintln!("faulter: jumping to code copied onto its stack"),
        fault::JUMP_TO_KERNEL => uprintln!(
            "faulter: jumping into kernel memory at {:#x}",
            crate::image::KERNEL_ADDR
        ),
        _ => uprintln!("faulter: dividing by zero"),
    }
    trigger(kind);
    uprintln!("faulter: still running after the fault (the kernel did not stop it)");
    debug::panicked();
    sys::park()
}

/// Raises the fault `kind` (see [`fault`]).
#[cfg(target_arch = "x86_64")]
fn trigger(kind: u64) {
    match kind {
        // SAFETY: deliberately faults (#PF); the kernel stops this thread, so the load never
        // completes and nothing observes its result.
        fault::BAD_POINTER => unsafe {
            core::arch::asm!("mov {0}, qword ptr [{1}]", out(reg) _, in(reg) 0xdead_0000u64,
                options(nostack, readonly))
        },
        // SAFETY: deliberately raises #UD; the kernel stops this thread.
        fault::INVALID_OPCODE => unsafe { core::arch::asm!("ud2", options(nomem, nostack)) },
        // SAFETY: deliberately writes to this program's own code, which the loader maps
        // read-only: the page fault stops this thread before anything is changed.
        fault::WRITE_READ_ONLY => unsafe {
            core::arch::asm!("mov qword ptr [{0}], {1}", in(reg) trigger as fn(u64) as usize,
                in(reg) 0usize, options(nostack))
        },
        fault::EXECUTE_DATA => {
            // `ret` on the (writable, non-executable) stack: NX makes the call fault.
            let code = core::hint::black_box([0xC3u8; 16]);
            // SAFETY: deliberately calls into a data page; the fetch faults and the kernel
            // stops this thread (were it executed, `ret` would just come back here).
            unsafe { core::arch::asm!("call {0}", in(reg) code.as_ptr(), clobber_abi("C")) }
        }
        // SAFETY: deliberately jumps into kernel memory (a supervisor-only page): the fetch
        // faults and the kernel stops this thread.
        fault::JUMP_TO_KERNEL => unsafe {
            core::arch::asm!("jmp {0}", in(reg) crate::image::KERNEL_ADDR, options(nomem, nostack))
        },
        // SAFETY: deliberately raises #DE (`div` by a zero register); the kernel stops this
        // thread.
        _ => unsafe {
            core::arch::asm!("div {0}", in(reg) 0u64, inout("rax") 1u64 => _,
                inout("rdx") 0u64 => _, options(nomem, nostack))
        },
    }
}

/// Raises the fault `kind` (see [`fault`]). ARMv7-A has no division trap, so
/// `DIVIDE_BY_ZERO` raises a breakpoint (`bkpt`, a prefetch abort) instead.
#[cfg(target_arch = "arm")]
fn trigger(kind: u64) {
    match kind {
        // SAFETY: deliberately faults (data abort on an unmapped address); the kernel stops
        // this thread, so the load never completes and nothing observes its result.
        fault::BAD_POINTER => unsafe {
            core::arch::asm!("ldr {0}, [{1}]", out(reg) _, in(reg) 0xdead_0000u32,
                options(nostack, readonly))
        },
        // SAFETY: deliberately raises an undefined-instruction exception; the kernel stops
        // this thread.
        fault::INVALID_OPCODE => unsafe { core::arch::asm!("udf #0", options(nomem, nostack)) },
        // SAFETY: deliberately writes to this program's own code, which the loader maps
        // read-only: the data abort stops this thread before anything is changed.
        fault::WRITE_READ_ONLY => unsafe {
            core::arch::asm!("str {1}, [{0}]", in(reg) trigger as fn(u64) as usize, in(reg) 0usize,
                options(nostack))
        },
        fault::EXECUTE_DATA => {
            // `bx lr` on the (writable, execute-never) stack: XN makes the call fault.
            let code = core::hint::black_box([0xE12F_FF1Eu32; 4]);
            // SAFETY: deliberately calls into a data page; the fetch faults and the kernel
            // stops this thread (were it executed, `bx lr` would just come back here).
            unsafe {
                core::arch::asm!("blx {0}", in(reg) code.as_ptr(), out("r0") _, out("r1") _,
                    out("r2") _, out("r3") _, out("r12") _, out("lr") _)
            }
        }
        // SAFETY: deliberately jumps into the kernel's RAM window (privileged-only sections):
        // the fetch faults and the kernel stops this thread.
        fault::JUMP_TO_KERNEL => unsafe {
            core::arch::asm!("bx {0}", in(reg) crate::image::KERNEL_ADDR as usize,
                options(nomem, nostack))
        },
        // SAFETY: deliberately raises a prefetch abort (debug event); the kernel stops this
        // thread.
        _ => unsafe { core::arch::asm!("bkpt #0", options(nomem, nostack)) },
    }
}

/// Raises the fault `kind`: no user mode exists on this architecture yet, so it only says so.
#[cfg(not(any(target_arch = "x86_64", target_arch = "arm")))]
fn trigger(kind: u64) {
    uprintln!("faulter: fault {kind} has no trigger on this architecture yet");
}

/// System-call error checks: each wrong use returns its error and changes nothing.
fn errors() -> ! {
    let ep = s(slot::EP);
    let ntfn = s(slot::ERRORS_NTFN);
    let empty = s(slot::ERRORS_EMPTY);
    let check = |name: &str, got: Result<(usize, [usize; 4]), Error>, want: Error| {
        let ok = got.err() == Some(want);
        test(name, ok, format_args!("want {want:?}, got {got:?}"));
    };
    check(
        "user:err_empty_slot_invalid_cap",
        sys::call(empty, [1, 2, 3, 4]),
        Error::InvalidCap,
    );
    check(
        "user:err_notification_as_endpoint_wrong_type",
        sys::call(ntfn, [0; 4]),
        Error::WrongType,
    );
    // The endpoint capability is READ only: sending needs WRITE.
    check(
        "user:err_send_without_write_missing_right",
        sys::call(ep, [0; 4]),
        Error::MissingRight,
    );
    check(
        "user:err_unknown_syscall",
        abi::syscall::result(&sys::raw([99, 0, 0, 0, 0, 0])),
        Error::UnknownSyscall,
    );
    check(
        "user:err_reply_without_caller",
        sys::invoke(abi::Syscall::Reply { msg: [0; 4] }),
        Error::NoReply,
    );
    check(
        "user:err_nonzero_unused_register",
        abi::syscall::result(&sys::raw([abi::syscall::nr::YIELD, 1, 0, 0, 0, 0])),
        Error::InvalidArgument,
    );
    // A notification round trip on the calling core.
    let signalled = sys::signal(ntfn);
    let word = sys::wait(ntfn);
    test(
        "user:notification_signal_then_wait",
        signalled.is_ok() && word == Ok(1),
        format_args!("signal {signalled:?}, wait {word:?}"),
    );
    debug::done();
    sys::park()
}

/// The pager of the pager test: receives one fault, maps the frame at the faulting page,
/// replies so that the thread retries, then serves nothing more.
fn pager() -> ! {
    let ep = s(slot::EP);
    match sys::recv(ep) {
        Ok((_, [label, addr, write, thread])) if label == FAULT_LABEL => {
            let page = addr & !0xFFF;
            let mapped = sys::map_page(
                s(slot::PAGER_ASPACE),
                s(slot::PAGER_FRAME),
                0,
                page,
                abi::PageAttrs::WRITE,
            );
            uprintln!(
                "pager: thread {thread} faulted at {addr:#x} (write {write}); mapping a frame: \
                 {mapped:?}"
            );
            let _ = sys::reply([0; 4]);
        }
        Ok((_, msg)) if msg[0] == EXCEPTION_LABEL => {
            uprintln!("pager: unexpected exception message {msg:?}");
            debug::panicked();
        }
        other => {
            uprintln!("pager: unexpected {other:?}");
            debug::panicked();
        }
    }
    sys::park()
}

/// Touches an unmapped page; its pager maps it and the access completes.
fn paged() -> ! {
    let p = PAGER_TEST_ADDR as *mut u64;
    // SAFETY: the page is unmapped at first: the access faults, the pager maps a frame there
    // and the kernel restarts the instruction. No Rust object lives at this address.
    let read_back = unsafe {
        p.write_volatile(0x5EED);
        p.read_volatile()
    };
    test(
        "user:pager_resolves_page_fault",
        read_back == 0x5EED,
        format_args!("wrote 0x5eed at {PAGER_TEST_ADDR:#x}, read {read_back:#x}"),
    );
    debug::done();
    sys::park()
}
