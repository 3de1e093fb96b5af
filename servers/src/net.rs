//! The network server of `mode=net`: a user-level virtio-net driver, a smoltcp TCP/IP stack
//! over it and a Redis-protocol (RESP2) key-value server (`kv-resp`) on TCP port
//! [`PORT`], all in one program on core 0 (the root thread of `mode=net`, which holds the
//! machine's RAM and device regions and the control capability).
//!
//! # The driver
//! It finds the virtio-net device by scanning the board's virtio-mmio transports for
//! [`virtio::DEVICE_NET`] (QEMU `-device virtio-net-device,netdev=...`; `cargo xtask qemu
//! --net` adds it), maps the transports' registers uncached, and takes [`DMA_PAGES`] pages of
//! RAM whose physical addresses it asks the kernel for (`MemInfo`): one page of rings per
//! queue (receive queue 0, transmit queue 1) and [`RX_BUFFERS`] + [`TX_BUFFERS`] frame buffers
//! of [`BUF_SIZE`] bytes, two per page. It negotiates `VIRTIO_F_VERSION_1` and, if offered,
//! `VIRTIO_NET_F_MAC` (else it makes up a locally administered address), and nothing else: no
//! checksum or segmentation offloads and no merged receive buffers, so every frame is one
//! buffer of at most 1514 bytes after the 12-byte `virtio_net_hdr` (virtio 1.x layout), which a
//! 2 KiB buffer holds. Transmit buffers are returned without an interrupt (the transmit queue
//! asks for none); the driver reclaims them when it needs one.
//!
//! # Interrupts and time
//! The device's interrupt line (microvm: GSI 24 + transport; ARM virt: SPI 16 + transport) is
//! bound to a notification; when smoltcp has nothing to do and no timer pending
//! (`poll_delay` is `None`: only listening or idle established sockets), the server blocks in
//! `Wait`, and on waking acknowledges the device (its interrupt status register) and then the
//! line (`AckIrq`). The kernel has no timer notification and no `Wait` with a timeout, so while
//! smoltcp has a timer pending (a retransmission, a delayed ACK: milliseconds at a time) the
//! server polls instead: it checks the receive ring and the clock and yields, until the
//! deadline passes or a frame arrives. Delayed ACKs are off (ACKs go out with the replies), so
//! such windows are rare. Time is the counter user programs read (`sys::Counter`: the TSC on
//! x86_64) scaled by the frequency the image reports.
//!
//! # Memory
//! Everything the stack and the server keep lives in [`HEAP_PAGES`] pages of RAM mapped at
//! [`HEAP_VA`] and handed out once at start (`Bump`): the key-value store's arena
//! ([`ARENA_SIZE`]) and slot table ([`SLOTS`]), per socket the TCP buffers ([`TCP_RX`],
//! [`TCP_TX`]) and the connection's request and reply buffers ([`CONN_IN`], [`CONN_OUT`]).
//! Not `static` arrays: the user ELF is loaded into every address space, and its `.bss` with
//! it. There is no allocator.
//!
//! # Connections
//! [`SOCKETS`] TCP sockets listen on [`PORT`]; each accepted connection gets a fresh
//! `kv_resp::Connection` over its socket's buffers and the shared `Store`, and once the socket
//! is closed it listens again. A connection beyond [`SOCKETS`] finds no listening socket and
//! is reset by the stack.

use core::sync::atomic::{compiler_fence, Ordering};

use abi::PageAttrs;
use kv_resp::{Connection, Progress, Slot, Store};
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet, SocketStorage};
use smoltcp::phy::{self, DeviceCapabilities, Medium};
use smoltcp::socket::tcp;
use smoltcp::time::{Duration, Instant};
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpCidr, Ipv4Address};

use crate::abi::{info, slot};
use crate::debug;
use crate::sys::{self, slot as s, Counter};
use crate::uprintln;
use crate::virtio::{self, Queue, Transport};

/// The TCP port the key-value server listens on (Redis's).
pub const PORT: u16 = 6379;
/// The guest's address (QEMU user networking's default guest address).
pub const ADDRESS: [u8; 4] = [10, 0, 2, 15];
/// The prefix length of its network (10.0.2.0/24).
pub const PREFIX: u8 = 24;
/// The default gateway (QEMU user networking's host side).
pub const GATEWAY: [u8; 4] = [10, 0, 2, 2];

/// TCP sockets, so concurrent connections: enough for `redis-benchmark -c 50` and a few more
/// (one more connection is refused).
pub const SOCKETS: usize = 64;
/// Bytes of each socket's receive buffer (the TCP window).
pub const TCP_RX: usize = 8 * 1024;
/// Bytes of each socket's transmit buffer.
pub const TCP_TX: usize = 16 * 1024;
/// Bytes of a connection's request buffer: the longest request it accepts.
pub const CONN_IN: usize = 16 * 1024;
/// Bytes of a connection's reply buffer.
pub const CONN_OUT: usize = 16 * 1024;
/// Bytes of the key-value store's arena (its `maxmemory`): enough for YCSB's workload A at the
/// issue's record count (32,000 records of ten 100-byte fields: about 36 MiB with the fields'
/// names and headers).
pub const ARENA_SIZE: usize = 48 * 1024 * 1024;
/// Entries of the store's slot table (keys plus hash fields: YCSB's 32,000 records take
/// 352,000).
pub const SLOTS: usize = 512 * 1024;

/// Entries of each virtqueue.
pub const QUEUE_ENTRIES: u16 = 32;
/// Receive buffers (one per receive-queue entry).
pub const RX_BUFFERS: usize = QUEUE_ENTRIES as usize;
/// Transmit buffers (one per transmit-queue entry).
pub const TX_BUFFERS: usize = QUEUE_ENTRIES as usize;
/// Bytes of a frame buffer: the 12-byte header and an Ethernet frame of up to 1514 bytes.
pub const BUF_SIZE: usize = 2048;
/// Bytes of the `virtio_net_hdr` in front of every frame (virtio 1.x: `num_buffers` included).
const HDR: usize = 12;
/// The largest Ethernet frame without the FCS (1500-byte MTU).
const MAX_FRAME: usize = 1514;
/// DMA pages: the two queues' rings, then the receive and the transmit buffers.
pub const DMA_PAGES: usize = 2 + (RX_BUFFERS + TX_BUFFERS) * BUF_SIZE / PAGE;
/// Pages of the heap the stack and the server keep their state in: the store's arena and slot
/// table, each socket's TCP and connection buffers, and 256 KiB for the rest (the socket and
/// connection tables, smoltcp's interface).
pub const HEAP_PAGES: usize = (ARENA_SIZE
    + SLOTS * core::mem::size_of::<Slot>()
    + SOCKETS * (TCP_RX + TCP_TX + CONN_IN + CONN_OUT))
    .div_ceil(PAGE)
    + 64;

const PAGE: usize = 4096;
/// Feature bit 5: the device has a MAC address in its configuration space.
const F_MAC: u64 = 1 << 5;

/// Where the device registers are mapped.
const DEV_VA: usize = 0x1900_0000;
/// Where the DMA pages are mapped.
const DMA_VA: usize = 0x1A00_0000;
/// Where the heap is mapped.
pub const HEAP_VA: usize = 0x1B00_0000;
/// Slots (the root task's thread slots, unused in `mode=net`): the RAM taken for DMA and
/// heap, the interrupt handler, the notification.
const MEM_SLOT: usize = slot::ROOT_FIRST_THREAD;
const IRQ_SLOT: usize = slot::ROOT_FIRST_THREAD + 1;
const NTFN_SLOT: usize = slot::ROOT_FIRST_THREAD + 2;

/// The server: sets everything up, then serves for ever; a setup failure is printed
/// (`net: ...`) and the program parks.
pub fn run() -> ! {
    // The other cores start scheduling (and so idling, as the kernel accounts it): without
    // this they would sleep in the image's boot loop, which the kernel never sees, and their
    // idle time would read 0.
    debug::release_cores();
    match setup() {
        Ok(server) => server.serve(),
        Err(e) => {
            uprintln!("net: FAILED: {e}");
            sys::park()
        }
    }
}

/// Hands out the heap, once: each piece lives for the rest of the run.
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

/// The virtio-net device, as smoltcp's `Device`.
pub struct VirtioNet {
    rx: RxSide,
    tx: TxSide,
}

struct RxSide {
    t: Transport,
    q: Queue,
    va: usize,
    phys: u64,
}

struct TxSide {
    t: Transport,
    q: Queue,
    va: usize,
    phys: u64,
    /// Bit `i`: transmit buffer (and descriptor) `i` is free.
    free: u64,
}

impl RxSide {
    /// Gives receive buffer `i` (back) to the device.
    fn post(&mut self, i: u16) {
        let off = usize::from(i) * BUF_SIZE;
        self.q
            .submit(i, self.phys + off as u64, BUF_SIZE as u32, true);
    }
}

impl TxSide {
    /// Takes back the buffers the device has sent.
    fn reclaim(&mut self) {
        while let Some((id, _)) = self.q.take_used() {
            if (id as usize) < TX_BUFFERS {
                self.free |= 1 << id;
            }
        }
    }
}

/// A received frame: receive buffer `id`, `len` bytes written by the device.
pub struct RxToken<'a> {
    rx: &'a mut RxSide,
    id: u16,
    len: usize,
}

/// Room to send one frame.
pub struct TxToken<'a> {
    tx: &'a mut TxSide,
}

impl phy::RxToken for RxToken<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        let buf = self.rx.va + usize::from(self.id) * BUF_SIZE;
        // SAFETY: receive buffer `id` is mapped, `len` <= BUF_SIZE bytes were written by the
        // device (the used ring's barrier in `take_used` orders them before this read), and
        // the device does not touch it until `post` gives it back below.
        let frame = unsafe { core::slice::from_raw_parts(buf as *const u8, self.len) };
        let r = f(&frame[HDR..]);
        self.rx.post(self.id);
        self.rx.t.notify_queue(0);
        r
    }
}

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let tx = self.tx;
        // `transmit` hands out a token only with a free buffer.
        let i = tx.free.trailing_zeros() as usize;
        tx.free &= !(1 << i);
        let len = len.min(BUF_SIZE - HDR);
        let buf = tx.va + i * BUF_SIZE;
        // SAFETY: transmit buffer `i` is mapped and free (the device is done with it); the
        // header and frame fit its BUF_SIZE bytes.
        let frame = unsafe { core::slice::from_raw_parts_mut(buf as *mut u8, HDR + len) };
        frame[..HDR].fill(0);
        let r = f(&mut frame[HDR..]);
        tx.q.submit(
            i as u16,
            tx.phys + (i * BUF_SIZE) as u64,
            (HDR + len) as u32,
            false,
        );
        tx.t.notify_queue(1);
        r
    }
}

impl phy::Device for VirtioNet {
    type RxToken<'a> = RxToken<'a>;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, _: Instant) -> Option<(RxToken<'_>, TxToken<'_>)> {
        self.tx.reclaim();
        if self.tx.free == 0 {
            // No room for an answer: leave the frame with the device for the next poll.
            return None;
        }
        loop {
            let (id, len) = self.rx.q.take_used()?;
            let (id, len) = (id as u16, len as usize);
            if usize::from(id) >= RX_BUFFERS {
                continue;
            }
            if len <= HDR || len > BUF_SIZE {
                // Nothing a frame could be: give the buffer back.
                self.rx.post(id);
                self.rx.t.notify_queue(0);
                continue;
            }
            return Some((
                RxToken {
                    rx: &mut self.rx,
                    id,
                    len,
                },
                TxToken { tx: &mut self.tx },
            ));
        }
    }

    fn transmit(&mut self, _: Instant) -> Option<TxToken<'_>> {
        self.tx.reclaim();
        (self.tx.free != 0).then_some(TxToken { tx: &mut self.tx })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = MAX_FRAME;
        caps.max_burst_size = Some(TX_BUFFERS);
        caps
    }
}

/// The counter as smoltcp's clock.
struct Clock {
    counter: Counter,
    hz: u64,
    start: u64,
}

impl Clock {
    fn now(&self) -> Instant {
        let ticks = self.counter.read().wrapping_sub(self.start);
        let us = u128::from(ticks) * 1_000_000 / u128::from(self.hz);
        Instant::from_micros(us as i64)
    }
}

/// One listening or connected socket and its client's state.
struct Client {
    handle: SocketHandle,
    input: *mut [u8],
    output: *mut [u8],
    conn: Option<Connection<'static>>,
}

/// Everything set up, ready to serve.
struct Server {
    dev: VirtioNet,
    iface: Interface,
    sockets: SocketSet<'static>,
    /// One per socket (all `Some` once set up), in the heap: a table of [`SOCKETS`] clients
    /// would crowd the 32 KiB stack.
    clients: &'static mut [Option<Client>],
    store: Store<'static>,
    clock: Clock,
    transport: Transport,
}

/// The board's virtio-mmio window: its name, transports and first transport's interrupt line
/// (the layouts of `devtest`).
fn window(base: usize) -> Option<(&'static str, usize, usize)> {
    match base {
        0xFEB0_0000 => Some(("x86_64 microvm", 24, 24)),
        0x0A00_0000 => Some(("ARM virt", 32, 16)),
        _ => None,
    }
}

fn setup() -> Result<Server, &'static str> {
    let dev = s(slot::ROOT_DEVICE);
    let aspace = s(slot::ROOT_ASPACE);
    let control = s(slot::ROOT_CONTROL);
    let (base, pages, _) = sys::mem_info(dev).map_err(|_| "no device region")?;
    let (board, count, irq_base) = window(base).ok_or("no virtio-mmio transports on this board")?;
    for p in 0..pages {
        let va = DEV_VA + p * PAGE;
        sys::map_page(aspace, dev, p, va, PageAttrs::WRITE | PageAttrs::DEVICE)
            .map_err(|_| "mapping the device registers failed")?;
    }
    let mut found = None;
    for i in 0..count.min(pages * PAGE / virtio::TRANSPORT_SIZE) {
        // SAFETY: the transport's registers lie in the pages mapped just above.
        let t = unsafe { Transport::new(DEV_VA + i * virtio::TRANSPORT_SIZE) };
        match t.probe() {
            Ok(virtio::DEVICE_NET) => {
                found = Some((i, t));
                break;
            }
            Err(virtio::VirtioError::Legacy) => {
                return Err("legacy virtio-mmio transport (version 1): start QEMU with \
                            -global virtio-mmio.force-legacy=false");
            }
            _ => {}
        }
    }
    let (index, t) = found.ok_or(
        "no virtio-net device on the virtio-mmio transports (QEMU needs \
         -device virtio-net-device,netdev=...)",
    )?;
    let irq = irq_base + index;

    // RAM: the DMA pages, then the heap, from one region (physically contiguous).
    let mem = s(MEM_SLOT);
    sys::mem_split(s(slot::ROOT_MEM), mem, 0, DMA_PAGES + HEAP_PAGES)
        .map_err(|_| "no RAM for the driver and the server")?;
    let (phys, _, _) = sys::mem_info(mem).map_err(|_| "MemInfo failed")?;
    for p in 0..DMA_PAGES + HEAP_PAGES {
        let va = if p < DMA_PAGES {
            DMA_VA + p * PAGE
        } else {
            HEAP_VA + (p - DMA_PAGES) * PAGE
        };
        sys::map_page(aspace, mem, p, va, PageAttrs::WRITE).map_err(|_| "mapping RAM failed")?;
    }
    let phys = phys as u64;

    // The device: features, receive queue 0, transmit queue 1.
    let features = t
        .negotiate(F_MAC)
        .map_err(|_| "the virtio-net device refused VIRTIO_F_VERSION_1")?;
    let rxq = t
        .setup_queue(0, QUEUE_ENTRIES, DMA_VA, phys)
        .map_err(|_| "the virtio-net device has no usable receive queue")?;
    let mut txq = t
        .setup_queue(1, QUEUE_ENTRIES, DMA_VA + PAGE, phys + PAGE as u64)
        .map_err(|_| "the virtio-net device has no usable transmit queue")?;
    txq.suppress_interrupts();
    let mac = if features & F_MAC != 0 {
        core::array::from_fn(|i| t.config_byte(i))
    } else {
        // Locally administered, unicast.
        [0x02, 0x00, 0x00, 0x00, 0x00, 0x01]
    };
    let bufs = DMA_VA + 2 * PAGE;
    let bufs_phys = phys + 2 * PAGE as u64;
    let tx_off = RX_BUFFERS * BUF_SIZE;
    let mut rx = RxSide {
        t,
        q: rxq,
        va: bufs,
        phys: bufs_phys,
    };
    for i in 0..RX_BUFFERS {
        rx.post(i as u16);
    }
    let tx = TxSide {
        t,
        q: txq,
        va: bufs + tx_off,
        phys: bufs_phys + tx_off as u64,
        free: (1u64 << TX_BUFFERS) - 1,
    };
    t.driver_ok();
    t.notify_queue(0);

    // The interrupt, to a notification on this core.
    sys::issue_irq_handler(control, irq, s(IRQ_SLOT)).map_err(|_| "IssueIrqHandler failed")?;
    sys::create_notification(control, s(NTFN_SLOT)).map_err(|_| "CreateNotification failed")?;
    sys::bind_irq(s(IRQ_SLOT), s(NTFN_SLOT), debug::cpu()).map_err(|_| "BindIrq failed")?;

    let counter = Counter::detect();
    let mut hz = debug::info(info::COUNTER_HZ) as u64;
    if hz == 0 || counter == Counter::None {
        uprintln!("net: no counter frequency from the image: assuming 1 GHz");
        hz = 1_000_000_000;
    }
    let clock = Clock {
        counter,
        hz,
        start: counter.read(),
    };

    let mut heap = Bump {
        next: HEAP_VA,
        end: HEAP_VA + HEAP_PAGES * PAGE,
    };
    let mut dev = VirtioNet { rx, tx };
    let mut cfg = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac)));
    cfg.random_seed = clock.counter.read();
    let mut iface = Interface::new(cfg, &mut dev, clock.now());
    let [a, b, c, d] = ADDRESS;
    iface.update_ip_addrs(|addrs| {
        let _ = addrs.push(IpCidr::new(Ipv4Address::new(a, b, c, d).into(), PREFIX));
    });
    let [a, b, c, d] = GATEWAY;
    iface
        .routes_mut()
        .add_default_ipv4_route(Ipv4Address::new(a, b, c, d))
        .map_err(|_| "no room for the default route")?;

    let storage = heap.array(SOCKETS, || SocketStorage::EMPTY)?;
    let mut sockets = SocketSet::new(&mut storage[..]);
    let mut handles = [None; SOCKETS];
    for h in handles.iter_mut() {
        let rx_buf = tcp::SocketBuffer::new(heap.bytes(TCP_RX)?);
        let tx_buf = tcp::SocketBuffer::new(heap.bytes(TCP_TX)?);
        let mut sock = tcp::Socket::new(rx_buf, tx_buf);
        listen(&mut sock);
        *h = Some(sockets.add(sock));
    }
    let clients: &'static mut [Option<Client>] = heap.array(SOCKETS, || None)?;
    for (c, h) in clients.iter_mut().zip(handles) {
        let input: *mut [u8] = heap.bytes(CONN_IN)?;
        let output: *mut [u8] = heap.bytes(CONN_OUT)?;
        *c = h.map(|handle| Client {
            handle,
            input,
            output,
            conn: None,
        });
    }
    let mut store = Store::new(heap.bytes(ARENA_SIZE)?, heap.array(SLOTS, || Slot::EMPTY)?);
    store.set_info_section(cpu_section);

    uprintln!(
        "net: virtio-net on {board} transport {index} (irq {irq}), mac \
         {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}{}, {} rx / {} tx buffers",
        mac[0],
        mac[1],
        mac[2],
        mac[3],
        mac[4],
        mac[5],
        if features & F_MAC != 0 {
            " (device's)"
        } else {
            " (made up)"
        },
        RX_BUFFERS,
        TX_BUFFERS
    );
    let mut server = Server {
        dev,
        iface,
        sockets,
        clients,
        store,
        clock,
        transport: t,
    };
    server.announce();
    uprintln!(
        "net: listening on {}.{}.{}.{}:{PORT} with {SOCKETS} sockets (gateway {}.{}.{}.{}), \
         store {} KiB / {SLOTS} slots, {} KiB heap used",
        ADDRESS[0],
        ADDRESS[1],
        ADDRESS[2],
        ADDRESS[3],
        GATEWAY[0],
        GATEWAY[1],
        GATEWAY[2],
        GATEWAY[3],
        ARENA_SIZE / 1024,
        (heap.next - HEAP_VA) / 1024
    );
    Ok(server)
}

/// The sockets by state, as the server last saw them (`serve_sockets`): listening, connected
/// (established or half-closed by the client), closing on the server's side (FIN sent: FIN-WAIT,
/// CLOSING, LAST-ACK) and in TIME-WAIT. Written by the one server thread, read by its own
/// `INFO`; atomics only because the section function has no other way to reach them.
static SOCKET_STATES: [core::sync::atomic::AtomicUsize; 4] =
    [const { core::sync::atomic::AtomicUsize::new(0) }; 4];

/// The server's own `INFO` sections. `# CPU`, which `cargo xtask bench --suite redis` reads
/// for the utilisation of each core: the kernel's cycle counter and each core's idle cycles
/// ([`KernelInfo`](abi::Syscall::KernelInfo) keys `CYCLES` and `IDLE_BASE + c`), with the
/// counter's frequency and word size (on 32-bit machines the values are the low word: the
/// reader takes differences modulo `2^word_bits`, over intervals shorter than a wrap).
/// `# Sockets`: the sockets by state ([`SOCKET_STATES`]).
fn cpu_section(w: &mut dyn core::fmt::Write) -> core::fmt::Result {
    use abi::syscall::info as kinfo;
    let cpus = debug::info(info::CPUS).clamp(1, abi::limits::MAX_CPUS);
    // Read the clock first: each idle count then covers at most what the clock does.
    let cycles = sys::kernel_info(kinfo::CYCLES).unwrap_or(0);
    write!(
        w,
        "# CPU\r\ncpus:{cpus}\r\ncounter_hz:{}\r\nword_bits:{}\r\nkernel_cycles:{cycles}\r\n",
        debug::info(info::COUNTER_HZ),
        usize::BITS
    )?;
    for c in 0..cpus {
        let idle = sys::kernel_info(kinfo::IDLE_BASE + c).unwrap_or(0);
        write!(w, "idle_cycles_cpu{c}:{idle}\r\n")?;
    }
    let [listening, connected, closing, time_wait] =
        SOCKET_STATES.each_ref().map(|a| a.load(Ordering::Relaxed));
    write!(
        w,
        "\r\n# Sockets\r\nsockets:{SOCKETS}\r\nsockets_listening:{listening}\r\n\
         sockets_connected:{connected}\r\nsockets_closing:{closing}\r\n\
         sockets_time_wait:{time_wait}\r\n"
    )
}

/// Puts a closed socket back to listening on [`PORT`], with delayed ACKs off (the reply
/// carries the ACK; a pending delayed ACK would keep the server polling).
fn listen(sock: &mut tcp::Socket<'_>) {
    sock.set_ack_delay(None);
    sock.set_nagle_enabled(false);
    // Cannot fail: the socket is closed and the port is not 0.
    let _ = sock.listen(PORT);
}

impl Server {
    /// Sends one ARP request for the gateway, so that QEMU's user network learns the guest's
    /// MAC address before the first forwarded connection arrives (it would otherwise ask, and
    /// hold the connection's first segment back until it has the answer).
    fn announce(&mut self) {
        use phy::{Device as _, TxToken as _};
        let mac = match self.iface.hardware_addr() {
            HardwareAddress::Ethernet(m) => m.0,
        };
        let Some(tok) = self.dev.transmit(self.clock.now()) else {
            return;
        };
        tok.consume(42, |f| {
            f[0..6].fill(0xFF);
            f[6..12].copy_from_slice(&mac);
            f[12..14].copy_from_slice(&[0x08, 0x06]);
            // Ethernet, IPv4, 6-byte and 4-byte addresses, request.
            f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
            f[22..28].copy_from_slice(&mac);
            f[28..32].copy_from_slice(&ADDRESS);
            f[32..38].fill(0);
            f[38..42].copy_from_slice(&GATEWAY);
        });
    }

    /// The server loop: poll the stack, serve the sockets, and when there is nothing to do,
    /// wait for the device (or poll until smoltcp's next timer, see the module docs).
    fn serve(mut self) -> ! {
        loop {
            let now = self.clock.now();
            let changed = self.iface.poll(now, &mut self.dev, &mut self.sockets);
            let served = self.serve_sockets(now);
            if served || changed == smoltcp::iface::PollResult::SocketStateChanged {
                continue;
            }
            if self.dev.rx.q.has_used() {
                continue;
            }
            match self.iface.poll_delay(self.clock.now(), &self.sockets) {
                Some(d) if d == Duration::ZERO => {}
                Some(d) => self.poll_until(self.clock.now() + d),
                None => self.wait_for_device(),
            }
        }
    }

    /// Blocks until the device interrupts, then acknowledges it (device, then line).
    fn wait_for_device(&mut self) {
        // A failed Wait (it cannot fail with the capability the setup made) only makes this a
        // poll.
        let _ = sys::wait(s(NTFN_SLOT));
        self.transport.ack_interrupt();
        let _ = sys::ack_irq(s(IRQ_SLOT));
    }

    /// Polls the receive ring until a frame arrives or `deadline` passes (no timed wait
    /// exists).
    fn poll_until(&mut self, deadline: Instant) {
        while !self.dev.rx.q.has_used() && self.clock.now() < deadline {
            sys::yield_now();
            compiler_fence(Ordering::SeqCst);
        }
    }

    /// Moves requests from every socket into its connection and the replies back; returns
    /// whether anything moved or a socket changed state.
    fn serve_sockets(&mut self, now: Instant) -> bool {
        let now_ms = now.total_millis() as u64;
        let mut any = false;
        let mut states = [0usize; 4];
        for c in self.clients.iter_mut().flatten() {
            let sock = self.sockets.get_mut::<tcp::Socket>(c.handle);
            use tcp::State as S;
            match sock.state() {
                S::Listen => states[0] += 1,
                S::SynReceived | S::SynSent | S::Established | S::CloseWait => states[1] += 1,
                S::FinWait1 | S::FinWait2 | S::Closing | S::LastAck => states[2] += 1,
                S::TimeWait => states[3] += 1,
                S::Closed => {}
            }
            if !sock.is_open() {
                // Closed (by either side, or reset): forget the client, listen again.
                c.conn = None;
                listen(sock);
                any = true;
                continue;
            }
            // Not connected yet, or closing on our side (FIN sent): nothing to serve.
            if !sock.is_active() || sock.state() == tcp::State::SynReceived || !sock.may_send() {
                continue;
            }
            let conn = c.conn.get_or_insert_with(|| {
                // SAFETY: the buffers are this client's alone (from the heap, for the rest of
                // the run) and the connection that used them before, if any, was dropped
                // (`c.conn = None`) before this one is made.
                let (input, output) = unsafe { (&mut *c.input, &mut *c.output) };
                Connection::new(input, output).expect("the buffers are above the minimum")
            });
            loop {
                let mut moved = false;
                if sock.can_recv() {
                    let taken = sock
                        .recv(|data| {
                            let n = conn.receive(data);
                            (n, n)
                        })
                        .unwrap_or(0);
                    moved |= taken > 0;
                }
                let progress = conn.process(&mut self.store, now_ms);
                if !conn.output().is_empty() && sock.can_send() {
                    let sent = sock.send_slice(conn.output()).unwrap_or(0);
                    conn.consume_output(sent);
                    moved |= sent > 0;
                }
                let drained = conn.output().is_empty();
                if drained && (progress == Progress::Close || !sock.may_recv()) {
                    // QUIT, a protocol error, or the client closed its side: close ours once
                    // the replies are out.
                    sock.close();
                    any = true;
                    break;
                }
                any |= moved;
                if !moved {
                    break;
                }
            }
        }
        for (counter, n) in SOCKET_STATES.iter().zip(states) {
            counter.store(n, Ordering::Relaxed);
        }
        any
    }
}
