//! Fixed capacities of the kernel's object tables. The kernel has no allocator: every table is
//! an array of this size inside [`Kernel`](crate::Kernel).

/// Cores (CPUs) the kernel supports; a kernel instance uses `0..cores` of them.
pub const MAX_CPUS: usize = 8;
/// Thread control blocks.
pub const MAX_THREADS: usize = 64;
/// Endpoints.
pub const MAX_ENDPOINTS: usize = 64;
/// Notifications.
pub const MAX_NOTIFICATIONS: usize = 64;
/// Address spaces.
pub const MAX_ASPACES: usize = 16;
/// Memory regions (objects of [`ObjRef::Memory`](crate::ObjRef::Memory)): the boot regions
/// given to the root task and every region split from them. Each region names a physical range
/// of any size, so this bounds the number of pieces memory is cut into, not its amount. Also the
/// largest mapping tag plus one ([`MapTag`](crate::hal::MapTag) is the region index + 1, and
/// x86_64 keeps it in the ten software bits of a page-table entry).
pub const MAX_MEMS: usize = 512;
/// Device interrupt lines with a handler object (`0..MAX_IRQS`, numbered as the platform
/// numbers them: see [`Hal::irq_line_available`](crate::Hal::irq_line_available)). 128 covers
/// the 48 inputs of `-M microvm`'s two I/O APICs, the virt board's virtio-mmio transports (SPI
/// 16..48) and the i.MX6's peripherals up to its Ethernet controller (SPI 118).
pub const MAX_IRQS: usize = 128;
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
