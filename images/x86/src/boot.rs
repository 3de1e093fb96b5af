//! The bootstrap processor's main function and the other cores' entry.

use hal_x86::percpu::CpuIndex;
use hal_x86::{println, smp, usermode, Platform, X86Hal};

use crate::{selftest, system};

hal_x86::entry_point!(kernel_main);

/// The user ELF built by `build.rs`.
static USER_ELF: &[u8] = include_bytes!(env!("USER_ELF"));

fn kernel_main(p: &'static Platform) -> ! {
    println!();
    println!(
        "locked-in x86_64 image: {} boot ok, cmdline \"{}\", {} MiB RAM, HAL ready after {} ms",
        p.boot.protocol.name(),
        p.boot.cmdline,
        p.boot.usable_ram() >> 20,
        hal_x86::time::since_boot_ns() / 1_000_000
    );
    let cmdline = image_common::boot::parse_cmdline::<X86Hal>(|k| p.boot.cmdline_value(k));
    let (lock, test) = (cmdline.lock, cmdline.test);
    let acpi = match &p.acpi {
        Ok(a) => a,
        Err(e) => image_common::boot::fail::<X86Hal>(format_args!("ACPI tables unreadable: {e:?}")),
    };
    if let Some(srat) = &acpi.srat {
        println!(
            "acpi: srat: {} cpus and {} memory ranges in {} proximity domains ({} disabled, {} \
             malformed entries left out)",
            srat.cpus().len(),
            srat.memory().len(),
            srat.domain_count(),
            srat.disabled,
            srat.skipped
        );
        for m in srat.memory() {
            println!(
                "acpi: srat: {:#x}..{:#x} in domain {}{}{}",
                m.base,
                m.end(),
                m.domain,
                if m.hot_pluggable {
                    ", hot-pluggable"
                } else {
                    ""
                },
                if m.non_volatile { ", non-volatile" } else { "" }
            );
        }
    }

    unsafe extern "C" {
        static __kernel_end_phys: u8;
    }
    // SAFETY: a linker-script symbol: only its address (the image's physical end) is used.
    let kernel_end = unsafe { &__kernel_end_phys as *const u8 as u64 };
    hal_x86::paging::init_frames(p.boot.memory_map, kernel_end);
    usermode::init_cpu();
    println!(
        "boot: cpu {} rtm {}; syscall entry at {:#x}",
        p.cpu.vendor_str(),
        if p.cpu.rtm {
            "present"
        } else {
            "absent (elision falls back to the lock)"
        },
        usermode::syscall_entry_address()
    );

    if test {
        selftest::before_smp(lock);
    }

    let report = smp::start_aps(acpi, ap_main);
    for f in report.failures.iter().flatten() {
        println!(
            "smp: cpu {} (apic id {}) did not start, reached stage {}",
            f.cpu, f.apic_id, f.stage
        );
    }
    // SAFETY: booted once, here, on the bootstrap processor before any other core runs kernel
    // code.
    let image = unsafe {
        image_common::boot::Start::<system::System, _, _>::new(
            &usermode::USER,
            selftest::KERNEL_TESTS,
            USER_ELF,
        )
    };
    image_common::boot::run(
        &cmdline,
        (report.online, report.failure_count),
        None,
        |cfg| {
            if test {
                selftest::after_smp(cfg, report.expected);
            }
        },
        image,
    )
}

/// An application processor: sets up `syscall`, then waits for the release and schedules
/// ([`image_common::boot::secondary`]).
fn ap_main(cpu: CpuIndex) -> ! {
    usermode::init_cpu();
    image_common::boot::secondary::<X86Hal, _, _>(cpu, &usermode::USER, || {})
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    hal_x86::panic_report(info)
}
