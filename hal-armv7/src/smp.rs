//! Starting the secondary cores.
//!
//! - sabrelite: the i.MX6 System Reset Controller. Core n's entry address goes to SRC_GPR(2n+1)
//!   and an argument to SRC_GPR(2n+2); setting SRC_SCR.COREn_ENABLE (bit 21 + n) together with
//!   the self-clearing COREn_RST (bit 13 + n) releases it. On the real chip the boot ROM then
//!   jumps to the GPR address; QEMU's `imx6_src` model skips the ROM and starts the core at
//!   that address directly (Secure SVC, MMU off, r0 = the argument).
//! - virt: PSCI CPU_ON with the core's MPIDR affinity, the entry address and a context (r0).
//!
//! The number of cores comes from the GIC (GICD_TYPER.CPUNumber + 1: one CPU interface per
//! core), which both machines size to `-smp`; on the A9 the SCU's count must agree.
//!
//! Each core is started and waited for in turn (500 ms timeout), so a core that does not come
//! up is reported instead of hanging the boot.

use tock_registers::interfaces::{ReadWriteable, Writeable};
use tock_registers::registers::ReadWrite;
use tock_registers::{register_bitfields, register_structs};

use hal_common::smp::Bringup;

use crate::machine::{Machine, IMX_SRC};
use crate::percpu::{CpuIndex, MAX_CPUS, PERCPU};
use crate::psci::{self, PsciError};
use crate::timer::wait_until;
use crate::Platform;

register_bitfields![u32,
    /// SRC Control Register.
    SRC_SCR [
        /// Core 1 software reset (self-clearing).
        CORE1_RST OFFSET(14) NUMBITS(1) [],
        /// Core 2 software reset.
        CORE2_RST OFFSET(15) NUMBITS(1) [],
        /// Core 3 software reset.
        CORE3_RST OFFSET(16) NUMBITS(1) [],
        /// Core 1 enable.
        CORE1_ENABLE OFFSET(22) NUMBITS(1) [],
        /// Core 2 enable.
        CORE2_ENABLE OFFSET(23) NUMBITS(1) [],
        /// Core 3 enable.
        CORE3_ENABLE OFFSET(24) NUMBITS(1) []
    ]
];

register_structs! {
    /// i.MX6 System Reset Controller (i.MX6DQ reference manual, chapter 60).
    pub SrcRegs {
        (0x00 => scr: ReadWrite<u32, SRC_SCR::Register>),
        (0x04 => sbmr1: ReadWrite<u32>),
        (0x08 => srsr: ReadWrite<u32>),
        (0x0C => _reserved0),
        (0x14 => sisr: ReadWrite<u32>),
        (0x18 => simr: ReadWrite<u32>),
        (0x1C => sbmr2: ReadWrite<u32>),
        /// SRC_GPR1..SRC_GPR10.
        (0x20 => gpr: [ReadWrite<u32>; 10]),
        (0x48 => @END),
    }
}

static BRINGUP: Bringup = Bringup::new();

/// Number of cores online (core 0 included).
pub fn online_count() -> usize {
    hal_common::smp::online_count(PERCPU.iter().map(|c| &**c))
}

/// Number of cores the HAL knows (started or tried), after [`start_secondaries`].
pub fn cpu_count() -> usize {
    BRINGUP.cpu_count()
}

/// Why a core did not come up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartError {
    /// PSCI CPU_ON refused.
    Psci(PsciError),
    /// Released, but it did not report online within the timeout.
    Timeout,
}

/// One core that did not come up.
#[derive(Clone, Copy, Debug)]
pub struct StartFailure {
    /// Its index.
    pub cpu: CpuIndex,
    /// What went wrong.
    pub error: StartError,
}

/// Outcome of [`start_secondaries`]: `expected` counts the cores present (bounded by
/// [`MAX_CPUS`]).
pub type StartReport = hal_common::smp::StartReport<StartFailure, MAX_CPUS>;

/// Starts every other core present; each runs `ap_main(its index)` once its MMU, caches and
/// GIC interface are on. Waits for each with a timeout and reports failures.
///
/// Call once, from core 0, after boot (the kernel's main function).
pub fn start_secondaries(p: &Platform, ap_main: fn(CpuIndex) -> !) -> StartReport {
    BRINGUP.set_ap_main(ap_main);
    let present = p.gic_cpus as usize;
    let expected = present.min(MAX_CPUS);
    let mut report = StartReport::new(expected, present - expected);
    BRINGUP.set_cpu_count(expected);
    let entry = crate::boot::secondary_entry_address();
    for (cpu, state) in PERCPU.iter().enumerate().take(expected).skip(1) {
        let released = match p.machine {
            Machine::Sabrelite => {
                src_release(cpu, entry);
                Ok(())
            }
            Machine::Virt => match p.psci {
                // SAFETY: the entry point is the secondary entry code, which runs with the
                // MMU off and reads only the boot parameters cleaned to memory at boot.
                Some(conduit) => unsafe { psci::cpu_on(conduit, cpu as u32, entry, cpu as u32) }
                    .map_err(StartError::Psci),
                None => Err(StartError::Psci(PsciError::NotSupported)),
            },
        };
        let result = released.and_then(|()| {
            if wait_until(500_000, || state.is_online()) {
                Ok(())
            } else {
                Err(StartError::Timeout)
            }
        });
        match result {
            Ok(()) => report.started(),
            Err(error) => report.failed(StartFailure { cpu, error }),
        }
    }
    report
}

/// Releases core `cpu` (1..3) of the i.MX6 from reset at `entry`.
fn src_release(cpu: CpuIndex, entry: u32) {
    // SAFETY: the SRC register block at its fixed i.MX6 address, mapped as Device memory.
    let src = unsafe { &*(IMX_SRC as *const SrcRegs) };
    src.gpr[2 * cpu].set(entry);
    src.gpr[2 * cpu + 1].set(cpu as u32);
    // The entry/argument writes and every earlier store (boot parameters cleaned to memory)
    // must be complete before the core is let go.
    crate::cpu::dsb();
    let bits = match cpu {
        1 => SRC_SCR::CORE1_ENABLE::SET + SRC_SCR::CORE1_RST::SET,
        2 => SRC_SCR::CORE2_ENABLE::SET + SRC_SCR::CORE2_RST::SET,
        _ => SRC_SCR::CORE3_ENABLE::SET + SRC_SCR::CORE3_RST::SET,
    };
    src.scr.modify(bits);
}

/// Runs the `ap_main` given to [`start_secondaries`] on the calling (secondary) core.
pub(crate) fn run_ap_main(cpu: CpuIndex) -> ! {
    let Some(ap_main) = BRINGUP.ap_main() else {
        crate::console::emergency_print(format_args!(
            "hal-armv7: cpu {cpu} started without an ap_main\n"
        ));
        crate::cpu::halt_forever();
    };
    ap_main(cpu)
}
