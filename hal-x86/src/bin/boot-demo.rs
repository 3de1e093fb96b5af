//! Boot demo and self-test for hal-x86 under QEMU.
//!
//! Boots through PVH, prints what the HAL found, starts every core, lets each take timer ticks,
//! sends a test IPI from core 0 to every other core and checks that it arrived, then exits QEMU
//! with the success code (status 33). Any failure exits with status 35; an exception prints a
//! report first.
//!
//! Command line (`-append`): `fault=ud|pf|gp|df|panic|ap-ud|ap-pf` triggers that fault on
//! purpose (core 0, or core 1 for `ap-*`) to check the exception report; `clock=pm|pit` forces
//! a calibration reference; `ticks=N` sets how many timer ticks each core waits for (default 3);
//! `init-delay-us=N` sets the INIT -> STARTUP wait (default 10000 on hardware, 0 in a VM).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!(
        "boot-demo is a kernel: build it with --target x86_64-unknown-none and run it in QEMU"
    );
}

#[cfg(target_os = "none")]
mod demo {
    use hal_common::demo::{self, yes, Demo};
    use hal_common::ArchHal;
    use hal_x86::percpu::{CpuIndex, MAX_CPUS, PERCPU};
    use hal_x86::time;
    use hal_x86::{cpu, println, smp, Platform, X86Hal};

    hal_x86::entry_point!(kernel_main);

    /// The shared checks (ticks on every core, IPI round trips, the verdict).
    static DEMO: Demo<MAX_CPUS> = Demo::new();

    fn fault_flag() -> &'static str {
        hal_x86::platform()
            .and_then(|p| p.boot.cmdline_value("fault"))
            .unwrap_or("")
    }

    fn wanted_ticks() -> u64 {
        demo::wanted_ticks(hal_x86::platform().and_then(|p| p.boot.cmdline_value("ticks")))
    }

    /// Triggers the fault named on the command line, if it is meant for this core.
    fn maybe_fault(cpu: CpuIndex) {
        let Some(kind) = demo::fault_to_trigger::<X86Hal>(fault_flag(), cpu) else {
            return;
        };
        match kind {
            // SAFETY: deliberately executes an invalid opcode; the #UD handler reports and exits.
            "ud" => unsafe { core::arch::asm!("ud2") },
            "pf" => {
                // SAFETY: deliberately reads an unmapped (canonical) address: #PF, reported.
                let v = unsafe { (0x0000_4000_0000_0000 as *const u64).read_volatile() };
                println!("read {v}");
            }
            "gp" => {
                // SAFETY: deliberately reads a non-canonical address: #GP, reported.
                let v = unsafe { (0x8000_0000_0000_0000u64 as *const u64).read_volatile() };
                println!("read {v}");
            }
            // SAFETY: deliberately breaks the stack pointer, then traps: delivering #BP faults
            // (#PF), delivering that faults again, so the CPU raises #DF, which runs on the IST1
            // stack and reports.
            "df" => unsafe {
                core::arch::asm!("mov rsp, 0x400000000000", "int3", options(noreturn))
            },
            "panic" => panic!("panic requested on the command line"),
            other => println!("cpu {cpu}: unknown fault kind '{other}', ignored"),
        }
    }

    fn fail(msg: core::fmt::Arguments<'_>) -> ! {
        DEMO.fail::<X86Hal>(msg)
    }

    fn kernel_main(p: &'static Platform) -> ! {
        let entered_ms = time::since_boot_ns() / 1_000_000;
        println!();
        println!(
            "hal-x86 boot-demo: PVH boot ok (start info v{} at {:#x})",
            p.boot.start_info_version, p.boot.start_info_phys
        );
        println!("boot: cmdline \"{}\"", p.boot.cmdline);
        println!(
            "boot: memory map: {} regions, {} MiB usable RAM",
            p.boot.memory_map.len(),
            p.boot.usable_ram() >> 20
        );
        for r in p.boot.memory_map {
            println!(
                "boot:   {:#012x}..{:#012x} {:?}",
                r.start,
                r.start + r.len,
                r.kind
            );
        }
        let c = &p.cpu;
        println!(
            "boot: cpu {} max leaf {:#x}: rtm {}, hle {}, rdtscp {}, invariant-tsc {}, tsc-deadline {}, x2apic {}, nx {}, hypervisor {}",
            c.vendor_str(),
            c.max_leaf,
            yes(c.rtm),
            yes(c.hle),
            yes(c.rdtscp),
            yes(c.invariant_tsc),
            yes(c.tsc_deadline),
            yes(c.x2apic),
            yes(c.nx),
            yes(c.hypervisor)
        );
        println!(
            "boot: rtm {}",
            if c.rtm {
                "present (CPUID.07H:EBX[11])"
            } else {
                "absent: lock elision falls back to locking"
            }
        );
        let acpi = match &p.acpi {
            Ok(a) => a,
            Err(e) => fail(format_args!("ACPI: {e:?}")),
        };
        print_acpi(p, acpi);
        println!(
            "boot: clock {}: tsc {}.{:03} MHz, apic timer (div 16) {}.{:03} MHz",
            p.clock.name(),
            time::tsc_hz() / 1_000_000,
            time::tsc_hz() / 1_000 % 1_000,
            time::apic_timer_hz() / 1_000_000,
            time::apic_timer_hz() / 1_000 % 1_000
        );
        if c.rdtscp {
            let before = cpu::rdtsc();
            let (after, aux) = cpu::rdtscp();
            println!("boot: rdtsc {before}, then rdtscp {after} (aux = cpu {aux})");
        }
        println!(
            "boot: bsp apic id {}, HAL init took {} ms",
            p.bsp_apic_id, entered_ms
        );

        maybe_fault(0);

        if !p.boot.is_ram(smp::TRAMPOLINE_PHYS, 0x1000) {
            fail(format_args!(
                "trampoline page {:#x} is not usable RAM",
                smp::TRAMPOLINE_PHYS
            ));
        }
        if let Some(us) = p
            .boot
            .cmdline_value("init-delay-us")
            .and_then(|v| v.parse().ok())
        {
            smp::set_init_delay_us(us);
        }
        let t0 = time::cycles();
        let report = smp::start_aps(acpi, ap_main);
        let smp_us = time::tsc_to_ns(time::cycles() - t0) / 1_000;
        for f in report.failures.iter().flatten() {
            println!(
                "smp: FAILED to start cpu {} (apic id {}): reached stage {}",
                f.cpu, f.apic_id, f.stage
            );
        }
        if report.skipped > 0 {
            println!(
                "smp: {} enabled cpus beyond MAX_CPUS = {MAX_CPUS} not started",
                report.skipped
            );
        }
        println!(
            "smp: started {} of {} cpus in {} us",
            report.online, report.expected, smp_us
        );
        println!("cpus online: {}", report.online);

        let io = p.ioapic;
        println!(
            "ioapic: {} chip(s), {} lines, {} for drivers, {} skipped, {} read-back errors",
            io.chips, io.lines, io.available, io.skipped, io.readback_errors
        );
        if io.readback_errors > 0 {
            fail(format_args!("I/O APIC entries read back wrong"));
        }
        match hal_x86::ioapic::pit_self_test(acpi, 500) {
            Ok((gsi, n)) => println!(
                "ioapic: PIT on gsi {gsi} delivered {n} interrupt(s), masked by the handler"
            ),
            Err(e) => fail(format_args!("ioapic: PIT self-test: {e}")),
        }

        DEMO.finish::<X86Hal>(wanted_ticks(), report.online, report.failure_count)
    }

    fn print_acpi(p: &Platform, acpi: &hal_x86::acpi::AcpiInfo) {
        print_list("boot: acpi tables:", acpi.table_names());
        println!(
            "boot: acpi rev {} oem \"{}\", lapic {:#x}, {} io-apic(s), 8259 {}, hw-reduced {}, pm-timer {}, hpet {}",
            acpi.revision,
            core::str::from_utf8(&acpi.oem_id).unwrap_or("?"),
            acpi.lapic_address,
            acpi.ioapic_count,
            yes(acpi.has_8259),
            yes(acpi.hw_reduced),
            Opt(acpi.pm_timer.map(|t| u64::from(t.port))),
            Opt(acpi.hpet)
        );
        for io in acpi.ioapics() {
            println!(
                "boot: madt io-apic id {} at {:#x}, gsi base {}",
                io.id, io.address, io.gsi_base
            );
        }
        for o in acpi.overrides() {
            println!(
                "boot: madt override: bus {} irq {} -> gsi {}, flags {:#x}",
                o.bus, o.source, o.gsi, o.flags
            );
        }
        hal_x86::print!("boot: madt enabled local apic ids:");
        for c in acpi.enabled_cpus() {
            hal_x86::print!(" {}", c.apic_id);
        }
        println!(
            " ({} enabled of {} listed; bsp {})",
            acpi.enabled_cpus().count(),
            acpi.cpu_count,
            p.bsp_apic_id
        );
    }

    fn print_list<'a>(title: &str, items: impl Iterator<Item = &'a str>) {
        hal_x86::print!("{title}");
        for i in items {
            hal_x86::print!(" {i}");
        }
        println!();
    }

    /// Displays `Some(x)` as hex, `None` as "none".
    struct Opt(Option<u64>);

    impl core::fmt::Display for Opt {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            match self.0 {
                Some(v) => write!(f, "{v:#x}"),
                None => f.write_str("none"),
            }
        }
    }

    fn ap_main(cpu: CpuIndex) -> ! {
        println!(
            "cpu {cpu}: online (apic id {}), rtm {}",
            PERCPU[cpu].apic_id(),
            yes(X86Hal::has_rtm())
        );
        maybe_fault(cpu);
        DEMO.secondary::<X86Hal>(cpu, wanted_ticks())
    }

    #[panic_handler]
    fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
        hal_x86::panic_report(info)
    }
}
