//! The device-interrupt test the root task runs in test mode: a user-level driver maps a real
//! device's registers from the device-memory capability it received at boot, gets the handler
//! of the device's interrupt line from its control capability, binds it to a notification on a
//! chosen core, makes the device raise its interrupt, waits for the notification, quiets the
//! device and acknowledges the line, [`ROUNDS`] times (so the acknowledgement's unmask is proved
//! as well as the first delivery).
//!
//! The device depends on the board, recognised by the physical base of the root task's first
//! device region (the boards' tables are in the images' `device_regions`):
//! * x86_64 `-M microvm` and ARM `virt`: a virtio-rng device on a virtio-mmio transport (QEMU
//!   started with `-device virtio-rng-device`, as `cargo xtask qemu` does); one request for 16
//!   random bytes per round, completed by the device with an interrupt. microvm's transport `i`
//!   raises GSI `24 + i` (its second I/O APIC), virt's raises SPI `16 + i`.
//! * i.MX6 sabrelite: UART2's "transmitter ready" interrupt (SPI 27), which the UART raises as
//!   soon as the driver enables it while the transmitter is idle, and drops when it disables it.
//!
//! Setup ([`prepare`]) makes management calls, so the root task runs it before it releases the
//! other cores; the rounds ([`run`]) use only `Wait` and `AckIrq` and run after the release, so
//! that the interrupt can be routed to another core ([`image::info::IRQ_CORE`](crate::image::info::IRQ_CORE)).

use abi::PageAttrs;

use crate::debug::{self, test};
use crate::drivers::virtio::{self, Queue, Transport};
use crate::image::{info, slot};
use crate::sys::{self, slot as s};

/// `TEST` lines [`run`] prints.
pub const TESTS: usize = 1;
/// Interrupts per test.
pub const ROUNDS: usize = 4;

/// Where the device registers are mapped (clear of the memory test's ranges).
const DEV_VA: usize = 0x1900_0000;
/// Where the driver's DMA page is mapped.
const DMA_VA: usize = 0x1A00_0000;
/// Scratch slots (free again after the memory test): the DMA page, the IRQ handler, the
/// notification.
const DMA_SLOT: usize = slot::ROOT_SCRATCH;
const IRQ_SLOT: usize = slot::ROOT_SCRATCH + 1;
const NTFN_SLOT: usize = slot::ROOT_SCRATCH + 2;

/// i.MX UART registers and bits (i.MX6 reference manual, chapter 64).
const IMX_UCR1: usize = 0x80;
const IMX_USR1: usize = 0x94;
const IMX_UARTEN: u32 = 1;
const IMX_TRDY: u32 = 1 << 13;

/// Why the test is skipped rather than failed: x86 `-M q35` and `-M pc` share microvm's device
/// table but have no virtio-mmio transports (their devices are on PCI).
const NO_TRANSPORTS: &str = "no virtio-mmio transports on this machine (q35/pc): nothing to drive";

/// What a board offers the test.
#[derive(Clone, Copy, Debug)]
enum Board {
    /// Virtio-mmio transports at the region's base.
    Virtio(virtio::Window),
    /// An i.MX UART at the region's base, raising `irq`.
    ImxUart { irq: usize },
}

/// The board whose first device region starts at physical `base`.
fn board(base: usize) -> Option<Board> {
    if let Some(w) = virtio::window(base) {
        return Some(Board::Virtio(w));
    }
    match base {
        0x021E_8000 => Some(Board::ImxUart { irq: 27 }),
        // UART1, when the kernel's console is UART2 (`console=uart2`, the real board's).
        0x0202_0000 => Some(Board::ImxUart { irq: 26 }),
        _ => None,
    }
}

/// The device the rounds drive.
enum Device {
    Rng(Transport, Queue),
    Uart(usize),
}

/// A driver set up by [`prepare`], or why there is none.
pub struct Prepared {
    result: Result<(Device, usize, usize), &'static str>,
    what: &'static str,
}

fn mmio_read(addr: usize) -> u32 {
    // SAFETY: only called on the device page this module mapped at `DEV_VA`.
    unsafe { (addr as *const u32).read_volatile() }
}

fn mmio_write(addr: usize, v: u32) {
    // SAFETY: as in `mmio_read`.
    unsafe { (addr as *mut u32).write_volatile(v) }
}

/// Maps the device and a DMA page, finds the device, gets and binds its interrupt (management
/// calls: before the other cores run).
pub fn prepare() -> Prepared {
    let mut what = "no device";
    let result = setup(&mut what);
    if let Err(e) = result {
        crate::uprintln!("devtest: {what}: {e}");
    }
    Prepared { result, what }
}

fn setup(what: &mut &'static str) -> Result<(Device, usize, usize), &'static str> {
    let dev = s(slot::ROOT_DEVICE);
    let aspace = s(slot::ROOT_ASPACE);
    let (base, pages, _) = sys::mem_info(dev).map_err(|_| "no device region")?;
    let board = board(base).ok_or("no test device known for this board")?;
    for p in 0..pages {
        sys::map_page(
            aspace,
            dev,
            p,
            DEV_VA + p * 4096,
            PageAttrs::WRITE | PageAttrs::DEVICE,
        )
        .map_err(|_| "mapping the device registers failed")?;
    }
    let (device, irq) = match board {
        Board::Virtio(virtio::Window {
            name,
            count,
            irq_base,
        }) => {
            *what = name;
            let mut found = None;
            let mut any = false;
            for i in 0..count.min(pages * 4096 / virtio::TRANSPORT_SIZE) {
                // SAFETY: the transport's registers lie in the pages mapped just above.
                let t = unsafe { Transport::new(DEV_VA + i * virtio::TRANSPORT_SIZE) };
                let probed = t.probe();
                any |= probed != Err(virtio::VirtioError::NoDevice);
                match probed {
                    Ok(virtio::DEVICE_RNG) => found = Some((i, t)),
                    Err(virtio::VirtioError::Legacy) => {
                        return Err("legacy virtio-mmio transport (version 1): start QEMU with \
                                    -global virtio-mmio.force-legacy=false");
                    }
                    _ => {}
                }
            }
            if !any {
                return Err(NO_TRANSPORTS);
            }
            let (i, t) = found.ok_or(
                "no virtio-rng device on the virtio-mmio transports (QEMU needs \
                 -device virtio-rng-device)",
            )?;
            let mem = s(slot::ROOT_MEM);
            sys::mem_split(mem, s(DMA_SLOT), 0, 1).map_err(|_| "no DMA page")?;
            sys::map_page(aspace, s(DMA_SLOT), 0, DMA_VA, PageAttrs::WRITE)
                .map_err(|_| "mapping the DMA page failed")?;
            let (phys, _, _) = sys::mem_info(s(DMA_SLOT)).map_err(|_| "MemInfo failed")?;
            let q = t
                .init(DMA_VA, phys as u64)
                .map_err(|_| "the virtio-rng device refused its setup")?;
            (Device::Rng(t, q), irq_base + i)
        }
        Board::ImxUart { irq } => {
            *what = if irq == 26 {
                "i.MX6 UART1"
            } else {
                "i.MX6 UART2"
            };
            // Transmitter-ready interrupt off until a round enables it.
            mmio_write(DEV_VA + IMX_UCR1, IMX_UARTEN);
            (Device::Uart(DEV_VA), irq)
        }
    };
    let core = debug::info(info::IRQ_CORE);
    sys::issue_irq_handler(s(slot::ROOT_CONTROL), irq, s(IRQ_SLOT))
        .map_err(|_| "IssueIrqHandler failed")?;
    sys::create_notification(s(slot::ROOT_CONTROL), s(NTFN_SLOT))
        .map_err(|_| "CreateNotification failed")?;
    sys::bind_irq(s(IRQ_SLOT), s(NTFN_SLOT), core).map_err(|_| "BindIrq failed")?;
    Ok((device, irq, core))
}

/// The rounds (after the other cores were released): every interrupt delivered, the device
/// quieted and the line acknowledged; one `TEST` line.
pub fn run(p: Prepared) {
    let name = "user:device_interrupt_delivered_and_acknowledged";
    let (mut device, irq, core) = match p.result {
        Ok(d) => d,
        Err(NO_TRANSPORTS) => {
            crate::debug::skip(name, format_args!("{NO_TRANSPORTS}"));
            return;
        }
        Err(e) => {
            test(name, false, format_args!("{}: {e}", p.what));
            return;
        }
    };
    let mut delivered = 0;
    let mut completed = 0;
    let mut acked = 0;
    for _ in 0..ROUNDS {
        match &mut device {
            Device::Rng(t, q) => {
                q.post_device_writable(virtio::BUFFERS, 16);
                t.notify();
            }
            Device::Uart(base) => mmio_write(*base + IMX_UCR1, IMX_UARTEN | IMX_TRDY),
        }
        if sys::wait(s(NTFN_SLOT)).is_err() {
            break;
        }
        delivered += 1;
        // Quiet the device before the line is unmasked, or a level-triggered line fires again.
        let ok = match &mut device {
            Device::Rng(t, q) => {
                let status = t.ack_interrupt();
                status & 1 == 1 && q.take_used().is_some_and(|(_, len)| len > 0)
            }
            Device::Uart(base) => {
                let ready = mmio_read(*base + IMX_USR1) & IMX_TRDY != 0;
                mmio_write(*base + IMX_UCR1, IMX_UARTEN);
                ready
            }
        };
        completed += usize::from(ok);
        acked += usize::from(sys::ack_irq(s(IRQ_SLOT)).is_ok());
    }
    test(
        name,
        delivered == ROUNDS && completed == ROUNDS && acked == ROUNDS,
        format_args!(
            "{}: line {irq} routed to core {core}: {delivered}/{ROUNDS} interrupts delivered, \
             {completed} with the device's completion, {acked} acknowledged",
            p.what
        ),
    );
}
