//! Boot demo and self-test for hal-armv7 under QEMU (`-M sabrelite` or `-M virt -cpu cortex-a15`).
//!
//! Prints what the HAL found, starts every core (SRC on sabrelite, PSCI on virt), lets each take
//! timer ticks, sends a test SGI from core 0 to every other core and checks that it arrived,
//! then exits QEMU through semihosting with status 0. Any failure exits with status 1; an
//! exception prints a report first.
//!
//! Command line (`-append`, read through semihosting): `fault=und|dabt|pabt|svc|panic|abtstack`
//! (`abtstack`: recursion in ABT mode until the abort stack overflows) triggers
//! that fault on purpose on core 0 (`ap-und`, `ap-dabt`, ... on core 1) to check the exception
//! report; `ticks=N` sets how many timer ticks each core waits for (default 3). Built with
//! `--features fault-demo`, the demo takes a data abort on core 0 when no `fault=` is given.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("boot-demo is a kernel: build it with --target armv7a-none-eabi and run it in QEMU");
}

#[cfg(target_os = "none")]
mod demo {
    use hal_armv7::fault::Mode;
    use hal_armv7::gic;
    use hal_armv7::machine::{cpu_name, Machine};
    use hal_armv7::percpu::{CpuIndex, MAX_CPUS, PERCPU};
    use hal_armv7::timer;
    use hal_armv7::{cache, mmu, println, smp, ArmHal, Platform};
    use hal_common::demo::{self, yes, Demo};
    use hal_common::ArchHal;

    hal_armv7::entry_point!(kernel_main);

    /// The shared checks (ticks on every core, IPI round trips, the verdict).
    static DEMO: Demo<MAX_CPUS> = Demo::new();

    fn fault_flag() -> &'static str {
        let given = hal_armv7::platform().and_then(|p| p.cmdline_value("fault"));
        match given {
            Some(f) => f,
            None if cfg!(feature = "fault-demo") => "dabt",
            None => "",
        }
    }

    fn wanted_ticks() -> u64 {
        demo::wanted_ticks(hal_armv7::platform().and_then(|p| p.cmdline_value("ticks")))
    }

    /// An address no section maps on either machine.
    const UNMAPPED: u32 = 0xF000_0000;

    /// Triggers the fault named on the command line, if it is meant for this core.
    fn maybe_fault(cpu: CpuIndex) {
        let Some(kind) = demo::fault_to_trigger::<ArmHal>(fault_flag(), cpu) else {
            return;
        };
        match kind {
            // SAFETY: deliberately executes a permanently undefined instruction; the
            // undefined-instruction handler reports and exits.
            "und" => unsafe { core::arch::asm!("udf #0") },
            "dabt" => {
                // SAFETY: deliberately reads an unmapped address: data abort, reported.
                let v = unsafe { (UNMAPPED as *const u32).read_volatile() };
                println!("read {v}");
            }
            // SAFETY: deliberately branches to an unmapped address: prefetch abort, reported.
            "pabt" => unsafe { core::arch::asm!("blx {}", in(reg) UNMAPPED, out("lr") _) },
            // SAFETY: deliberately makes a supervisor call there is no syscall for: reported.
            "svc" => unsafe { core::arch::asm!("svc #1", out("lr") _) },
            "panic" => panic!("panic requested on the command line"),
            // The abort stack runs into its guard page while in ABT mode: the abort vectors
            // must notice the exhausted stack, restart it and report the overflow.
            "abtstack" => hal_armv7::boot::overflow_abort_stack(),
            other => println!("cpu {cpu}: unknown fault kind '{other}', ignored"),
        }
    }

    fn fail(msg: core::fmt::Arguments<'_>) -> ! {
        DEMO.fail::<ArmHal>(msg)
    }

    fn kernel_main(p: &'static Platform) -> ! {
        let entered_ms = timer::since_boot_ns() / 1_000_000;
        let entry_mode = Mode::from_psr(p.entry_psr);
        println!();
        println!(
            "hal-armv7 boot-demo: machine {} ({}), entered in {} mode, running in {} mode",
            p.machine.name(),
            p.machine.description(),
            entry_mode,
            p.mode
        );
        println!(
            "boot: cmdline \"{}\" (semihosting {})",
            p.cmdline,
            if p.semihosting { "on" } else { "off" }
        );
        println!(
            "boot: cpu {} r{}p{} (midr {:#010x}), mpidr {:#010x}",
            cpu_name(p.midr),
            (p.midr >> 20) & 0xF,
            p.midr & 0xF,
            p.midr,
            PERCPU[0].mpidr()
        );
        let (ram, ram_size) = p.machine.ram_window();
        let (dev, dev_size) = p.machine.device_window();
        println!(
            "boot: mmu {}, dcache {}, actlr.smp {}: ram {:#010x}..{:#010x} normal wbwa shareable, devices {:#010x}..{:#010x}",
            on(mmu::enabled()),
            on(mmu::dcache_enabled()),
            yes(cache::smp_bit()),
            ram,
            u64::from(ram) + u64::from(ram_size),
            dev,
            u64::from(dev) + u64::from(dev_size)
        );
        if p.machine == Machine::Sabrelite {
            println!(
                "boot: periphbase {:#010x} (cbar), scu cpus {}, scu smp mask {:#x}",
                p.periphbase,
                cache::scu_cpu_count(p.periphbase),
                cache::scu_smp_mask(p.periphbase)
            );
        }
        println!(
            "boot: gic distributor {:#010x}, cpu interface {:#010x}: {} interrupt lines, {} cpu interfaces",
            p.gicd, p.gicc, p.gic_lines, p.gic_cpus
        );
        match (p.psci, p.psci_version) {
            (Some(c), Some(v)) => {
                println!("boot: psci {}.{} via {}", v >> 16, v & 0xFFFF, c.name())
            }
            _ => println!("boot: no psci: secondaries are released through the SRC"),
        }
        println!(
            "boot: cycle source {} at {}.{:03} MHz, tick timer irq {}",
            match p.machine {
                Machine::Sabrelite => "a9 global timer",
                Machine::Virt => "generic timer virtual counter",
            },
            ArmHal::cycles_hz() / 1_000_000,
            ArmHal::cycles_hz() / 1_000 % 1_000,
            timer::irq_id()
        );
        println!("boot: rtm absent: lock elision falls back to locking");
        println!(
            "boot: stack top {:#010x}, HAL init took {} ms",
            p.stack_top, entered_ms
        );
        if !p.semihosting {
            println!("boot: WARNING: no semihosting: QEMU cannot be exited with a status");
        }

        maybe_fault(0);

        let t0 = timer::cycles();
        let report = smp::start_secondaries(p, ap_main);
        let smp_us = timer::cycles_to_ns(timer::cycles() - t0) / 1_000;
        for f in report.failures.iter().flatten() {
            println!("smp: FAILED to start cpu {}: {:?}", f.cpu, f.error);
        }
        if report.skipped > 0 {
            println!(
                "smp: {} cpus beyond MAX_CPUS = {MAX_CPUS} not started",
                report.skipped
            );
        }
        println!(
            "smp: started {} of {} cpus in {} us",
            report.online, report.expected, smp_us
        );
        println!("cpus online: {}", report.online);

        println!(
            "gic: {} spis for drivers, {} distributor read-back errors",
            p.gic_available_spis, p.gic_readback_errors
        );
        if p.gic_readback_errors > 0 {
            fail(format_args!("GIC distributor settings read back wrong"));
        }
        // The highest SPI a driver could have: no device of either board drives it, so only
        // the software pend raises it.
        let spi = (p.gic_lines - 32).min(gic::DEVICE_LINES as u32) - 1;
        match gic::spi_self_test(spi, 10_000_000) {
            Ok(n) => println!(
                "gic: software-pended spi {spi} taken {n} time(s) on cpu 0, disabled by the \
                 irq path"
            ),
            Err(e) => fail(format_args!("gic: spi {spi} self-test: {e}")),
        }

        DEMO.finish::<ArmHal>(wanted_ticks(), report.online, report.failure_count)
    }

    fn on(b: bool) -> &'static str {
        if b {
            "on"
        } else {
            "off"
        }
    }

    fn ap_main(cpu: CpuIndex) -> ! {
        println!(
            "cpu {cpu}: online (mpidr {:#010x}, entered in {} mode), mmu {}, actlr.smp {}, rtm {}",
            PERCPU[cpu].mpidr(),
            Mode::from_psr(PERCPU[cpu].entry_psr()),
            on(mmu::enabled()),
            yes(cache::smp_bit()),
            yes(ArmHal::has_rtm())
        );
        maybe_fault(cpu);
        DEMO.secondary::<ArmHal>(cpu, wanted_ticks())
    }

    #[panic_handler]
    fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
        hal_armv7::panic_report(info)
    }
}
