//! The network server of `mode=net`: a user-level NIC driver on core 0 and, on every core, a
//! smoltcp TCP/IP stack with a Redis-protocol (RESP2) key-value server (`kv-resp`).
//! Stack `k` runs on core `k` and listens on TCP port [`PORT`]` + k`, as Linux runs one
//! `redis-server` per core in the benchmark's baseline. The root thread of `mode=net` (core 0,
//! which holds the machine's RAM and device regions and the control capability) is the driver
//! and stack 0; it creates the other stacks' threads in its own address space.
//!
//! # The driver
//! The driver finds the board's NIC by the root's device regions and maps its registers
//! uncached ([`drivers::nic`](crate::drivers::nic)): on x86_64 microvm and ARM virt a
//! virtio-net device on one of the virtio-mmio transports
//! ([`virtio::DEVICE_NET`](crate::drivers::virtio::DEVICE_NET); QEMU `-device
//! virtio-net-device,netdev=...`, which `cargo xtask qemu --net` adds), on the i.MX6 Sabre
//! Lite the SoC's ENET (QEMU's `imx.enet`, which `-net nic,...` connects). It takes
//! [`DMA_PAGES`] pages of RAM whose physical addresses it asks the kernel for (`MemInfo`):
//! two pages of rings or descriptors and 2 KiB frame buffers, 32 to receive into and 32 to
//! send from. The virtio-net device is run with `VIRTIO_F_VERSION_1` and, if offered,
//! `VIRTIO_NET_F_MAC` (else the driver makes up a locally administered address), and nothing
//! else: no offloads and no merged receive buffers, so every frame is one buffer of at most
//! 1514 bytes after the 12-byte header. The ENET is reset and run with its legacy 8-byte
//! buffer descriptors, one buffer per frame, its MAC the one QEMU (or the boot loader) put in
//! `PALR`/`PAUR`; only its receive interrupt is unmasked (its driver's docs say how the
//! descriptors change hands on ARMv7 and what the real board would need besides). Moving
//! frames between the device and the stacks is written once ([`driver`]) over both devices
//! ([`Nic`](crate::drivers::nic::Nic)).
//!
//! # From the driver to the stacks and back
//! Each stack has a [`Link`] in memory all the threads share (one address space): a ring of
//! received frames (the driver produces, the stack consumes), a ring of frames to send (the
//! other way) and a doorbell (`frame_ring`). The driver copies each received frame into the
//! ring of the stack it is for ([`demux`]: by TCP destination port; ARP to every stack; the
//! rest to stack 0) and the frames the stacks put in their transmit rings into the device's
//! buffers. The kernel is not on the data path: a stack reads and writes frames in the ring
//! slots, and a kernel call (`Signal`) is made only to wake a side that sleeps (its doorbell
//! says so). A ring that is full holds the driver back: the frame and those behind it stay in
//! the device, and QEMU queues what arrives meanwhile, so nothing is dropped (`INFO`'s `# Net`
//! counts such waits).
//!
//! # Interrupts, sleeping and time
//! The device's interrupt line (microvm: GSI 24 + transport; ARM virt: SPI 16 + transport;
//! sabrelite: the ENET's SPI 118) is bound to the root thread's notification (bit
//! [`IRQ_BIT`]); the other stacks signal the same notification with bit [`KICK_BIT`] when
//! they queued frames and the driver sleeps. Every core's timer-tick line
//! (`abi::limits::TICK_IRQ_BASE + core`) is bound to that core's stack's notification (bit
//! [`TICK_BIT`]). When smoltcp has nothing to do, a stack blocks in `Wait` on its
//! notification (the root then acknowledges the device and the line if the interrupt's bit is
//! set). If smoltcp has a timer pending (a retransmission: under a closed-loop client, after
//! every reply until the next request), the stack first acknowledges its tick line, so that the
//! core's next timer tick ([`TICK`], 10 ms) wakes it if no frame does; only a timer due sooner
//! than a tick is polled for (checking the ring and the clock, yielding). Delayed ACKs are off
//! (ACKs go out with the replies). Time is the counter user programs read (`sys::Counter`: the
//! TSC on x86_64) scaled by the frequency the image reports.
//!
//! # Memory
//! One RAM region holds, in order: the DMA pages, the links, the stacks' thread stacks (cores
//! 1 and up) and one heap per stack. A stack keeps everything in its heap, handed out once
//! (`Bump`): its plan ([`StackPlan`]), the key-value store's arena and slot table, per
//! socket the TCP buffers ([`TCP_RX`], [`TCP_TX`]) and the connection's request and reply
//! buffers ([`CONN_IN`], [`CONN_OUT`]). Not `static` arrays: the user ELF is loaded into every
//! address space, and its `.bss` with it. There is no allocator. A heap is [`HEAP_PAGES`]
//! pages when the RAM allows (a store of [`ARENA_SIZE`] bytes and [`SLOTS`] slots, enough for
//! YCSB's records), else the RAM split evenly, the store scaled down (`net: listening` says
//! what each got).
//!
//! # Connections
//! Each stack's [`SOCKETS`] TCP sockets listen on its port; each accepted connection gets a
//! fresh `kv_resp::Connection` over its socket's buffers and the stack's `Store`, and once the
//! socket is closed it listens again. A connection beyond [`SOCKETS`] finds no listening socket
//! and is reset by the stack.

mod demux;
mod driver;
mod stack;

use core::sync::atomic::{AtomicUsize, Ordering};

use abi::{MintTarget, PageAttrs, Rights};
use frame_ring::{Doorbell, FrameRing};
use kv_resp::Slot;

pub use crate::drivers::nic::{DMA_PAGES, MAX_FRAME};

use crate::debug;
use crate::image::{info, slot};
use crate::sys::{self, slot as s, Counter};
use crate::uprintln;
use driver::Driver;
use stack::Stack;

/// The TCP port stack 0 listens on (Redis's); stack `k` listens on `PORT + k`.
pub const PORT: u16 = 6379;
/// The guest's address (QEMU user networking's default guest address).
pub const ADDRESS: [u8; 4] = [10, 0, 2, 15];
/// The prefix length of its network (10.0.2.0/24).
pub const PREFIX: u8 = 24;
/// The default gateway (QEMU user networking's host side).
pub const GATEWAY: [u8; 4] = [10, 0, 2, 2];

/// TCP sockets per stack, so concurrent connections (one more is refused): enough for
/// `redis-benchmark -c 50` twice over. It needs that: between its tests it closes its 50
/// connections and opens 50 new ones at once, and a socket whose connection is closing (the
/// last ACK still to come) is not listening. Each poll of smoltcp takes every frame that
/// arrived before the server can put the closed sockets back to listening, so with 64 sockets
/// some of the new connects were reset.
pub const SOCKETS: usize = 128;
/// Bytes of each socket's receive buffer (the TCP window).
pub const TCP_RX: usize = 8 * 1024;
/// Bytes of each socket's transmit buffer.
pub const TCP_TX: usize = 16 * 1024;
/// Bytes of a connection's own request buffer: the longest request it takes without the
/// stack's lent buffer ([`LENT`]).
pub const CONN_IN: usize = 16 * 1024;
/// Bytes of a connection's own reply buffer: the longest reply it sends without the stack's
/// lent buffer. redis-benchmark's longest, `LRANGE_600`'s 600 3-byte elements, takes 5,406
/// bytes.
pub const CONN_OUT: usize = 16 * 1024;
/// Bytes of each of a stack's two lent buffers, one for requests and one for replies: a
/// request or reply longer than a connection's own buffer is served in the stack's lent one,
/// which one connection at a time holds (`kv_resp`'s lending contract: the others wait,
/// reading nothing more, until it comes back). It bounds the longest request and reply, and
/// with it the longest value a client can write or read: Redis's own test suite writes and
/// reads values of 4,000,000 bytes. A longer request is refused as a protocol error and a
/// longer reply answered `-ERR reply exceeds the connection's output buffer`, so no
/// connection waits for room that never comes.
pub const LENT: usize = 5 * 1024 * 1024;
/// Bytes of a store's arena (its `maxmemory`) when the RAM allows: enough for YCSB's
/// workload A at its benchmark's record count (32,000 records of ten 100-byte fields: about 36
/// MiB with the fields' names and headers). The standard load (redis-benchmark's default test
/// list, twice: `bench/redis-load/standard.sh`) leaves 200,000 list elements of 11 bytes (an
/// 8-byte header and the 3-byte payload) and 200,000 stream entries of 42 (header, 16-byte ID,
/// `myfield` and the payload with their 4-byte lengths): about 11 MB.
pub const ARENA_SIZE: usize = 48 * 1024 * 1024;
/// Entries of a store's slot table when the RAM allows: each key takes one, and so does each
/// hash field, list element, set member and stream entry. YCSB's 32,000 records take 352,000.
/// The standard load takes 400,000 at its peak: in its second run, its LPUSH and RPUSH tests
/// put 200,000 elements on top of the 100,000 that the first run's LRANGE tests left on
/// `mylist` (its LPOP and RPOP tests take the 200,000 off again), while `mystream` holds the
/// first run's 100,000 entries; it ends with 200,000 of each.
pub const SLOTS: usize = 512 * 1024;
/// Bytes of a stack's heap besides its store: the sockets' buffers, the two lent buffers, and
/// 256 KiB for the rest (the plan, the socket and connection tables, smoltcp's interface).
const HEAP_FIXED: usize = SOCKETS * (TCP_RX + TCP_TX + CONN_IN + CONN_OUT) + 2 * LENT + 256 * 1024;
/// Pages of a stack's heap when the RAM allows.
pub const HEAP_PAGES: usize =
    (HEAP_FIXED + ARENA_SIZE + SLOTS * core::mem::size_of::<Slot>()).div_ceil(PAGE);
/// The smallest store arena worth serving with: with less RAM per stack, setup fails.
const MIN_ARENA: usize = 1024 * 1024;

/// Slots of each ring (as many as the device has receive buffers).
pub const RING_SLOTS: usize = 32;
/// A ring of frames between the driver and a stack.
pub type Ring = FrameRing<RING_SLOTS, MAX_FRAME>;

/// What the driver and one stack share.
#[repr(C)]
pub struct Link {
    /// Received frames for the stack (the driver produces).
    rx: Ring,
    /// Frames the stack sends (the driver consumes).
    tx: Ring,
    /// Whether the stack sleeps (the driver wakes it after delivering a frame).
    bell: Doorbell,
    /// Frames the driver put in `rx` (written by the driver only).
    delivered: AtomicUsize,
    /// Times the driver found `rx` full and left frames in the device until the stack had
    /// taken some (written by the driver only).
    waits: AtomicUsize,
}

/// Pages of one link.
const LINK_PAGES: usize = core::mem::size_of::<Link>().div_ceil(PAGE);
/// Pages of the thread stack of each stack beyond core 0 (the root has its own).
const THREAD_STACK_PAGES: usize = 16;

const PAGE: usize = 4096;
/// Where the DMA pages are mapped.
const DMA_VA: usize = 0x1A00_0000;
/// Where the links are mapped (one after the other).
const LINKS_VA: usize = 0x1A40_0000;
/// Where the thread stacks are mapped, each followed by an unmapped guard page.
const THREAD_STACKS_VA: usize = 0x1A80_0000;
/// Where the heaps are mapped (one after the other).
pub const HEAP_VA: usize = 0x1B00_0000;

// The regions do not overlap, whatever the core count.
const _: () = assert!(DMA_VA + DMA_PAGES * PAGE <= LINKS_VA);
const _: () = assert!(LINKS_VA + abi::limits::MAX_CPUS * LINK_PAGES * PAGE <= THREAD_STACKS_VA);
const _: () = assert!(thread_stack(abi::limits::MAX_CPUS - 1).1 < HEAP_VA);

/// Root slots (the root task's thread slots, unused in `mode=net`): the RAM taken for
/// everything, the interrupt handler, the root's notification, a thread being made, from
/// [`WAKE_SLOT`] the notification of stack 1, 2, ..., and [`PARK_SLOT`].
const MEM_SLOT: usize = slot::ROOT_FIRST_THREAD;
const IRQ_SLOT: usize = slot::ROOT_FIRST_THREAD + 1;
const NTFN_SLOT: usize = slot::ROOT_FIRST_THREAD + 2;
const THREAD_SLOT: usize = slot::ROOT_FIRST_THREAD + 3;
const WAKE_SLOT: usize = slot::ROOT_FIRST_THREAD + 4;
/// A notification nobody signals: the stack threads' park (the root's own cannot be
/// minted: it lacks the right to).
const PARK_SLOT: usize = WAKE_SLOT + abi::limits::MAX_CPUS - 1;
/// Core 0's tick line (its handler) and the root's notification badged with [`TICK_BIT`].
const TICK_SLOT: usize = PARK_SLOT + 1;
const TICK_NTFN_SLOT: usize = PARK_SLOT + 2;
const _: () = assert!(TICK_NTFN_SLOT < slot::ROOT_SCRATCH);
/// A stack thread's slots: its notification (READ), the root's (WRITE, badge [`KICK_BIT`])
/// and its core's tick line (WRITE: `AckIrq`).
const T_SLEEP: usize = 1;
const T_KICK: usize = 2;
const T_TICK: usize = 3;
const _: () = assert!(slot::PARK < T_SLEEP);

/// The root's notification word: the device's interrupt (bound with badge 0, which signals 1).
pub const IRQ_BIT: usize = 1;
/// The root's notification word: a stack queued frames to send while the driver slept.
pub const KICK_BIT: usize = 2;
/// A notification word's bit for its core's timer tick (every stack's notification).
pub const TICK_BIT: usize = 4;
/// The images' timer tick period (their `TIMER_HZ`, 100): a stack whose next smoltcp timer is
/// due later than this sleeps until a frame or the tick wakes it; sooner, it polls.
pub const TICK: smoltcp::time::Duration = smoltcp::time::Duration::from_millis(10);
/// The stack threads' priority (the root's: alone on their cores).
const STACK_PRIO: usize = 31;
/// Seconds the root waits for the other stacks to be ready.
const READY_SECS: u64 = 60;

/// Whether the driver (the root thread) sleeps: the stacks wake it after queuing frames.
static DRIVER_BELL: Doorbell = Doorbell::new();
/// The links (their address and count), published before any stack thread starts.
static LINKS: AtomicUsize = AtomicUsize::new(0);
static STACKS: AtomicUsize = AtomicUsize::new(0);
/// Stacks beyond 0 that are serving, and the bit of each that failed its setup.
static READY: AtomicUsize = AtomicUsize::new(0);
static FAILED: AtomicUsize = AtomicUsize::new(0);

/// The links, as published by the root (empty before).
fn links() -> &'static [Link] {
    let at = LINKS.load(Ordering::Acquire);
    if at == 0 {
        return &[];
    }
    // SAFETY: the root initialised `STACKS` links at `at` (mapped for the rest of the run)
    // before the Release store of `LINKS`, which the Acquire load above saw; links are only
    // used through shared references (atomics and the rings' handles).
    unsafe { core::slice::from_raw_parts(at as *const Link, STACKS.load(Ordering::Relaxed)) }
}

/// What a stack is built from, written by the root at the start of the stack's heap.
#[repr(C)]
pub struct StackPlan {
    index: usize,
    /// The rest of the heap, after the plan.
    heap_start: usize,
    heap_end: usize,
    /// The store's arena bytes and slots.
    arena: usize,
    slots: usize,
    mac: [u8; 6],
    hz: u64,
}

/// How the RAM is shared out: pages per heap and each store's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RamPlan {
    heap_pages: usize,
    arena: usize,
    slots: usize,
}

impl RamPlan {
    /// Pages before the heaps: DMA, links, thread stacks.
    fn fixed_pages(stacks: usize) -> usize {
        DMA_PAGES + stacks * LINK_PAGES + (stacks - 1) * THREAD_STACK_PAGES
    }

    /// The plan for `stacks` stacks in a region of `ram_pages` pages.
    fn new(ram_pages: usize, stacks: usize) -> Result<RamPlan, &'static str> {
        let heap_pages =
            (ram_pages.saturating_sub(Self::fixed_pages(stacks)) / stacks).min(HEAP_PAGES);
        let store = (heap_pages * PAGE).saturating_sub(HEAP_FIXED);
        let slot = core::mem::size_of::<Slot>();
        let full = ARENA_SIZE + SLOTS * slot;
        let (arena, slots) = if store >= full {
            (ARENA_SIZE, SLOTS)
        } else {
            let arena = (store as u64 * ARENA_SIZE as u64 / full as u64) as usize;
            (arena, (store - arena) / slot)
        };
        if arena < MIN_ARENA {
            return Err("not enough RAM for a store of 1 MiB per core");
        }
        Ok(RamPlan {
            heap_pages,
            arena,
            slots,
        })
    }

    /// Pages of the whole region taken.
    fn total_pages(&self, stacks: usize) -> usize {
        Self::fixed_pages(stacks) + stacks * self.heap_pages
    }
}

/// The server: sets everything up, then serves for ever; a setup failure is printed
/// (`net: FAILED: ...`) and the program parks.
pub fn run() -> ! {
    // The other cores start scheduling (and so idling, as the kernel accounts it, when their
    // stack sleeps).
    debug::release_cores();
    match setup() {
        Ok((driver, stack)) => serve(driver, stack),
        Err(e) => {
            uprintln!("net: FAILED: {e}");
            sys::park()
        }
    }
}

/// Hands out a heap, once: each piece lives for the rest of the run.
struct Bump {
    next: usize,
    end: usize,
}

impl Bump {
    /// `len` bytes aligned to `align` (a power of two), zeroed (fresh RAM from the kernel).
    fn take(&mut self, len: usize, align: usize) -> Result<usize, &'static str> {
        let at = (self.next + align - 1) & !(align - 1);
        if at + len > self.end {
            return Err("the heap is too small");
        }
        self.next = at + len;
        Ok(at)
    }

    /// A byte buffer of `len` bytes.
    fn bytes(&mut self, len: usize) -> Result<&'static mut [u8], &'static str> {
        let at = self.take(len, 8)?;
        // SAFETY: `take` hands out disjoint ranges of the heap, mapped writable for the rest
        // of the run and never touched by anything else; RAM is zero-filled, a valid `[u8]`.
        Ok(unsafe { core::slice::from_raw_parts_mut(at as *mut u8, len) })
    }

    /// `n` values made by `v`.
    fn array<T>(&mut self, n: usize, v: impl Fn() -> T) -> Result<&'static mut [T], &'static str> {
        let at = self.take(n * core::mem::size_of::<T>(), core::mem::align_of::<T>())?;
        let p = at as *mut T;
        for i in 0..n {
            // SAFETY: inside the range `take` handed out, aligned for `T`.
            unsafe { p.add(i).write(v()) };
        }
        // SAFETY: the range is ours for the rest of the run (see `bytes`), and every element
        // was written above.
        Ok(unsafe { core::slice::from_raw_parts_mut(p, n) })
    }
}

/// Maps `pages` pages of the region in `mem` from page `first` at `va`.
fn map_run(mem: sys::CapSlot, first: usize, pages: usize, va: usize) -> Result<(), &'static str> {
    for p in 0..pages {
        sys::map_page(
            s(slot::ROOT_ASPACE),
            mem,
            first + p,
            va + p * PAGE,
            PageAttrs::WRITE,
        )
        .map_err(|_| "mapping RAM failed")?;
    }
    Ok(())
}

/// The thread stack of stack `k` (1 and up): its bottom and top.
const fn thread_stack(k: usize) -> (usize, usize) {
    let bottom = THREAD_STACKS_VA + (k - 1) * (THREAD_STACK_PAGES + 1) * PAGE;
    (bottom, bottom + THREAD_STACK_PAGES * PAGE)
}

fn setup() -> Result<(Driver, Stack), &'static str> {
    let stacks = debug::info(info::CPUS).clamp(1, abi::limits::MAX_CPUS);
    let control = s(slot::ROOT_CONTROL);
    let found = crate::drivers::nic::find()?;

    // RAM: DMA pages, links, thread stacks, heaps, from one region (physically contiguous).
    let (_, ram_pages, _) = sys::mem_info(s(slot::ROOT_MEM)).map_err(|_| "no RAM")?;
    let ram = RamPlan::new(ram_pages, stacks)?;
    let mem = s(MEM_SLOT);
    sys::mem_split(s(slot::ROOT_MEM), mem, 0, ram.total_pages(stacks))
        .map_err(|_| "no RAM for the driver and the stacks")?;
    let (phys, _, _) = sys::mem_info(mem).map_err(|_| "MemInfo failed")?;
    let mut page = 0;
    map_run(mem, page, DMA_PAGES, DMA_VA)?;
    page += DMA_PAGES;
    map_run(mem, page, stacks * LINK_PAGES, LINKS_VA)?;
    page += stacks * LINK_PAGES;
    for k in 1..stacks {
        map_run(mem, page, THREAD_STACK_PAGES, thread_stack(k).0)?;
        page += THREAD_STACK_PAGES;
    }
    map_run(mem, page, stacks * ram.heap_pages, HEAP_VA)?;

    let link_ptr = LINKS_VA as *mut Link;
    for k in 0..stacks {
        // SAFETY: link `k` lies in the pages mapped at LINKS_VA above (LINK_PAGES each), which
        // nothing else uses; each field is written in place before anything reads it.
        unsafe {
            let l = link_ptr.add(k);
            Ring::init(core::ptr::addr_of_mut!((*l).rx));
            Ring::init(core::ptr::addr_of_mut!((*l).tx));
            core::ptr::addr_of_mut!((*l).bell).write(Doorbell::new());
            core::ptr::addr_of_mut!((*l).delivered).write(AtomicUsize::new(0));
            core::ptr::addr_of_mut!((*l).waits).write(AtomicUsize::new(0));
        }
    }
    STACKS.store(stacks, Ordering::Relaxed);
    LINKS.store(LINKS_VA, Ordering::Release);
    let links = links();

    // The root's notification: the device's interrupt, and the stacks' kicks.
    sys::create_notification(control, s(NTFN_SLOT)).map_err(|_| "CreateNotification failed")?;
    if stacks > 1 {
        sys::create_notification(control, s(PARK_SLOT)).map_err(|_| "CreateNotification failed")?;
    }
    let mut wake = [s(NTFN_SLOT); abi::limits::MAX_CPUS];
    for (k, w) in wake.iter_mut().enumerate().take(stacks).skip(1) {
        *w = s(WAKE_SLOT + k - 1);
        sys::create_notification(control, *w).map_err(|_| "CreateNotification failed")?;
    }
    // SAFETY: the driver is the only producer of the receive rings and the only consumer of
    // the transmit rings: the stacks take the other ends (`Stack::new`), nothing else any. The
    // DMA pages were mapped at DMA_VA above, from the region at `phys`, for the driver only.
    let (mut driver, mac, own_mac) = unsafe { Driver::start(&found, phys as u64, links, wake)? };
    sys::issue_irq_handler(control, found.irq(), s(IRQ_SLOT))
        .map_err(|_| "IssueIrqHandler failed")?;
    sys::bind_irq(s(IRQ_SLOT), s(NTFN_SLOT), debug::cpu()).map_err(|_| "BindIrq failed")?;
    // Core 0's tick line, to the root's notification with TICK_BIT (armed by `serve`).
    sys::issue_irq_handler(control, abi::limits::TICK_IRQ_BASE, s(TICK_SLOT))
        .map_err(|_| "IssueIrqHandler (tick) failed")?;
    sys::mint(
        s(NTFN_SLOT),
        MintTarget::Own,
        s(TICK_NTFN_SLOT),
        Rights::WRITE,
        TICK_BIT,
    )
    .map_err(|_| "Mint (tick) failed")?;
    sys::bind_irq(s(TICK_SLOT), s(TICK_NTFN_SLOT), 0).map_err(|_| "BindIrq (tick) failed")?;

    let counter = Counter::detect();
    let mut hz = debug::info(info::COUNTER_HZ) as u64;
    if hz == 0 || counter == Counter::None {
        uprintln!("net: no counter frequency from the image: assuming 1 GHz");
        hz = 1_000_000_000;
    }
    let plan_at = |k: usize| HEAP_VA + k * ram.heap_pages * PAGE;
    for k in 0..stacks {
        let at = plan_at(k);
        let plan = StackPlan {
            index: k,
            heap_start: at + core::mem::size_of::<StackPlan>(),
            heap_end: at + ram.heap_pages * PAGE,
            arena: ram.arena,
            slots: ram.slots,
            mac,
            hz,
        };
        // SAFETY: the start of heap `k`, mapped above, aligned (page), not yet used.
        unsafe { (at as *mut StackPlan).write(plan) };
    }
    for (k, &w) in wake.iter().enumerate().take(stacks).skip(1) {
        start_stack(k, plan_at(k), w)?;
    }
    // SAFETY: the plan was written above; stack 0 is built once, here, and this thread is
    // the only user of its rings' stack ends.
    let stack = unsafe { Stack::new(&*(plan_at(0) as *const StackPlan))? };
    wait_for_stacks(stacks - 1, counter, hz)?;

    uprintln!(
        "net: {found} (irq {}), mac {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}{}, driver on core \
         0, {} stack{} (rings of {RING_SLOTS} frames)",
        found.irq(),
        mac[0],
        mac[1],
        mac[2],
        mac[3],
        mac[4],
        mac[5],
        if own_mac { " (device's)" } else { " (made up)" },
        stacks,
        if stacks == 1 { "" } else { "s" }
    );
    driver.announce(mac, ADDRESS, GATEWAY);
    let [a, b, c, d] = ADDRESS;
    let [g0, g1, g2, g3] = GATEWAY;
    uprintln!(
        "net: listening on {a}.{b}.{c}.{d}:{PORT}..{} (stack k on core k, port {PORT}+k) with \
         {SOCKETS} sockets each (gateway {g0}.{g1}.{g2}.{g3}), store {} KiB / {} slots each",
        PORT as usize + stacks - 1,
        ram.arena / 1024,
        ram.slots,
    );
    Ok((driver, stack))
}

/// Creates and starts the thread of stack `k` on core `k`, with its plan at `plan`, waking on
/// the notification in `wake`. An error names the call that failed.
fn start_stack(k: usize, plan: usize, wake: sys::CapSlot) -> Result<(), &'static str> {
    let t = s(THREAD_SLOT);
    let why = |call: &'static str| {
        move |e: abi::Error| {
            uprintln!("net: stack {k}: {call} failed: {e:?}");
            "starting a stack's thread failed"
        }
    };
    sys::create_thread(
        s(slot::ROOT_CONTROL),
        t,
        s(slot::ROOT_ASPACE),
        STACK_PRIO,
        k,
    )
    .map_err(why("CreateThread"))?;
    let target = MintTarget::Thread(t);
    sys::mint(s(PARK_SLOT), target, s(slot::PARK), Rights::READ, 0).map_err(why("Mint (park)"))?;
    sys::mint(wake, target, s(T_SLEEP), Rights::READ, 0).map_err(why("Mint (sleep)"))?;
    sys::mint(s(NTFN_SLOT), target, s(T_KICK), Rights::WRITE, KICK_BIT)
        .map_err(why("Mint (kick)"))?;
    // Core k's tick line, to the stack's notification with TICK_BIT; the thread holds the
    // handler (to acknowledge it) and the root's scratch copies go (the binding holds the
    // notification, the thread's copy the handler).
    let (handler, badged) = (s(slot::ROOT_SCRATCH), s(slot::ROOT_SCRATCH + 1));
    sys::issue_irq_handler(
        s(slot::ROOT_CONTROL),
        abi::limits::TICK_IRQ_BASE + k,
        handler,
    )
    .map_err(why("IssueIrqHandler (tick)"))?;
    sys::mint(wake, MintTarget::Own, badged, Rights::WRITE, TICK_BIT)
        .map_err(why("Mint (tick)"))?;
    sys::bind_irq(handler, badged, k).map_err(why("BindIrq (tick)"))?;
    sys::mint(handler, target, s(T_TICK), Rights::WRITE, 0).map_err(why("Mint (tick handler)"))?;
    sys::cap_delete(handler).map_err(why("CapDelete (tick)"))?;
    sys::cap_delete(badged).map_err(why("CapDelete (tick)"))?;
    let entry = stack_main as extern "C" fn(usize) -> ! as usize;
    sys::write_registers(t, entry, sys::initial_sp(thread_stack(k).1), plan)
        .map_err(why("WriteRegisters"))?;
    sys::resume(t).map_err(why("Resume"))?;
    sys::cap_delete(t).map_err(why("CapDelete"))
}

/// Entry point of the stack threads (`plan`: the address of the thread's [`StackPlan`]).
extern "C" fn stack_main(plan: usize) -> ! {
    // SAFETY: the root wrote the plan at this address, in memory mapped for the rest of the
    // run, before it started this thread, and never writes it again.
    let plan = unsafe { &*(plan as *const StackPlan) };
    // SAFETY: stack `plan.index` is built once, by this thread, the only user of its rings'
    // stack ends and of its heap.
    match unsafe { Stack::new(plan) } {
        Ok(stack) => {
            READY.fetch_add(1, Ordering::Release);
            stack.run(s(T_KICK), s(T_SLEEP), s(T_TICK))
        }
        Err(e) => {
            uprintln!("net: stack {}: FAILED: {e}", plan.index);
            FAILED.fetch_or(1 << plan.index, Ordering::Release);
            sys::park()
        }
    }
}

/// Waits (yielding) until `n` stack threads are ready, one failed, or [`READY_SECS`] pass.
fn wait_for_stacks(n: usize, counter: Counter, hz: u64) -> Result<(), &'static str> {
    let start = counter.read();
    while READY.load(Ordering::Acquire) < n {
        if FAILED.load(Ordering::Acquire) != 0 {
            return Err("a stack failed its setup (its line above says why)");
        }
        if counter.read().wrapping_sub(start) > READY_SECS * hz {
            return Err("the stacks on the other cores did not start within 60 s");
        }
        sys::yield_now();
    }
    Ok(())
}

/// The root's loop: the driver moves frames, stack 0 serves; when neither has anything to do,
/// sleep until the device interrupts or a stack kicks (or poll while stack 0 has a timer).
fn serve(mut driver: Driver, mut stack: Stack) -> ! {
    loop {
        let mut busy = driver.pump();
        busy |= stack.step();
        if stack.take_sent() {
            busy |= driver.pump();
        }
        if busy || driver.pending() || stack.has_input() {
            continue;
        }
        let woke = stack.idle(&DRIVER_BELL, s(NTFN_SLOT), s(TICK_SLOT), || {
            driver.pending()
        });
        // Acknowledging an interrupt that did not happen is harmless.
        if woke.is_some_and(|bits| bits & IRQ_BIT != 0) {
            driver.ack_interrupt(s(IRQ_SLOT));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ram_plan_gives_full_stores_when_it_can_and_shares_out_the_rest() {
        // 240 MiB (about what a 256 MiB machine leaves): two full stores fit.
        let pages = 240 * 256;
        let two = RamPlan::new(pages, 2).unwrap();
        assert_eq!((two.arena, two.slots), (ARENA_SIZE, SLOTS));
        assert!(two.total_pages(2) <= pages);
        // Four do not: each gets a quarter, the store scaled down, and all fits.
        let four = RamPlan::new(pages, 4).unwrap();
        assert!(
            four.arena < ARENA_SIZE && four.arena >= MIN_ARENA,
            "{four:?}"
        );
        assert!(four.total_pages(4) <= pages);
        let used = HEAP_FIXED + four.arena + four.slots * core::mem::size_of::<Slot>();
        assert!(used <= four.heap_pages * PAGE, "{used} bytes in {four:?}");
        // Too little RAM is an error, not a tiny store.
        assert!(RamPlan::new(2048, 8).is_err());
        assert!(RamPlan::new(0, 1).is_err());
    }
}
