//! The virtio-net NIC of x86_64 `-M microvm` and ARM `-M virt` (QEMU `-device
//! virtio-net-device,netdev=...` on a virtio-mmio transport): what [`Nic`](super::Nic)
//! needs of it. The device is started with `VIRTIO_F_VERSION_1` and, if offered,
//! `VIRTIO_NET_F_MAC`, and nothing else: no offloads and no merged receive buffers, so every
//! frame is one buffer of at most 1514 bytes after the 12-byte `virtio_net_hdr`.
//!
//! Queue 0 receives, queue 1 transmits; each has [`QUEUE_ENTRIES`] entries, its rings in one
//! DMA page (`virtio::Queue`), and one 2 KiB buffer per entry. Ordering between the driver's
//! stores to the rings and buffers and the device is `virtio`'s (`virtio::dma_barrier`
//! before each notify and after each look at the used ring).

use super::PAGE;
use super::{BUF_SIZE, RX_BUFFERS, TX_BUFFERS};
use crate::drivers::virtio::{self, Queue, Transport, Window};

/// Entries of each virtqueue (one per buffer).
pub const QUEUE_ENTRIES: u16 = RX_BUFFERS as u16;
const _: () = assert!(RX_BUFFERS == TX_BUFFERS && RX_BUFFERS <= virtio::MAX_QUEUE_SIZE as usize);
/// Bytes of the `virtio_net_hdr` in front of every frame (virtio 1.x: `num_buffers` included).
const HDR: usize = 12;
/// Feature bit 5: the device has a MAC address in its configuration space.
const F_MAC: u64 = 1 << 5;

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

/// Finds the virtio-net device among the `window`'s transports, whose registers are mapped
/// at `va` (`pages` pages).
///
/// # Safety
/// `va .. va + pages * PAGE` must be the window's registers, mapped as device memory for the
/// rest of the run.
pub unsafe fn find(window: Window, va: usize, pages: usize) -> Result<Found, &'static str> {
    for index in 0..window.count.min(pages * PAGE / virtio::TRANSPORT_SIZE) {
        // SAFETY: the transport's registers lie in the pages mapped at `va` (the caller's
        // promise).
        let transport = unsafe { Transport::new(va + index * virtio::TRANSPORT_SIZE) };
        match transport.probe() {
            Ok(virtio::DEVICE_NET) => {
                return Ok(Found {
                    transport,
                    board: window.name,
                    index,
                    irq: window.irq_base + index,
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

/// A started virtio-net device: its transport, queues and buffers.
pub struct VirtioNet {
    transport: Transport,
    rx: Queue,
    /// Where the receive buffers are (virtual, physical); the transmit buffers follow.
    rx_va: usize,
    rx_phys: u64,
    tx: Queue,
    tx_va: usize,
    tx_phys: u64,
    /// Bit `i`: transmit buffer (and descriptor) `i` is free.
    free: u64,
    /// A used receive buffer (and length) that [`VirtioNet::receive`]'s caller did not take.
    held: Option<(u16, usize)>,
}

impl VirtioNet {
    /// Starts the device found by [`find`] with its DMA pages at `dma` (physical `phys`):
    /// queue 0's rings in the first page, queue 1's in the second, then the buffers.
    /// Returns the NIC and the device's MAC (`true`: the device's own).
    ///
    /// # Safety
    /// `dma` must be `super::DMA_PAGES` pages of RAM at physical `phys`, mapped writable and
    /// used by nothing else for the rest of the run.
    pub unsafe fn start(
        found: &Found,
        dma: usize,
        phys: u64,
    ) -> Result<(VirtioNet, [u8; 6], bool), &'static str> {
        let t = found.transport;
        let features = t
            .negotiate(F_MAC)
            .map_err(|_| "the virtio-net device refused VIRTIO_F_VERSION_1")?;
        let rx = t
            .setup_queue(0, QUEUE_ENTRIES, dma, phys)
            .map_err(|_| "the virtio-net device has no usable receive queue")?;
        let mut tx = t
            .setup_queue(1, QUEUE_ENTRIES, dma + PAGE, phys + PAGE as u64)
            .map_err(|_| "the virtio-net device has no usable transmit queue")?;
        // Transmit buffers are reclaimed when a buffer is needed: no interrupt for them.
        tx.suppress_interrupts();
        let own_mac = features & F_MAC != 0;
        let mac = if own_mac {
            core::array::from_fn(|i| t.config_byte(i))
        } else {
            super::MADE_UP_MAC
        };
        let bufs = dma + 2 * PAGE;
        let bufs_phys = phys + 2 * PAGE as u64;
        let tx_off = RX_BUFFERS * BUF_SIZE;
        let mut nic = VirtioNet {
            transport: t,
            rx,
            rx_va: bufs,
            rx_phys: bufs_phys,
            tx,
            tx_va: bufs + tx_off,
            tx_phys: bufs_phys + tx_off as u64,
            free: (1u64 << TX_BUFFERS) - 1,
            held: None,
        };
        for i in 0..RX_BUFFERS {
            nic.post(i as u16);
        }
        t.driver_ok();
        t.notify_queue(0);
        Ok((nic, mac, own_mac))
    }

    /// Gives receive buffer `i` (back) to the device.
    fn post(&mut self, i: u16) {
        let off = usize::from(i) * BUF_SIZE;
        self.rx
            .submit(i, self.rx_phys + off as u64, BUF_SIZE as u32, true);
    }

    /// Hands every received frame to `f` and gives its buffer back (telling the device once);
    /// returns whether any buffer came back.
    pub fn receive(&mut self, mut f: impl FnMut(&[u8]) -> bool) -> bool {
        let mut received = false;
        loop {
            let (id, len) = match self.held.take() {
                Some(h) => h,
                None => match self.rx.take_used() {
                    Some((id, len)) => (id as u16, len as usize),
                    None => break,
                },
            };
            if usize::from(id) >= RX_BUFFERS {
                continue;
            }
            // Anything no frame could be is dropped; the buffer goes back either way.
            if len > HDR && len <= BUF_SIZE {
                let at = self.rx_va + usize::from(id) * BUF_SIZE + HDR;
                // SAFETY: receive buffer `id` is mapped, `len` <= BUF_SIZE bytes were written
                // by the device (the used ring's barrier in `take_used` orders them before
                // this read), and the device does not touch it until `post` gives it back.
                let frame = unsafe { core::slice::from_raw_parts(at as *const u8, len - HDR) };
                if !f(frame) {
                    // Not taken: first in line next time, its buffer still ours.
                    self.held = Some((id, len));
                    break;
                }
            }
            self.post(id);
            received = true;
        }
        if received {
            self.transport.notify_queue(0);
        }
        received
    }

    /// Whether the device returned a receive buffer that [`VirtioNet::receive`] has not taken.
    pub fn has_received(&self) -> bool {
        self.held.is_some() || self.rx.has_used()
    }

    /// Takes back the buffers the device has sent; returns whether one is free.
    pub fn reclaim(&mut self) -> bool {
        while let Some((id, _)) = self.tx.take_used() {
            if (id as usize) < TX_BUFFERS {
                self.free |= 1 << id;
            }
        }
        self.free != 0
    }

    /// Whether a transmit buffer is free (as of the last [`VirtioNet::reclaim`]).
    pub fn can_send(&self) -> bool {
        self.free != 0
    }

    /// Queues `frame` in a free buffer (the caller checked [`VirtioNet::can_send`]); the
    /// device is told by [`VirtioNet::flush`], once per batch.
    pub fn send(&mut self, frame: &[u8]) {
        let i = self.free.trailing_zeros() as usize;
        self.free &= !(1 << i);
        let len = frame.len().min(BUF_SIZE - HDR);
        // SAFETY: transmit buffer `i` is mapped and free (the device is done with it); the
        // header and the frame fit its BUF_SIZE bytes.
        let buf = unsafe {
            core::slice::from_raw_parts_mut((self.tx_va + i * BUF_SIZE) as *mut u8, HDR + len)
        };
        buf[..HDR].fill(0);
        buf[HDR..].copy_from_slice(&frame[..len]);
        self.tx.submit(
            i as u16,
            self.tx_phys + (i * BUF_SIZE) as u64,
            (HDR + len) as u32,
            false,
        );
    }

    /// Tells the device about the frames [`VirtioNet::send`] queued.
    pub fn flush(&mut self) {
        self.transport.notify_queue(1);
    }

    /// Reads and acknowledges the device's interrupt status (it deasserts its line).
    pub fn ack_interrupt(&mut self) {
        self.transport.ack_interrupt();
    }
}
