//! The user ELF: every program of [`servers::programs`] in one static binary, linked at
//! [`servers::image::USER_BASE`] by `user.ld`. The boot code starts each thread at `_start` with
//! its role and two arguments in `rdi`, `rsi`, `rdx`.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("user is a bare-metal user program: the x86_64 image embeds and runs it");
}

#[cfg(target_os = "none")]
mod user {
    /// Entry of every user thread.
    #[cfg(not(target_arch = "arm"))]
    #[unsafe(no_mangle)]
    #[unsafe(link_section = ".text._start")]
    pub extern "C" fn _start(role: u64, a: u64, b: u64) -> ! {
        servers::programs::run(role, a, b)
    }

    /// Entry of every user thread (ARMv7: the three arguments in `r0..r2`, one word each).
    #[cfg(target_arch = "arm")]
    #[unsafe(no_mangle)]
    #[unsafe(link_section = ".text._start")]
    pub extern "C" fn _start(role: usize, a: usize, b: usize) -> ! {
        servers::programs::run(role as u64, a as u64, b as u64)
    }

    #[panic_handler]
    fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
        servers::uprintln!("user panic: {info}");
        servers::debug::panicked();
        servers::sys::park()
    }
}
