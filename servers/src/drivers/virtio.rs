//! A user-level virtio-mmio transport (virtio 1.x "modern" register layout, version 2) with
//! split virtqueues: what a user driver needs to run a virtio device with its registers and DMA
//! pages mapped into its address space. Used by the device-interrupt test (virtio-rng, one
//! queue, [`Transport::init`]) and by the network server's virtio-net driver (`crate::net`: two
//! queues set up one by one with [`Transport::negotiate`], [`Transport::setup_queue`] and
//! [`Transport::driver_ok`]).
//!
//! Only version 2 is driven: QEMU's virtio-mmio transports present the legacy version 1 unless
//! started with `-global virtio-mmio.force-legacy=false` (which `cargo xtask qemu` passes); a
//! legacy transport is reported, not half-driven.
//!
//! Each queue's rings live in one 4 KiB DMA page the driver owns (descriptor table at 0,
//! available ring at 1 KiB, used ring at 2 KiB; up to [`MAX_QUEUE_SIZE`] entries fit); the
//! device-interrupt test also keeps its buffer there, from 3 KiB on. The device reads and
//! writes the rings and buffers by physical address (the pages' `MemInfo` base), so the driver
//! orders its plain stores to them before the MMIO store that notifies the device with
//! [`dma_barrier`].

use core::sync::atomic::{fence, Ordering};

/// "virt" in little-endian ASCII: every virtio-mmio transport starts with it.
pub const MAGIC: u32 = 0x7472_6976;
/// Bytes of register space per transport.
pub const TRANSPORT_SIZE: usize = 0x200;

/// A board's virtio-mmio window (the device test's and the network driver's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The board, for the console.
    pub name: &'static str,
    /// Transports in the window.
    pub count: usize,
    /// The interrupt line of transport 0; transport `i` raises `irq_base + i`.
    pub irq_base: usize,
}

/// The board's virtio-mmio window, by the physical base of the device region that holds it:
/// x86_64 `-M microvm` (24 transports, GSI 24..) and ARM `-M virt` (32, SPI 16..).
pub fn window(base: usize) -> Option<Window> {
    let (name, count, irq_base) = match base {
        0xFEB0_0000 => ("x86_64 microvm", 24, 24),
        0x0A00_0000 => ("ARM virt", 32, 16),
        _ => return None,
    };
    Some(Window {
        name,
        count,
        irq_base,
    })
}
/// Device ID of the entropy source (virtio-rng).
pub const DEVICE_RNG: u32 = 4;
/// Device ID of the network card.
pub const DEVICE_NET: u32 = 1;

/// Register offsets (virtio 1.2, section 4.2.2).
mod reg {
    pub const MAGIC: usize = 0x000;
    pub const VERSION: usize = 0x004;
    pub const DEVICE_ID: usize = 0x008;
    pub const DEVICE_FEATURES: usize = 0x010;
    pub const DEVICE_FEATURES_SEL: usize = 0x014;
    pub const DRIVER_FEATURES: usize = 0x020;
    pub const DRIVER_FEATURES_SEL: usize = 0x024;
    pub const QUEUE_SEL: usize = 0x030;
    pub const QUEUE_NUM_MAX: usize = 0x034;
    pub const QUEUE_NUM: usize = 0x038;
    pub const QUEUE_READY: usize = 0x044;
    pub const QUEUE_NOTIFY: usize = 0x050;
    pub const INTERRUPT_STATUS: usize = 0x060;
    pub const INTERRUPT_ACK: usize = 0x064;
    pub const STATUS: usize = 0x070;
    pub const QUEUE_DESC: usize = 0x080;
    pub const QUEUE_DRIVER: usize = 0x090;
    pub const QUEUE_DEVICE: usize = 0x0A0;
}

/// Device status bits.
mod status {
    pub const ACKNOWLEDGE: u32 = 1;
    pub const DRIVER: u32 = 2;
    pub const DRIVER_OK: u32 = 4;
    pub const FEATURES_OK: u32 = 8;
}

/// Feature bit 32: the device follows virtio 1.x (required of a modern driver).
pub const F_VERSION_1: u64 = 1 << 32;
/// Descriptor flag: the device writes this buffer.
const DESC_WRITE: u16 = 2;
/// Available-ring flag: the driver wants no interrupt when the device uses a buffer.
const AVAIL_NO_INTERRUPT: u16 = 1;
/// Entries of the device-interrupt test's queue (a power of two; the rings fit their 1 KiB
/// areas).
pub const QUEUE_SIZE: u16 = 8;
/// Most entries a queue can have in its one-page layout (the descriptor table, 16 bytes an
/// entry, must fit below the available ring at 1 KiB).
pub const MAX_QUEUE_SIZE: u16 = 64;
/// Offset of the device-specific configuration space in the register window.
const CONFIG: usize = 0x100;
/// Offsets inside the DMA page.
const AVAIL: usize = 1024;
const USED: usize = 2048;
/// First byte of the buffer area inside the DMA page.
pub const BUFFERS: usize = 3072;

/// Orders the driver's stores to DMA memory before its next MMIO store (the notify), and the
/// device's writes seen through the interrupt before the driver's following loads. x86: a full
/// fence (stores are not reordered with stores to uncached memory, but the fence also keeps the
/// compiler honest). ARMv7: `dsb sy`, since a `dmb ish` only orders against the inner-shareable
/// domain, not a device behind the interconnect.
pub fn dma_barrier() {
    fence(Ordering::SeqCst);
    #[cfg(target_arch = "arm")]
    // SAFETY: a barrier instruction; no memory or register effects visible to Rust.
    unsafe {
        core::arch::asm!("dsb sy", options(nostack, preserves_flags))
    };
}

/// Why a transport cannot be driven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VirtioError {
    /// No virtio magic at that address.
    NoDevice,
    /// A legacy (version 1) transport: QEMU needs `-global virtio-mmio.force-legacy=false`.
    Legacy,
    /// The device refused the features (no `VIRTIO_F_VERSION_1`).
    Features,
    /// The device offers no such queue, or one shorter than asked for.
    Queue,
}

/// A transport's registers, mapped at `base` in the caller's address space.
#[derive(Clone, Copy, Debug)]
pub struct Transport {
    base: usize,
}

impl Transport {
    /// The transport whose registers are mapped at `base`.
    ///
    /// # Safety
    /// `base .. base + TRANSPORT_SIZE` must be mapped as device memory for as long as the
    /// transport is used.
    pub unsafe fn new(base: usize) -> Self {
        Self { base }
    }

    fn read(&self, off: usize) -> u32 {
        // SAFETY: `new`'s contract: the register page is mapped; aligned 32-bit register.
        unsafe { ((self.base + off) as *const u32).read_volatile() }
    }

    fn write(&self, off: usize, v: u32) {
        // SAFETY: as in `read`.
        unsafe { ((self.base + off) as *mut u32).write_volatile(v) }
    }

    fn write64(&self, off: usize, v: u64) {
        self.write(off, v as u32);
        self.write(off + 4, (v >> 32) as u32);
    }

    /// The device ID (0: no device behind this transport), or why it cannot be used.
    pub fn probe(&self) -> Result<u32, VirtioError> {
        if self.read(reg::MAGIC) != MAGIC {
            return Err(VirtioError::NoDevice);
        }
        if self.read(reg::VERSION) != 2 {
            return Err(VirtioError::Legacy);
        }
        Ok(self.read(reg::DEVICE_ID))
    }

    /// Resets the device, negotiates `VIRTIO_F_VERSION_1` only and sets up queue 0 in the DMA
    /// page at virtual `page` / physical `phys`; the device is live when it returns.
    pub fn init(&self, page: usize, phys: u64) -> Result<Queue, VirtioError> {
        self.negotiate(0)?;
        let q = self.setup_queue(0, QUEUE_SIZE, page, phys)?;
        self.driver_ok();
        Ok(q)
    }

    /// Resets the device and negotiates `VIRTIO_F_VERSION_1` plus those of the features in
    /// `optional` that the device offers; returns the features agreed on. Queues are set up
    /// next ([`Transport::setup_queue`]), then [`Transport::driver_ok`] starts the device.
    pub fn negotiate(&self, optional: u64) -> Result<u64, VirtioError> {
        self.write(reg::STATUS, 0);
        self.write(reg::STATUS, status::ACKNOWLEDGE);
        self.write(reg::STATUS, status::ACKNOWLEDGE | status::DRIVER);
        self.write(reg::DEVICE_FEATURES_SEL, 0);
        let low = u64::from(self.read(reg::DEVICE_FEATURES));
        self.write(reg::DEVICE_FEATURES_SEL, 1);
        let offered = low | u64::from(self.read(reg::DEVICE_FEATURES)) << 32;
        if offered & F_VERSION_1 == 0 {
            return Err(VirtioError::Features);
        }
        let agreed = F_VERSION_1 | (offered & optional);
        self.write(reg::DRIVER_FEATURES_SEL, 0);
        self.write(reg::DRIVER_FEATURES, agreed as u32);
        self.write(reg::DRIVER_FEATURES_SEL, 1);
        self.write(reg::DRIVER_FEATURES, (agreed >> 32) as u32);
        let s = status::ACKNOWLEDGE | status::DRIVER | status::FEATURES_OK;
        self.write(reg::STATUS, s);
        if self.read(reg::STATUS) & status::FEATURES_OK == 0 {
            return Err(VirtioError::Features);
        }
        Ok(agreed)
    }

    /// Sets up queue `index` with `size` entries (a power of two up to [`MAX_QUEUE_SIZE`]) in
    /// the DMA page at virtual `page` / physical `phys`, after [`Transport::negotiate`]. The
    /// page's ring area (its first 3 KiB) is zeroed.
    pub fn setup_queue(
        &self,
        index: u32,
        size: u16,
        page: usize,
        phys: u64,
    ) -> Result<Queue, VirtioError> {
        if !size.is_power_of_two() || size > MAX_QUEUE_SIZE {
            return Err(VirtioError::Queue);
        }
        self.write(reg::QUEUE_SEL, index);
        if self.read(reg::QUEUE_NUM_MAX) < u32::from(size) {
            return Err(VirtioError::Queue);
        }
        // SAFETY: the caller's DMA page is mapped writable at `page` (see `Queue`).
        unsafe { core::ptr::write_bytes(page as *mut u8, 0, BUFFERS) };
        dma_barrier();
        self.write(reg::QUEUE_NUM, u32::from(size));
        self.write64(reg::QUEUE_DESC, phys);
        self.write64(reg::QUEUE_DRIVER, phys + AVAIL as u64);
        self.write64(reg::QUEUE_DEVICE, phys + USED as u64);
        self.write(reg::QUEUE_READY, 1);
        Ok(Queue {
            page,
            phys,
            size,
            next_avail: 0,
            last_used: 0,
        })
    }

    /// Tells the device that the driver is ready: it may use the queues from now on.
    pub fn driver_ok(&self) {
        let s = status::ACKNOWLEDGE | status::DRIVER | status::FEATURES_OK;
        self.write(reg::STATUS, s | status::DRIVER_OK);
    }

    /// Byte `offset` of the device-specific configuration space (virtio-net: the MAC address
    /// at 0..6).
    pub fn config_byte(&self, offset: usize) -> u8 {
        // SAFETY: the configuration space lies in the mapped register window (`new`); byte
        // reads are allowed there (virtio 1.2, 4.2.2.2).
        unsafe { ((self.base + CONFIG + offset) as *const u8).read_volatile() }
    }

    /// Tells the device that queue 0 has new buffers.
    pub fn notify(&self) {
        self.notify_queue(0);
    }

    /// Tells the device that queue `index` has new buffers.
    pub fn notify_queue(&self, index: u32) {
        dma_barrier();
        self.write(reg::QUEUE_NOTIFY, index);
    }

    /// Reads and acknowledges the interrupt status (bit 0: used buffers; bit 1: configuration
    /// change); the device deasserts its line once acknowledged.
    pub fn ack_interrupt(&self) -> u32 {
        let s = self.read(reg::INTERRUPT_STATUS);
        self.write(reg::INTERRUPT_ACK, s);
        s
    }
}

/// One queue of a device, its rings in one of the driver's DMA pages.
#[derive(Debug)]
pub struct Queue {
    page: usize,
    phys: u64,
    size: u16,
    next_avail: u16,
    last_used: u16,
}

impl Queue {
    /// Offers the device a write-only buffer of `len` bytes at byte `offset` of the page (at
    /// or after [`BUFFERS`]); call [`Transport::notify`] after. Descriptors are used in turn,
    /// which suits a device that returns buffers in order, as the entropy device does.
    pub fn post_device_writable(&mut self, offset: usize, len: u32) {
        debug_assert!(offset >= BUFFERS && offset + len as usize <= 4096);
        let desc = self.next_avail % self.size;
        self.submit(desc, self.phys + offset as u64, len, true);
    }

    /// Entries of the queue.
    pub fn size(&self) -> u16 {
        self.size
    }

    /// Offers the device descriptor `desc` (below [`Queue::size`], not offered already): the
    /// buffer of `len` bytes at physical `phys`, which the device writes if `device_writes`,
    /// else reads. Call [`Transport::notify_queue`] after. The caller owns the buffer again
    /// once [`Queue::take_used`] returns `desc`.
    pub fn submit(&mut self, desc: u16, phys: u64, len: u32, device_writes: bool) {
        debug_assert!(desc < self.size);
        let d = self.page + usize::from(desc % self.size) * 16;
        let slot = self.next_avail % self.size;
        // SAFETY: the descriptor table (16 bytes per entry, at most `MAX_QUEUE_SIZE` entries)
        // and the available ring lie in the mapped DMA page; the device reads them only after
        // the notify's barrier.
        unsafe {
            (d as *mut u64).write_volatile(phys);
            ((d + 8) as *mut u32).write_volatile(len);
            ((d + 12) as *mut u16).write_volatile(if device_writes { DESC_WRITE } else { 0 });
            ((d + 14) as *mut u16).write_volatile(0);
            let ring = self.page + AVAIL + 4 + usize::from(slot) * 2;
            (ring as *mut u16).write_volatile(desc);
        }
        dma_barrier();
        self.next_avail = self.next_avail.wrapping_add(1);
        // SAFETY: the available ring's index (offset 2) in the mapped page.
        unsafe { ((self.page + AVAIL + 2) as *mut u16).write_volatile(self.next_avail) };
    }

    /// Asks the device not to interrupt when it uses this queue's buffers (a hint the device
    /// may ignore; the driver then finds them with [`Queue::take_used`] when it next looks).
    pub fn suppress_interrupts(&mut self) {
        // SAFETY: the available ring's flags (offset 0) in the mapped page.
        unsafe { ((self.page + AVAIL) as *mut u16).write_volatile(AVAIL_NO_INTERRUPT) };
        dma_barrier();
    }

    /// Whether the device returned a buffer that [`Queue::take_used`] has not taken yet.
    pub fn has_used(&self) -> bool {
        dma_barrier();
        // SAFETY: the used ring's index (offset 2) in the mapped page, written by the device.
        let idx = unsafe { ((self.page + USED + 2) as *const u16).read_volatile() };
        idx != self.last_used
    }

    /// The next buffer the device returned: its descriptor index and the bytes written.
    pub fn take_used(&mut self) -> Option<(u32, u32)> {
        dma_barrier();
        // SAFETY: the used ring's index (offset 2) in the mapped page, written by the device.
        let idx = unsafe { ((self.page + USED + 2) as *const u16).read_volatile() };
        if idx == self.last_used {
            return None;
        }
        let e = self.page + USED + 4 + usize::from(self.last_used % self.size) * 8;
        // SAFETY: a used-ring element (id, len) in the mapped page.
        let used = unsafe {
            (
                (e as *const u32).read_volatile(),
                ((e + 4) as *const u32).read_volatile(),
            )
        };
        self.last_used = self.last_used.wrapping_add(1);
        Some(used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtio_windows_are_known_by_their_base() {
        assert_eq!(window(0xFEB0_0000).map(|w| w.irq_base), Some(24));
        assert_eq!(
            window(0x0A00_0000).map(|w| (w.count, w.irq_base)),
            Some((32, 16))
        );
        assert_eq!(window(0x021E_8000), None);
    }
}
