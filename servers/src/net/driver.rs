//! The virtio-net driver on core 0 (see the module docs of [`super`]): it finds and starts
//! the device, copies every received frame from its DMA buffer into the receive ring of the
//! stack it is for ([`demux`](super::demux)) and every frame the stacks put in their transmit
//! rings into a DMA buffer for the device.

use core::sync::atomic::Ordering::Relaxed;

use frame_ring::{Consumer, Producer};

use abi::PageAttrs;

use super::demux::{classify, Dest};
use super::{Link, DMA_VA, MAX_FRAME, PAGE, PORT, RING_SLOTS};
use crate::abi::slot;
use crate::sys::{self, slot as s, CapSlot};
use crate::virtio::{self, Queue, Transport};

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
/// DMA pages: the two queues' rings, then the receive and the transmit buffers.
pub const DMA_PAGES: usize = 2 + (RX_BUFFERS + TX_BUFFERS) * BUF_SIZE / PAGE;
/// Feature bit 5: the device has a MAC address in its configuration space.
const F_MAC: u64 = 1 << 5;
/// Where the device registers are mapped.
const DEV_VA: usize = 0x1900_0000;

/// The board's virtio-mmio window: its name, transports and first transport's interrupt line
/// (the layouts of `devtest`).
fn window(base: usize) -> Option<(&'static str, usize, usize)> {
    match base {
        0xFEB0_0000 => Some(("x86_64 microvm", 24, 24)),
        0x0A00_0000 => Some(("ARM virt", 32, 16)),
        _ => None,
    }
}

/// The virtio-net device found on the board, not yet started.
pub struct Found {
    /// Its transport.
    pub transport: Transport,
    /// The board, for the console.
    pub board: &'static str,
    /// The transport's index.
    pub index: usize,
    /// Its interrupt line.
    pub irq: usize,
}

/// Maps the board's virtio-mmio transports (uncached) and finds the virtio-net device.
pub fn find() -> Result<Found, &'static str> {
    let dev = s(slot::ROOT_DEVICE);
    let aspace = s(slot::ROOT_ASPACE);
    let (base, pages, _) = sys::mem_info(dev).map_err(|_| "no device region")?;
    let (board, count, irq_base) = window(base).ok_or("no virtio-mmio transports on this board")?;
    for p in 0..pages {
        let va = DEV_VA + p * PAGE;
        sys::map_page(aspace, dev, p, va, PageAttrs::WRITE | PageAttrs::DEVICE)
            .map_err(|_| "mapping the device registers failed")?;
    }
    for index in 0..count.min(pages * PAGE / virtio::TRANSPORT_SIZE) {
        // SAFETY: the transport's registers lie in the pages mapped just above.
        let transport = unsafe { Transport::new(DEV_VA + index * virtio::TRANSPORT_SIZE) };
        match transport.probe() {
            Ok(virtio::DEVICE_NET) => {
                return Ok(Found {
                    transport,
                    board,
                    index,
                    irq: irq_base + index,
                })
            }
            Err(virtio::VirtioError::Legacy) => {
                return Err("legacy virtio-mmio transport (version 1): start QEMU with \
                            -global virtio-mmio.force-legacy=false");
            }
            _ => {}
        }
    }
    Err(
        "no virtio-net device on the virtio-mmio transports (QEMU needs \
         -device virtio-net-device,netdev=...)",
    )
}

struct RxSide {
    q: Queue,
    va: usize,
    phys: u64,
}

struct TxSide {
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

    /// Queues `frame` in a free buffer (the caller checked there is one; the device is told
    /// later, once per batch).
    fn send(&mut self, frame: &[u8]) {
        let i = self.free.trailing_zeros() as usize;
        self.free &= !(1 << i);
        let len = frame.len().min(BUF_SIZE - HDR);
        // SAFETY: transmit buffer `i` is mapped and free (the device is done with it); the
        // header and the frame fit its BUF_SIZE bytes.
        let buf = unsafe {
            core::slice::from_raw_parts_mut((self.va + i * BUF_SIZE) as *mut u8, HDR + len)
        };
        buf[..HDR].fill(0);
        buf[HDR..].copy_from_slice(&frame[..len]);
        self.q.submit(
            i as u16,
            self.phys + (i * BUF_SIZE) as u64,
            (HDR + len) as u32,
            false,
        );
    }
}

/// The running driver: the device's queues and the driver's ends of every stack's rings.
pub struct Driver {
    transport: Transport,
    rx: RxSide,
    tx: TxSide,
    links: &'static [Link],
    /// Per stack: the receive ring's producer and the transmit ring's consumer.
    to_stacks: heapless::Vec<Producer<'static, RING_SLOTS, MAX_FRAME>, { abi::limits::MAX_CPUS }>,
    from_stacks: heapless::Vec<Consumer<'static, RING_SLOTS, MAX_FRAME>, { abi::limits::MAX_CPUS }>,
    /// Per stack: the notification that wakes it (unused for stack 0, which is this thread).
    wake: [CapSlot; abi::limits::MAX_CPUS],
    /// The stack whose transmit ring is drained first next time (round robin).
    next_tx: usize,
    /// A received frame (its buffer and length) whose ring was full: delivered first next time.
    held: Option<(u16, usize)>,
}

impl Driver {
    /// Starts the device found by [`find`] with its DMA pages at [`DMA_VA`] (physical
    /// address `phys`), and takes the driver's ends of `links` (stack `k`'s notification in
    /// `wake[k]`). Returns the driver and the device's MAC (`true`: the device's own).
    ///
    /// # Safety
    /// Nothing else produces into the links' receive rings or consumes from their transmit
    /// rings while the driver lives.
    pub unsafe fn start(
        found: &Found,
        phys: u64,
        links: &'static [Link],
        wake: [CapSlot; abi::limits::MAX_CPUS],
    ) -> Result<(Driver, [u8; 6], bool), &'static str> {
        let t = found.transport;
        let features = t
            .negotiate(F_MAC)
            .map_err(|_| "the virtio-net device refused VIRTIO_F_VERSION_1")?;
        let rxq = t
            .setup_queue(0, QUEUE_ENTRIES, DMA_VA, phys)
            .map_err(|_| "the virtio-net device has no usable receive queue")?;
        let mut txq = t
            .setup_queue(1, QUEUE_ENTRIES, DMA_VA + PAGE, phys + PAGE as u64)
            .map_err(|_| "the virtio-net device has no usable transmit queue")?;
        // Transmit buffers are reclaimed when a buffer is needed: no interrupt for them.
        txq.suppress_interrupts();
        let own_mac = features & F_MAC != 0;
        let mac = if own_mac {
            core::array::from_fn(|i| t.config_byte(i))
        } else {
            // Locally administered, unicast.
            [0x02, 0x00, 0x00, 0x00, 0x00, 0x01]
        };
        let bufs = DMA_VA + 2 * PAGE;
        let bufs_phys = phys + 2 * PAGE as u64;
        let tx_off = RX_BUFFERS * BUF_SIZE;
        let mut rx = RxSide {
            q: rxq,
            va: bufs,
            phys: bufs_phys,
        };
        for i in 0..RX_BUFFERS {
            rx.post(i as u16);
        }
        let tx = TxSide {
            q: txq,
            va: bufs + tx_off,
            phys: bufs_phys + tx_off as u64,
            free: (1u64 << TX_BUFFERS) - 1,
        };
        t.driver_ok();
        t.notify_queue(0);
        let mut to_stacks = heapless::Vec::new();
        let mut from_stacks = heapless::Vec::new();
        for link in links {
            // SAFETY: the caller's promise: the driver is the rings' only producer (receive)
            // and only consumer (transmit).
            let (p, c) = unsafe { (link.rx.producer(), link.tx.consumer()) };
            to_stacks.push(p).map_err(|_| "more stacks than cores")?;
            from_stacks.push(c).map_err(|_| "more stacks than cores")?;
        }
        Ok((
            Driver {
                transport: t,
                rx,
                tx,
                links,
                to_stacks,
                from_stacks,
                wake,
                next_tx: 0,
                held: None,
            },
            mac,
            own_mac,
        ))
    }

    /// Moves frames: received ones into the stacks' rings (waking the stacks that sleep), and
    /// the stacks' outgoing ones to the device. Returns whether anything moved.
    ///
    /// A frame whose ring is full stays with the driver ([`Driver::held`]), and the frames
    /// behind it stay in the device, until the stack has taken some: nothing is dropped. The
    /// device then runs out of receive buffers and QEMU queues what arrives (its network
    /// backends hold packets while a device cannot receive), as a NIC's flow control would.
    pub fn pump(&mut self) -> bool {
        let n = self.links.len();
        let mut got = 0usize;
        let mut received = false;
        loop {
            let (id, len) = match self.held.take() {
                Some(h) => h,
                None => match self.rx.q.take_used() {
                    Some((id, len)) => (id as u16, len as usize),
                    None => break,
                },
            };
            if usize::from(id) >= RX_BUFFERS {
                continue;
            }
            // Anything no frame could be is dropped; the buffer goes back either way.
            if len > HDR && len <= BUF_SIZE {
                let at = self.rx.va + usize::from(id) * BUF_SIZE + HDR;
                // SAFETY: receive buffer `id` is mapped, `len` <= BUF_SIZE bytes were written
                // by the device (the used ring's barrier in `take_used` orders them before
                // this read), and the device does not touch it until `post` gives it back.
                let frame = unsafe { core::slice::from_raw_parts(at as *const u8, len - HDR) };
                let dest = classify(frame, PORT, n);
                let full = match dest {
                    Dest::Stack(k) => self.to_stacks[k].is_full(),
                    Dest::All => self.to_stacks.iter_mut().any(|p| p.is_full()),
                };
                if full {
                    let k = match dest {
                        Dest::Stack(k) => k,
                        Dest::All => 0,
                    };
                    let waits = &self.links[k].waits;
                    waits.store(waits.load(Relaxed) + 1, Relaxed);
                    self.held = Some((id, len));
                    break;
                }
                match dest {
                    Dest::Stack(k) => {
                        deliver(&mut self.to_stacks[k], &self.links[k], frame);
                        got |= 1 << k;
                    }
                    Dest::All => {
                        for (k, p) in self.to_stacks.iter_mut().enumerate() {
                            deliver(p, &self.links[k], frame);
                        }
                        got = (1 << n) - 1;
                    }
                }
            }
            self.rx.post(id);
            received = true;
        }
        if received {
            self.transport.notify_queue(0);
        }
        // Stack 0 is this thread: it looks at its ring next, without a wake-up.
        for k in 1..n {
            if got & 1 << k != 0 && self.links[k].bell.needs_wake() {
                // Cannot fail with the capability the setup made; a failure would leave the
                // stack to its next poll.
                let _ = sys::signal(self.wake[k]);
            }
        }
        self.transmit() || received
    }

    /// The stacks' outgoing frames to the device, as many as it has buffers for, taking the
    /// rings in turn.
    fn transmit(&mut self) -> bool {
        self.tx.reclaim();
        let n = self.from_stacks.len();
        let mut sent = false;
        for j in 0..n {
            let k = (self.next_tx + j) % n;
            while self.tx.free != 0 {
                let tx = &mut self.tx;
                if self.from_stacks[k].pop(|f| tx.send(f)).is_none() {
                    break;
                }
                sent = true;
            }
        }
        self.next_tx = (self.next_tx + 1) % n;
        if sent {
            self.transport.notify_queue(1);
        }
        sent
    }

    /// Whether there is work: a received frame, or a frame a stack wants sent.
    pub fn pending(&mut self) -> bool {
        self.held.is_some()
            || self.rx.q.has_used()
            || self.from_stacks.iter_mut().any(|c| !c.is_empty())
    }

    /// Sends one ARP request for the gateway, so that QEMU's user network learns the guest's
    /// MAC address before the first forwarded connection arrives (it would otherwise ask, and
    /// hold the connection's first segment back until it has the answer).
    pub fn announce(&mut self, mac: [u8; 6], address: [u8; 4], gateway: [u8; 4]) {
        let mut f = [0u8; 42];
        f[0..6].fill(0xFF);
        f[6..12].copy_from_slice(&mac);
        f[12..14].copy_from_slice(&[0x08, 0x06]);
        // Ethernet, IPv4, 6-byte and 4-byte addresses, request.
        f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
        f[22..28].copy_from_slice(&mac);
        f[28..32].copy_from_slice(&address);
        f[38..42].copy_from_slice(&gateway);
        self.tx.reclaim();
        if self.tx.free != 0 {
            self.tx.send(&f);
            self.transport.notify_queue(1);
        }
    }

    /// After a wake-up with the interrupt's bit: acknowledges the device, then the line.
    pub fn ack_interrupt(&mut self, irq_handler: CapSlot) {
        self.transport.ack_interrupt();
        let _ = sys::ack_irq(irq_handler);
    }
}

/// Copies `frame` into a stack's receive ring (the caller checked it has room) and counts it.
/// The driver is the counter's only writer.
fn deliver(p: &mut Producer<'static, RING_SLOTS, MAX_FRAME>, link: &Link, frame: &[u8]) {
    let pushed = p.push(|slot| {
        let len = frame.len().min(MAX_FRAME);
        slot[..len].copy_from_slice(&frame[..len]);
        (len, ())
    });
    if pushed.is_some() {
        link.delivered
            .store(link.delivered.load(Relaxed) + 1, Relaxed);
    }
}
