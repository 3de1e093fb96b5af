//! Builds the kernel object for one locking strategy and the initial system: address spaces
//! with the user ELF, threads, endpoints, notifications, capabilities; then starts scheduling.
//!
//! # The initial objects (per core `c`)
//! * a ping-pong pair: client and server threads (priority 10) on core `c`, each in its own
//!   address space, sharing endpoint `ep[c]` (client WRITE with badge `c + 1`, server READ);
//! * a park notification per core, which finished programs wait on forever (per core so that
//!   even the `none` strategy sees no object shared between cores).
//!
//! Core 0 also runs the root task (priority 31, so it runs first), holding a MANAGE capability to
//! every other thread. Test mode adds: three faulting threads on the last core (priority 20, so
//! they fault before that core's pair runs), the system-call error test on core 0 (priority
//! 5), and, except under `none` (where it is reported skipped), the pager test on core 1 (or 0):
//! a pager thread holding the faulting thread's address space and a frame, bound as its pager
//! by the root task.
//!
//! The kernel object lives in a static buffer (it is ~100 KiB), written once here before any
//! other core can see it.

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;

use hal_armv7::paging::{self, PhysAddr};
use hal_armv7::{println, usermode, ArmHal};
use kernel::config::{CSPACE_SLOTS, MAX_ASPACES};
use kernel::{
    AsId, CapSlot, EndpointId, Kernel, NotificationId, ObjRef, Rights, Strategy, ThreadId,
};
use servers::abi::{fault, role, slot, USER_STACK_SIZE, USER_STACK_STRIDE, USER_STACK_TOP};

use crate::boot::{fail, Config, TIMER_HZ};
use crate::debugcalls::{self, Plan};
use crate::loader::Elf;

/// The user ELF built by `build.rs`.
static USER_ELF: &[u8] = include_bytes!(env!("USER_ELF"));

const STORE_SIZE: usize = 160 * 1024;

#[repr(C, align(4096))]
struct KernelStore(UnsafeCell<MaybeUninit<[u8; STORE_SIZE]>>);

// SAFETY: written once by the boot core in `boot` before any other core runs kernel
// code; afterwards only shared references to the kernel inside exist.
unsafe impl Sync for KernelStore {}

static STORE: KernelStore = KernelStore(UnsafeCell::new(MaybeUninit::uninit()));

/// An address space being filled.
struct Space {
    id: AsId,
    root: PhysAddr,
    threads: u64,
}

struct Builder<S: Strategy + 'static> {
    k: &'static mut Kernel<S, ArmHal>,
    elf: Elf,
}

impl<S: Strategy + 'static> Builder<S> {
    fn space(&mut self) -> Space {
        let Some(root) = paging::new_address_space() else {
            fail(format_args!("out of memory for an address space"))
        };
        if let Err(e) = self.elf.load_into(root) {
            fail(format_args!("loading the user ELF: {e:?}"));
        }
        match self.k.create_address_space(root) {
            Ok(id) => Space {
                id,
                root,
                threads: 0,
            },
            Err(e) => fail(format_args!("create_address_space: {e:?}")),
        }
    }

    /// A thread running `role(a, b)` in `space` on `core`, with its park notification.
    fn thread(
        &mut self,
        space: &mut Space,
        prio: usize,
        core: usize,
        park: NotificationId,
        args: [u64; 3],
    ) -> ThreadId {
        let t = match self.k.create_thread(prio, core, Some(space.id)) {
            Ok(t) => t,
            Err(e) => fail(format_args!("create_thread: {e:?}")),
        };
        let top = USER_STACK_TOP - space.threads * USER_STACK_STRIDE;
        space.threads += 1;
        if let Err(e) = crate::loader::map_stack(space.root, top, USER_STACK_SIZE) {
            fail(format_args!("user stack: {e:?}"));
        }
        // SAFETY: `t` has not run; entry and stack are mapped user-accessible in its space. The
        // stack pointer is 8-byte aligned, as AAPCS wants at a call.
        unsafe {
            usermode::set_initial_context(
                t,
                self.elf.entry as u32,
                (top - 8) as u32,
                args.map(|a| a as u32),
            )
        };
        self.cap(t, slot::PARK, ObjRef::Notification(park), Rights::READ, 0);
        t
    }

    fn cap(&mut self, t: ThreadId, s: usize, obj: ObjRef, rights: Rights, badge: usize) {
        let Some(slot) = CapSlot::new(s) else {
            fail(format_args!("capability slot {s} out of range"))
        };
        if let Err(e) = self.k.install_cap(t, slot, obj, rights, badge) {
            fail(format_args!("install_cap {obj:?} in slot {s}: {e:?}"));
        }
    }

    fn endpoint(&mut self) -> EndpointId {
        self.k
            .create_endpoint()
            .unwrap_or_else(|e| fail(format_args!("create_endpoint: {e:?}")))
    }

    fn notification(&mut self) -> NotificationId {
        self.k
            .create_notification()
            .unwrap_or_else(|e| fail(format_args!("create_notification: {e:?}")))
    }
}

/// Builds the kernel with `strategy` and the initial system, starts scheduling on this core.
pub fn boot<S: Strategy + 'static>(strategy: S, cfg: Config) -> ! {
    const { assert!(core::mem::size_of::<Kernel<S, ArmHal>>() <= STORE_SIZE) };
    const { assert!(core::mem::align_of::<Kernel<S, ArmHal>>() <= 4096) };
    let p = STORE.0.get() as *mut Kernel<S, ArmHal>;
    // SAFETY: the store is large and aligned enough (checked above), written once, here, by the
    // boot core before any other core runs kernel code.
    let k: &'static mut Kernel<S, ArmHal> = unsafe {
        p.write(Kernel::new(strategy, ArmHal, cfg.cores));
        &mut *p
    };
    println!(
        "kernel: {} strategy on {} cores, {} KiB kernel object",
        k.strategy().name(),
        cfg.cores,
        core::mem::size_of::<Kernel<S, ArmHal>>() / 1024
    );
    let elf = match Elf::parse(USER_ELF) {
        Ok(e) => e,
        Err(e) => fail(format_args!("user ELF: {e:?}")),
    };
    let mut b = Builder { k, elf };
    let cores = cfg.cores;
    let pager_test = cfg.test && cfg.lock != crate::lock::LockChoice::None;

    let parks: [Option<NotificationId>; kernel::config::MAX_CPUS] =
        core::array::from_fn(|c| (c < cores).then(|| b.notification()));
    let park = |c: usize| parks[c].unwrap_or_else(|| fail(format_args!("no park for {c}")));

    let mut root_space = b.space();
    // Arguments filled below once the thread list is known: root gets its real context last.
    let root = b.thread(&mut root_space, 31, 0, park(0), [role::ROOT, 0, 0]);
    let mut started: [Option<ThreadId>; CSPACE_SLOTS] = [None; CSPACE_SLOTS];
    let mut n = 0usize;
    let mut push = |t: ThreadId| {
        if slot::ROOT_FIRST_THREAD + n >= CSPACE_SLOTS {
            fail(format_args!("too many threads for the root task's CSpace"));
        }
        started[n] = Some(t);
        n += 1;
    };
    let mut plan = Plan::default();

    // Pager test first, so that the faulting thread is the root's first thread capability.
    let mut pager_for = 0;
    if pager_test {
        let core = if cores > 1 { 1 } else { 0 };
        let ep = b.endpoint();
        let mut paged_space = b.space();
        let paged = b.thread(&mut paged_space, 8, core, park(core), [role::PAGED, 0, 0]);
        let mut pager_space = b.space();
        let pager = b.thread(&mut pager_space, 12, core, park(core), [role::PAGER, 0, 0]);
        let Some(frame_phys) = paging::alloc_frame() else {
            fail(format_args!("no frame for the pager test"))
        };
        let frame =
            b.k.create_frame(frame_phys)
                .unwrap_or_else(|e| fail(format_args!("create_frame: {e:?}")));
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
            ObjRef::Frame(frame),
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
        push(paged);
        push(pager);
        plan.finite += 1;
    }
    // The pager test is planned in every test run; without it (lock `none`) it is reported
    // skipped, below.
    plan.user_tests += usize::from(cfg.test);

    // Separate address spaces for client and server while the kernel has enough of them.
    let extra = if cfg.test { 4 } else { 0 };
    let separate = 1 + 2 * cores + extra <= MAX_ASPACES;
    for c in 0..cores {
        let ep = b.endpoint();
        let mut cs = b.space();
        let client = b.thread(
            &mut cs,
            10,
            c,
            park(c),
            [role::CLIENT, c as u64, cfg.rounds as u64],
        );
        let mut ss = if separate { b.space() } else { cs };
        let server = b.thread(&mut ss, 10, c, park(c), [role::SERVER, c as u64, 0]);
        b.cap(client, slot::EP, ObjRef::Endpoint(ep), Rights::WRITE, c + 1);
        b.cap(server, slot::EP, ObjRef::Endpoint(ep), Rights::READ, 0);
        push(server);
        push(client);
        debugcalls::set_client(c, client);
        plan.finite += 1;
        plan.user_tests += usize::from(cfg.test);
    }

    if cfg.test {
        let fcore = cores - 1;
        let mut fs = b.space();
        let mut faulters = [None; 3];
        for (i, kind) in [
            fault::BAD_POINTER,
            fault::INVALID_OPCODE,
            fault::DIVIDE_BY_ZERO,
        ]
        .into_iter()
        .enumerate()
        {
            let t = b.thread(&mut fs, 20, fcore, park(fcore), [role::FAULT, kind, 0]);
            push(t);
            faulters[i] = Some(t);
        }
        debugcalls::set_faulters(fcore, faulters);

        let ep = b.endpoint();
        let ntfn = b.notification();
        let mut es = b.space();
        let errors = b.thread(&mut es, 5, 0, park(0), [role::ERRORS, 0, 0]);
        b.cap(errors, slot::EP, ObjRef::Endpoint(ep), Rights::READ, 0);
        b.cap(
            errors,
            slot::ERRORS_NTFN,
            ObjRef::Notification(ntfn),
            Rights::READ | Rights::WRITE,
            0,
        );
        push(errors);
        plan.finite += 1;
        plan.user_tests += crate::selftest::USER_ERROR_TESTS;
    }

    for (i, t) in started.iter().flatten().enumerate() {
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
        usermode::set_initial_context(
            root,
            b.elf.entry as u32,
            (USER_STACK_TOP - 8) as u32,
            [role::ROOT as u32, n as u32, pager_for as u32],
        )
    };
    if let Err(e) = b.k.start(root) {
        fail(format_args!("starting the root task: {e:?}"));
    }
    println!(
        "boot: {} threads in {} address spaces, {} frames used; root task is thread {}",
        n + 1,
        1 + n,
        paging::frames_allocated(),
        root.index()
    );

    debugcalls::init(cfg, root, plan);
    if cfg.test && !pager_test {
        debugcalls::skip(
            "user:pager_resolves_page_fault",
            format_args!(
                "lock none: the pager's MapFrame is a management call made while other cores \
                 run, which NoLock's contract forbids"
            ),
        );
    }
    let k: &'static Kernel<S, ArmHal> = b.k;
    usermode::install(k, debugcalls::handle);
    ArmHal::timer_start(TIMER_HZ);
    usermode::run()
}
