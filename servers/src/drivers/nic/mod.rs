//! The network devices the network server drives (`crate::net`), behind one interface: which
//! device the board has ([`board`], decided by the root's device regions), finding it and
//! mapping its registers ([`find`]), and [`Nic`], whose methods each device implements:
//! [`VirtioNet`] (virtio-net on a virtio-mmio transport: x86_64 `-M microvm`, ARM `-M virt`)
//! and [`Enet`] (the i.MX6 ENET of `-M sabrelite`). Both keep [`RX_BUFFERS`] receive and
//! [`TX_BUFFERS`] transmit buffers of [`BUF_SIZE`] bytes in [`DMA_PAGES`] pages of RAM the
//! caller provides.

mod enet;
mod virtio_net;

use core::fmt;

use abi::PageAttrs;

pub use enet::Enet;
pub use virtio_net::VirtioNet;

use crate::image::slot;
use crate::sys::{self, slot as s};

/// Bytes of a page.
const PAGE: usize = abi::limits::PAGE_SIZE;
/// The largest Ethernet frame without the FCS (1500-byte MTU).
pub const MAX_FRAME: usize = 1514;
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
    Virtio(crate::drivers::virtio::Window),
    /// The i.MX6 ENET.
    Enet {
        /// Which of the root's device regions holds it (0-based).
        region: usize,
    },
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
        .and_then(crate::drivers::virtio::window)
        .map(Board::Virtio)
}

/// The network device found on the board, its registers mapped, not yet started.
pub enum Found {
    /// A virtio-net device on a virtio-mmio transport.
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
    /// Virtio-net.
    Virtio(VirtioNet),
    /// The i.MX6 ENET.
    Enet(Enet),
}

impl Nic {
    /// Starts the device `found` with its [`DMA_PAGES`] DMA pages at `dma` (physical address
    /// `phys`). Returns the device and its MAC (`true`: the device's own, else
    /// [`MADE_UP_MAC`]).
    ///
    /// # Safety
    /// The [`DMA_PAGES`] pages at `dma` are RAM at physical `phys`, mapped writable, and used
    /// by nothing else while the device runs.
    pub unsafe fn start(
        found: &Found,
        dma: usize,
        phys: u64,
    ) -> Result<(Nic, [u8; 6], bool), &'static str> {
        Ok(match found {
            Found::Virtio(f) => {
                // SAFETY: the caller's promise about the DMA pages.
                let (n, mac, own) = unsafe { VirtioNet::start(f, dma, phys)? };
                (Nic::Virtio(n), mac, own)
            }
            &Found::Enet(regs) => {
                // SAFETY: `find` mapped the ENET's registers at `regs` for the rest of the
                // run; the caller's promise about the DMA pages.
                let (n, mac, own) = unsafe { Enet::start(regs, dma, phys)? };
                (Nic::Enet(n), mac, own)
            }
        })
    }

    /// Hands the received frames (Ethernet header on, no device header or FCS) to `f`, in
    /// order, and gives each buffer back to the device, which is told once at the end; returns
    /// whether any buffer came back. When `f` answers `false` the frame is not taken: it stays
    /// first in line for the next call, and this call stops.
    pub fn receive(&mut self, f: impl FnMut(&[u8]) -> bool) -> bool {
        match self {
            Nic::Virtio(n) => n.receive(f),
            Nic::Enet(n) => n.receive(f),
        }
    }

    /// Whether a received frame waits for [`Nic::receive`].
    pub fn has_received(&self) -> bool {
        match self {
            Nic::Virtio(n) => n.has_received(),
            Nic::Enet(n) => n.has_received(),
        }
    }

    /// Takes back the transmit buffers the device is done with; returns whether one is free.
    pub fn reclaim(&mut self) -> bool {
        match self {
            Nic::Virtio(n) => n.reclaim(),
            Nic::Enet(n) => n.reclaim(),
        }
    }

    /// Whether a transmit buffer is free (as of the last [`Nic::reclaim`]).
    pub fn can_send(&self) -> bool {
        match self {
            Nic::Virtio(n) => n.can_send(),
            Nic::Enet(n) => n.can_send(),
        }
    }

    /// Queues `frame` in a free transmit buffer (the caller checked [`Nic::can_send`]).
    pub fn send(&mut self, frame: &[u8]) {
        match self {
            Nic::Virtio(n) => n.send(frame),
            Nic::Enet(n) => n.send(frame),
        }
    }

    /// Tells the device about the frames [`Nic::send`] queued.
    pub fn flush(&mut self) {
        match self {
            Nic::Virtio(n) => n.flush(),
            Nic::Enet(n) => n.flush(),
        }
    }

    /// Acknowledges the device's interrupt (it deasserts its line).
    pub fn ack_interrupt(&mut self) {
        match self {
            Nic::Virtio(n) => n.ack_interrupt(),
            Nic::Enet(n) => n.ack_interrupt(),
        }
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
