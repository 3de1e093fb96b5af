//! The i.MX6 ENET (the "FEC", Fast Ethernet Controller grown to gigabit) of `-M sabrelite`:
//! what [`Nic`](super::Nic) needs of it. The kernel offers its register block
//! ([`BASE`], 16 KiB) as the root's second device region on the Sabre Lite
//! (`hal-armv7`'s `Machine::user_devices`), and its MAC interrupt, SPI [`IRQ`] (GIC ID 150;
//! QEMU's `fsl-imx6` wires the model's first line there and its second, the 1588 timer's, to
//! SPI 119).
//!
//! # Descriptors
//! The driver uses the legacy 8-byte buffer descriptors ("FEC" layout: a 16-bit length, 16
//! bits of flags, a 32-bit buffer address, little-endian), not the enhanced 32-byte ones: the
//! enhanced layout is chosen by `ECR.EN1588`, which the driver leaves clear, and it would only
//! add timestamps and checksum offloads nobody here uses (QEMU's `imx.enet` takes the legacy
//! path, `imx_fec_receive`/`imx_fec_do_tx`, when `EN1588` is clear; so does U-Boot's
//! `fec_mxc` on the real chip). Each ring has [`RX_BUFFERS`] / [`TX_BUFFERS`] descriptors,
//! the last with the wrap bit, each pointing at a 2 KiB buffer of its own: receive
//! descriptors at the start of the first DMA page, transmit descriptors at its middle, and
//! the buffers from the third page on (the layout the virtio driver uses). `MRBR` is
//! [`RX_BUF_LEN`] and `RCR.MAX_FL` 1518, so every frame fits one buffer; a frame split over
//! several descriptors anyway (without `L`) is dropped, descriptor by descriptor.
//!
//! A received buffer's length includes the 4-byte FCS, which the driver cuts off; one with an
//! error flag (too long, not octet-aligned, CRC error, overrun, truncated) is dropped. A
//! frame to send is copied into the next free transmit buffer and its descriptor marked ready
//! (`R`), last in frame (`L`) and CRC-appended (`TC`); a write to `TDAR` makes the device
//! walk the ring, and the driver takes a descriptor back once the device has cleared its `R`.
//!
//! # Ordering (ARMv7)
//! The descriptors and buffers are in normal write-back memory, the registers in device
//! memory. Handing a descriptor to the device: the buffer (transmit) and the descriptor's
//! address word are written, then [`dma_barrier`] (`dsb sy`), then the first word (length
//! and flags, with `R`/`E`) in one 32-bit store, so the device never sees the ownership bit
//! before the rest; another `dsb sy` before the `TDAR`/`RDAR` store makes the descriptor
//! visible to the device before the register write that tells it to look. Taking one back:
//! the first word is read (ownership bit clear), then `dsb sy` before the buffer is read, so
//! the buffer's bytes are not read ahead of the ownership test. (A `dmb` would order the two
//! accesses for other cores; against a DMA master on the interconnect the driver uses `dsb`,
//! as `virtio` does.)
//!
//! QEMU's DMA is coherent with the CPU's caches. The real chip's ENET is not: on the board
//! the driver would also need the descriptors and buffers cleaned/invalidated by address
//! (cache maintenance is privileged on ARMv7, so a kernel call) or mapped non-cacheable
//! (`MapPage` maps RAM write-back only). Nor does it talk to the PHY (MDIO via `MMFR`): QEMU's
//! model moves frames whatever the PHY says; the board's KSZ9021 would need its
//! auto-negotiation result read and `ECR.SPEED`/`RCR` set to match.
//!
//! # Interrupts
//! `EIMR` unmasks only `RXF` (a frame received); transmit completions are found by polling
//! when a buffer is needed, as with virtio. `EIR` is write-1-to-clear: the acknowledgement
//! clears what it read, which drops the level-triggered line before the kernel unmasks it.
//! QEMU stops receiving after a frame when the next receive descriptor is not empty and
//! starts again only when `RDAR` is written, so `RDAR` is written after every batch of
//! buffers given back.

use super::PAGE;
use super::{BUF_SIZE, RX_BUFFERS, TX_BUFFERS};
use crate::drivers::virtio::dma_barrier;

/// Physical base of the ENET's registers.
pub const BASE: usize = 0x0218_8000;
/// Pages of its register block.
pub const PAGES: usize = 4;
/// Its MAC interrupt: SPI 118 (interrupt ID 150).
pub const IRQ: usize = 118;
/// Bytes the device may write into one receive buffer (`MRBR`: a multiple of 16).
pub const RX_BUF_LEN: u32 = 1536;
/// The longest frame accepted, FCS included (`RCR.MAX_FL`).
const MAX_FL: u32 = 1518;
/// Bytes of the FCS at the end of every received frame.
const FCS: usize = 4;
/// Offset of the transmit descriptors in the first DMA page.
const TX_DESC: usize = 2048;
/// Bytes of a legacy buffer descriptor.
const DESC: usize = 8;
const _: () = assert!(RX_BUFFERS * DESC <= TX_DESC && TX_DESC + TX_BUFFERS * DESC <= PAGE);
const _: () = assert!(RX_BUF_LEN as usize <= BUF_SIZE && RX_BUF_LEN % 16 == 0);
const _: () = assert!(MAX_FL <= RX_BUF_LEN);

/// Register offsets (i.MX6Q reference manual, chapter 23; QEMU's `imx_fec.h`).
mod reg {
    pub const EIR: usize = 0x004;
    pub const EIMR: usize = 0x008;
    pub const RDAR: usize = 0x010;
    pub const TDAR: usize = 0x014;
    pub const ECR: usize = 0x024;
    pub const RCR: usize = 0x084;
    pub const TCR: usize = 0x0C4;
    pub const PALR: usize = 0x0E4;
    pub const PAUR: usize = 0x0E8;
    pub const IAUR: usize = 0x118;
    pub const IALR: usize = 0x11C;
    pub const GAUR: usize = 0x120;
    pub const GALR: usize = 0x124;
    pub const TFWR: usize = 0x144;
    pub const RDSR: usize = 0x180;
    pub const TDSR: usize = 0x184;
    pub const MRBR: usize = 0x188;
}

/// `EIR`/`EIMR`: a frame was received.
const INT_RXF: u32 = 1 << 25;
/// `ECR`: reset (self-clearing), enable, descriptor byte swap (little-endian descriptors on
/// the i.MX6's ENET, as Linux sets it).
const ECR_RESET: u32 = 1 << 0;
const ECR_ETHEREN: u32 = 1 << 1;
const ECR_DBSWP: u32 = 1 << 8;
/// `RCR`: MII/RGMII interface (the Sabre Lite's PHY is on RGMII), the length limit above.
const RCR_MII_MODE: u32 = 1 << 2;
const RCR_RGMII_EN: u32 = 1 << 6;
/// `TCR`: full duplex.
const TCR_FDEN: u32 = 1 << 2;
/// `TFWR`: store and forward (transmit once the whole frame is in the FIFO).
const TFWR_STRFWD: u32 = 1 << 8;
/// `RDAR`/`TDAR`: "descriptors are ready" (any write counts).
const DAR_ACTIVE: u32 = 1 << 24;
/// `PAUR`'s low half: the type field of pause frames (0x8808).
const PAUR_TYPE: u32 = 0x8808;

/// Descriptor flags (the upper half of the first word).
mod bd {
    /// Receive: empty (the device owns it). Transmit: ready (the device owns it).
    pub const E: u16 = 1 << 15;
    pub const R: u16 = 1 << 15;
    /// The last descriptor of the ring.
    pub const W: u16 = 1 << 13;
    /// The last buffer of a frame.
    pub const L: u16 = 1 << 11;
    /// Transmit: append the CRC.
    pub const TC: u16 = 1 << 10;
    /// Receive errors: too long, not octet-aligned, CRC error, overrun, truncated.
    pub const RX_ERRORS: u16 = (1 << 5) | (1 << 4) | (1 << 2) | (1 << 1) | 1;
}

/// The first word of receive descriptor `i`, given to the device: empty, wrap on the last.
pub const fn rx_word(i: usize) -> u32 {
    let wrap = if i + 1 == RX_BUFFERS { bd::W } else { 0 };
    ((bd::E | wrap) as u32) << 16
}

/// The first word of transmit descriptor `i` holding a frame of `len` bytes, given to the
/// device: ready, last in frame, CRC appended, wrap on the last; `len` in the low half.
pub const fn tx_word(i: usize, len: usize) -> u32 {
    let wrap = if i + 1 == TX_BUFFERS { bd::W } else { 0 };
    ((bd::R | bd::L | bd::TC | wrap) as u32) << 16 | (len as u32 & 0xFFFF)
}

/// The first word of transmit descriptor `i` when the driver owns it.
const fn tx_idle_word(i: usize) -> u32 {
    let wrap = if i + 1 == TX_BUFFERS { bd::W } else { 0 };
    (wrap as u32) << 16
}

/// What a receive descriptor's first word says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rx {
    /// The device still owns it.
    Empty,
    /// A whole frame of this many bytes (the FCS cut off).
    Frame(usize),
    /// Something to drop: an error flag, part of a frame, or no frame at all.
    Drop,
}

/// Decodes a receive descriptor's first word.
pub const fn rx_status(word: u32) -> Rx {
    let flags = (word >> 16) as u16;
    let len = (word & 0xFFFF) as usize;
    if flags & bd::E != 0 {
        Rx::Empty
    } else if flags & bd::L == 0
        || flags & bd::RX_ERRORS != 0
        || len <= FCS + 14
        || len > RX_BUF_LEN as usize
    {
        Rx::Drop
    } else {
        Rx::Frame(len - FCS)
    }
}

/// The MAC address in `PALR` and `PAUR` (bytes 0..4 in `PALR`, most significant first, 4
/// and 5 in `PAUR`'s upper half), or `None` if it is all zeros, all ones or multicast (no
/// address set: QEMU sets the NIC's, U-Boot the board's).
pub fn mac_from_regs(palr: u32, paur: u32) -> Option<[u8; 6]> {
    let [a, b, c, d] = palr.to_be_bytes();
    let [e, f, _, _] = paur.to_be_bytes();
    let mac = [a, b, c, d, e, f];
    let usable = mac != [0; 6] && mac != [0xFF; 6] && a & 1 == 0;
    usable.then_some(mac)
}

/// `PALR` and `PAUR` for `mac`.
pub fn mac_to_regs(mac: [u8; 6]) -> (u32, u32) {
    let palr = u32::from_be_bytes([mac[0], mac[1], mac[2], mac[3]]);
    let paur = u32::from_be_bytes([mac[4], mac[5], 0, 0]) | PAUR_TYPE;
    (palr, paur)
}

/// A started ENET: its registers, rings and buffers.
pub struct Enet {
    /// Where the registers are mapped.
    regs: usize,
    /// Where the DMA pages are mapped: descriptors in the first, buffers from the third.
    dma: usize,
    /// The physical address of the first buffer (receive buffer 0).
    bufs_phys: u32,
    /// The receive descriptor the device fills next.
    rx_next: usize,
    /// The transmit descriptor the driver fills next, the oldest one the device may still
    /// own, and how many it owns.
    tx_next: usize,
    tx_clean: usize,
    tx_busy: usize,
}

impl Enet {
    /// Resets and starts the ENET whose registers are mapped at `regs`, with its DMA pages at
    /// `dma` (physical `phys`). Returns the NIC and its MAC (`true`: the device's own, as
    /// QEMU or the boot loader set it; else a made-up one).
    ///
    /// # Safety
    /// `regs .. regs + PAGES * PAGE` must be the ENET's registers mapped as device memory,
    /// and `dma` `super::DMA_PAGES` pages of RAM at physical `phys` mapped writable, both used
    /// by nothing else for the rest of the run.
    pub unsafe fn start(
        regs: usize,
        dma: usize,
        phys: u64,
    ) -> Result<(Enet, [u8; 6], bool), &'static str> {
        if phys + (super::DMA_PAGES * PAGE) as u64 > 1 << 32 {
            return Err("the DMA pages are above 4 GiB: the ENET addresses 32 bits");
        }
        let mut nic = Enet {
            regs,
            dma,
            bufs_phys: (phys + 2 * PAGE as u64) as u32,
            rx_next: 0,
            tx_next: 0,
            tx_clean: 0,
            tx_busy: 0,
        };
        // The address before the reset (the real chip's reset clears it; QEMU's restores
        // the NIC's).
        let found = mac_from_regs(nic.read(reg::PALR), nic.read(reg::PAUR));
        nic.write(reg::ECR, ECR_RESET);
        let mut spins = 0;
        while nic.read(reg::ECR) & ECR_RESET != 0 {
            spins += 1;
            if spins > 1_000_000 {
                return Err("the ENET did not come out of reset");
            }
        }
        let (own_mac, mac) = match found.or(mac_from_regs(nic.read(reg::PALR), nic.read(reg::PAUR)))
        {
            Some(mac) => (true, mac),
            None => (false, super::MADE_UP_MAC),
        };
        nic.write(reg::EIMR, 0);
        nic.write(reg::EIR, u32::MAX);
        let (palr, paur) = mac_to_regs(mac);
        nic.write(reg::PALR, palr);
        nic.write(reg::PAUR, paur);
        // No multicast or individual hash matches: unicast to the MAC and broadcast only.
        for r in [reg::IAUR, reg::IALR, reg::GAUR, reg::GALR] {
            nic.write(r, 0);
        }
        nic.write(reg::RCR, MAX_FL << 16 | RCR_MII_MODE | RCR_RGMII_EN);
        nic.write(reg::TCR, TCR_FDEN);
        nic.write(reg::TFWR, TFWR_STRFWD);
        nic.write(reg::MRBR, RX_BUF_LEN);
        for i in 0..RX_BUFFERS {
            nic.give_rx(i);
        }
        for i in 0..TX_BUFFERS {
            let at = nic.bufs_phys + ((RX_BUFFERS + i) * BUF_SIZE) as u32;
            // SAFETY: transmit descriptor `i` lies in the first DMA page (see TX_DESC), which
            // the caller gave the driver; the device does not own it (not enabled yet).
            unsafe {
                let d = nic.tx_desc(i);
                ((d + 4) as *mut u32).write_volatile(at);
                (d as *mut u32).write_volatile(tx_idle_word(i));
            }
        }
        dma_barrier();
        nic.write(reg::RDSR, phys as u32);
        nic.write(reg::TDSR, (phys + TX_DESC as u64) as u32);
        nic.write(reg::EIMR, INT_RXF);
        nic.write(reg::ECR, ECR_ETHEREN | ECR_DBSWP);
        nic.write(reg::RDAR, DAR_ACTIVE);
        Ok((nic, mac, own_mac))
    }

    fn read(&self, off: usize) -> u32 {
        // SAFETY: `start`'s contract: the register block is mapped as device memory at
        // `regs`; `off` is an aligned 32-bit register inside it.
        unsafe { ((self.regs + off) as *const u32).read_volatile() }
    }

    fn write(&self, off: usize, v: u32) {
        // SAFETY: as in `read`.
        unsafe { ((self.regs + off) as *mut u32).write_volatile(v) }
    }

    fn rx_desc(&self, i: usize) -> usize {
        self.dma + i * DESC
    }

    fn tx_desc(&self, i: usize) -> usize {
        self.dma + TX_DESC + i * DESC
    }

    /// Gives receive descriptor `i` (back) to the device with its buffer, receive buffer `i`
    /// (the device is told by a later `RDAR` write).
    fn give_rx(&mut self, i: usize) {
        let d = self.rx_desc(i);
        let buf = self.bufs_phys + (i * BUF_SIZE) as u32;
        // SAFETY: receive descriptor `i` lies in the first DMA page (RX_BUFFERS * DESC bytes
        // from its start), the driver's; the driver owns it (not empty) until the store of
        // the first word below hands it over.
        unsafe { ((d + 4) as *mut u32).write_volatile(buf) };
        // The buffer address (and the driver's reads of the buffer) before the ownership bit.
        dma_barrier();
        // SAFETY: as above; one 32-bit store gives length and flags together.
        unsafe { (d as *mut u32).write_volatile(rx_word(i)) };
    }

    /// The first word of receive descriptor `i`.
    fn rx_word_of(&self, i: usize) -> u32 {
        // SAFETY: receive descriptor `i` lies in the mapped first DMA page; the device writes
        // it, so it is read volatile, whole (one 32-bit load).
        unsafe { (self.rx_desc(i) as *const u32).read_volatile() }
    }

    /// Hands the received frames to `f` and gives each buffer back (telling the device once);
    /// returns whether any buffer came back. A frame `f` does not take (`false`) stays in its
    /// descriptor, first in line for the next call.
    pub fn receive(&mut self, mut f: impl FnMut(&[u8]) -> bool) -> bool {
        let mut received = false;
        loop {
            let i = self.rx_next;
            let status = rx_status(self.rx_word_of(i));
            if status == Rx::Empty {
                break;
            }
            // The ownership test before the buffer's bytes are read.
            dma_barrier();
            let at = self.dma + 2 * PAGE + i * BUF_SIZE;
            if let Rx::Frame(len) = status {
                // SAFETY: receive buffer `i` is mapped (DMA pages from the third on); the
                // device wrote `len` + 4 <= RX_BUF_LEN bytes into it before clearing `E`
                // (seen above, ordered by the barrier), and does not touch it again until
                // `give_rx` hands it back.
                if !f(unsafe { core::slice::from_raw_parts(at as *const u8, len) }) {
                    break;
                }
            }
            self.give_rx(i);
            self.rx_next = (i + 1) % RX_BUFFERS;
            received = true;
        }
        if received {
            dma_barrier();
            self.write(reg::RDAR, DAR_ACTIVE);
        }
        received
    }

    /// Whether the device filled a receive descriptor that [`Enet::receive`] has not taken.
    pub fn has_received(&self) -> bool {
        dma_barrier();
        rx_status(self.rx_word_of(self.rx_next)) != Rx::Empty
    }

    /// Takes back the transmit descriptors the device is done with; returns whether one is
    /// free.
    pub fn reclaim(&mut self) -> bool {
        dma_barrier();
        while self.tx_busy > 0 {
            // SAFETY: transmit descriptor `tx_clean` lies in the mapped first DMA page.
            let w = unsafe { (self.tx_desc(self.tx_clean) as *const u32).read_volatile() };
            if (w >> 16) as u16 & bd::R != 0 {
                break;
            }
            self.tx_clean = (self.tx_clean + 1) % TX_BUFFERS;
            self.tx_busy -= 1;
        }
        self.can_send()
    }

    /// Whether a transmit descriptor is free (as of the last [`Enet::reclaim`]).
    pub fn can_send(&self) -> bool {
        self.tx_busy < TX_BUFFERS
    }

    /// Queues `frame` in the next free transmit buffer (the caller checked
    /// [`Enet::can_send`]); the device is told by [`Enet::flush`], once per batch.
    pub fn send(&mut self, frame: &[u8]) {
        let i = self.tx_next;
        let len = frame.len().min(RX_BUF_LEN as usize - FCS);
        let at = self.dma + 2 * PAGE + (RX_BUFFERS + i) * BUF_SIZE;
        // SAFETY: transmit buffer `i` is mapped (after the receive buffers) and free: the
        // device cleared its descriptor's `R` (reclaim) or never had it; `len` fits.
        unsafe { core::slice::from_raw_parts_mut(at as *mut u8, len) }
            .copy_from_slice(&frame[..len]);
        // The frame's bytes before the ownership bit.
        dma_barrier();
        // SAFETY: transmit descriptor `i` lies in the mapped first DMA page and the driver
        // owns it; one 32-bit store gives length and flags (with `R`) together.
        unsafe { (self.tx_desc(i) as *mut u32).write_volatile(tx_word(i, len)) };
        self.tx_next = (i + 1) % TX_BUFFERS;
        self.tx_busy += 1;
    }

    /// Tells the device about the frames [`Enet::send`] queued.
    pub fn flush(&mut self) {
        dma_barrier();
        self.write(reg::TDAR, DAR_ACTIVE);
    }

    /// Acknowledges the events the device reports (write-1-to-clear), which drops its line.
    pub fn ack_interrupt(&mut self) {
        let events = self.read(reg::EIR);
        self.write(reg::EIR, events);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receive_descriptors_are_empty_and_the_last_wraps() {
        assert_eq!(rx_word(0), 0x8000_0000);
        assert_eq!(rx_word(RX_BUFFERS - 1), 0xA000_0000);
        assert_eq!(rx_status(rx_word(3)), Rx::Empty);
    }

    #[test]
    fn transmit_descriptors_carry_the_length_and_ready_last_crc() {
        assert_eq!(tx_word(0, 60), 0x8C00_0000 | 60);
        assert_eq!(tx_word(TX_BUFFERS - 1, 1514), 0xAC00_0000 | 1514);
        assert_eq!(tx_idle_word(TX_BUFFERS - 1), 0x2000_0000);
        assert_eq!(tx_idle_word(0), 0);
    }

    #[test]
    fn received_frames_lose_their_fcs_and_errors_are_dropped() {
        let done = |flags: u16, len: u32| u32::from(flags) << 16 | len;
        assert_eq!(rx_status(done(bd::L, 64)), Rx::Frame(60));
        assert_eq!(rx_status(done(bd::L | bd::W, 1518)), Rx::Frame(1514));
        // Not the last buffer of its frame, a CRC error, too long, a runt.
        assert_eq!(rx_status(done(0, 64)), Rx::Drop);
        assert_eq!(rx_status(done(bd::L | 1 << 2, 64)), Rx::Drop);
        assert_eq!(rx_status(done(bd::L | 1 << 5, 1600)), Rx::Drop);
        assert_eq!(rx_status(done(bd::L, 4)), Rx::Drop);
        assert_eq!(rx_status(done(bd::L, RX_BUF_LEN + 1)), Rx::Drop);
    }

    #[test]
    fn the_mac_address_round_trips_through_palr_and_paur() {
        let mac = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];
        let (palr, paur) = mac_to_regs(mac);
        assert_eq!((palr, paur), (0x5254_0012, 0x3456_8808));
        assert_eq!(mac_from_regs(palr, paur), Some(mac));
        // Reset values with no address, and a multicast one, are not used.
        assert_eq!(mac_from_regs(0, 0x8808), None);
        assert_eq!(mac_from_regs(u32::MAX, u32::MAX), None);
        assert_eq!(mac_from_regs(0x0100_0000, 0), None);
    }
}
