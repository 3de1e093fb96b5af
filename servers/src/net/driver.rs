//! The NIC driver on core 0 (see the module docs of [`super`]): it finds and starts the
//! board's network device, copies every received frame from its DMA buffer into the receive
//! ring of the stack it is for ([`demux`](super::demux)) and every frame the stacks put in
//! their transmit rings into a DMA buffer for the device.
//!
//! The moving of frames ([`Driver`]) is written once; what differs between devices is behind
//! [`Nic`], whose methods each device implements: [`VirtioNet`] (virtio-net on a virtio-mmio
//! transport: x86_64 `-M microvm`, ARM `-M virt`) and [`Enet`] (the i.MX6 ENET of
//! `-M sabrelite`). Which one is found is decided by the root's device regions ([`board`]).

use core::fmt;

use core::sync::atomic::Ordering::Relaxed;

use frame_ring::{Consumer, Producer};

use abi::PageAttrs;

use super::demux::{classify, Dest};
use super::enet::{self, Enet};
use super::virtio_net::{self, VirtioNet};
use super::{Link, DMA_VA, MAX_FRAME, PAGE, PORT, RING_SLOTS};
use crate::abi::slot;
use crate::sys::{self, slot as s, CapSlot};

/// Receive buffers (and descriptors), for either device.
pub const RX_BUFFERS: usize = 32;
/// Transmit buffers (and descriptors).
pub const TX_BUFFERS: usize = 32;
/// Bytes of a frame buffer: room for an Ethernet frame of up to 1514 bytes and the device's
/// header (virtio-net's 12 bytes) or trailer (the ENET's 4-byte FCS).
pub const BUF_SIZE: usize = 2048;
/// DMA pages: two pages of rings or descriptors, then the receive and the transmit buffers.
pub const DMA_PAGES: usize = 2 + (RX_BUFFERS + TX_BUFFERS) * BUF_SIZE / PAGE;
// A frame fits a buffer with virtio-net's header or the ENET's FCS.
const _: () = assert!(BUF_SIZE >= MAX_FRAME + 12 && BUF_SIZE >= MAX_FRAME + 4);
/// The address used when the device has none: locally administered, unicast.
pub const MADE_UP_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
/// Where the device registers are mapped.
const DEV_VA: usize = 0x1900_0000;

/// The network device the root's device regions announce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Board {
    /// Virtio-mmio transports in the first region.
    Virtio(crate::virtio::Window),
    /// The i.MX6 ENET, the root's device region `region` (0-based).
    Enet { region: usize },
}

/// The board whose root device regions start at the physical addresses `bases` (`None`: no
/// region in that slot): the ENET wherever its region is (sabrelite: after the spare UART),
/// else virtio-mmio transports if the first region is a known window.
pub fn board(bases: &[Option<usize>]) -> Option<Board> {
    if let Some(region) = bases.iter().position(|&b| b == Some(enet::BASE)) {
        return Some(Board::Enet { region });
    }
    bases
        .first()
        .copied()
        .flatten()
        .and_then(crate::virtio::window)
        .map(Board::Virtio)
}

/// The network device found on the board, its registers mapped, not yet started.
pub enum Found {
    Virtio(virtio_net::Found),
    /// The ENET, its registers mapped at the address held.
    Enet(usize),
}

impl Found {
    /// The device's interrupt line.
    pub fn irq(&self) -> usize {
        match self {
            Found::Virtio(f) => f.irq,
            Found::Enet(_) => enet::IRQ,
        }
    }
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::Virtio(v) => write!(f, "virtio-net on {} transport {}", v.board, v.index),
            Found::Enet(_) => write!(f, "i.MX6 ENET on sabrelite"),
        }
    }
}

/// Finds the board's network device and maps its registers (uncached).
pub fn find() -> Result<Found, &'static str> {
    let mut bases = [None; slot::ROOT_DEVICE_SLOTS];
    let mut pages = [0; slot::ROOT_DEVICE_SLOTS];
    for (i, (b, p)) in bases.iter_mut().zip(pages.iter_mut()).enumerate() {
        if let Ok((base, n, _)) = sys::mem_info(s(slot::ROOT_DEVICE + i)) {
            (*b, *p) = (Some(base), n);
        }
    }
    let board = board(&bases).ok_or(
        "no network device on this board: neither virtio-mmio transports (x86_64 microvm, \
         ARM virt) nor the i.MX6 ENET (sabrelite) among the root's device regions",
    )?;
    let region = match board {
        Board::Virtio(_) => 0,
        Board::Enet { region } => region,
    };
    let dev = s(slot::ROOT_DEVICE + region);
    for p in 0..pages[region] {
        let va = DEV_VA + p * PAGE;
        sys::map_page(
            s(slot::ROOT_ASPACE),
            dev,
            p,
            va,
            PageAttrs::WRITE | PageAttrs::DEVICE,
        )
        .map_err(|_| "mapping the device registers failed")?;
    }
    match board {
        Board::Virtio(w) => {
            // SAFETY: the window's pages were mapped at DEV_VA just above, device memory, for
            // the rest of the run.
            unsafe { virtio_net::find(w, DEV_VA, pages[region]) }.map(Found::Virtio)
        }
        Board::Enet { .. } if pages[region] < enet::PAGES => {
            Err("the ENET's device region is smaller than its 16 KiB of registers")
        }
        Board::Enet { .. } => Ok(Found::Enet(DEV_VA)),
    }
}

/// The device, as the driver uses it: each method is the device's own.
pub enum Nic {
    Virtio(VirtioNet),
    Enet(Enet),
}

impl Nic {
    /// Hands the received frames (Ethernet header on, no device header or FCS) to `f`, in
    /// order, and gives each buffer back to the device, which is told once at the end; returns
    /// whether any buffer came back. When `f` answers `false` the frame is not taken: it stays
    /// first in line for the next call, and this call stops.
    fn receive(&mut self, f: impl FnMut(&[u8]) -> bool) -> bool {
        match self {
            Nic::Virtio(n) => n.receive(f),
            Nic::Enet(n) => n.receive(f),
        }
    }

    /// Whether a received frame waits for [`Nic::receive`].
    fn has_received(&self) -> bool {
        match self {
            Nic::Virtio(n) => n.has_received(),
            Nic::Enet(n) => n.has_received(),
        }
    }

    /// Takes back the transmit buffers the device is done with; returns whether one is free.
    fn reclaim(&mut self) -> bool {
        match self {
            Nic::Virtio(n) => n.reclaim(),
            Nic::Enet(n) => n.reclaim(),
        }
    }

    /// Whether a transmit buffer is free (as of the last [`Nic::reclaim`]).
    fn can_send(&self) -> bool {
        match self {
            Nic::Virtio(n) => n.can_send(),
            Nic::Enet(n) => n.can_send(),
        }
    }

    /// Queues `frame` in a free transmit buffer (the caller checked [`Nic::can_send`]).
    fn send(&mut self, frame: &[u8]) {
        match self {
            Nic::Virtio(n) => n.send(frame),
            Nic::Enet(n) => n.send(frame),
        }
    }

    /// Tells the device about the frames [`Nic::send`] queued.
    fn flush(&mut self) {
        match self {
            Nic::Virtio(n) => n.flush(),
            Nic::Enet(n) => n.flush(),
        }
    }

    /// Acknowledges the device's interrupt (it deasserts its line).
    fn ack_interrupt(&mut self) {
        match self {
            Nic::Virtio(n) => n.ack_interrupt(),
            Nic::Enet(n) => n.ack_interrupt(),
        }
    }
}

/// The running driver: the device and the driver's ends of every stack's rings.
pub struct Driver {
    nic: Nic,
    links: &'static [Link],
    /// Per stack: the receive ring's producer and the transmit ring's consumer.
    to_stacks: heapless::Vec<Producer<'static, RING_SLOTS, MAX_FRAME>, { abi::limits::MAX_CPUS }>,
    from_stacks: heapless::Vec<Consumer<'static, RING_SLOTS, MAX_FRAME>, { abi::limits::MAX_CPUS }>,
    /// Per stack: the notification that wakes it (unused for stack 0, which is this thread).
    wake: [CapSlot; abi::limits::MAX_CPUS],
    /// The stack whose transmit ring is drained first next time (round robin).
    next_tx: usize,
}

impl Driver {
    /// Starts the device found by [`find`] with its DMA pages at [`DMA_VA`] (physical
    /// address `phys`), and takes the driver's ends of `links` (stack `k`'s notification in
    /// `wake[k]`). Returns the driver and the device's MAC (`true`: the device's own).
    ///
    /// # Safety
    /// Nothing else produces into the links' receive rings or consumes from their transmit
    /// rings while the driver lives; the [`DMA_PAGES`] pages at [`DMA_VA`] are RAM at
    /// physical `phys`, mapped writable, and used by nothing else.
    pub unsafe fn start(
        found: &Found,
        phys: u64,
        links: &'static [Link],
        wake: [CapSlot; abi::limits::MAX_CPUS],
    ) -> Result<(Driver, [u8; 6], bool), &'static str> {
        let (nic, mac, own_mac) = match found {
            Found::Virtio(f) => {
                // SAFETY: the caller's promise about the DMA pages.
                let (n, mac, own) = unsafe { VirtioNet::start(f, DMA_VA, phys)? };
                (Nic::Virtio(n), mac, own)
            }
            &Found::Enet(regs) => {
                // SAFETY: `find` mapped the ENET's registers at `regs` for the rest of the
                // run; the caller's promise about the DMA pages.
                let (n, mac, own) = unsafe { Enet::start(regs, DMA_VA, phys)? };
                (Nic::Enet(n), mac, own)
            }
        };
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
                nic,
                links,
                to_stacks,
                from_stacks,
                wake,
                next_tx: 0,
            },
            mac,
            own_mac,
        ))
    }

    /// Moves frames: received ones into the stacks' rings (waking the stacks that sleep), and
    /// the stacks' outgoing ones to the device. Returns whether anything moved.
    ///
    /// A frame whose ring is full stays in the device (the NIC keeps it for the next
    /// [`Nic::receive`]), and the frames behind it too, until the stack has taken some: nothing
    /// is dropped. The device then runs out of receive buffers and QEMU queues what arrives (its
    /// network backends hold packets while a device cannot receive), as a NIC's flow control
    /// would.
    pub fn pump(&mut self) -> bool {
        let n = self.links.len();
        let mut got = 0usize;
        let (links, to_stacks) = (self.links, &mut self.to_stacks);
        let received = self.nic.receive(|frame| {
            let dest = classify(frame, PORT, n);
            let full = match dest {
                Dest::Stack(k) => to_stacks[k].is_full(),
                Dest::All => to_stacks.iter_mut().any(|p| p.is_full()),
            };
            if full {
                let k = match dest {
                    Dest::Stack(k) => k,
                    Dest::All => 0,
                };
                let waits = &links[k].waits;
                waits.store(waits.load(Relaxed) + 1, Relaxed);
                return false;
            }
            match dest {
                Dest::Stack(k) => {
                    deliver(&mut to_stacks[k], &links[k], frame);
                    got |= 1 << k;
                }
                Dest::All => {
                    for (k, p) in to_stacks.iter_mut().enumerate() {
                        deliver(p, &links[k], frame);
                    }
                    got = (1 << n) - 1;
                }
            }
            true
        });
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
        self.nic.reclaim();
        let n = self.from_stacks.len();
        let mut sent = false;
        for j in 0..n {
            let k = (self.next_tx + j) % n;
            while self.nic.can_send() {
                let nic = &mut self.nic;
                if self.from_stacks[k].pop(|f| nic.send(f)).is_none() {
                    break;
                }
                sent = true;
            }
        }
        self.next_tx = (self.next_tx + 1) % n;
        if sent {
            self.nic.flush();
        }
        sent
    }

    /// Whether there is work: a received frame, or a frame a stack wants sent.
    pub fn pending(&mut self) -> bool {
        self.nic.has_received() || self.from_stacks.iter_mut().any(|c| !c.is_empty())
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
        if self.nic.reclaim() {
            self.nic.send(&f);
            self.nic.flush();
        }
    }

    /// After a wake-up with the interrupt's bit: acknowledges the device, then the line.
    pub fn ack_interrupt(&mut self, irq_handler: CapSlot) {
        self.nic.ack_interrupt();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_board_is_told_by_the_root_device_regions() {
        // microvm and virt: virtio-mmio transports in the first region.
        let microvm = board(&[Some(0xFEB0_0000), None]);
        assert!(matches!(microvm, Some(Board::Virtio(w)) if w.irq_base == 24));
        let virt = board(&[Some(0x0A00_0000), Some(0x0901_0000)]);
        assert!(matches!(virt, Some(Board::Virtio(w)) if w.irq_base == 16));
        // sabrelite: the spare UART first (UART2, or UART1 with the console on UART2), then
        // the ENET.
        for uart in [0x021E_8000, 0x0202_0000] {
            assert_eq!(
                board(&[Some(uart), Some(enet::BASE)]),
                Some(Board::Enet { region: 1 })
            );
        }
        // No known device: pc/q35 (no virtio-mmio), or nothing at all.
        assert_eq!(board(&[Some(0xFEC0_0000), None]), None);
        assert_eq!(board(&[None, None]), None);
        assert_eq!(board(&[]), None);
    }
}
