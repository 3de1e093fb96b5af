//! The system-call interface: raw registers, the typed [`Syscall`] enum, and result registers.
//!
//! # Registers
//! A call passes six words: `raw[0]` is the call number (see [`nr`]), `raw[1..6]` the arguments.
//! IPC calls put the capability slot in `raw[1]` and the [`MSG_WORDS`] message words in
//! `raw[2..6]`. Every argument register a call does not use must be zero.
//!
//! The kernel answers with six result words ([`Regs`]): `ret[0]` is 0 on success or an
//! [`Error`] code; on success `ret[1]` is the badge of the sender (IPC), the notification word
//! (Wait), or the new object's index (CreateThread); `ret[2..6]` the received message.
//!
//! # Two phases
//! [`Syscall::decode`] is the first, syntactic half of decoding: it rejects unknown numbers,
//! non-zero unused registers and out-of-range numbers, with no access to kernel state. The kernel
//! then resolves capabilities and checks every precondition (still without changing anything),
//! and only then executes, which cannot fail.

use crate::error::Error;
use crate::ids::CapSlot;
use crate::limits::*;
use crate::page::PageAttrs;
use crate::rights::Rights;

/// Message words.
pub type Msg = [usize; MSG_WORDS];
/// Raw argument or result registers.
pub type Regs = [usize; 6];

/// System-call numbers (`raw[0]`). 0 is deliberately not a call.
pub mod nr {
    /// [`Syscall::Call`](super::Syscall::Call).
    pub const CALL: usize = 1;
    /// [`Syscall::Send`](super::Syscall::Send).
    pub const SEND: usize = 2;
    /// [`Syscall::NBSend`](super::Syscall::NBSend).
    pub const NBSEND: usize = 3;
    /// [`Syscall::Recv`](super::Syscall::Recv).
    pub const RECV: usize = 4;
    /// [`Syscall::Reply`](super::Syscall::Reply).
    pub const REPLY: usize = 5;
    /// [`Syscall::ReplyRecv`](super::Syscall::ReplyRecv).
    pub const REPLY_RECV: usize = 6;
    /// [`Syscall::Signal`](super::Syscall::Signal).
    pub const SIGNAL: usize = 7;
    /// [`Syscall::Wait`](super::Syscall::Wait).
    pub const WAIT: usize = 8;
    /// [`Syscall::Yield`](super::Syscall::Yield).
    pub const YIELD: usize = 9;
    /// [`Syscall::AckIrq`](super::Syscall::AckIrq).
    pub const ACK_IRQ: usize = 10;
    /// [`Syscall::CreateThread`](super::Syscall::CreateThread).
    pub const CREATE_THREAD: usize = 16;
    /// [`Syscall::SetPriority`](super::Syscall::SetPriority).
    pub const SET_PRIORITY: usize = 17;
    /// [`Syscall::SetAffinity`](super::Syscall::SetAffinity).
    pub const SET_AFFINITY: usize = 18;
    /// [`Syscall::BindPager`](super::Syscall::BindPager).
    pub const BIND_PAGER: usize = 19;
    /// [`Syscall::MapPage`](super::Syscall::MapPage).
    pub const MAP_PAGE: usize = 20;
    /// [`Syscall::UnmapPage`](super::Syscall::UnmapPage).
    pub const UNMAP_PAGE: usize = 21;
    /// [`Syscall::BindIrq`](super::Syscall::BindIrq).
    pub const BIND_IRQ: usize = 22;
    /// [`Syscall::Resume`](super::Syscall::Resume).
    pub const RESUME: usize = 23;
    /// [`Syscall::Suspend`](super::Syscall::Suspend).
    pub const SUSPEND: usize = 24;
    /// [`Syscall::DeleteThread`](super::Syscall::DeleteThread).
    pub const DELETE_THREAD: usize = 25;
    /// [`Syscall::Mint`](super::Syscall::Mint).
    pub const MINT: usize = 26;
    /// [`Syscall::CapDelete`](super::Syscall::CapDelete).
    pub const CAP_DELETE: usize = 27;
    /// [`Syscall::DeleteAddressSpace`](super::Syscall::DeleteAddressSpace).
    pub const DELETE_ADDRESS_SPACE: usize = 28;
    /// [`Syscall::CreateAddressSpace`](super::Syscall::CreateAddressSpace).
    pub const CREATE_ADDRESS_SPACE: usize = 29;
    /// [`Syscall::WriteRegisters`](super::Syscall::WriteRegisters).
    pub const WRITE_REGISTERS: usize = 30;
    /// [`Syscall::MemSplit`](super::Syscall::MemSplit).
    pub const MEM_SPLIT: usize = 31;
    /// [`Syscall::MemMerge`](super::Syscall::MemMerge).
    pub const MEM_MERGE: usize = 32;
    /// [`Syscall::MemRevoke`](super::Syscall::MemRevoke).
    pub const MEM_REVOKE: usize = 33;
    /// [`Syscall::MemInfo`](super::Syscall::MemInfo).
    pub const MEM_INFO: usize = 34;
    /// [`Syscall::CreateEndpoint`](super::Syscall::CreateEndpoint).
    pub const CREATE_ENDPOINT: usize = 35;
    /// [`Syscall::CreateNotification`](super::Syscall::CreateNotification).
    pub const CREATE_NOTIFICATION: usize = 36;
    /// [`Syscall::KernelInfo`](super::Syscall::KernelInfo).
    pub const KERNEL_INFO: usize = 37;
    /// [`Syscall::IssueIrqHandler`](super::Syscall::IssueIrqHandler).
    pub const ISSUE_IRQ_HANDLER: usize = 38;
    /// [`Syscall::Null`](super::Syscall::Null).
    pub const NULL: usize = 39;
    /// [`Syscall::KernelBusy`](super::Syscall::KernelBusy).
    pub const KERNEL_BUSY: usize = 40;
    /// [`Syscall::KernelCounters`](super::Syscall::KernelCounters).
    pub const KERNEL_COUNTERS: usize = 41;
    /// Largest call number in use.
    pub const MAX: usize = 41;
}

/// `Mint` target register value meaning "the caller's own CSpace".
pub const MINT_SELF: usize = usize::MAX;

/// Where [`Syscall::Mint`] puts the new capability.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MintTarget {
    /// The caller's own CSpace.
    Own,
    /// The CSpace of the thread named by this slot (needs MANAGE on that thread).
    Thread(CapSlot),
}

/// A syntactically valid system call. Slots are indices into the caller's CSpace.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Syscall {
    /// Send `msg` to the endpoint and wait for the reply (needs WRITE). The receiver gets a
    /// one-shot reply capability.
    Call {
        /// Endpoint slot.
        ep: CapSlot,
        /// Message.
        msg: Msg,
    },
    /// Send `msg` to the endpoint, blocking until a receiver takes it (needs WRITE).
    Send {
        /// Endpoint slot.
        ep: CapSlot,
        /// Message.
        msg: Msg,
    },
    /// Send if a receiver is waiting, else drop the message silently (needs WRITE).
    NBSend {
        /// Endpoint slot.
        ep: CapSlot,
        /// Message.
        msg: Msg,
    },
    /// Receive from the endpoint, blocking until a sender comes (needs READ). A reply capability
    /// the caller still holds is dropped first (its caller gets [`Error::ReplyDropped`]).
    Recv {
        /// Endpoint slot.
        ep: CapSlot,
    },
    /// Answer the caller whose reply capability this thread holds (consumes it).
    Reply {
        /// Reply message.
        msg: Msg,
    },
    /// Reply (if a reply capability is held), then receive.
    ReplyRecv {
        /// Endpoint slot to receive on.
        ep: CapSlot,
        /// Reply message.
        msg: Msg,
    },
    /// OR the capability's badge (1 if the badge is 0) into the notification (needs WRITE).
    Signal {
        /// Notification slot.
        ntfn: CapSlot,
    },
    /// Wait until the notification word is non-zero, take and clear it (needs READ).
    Wait {
        /// Notification slot.
        ntfn: CapSlot,
    },
    /// Give the core to the next ready thread of equal or higher priority.
    Yield,
    /// Acknowledge (unmask) the interrupt of a handler (needs WRITE).
    AckIrq {
        /// IRQ handler slot.
        handler: CapSlot,
    },
    /// Create an inactive thread in a free TCB; its capability (all rights) goes to `dest`.
    CreateThread {
        /// Control capability slot (needs MANAGE).
        control: CapSlot,
        /// Empty slot of the caller for the new thread's capability.
        dest: CapSlot,
        /// Address space of the new thread (needs WRITE).
        aspace: CapSlot,
        /// Priority, `0..NUM_PRIOS`.
        priority: usize,
        /// Core, `0..cores`.
        core: usize,
    },
    /// Change a thread's priority (needs MANAGE).
    SetPriority {
        /// Thread slot.
        thread: CapSlot,
        /// New priority.
        priority: usize,
    },
    /// Move a thread to another core (needs MANAGE).
    SetAffinity {
        /// Thread slot.
        thread: CapSlot,
        /// New core.
        core: usize,
    },
    /// Set the endpoint a thread's page faults are sent to (thread MANAGE, endpoint WRITE).
    BindPager {
        /// Thread slot.
        thread: CapSlot,
        /// Endpoint slot.
        ep: CapSlot,
    },
    /// Map page `offset` of a memory region at `vaddr` (address space WRITE; region READ, plus
    /// WRITE for a writable and EXEC for an executable mapping). `attrs` must be valid (never
    /// writable and executable) and fit the memory: [`PageAttrs::DEVICE`] exactly for device
    /// memory, else [`Error::WrongMemoryKind`]. Fails with `AlreadyMapped` if `vaddr` is mapped
    /// (also by the image loader), `OutOfMemory` if the page-table pool is empty.
    MapPage {
        /// Address space slot.
        aspace: CapSlot,
        /// Memory region slot.
        mem: CapSlot,
        /// Page-aligned address below [`USER_TOP`].
        vaddr: usize,
        /// How to map it.
        attrs: PageAttrs,
        /// Page index inside the region.
        offset: usize,
    },
    /// Unmap the page at `vaddr` (address space WRITE); shoots down other cores' TLBs before it
    /// returns. `NotMapped` for pages the image loader mapped.
    UnmapPage {
        /// Address space slot.
        aspace: CapSlot,
        /// Page-aligned address below [`USER_TOP`].
        vaddr: usize,
    },
    /// Split pages `[offset, offset + pages)` of a region (MANAGE) off as a new child region,
    /// whose capability (same rights) goes to the empty slot `dest`; returns its index.
    /// [`Error::Overlap`] if another child of the region covers part of the range.
    MemSplit {
        /// Region slot.
        mem: CapSlot,
        /// Empty slot of the caller.
        dest: CapSlot,
        /// First page.
        offset: usize,
        /// Pages (at least 1).
        pages: usize,
    },
    /// Merge region `b` into region `a` (both MANAGE): siblings (split from the same region, or
    /// both boot regions) of the same kind, `b` starting where `a` ends, `b` with no children
    /// ([`Error::InUse`]). `b`'s mappings stay, now made through `a`; every capability to `b` is
    /// removed.
    MemMerge {
        /// The region that grows.
        a: CapSlot,
        /// The region that disappears.
        b: CapSlot,
    },
    /// Destroy every region split from this one (MANAGE), transitively: their capabilities and
    /// mappings are removed on every core before the call returns.
    MemRevoke {
        /// Region slot.
        mem: CapSlot,
    },
    /// A region's physical base address (result word), page count (message word 0), kind
    /// (word 1: 0 RAM, 1 device) and index (word 2), for DMA (READ).
    MemInfo {
        /// Region slot.
        mem: CapSlot,
    },
    /// Create an endpoint (control MANAGE); its capability (all rights) goes to `dest`, its
    /// index is returned. [`Error::NoFreeObject`] when the table is full.
    CreateEndpoint {
        /// Control capability slot.
        control: CapSlot,
        /// Empty slot of the caller.
        dest: CapSlot,
    },
    /// Create a notification (control MANAGE), like [`Syscall::CreateEndpoint`].
    CreateNotification {
        /// Control capability slot.
        control: CapSlot,
        /// Empty slot of the caller.
        dest: CapSlot,
    },
    /// A kernel statistic ([`info`] keys): page-table frames free and in all, free region and
    /// endpoint and notification objects, the kernel's cycle counter and each core's idle
    /// cycles. Needs no capability.
    KernelInfo {
        /// What to read.
        key: usize,
    },
    /// Make the handler object of device interrupt line `irq` (control MANAGE); its capability
    /// (all rights) goes to `dest`. Each line has one handler: a line already issued (until its
    /// last capability is deleted) gives [`Error::InUse`], a line the machine does not have or
    /// the kernel uses itself [`Error::IrqUnavailable`]. Lines are numbered as the platform
    /// numbers device interrupts (x86: I/O APIC global system interrupts; ARM: GIC shared
    /// peripheral interrupts, INTID - 32). Above them, line
    /// [`TICK_IRQ_BASE`](crate::limits::TICK_IRQ_BASE)` + c` is core `c`'s timer tick: bound
    /// (on core `c` only, else [`Error::InvalidArgument`]) and unmasked, core `c`'s next timer
    /// tick (100 Hz) signals it once; a program acknowledges it and then waits, to sleep with
    /// a deadline.
    IssueIrqHandler {
        /// Control capability slot.
        control: CapSlot,
        /// The interrupt line.
        irq: usize,
        /// Empty slot of the caller.
        dest: CapSlot,
    },
    /// Deliver the handler's interrupt to a notification (handler MANAGE, notification WRITE;
    /// the notification capability's badge is signalled) on core `core`, and unmask the line.
    /// When the interrupt arrives the line is masked until [`Syscall::AckIrq`].
    BindIrq {
        /// IRQ handler slot.
        handler: CapSlot,
        /// Notification slot.
        ntfn: CapSlot,
        /// The core the interrupt is delivered to.
        core: usize,
    },
    /// Make an inactive thread runnable (needs MANAGE). [`Error::InvalidArgument`] for a
    /// thread made by [`Syscall::CreateThread`] that has no registers yet (see
    /// [`Syscall::WriteRegisters`]).
    Resume {
        /// Thread slot.
        thread: CapSlot,
    },
    /// Make a thread inactive; a blocked call it was in ends with [`Error::Interrupted`]
    /// (needs MANAGE).
    Suspend {
        /// Thread slot.
        thread: CapSlot,
    },
    /// Delete a thread: every capability to it is removed, its CSpace emptied (needs MANAGE).
    DeleteThread {
        /// Thread slot.
        thread: CapSlot,
    },
    /// Copy the capability in `src` (needs GRANT) with `rights` (a subset) and `badge` (only if
    /// the source is unbadged; 0 keeps the source's) into slot `dest` of `target`.
    Mint {
        /// Source slot.
        src: CapSlot,
        /// Destination CSpace: [`MINT_SELF`] (`usize::MAX`) for the caller's own, else the slot
        /// of a thread whose CSpace receives it (needs MANAGE on that thread).
        target: MintTarget,
        /// Empty destination slot.
        dest: CapSlot,
        /// Rights of the copy.
        rights: Rights,
        /// Badge of the copy.
        badge: usize,
    },
    /// Empty a slot of the caller's CSpace.
    CapDelete {
        /// Slot.
        slot: CapSlot,
    },
    /// Delete an address space (needs MANAGE): refused with [`Error::InUse`] while a live
    /// thread is bound to it; otherwise every mapping and every capability to it is removed,
    /// its page tables are reset, and the call returns once every core that may cache it
    /// flushed its TLB. Its slot is reused by [`Syscall::CreateAddressSpace`] (see the
    /// kernel's `mgmt` module).
    DeleteAddressSpace {
        /// Address-space slot.
        aspace: CapSlot,
    },
    /// Create an empty address space in the slot of a deleted one (control MANAGE); its
    /// capability (all rights) goes to `dest`, its index is returned. [`Error::NoFreeObject`]
    /// if no deleted slot is reusable yet.
    CreateAddressSpace {
        /// Control capability slot.
        control: CapSlot,
        /// Empty slot of the caller.
        dest: CapSlot,
    },
    /// Set where an inactive thread starts (needs MANAGE): instruction pointer, stack pointer
    /// and one argument; [`Error::InUse`] unless the thread is inactive and no core still runs
    /// it. `Resume` then starts it there.
    WriteRegisters {
        /// Thread slot.
        thread: CapSlot,
        /// Entry point, below [`USER_TOP`].
        pc: usize,
        /// Initial stack pointer, at most [`USER_TOP`].
        sp: usize,
        /// Argument (first argument register).
        arg: usize,
    },
    /// Benchmark call: does nothing and returns 0 (the thesis's null system call, which
    /// measures the entry and exit path with the kernel lock and, with tracing, what tracing
    /// adds). Runs on the shared side of the kernel lock. Needs no capability; no errors.
    Null,
    /// Benchmark call: spins inside the kernel, holding the kernel lock, until the cycle
    /// counter advanced `cycles` ticks, and returns the ticks it actually spun. It gives a
    /// lock hold time user space controls, to validate the trace-replay simulator (the
    /// thesis's `instrumentation_n_cycles`). Runs on the shared side: under a big lock that is
    /// the one lock, held for `cycles` (under RTM elision a spin that long aborts its
    /// transaction and runs under the fallback lock); under the fine-grained strategy it is a
    /// long read-side section that delays management calls and no IPC. Needs no capability.
    /// [`Error::InvalidArgument`] above [`BUSY_MAX_CYCLES`]. Only kernels built with the
    /// `trace` feature (made for measuring) have it: it lets any thread hold the kernel lock
    /// for milliseconds; the others answer [`Error::UnknownSyscall`].
    KernelBusy {
        /// Counter ticks to spin, at most [`BUSY_MAX_CYCLES`].
        cycles: usize,
    },
    /// Benchmark call: the kernel's per-core entry counters ([`counters`] operations).
    /// [`counters::ZERO`] zeroes them on every core (`core` must be 0) and returns 0;
    /// [`counters::READ`] returns the kernel entries core `core` made since the last zero,
    /// this call included if it is that core's (result word), the counter ticks it spent in
    /// the kernel (message word 0; counted only by kernels built with tracing and a tracer
    /// set, else 0), and the entries of all cores (message word 1). Runs on the shared side; needs no
    /// capability. [`Error::OutOfRange`] for an unknown operation, [`Error::InvalidCore`] for
    /// a core the machine does not have. Kept only by kernels built with the `trace` feature
    /// (so that the entry path of the others is unchanged); the others answer
    /// [`Error::UnknownSyscall`].
    KernelCounters {
        /// [`counters::ZERO`] or [`counters::READ`].
        op: usize,
        /// The core to read (`0..cores`); 0 for a zero.
        core: usize,
    },
}

/// Most counter ticks a [`Syscall::KernelBusy`] may spin (2^24: a few milliseconds at
/// gigahertz, enough for any lock hold time of a microkernel), so that user space cannot keep
/// the kernel lock for long.
pub const BUSY_MAX_CYCLES: usize = 1 << 24;

/// Operations of [`Syscall::KernelCounters`].
pub mod counters {
    /// Zero the counters of every core.
    pub const ZERO: usize = 0;
    /// Read the counters of one core.
    pub const READ: usize = 1;
    /// Largest operation.
    pub const MAX: usize = 1;
}

fn slot(v: usize) -> Result<CapSlot, Error> {
    CapSlot::new(v).ok_or(Error::OutOfRange)
}

fn zero(args: &[usize]) -> Result<(), Error> {
    if args.iter().all(|&a| a == 0) {
        Ok(())
    } else {
        Err(Error::InvalidArgument)
    }
}

/// The message words of a `Send`, `NBSend`, `Call`, `Reply` or `ReplyRecv` (what
/// [`Syscall::decode`] puts in its `msg`), read from the raw registers.
#[inline(always)]
pub fn message(raw: &Regs) -> Msg {
    [raw[2], raw[3], raw[4], raw[5]]
}

fn vaddr(v: usize) -> Result<usize, Error> {
    if v % PAGE_SIZE != 0 {
        Err(Error::InvalidArgument)
    } else if v >= USER_TOP {
        Err(Error::OutOfRange)
    } else {
        Ok(v)
    }
}

fn prio(v: usize) -> Result<usize, Error> {
    if v < NUM_PRIOS {
        Ok(v)
    } else {
        Err(Error::OutOfRange)
    }
}

fn core_arg(v: usize) -> Result<usize, Error> {
    if v < MAX_CPUS {
        Ok(v)
    } else {
        Err(Error::InvalidCore)
    }
}

fn rights(v: usize) -> Result<Rights, Error> {
    Rights::from_bits_checked(v).ok_or(Error::OutOfRange)
}

fn attrs(v: usize) -> Result<PageAttrs, Error> {
    let a = u8::try_from(v)
        .ok()
        .and_then(PageAttrs::from_bits)
        .ok_or(Error::OutOfRange)?;
    if a.valid() {
        Ok(a)
    } else {
        Err(Error::InvalidArgument)
    }
}

/// Keys of [`Syscall::KernelInfo`].
pub mod info {
    /// Free frames of the page-table pool.
    pub const TABLE_FRAMES_FREE: usize = 0;
    /// Frames of the page-table pool in all.
    pub const TABLE_FRAMES_TOTAL: usize = 1;
    /// Free memory-region objects.
    pub const FREE_REGIONS: usize = 2;
    /// Endpoints that can still be created.
    pub const FREE_ENDPOINTS: usize = 3;
    /// Notifications that can still be created.
    pub const FREE_NOTIFICATIONS: usize = 4;
    /// The kernel's cycle counter now: the clock of the idle keys (on 32-bit machines its low
    /// word, like them: take differences modulo the word size).
    pub const CYCLES: usize = 5;
    /// Largest plain key.
    pub const MAX: usize = 5;
    /// Key `IDLE_BASE + c` (`c < MAX_CPUS`): the cycles core `c` has spent idle since boot
    /// (no thread to run: from the kernel exit that left the core idle to its next entry, an
    /// interrupt, IPI or tick; a stretch still going on counts up to the moment of the call),
    /// 0 for a core the kernel does not run on. Utilisation over an
    /// interval is 1 - (idle difference / [`CYCLES`] difference).
    pub const IDLE_BASE: usize = 16;

    /// Whether `key` is a key of [`KernelInfo`](super::Syscall::KernelInfo).
    pub const fn valid(key: usize) -> bool {
        key <= MAX || (key >= IDLE_BASE && key < IDLE_BASE + crate::limits::MAX_CPUS)
    }
}

/// Which of the two calls of the kernel's IPC fastpath [`Syscall::decode_ipc`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpcCall {
    /// [`Syscall::Call`].
    Call,
    /// [`Syscall::ReplyRecv`].
    ReplyRecv,
}

impl IpcCall {
    /// The call as [`Syscall::decode`] gives it.
    #[inline]
    pub fn syscall(self, ep: CapSlot, msg: Msg) -> Syscall {
        match self {
            IpcCall::Call => Syscall::Call { ep, msg },
            IpcCall::ReplyRecv => Syscall::ReplyRecv { ep, msg },
        }
    }
}

impl Syscall {
    /// [`decode`](Self::decode) for `Call` and `ReplyRecv` only, the calls of the kernel's
    /// IPC fastpath, without building a [`Syscall`]: `Some((call, ep, msg))` exactly when
    /// `decode` gives `Ok(call.syscall(ep, msg))`, `None` for every other input (which then
    /// goes through `decode`). Two comparisons and a range check.
    #[inline(always)]
    pub fn decode_ipc(raw: &Regs) -> Option<(IpcCall, CapSlot, Msg)> {
        let call = match raw[0] {
            nr::CALL => IpcCall::Call,
            nr::REPLY_RECV => IpcCall::ReplyRecv,
            _ => return None,
        };
        Some((call, CapSlot::new(raw[1])?, message(raw)))
    }

    /// Syntactic decoding of raw registers: checks the number, that unused registers are zero
    /// and that numbers are in range. Touches no kernel state, never panics.
    pub fn decode(raw: &Regs) -> Result<Syscall, Error> {
        use nr::*;
        let a = raw;
        Ok(match a[0] {
            CALL => Syscall::Call {
                ep: slot(a[1])?,
                msg: message(a),
            },
            SEND => Syscall::Send {
                ep: slot(a[1])?,
                msg: message(a),
            },
            NBSEND => Syscall::NBSend {
                ep: slot(a[1])?,
                msg: message(a),
            },
            RECV => {
                zero(&a[2..])?;
                Syscall::Recv { ep: slot(a[1])? }
            }
            REPLY => {
                zero(&a[1..2])?;
                Syscall::Reply { msg: message(a) }
            }
            REPLY_RECV => Syscall::ReplyRecv {
                ep: slot(a[1])?,
                msg: message(a),
            },
            SIGNAL => {
                zero(&a[2..])?;
                Syscall::Signal { ntfn: slot(a[1])? }
            }
            WAIT => {
                zero(&a[2..])?;
                Syscall::Wait { ntfn: slot(a[1])? }
            }
            YIELD => {
                zero(&a[1..])?;
                Syscall::Yield
            }
            ACK_IRQ => {
                zero(&a[2..])?;
                Syscall::AckIrq {
                    handler: slot(a[1])?,
                }
            }
            CREATE_THREAD => Syscall::CreateThread {
                control: slot(a[1])?,
                dest: slot(a[2])?,
                aspace: slot(a[3])?,
                priority: prio(a[4])?,
                core: core_arg(a[5])?,
            },
            SET_PRIORITY => {
                zero(&a[3..])?;
                Syscall::SetPriority {
                    thread: slot(a[1])?,
                    priority: prio(a[2])?,
                }
            }
            SET_AFFINITY => {
                zero(&a[3..])?;
                Syscall::SetAffinity {
                    thread: slot(a[1])?,
                    core: core_arg(a[2])?,
                }
            }
            BIND_PAGER => {
                zero(&a[3..])?;
                Syscall::BindPager {
                    thread: slot(a[1])?,
                    ep: slot(a[2])?,
                }
            }
            MAP_PAGE => Syscall::MapPage {
                aspace: slot(a[1])?,
                mem: slot(a[2])?,
                vaddr: vaddr(a[3])?,
                attrs: attrs(a[4])?,
                offset: a[5],
            },
            UNMAP_PAGE => {
                zero(&a[3..])?;
                Syscall::UnmapPage {
                    aspace: slot(a[1])?,
                    vaddr: vaddr(a[2])?,
                }
            }
            MEM_SPLIT => {
                zero(&a[5..])?;
                if a[4] == 0 {
                    return Err(Error::InvalidArgument);
                }
                Syscall::MemSplit {
                    mem: slot(a[1])?,
                    dest: slot(a[2])?,
                    offset: a[3],
                    pages: a[4],
                }
            }
            MEM_MERGE => {
                zero(&a[3..])?;
                Syscall::MemMerge {
                    a: slot(a[1])?,
                    b: slot(a[2])?,
                }
            }
            MEM_REVOKE | MEM_INFO => {
                zero(&a[2..])?;
                let mem = slot(a[1])?;
                if a[0] == MEM_REVOKE {
                    Syscall::MemRevoke { mem }
                } else {
                    Syscall::MemInfo { mem }
                }
            }
            CREATE_ENDPOINT | CREATE_NOTIFICATION => {
                zero(&a[3..])?;
                let (control, dest) = (slot(a[1])?, slot(a[2])?);
                if a[0] == CREATE_ENDPOINT {
                    Syscall::CreateEndpoint { control, dest }
                } else {
                    Syscall::CreateNotification { control, dest }
                }
            }
            KERNEL_INFO => {
                zero(&a[2..])?;
                if !info::valid(a[1]) {
                    return Err(Error::OutOfRange);
                }
                Syscall::KernelInfo { key: a[1] }
            }
            BIND_IRQ => {
                zero(&a[4..])?;
                Syscall::BindIrq {
                    handler: slot(a[1])?,
                    ntfn: slot(a[2])?,
                    core: a[3],
                }
            }
            ISSUE_IRQ_HANDLER => {
                zero(&a[4..])?;
                if a[2] >= MAX_IRQS {
                    return Err(Error::IrqUnavailable);
                }
                Syscall::IssueIrqHandler {
                    control: slot(a[1])?,
                    irq: a[2],
                    dest: slot(a[3])?,
                }
            }
            RESUME | SUSPEND | DELETE_THREAD => {
                zero(&a[2..])?;
                let thread = slot(a[1])?;
                match a[0] {
                    RESUME => Syscall::Resume { thread },
                    SUSPEND => Syscall::Suspend { thread },
                    _ => Syscall::DeleteThread { thread },
                }
            }
            MINT => Syscall::Mint {
                src: slot(a[1])?,
                target: if a[2] == MINT_SELF {
                    MintTarget::Own
                } else {
                    MintTarget::Thread(slot(a[2])?)
                },
                dest: slot(a[3])?,
                rights: rights(a[4])?,
                badge: a[5],
            },
            CAP_DELETE => {
                zero(&a[2..])?;
                Syscall::CapDelete { slot: slot(a[1])? }
            }
            DELETE_ADDRESS_SPACE => {
                zero(&a[2..])?;
                Syscall::DeleteAddressSpace {
                    aspace: slot(a[1])?,
                }
            }
            WRITE_REGISTERS => {
                zero(&a[5..])?;
                if a[2] >= USER_TOP || a[3] > USER_TOP {
                    return Err(Error::OutOfRange);
                }
                Syscall::WriteRegisters {
                    thread: slot(a[1])?,
                    pc: a[2],
                    sp: a[3],
                    arg: a[4],
                }
            }
            CREATE_ADDRESS_SPACE => {
                zero(&a[3..])?;
                Syscall::CreateAddressSpace {
                    control: slot(a[1])?,
                    dest: slot(a[2])?,
                }
            }
            NULL => {
                zero(&a[1..])?;
                Syscall::Null
            }
            KERNEL_BUSY => {
                zero(&a[2..])?;
                if a[1] > BUSY_MAX_CYCLES {
                    return Err(Error::InvalidArgument);
                }
                Syscall::KernelBusy { cycles: a[1] }
            }
            KERNEL_COUNTERS => {
                zero(&a[3..])?;
                match a[1] {
                    counters::ZERO => zero(&a[2..3])?,
                    counters::READ => {
                        core_arg(a[2])?;
                    }
                    _ => return Err(Error::OutOfRange),
                }
                Syscall::KernelCounters {
                    op: a[1],
                    core: a[2],
                }
            }
            _ => return Err(Error::UnknownSyscall),
        })
    }

    /// The raw registers of this call (what a user-level library would load).
    pub fn encode(&self) -> Regs {
        use nr::*;
        let s = |s: CapSlot| s.index();
        let m = |n: usize, a: usize, msg: &Msg| [n, a, msg[0], msg[1], msg[2], msg[3]];
        match *self {
            Syscall::Call { ep, ref msg } => m(CALL, s(ep), msg),
            Syscall::Send { ep, ref msg } => m(SEND, s(ep), msg),
            Syscall::NBSend { ep, ref msg } => m(NBSEND, s(ep), msg),
            Syscall::Recv { ep } => [RECV, s(ep), 0, 0, 0, 0],
            Syscall::Reply { ref msg } => m(REPLY, 0, msg),
            Syscall::ReplyRecv { ep, ref msg } => m(REPLY_RECV, s(ep), msg),
            Syscall::Signal { ntfn } => [SIGNAL, s(ntfn), 0, 0, 0, 0],
            Syscall::Wait { ntfn } => [WAIT, s(ntfn), 0, 0, 0, 0],
            Syscall::Yield => [YIELD, 0, 0, 0, 0, 0],
            Syscall::AckIrq { handler } => [ACK_IRQ, s(handler), 0, 0, 0, 0],
            Syscall::CreateThread {
                control,
                dest,
                aspace,
                priority,
                core,
            } => [
                CREATE_THREAD,
                s(control),
                s(dest),
                s(aspace),
                priority,
                core,
            ],
            Syscall::SetPriority { thread, priority } => {
                [SET_PRIORITY, s(thread), priority, 0, 0, 0]
            }
            Syscall::SetAffinity { thread, core } => [SET_AFFINITY, s(thread), core, 0, 0, 0],
            Syscall::BindPager { thread, ep } => [BIND_PAGER, s(thread), s(ep), 0, 0, 0],
            Syscall::MapPage {
                aspace,
                mem,
                vaddr,
                attrs,
                offset,
            } => [
                MAP_PAGE,
                s(aspace),
                s(mem),
                vaddr,
                attrs.bits() as usize,
                offset,
            ],
            Syscall::UnmapPage { aspace, vaddr } => [UNMAP_PAGE, s(aspace), vaddr, 0, 0, 0],
            Syscall::MemSplit {
                mem,
                dest,
                offset,
                pages,
            } => [MEM_SPLIT, s(mem), s(dest), offset, pages, 0],
            Syscall::MemMerge { a, b } => [MEM_MERGE, s(a), s(b), 0, 0, 0],
            Syscall::MemRevoke { mem } => [MEM_REVOKE, s(mem), 0, 0, 0, 0],
            Syscall::MemInfo { mem } => [MEM_INFO, s(mem), 0, 0, 0, 0],
            Syscall::CreateEndpoint { control, dest } => {
                [CREATE_ENDPOINT, s(control), s(dest), 0, 0, 0]
            }
            Syscall::CreateNotification { control, dest } => {
                [CREATE_NOTIFICATION, s(control), s(dest), 0, 0, 0]
            }
            Syscall::KernelInfo { key } => [KERNEL_INFO, key, 0, 0, 0, 0],
            Syscall::BindIrq {
                handler,
                ntfn,
                core,
            } => [BIND_IRQ, s(handler), s(ntfn), core, 0, 0],
            Syscall::IssueIrqHandler { control, irq, dest } => {
                [ISSUE_IRQ_HANDLER, s(control), irq, s(dest), 0, 0]
            }
            Syscall::Resume { thread } => [RESUME, s(thread), 0, 0, 0, 0],
            Syscall::Suspend { thread } => [SUSPEND, s(thread), 0, 0, 0, 0],
            Syscall::DeleteThread { thread } => [DELETE_THREAD, s(thread), 0, 0, 0, 0],
            Syscall::Mint {
                src,
                target,
                dest,
                rights,
                badge,
            } => {
                let target = match target {
                    MintTarget::Own => MINT_SELF,
                    MintTarget::Thread(t) => s(t),
                };
                [MINT, s(src), target, s(dest), rights.word(), badge]
            }
            Syscall::CapDelete { slot } => [CAP_DELETE, s(slot), 0, 0, 0, 0],
            Syscall::DeleteAddressSpace { aspace } => [DELETE_ADDRESS_SPACE, s(aspace), 0, 0, 0, 0],
            Syscall::CreateAddressSpace { control, dest } => {
                [CREATE_ADDRESS_SPACE, s(control), s(dest), 0, 0, 0]
            }
            Syscall::WriteRegisters {
                thread,
                pc,
                sp,
                arg,
            } => [WRITE_REGISTERS, s(thread), pc, sp, arg, 0],
            Syscall::Null => [NULL, 0, 0, 0, 0, 0],
            Syscall::KernelBusy { cycles } => [KERNEL_BUSY, cycles, 0, 0, 0, 0],
            Syscall::KernelCounters { op, core } => [KERNEL_COUNTERS, op, core, 0, 0, 0],
        }
    }

    /// Whether this is a management call: it runs exclusively (the write side of the
    /// fine-grained strategy's big-reader lock). IPC, notifications, Yield and AckIrq are the
    /// common calls and run shared.
    ///
    /// The benchmark calls run shared too. `Null` measures the path every common call takes.
    /// `KernelBusy` reproduces the thesis's busy loop, which holds *the* big lock: the big-lock
    /// strategies take their one lock on either side, so there it holds it for the time asked;
    /// under the fine-grained strategy the shared side makes it a long read-side section (it
    /// touches no object), which is what a slow common call would be, whereas the exclusive
    /// side would make every core's IPC wait for it, something no common call does there.
    /// `KernelCounters` reads and writes only per-core atomics, which need no exclusion.
    pub fn is_management(&self) -> bool {
        !matches!(
            self,
            Syscall::Call { .. }
                | Syscall::Send { .. }
                | Syscall::NBSend { .. }
                | Syscall::Recv { .. }
                | Syscall::Reply { .. }
                | Syscall::ReplyRecv { .. }
                | Syscall::Signal { .. }
                | Syscall::Wait { .. }
                | Syscall::Yield
                | Syscall::AckIrq { .. }
                | Syscall::Null
                | Syscall::KernelBusy { .. }
                | Syscall::KernelCounters { .. }
        )
    }
}

/// Result registers of a successful call.
pub const fn ok_regs(word: usize, msg: Msg) -> Regs {
    [0, word, msg[0], msg[1], msg[2], msg[3]]
}

/// Result registers of a failed call.
pub const fn err_regs(e: Error) -> Regs {
    [e.code(), 0, 0, 0, 0, 0]
}

/// Decodes result registers: `Ok((word, msg))` or the error.
pub fn result(regs: &Regs) -> Result<(usize, Msg), Error> {
    if regs[0] == 0 {
        Ok((regs[1], [regs[2], regs[3], regs[4], regs[5]]))
    } else {
        Err(Error::from_code(regs[0]).unwrap_or(Error::InvalidArgument))
    }
}

/// Label (message word 0) of the page-fault message a faulting thread sends to its pager;
/// words 1..4 are the address, 1 for a write access, and the thread index.
pub const FAULT_LABEL: usize = 0xFA17;

/// Label (message word 0) of the message a thread that raised another processor exception
/// (invalid instruction, division by zero, protection fault...) sends to its pager; words 1..4
/// are the architecture's exception number, the faulting instruction address, and the thread
/// index.
pub const EXCEPTION_LABEL: usize = 0xE7C9;
