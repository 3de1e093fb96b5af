//! The in-guest system-call fuzzer (`mode=fuzz`): one per core, each making a fixed number of
//! random and malformed system calls through the real trap path (`syscall` / `svc`), while the
//! ping-pong pairs of every core run beside it and must still finish.
//!
//! # What it calls
//! Every call is one of three kinds, chosen at random:
//! * **raw**: a random number (anything, small, or in the image's debug range) with random
//!   registers: whole words, small numbers, slots in and out of range, user, kernel, unmapped,
//!   misaligned and (x86_64) non-canonical addresses, huge sizes;
//! * **malformed**: a valid call number with such arguments;
//! * **typed**: a well-formed call on a capability of every type the kernel has (thread, address
//!   space, endpoint, notification, RAM and device region, IRQ handler, control; reply
//!   capabilities are exercised through `Reply`/`ReplyRecv` without a caller), with arguments
//!   that are mostly sensible and sometimes not (wrong slot types, bad offsets and addresses).
//!
//! One call in sixteen is made with a hostile stack pointer (a kernel, non-canonical or unmapped
//! address, restored right after the trap) and, on x86_64, with the direction and
//! alignment-check flags set: the kernel must neither use nor trust either.
//!
//! # What it must not do (and why each rule keeps the test meaningful)
//! The fuzzer must end, and must not stop the machine or the other programs, or the run would
//! say nothing. So every call passes [`Fuzzer::sanitize`], which decodes it exactly as the
//! kernel will ([`abi::Syscall::decode`]) and rewrites only the calls that could do that:
//! * **blocking for good**: `Call`/`Send` only on the drain server's endpoint
//!   ([`slot::FUZZ_EP`], answered forever) or on fixed slots that hold no endpoint; `Recv`,
//!   `ReplyRecv` and `Wait` only on fixed slots where they fail (no READ right, wrong type).
//!   The scratch slots may hold endpoints and notifications the fuzzer created (all rights, no
//!   sender), so blocking calls never name them. Creations and `Mint`s into the fixed slots are
//!   moved to scratch slots, so the fixed slots keep what these rules assume.
//! * **losing its own capabilities**: `CapDelete` and `MemMerge` (which removes the second
//!   region's capabilities) never name a fixed slot.
//! * **a fault storm**: `BindPager` never names the drain endpoint (a thread with no code that
//!   faults would be answered and fault again, forever).
//! * **destroying itself**: it holds no capability to its own thread or address space (it maps
//!   into [`slot::FUZZ_ASPACE`], an address space with no code; threads it creates and starts
//!   there fault at once and are stopped).
//! * **the image's debug calls** (numbers from `0x100`, served by the image, not the kernel):
//!   `PUT`, `DONE` and `PANIC` would print garbage, end the run early or fail it, so random
//!   numbers in that range are replaced by harmless ones (`INFO` with any selector, `COUNTER`,
//!   unknown numbers) and by the ones the image must refuse to a non-root thread (`EXIT` with a
//!   failure status, `RELEASE`, `KERNEL_STACK_OVERFLOW`), whose answers are checked. The
//!   debug calls are a trusted debugging aid outside the capability system, like seL4's;
//!   what matters here is that the refusals hold.
//! * **breaking `NoLock`'s contract** (`lock=none`, role
//!   [`FUZZ_COMMON_ONLY`](crate::image::role::FUZZ_COMMON_ONLY)): no management call at all,
//!   and only objects of its own core.
//!
//! # What it checks
//! * every call the kernel decoder rejects comes back with exactly the decoder's error (the
//!   same [`abi::Syscall::decode`] runs in the fuzzer);
//! * every kernel result is success or a known error code;
//! * the debug calls a non-root thread may not make are refused (`MissingRight`), unknown ones
//!   answered `UnknownSyscall`;
//! * afterwards, its own capabilities still work: a `Call` to the drain server comes back with
//!   the expected answer and badge, a `Signal` + `Wait` round trip on its notification works,
//!   and `MemInfo` still describes the same RAM region.
//!
//! It prints `fuzz: cpu N: seed 0x...` first and `fuzz: cpu N: C calls (...)` at the end, then
//! the result codes, and reports DONE (after a user panic report if anything was wrong).

use abi::limits::{CSPACE_SLOTS, NUM_PRIOS, PAGE_SIZE, USER_TOP};
use abi::syscall::{nr, MINT_SELF};
use core::fmt::Write;

use abi::{Error, Regs, Syscall};

use crate::debug;
use crate::image::{debug_nr, info, slot, USER_BASE, USER_STACK_TOP};
use crate::sys::{self, slot as s};
use crate::uprintln;

/// The page-aligned window of [`slot::FUZZ_ASPACE`] most typed mappings go to (so that
/// page tables are reused, not only new ones made), below the ARMv7 kernel window.
const WINDOW: usize = 0x2000_0000;
/// Pages in [`WINDOW`].
const WINDOW_PAGES: usize = 64;
/// First image debug-call number (`hal-x86` and `hal-armv7` `DEBUG_BASE`).
const DEBUG_BASE: usize = 0x100;
/// The range of numbers near the debug calls that the raw kind aims at.
const DEBUG_END: usize = 0x200;
/// Result codes counted one by one: 0 (success) and every [`Error`] code (they run from 1 up
/// without gaps); larger ones count as "other" (an anomaly for the kernel's calls).
const CODES: usize = Error::ALL.len() + 1;

/// The common (non-management) call numbers: the only ones a fuzzer makes under `lock=none`.
const COMMON: [usize; 10] = [
    nr::CALL,
    nr::SEND,
    nr::NBSEND,
    nr::RECV,
    nr::REPLY,
    nr::REPLY_RECV,
    nr::SIGNAL,
    nr::WAIT,
    nr::YIELD,
    nr::ACK_IRQ,
];

/// Addresses worth trying as arguments and stack pointers: user code and stacks, the edges of
/// user space, kernel memory, and (x86_64) non-canonical addresses.
#[cfg(not(target_arch = "arm"))]
const ADDRS: [usize; 16] = [
    0,
    0x1000,
    USER_BASE as usize,
    USER_BASE as usize + 0x1000,
    USER_STACK_TOP as usize - 0x1000,
    USER_TOP - PAGE_SIZE,
    USER_TOP,
    1 << 47,
    0x0000_8000_0000_0000 - 8,
    0x8000_0000_0000_0000,
    0xFFFF_8000_0000_0000,
    0xFFFF_FFFF_8000_0000,
    0xFFFF_FFFF_8010_0000,
    0xFEE0_0000,
    usize::MAX & !0xFFF,
    usize::MAX,
];

/// Addresses worth trying as arguments and stack pointers: user code and stacks, the edges of
/// user space, the kernel's RAM window and the exception vectors.
#[cfg(target_arch = "arm")]
const ADDRS: [usize; 16] = [
    0,
    0x1000,
    USER_BASE as usize,
    USER_BASE as usize + 0x1000,
    USER_STACK_TOP as usize - 0x1000,
    0x3FFF_F000,
    0x4000_0000,
    0x4010_0000,
    0x1000_0000,
    USER_TOP - PAGE_SIZE,
    USER_TOP,
    0xA000_0000,
    0xFFFF_0000,
    0xFFFF_F000,
    usize::MAX & !0xFFF,
    usize::MAX,
];

/// A small, fast pseudo-random generator (SplitMix64): good enough to spread calls, and
/// replayable from its seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for core `core` of a run seeded with `seed`.
    pub fn new(seed: u64, core: usize) -> Self {
        let mut r = Rng(seed ^ (core as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
        r.next_u64();
        r
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A random word.
    pub fn word(&mut self) -> usize {
        self.next_u64() as usize
    }

    /// A number below `n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `1 / n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
}

/// Whether `i` is one of the fixed slots the boot code filled (see [`slot`]`::FUZZ_*`).
fn fixed(i: usize) -> bool {
    i < slot::FUZZ_SCRATCH
}

/// What a fuzzer counted.
#[derive(Clone, Debug)]
pub struct Counts {
    /// Calls made (every trap counts once).
    pub calls: usize,
    /// Of those, calls the kernel served (numbers below the debug range).
    pub kernel: usize,
    /// Calls made with a hostile stack pointer.
    pub hostile: usize,
    /// Result codes of the kernel's calls (0, then each [`Error`] code); the last counts unknown codes.
    pub codes: [usize; CODES + 1],
    /// Results that broke a rule (see the module docs).
    pub anomalies: usize,
}

/// One fuzzer's state: its generator, what it counted, and whether it may make management
/// calls.
pub struct Fuzzer {
    rng: Rng,
    common_only: bool,
    /// Counts so far.
    pub counts: Counts,
    /// The first few anomalies are printed; the rest only counted.
    printed: usize,
}

impl Fuzzer {
    /// A fuzzer seeded with `seed` on core `core`; `common_only` restricts it to the common
    /// calls (`lock=none`).
    pub fn new(seed: u64, core: usize, common_only: bool) -> Self {
        Fuzzer {
            rng: Rng::new(seed, core),
            common_only,
            counts: Counts {
                calls: 0,
                kernel: 0,
                hostile: 0,
                codes: [0; CODES + 1],
                anomalies: 0,
            },
            printed: 0,
        }
    }

    /// A slot argument: mostly a valid index, sometimes just out of range or any word.
    fn slot_arg(&mut self) -> usize {
        match self.rng.below(16) {
            0 => CSPACE_SLOTS + self.rng.below(4),
            1 => self.rng.word(),
            2 => usize::MAX,
            _ => self.rng.below(CSPACE_SLOTS),
        }
    }

    /// A scratch slot.
    fn scratch(&mut self) -> usize {
        slot::FUZZ_SCRATCH + self.rng.below(CSPACE_SLOTS - slot::FUZZ_SCRATCH)
    }

    /// `right` most of the time, else any slot (wrong types, empty slots, out of range).
    fn slot_or(&mut self, right: usize) -> usize {
        if self.rng.one_in(4) {
            self.slot_arg()
        } else {
            right
        }
    }

    /// A thread slot: the fixed victim or a scratch slot (threads it created), or any.
    fn thread_slot(&mut self) -> usize {
        match self.rng.below(3) {
            0 => slot::FUZZ_THREAD,
            1 => self.scratch(),
            _ => self.slot_or(slot::FUZZ_THREAD),
        }
    }

    /// A region slot: its RAM, the device region, a scratch slot (regions it split), or any.
    fn mem_slot(&mut self) -> usize {
        match self.rng.below(5) {
            0 | 1 => slot::FUZZ_MEM,
            2 => slot::FUZZ_DEVICE,
            3 => self.scratch(),
            _ => self.slot_arg(),
        }
    }

    /// An address argument: a window page, an interesting address, misaligned, or any word.
    fn addr(&mut self) -> usize {
        match self.rng.below(8) {
            0..=3 => WINDOW + self.rng.below(WINDOW_PAGES) * PAGE_SIZE,
            4 | 5 => ADDRS[self.rng.below(ADDRS.len())],
            6 => WINDOW + 1 + self.rng.below(PAGE_SIZE - 1),
            _ => self.rng.word(),
        }
    }

    /// A size or offset: small, a little too big, or huge.
    fn size(&mut self) -> usize {
        match self.rng.below(8) {
            0..=3 => self.rng.below(8),
            4 => self.rng.below(64),
            5 => usize::MAX - self.rng.below(4),
            6 => 1 << self.rng.below(usize::BITS as usize),
            _ => self.rng.word(),
        }
    }

    /// Any argument word.
    fn any(&mut self) -> usize {
        match self.rng.below(6) {
            0 => self.slot_arg(),
            1 => self.addr(),
            2 => self.size(),
            3 => 0,
            _ => self.rng.word(),
        }
    }

    /// A raw call: a random number and random registers.
    fn raw_call(&mut self) -> Regs {
        let n = match self.rng.below(4) {
            0 => self.rng.word(),
            1 => DEBUG_BASE + self.rng.below(DEBUG_END - DEBUG_BASE),
            _ => self.rng.below(DEBUG_BASE),
        };
        let mut r = [n, 0, 0, 0, 0, 0];
        for w in &mut r[1..] {
            *w = if self.rng.one_in(3) { 0 } else { self.any() };
        }
        r
    }

    /// A malformed call: a valid number (0 and the gaps included), arguments of any kind.
    fn malformed_call(&mut self) -> Regs {
        let mut r = [self.rng.below(nr::MAX + 2), 0, 0, 0, 0, 0];
        for w in &mut r[1..] {
            *w = if self.rng.one_in(2) { 0 } else { self.any() };
        }
        r
    }

    /// A typed call on a capability (see the module docs).
    fn typed_call(&mut self) -> Regs {
        let msg = |f: &mut Self| [f.rng.word(), f.rng.word(), f.rng.word(), f.rng.word()];
        let call = match self.rng.below(31) {
            0 => Syscall::Call {
                ep: s(slot::FUZZ_EP),
                msg: msg(self),
            },
            1 => Syscall::NBSend {
                ep: s(slot::FUZZ_EP),
                msg: msg(self),
            },
            2 => Syscall::Send {
                ep: s(slot::FUZZ_EP),
                msg: msg(self),
            },
            3 => Syscall::Signal {
                ntfn: s(if self.rng.one_in(2) {
                    slot::FUZZ_NTFN
                } else {
                    slot::FUZZ_OWN_NTFN
                }),
            },
            4 => {
                // Signal, then a Wait that therefore returns at once.
                self.trap(
                    Syscall::Signal {
                        ntfn: s(slot::FUZZ_OWN_NTFN),
                    }
                    .encode(),
                );
                Syscall::Wait {
                    ntfn: s(slot::FUZZ_OWN_NTFN),
                }
            }
            5 => Syscall::Yield,
            6 => Syscall::Reply { msg: msg(self) },
            7 => {
                let ep = s(self.rng.below(slot::FUZZ_SCRATCH));
                if self.rng.one_in(2) {
                    Syscall::Recv { ep }
                } else {
                    Syscall::ReplyRecv { ep, msg: msg(self) }
                }
            }
            8 => return [nr::ACK_IRQ, self.slot_or(slot::FUZZ_IRQ), 0, 0, 0, 0],
            9 => {
                let n = if self.rng.one_in(2) {
                    slot::FUZZ_NTFN
                } else {
                    slot::FUZZ_OWN_NTFN
                };
                return [
                    nr::BIND_IRQ,
                    self.slot_or(slot::FUZZ_IRQ),
                    self.slot_or(n),
                    0,
                    0,
                    0,
                ];
            }
            10 => {
                let attrs = if self.rng.one_in(8) {
                    self.rng.word()
                } else {
                    self.rng.below(8)
                };
                let mem = self.mem_slot();
                let offset = self.size();
                return [
                    nr::MAP_PAGE,
                    self.slot_or(slot::FUZZ_ASPACE),
                    mem,
                    self.addr(),
                    attrs,
                    offset,
                ];
            }
            11 => {
                return [
                    nr::UNMAP_PAGE,
                    self.slot_or(slot::FUZZ_ASPACE),
                    self.addr(),
                    0,
                    0,
                    0,
                ]
            }
            12 => {
                let (mem, dest) = (self.mem_slot(), self.scratch());
                let (offset, pages) = (self.size(), self.size());
                return [nr::MEM_SPLIT, mem, dest, offset, pages, 0];
            }
            13 => {
                let (a, b) = (self.mem_slot(), self.scratch());
                return [nr::MEM_MERGE, a, b, 0, 0, 0];
            }
            14 => return [nr::MEM_REVOKE, self.mem_slot(), 0, 0, 0, 0],
            15 => return [nr::MEM_INFO, self.slot_arg(), 0, 0, 0, 0],
            16 | 17 => {
                let n = if self.rng.one_in(2) {
                    nr::CREATE_ENDPOINT
                } else {
                    nr::CREATE_NOTIFICATION
                };
                return [n, self.slot_or(slot::FUZZ_CONTROL), self.scratch(), 0, 0, 0];
            }
            18 => {
                let dest = if self.rng.one_in(2) {
                    slot::FUZZ_THREAD
                } else {
                    self.scratch()
                };
                let prio = if self.rng.one_in(8) {
                    self.size()
                } else {
                    self.rng.below(NUM_PRIOS)
                };
                return [
                    nr::CREATE_THREAD,
                    self.slot_or(slot::FUZZ_CONTROL),
                    dest,
                    self.slot_or(slot::FUZZ_ASPACE),
                    prio,
                    self.rng.below(6),
                ];
            }
            19 => {
                let dest = if self.rng.one_in(2) {
                    slot::FUZZ_ASPACE
                } else {
                    self.scratch()
                };
                return [
                    nr::CREATE_ADDRESS_SPACE,
                    self.slot_or(slot::FUZZ_CONTROL),
                    dest,
                    0,
                    0,
                    0,
                ];
            }
            20 => {
                let a = if self.rng.one_in(2) {
                    slot::FUZZ_ASPACE
                } else {
                    self.scratch()
                };
                return [nr::DELETE_ADDRESS_SPACE, a, 0, 0, 0, 0];
            }
            21 => {
                let t = self.thread_slot();
                return [
                    nr::WRITE_REGISTERS,
                    t,
                    self.addr(),
                    self.addr(),
                    self.any(),
                    0,
                ];
            }
            22..=24 => {
                let n = [nr::RESUME, nr::SUSPEND, nr::DELETE_THREAD][self.rng.below(3)];
                return [n, self.thread_slot(), 0, 0, 0, 0];
            }
            25 => {
                let p = if self.rng.one_in(4) {
                    self.size()
                } else {
                    self.rng.below(NUM_PRIOS)
                };
                return [nr::SET_PRIORITY, self.thread_slot(), p, 0, 0, 0];
            }
            26 => {
                let c = self.rng.below(10);
                return [nr::SET_AFFINITY, self.thread_slot(), c, 0, 0, 0];
            }
            27 => {
                let ep = if self.rng.one_in(2) {
                    self.scratch()
                } else {
                    self.slot_arg()
                };
                return [nr::BIND_PAGER, self.thread_slot(), ep, 0, 0, 0];
            }
            28 => {
                let target = match self.rng.below(4) {
                    0 => slot::FUZZ_THREAD,
                    1 => self.scratch(),
                    2 => self.slot_arg(),
                    _ => MINT_SELF,
                };
                let rights = if self.rng.one_in(8) {
                    self.rng.word()
                } else {
                    self.rng.below(32)
                };
                let src = self.slot_arg();
                let dest = self.scratch();
                let badge = if self.rng.one_in(2) {
                    0
                } else {
                    self.rng.word()
                };
                return [nr::MINT, src, target, dest, rights, badge];
            }
            29 => return [nr::CAP_DELETE, self.scratch(), 0, 0, 0, 0],
            _ => return [nr::KERNEL_INFO, self.rng.below(8), 0, 0, 0, 0],
        };
        call.encode()
    }

    /// Rewrites the calls that could block the fuzzer for good, take its own capabilities away,
    /// start a fault storm, stop or fail the run through a debug call, or (common-only) make a
    /// management call; see the module docs for why each rule exists. Everything else is
    /// returned unchanged.
    pub fn sanitize(&mut self, mut r: Regs) -> Regs {
        if (DEBUG_BASE..DEBUG_END).contains(&r[0]) {
            return self.debug_call(r);
        }
        // A rewrite may make another rule apply (a management number turned common): a few
        // rounds settle it.
        for _ in 0..4 {
            let Ok(call) = Syscall::decode(&r) else {
                return r;
            };
            if self.common_only && call.is_management() {
                r[0] = COMMON[r[1] % COMMON.len()];
                continue;
            }
            match call {
                Syscall::Call { ep, .. } | Syscall::Send { ep, .. }
                    if !fixed(ep.index()) || ep.index() == slot::PARK =>
                {
                    r[1] = slot::FUZZ_EP;
                }
                Syscall::Recv { ep } | Syscall::ReplyRecv { ep, .. } if !fixed(ep.index()) => {
                    r[1] = slot::FUZZ_EP;
                }
                Syscall::Wait { ntfn }
                    if !fixed(ntfn.index())
                        || ntfn.index() == slot::PARK
                        || ntfn.index() == slot::FUZZ_OWN_NTFN =>
                {
                    r[1] = slot::FUZZ_NTFN;
                }
                Syscall::CapDelete { slot } if fixed(slot.index()) => {
                    r[1] = self.scratch();
                }
                Syscall::MemMerge { b, .. } if fixed(b.index()) => r[2] = self.scratch(),
                Syscall::BindPager { ep, .. } if ep.index() == slot::FUZZ_EP => {
                    r[2] = self.scratch();
                }
                Syscall::CreateEndpoint { dest, .. }
                | Syscall::CreateNotification { dest, .. }
                | Syscall::MemSplit { dest, .. }
                    if fixed(dest.index()) =>
                {
                    r[2] = self.scratch();
                }
                Syscall::CreateThread { dest, .. }
                    if fixed(dest.index()) && dest.index() != slot::FUZZ_THREAD =>
                {
                    r[2] = self.scratch();
                }
                Syscall::CreateAddressSpace { dest, .. }
                    if fixed(dest.index()) && dest.index() != slot::FUZZ_ASPACE =>
                {
                    r[2] = self.scratch();
                }
                Syscall::Mint {
                    target: abi::syscall::MintTarget::Own,
                    dest,
                    ..
                } if fixed(dest.index()) => r[3] = self.scratch(),
                _ => return r,
            }
        }
        r
    }

    /// A call in the image's debug range made harmless (see the module docs): `INFO` with any
    /// selector, `COUNTER`, an empty `PUT`, the calls the image must refuse, or an unknown
    /// number.
    fn debug_call(&mut self, r: Regs) -> Regs {
        let a = r[1];
        match r[0] {
            debug_nr::PUT => [debug_nr::PUT, 0, r[2], r[3], r[4], r[5]],
            debug_nr::DONE | debug_nr::PANIC => [debug_nr::INFO, a, 0, 0, 0, 0],
            // EXIT asks for a failure, so that a wrongly granted EXIT fails the run.
            debug_nr::EXIT => [debug_nr::EXIT, a | 1, r[2], r[3], r[4], r[5]],
            _ => r,
        }
    }

    /// Makes one call through the trap (now and then with a hostile stack pointer), counts it
    /// and checks its result.
    pub fn trap(&mut self, r: Regs) -> Regs {
        let hostile = self.rng.one_in(16);
        let ret = if hostile {
            self.counts.hostile += 1;
            let sp = match self.rng.below(3) {
                0 => ADDRS[self.rng.below(ADDRS.len())],
                1 => self.rng.word(),
                _ => WINDOW + self.rng.below(WINDOW_PAGES) * PAGE_SIZE,
            };
            raw_hostile(r, sp)
        } else {
            sys::raw(r)
        };
        self.counts.calls += 1;
        self.check(&r, &ret);
        ret
    }

    /// Checks one result against what the kernel or image must answer.
    fn check(&mut self, r: &Regs, ret: &Regs) {
        let code = ret[0];
        if r[0] >= DEBUG_BASE {
            let want = match r[0] {
                debug_nr::EXIT | debug_nr::RELEASE | debug_nr::KERNEL_STACK_OVERFLOW => {
                    Some(Error::MissingRight.code())
                }
                debug_nr::INFO if r[1] > info::MAX => Some(Error::InvalidArgument.code()),
                debug_nr::INFO | debug_nr::COUNTER | debug_nr::PUT => Some(0),
                _ => Some(Error::UnknownSyscall.code()),
            };
            if want.is_some_and(|w| w != code) {
                self.anomaly("debug call", r, ret);
            }
            return;
        }
        self.counts.kernel += 1;
        self.counts.codes[code.min(CODES)] += 1;
        if code != 0 && Error::from_code(code).is_none() {
            self.anomaly("unknown result code", r, ret);
        } else if let Err(e) = Syscall::decode(r) {
            if code != e.code() {
                self.anomaly("not the decoder's error", r, ret);
            }
        }
    }

    fn anomaly(&mut self, what: &str, r: &Regs, ret: &Regs) {
        self.counts.anomalies += 1;
        if self.printed < 8 {
            self.printed += 1;
            uprintln!("fuzz: ANOMALY ({what}): call {r:x?} returned {ret:x?}");
        }
    }

    /// Makes one random call.
    pub fn step(&mut self) {
        let r = match self.rng.below(10) {
            0 | 1 => self.raw_call(),
            2..=4 => self.malformed_call(),
            _ => self.typed_call(),
        };
        let r = self.sanitize(r);
        self.trap(r);
    }

    /// Checks that its own capabilities still work (see the module docs); returns what failed.
    pub fn self_check(&mut self, core: usize, mem0: Option<(usize, usize, usize)>) -> usize {
        let mut bad = 0;
        let got = sys::call(s(slot::FUZZ_EP), [1, 2, 3, 4]);
        if got.map(|(_, m)| m) != Ok([2, 3, 3, core + 1]) {
            uprintln!("fuzz: cpu {core}: self-check: Call to the drain server gave {got:?}");
            bad += 1;
        }
        let sig = sys::signal(s(slot::FUZZ_OWN_NTFN));
        let word = sys::wait(s(slot::FUZZ_OWN_NTFN));
        if sig.is_err() || !word.is_ok_and(|w| w & 1 != 0) {
            uprintln!("fuzz: cpu {core}: self-check: Signal {sig:?}, Wait {word:?}");
            bad += 1;
        }
        if !self.common_only {
            let mem = sys::mem_info(s(slot::FUZZ_MEM));
            if mem.ok() != mem0 {
                uprintln!("fuzz: cpu {core}: self-check: MemInfo {mem:?}, at the start {mem0:?}");
                bad += 1;
            }
        }
        bad
    }
}

/// Traps with the stack pointer set to `sp` (and, on x86_64, the direction and alignment-check
/// flags set), restoring both right after: the kernel must switch to its own stack and clear
/// the flags without trusting either.
#[cfg(target_arch = "x86_64")]
fn raw_hostile(regs: Regs, sp: usize) -> Regs {
    // SAFETY: the block saves the stack pointer in r12 (declared clobbered), sets DF and AC,
    // loads `sp` (not dereferenced by this code), traps, and restores the stack pointer before
    // any memory access; then it clears DF and AC again, which Rust code requires. Between
    // the `popfq` and the restore, only register moves and the trap run, so AC cannot make an
    // access of this program fault. The kernel preserves every register but the six result
    // registers and rcx/r11 (declared clobbered by `trap_asm!`). The pushes use the program's
    // own stack, which has no red zone on this target.
    unsafe {
        crate::trap_asm!(regs, {
            "pushfq",
            "or qword ptr [rsp], 0x40400",
            "popfq",
            "mov r12, rsp",
            "mov rsp, {sp}",
            "syscall",
            "mov rsp, r12",
            "pushfq",
            "and qword ptr [rsp], ~0x40400",
            "popfq",
            sp = in(reg) sp,
            out("r12") _
        })
    }
}

/// Traps with the stack pointer set to `sp`, restoring it right after: the kernel must use its
/// own banked stack and never the user's.
#[cfg(target_arch = "arm")]
fn raw_hostile(regs: Regs, sp: usize) -> Regs {
    // SAFETY: the block saves the stack pointer in r8 (declared clobbered), loads `sp` (not
    // dereferenced by this code), traps, and restores it before any memory access. The kernel
    // preserves every register but the six result registers.
    unsafe {
        crate::trap_asm!(regs, {
            "mov r8, sp",
            "mov sp, {sp}",
            "svc #0",
            "mov sp, r8",
            sp = in(reg) sp,
            out("r8") _
        })
    }
}

/// No hostile variant where there is no user-mode ABI: the plain trap.
#[cfg(not(any(target_arch = "x86_64", target_arch = "arm")))]
fn raw_hostile(regs: Regs, _sp: usize) -> Regs {
    sys::raw(regs)
}

/// The fuzzer program (roles [`FUZZ`](crate::image::role::FUZZ) and
/// [`FUZZ_COMMON_ONLY`](crate::image::role::FUZZ_COMMON_ONLY)): `calls` calls from `seed`, the
/// report, DONE.
pub fn run(calls: usize, seed: u64, common_only: bool) -> ! {
    let core = debug::cpu();
    uprintln!(
        "fuzz: cpu {core}: seed {seed:#x}, {calls} calls{} (replay: seed={seed:#x})",
        if common_only {
            ", common calls only (lock none)"
        } else {
            ""
        }
    );
    let mem0 = if common_only {
        None
    } else {
        sys::mem_info(s(slot::FUZZ_MEM)).ok()
    };
    let mut f = Fuzzer::new(seed, core, common_only);
    let start = sys::cycles();
    while f.counts.calls < calls {
        f.step();
    }
    let cycles = sys::cycles().wrapping_sub(start);
    let bad = f.self_check(core, mem0);
    let c = &f.counts;
    let errors = c.kernel - c.codes[0];
    uprintln!(
        "fuzz: cpu {core}: {} calls ({} kernel: {} ok, {errors} errors; {} image; {} hostile \
         sp); {} anomalies; self-check {}",
        c.calls,
        c.kernel,
        c.codes[0],
        c.calls - c.kernel,
        c.hostile,
        c.anomalies,
        if bad == 0 { "ok" } else { "FAILED" }
    );
    let secs_hint = cycles;
    let mut line = Buf::new();
    for (code, &n) in c.codes[..CODES].iter().enumerate() {
        if n > 0 {
            if line.n > 150 {
                uprintln!("fuzz: cpu {core}: codes{}", line.as_str());
                line = Buf::new();
            }
            match Error::from_code(code) {
                Some(e) => {
                    let _ = write!(line, " {e:?}={n}");
                }
                None => {
                    let _ = write!(line, " ok={n}");
                }
            }
        }
    }
    if c.codes[CODES] > 0 {
        let _ = write!(line, " other={}", c.codes[CODES]);
    }
    uprintln!(
        "fuzz: cpu {core}: codes{} ({secs_hint} counter ticks)",
        line.as_str()
    );
    if c.anomalies > 0 || bad > 0 {
        debug::panicked();
    }
    debug::done();
    sys::park()
}

/// A line of text built in place (no allocator).
struct Buf {
    b: [u8; 192],
    n: usize,
}

impl Buf {
    fn new() -> Self {
        Buf { b: [0; 192], n: 0 }
    }

    fn as_str(&self) -> &str {
        core::str::from_utf8(&self.b[..self.n]).unwrap_or("?")
    }
}

impl Write for Buf {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let k = s.len().min(self.b.len() - self.n);
        self.b[self.n..self.n + k].copy_from_slice(&s.as_bytes()[..k]);
        self.n += k;
        Ok(())
    }
}

/// The drain server: answers every Call on its endpoint (first two words incremented, the
/// third kept, the badge in the fourth, as the ping-pong server), forever.
pub fn drain() -> ! {
    let ep = s(slot::EP);
    let mut next = sys::recv(ep);
    loop {
        next = match next {
            Ok((badge, m)) => sys::reply_recv(
                ep,
                [m[0].wrapping_add(1), m[1].wrapping_add(1), m[2], badge],
            ),
            Err(_) => sys::recv(ep),
        };
    }
}
