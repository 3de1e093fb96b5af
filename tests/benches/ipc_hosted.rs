//! Hosted single-core IPC ping-pong: the cost of the kernel's Call/ReplyRecv path under each
//! locking strategy, in real TSC cycles on the host (the `hosted` platform of issue 6).
//!
//! One kernel, one core, two threads (client and server) and one endpoint. The loop enters the
//! kernel through `Kernel::syscall`, exactly as a HAL does after saving the user context: the
//! client's `Call` hands the core to the server, whose `ReplyRecv` answers and blocks again. No
//! trap, no context switch of real registers: this is the kernel path's own cost, with the
//! HAL's hardware actions no-ops. One round trip = one Call + one ReplyRecv.
//!
//! Method: per strategy, warm up, then 16 samples of 20,000 round trips each, timed with
//! `lfence; rdtsc`; report min, median, mean and std dev of cycles per round trip, and the
//! overhead over `none`. Strategies are interleaved sample by sample so that machine noise hits
//! them alike. Run: `cargo bench -p tests --bench ipc_hosted [-- --json PATH]`.

use kernel::{
    BigLock, CapSlot, CpuId, EndpointId, FineGrained, Hal, IpiKind, IrqId, Kernel, MapPrepError,
    NoLock, ObjRef, PhysAddr, Regs, Rights, Rtm, Strategy, Syscall, ThreadId,
};
use sync::{ClhLock, Spin, TicketLock};

/// A HAL whose hardware actions do nothing: one core, nothing to switch.
struct NullHal;

impl Hal for NullHal {
    fn cpu_id(&self) -> CpuId {
        0
    }
    fn cpu_count(&self) -> usize {
        1
    }
    fn send_ipi(&self, _cpu: CpuId, _target: CpuId, _kind: IpiKind) {}
    unsafe fn switch_address_space(&self, _cpu: CpuId, _root: PhysAddr) {}
    fn flush_tlb(&self, _cpu: CpuId, _root: PhysAddr, _vaddr: Option<usize>) {}
    fn prepare_map(&self, _root: PhysAddr, _vaddr: usize) -> Result<(), MapPrepError> {
        Ok(())
    }
    fn map_page(&self, _root: PhysAddr, _vaddr: usize, _frame: PhysAddr, _writable: bool) {}
    fn unmap_page(&self, _root: PhysAddr, _vaddr: usize) {}
    fn mask_irq(&self, _cpu: CpuId, _irq: IrqId) {}
    fn unmask_irq(&self, _cpu: CpuId, _irq: IrqId) {}
    fn cycles(&self) -> u64 {
        cycles()
    }
    fn console_write(&self, s: &str) {
        print!("{s}");
    }
}

#[inline(always)]
fn cycles() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: lfence and rdtsc only read the time-stamp counter; lfence keeps earlier
    // instructions from being counted after the read.
    unsafe {
        core::arch::x86_64::_mm_lfence();
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::time::Instant;
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

const EP: CapSlot = match CapSlot::new(1) {
    Some(s) => s,
    None => panic!("slot 1 exists"),
};

/// A one-core kernel with a client and a server sharing an endpoint, the server blocked in
/// `Recv`, the client running.
struct PingPong<S: Strategy> {
    kernel: Box<Kernel<S, NullHal>>,
    client: ThreadId,
    call: Regs,
    reply_recv: Regs,
}

impl<S: Strategy> PingPong<S> {
    fn new(strategy: S) -> Self {
        let mut k = Box::new(Kernel::new(strategy, NullHal, 1));
        let ep: EndpointId = k.create_endpoint().expect("endpoint");
        let server = k.create_thread(10, 0, None).expect("server");
        let client = k.create_thread(10, 0, None).expect("client");
        k.install_cap(server, EP, ObjRef::Endpoint(ep), Rights::READ, 0)
            .expect("cap");
        let rights = Rights::WRITE.union(Rights::GRANT);
        k.install_cap(client, EP, ObjRef::Endpoint(ep), rights, 7)
            .expect("cap");
        k.start(server).expect("start");
        k.start(client).expect("start");
        let me = Self {
            kernel: k,
            client,
            call: Syscall::Call {
                ep: EP,
                msg: [1, 2, 3, 4],
            }
            .encode(),
            reply_recv: Syscall::ReplyRecv {
                ep: EP,
                msg: [5, 6, 7, 8],
            }
            .encode(),
        };
        // Let the server block in Recv first (whoever runs first: run until the client runs
        // with the server waiting).
        let recv = Syscall::Recv { ep: EP }.encode();
        let mut exit = me.kernel.timer_tick(0);
        for _ in 0..4 {
            match exit.thread {
                Some(t) if t == client => break,
                Some(_) => exit = me.kernel.syscall(0, recv),
                None => exit = me.kernel.timer_tick(0),
            }
        }
        assert_eq!(exit.thread, Some(client), "set-up: the client should run");
        me
    }

    /// `n` round trips; returns TSC cycles taken.
    fn run(&self, n: u32) -> u64 {
        let start = cycles();
        for _ in 0..n {
            let exit = self.kernel.syscall(0, self.call);
            debug_assert!(exit.thread != Some(self.client));
            let exit = self.kernel.syscall(0, self.reply_recv);
            assert_eq!(
                exit.thread,
                Some(self.client),
                "the reply should return to the client"
            );
            std::hint::black_box(exit.regs);
        }
        cycles() - start
    }
}

/// One strategy under test, type-erased for the interleaved loop.
struct Case {
    name: &'static str,
    lock: &'static str,
    run: Box<dyn Fn(u32) -> u64>,
    samples: Vec<f64>,
}

fn case<S: Strategy + 'static>(name: &'static str, lock: &'static str, s: S) -> Case {
    let p = PingPong::new(s);
    Case {
        name,
        lock,
        run: Box::new(move |n| p.run(n)),
        samples: Vec::new(),
    }
}

fn main() {
    let json_path = std::env::args().skip_while(|a| a != "--json").nth(1);
    const ROUNDS: u32 = 20_000;
    const SAMPLES: usize = 16;
    // SAFETY: one core, so no section can ever overlap another.
    let none = unsafe { NoLock::new() };
    let mut cases = vec![
        case("none", "none", none),
        case("big lock", "clh", BigLock::new(ClhLock::<1, Spin>::new())),
        case(
            "big lock",
            "ticket",
            BigLock::new(TicketLock::<Spin>::new()),
        ),
        case("fine", "brlock+ticket", FineGrained::<Spin>::new()),
        case(
            "rtm",
            "rtm(clh)",
            Rtm::<_, sync::Rtm, Spin>::new(ClhLock::<1, Spin>::new()),
        ),
    ];
    for c in &cases {
        (c.run)(ROUNDS); // warm-up
    }
    for _ in 0..SAMPLES {
        for c in &mut cases {
            let t = (c.run)(ROUNDS);
            c.samples.push(t as f64 / f64::from(ROUNDS));
        }
    }
    let rtm = sync::Rtm::supported();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into());
    println!("hosted IPC ping-pong, 1 core: cycles per round trip (Call + ReplyRecv through Kernel::syscall, no trap)");
    println!(
        "machine: {cpu}; RTM {}; {SAMPLES} samples x {ROUNDS} round trips, interleaved",
        if rtm {
            "available"
        } else {
            "absent (rtm = its fallback lock)"
        }
    );
    println!(
        "{:<10} {:<14} {:>8} {:>8} {:>8} {:>8} {:>10}",
        "strategy", "lock", "min", "median", "mean", "stddev", "overhead"
    );
    let base = stats(&cases[0].samples).2;
    let mut records = Vec::new();
    for c in &cases {
        let (min, median, mean, sd) = stats(&c.samples);
        let over = mean - base;
        println!(
            "{:<10} {:<14} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>+6.1} ({:+.0}%)",
            c.name,
            c.lock,
            min,
            median,
            mean,
            sd,
            over,
            100.0 * over / base
        );
        records.push(format!(
            "{{\"bench\":\"ipc-pingpong-1core\",\"arch\":\"{}\",\"platform\":\"hosted\",\"strategy\":\"{}\",\"lock\":\"{}\",\"cores\":1,\"runs\":{SAMPLES},\"unit\":\"cycles/round-trip\",\"min\":{min:.2},\"median\":{median:.2},\"mean\":{mean:.2},\"stddev\":{sd:.2},\"samples\":{:?},\"machine\":{{\"cpu\":\"{cpu}\",\"rtm\":{rtm}}}}}",
            std::env::consts::ARCH, c.name, c.lock, c.samples
        ));
    }
    if let Some(path) = json_path {
        std::fs::write(&path, format!("[\n{}\n]\n", records.join(",\n"))).expect("write JSON");
        println!("written: {path}");
    }
}

/// (min, median, mean, population std dev).
fn stats(xs: &[f64]) -> (f64, f64, f64, f64) {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
    (v[0], v[v.len() / 2], mean, var.sqrt())
}
