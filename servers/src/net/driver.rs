//! The NIC driver on core 0 (see the module docs of [`super`]): it starts the board's network
//! device ([`Nic`], found by [`find`](crate::drivers::nic::find)(crate::drivers::nic::find)), copies every received
//! frame from its DMA buffer into the receive ring of the stack it is for
//! ([`demux`](super::demux)) and every frame the stacks put in their transmit rings into a
//! DMA buffer for the device. The moving of frames ([`Driver`]) is written once, over any
//! [`Nic`].

use core::sync::atomic::Ordering::Relaxed;

use frame_ring::{Consumer, Producer};

use super::demux::{classify, Dest};
use super::{Link, DMA_VA, MAX_FRAME, PORT, RING_SLOTS};
use crate::drivers::nic::{Found, Nic};
use crate::sys::{self, CapSlot};

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
    /// Starts the device found by [`find`](crate::drivers::nic::find) with its DMA pages at [`DMA_VA`] (physical
    /// address `phys`), and takes the driver's ends of `links` (stack `k`'s notification in
    /// `wake[k]`). Returns the driver and the device's MAC (`true`: the device's own).
    ///
    /// # Safety
    /// Nothing else produces into the links' receive rings or consumes from their transmit
    /// rings while the driver lives; the [`DMA_PAGES`](super::DMA_PAGES) pages at [`DMA_VA`] are RAM at
    /// physical `phys`, mapped writable, and used by nothing else.
    pub unsafe fn start(
        found: &Found,
        phys: u64,
        links: &'static [Link],
        wake: [CapSlot; abi::limits::MAX_CPUS],
    ) -> Result<(Driver, [u8; 6], bool), &'static str> {
        // SAFETY: the caller's promise about the DMA pages.
        let (nic, mac, own_mac) = unsafe { Nic::start(found, DMA_VA, phys)? };
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
