//! Builds the initial system into a kernel object, for any architecture implementing [`Arch`].
//!
//! # The initial objects (per core `c`)
//! * a ping-pong pair: client and server threads (priority 10) on core `c`, each in its own
//!   address space, sharing endpoint `ep[c]` (client WRITE with badge `c + 1`, server READ);
//! * a park notification per core, which finished programs wait on forever (per core so that
//!   even the `none` strategy sees no object shared between cores).
//!
//! Core 0 also runs the root task (priority 31, so it runs first), holding a MANAGE capability to
//! every other thread. Test mode adds: one faulting thread per `servers::image::fault::ALL` kind
//! (bad pointer, invalid opcode, division, write to a read-only page, execution of a data page,
//! a jump into kernel memory) on the last core (priority 20, so
//! they fault before that core's pair runs), the system-call error test on core 0 (priority
//! 5), and, if [`Setup::pager_test`], the pager test on core 1 (or 0): a pager thread holding the
//! faulting thread's address space and a frame, bound as its pager by the root task.
//!
//! Benchmark mode ([`Setup::bench`]) builds the benchmark's threads instead (see
//! [`build_bench`]): no demo pairs, no tests. Fuzz mode ([`Setup::fuzz`]) adds a system-call
//! fuzzer and its drain server to every core's ping-pong pair (see [`build_fuzz`]).
//!
//! The kernel object lives in a static buffer (it is ~100 KiB), written once by
//! [`place_kernel`] before any other core can see it.

use core::cell::UnsafeCell;
use core::fmt::{Arguments, Debug};
use core::marker::PhantomData;
use core::mem::MaybeUninit;

use hal_common::{ArchHal, UserPaging};

use crate::elf::{Elf, ElfError, ElfTarget};
use kernel::config::{CSPACE_SLOTS, MAX_ASPACES, MAX_CPUS, MAX_THREADS, PAGE_SIZE};
use kernel::{
    AsId, CapSlot, EndpointId, Hal, IrqId, Kernel, MemId, MemKind, NotificationId, ObjRef, Rights,
    Strategy, ThreadId,
};
use servers::image::{fault, role, slot, USER_STACK_SIZE, USER_STACK_STRIDE, USER_STACK_TOP};

/// What an image supplies to build the initial system: its HAL (paging, user register
/// context, console), the user ELF and the machine's device memory. Everything the HAL does is
/// a provided method on [`Arch::Hal`]'s [`UserPaging`] and [`ArchHal`] sides.
pub trait Arch {
    /// The HAL the kernel object is built with.
    type Hal: Hal + ArchHal + UserPaging + Default + 'static;
    /// The user ELF this image accepts (class, machine, the top of user memory).
    const ELF: ElfTarget;

    /// The image's side of the system builder, for the parsed user ELF `elf`.
    fn from_elf(elf: Elf) -> Self
    where
        Self: Sized;
    /// The parsed user ELF every program runs.
    fn elf(&self) -> &Elf;
    /// Parses and checks `data` as this image's user ELF.
    fn parse_elf(data: &'static [u8]) -> Result<Elf, ElfError> {
        Elf::parse(data, &Self::ELF)
    }
    /// A new, empty user address space (the root of its page tables), or `None` when out of
    /// memory.
    fn new_address_space(&self) -> Option<u64> {
        Self::Hal::new_address_space()
    }
    /// Loads the user ELF into the address space rooted at `root`.
    fn load_user(&self, root: u64) -> Result<(), ElfError> {
        self.elf().load_into::<Self::Hal>(root)
    }
    /// Maps a user stack of `size` bytes ending at `top` into the space rooted at `root`.
    fn map_stack(&self, root: u64, top: u64, size: u64) -> Result<(), ElfError> {
        crate::elf::map_stack::<Self::Hal>(root, top, size)
    }
    /// Sets thread `t`'s first user context: the user ELF's entry, stack pointer `sp` and the
    /// three arguments `args` (narrowed to the architecture's word size; user addresses and
    /// arguments fit it).
    ///
    /// # Safety
    /// `t` must not have run; its entry and the stack below `sp` must be mapped
    /// user-accessible in its address space.
    unsafe fn set_initial_context(&self, t: ThreadId, sp: u64, args: [u64; 3]) {
        let entry = self.elf().entry as usize;
        // SAFETY: the caller's contract. The stack pointers the builder passes are aligned as
        // at the entry of a called function on both architectures.
        unsafe { Self::Hal::set_initial_context(t, entry, sp as usize, args.map(|a| a as usize)) };
    }
    /// A free physical frame, or `None` when out of memory.
    fn alloc_frame(&self) -> Option<u64> {
        Self::Hal::alloc_frame()
    }
    /// Hands over all RAM that nothing uses yet (not the kernel, its page-table pool or the
    /// boot image's frames): writes up to `out.len()` page-aligned ranges `(start, end)` and
    /// returns how many; [`Arch::alloc_frame`] finds nothing afterwards. They become the root
    /// task's RAM regions.
    fn take_free_ram(&self, out: &mut [(u64, u64)]) -> usize {
        Self::Hal::take_free_ram(out)
    }
    /// The device-memory ranges `(start, end)` user drivers may own on this machine (never
    /// the kernel's own devices: interrupt controllers, its console, its timers).
    fn device_regions(&self) -> &'static [(u64, u64)];
    /// The memory nodes the firmware describes for the kernel cores `0..cores` (x86: the ACPI
    /// SRAT), for the memory system (see [`numa`](crate::numa)); `None` (the default) where it
    /// describes none.
    fn numa(&self, cores: usize) -> Option<crate::numa::Firmware> {
        let _ = cores;
        None
    }
    /// Physical frames allocated so far.
    fn frames_allocated(&self) -> u64 {
        Self::Hal::frames_allocated()
    }
    /// Prints one line on the console.
    fn println(&self, args: Arguments<'_>) {
        Self::Hal::println(args);
    }
    /// Reports a boot failure and stops the machine.
    fn fail(&self, args: Arguments<'_>) -> ! {
        crate::boot::fail::<Self::Hal>(args)
    }
    /// Records `t` as core `core`'s ping-pong client for the debug calls (by default in
    /// [`DEBUG_CALLS`](crate::debugcalls::DEBUG_CALLS), which the images serve).
    fn set_client(&self, core: usize, t: ThreadId) {
        crate::debugcalls::DEBUG_CALLS.set_client(core, t);
    }
    /// Records the faulting threads on core `core` (one per `servers::image::fault::ALL` kind)
    /// for the debug calls (by default in [`DEBUG_CALLS`](crate::debugcalls::DEBUG_CALLS)).
    fn set_faulters(&self, core: usize, faulters: [Option<ThreadId>; crate::debugcalls::FAULTERS]) {
        crate::debugcalls::DEBUG_CALLS.set_faulters(core, faulters);
    }
}

/// What only an image knows of its machines: its HAL, the user ELF it accepts, the device
/// memory user drivers may own and the memory nodes the firmware describes. [`System`] makes
/// the image's [`Arch`] of it.
pub trait Machine: 'static {
    /// The HAL the kernel object is built with.
    type Hal: Hal + ArchHal + UserPaging + Default + 'static;
    /// The user ELF this image accepts (machine, the top of user memory).
    const ELF: ElfTarget;

    /// The device-memory ranges `(start, end)` user drivers may own on this machine (never
    /// the kernel's own devices: interrupt controllers, its console, its timers).
    fn device_regions() -> &'static [(u64, u64)];
    /// The memory nodes the firmware describes for the kernel cores `0..cores` (x86: the ACPI
    /// SRAT), for the memory system (see [`numa`](crate::numa)); `None` (the default) where it
    /// describes none.
    fn numa(cores: usize) -> Option<crate::numa::Firmware> {
        let _ = cores;
        None
    }
}

/// An image's [`Arch`]: its [`Machine`] `M` with the parsed user ELF every program runs.
pub struct System<M> {
    elf: Elf,
    machine: PhantomData<M>,
}

impl<M: Machine> Arch for System<M> {
    type Hal = M::Hal;
    const ELF: ElfTarget = M::ELF;

    fn from_elf(elf: Elf) -> Self {
        Self {
            elf,
            machine: PhantomData,
        }
    }
    fn elf(&self) -> &Elf {
        &self.elf
    }
    fn device_regions(&self) -> &'static [(u64, u64)] {
        M::device_regions()
    }
    fn numa(&self, cores: usize) -> Option<crate::numa::Firmware> {
        M::numa(cores)
    }
}

/// What the run is expected to report: which threads must report DONE (each with the program
/// it runs and its core, for the reports), and how many `TEST` lines the user programs print.
///
/// The builder fills in the threads from each program's declaration in
/// `servers::programs::PROGRAMS` ([`Reports`](servers::programs::Reports)), so a new program
/// cannot be left out of the count.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Per thread index: the role of the program it runs, 0 if it need not report.
    must_report: [u64; MAX_THREADS],
    /// Per thread index: the role of the program it runs (0: no such thread).
    roles: [u64; MAX_THREADS],
    /// Per thread index: its core.
    cores: [u8; MAX_THREADS],
    /// `TEST` lines the user programs print.
    pub user_tests: usize,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            must_report: [0; MAX_THREADS],
            roles: [0; MAX_THREADS],
            cores: [0; MAX_THREADS],
            user_tests: 0,
        }
    }
}

impl Plan {
    /// Records thread `t` on `core` running program `role`, which must report DONE if
    /// `must_report`.
    pub fn add(&mut self, t: ThreadId, core: usize, role: u64, must_report: bool) {
        let i = t.index();
        self.roles[i] = role;
        self.cores[i] = core as u8;
        self.must_report[i] = if must_report { role } else { 0 };
    }

    /// Threads that must report DONE.
    pub fn finite(&self) -> usize {
        self.must_report.iter().filter(|&&r| r != 0).count()
    }

    /// Whether thread index `t` must report DONE.
    pub fn must_report(&self, t: usize) -> bool {
        self.must_report.get(t).is_some_and(|&r| r != 0)
    }

    /// The role and core of thread index `t`, if the builder made it.
    pub fn thread(&self, t: usize) -> Option<(u64, usize)> {
        let role = *self.roles.get(t)?;
        (role != 0).then(|| (role, usize::from(self.cores[t])))
    }
}

/// The shape of the initial system.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// Cores the kernel runs on.
    pub cores: usize,
    /// Test suite (`mode=test`) or demo.
    pub test: bool,
    /// Round trips of each ping-pong pair.
    pub rounds: usize,
    /// Whether the pager test runs (only in test mode).
    pub pager_test: bool,
    /// `TEST` lines the system-call error program prints.
    pub user_error_tests: usize,
    /// Benchmark mode (`mode=bench`): what runs, and the throughput sampling interval in
    /// counter ticks.
    pub bench: Option<(crate::bench::Kind, u64)>,
    /// `mode=stackoverflow`: only the root thread, running the stack-overflow program
    /// instead of the root task (see [`build`]).
    pub stack_overflow: bool,
    /// `mode=fuzz`: a system-call fuzzer on every core beside its ping-pong pair (see
    /// [`build_fuzz`]).
    pub fuzz: Option<FuzzSetup>,
    /// `mode=net`: only the root thread, running the network server (`servers::net`) with the
    /// root task's capabilities (see [`build_net`]).
    pub net: bool,
}

/// What the fuzzers of `mode=fuzz` do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FuzzSetup {
    /// Calls each fuzzer makes.
    pub calls: usize,
    /// The seed; `None`: the kernel's cycle counter at build time.
    pub seed: Option<u64>,
    /// Only the common calls (IPC, notifications, Yield, AckIrq): `lock=none`, whose contract
    /// allows no management call while other cores run.
    pub common_only: bool,
}

/// Pages of the RAM region each fuzzer gets.
const FUZZ_RAM_PAGES: usize = 16;

const STORE_SIZE: usize = 160 * 1024;

#[repr(C, align(4096))]
struct KernelStore(UnsafeCell<MaybeUninit<[u8; STORE_SIZE]>>);

// SAFETY: written once by the boot core in `place_kernel` before any other core runs kernel
// code; afterwards only shared references to the kernel inside exist.
unsafe impl Sync for KernelStore {}

static STORE: KernelStore = KernelStore(UnsafeCell::new(MaybeUninit::uninit()));

/// Moves `k` into the static kernel store and returns it for the rest of the run.
///
/// # Safety
/// Must be called at most once, by the boot core, before any other core runs kernel code.
pub unsafe fn place_kernel<S: Strategy, H: Hal>(k: Kernel<S, H>) -> &'static mut Kernel<S, H> {
    const { assert!(core::mem::size_of::<Kernel<S, H>>() <= STORE_SIZE) };
    const { assert!(core::mem::align_of::<Kernel<S, H>>() <= 4096) };
    let p = STORE.0.get() as *mut Kernel<S, H>;
    // SAFETY: the store is large and aligned enough (checked above) and, by the caller's
    // contract, written once, here, before any other core runs kernel code.
    unsafe {
        p.write(k);
        &mut *p
    }
}

/// An address space being filled.
struct Space {
    id: AsId,
    root: u64,
    threads: u64,
}

struct Builder<'a, S: Strategy, A: Arch> {
    k: &'a mut Kernel<S, A::Hal>,
    arch: &'a A,
    /// Address spaces made so far.
    spaces: usize,
    /// Each core's park notification.
    parks: [Option<NotificationId>; MAX_CPUS],
    /// The threads the root task resumes, in order.
    started: heapless::Vec<ThreadId, CSPACE_SLOTS>,
    /// The device regions made so far (see [`Builder::device`]).
    devices: [Option<MemId>; slot::ROOT_DEVICE_SLOTS],
    /// Test mode (programs that report only in tests, such as the root task, must then).
    test: bool,
    /// Every thread made, and which must report DONE (see [`Plan`]).
    plan: Plan,
}

impl<'a, S: Strategy, A: Arch> Builder<'a, S, A> {
    /// Starts building for `cores` cores, as both the demo or test system and the benchmarks
    /// do: a park notification per core, then the root task (priority 31 on core 0) in an
    /// address space of its own, returned with the root. The root task gets its real
    /// arguments in [`finish_root`], once its thread list is known.
    fn begin(
        k: &'a mut Kernel<S, A::Hal>,
        arch: &'a A,
        cores: usize,
        test: bool,
    ) -> (Self, Space, ThreadId) {
        let mut b = Builder {
            k,
            arch,
            spaces: 0,
            parks: [None; MAX_CPUS],
            started: heapless::Vec::new(),
            devices: [None; slot::ROOT_DEVICE_SLOTS],
            test,
            plan: Plan::default(),
        };
        for c in 0..cores.min(MAX_CPUS) {
            b.parks[c] = Some(b.notification());
        }
        let mut root_space = b.space();
        let root = b.thread(&mut root_space, 31, 0, [role::ROOT, 0, 0]);
        (b, root_space, root)
    }

    /// Adds `t` to the threads the root task resumes.
    fn push(&mut self, t: ThreadId) {
        if slot::ROOT_FIRST_THREAD + self.started.len() >= slot::ROOT_SCRATCH
            || self.started.push(t).is_err()
        {
            self.arch
                .fail(format_args!("too many threads for the root task's CSpace"));
        }
    }

    fn space(&mut self) -> Space {
        let space = self.bare_space();
        if let Err(e) = self.arch.load_user(space.root) {
            self.arch.fail(format_args!("loading the user ELF: {e:?}"));
        }
        space
    }

    /// An address space without the user ELF: nothing of it can run there.
    fn bare_space(&mut self) -> Space {
        let Some(root) = self.arch.new_address_space() else {
            self.arch
                .fail(format_args!("out of memory for an address space"))
        };
        self.spaces += 1;
        match self.k.create_address_space(root) {
            Ok(id) => Space {
                id,
                root,
                threads: 0,
            },
            Err(e) => self.arch.fail(format_args!("create_address_space: {e:?}")),
        }
    }

    /// A thread running `role(a, b)` in `space` on `core`, with `core`'s park notification.
    /// A thread on `core` running the program of role `args[0]` (its two arguments after),
    /// recorded in the plan as its declaration says (`servers::programs::PROGRAMS`).
    fn thread(&mut self, space: &mut Space, prio: usize, core: usize, args: [u64; 3]) -> ThreadId {
        let Some(park) = self.parks[core] else {
            self.arch.fail(format_args!("no park for {core}"))
        };
        let Some(program) = servers::programs::find(args[0]) else {
            self.arch.fail(format_args!(
                "role {} is not declared in servers::programs::PROGRAMS",
                args[0]
            ))
        };
        let t = match self.k.create_thread(prio, core, Some(space.id)) {
            Ok(t) => t,
            Err(e) => self.arch.fail(format_args!("create_thread: {e:?}")),
        };
        let top = USER_STACK_TOP - space.threads * USER_STACK_STRIDE;
        space.threads += 1;
        if let Err(e) = self.arch.map_stack(space.root, top, USER_STACK_SIZE) {
            self.arch.fail(format_args!("user stack: {e:?}"));
        }
        // SAFETY: `t` has not run; entry and stack are mapped user-accessible in its space.
        unsafe { self.arch.set_initial_context(t, top - 8, args) };
        self.cap(t, slot::PARK, ObjRef::Notification(park), Rights::READ, 0);
        let must_report = program.must_report(self.test);
        self.plan.add(t, core, program.role, must_report);
        t
    }

    /// The ping-pong pair of core `c`: a client making `rounds` round trips through an endpoint
    /// to its server, in one address space or (`separate`) each in its own; both started by
    /// the root task (server first) and the client made known to the architecture.
    fn pingpong_pair(&mut self, c: usize, rounds: usize, separate: bool) {
        let ep = self.endpoint();
        let mut cs = self.space();
        let client = self.thread(&mut cs, 10, c, [role::CLIENT, c as u64, rounds as u64]);
        let mut ss = if separate { self.space() } else { cs };
        let server = self.thread(&mut ss, 10, c, [role::SERVER, c as u64, 0]);
        self.cap(client, slot::EP, ObjRef::Endpoint(ep), Rights::WRITE, c + 1);
        self.cap(server, slot::EP, ObjRef::Endpoint(ep), Rights::READ, 0);
        self.push(server);
        self.push(client);
        self.arch.set_client(c, client);
    }

    fn cap(&mut self, t: ThreadId, s: usize, obj: ObjRef, rights: Rights, badge: usize) {
        let Some(slot) = CapSlot::new(s) else {
            self.arch
                .fail(format_args!("capability slot {s} out of range"))
        };
        if let Err(e) = self.k.install_cap(t, slot, obj, rights, badge) {
            self.arch
                .fail(format_args!("install_cap {obj:?} in slot {s}: {e:?}"));
        }
    }

    fn endpoint(&mut self) -> EndpointId {
        self.k
            .create_endpoint()
            .unwrap_or_else(|e| self.arch.fail(format_args!("create_endpoint: {e:?}")))
    }

    /// The region over the machine's `i`th device range, made on first use (the root task
    /// and the fuzzers share it), or `None` if the machine has no such range.
    fn device(&mut self, i: usize) -> Option<MemId> {
        if i >= slot::ROOT_DEVICE_SLOTS {
            return None;
        }
        if self.devices[i].is_none() {
            let &(start, end) = self.arch.device_regions().get(i)?;
            let len = ((end - start) / PAGE_SIZE as u64) as usize;
            let m = self.k.create_memory(start, len, MemKind::Device);
            let m = m.unwrap_or_else(|e| {
                self.arch
                    .fail(format_args!("device region {start:#x}: {e:?}"))
            });
            self.devices[i] = Some(m);
        }
        self.devices[i]
    }

    fn notification(&mut self) -> NotificationId {
        self.k
            .create_notification()
            .unwrap_or_else(|e| self.arch.fail(format_args!("create_notification: {e:?}")))
    }
}

/// Builds the initial system described by `cfg` into `k` and starts the root task; returns the
/// root thread and what the run is expected to report. Scheduling is left to the caller.
pub fn build<S: Strategy, A: Arch>(
    arch: &A,
    k: &mut Kernel<S, A::Hal>,
    cfg: Setup,
) -> (ThreadId, Plan) {
    if let Some((kind, interval)) = cfg.bench {
        return build_bench(arch, k, cfg.cores, kind, interval);
    }
    if cfg.stack_overflow {
        // One thread: the root thread, started as `role::STACK_OVERFLOW`, which asks for a
        // kernel stack overflow (the run ends with the HAL's overflow report).
        let (b, _, root) = Builder::begin(k, arch, 1, false);
        // SAFETY: the root thread has not run; same entry and stack as set by `thread`.
        unsafe { arch.set_initial_context(root, USER_STACK_TOP - 8, [role::STACK_OVERFLOW, 0, 0]) };
        if let Err(e) = b.k.start(root) {
            arch.fail(format_args!("starting the stack-overflow program: {e:?}"));
        }
        // The root thread runs the stack-overflow program, which never reports.
        let mut plan = b.plan;
        plan.add(root, 0, role::STACK_OVERFLOW, false);
        return (root, plan);
    }
    if let Some(fuzz) = cfg.fuzz {
        return build_fuzz(arch, k, cfg.cores, cfg.rounds, fuzz);
    }
    if cfg.net {
        return build_net(arch, k, cfg.cores);
    }
    let cores = cfg.cores;
    let pager_test = cfg.test && cfg.pager_test;
    let (mut b, _, root) = Builder::begin(k, arch, cores, cfg.test);
    let mut user_tests = 0;

    // Pager test first, so that the faulting thread is the root's first thread capability.
    let mut pager_for = 0;
    if pager_test {
        let core = if cores > 1 { 1 } else { 0 };
        let ep = b.endpoint();
        let mut paged_space = b.space();
        let paged = b.thread(&mut paged_space, 8, core, [role::PAGED, 0, 0]);
        let mut pager_space = b.space();
        let pager = b.thread(&mut pager_space, 12, core, [role::PAGER, 0, 0]);
        let Some(frame_phys) = arch.alloc_frame() else {
            arch.fail(format_args!("no frame for the pager test"))
        };
        let frame =
            b.k.create_memory(frame_phys, 1, MemKind::Ram)
                .unwrap_or_else(|e| arch.fail(format_args!("create_memory: {e:?}")));
        b.cap(pager, slot::EP, ObjRef::Endpoint(ep), Rights::READ, 0);
        b.cap(
            pager,
            slot::PAGER_ASPACE,
            ObjRef::AddressSpace(paged_space.id),
            Rights::WRITE,
            0,
        );
        b.cap(
            pager,
            slot::PAGER_FRAME,
            ObjRef::Memory(frame),
            Rights::READ | Rights::WRITE,
            0,
        );
        b.cap(
            root,
            slot::ROOT_PAGER_EP,
            ObjRef::Endpoint(ep),
            Rights::WRITE,
            0,
        );
        pager_for = slot::ROOT_FIRST_THREAD;
        b.push(paged);
        b.push(pager);
    }
    // The pager test is planned in every test run; without it (lock `none`) it is reported
    // skipped, below.
    user_tests += usize::from(cfg.test);
    // The root task's memory and device-interrupt tests (`servers::programs::memtest`,
    // `servers::programs::devtest`); the root reports DONE after the latter.
    if cfg.test {
        user_tests += servers::programs::memtest::TESTS + servers::programs::devtest::TESTS;
    }

    // Separate address spaces for client and server while the kernel has enough of them.
    let extra = if cfg.test { 4 } else { 0 };
    let separate = 1 + 2 * cores + extra <= MAX_ASPACES;
    for c in 0..cores {
        b.pingpong_pair(c, cfg.rounds, separate);
        user_tests += usize::from(cfg.test);
    }

    if cfg.test {
        let fcore = cores - 1;
        let mut fs = b.space();
        let mut faulters = [None; crate::debugcalls::FAULTERS];
        for (i, kind) in fault::ALL.into_iter().enumerate() {
            let t = b.thread(&mut fs, 20, fcore, [role::FAULT, kind, 0]);
            b.push(t);
            faulters[i] = Some(t);
        }
        arch.set_faulters(fcore, faulters);

        let ep = b.endpoint();
        let ntfn = b.notification();
        let mut es = b.space();
        let errors = b.thread(&mut es, 5, 0, [role::ERRORS, 0, 0]);
        b.cap(errors, slot::EP, ObjRef::Endpoint(ep), Rights::READ, 0);
        b.cap(
            errors,
            slot::ERRORS_NTFN,
            ObjRef::Notification(ntfn),
            Rights::READ | Rights::WRITE,
            0,
        );
        b.push(errors);
        user_tests += cfg.user_error_tests;

        // The example program (`docs/programs.md`): a greeting from every core. Started here
        // rather than by the root task, whose CSpace has no slots left for them on 4 cores;
        // they make no management call, so even `lock=none` allows them to run beside it.
        let mut hs = b.space();
        for c in 0..cores {
            let hello = b.thread(&mut hs, 5, c, [role::HELLO, c as u64, 0]);
            if let Err(e) = b.k.start(hello) {
                arch.fail(format_args!("starting hello on cpu {c}: {e:?}"));
            }
        }
    }

    finish_root(&mut b, root, pager_for);
    let mut plan = b.plan;
    plan.user_tests = user_tests;
    (root, plan)
}

/// Gives the root task a MANAGE capability to each thread the build started (from slot
/// `ROOT_FIRST_THREAD` on, the order it resumes them in), the machine's memory (see
/// [`give_memory`]), sets its arguments and starts it.
fn finish_root<S: Strategy, A: Arch>(b: &mut Builder<'_, S, A>, root: ThreadId, pager_for: usize) {
    let arch = b.arch;
    give_memory(b, root, None);
    let started = b.started.clone();
    let n = started.len();
    for (i, t) in started.iter().enumerate() {
        b.cap(
            root,
            slot::ROOT_FIRST_THREAD + i,
            ObjRef::Thread(*t),
            Rights::MANAGE,
            0,
        );
    }
    // SAFETY: the root thread has not run; same entry and stack as set by `thread`.
    unsafe {
        arch.set_initial_context(
            root,
            USER_STACK_TOP - 8,
            [role::ROOT, n as u64, pager_for as u64],
        )
    };
    if let Err(e) = b.k.start(root) {
        arch.fail(format_args!("starting the root task: {e:?}"));
    }
    arch.println(format_args!(
        "boot: {} threads in {} address spaces, {} frames used; root task is thread {}",
        n + 1,
        b.spaces,
        arch.frames_allocated(),
        root.index()
    ));
}

/// Gives the root task capabilities (all rights) to a region over each range of free RAM (slots
/// `ROOT_MEM..`) and each device range (`ROOT_DEVICE..`), a control capability
/// (`ROOT_CONTROL`) and one to its own address space (`ROOT_ASPACE`). What does not fit the
/// slots is reported and left unused.
///
/// With `numa_cores` (the memory system on that many cores), the free RAM is cut at the
/// boundaries of the memory nodes the firmware describes ([`Arch::numa`],
/// [`numa::layout`](crate::numa::layout)), and the nodes are returned for the loader; a
/// description that cannot be used is reported and the RAM given as it is.
fn give_memory<S: Strategy, A: Arch>(
    b: &mut Builder<'_, S, A>,
    root: ThreadId,
    numa_cores: Option<usize>,
) -> Option<servers::image::memory::Nodes> {
    let arch = b.arch;
    let mut ram = [(0, 0); slot::ROOT_MEM_SLOTS];
    let mut n = arch.take_free_ram(&mut ram);
    let mut nodes = None;
    let firmware = numa_cores.and_then(|c| Some((c, arch.numa(c)?)));
    if let Some((cores, fw)) = firmware {
        let name = fw.source.name();
        match crate::numa::layout(&fw, cores, &ram[..n]) {
            Ok(l) => {
                arch.println(format_args!(
                    "boot: {name}: {} node{} (proximity domains {:?}), cores' nodes {:?}",
                    l.nodes.count,
                    if l.nodes.count > 1 { "s" } else { "" },
                    &l.domains[..l.nodes.count],
                    &l.nodes.core[..cores.min(l.nodes.core.len())],
                ));
                for (i, r) in l.regions[..l.region_count].iter().enumerate() {
                    arch.println(format_args!(
                        "boot: RAM region {i}: {:#x}..{:#x} on node {}",
                        r.0, r.1, l.nodes.region[i]
                    ));
                }
                (ram, n, nodes) = (l.regions, l.region_count, Some(l.nodes));
            }
            Err(why) => arch.println(format_args!(
                "boot: the {name} is not used for memory nodes: {why}"
            )),
        }
    }
    let mut pages = 0;
    for (i, &(start, end)) in ram[..n].iter().enumerate() {
        let len = ((end - start) / PAGE_SIZE as u64) as usize;
        let m = b.k.create_memory(start, len, MemKind::Ram);
        let m = m.unwrap_or_else(|e| arch.fail(format_args!("RAM region {start:#x}: {e:?}")));
        b.cap(root, slot::ROOT_MEM + i, ObjRef::Memory(m), Rights::ALL, 0);
        pages += len;
    }
    let devices = arch.device_regions();
    for i in 0..devices.len().min(slot::ROOT_DEVICE_SLOTS) {
        let Some(m) = b.device(i) else { break };
        b.cap(
            root,
            slot::ROOT_DEVICE + i,
            ObjRef::Memory(m),
            Rights::ALL,
            0,
        );
    }
    b.cap(root, slot::ROOT_CONTROL, ObjRef::Control, Rights::MANAGE, 0);
    let Some(own) = b.k.thread_aspace(root) else {
        arch.fail(format_args!("the root task has no address space"))
    };
    b.cap(
        root,
        slot::ROOT_ASPACE,
        ObjRef::AddressSpace(own),
        Rights::WRITE | Rights::MANAGE,
        0,
    );
    arch.println(format_args!(
        "boot: root task holds {n} RAM regions ({} MiB) and {} device regions",
        pages * PAGE_SIZE / (1 << 20),
        devices.len().min(slot::ROOT_DEVICE_SLOTS)
    ));
    nodes
}

/// Builds `mode=net`: the root thread (priority 31, core 0) runs the network server
/// (`servers::net`) instead of the root task, holding what the root task would (the machine's
/// free RAM and device regions, the control capability, its own address space; see
/// [`give_memory`]): it drives the NIC and creates the other cores' stack threads itself, so
/// nothing else runs and nothing reports, and the run lasts until the machine is stopped. The
/// server releases the other cores (`servers::debug::release_cores`).
pub fn build_net<S: Strategy, A: Arch>(
    arch: &A,
    k: &mut Kernel<S, A::Hal>,
    cores: usize,
) -> (ThreadId, Plan) {
    let (mut b, _, root) = Builder::begin(k, arch, cores, false);
    give_memory(&mut b, root, None);
    // SAFETY: the root thread has not run; same entry and stack as set by `thread`.
    unsafe { arch.set_initial_context(root, USER_STACK_TOP - 8, [role::NET, 0, 0]) };
    if let Err(e) = b.k.start(root) {
        arch.fail(format_args!("starting the network server: {e:?}"));
    }
    let mut plan = b.plan;
    plan.add(root, 0, role::NET, false);
    (root, plan)
}

/// Builds `mode=fuzz`: on every core `c`, the usual ping-pong pair (client and server sharing
/// one address space, `rounds` round trips; the client reports DONE) and a system-call fuzzer
/// (`servers::programs::fuzz`, reports DONE after `fuzz.calls` calls) with its drain server, all at
/// priority 10, so that the pair and the fuzzer share the core. The fuzzer holds a capability
/// of every type (see `servers::image::slot::FUZZ_*`): the drain endpoint (WRITE), a notification
/// to signal (WRITE) and one of its own (READ | WRITE), an address space with no code to map
/// into and delete, a RAM region of [`FUZZ_RAM_PAGES`] pages of its own, the first device
/// region (shared by the fuzzers and the root task), the control capability, the handler of an
/// interrupt line nothing raises, and an inactive thread in that address space. It holds none
/// to its own thread or address space, nor to anything of another core's programs.
pub fn build_fuzz<S: Strategy, A: Arch>(
    arch: &A,
    k: &mut Kernel<S, A::Hal>,
    cores: usize,
    rounds: usize,
    fuzz: FuzzSetup,
) -> (ThreadId, Plan) {
    // A word: the fuzzers get it in one argument register (32 bits on ARMv7).
    let seed = fuzz.seed.unwrap_or_else(|| k.hal().cycles()) as usize as u64;
    let (mut b, _, root) = Builder::begin(k, arch, cores, false);
    let role = if fuzz.common_only {
        role::FUZZ_COMMON_ONLY
    } else {
        role::FUZZ
    };
    let device = b.device(0);
    for c in 0..cores {
        b.pingpong_pair(c, rounds, false);

        let drain_ep = b.endpoint();
        let mut fs = b.space();
        let fuzzer = b.thread(&mut fs, 10, c, [role, fuzz.calls as u64, seed]);
        let drain = b.thread(&mut fs, 10, c, [role::FUZZ_DRAIN, c as u64, 0]);
        b.cap(drain, slot::EP, ObjRef::Endpoint(drain_ep), Rights::READ, 0);
        let w = Rights::WRITE;
        b.cap(fuzzer, slot::FUZZ_EP, ObjRef::Endpoint(drain_ep), w, c + 1);
        let n = b.notification();
        b.cap(fuzzer, slot::FUZZ_NTFN, ObjRef::Notification(n), w, 1 << c);
        let n = b.notification();
        let rw = Rights::READ | Rights::WRITE;
        b.cap(fuzzer, slot::FUZZ_OWN_NTFN, ObjRef::Notification(n), rw, 0);
        let scratch = b.bare_space();
        let aspace = ObjRef::AddressSpace(scratch.id);
        b.cap(fuzzer, slot::FUZZ_ASPACE, aspace, w | Rights::MANAGE, 0);
        let ram = fuzz_ram(&mut b);
        b.cap(fuzzer, slot::FUZZ_MEM, ObjRef::Memory(ram), Rights::ALL, 0);
        if let Some(d) = device {
            b.cap(fuzzer, slot::FUZZ_DEVICE, ObjRef::Memory(d), Rights::ALL, 0);
        }
        b.cap(
            fuzzer,
            slot::FUZZ_CONTROL,
            ObjRef::Control,
            Rights::MANAGE,
            0,
        );
        let Some(irq) = IrqId::new(16 + c) else {
            arch.fail(format_args!("no interrupt line {} for the fuzzer", 16 + c))
        };
        b.cap(
            fuzzer,
            slot::FUZZ_IRQ,
            ObjRef::IrqHandler(irq),
            Rights::ALL,
            0,
        );
        let victim = b.k.create_thread_without_entry(1, c, Some(scratch.id));
        let victim = victim.unwrap_or_else(|e| arch.fail(format_args!("create_thread: {e:?}")));
        b.cap(
            fuzzer,
            slot::FUZZ_THREAD,
            ObjRef::Thread(victim),
            Rights::ALL,
            0,
        );
        b.push(drain);
        b.push(fuzzer);
    }
    arch.println(format_args!(
        "fuzz: {cores} fuzzers, {} calls each, seed {seed:#x}{}",
        fuzz.calls,
        if fuzz.common_only {
            " (lock none: common calls only)"
        } else {
            ""
        }
    ));
    finish_root(&mut b, root, 0);
    (root, b.plan)
}

/// A RAM region for a fuzzer: up to [`FUZZ_RAM_PAGES`] frames that the frame allocator hands
/// out one after the other (at least one).
fn fuzz_ram<S: Strategy, A: Arch>(b: &mut Builder<'_, S, A>) -> MemId {
    let arch = b.arch;
    let Some(base) = arch.alloc_frame() else {
        arch.fail(format_args!("no frame for a fuzzer"))
    };
    let mut pages = 1;
    while pages < FUZZ_RAM_PAGES {
        match arch.alloc_frame() {
            Some(f) if f == base + (pages * PAGE_SIZE) as u64 => pages += 1,
            // Not contiguous: left unused (a few frames at most).
            _ => break,
        }
    }
    b.k.create_memory(base, pages, MemKind::Ram)
        .unwrap_or_else(|e| arch.fail(format_args!("create_memory: {e:?}")))
}

/// Builds the threads of benchmark `kind` (`mode=bench`); `interval` is the throughput
/// sampling interval in counter ticks. Every client reports DONE once its samples are with the
/// image.
///
/// * `ipc`: on core 0 only, a same-address-space pair (priority 20) and a cross-address-space
///   pair (priority 10): the root task (31) finishes and parks first, then the first pair runs
///   to completion, then the second; the other cores are never released.
/// * `multicore`: on every core a client and a server in two address spaces (priority 10)
///   with their own endpoint.
/// * `clientserver`: client `i` on core `i % cores`, calling one server on core 0 (`shared`,
///   badge `i + 1`) or its own server on its own core (`dedicated`).
///
/// The root task shares the address space of the first throughput client, so that eight
/// clients and eight servers fit the kernel's sixteen address spaces.
pub fn build_bench<S: Strategy, A: Arch>(
    arch: &A,
    k: &mut Kernel<S, A::Hal>,
    cores: usize,
    kind: crate::bench::Kind,
    interval: u64,
) -> (ThreadId, Plan) {
    use crate::bench::{Kind, Variant};
    use servers::image::bench::{record, VARIANT_CROSS_AS, VARIANT_SAME_AS};

    let (mut b, root_space, root) = Builder::begin(k, arch, cores, false);
    // The root's space hosts the first throughput client.
    let mut spare_root_space = Some(root_space);

    if let Kind::Memory(spec) = kind {
        // The loader alone, with an address space per worker (user ELF loaded): it creates
        // the pagers in its own space and the workers in theirs at run time.
        for w in 0..cores {
            let space = b.space();
            let at = slot::ROOT_MEMORY_SPACES + w;
            b.cap(root, at, ObjRef::AddressSpace(space.id), Rights::ALL, 0);
        }
        // Last: the root takes all RAM left, cut at the firmware's memory nodes.
        let nodes = give_memory(&mut b, root, Some(cores));
        let topology = servers::image::memory::Topology { cores, nodes };
        // SAFETY: the root thread has not run; same entry and stack as set by `thread`.
        unsafe {
            arch.set_initial_context(
                root,
                USER_STACK_TOP - 8,
                [
                    role::LOADER,
                    spec.to_word() as u64,
                    topology.to_word() as u64,
                ],
            )
        };
        if let Err(e) = b.k.start(root) {
            arch.fail(format_args!("starting the memory system's loader: {e:?}"));
        }
        let mut plan = b.plan;
        plan.add(root, 0, role::LOADER, true);
        return (root, plan);
    }

    match kind {
        Kind::Ipc => {
            for (variant, prio) in [(VARIANT_SAME_AS, 20), (VARIANT_CROSS_AS, 10)] {
                let ep = b.endpoint();
                let mut cs = b.space();
                let server_args = [role::BENCH_IPC_SERVER, variant, 0];
                let server = if variant == VARIANT_SAME_AS {
                    b.thread(&mut cs, prio, 0, server_args)
                } else {
                    let mut ss = b.space();
                    b.thread(&mut ss, prio, 0, server_args)
                };
                let client = b.thread(&mut cs, prio, 0, [role::BENCH_IPC_CLIENT, variant, 0]);
                b.cap(client, slot::EP, ObjRef::Endpoint(ep), Rights::WRITE, 1);
                b.cap(server, slot::EP, ObjRef::Endpoint(ep), Rights::READ, 0);
                b.push(server);
                b.push(client);
            }
        }
        Kind::Memory(_) => unreachable!("built above"),
        Kind::Multicore | Kind::ClientServer { .. } => {
            let (clients, shared, rec) = match kind {
                Kind::ClientServer { clients, variant } => {
                    (clients, variant == Variant::Shared, record::CLIENT_SERVER)
                }
                _ => (cores, false, record::MULTICORE),
            };
            let shared_ep = if shared {
                let ep = b.endpoint();
                let mut ss = b.space();
                let server = b.thread(&mut ss, 10, 0, [role::BENCH_TP_SERVER, 0, 0]);
                b.cap(server, slot::EP, ObjRef::Endpoint(ep), Rights::READ, 0);
                b.push(server);
                Some(ep)
            } else {
                None
            };
            for i in 0..clients {
                let core = i % cores;
                let ep = match shared_ep {
                    Some(ep) => ep,
                    None => {
                        let ep = b.endpoint();
                        let mut ss = b.space();
                        let server = b.thread(&mut ss, 10, core, [role::BENCH_TP_SERVER, 0, 0]);
                        b.cap(server, slot::EP, ObjRef::Endpoint(ep), Rights::READ, 0);
                        b.push(server);
                        ep
                    }
                };
                let mut cs = match spare_root_space.take() {
                    Some(s) => s,
                    None => b.space(),
                };
                let client = b.thread(
                    &mut cs,
                    10,
                    core,
                    [role::BENCH_TP_CLIENT, rec as u64, interval],
                );
                b.cap(client, slot::EP, ObjRef::Endpoint(ep), Rights::WRITE, i + 1);
                b.push(client);
            }
        }
    }
    finish_root(&mut b, root, 0);
    (root, b.plan)
}
