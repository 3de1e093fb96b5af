//! The limits a user program sees: how many cores, capability slots and priorities there are,
//! the page size, where user memory ends, and how many words a message has. The kernel sizes its
//! tables by these (and re-exports them from `kernel::config`).

/// Cores (CPUs) the kernel supports; a kernel instance uses `0..cores` of them.
pub const MAX_CPUS: usize = 8;
/// Capability slots per thread (each thread has its own CSpace).
pub const CSPACE_SLOTS: usize = 32;
/// Priority levels: `0..NUM_PRIOS`, higher runs first.
pub const NUM_PRIOS: usize = 32;
/// Size of a page (mapping granularity).
pub const PAGE_SIZE: usize = 4096;
/// Mappings must lie below this user-space limit (128 TiB minus one page on 64-bit targets,
/// 2 GiB on 32-bit). On x86_64 the highest canonical user page (`0x7FFF_FFFF_F000`) is never
/// mappable: a `syscall` in its last bytes would return to the non-canonical address `1 << 47`,
/// which `sysretq` cannot do (and `iretq` would fault in ring 0).
pub const USER_TOP: usize = if usize::BITS >= 64 {
    (1 << 47) - PAGE_SIZE
} else {
    1 << 31
};
/// Message words per IPC (besides the badge).
pub const MSG_WORDS: usize = 4;
/// Device interrupt lines (`0..DEVICE_IRQS`, numbered as the platform numbers them: the
/// kernel's `Hal::irq_line_available` says which exist). 128 covers the 48 inputs of
/// `-M microvm`'s two I/O APICs, the virt board's virtio-mmio transports (SPI 16..48) and the
/// i.MX6's peripherals up to its Ethernet controller (SPI 118).
pub const DEVICE_IRQS: usize = 128;
/// The timer-tick line of core `c` is `TICK_IRQ_BASE + c` (`c` below the kernel's core
/// count). It is issued, bound and acknowledged like a device line, but bound only to its own
/// core: while it is unmasked, that core's next timer tick (100 Hz) signals the bound
/// notification and masks the line until `AckIrq`. It is how a program sleeps in `Wait` with
/// a deadline: acknowledge the line, then wait; a tick or the awaited signal wakes it.
pub const TICK_IRQ_BASE: usize = DEVICE_IRQS;
/// Lines with a handler object: the device lines, then one timer-tick line per core.
pub const MAX_IRQS: usize = DEVICE_IRQS + MAX_CPUS;
