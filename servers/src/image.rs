//! What the image's boot code and the user programs agree on.

/// Address the user ELF is linked at.
pub const USER_BASE: u64 = 0x40_0000;
/// Top of the highest user stack; thread `i` of an address space has its stack below
/// `USER_STACK_TOP - i * USER_STACK_STRIDE`.
#[cfg(not(target_arch = "arm"))]
pub const USER_STACK_TOP: u64 = 0x7FFF_0000_0000;
/// Top of the highest user stack (ARMv7: below the kernel's RAM window at 0x4000_0000, which
/// every address space maps).
#[cfg(target_arch = "arm")]
pub const USER_STACK_TOP: u64 = 0x3FF0_0000;
/// Distance between the stacks of threads sharing an address space.
pub const USER_STACK_STRIDE: u64 = 0x10_0000;
/// Size of each user stack.
pub const USER_STACK_SIZE: u64 = 32 * 1024;
/// The page the pager test touches before it is mapped.
#[cfg(not(target_arch = "arm"))]
pub const PAGER_TEST_ADDR: u64 = 0x5000_0000;
/// The page the pager test touches before it is mapped (ARMv7: user space is below
/// 0x4000_0000).
#[cfg(target_arch = "arm")]
pub const PAGER_TEST_ADDR: u64 = 0x3000_0000;

/// Program roles (`_start`'s first argument).
pub mod role {
    /// The root task: starts the others (a = thread caps from slot
    /// [`ROOT_FIRST_THREAD`](super::slot::ROOT_FIRST_THREAD) on, b = slot of the thread to bind
    /// the pager to, 0 for none).
    pub const ROOT: u64 = 1;
    /// Ping-pong client (a = core, b = round trips).
    pub const CLIENT: u64 = 2;
    /// Ping-pong server (a = core).
    pub const SERVER: u64 = 3;
    /// Faults on purpose (a = one of [`fault`](super::fault)).
    pub const FAULT: u64 = 4;
    /// System-call error checks.
    pub const ERRORS: u64 = 5;
    /// Pager of the pager test.
    pub const PAGER: u64 = 6;
    /// Touches an unmapped page that its pager maps.
    pub const PAGED: u64 = 7;
    /// One-way IPC benchmark client (a = [`bench::VARIANT_SAME_AS`](super::bench) or
    /// `VARIANT_CROSS_AS`).
    pub const BENCH_IPC_CLIENT: u64 = 8;
    /// One-way IPC benchmark server (a = variant, as the client's).
    pub const BENCH_IPC_SERVER: u64 = 9;
    /// Throughput benchmark client (a = record, see [`bench::record`](super::bench::record);
    /// b = sampling interval in counter ticks).
    pub const BENCH_TP_CLIENT: u64 = 10;
    /// Throughput benchmark server: answers every Call, forever.
    pub const BENCH_TP_SERVER: u64 = 11;
    /// `mode=stackoverflow`: asks the image for a kernel stack overflow
    /// ([`debug_nr::KERNEL_STACK_OVERFLOW`](super::debug_nr::KERNEL_STACK_OVERFLOW)).
    pub const STACK_OVERFLOW: u64 = 12;
    /// `mode=fuzz`: the system-call fuzzer (a = calls to make, b = seed; see
    /// [`fuzz`](crate::programs::fuzz)), allowed every call.
    pub const FUZZ: u64 = 13;
    /// `mode=fuzz` under `lock=none`: the fuzzer restricted to the common calls (IPC,
    /// notifications, Yield, AckIrq), the only ones `NoLock`'s contract allows while other cores
    /// run (a and b as for [`FUZZ`]).
    pub const FUZZ_COMMON_ONLY: u64 = 14;
    /// `mode=fuzz`: the drain server of one fuzzer: answers every Call on its endpoint, forever.
    pub const FUZZ_DRAIN: u64 = 15;
    /// The example program: prints a greeting from its core, then reports DONE (a = core). See
    /// `docs/programs.md`.
    pub const HELLO: u64 = 16;
    /// `mode=bench bench=memory`: the loader of the memory system (see
    /// [`memory`](crate::memory)): creates the pagers and the workload's threads at run time
    /// (a = [`memory::Spec::to_word`](super::memory::Spec::to_word), b =
    /// [`memory::Topology::to_word`](super::memory::Topology::to_word): the cores and the
    /// memory nodes the firmware describes).
    pub const LOADER: u64 = 17;
    /// `mode=net`: the network server (see [`net`](crate::net)): a virtio-net driver, a TCP/IP
    /// stack and a RESP2 key-value server on core 0; runs as the root thread, with the root's
    /// capabilities, for ever.
    pub const NET: u64 = 18;
}

/// What a [`role::FAULT`] program does.
pub mod fault {
    /// Reads an unmapped address (#PF).
    pub const BAD_POINTER: u64 = 0;
    /// Executes `ud2` (#UD).
    pub const INVALID_OPCODE: u64 = 1;
    /// Divides by zero (#DE).
    pub const DIVIDE_BY_ZERO: u64 = 2;
    /// Writes to a read-only page of its own (the program's `.rodata`): a protection fault.
    pub const WRITE_READ_ONLY: u64 = 3;
    /// Jumps to code copied into a writable, non-executable page (its stack): refused by NX
    /// (x86_64) or XN (ARMv7).
    pub const EXECUTE_DATA: u64 = 4;
    /// Jumps into kernel memory ([`KERNEL_ADDR`](super::KERNEL_ADDR)), which every address
    /// space maps for the kernel only.
    pub const JUMP_TO_KERNEL: u64 = 5;
    /// Every kind, in the order the test system starts them.
    pub const ALL: [u64; 6] = [
        BAD_POINTER,
        INVALID_OPCODE,
        DIVIDE_BY_ZERO,
        WRITE_READ_ONLY,
        EXECUTE_DATA,
        JUMP_TO_KERNEL,
    ];
}

/// An address in kernel memory that every user address space maps for the kernel only: the
/// start of the kernel image in the higher half (x86_64: linked at `0xFFFF_FFFF_8010_0000`,
/// see `hal-x86`'s linker script).
#[cfg(not(target_arch = "arm"))]
pub const KERNEL_ADDR: u64 = 0xFFFF_FFFF_8010_0000;
/// An address in kernel memory that every user address space maps for the kernel only (ARMv7:
/// the kernel's RAM window starts at 0x4000_0000; its sections are privileged-only).
#[cfg(target_arch = "arm")]
pub const KERNEL_ADDR: u64 = 0x4000_0000;

/// Capability slots the boot code fills.
pub mod slot {
    /// Every program: its park notification (READ), waited on when it has nothing left to do.
    pub const PARK: usize = 0;
    /// Client, server, errors, pager: the endpoint it works with.
    pub const EP: usize = 1;
    /// Root: the pager test's endpoint (WRITE), to bind as pager.
    pub const ROOT_PAGER_EP: usize = 1;
    /// Root: first thread capability.
    pub const ROOT_FIRST_THREAD: usize = 2;
    /// Errors test: a notification it may signal and wait on (READ | WRITE).
    pub const ERRORS_NTFN: usize = 2;
    /// Errors test: a slot left empty.
    pub const ERRORS_EMPTY: usize = 9;
    /// Pager: the faulting thread's address space (WRITE).
    pub const PAGER_ASPACE: usize = 2;
    /// Pager: a one-page memory region to map (READ | WRITE).
    pub const PAGER_FRAME: usize = 3;
    /// Root, `mode=bench bench=memory` only: the first of `cores` address spaces with the user
    /// ELF loaded (all rights), one per worker of the memory system.
    pub const ROOT_MEMORY_SPACES: usize = 11;
    /// Root: three empty slots its memory tests use (threads fill the slots below).
    pub const ROOT_SCRATCH: usize = 21;
    /// Root: the first of [`ROOT_MEM_SLOTS`] slots with a RAM region (all rights; the free RAM
    /// of the machine, one region per range, the rest empty).
    pub const ROOT_MEM: usize = 24;
    /// Root: how many RAM-region slots.
    pub const ROOT_MEM_SLOTS: usize = 4;
    /// Root: the first of [`ROOT_DEVICE_SLOTS`] slots with a device-memory region.
    pub const ROOT_DEVICE: usize = 28;
    /// Root: how many device-region slots.
    pub const ROOT_DEVICE_SLOTS: usize = 2;
    /// Root: the control capability (MANAGE: create threads, address spaces, endpoints,
    /// notifications).
    pub const ROOT_CONTROL: usize = 30;
    /// Root: its own address space (WRITE | MANAGE).
    pub const ROOT_ASPACE: usize = 31;

    /// Fuzzer: its drain server's endpoint (WRITE only, badge core + 1): Call and Send always
    /// come back.
    pub const FUZZ_EP: usize = 1;
    /// Fuzzer: a notification it may only signal (WRITE).
    pub const FUZZ_NTFN: usize = 2;
    /// Fuzzer: its own notification (READ | WRITE), waited on only right after a Signal.
    pub const FUZZ_OWN_NTFN: usize = 3;
    /// Fuzzer: an address space of its own to map into and delete (WRITE | MANAGE), never the
    /// one it runs in; no user ELF is loaded there.
    pub const FUZZ_ASPACE: usize = 4;
    /// Fuzzer: a small RAM region of its own (all rights).
    pub const FUZZ_MEM: usize = 5;
    /// Fuzzer: a device region, shared with the other fuzzers (all rights), or empty.
    pub const FUZZ_DEVICE: usize = 6;
    /// Fuzzer: the control capability (MANAGE).
    pub const FUZZ_CONTROL: usize = 7;
    /// Fuzzer: the handler of an interrupt line nothing raises (all rights).
    pub const FUZZ_IRQ: usize = 8;
    /// Fuzzer: an inactive thread in its [`FUZZ_ASPACE`] (all rights).
    pub const FUZZ_THREAD: usize = 9;
    /// Fuzzer: the first of the slots its calls fill and empty at will (up to the last slot).
    pub const FUZZ_SCRATCH: usize = 10;
}

/// Debug call numbers (`rax`), handled by the image rather than the kernel core.
pub mod debug_nr {
    /// Console output: `a` = byte count (<= 32), the bytes packed little-endian in the other
    /// four argument registers. Lines are collected per thread and printed whole.
    pub const PUT: usize = 0x100;
    /// The program finished its work (counted; the image shuts down when all reported).
    pub const DONE: usize = 0x101;
    /// Root only: stop the machine, `a` = 0 success, else failure.
    pub const EXIT: usize = 0x102;
    /// Root only: let the other cores start scheduling.
    pub const RELEASE: usize = 0x103;
    /// A user program panicked (counted as a failure).
    pub const PANIC: usize = 0x104;
    /// Facts: `a` = [`info`](super::info) selector.
    pub const INFO: usize = 0x105;
    /// The kernel-read counter (the A9 global timer on sabrelite, the TSC or the generic
    /// counter elsewhere), for machines without a user-readable one: result word 1 holds its
    /// low 32 bits, word 2 its high 32 bits.
    pub const COUNTER: usize = 0x106;
    /// A benchmark result for the image to print: `a` = record (see
    /// [`bench::record`](super::bench::record)), `b` = sample index below
    /// [`bench::MAX_RUNS`](super::bench::MAX_RUNS) (the value is added to that sample, so that
    /// several clients sum up) or a [`bench::param`](super::bench::param); `c`, `d` = the value's
    /// low and high 32 bits.
    pub const BENCH: usize = 0x107;
    /// Only in `mode=stackoverflow`: the image recurses on the calling core's kernel stack
    /// until it runs into the guard page, to show that the overflow is caught and reported
    /// (`kernel stack overflow on CPU n ...`); never returns.
    pub const KERNEL_STACK_OVERFLOW: usize = 0x108;
}

/// What the image and the memory system's loader agree on (`mode=bench bench=memory`).
pub mod memory {
    /// Most pages a task of the workload allocates (`pages=`).
    pub const MAX_PAGES: usize = 1024;
    /// Pages per task unless `pages=` says otherwise.
    pub const DEFAULT_PAGES: usize = 64;
    /// Pages of each per-core partition (the global pager owns `cores` times as many).
    pub const PARTITION_PAGES: usize = 2048;
    /// Most memory nodes `nodes=` describes.
    pub const MAX_NODES: usize = 4;
    /// The user-level locks the pagers share state under, in the order of [`Spec::lock`]: the
    /// kernel's `lock=` names (the pagers use the same algorithm as the kernel).
    pub const LOCKS: [&str; 8] = [
        "clh", "ticket", "fine", "rtm", "none", "mcs", "qspin", "cna",
    ];

    /// The memory benchmark's configuration: what the command line asked for.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Spec {
        /// One pager on core 0 for every core (`pager=global`) instead of one per core.
        pub global: bool,
        /// The pagers start with the buddy allocator (`alloc=buddy`) instead of the AVL tree.
        pub buddy: bool,
        /// Memory nodes (`nodes=`, 1..=[`MAX_NODES`]): cores and memory are split into this
        /// many nodes, in order, and the partitions follow them.
        pub nodes: usize,
        /// Pages each task allocates, touches and frees (1..=[`MAX_PAGES`]).
        pub pages: usize,
        /// Index of the lock in [`LOCKS`].
        pub lock: usize,
    }

    impl Spec {
        /// The record's `variant`.
        pub fn variant(&self) -> &'static str {
            if self.global {
                "global"
            } else {
                "percore"
            }
        }

        /// One word (at most 32 bits, for ARMv7 registers): bit 0 global, bit 1 buddy, bits
        /// 2..4 nodes - 1, bits 5..7 lock, bits 8..23 pages.
        pub fn to_word(&self) -> usize {
            usize::from(self.global)
                | usize::from(self.buddy) << 1
                | (self.nodes - 1) << 2
                | self.lock << 5
                | self.pages << 8
        }

        /// The spec [`Spec::to_word`] made `w` from, if `w` is one.
        pub fn from_word(w: usize) -> Option<Spec> {
            let s = Spec {
                global: w & 1 != 0,
                buddy: w & 2 != 0,
                nodes: (w >> 2 & 7) + 1,
                lock: w >> 5 & 7,
                pages: w >> 8 & 0xFFFF,
            };
            let ok = s.nodes <= MAX_NODES
                && s.lock < LOCKS.len()
                && (1..=MAX_PAGES).contains(&s.pages)
                && w >> 24 == 0;
            ok.then_some(s)
        }
    }

    /// Most cores a [`Topology`] word describes.
    pub const MAX_TOPOLOGY_CORES: usize = 8;
    /// RAM-region slots a [`Topology`] word gives the node of (the root's
    /// [`ROOT_MEM_SLOTS`](super::slot::ROOT_MEM_SLOTS)).
    pub const TOPOLOGY_REGIONS: usize = super::slot::ROOT_MEM_SLOTS;
    const _: () = assert!(MAX_TOPOLOGY_CORES >= abi::limits::MAX_CPUS && MAX_NODES <= 4);

    /// Where a machine's memory nodes were read from.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum NumaSource {
        /// The ACPI System Resource Affinity Table (x86).
        Srat,
    }

    impl NumaSource {
        /// The name the loader prints (`numa: srat, 2 nodes`).
        pub fn name(self) -> &'static str {
            match self {
                NumaSource::Srat => "srat",
            }
        }
    }

    /// The memory nodes the firmware describes, in the image's dense numbering (node 0, 1, ...,
    /// in the order of the firmware's proximity domains).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Nodes {
        /// Where they come from.
        pub source: NumaSource,
        /// How many (1..=[`MAX_NODES`]).
        pub count: usize,
        /// The node of each core.
        pub core: [u8; MAX_TOPOLOGY_CORES],
        /// The node of the RAM region in slot `ROOT_MEM + i` (the image cuts the free RAM at
        /// node boundaries, so that each region lies in one node); 0 for an empty slot.
        pub region: [u8; TOPOLOGY_REGIONS],
    }

    /// What the image tells the memory system's loader about the machine: its cores and, where
    /// the firmware describes them, the memory nodes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Topology {
        /// Cores the kernel runs on (1..=[`MAX_TOPOLOGY_CORES`]).
        pub cores: usize,
        /// The firmware's memory nodes, `None` where it describes none (ARMv7, `-M microvm`,
        /// a PC without an SRAT) or a description the image could not use.
        pub nodes: Option<Nodes>,
    }

    impl Topology {
        /// One word of at most 30 bits (ARMv7 registers): bits 0..2 cores - 1, bit 3 nodes
        /// present (SRAT), bits 4..5 node count - 1, bits 6..21 the cores' nodes (2 bits each),
        /// bits 22..29 the regions' nodes (2 bits each).
        pub fn to_word(&self) -> usize {
            let mut w = (self.cores - 1) & 7;
            if let Some(n) = &self.nodes {
                w |= 1 << 3 | ((n.count - 1) & 3) << 4;
                for (c, &node) in n.core.iter().enumerate() {
                    w |= usize::from(node & 3) << (6 + 2 * c);
                }
                for (r, &node) in n.region.iter().enumerate() {
                    w |= usize::from(node & 3) << (22 + 2 * r);
                }
            }
            w
        }

        /// The topology [`Topology::to_word`] made `w` from, if `w` is one: no bit above 29, and
        /// every core's and region's node below the count (bits of absent cores are 0).
        pub fn from_word(w: usize) -> Option<Topology> {
            if w >> 30 != 0 {
                return None;
            }
            let cores = (w & 7) + 1;
            if w & 1 << 3 == 0 {
                return (w >> 4 == 0).then_some(Topology { cores, nodes: None });
            }
            let count = (w >> 4 & 3) + 1;
            let field = |at: usize| (w >> at & 3) as u8;
            let core: [u8; MAX_TOPOLOGY_CORES] = core::array::from_fn(|c| field(6 + 2 * c));
            let region: [u8; TOPOLOGY_REGIONS] = core::array::from_fn(|r| field(22 + 2 * r));
            let ok = core.iter().chain(&region).all(|&n| usize::from(n) < count)
                && core[cores..].iter().all(|&n| n == 0);
            let nodes = Nodes {
                source: NumaSource::Srat,
                count,
                core,
                region,
            };
            ok.then_some(Topology {
                cores,
                nodes: Some(nodes),
            })
        }
    }
}

/// [`debug_nr::INFO`] selectors.
pub mod info {
    /// The calling core.
    pub const CPU: usize = 0;
    /// Cores online.
    pub const CPUS: usize = 1;
    /// Whether the test suite runs (1) or the demo (0).
    pub const TEST_MODE: usize = 2;
    /// The caller's thread index.
    pub const THREAD: usize = 3;
    /// Which counter user programs read (see [`counter`](super::counter)).
    pub const COUNTER: usize = 4;
    /// That counter's frequency in Hz as the image believes it (0: unknown).
    pub const COUNTER_HZ: usize = 5;
    /// Benchmark mode: samples per record (`runs=`, 1 to
    /// [`bench::MAX_RUNS`](super::bench::MAX_RUNS)).
    pub const RUNS: usize = 6;
    /// The core the root task's device test routes its interrupt to: the last core, or the
    /// root's own core 0 under `lock=none` (whose objects must stay per core).
    pub const IRQ_CORE: usize = 7;
    /// The largest selector.
    pub const MAX: usize = 7;
}

/// [`info::COUNTER`] values: how a user program reads time.
pub mod counter {
    /// No counter: reads give 0.
    pub const NONE: usize = 0;
    /// x86_64 `rdtsc` (user mode may execute it: CR4.TSD clear).
    pub const TSC: usize = 1;
    /// ARMv7 PMU cycle counter PMCCNTR (`mrc p15, 0, r, c9, c13, 0`), enabled for user mode
    /// (PMUSERENR.EN) on every core by the HAL in benchmark mode.
    pub const PMCCNTR: usize = 2;
    /// The [`debug_nr::COUNTER`](super::debug_nr::COUNTER) call: the kernel reads its counter
    /// (sabrelite: QEMU's Cortex-A9 has no PMU cycle counter, and its global timer shares the
    /// private peripheral page with the GIC CPU interface, which user space must not see).
    pub const DEBUGCALL: usize = 3;
}

/// The benchmark protocol between the bench programs and the image (`mode=bench`), which
/// collects their samples through [`debug_nr::BENCH`] and prints the
/// records (`docs/bench-protocol.md`).
pub mod bench {
    /// Samples per record (after warm-up) unless `runs=` on the kernel command line says
    /// otherwise ([`info::RUNS`](super::info::RUNS)).
    pub const DEFAULT_RUNS: usize = 16;
    /// Most samples per record.
    pub const MAX_RUNS: usize = 64;
    /// Warm-up iterations of the one-way IPC benchmarks.
    pub const WARMUP: usize = 16;
    /// Round trips per `ipc-roundtrip` sample, and `Null` calls per `null-syscall` sample (the
    /// sample is their mean).
    pub const BATCH: usize = 100;
    /// Batches run before the `ipc-roundtrip` and `null-syscall` samples (not recorded), and
    /// before the `lock-pair` ones.
    pub const WARMUP_BATCHES: usize = 2;
    /// Lock and unlock pairs per `lock-pair` sample (the sample is their mean): enough that
    /// the coarsest counter (sabrelite's 100 MHz global timer, one tick per 10 instructions
    /// under `-icount shift=0`) resolves a hundredth of an instruction per pair.
    pub const LOCK_BATCH: usize = 1000;
    /// Back-to-back counter reads whose minimum is the counter-read overhead.
    pub const OVERHEAD_TRIES: usize = 64;
    /// Sampling intervals a throughput client runs before its samples (not recorded).
    pub const WARMUP_INTERVALS: usize = 1;
    /// Sampling intervals per second of counter ticks: the interval is `counter_hz / this`
    /// ticks (2.5 ms of guest time).
    pub const INTERVALS_PER_SECOND: u64 = 400;
    /// Client and server in one address space (IPC benchmark variant).
    pub const VARIANT_SAME_AS: u64 = 0;
    /// Client and server in two address spaces.
    pub const VARIANT_CROSS_AS: u64 = 1;

    /// Record numbers (`debug_nr::BENCH` argument `a`).
    pub mod record {
        /// `ipc-call`, same address space (`+ 3` for cross-address-space: see [`ipc`]).
        pub const IPC_CALL: usize = 0;
        /// `ipc-replyrecv`, same address space.
        pub const IPC_REPLYRECV: usize = 1;
        /// `ipc-roundtrip`, same address space.
        pub const IPC_ROUNDTRIP: usize = 2;
        /// `multicore-pingpong`.
        pub const MULTICORE: usize = 6;
        /// `client-server`.
        pub const CLIENT_SERVER: usize = 7;
        /// `memory-alloc`: a task's page faults (touching fresh pages), ticks per page.
        pub const MEM_ALLOC: usize = 8;
        /// `memory-free`: a task's explicit frees, ticks per page.
        pub const MEM_FREE: usize = 9;
        /// `memory-ipc`, variant `same-core`: a null request to the pager of the caller's core.
        pub const MEM_IPC_SAME: usize = 10;
        /// `memory-ipc`, variant `cross-core`: a null request to the pager of another core.
        pub const MEM_IPC_CROSS: usize = 11;
        /// `null-syscall` (no variant): the mean cost of one `Null` system call over a batch
        /// of [`BATCH`](super::BATCH), reported by the cross-address-space IPC client (the last
        /// program of `bench=ipc` to run) after its IPC records.
        pub const NULL_SYSCALL: usize = 12;
        /// The first of the lock-cost records, which the image measures itself at boot in
        /// kernel mode (`bench=ipc`; no program reports them): record
        /// [`lock_pair`]`(lock, mode)` for lock [`LOCK_TICKET`] or [`LOCK_KERNEL`] and mode
        /// [`PAIR_PLAIN`], [`PAIR_IRQSAVE`] or [`PAIR_IRQSAVE_MASKED`].
        pub const LOCK_PAIR: usize = 13;
        /// [`lock_pair`]'s lock: a ticket lock of the image's own (variant `ticket`).
        pub const LOCK_TICKET: usize = 0;
        /// [`lock_pair`]'s lock: the kernel's own lock as booted (variant: its `lock=` name).
        pub const LOCK_KERNEL: usize = 1;
        /// [`lock_pair`]'s mode: `lock` + `unlock` (`lock-pair`).
        pub const PAIR_PLAIN: usize = 0;
        /// [`lock_pair`]'s mode: `lock_irqsave` + `unlock_irqrestore` entered with interrupts
        /// enabled (`lock-pair-irqsave`).
        pub const PAIR_IRQSAVE: usize = 1;
        /// [`lock_pair`]'s mode: `lock_irqsave` + `unlock_irqrestore` entered with interrupts
        /// masked, as in an interrupt handler (`lock-pair-irqsave-masked`).
        pub const PAIR_IRQSAVE_MASKED: usize = 2;
        /// Modes per lock.
        pub const PAIR_MODES: usize = 3;
        /// Records in all.
        pub const COUNT: usize = LOCK_PAIR + 2 * PAIR_MODES;

        /// The IPC record `base` (one of the three above) of IPC variant `variant`.
        pub const fn ipc(base: usize, variant: u64) -> usize {
            base + 3 * variant as usize
        }

        /// The lock-cost record of `lock` ([`LOCK_TICKET`], [`LOCK_KERNEL`]) in `mode`
        /// ([`PAIR_PLAIN`], [`PAIR_IRQSAVE`], [`PAIR_IRQSAVE_MASKED`]).
        pub const fn lock_pair(lock: usize, mode: usize) -> usize {
            LOCK_PAIR + PAIR_MODES * lock + mode
        }
    }

    /// Parameters a program reports with `debug_nr::BENCH` (argument `b`).
    pub mod param {
        /// The counter-read cost subtracted from every sample (one-way benchmarks), or from
        /// every batch (`ipc-roundtrip`, before dividing by the batch size).
        pub const OVERHEAD: usize = 0x100;
        /// Throughput benchmarks: the measured cost of one counter read (reported in `extra`,
        /// not subtracted: one read per round trip is part of the loop).
        pub const READ_COST: usize = 0x101;
        /// The first of [`EXTRAS`] counters a record's `extra` reports (added up over the
        /// reporters): `EXTRA + k` adds to counter `k`.
        pub const EXTRA: usize = 0x110;
        /// Counters per record.
        pub const EXTRAS: usize = 4;
    }
}
