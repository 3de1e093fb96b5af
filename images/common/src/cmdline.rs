//! The kernel command line both images read (`lock=`, `mode=`, the benchmark words, `rounds=`,
//! the fuzzer's `calls=` and `seed=`) and the configuration it gives, with the same messages for a bad value on either
//! architecture.
//!
//! # Why here
//! Only how to reach the command line differs (the PVH start info on x86_64, semihosting on
//! ARMv7): the images pass a look-up function, and the parsing, its error messages and the
//! checks that need the core count are written once and unit-tested on the host.

use core::fmt;

use crate::bench::{self, Kind, SpecError};
use crate::debugcalls::{interval_ticks, Run};
use crate::Setup;

/// The kernel's locking strategy, as chosen at boot: the registry's list, which the host
/// tools' `--lock` options share.
pub use lock_registry::Lock as LockChoice;

/// What the command line asked for, before the cores are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cmdline {
    /// The locking strategy (`lock=`, default `clh`).
    pub lock: LockChoice,
    /// Test suite (`mode=test`) or not.
    pub test: bool,
    /// Benchmark mode (`mode=bench bench=<kind>`): what runs instead of the demo.
    pub bench: Option<Kind>,
    /// Benchmark mode: samples per record (`runs=`, default 16).
    pub runs: usize,
    /// Round trips of each ping-pong pair (`rounds=`, default 1000).
    pub rounds: usize,
    /// `mode=stackoverflow`: one program asks for a kernel stack overflow (debug call
    /// `KERNEL_STACK_OVERFLOW`), which the HAL must catch and report.
    pub stack_overflow: bool,
    /// `mode=fuzz`: the in-guest system-call fuzzer on every core (see `servers::programs::fuzz`).
    pub fuzz: Option<Fuzz>,
    /// `mode=net`: the network server (virtio-net driver on core 0, a TCP/IP stack and RESP2
    /// key-value server on every core, see `servers::net`), running until the machine is
    /// stopped.
    pub net: bool,
    /// `cpus=N`: use at most N cores (the others are started and stay parked), so that a
    /// machine's core count can be chosen where there is no QEMU `-smp` (`cargo xtask flash
    /// --smp N` puts it on the command line).
    pub cpus: Option<usize>,
    /// `trace=1`: trace every kernel entry and print the trace at the end of the run (images
    /// built with the `trace` feature only; see [`crate::trace`]).
    pub trace: bool,
    /// `fastpath=0`: `Call` and `ReplyRecv` always take the kernel's full path (default 1:
    /// the IPC fastpath first), to measure what the fastpath saves.
    pub fastpath: bool,
}

/// What `mode=fuzz` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fuzz {
    /// Calls each fuzzer makes (`calls=`, default [`Fuzz::DEFAULT_CALLS`]).
    pub calls: usize,
    /// The seed (`seed=`, decimal or `0x` hex); `None`: taken from the cycle counter at boot
    /// (each fuzzer prints the seed it used, so a run can be replayed).
    pub seed: Option<u64>,
}

impl Fuzz {
    /// Calls per fuzzer unless `calls=` says otherwise: the 10^5 per core.
    pub const DEFAULT_CALLS: usize = 100_000;
}

/// A bad value on the command line; its `Display` is the boot failure message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmdlineError<'a> {
    /// An unknown `lock=` value.
    Lock(&'a str),
    /// An unknown `mode=` value.
    Mode(&'a str),
    /// A bad benchmark word.
    Bench(SpecError<'a>),
    /// A `rounds=` value that is not a positive number.
    Rounds(&'a str),
    /// A `calls=` value that is not a positive number.
    Calls(&'a str),
    /// A `seed=` value that is not a number.
    Seed(&'a str),
    /// A `cpus=` value that is not a positive number.
    Cpus(&'a str),
    /// A `trace=` value other than 0 or 1.
    Trace(&'a str),
    /// `trace=1` in an image built without the `trace` feature.
    TraceNotBuilt,
    /// A `fastpath=` value other than 0 or 1.
    Fastpath(&'a str),
    /// The shared client-server benchmark on several cores with `lock=none`.
    SharedWithoutLock {
        /// The cores it would run on.
        cores: usize,
    },
    /// The memory benchmark under a kernel lock its pagers have no lock of the same kind for
    /// (a strategy missing from `servers::image::memory::LOCKS`).
    MemoryPagerLock(&'static str),
    /// The memory benchmark on several cores with `lock=none`.
    MemoryWithoutLock {
        /// The cores it would run on.
        cores: usize,
    },
    /// The network server (`mode=net`) on several cores with `lock=none`.
    NetWithoutLock {
        /// The cores it would run on.
        cores: usize,
    },
}

impl fmt::Display for CmdlineError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CmdlineError::Lock(v) => write!(
                f,
                "unknown lock \"{v}\" on the kernel command line (lock=...); expected one of {}",
                LockChoice::NAMES
            ),
            CmdlineError::Mode(v) => write!(
                f,
                "unknown mode \"{v}\" on the kernel command line; expected demo, test, bench, \
                 fuzz, net or stackoverflow"
            ),
            CmdlineError::Bench(e) => write!(f, "{e}"),
            CmdlineError::Rounds(v) => write!(
                f,
                "rounds=\"{v}\" on the kernel command line is not a positive number"
            ),
            CmdlineError::Calls(v) => write!(
                f,
                "calls=\"{v}\" on the kernel command line is not a positive number"
            ),
            CmdlineError::Cpus(v) => write!(
                f,
                "cpus=\"{v}\" on the kernel command line is not a positive number"
            ),
            CmdlineError::Trace(v) => {
                write!(f, "trace=\"{v}\" on the kernel command line is not 0 or 1")
            }
            CmdlineError::Fastpath(v) => {
                write!(
                    f,
                    "fastpath=\"{v}\" on the kernel command line is not 0 or 1"
                )
            }
            CmdlineError::TraceNotBuilt => write!(
                f,
                "trace=1 on the kernel command line, but this image was built without kernel \
                 tracing (build it with --features trace, as `cargo xtask trace locks --image` does)"
            ),
            CmdlineError::Seed(v) => write!(
                f,
                "seed=\"{v}\" on the kernel command line is not a number (decimal or 0x hex)"
            ),
            CmdlineError::SharedWithoutLock { cores } => write!(
                f,
                "bench: the shared client-server benchmark on {cores} cores shares the server's \
                 endpoint between cores, which lock=none forbids (use variant=dedicated or \
                 another lock)"
            ),
            CmdlineError::MemoryPagerLock(lock) => write!(
                f,
                "bench: the memory benchmark's pagers have no lock={lock} \
                 (servers::image::memory::LOCKS lists the locks they share state under)"
            ),
            CmdlineError::MemoryWithoutLock { cores } => write!(
                f,
                "bench: the memory benchmark on {cores} cores maps pages into one address space \
                 from every core and lets pagers borrow each other's memory, which lock=none \
                 forbids (use cpus=1 or another lock)"
            ),
            CmdlineError::NetWithoutLock { cores } => write!(
                f,
                "mode=net on {cores} cores creates the stacks' threads on the other cores and \
                 signals notifications across cores (driver and stacks wake each other), which \
                 lock=none forbids (use cpus=1 or another lock)"
            ),
        }
    }
}

impl Cmdline {
    /// Parses the command line through `value`, which looks a key up; the first bad value (in
    /// the order lock, mode and benchmark, runs, rounds, calls, seed) is the error.
    pub fn parse<'a>(value: impl Fn(&str) -> Option<&'a str>) -> Result<Cmdline, CmdlineError<'a>> {
        let lock_name = value("lock").unwrap_or("clh");
        let lock = LockChoice::parse(lock_name).ok_or(CmdlineError::Lock(lock_name))?;
        let mode = value("mode").unwrap_or("demo");
        let (test, bench) = match mode {
            "demo" | "stackoverflow" | "fuzz" | "net" => (false, None),
            "test" => (true, None),
            "bench" => (
                false,
                Some(match Kind::parse(&value).map_err(CmdlineError::Bench)? {
                    // The pagers share state under the kernel's lock algorithm.
                    Kind::Memory(spec) => Kind::Memory(servers::image::memory::Spec {
                        lock: servers::image::memory::LOCKS
                            .iter()
                            .position(|l| *l == lock.name())
                            .ok_or(CmdlineError::MemoryPagerLock(lock.name()))?,
                        ..spec
                    }),
                    k => k,
                }),
            ),
            other => return Err(CmdlineError::Mode(other)),
        };
        let stack_overflow = mode == "stackoverflow";
        let net = mode == "net";
        let runs = match bench {
            None => servers::image::bench::DEFAULT_RUNS,
            Some(_) => bench::parse_runs(&value).map_err(CmdlineError::Bench)?,
        };
        let rounds = match value("rounds") {
            None => 1000,
            Some(v) => match v.parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => return Err(CmdlineError::Rounds(v)),
            },
        };
        let fuzz = if mode == "fuzz" {
            let calls = match value("calls") {
                None => Fuzz::DEFAULT_CALLS,
                Some(v) => match v.parse::<usize>() {
                    Ok(n) if n > 0 => n,
                    _ => return Err(CmdlineError::Calls(v)),
                },
            };
            let seed = match value("seed") {
                None => None,
                Some(v) => Some(parse_u64(v).ok_or(CmdlineError::Seed(v))?),
            };
            Some(Fuzz { calls, seed })
        } else {
            None
        };
        let cpus = match value("cpus") {
            None => None,
            Some(v) => match v.parse::<usize>() {
                Ok(n) if n > 0 => Some(n),
                _ => return Err(CmdlineError::Cpus(v)),
            },
        };
        let trace = match value("trace") {
            None | Some("0") => false,
            Some("1") if crate::trace::BUILT => true,
            Some("1") => return Err(CmdlineError::TraceNotBuilt),
            Some(v) => return Err(CmdlineError::Trace(v)),
        };
        let fastpath = match value("fastpath") {
            None | Some("1") => true,
            Some("0") => false,
            Some(v) => return Err(CmdlineError::Fastpath(v)),
        };
        Ok(Cmdline {
            lock,
            test,
            bench,
            runs,
            rounds,
            stack_overflow,
            fuzz,
            net,
            cpus,
            trace,
            fastpath,
        })
    }

    /// The cores the kernel uses when `online` cores started and it is built for `max`: the
    /// least of the three (`cpus=` absent: no limit).
    pub fn cores(&self, online: usize, max: usize) -> usize {
        cores_for(online, max, self.cpus)
    }

    /// The configuration on `cores` cores, or the error if the benchmark asked for cannot run
    /// there under the lock asked for.
    pub fn on_cores(self, cores: usize) -> Result<Config, CmdlineError<'static>> {
        if self.lock == LockChoice::None && self.net && cores > 1 {
            return Err(CmdlineError::NetWithoutLock { cores });
        }
        if let Some(kind) = self.bench {
            if self.lock == LockChoice::None && kind.shares_objects_across_cores(cores) {
                return Err(match kind {
                    Kind::Memory(_) => CmdlineError::MemoryWithoutLock { cores },
                    _ => CmdlineError::SharedWithoutLock { cores },
                });
            }
        }
        Ok(Config {
            cmdline: self,
            cores,
        })
    }
}

/// The cores a kernel uses: `online` ones started, built for `max`, capped by `cpus=`.
fn cores_for(online: usize, max: usize, cpus: Option<usize>) -> usize {
    online.min(max).min(cpus.unwrap_or(usize::MAX))
}

/// A decimal or `0x` hexadecimal number.
fn parse_u64(v: &str) -> Option<u64> {
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

/// The run's configuration: the command line and the cores the kernel runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// What the command line asked for.
    pub cmdline: Cmdline,
    /// Cores the kernel runs on.
    pub cores: usize,
}

impl Config {
    /// The cores the kernel must run on with `online` cores up: every online one the kernel
    /// supports, up to the `cpus=` cap (what the SMP self-test checks [`cores`](Self::cores)
    /// against).
    pub fn expected_cores(&self, online: usize, max: usize) -> usize {
        cores_for(online, max, self.cmdline.cpus)
    }

    /// Whether the pager test runs: in test mode, except under `lock=none` (the pager's
    /// MapFrame is a management call made while other cores run, which `NoLock` forbids).
    pub fn pager_test(&self) -> bool {
        self.cmdline.test && self.cmdline.lock != LockChoice::None
    }

    /// The shape of the initial system, for user programs whose counter runs at `counter_hz`
    /// and a system-call error program that prints `user_error_tests` test lines.
    pub fn setup(&self, counter_hz: u64, user_error_tests: usize) -> Setup {
        Setup {
            cores: self.cores,
            test: self.cmdline.test,
            rounds: self.cmdline.rounds,
            pager_test: self.pager_test(),
            user_error_tests,
            bench: self
                .cmdline
                .bench
                .map(|kind| (kind, interval_ticks(counter_hz))),
            stack_overflow: self.cmdline.stack_overflow,
            fuzz: self.cmdline.fuzz.map(|f| crate::system::FuzzSetup {
                calls: f.calls,
                seed: f.seed,
                // `NoLock` allows no management call while other cores run.
                common_only: self.cmdline.lock == LockChoice::None,
            }),
            net: self.cmdline.net,
        }
    }

    /// What the debug calls serve, after `kernel_tests` in-kernel tests.
    pub fn run(&self, kernel_tests: usize) -> Run {
        Run {
            test: self.cmdline.test,
            cores: self.cores,
            bench: self.cmdline.bench,
            runs: self.cmdline.runs,
            lock: self.cmdline.lock.name(),
            kernel_tests,
            stack_overflow: self.cmdline.stack_overflow,
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::string::ToString;

    use super::*;
    use crate::bench::Variant;

    /// A look-up over `key=value` words, as the images' command lines give them.
    fn words(line: &'static str) -> impl Fn(&str) -> Option<&'static str> {
        move |k: &str| {
            line.split_whitespace()
                .filter_map(|w| w.split_once('='))
                .find(|(key, _)| *key == k)
                .map(|(_, v)| v)
        }
    }

    #[test]
    fn defaults_to_the_clh_demo() {
        assert_eq!(
            Cmdline::parse(words("")),
            Ok(Cmdline {
                lock: LockChoice::Clh,
                test: false,
                bench: None,
                runs: servers::image::bench::DEFAULT_RUNS,
                rounds: 1000,
                stack_overflow: false,
                fuzz: None,
                net: false,
                cpus: None,
                trace: false,
                fastpath: true,
            })
        );
        let so = Cmdline::parse(words("mode=stackoverflow")).unwrap();
        assert!(so.stack_overflow && !so.test && so.bench.is_none());
        let cfg = so.on_cores(2).unwrap();
        assert!(
            cfg.cmdline.stack_overflow
                && cfg.setup(1, 7).stack_overflow
                && cfg.run(9).stack_overflow
        );
        let net = Cmdline::parse(words("mode=net")).unwrap();
        assert!(net.net && !net.test && net.bench.is_none() && !net.stack_overflow);
        assert!(net.on_cores(1).unwrap().setup(1, 7).net);
    }

    #[test]
    fn fastpath_is_on_unless_zero() {
        assert!(Cmdline::parse(words("")).unwrap().fastpath);
        assert!(Cmdline::parse(words("fastpath=1")).unwrap().fastpath);
        let off = Cmdline::parse(words("fastpath=0")).unwrap();
        assert!(!off.on_cores(1).unwrap().cmdline.fastpath);
        let bad = Cmdline::parse(words("fastpath=no"));
        assert_eq!(bad, Err(CmdlineError::Fastpath("no")));
        assert!(CmdlineError::Fastpath("no")
            .to_string()
            .contains("not 0 or 1"));
    }

    #[test]
    fn trace_needs_the_feature_and_a_zero_or_one() {
        assert!(!Cmdline::parse(words("trace=0")).unwrap().trace);
        assert_eq!(
            Cmdline::parse(words("trace=yes")),
            Err(CmdlineError::Trace("yes"))
        );
        let on = Cmdline::parse(words("trace=1"));
        if crate::trace::BUILT {
            assert!(on.unwrap().on_cores(2).unwrap().cmdline.trace);
        } else {
            assert_eq!(on, Err(CmdlineError::TraceNotBuilt));
            assert!(CmdlineError::TraceNotBuilt
                .to_string()
                .contains("without kernel tracing"));
        }
    }

    #[test]
    fn reads_every_word() {
        let c = Cmdline::parse(words(
            "lock=brlock mode=bench bench=clientserver clients=3 variant=shared runs=4 rounds=7",
        ))
        .unwrap();
        assert_eq!(c.lock, LockChoice::Fine);
        assert_eq!(
            c.bench,
            Some(Kind::ClientServer {
                clients: 3,
                variant: Variant::Shared
            })
        );
        assert_eq!((c.test, c.runs, c.rounds), (false, 4, 7));
        let t = Cmdline::parse(words("mode=test lock=none runs=99")).unwrap();
        // `runs=` is read in benchmark mode only.
        assert_eq!((t.test, t.lock, t.runs), (true, LockChoice::None, 16));
    }

    #[test]
    fn the_memory_benchmark_takes_the_kernels_lock_and_needs_one_under_none() {
        use servers::image::memory::Spec;
        let c = Cmdline::parse(words(
            "lock=ticket mode=bench bench=memory pager=global alloc=buddy nodes=2 pages=100",
        ))
        .unwrap();
        let spec = Spec {
            global: true,
            buddy: true,
            nodes: 2,
            pages: 100,
            lock: 1,
        };
        assert_eq!(c.bench, Some(Kind::Memory(spec)));
        assert_eq!(Kind::from_word(Kind::to_word(c.bench)), c.bench);
        let d = Cmdline::parse(words("mode=bench bench=memory")).unwrap();
        assert_eq!(
            d.bench,
            Some(Kind::Memory(Spec {
                global: false,
                buddy: false,
                nodes: 1,
                pages: servers::image::memory::DEFAULT_PAGES,
                lock: 0,
            }))
        );
        let none = Cmdline::parse(words("lock=none mode=bench bench=memory")).unwrap();
        assert!(none.on_cores(1).is_ok());
        let e = none.on_cores(2).unwrap_err();
        assert_eq!(e, CmdlineError::MemoryWithoutLock { cores: 2 });
        assert!(e.to_string().contains("use cpus=1 or another lock"));
    }

    #[test]
    fn the_memory_benchmarks_pagers_lock_as_the_kernel_does_under_every_lock() {
        use servers::image::memory::LOCKS;
        for lock in LockChoice::ALL {
            let line: &'static str = std::boxed::Box::leak(
                std::format!("lock={} mode=bench bench=memory", lock.name()).into_boxed_str(),
            );
            let c = Cmdline::parse(words(line)).unwrap();
            let Some(Kind::Memory(spec)) = c.bench else {
                panic!("{line}: not the memory benchmark")
            };
            assert_eq!(LOCKS[spec.lock], lock.name(), "{line}");
            assert_eq!(Kind::from_word(Kind::to_word(c.bench)), c.bench, "{line}");
        }
    }

    #[test]
    fn the_network_server_on_several_cores_needs_a_lock() {
        let none = Cmdline::parse(words("lock=none mode=net")).unwrap();
        assert!(none.on_cores(1).is_ok());
        let e = none.on_cores(2).unwrap_err();
        assert_eq!(e, CmdlineError::NetWithoutLock { cores: 2 });
        assert!(e.to_string().contains("use cpus=1 or another lock"), "{e}");
        let clh = Cmdline::parse(words("lock=clh mode=net")).unwrap();
        assert!(clh.on_cores(2).is_ok());
    }

    #[test]
    fn names_the_first_bad_value() {
        let msg = |line| Cmdline::parse(words(line)).unwrap_err().to_string();
        assert_eq!(
            msg("lock=spin mode=nope"),
            "unknown lock \"spin\" on the kernel command line (lock=...); expected one of clh, \
             ticket, mcs, qspin, cna, brlock, fine, rtm, none"
        );
        assert_eq!(
            msg("mode=nope"),
            "unknown mode \"nope\" on the kernel command line; expected demo, test, bench, \
             fuzz, net or stackoverflow"
        );
        assert_eq!(
            msg("mode=fuzz calls=0"),
            "calls=\"0\" on the kernel command line is not a positive number"
        );
        assert_eq!(
            msg("mode=fuzz seed=0xZZ"),
            "seed=\"0xZZ\" on the kernel command line is not a number (decimal or 0x hex)"
        );
        assert_eq!(
            msg("mode=bench rounds=0"),
            "mode=bench needs bench=<kind>, one of ipc, multicore, clientserver, memory"
        );
        assert_eq!(
            msg("mode=bench bench=memory pager=sigma0"),
            "pager=\"sigma0\" is not a pager mode; valid ones: percore, global"
        );
        assert_eq!(
            msg("mode=bench bench=memory pages=1025"),
            "pages=\"1025\" is not a page count from 1 to 1024"
        );
        assert_eq!(
            msg("mode=bench bench=memory nodes=5"),
            "nodes=\"5\" is not a memory-node count from 1 to 4"
        );
        assert_eq!(
            msg("mode=bench bench=memory alloc=slab"),
            "alloc=\"slab\" is not an allocator; valid ones: avl, buddy"
        );
        assert_eq!(
            msg("mode=bench bench=ipc runs=0"),
            "runs=\"0\" is not a sample count from 1 to 64"
        );
        assert_eq!(
            msg("rounds=0"),
            "rounds=\"0\" on the kernel command line is not a positive number"
        );
        assert_eq!(
            msg("rounds=x"),
            "rounds=\"x\" on the kernel command line is not a positive number"
        );
    }

    #[test]
    fn fuzz_mode_reads_calls_and_seed_and_restricts_lock_none() {
        let f = Cmdline::parse(words("mode=fuzz")).unwrap();
        assert_eq!(
            f.fuzz,
            Some(Fuzz {
                calls: 100_000,
                seed: None
            })
        );
        assert!(!f.test && f.bench.is_none() && !f.stack_overflow);
        let f = Cmdline::parse(words("mode=fuzz calls=7 seed=0x1F lock=ticket")).unwrap();
        assert_eq!(
            f.fuzz,
            Some(Fuzz {
                calls: 7,
                seed: Some(31)
            })
        );
        let setup = f.on_cores(4).unwrap().setup(1, 7).fuzz.unwrap();
        assert_eq!(
            (setup.calls, setup.seed, setup.common_only),
            (7, Some(31), false)
        );
        let none = Cmdline::parse(words("mode=fuzz seed=12 lock=none")).unwrap();
        let setup = none.on_cores(4).unwrap().setup(1, 7).fuzz.unwrap();
        assert_eq!((setup.seed, setup.common_only), (Some(12), true));
        // The fuzzer's words mean nothing in other modes.
        assert_eq!(
            Cmdline::parse(words("mode=test calls=0")).unwrap().fuzz,
            None
        );
    }

    #[test]
    fn lock_names_round_trip() {
        for name in LockChoice::NAMES.split(", ") {
            let l = LockChoice::parse(name).unwrap();
            assert_eq!(LockChoice::parse(l.name()), Some(l));
        }
        assert_eq!(LockChoice::parse("brlock"), Some(LockChoice::Fine));
        assert_eq!(LockChoice::parse(""), None);
    }

    #[test]
    fn a_shared_server_needs_a_lock_on_several_cores() {
        let shared =
            Cmdline::parse(words("lock=none mode=bench bench=clientserver clients=4")).unwrap();
        assert!(shared.on_cores(1).is_ok());
        assert_eq!(
            shared.on_cores(4).unwrap_err().to_string(),
            "bench: the shared client-server benchmark on 4 cores shares the server's endpoint \
             between cores, which lock=none forbids (use variant=dedicated or another lock)"
        );
        let dedicated = Cmdline::parse(words(
            "lock=none mode=bench bench=clientserver variant=dedicated",
        ));
        assert!(dedicated.unwrap().on_cores(4).is_ok());
    }

    #[test]
    fn the_config_gives_the_setup_and_the_run() {
        let test = Cmdline::parse(words("mode=test lock=ticket rounds=5"))
            .unwrap()
            .on_cores(2)
            .unwrap();
        assert!(test.pager_test());
        let s = test.setup(1_000_000_000, 7);
        assert_eq!((s.cores, s.test, s.rounds), (2, true, 5));
        assert!(s.pager_test && s.bench.is_none());
        assert_eq!(s.user_error_tests, 7);
        let r = test.run(9);
        assert_eq!((r.lock, r.kernel_tests, r.cores), ("ticket", 9, 2));
        let none = Cmdline::parse(words("mode=test lock=none")).unwrap();
        assert!(!none.on_cores(2).unwrap().pager_test());
        let bench = Cmdline::parse(words("mode=bench bench=multicore"))
            .unwrap()
            .on_cores(4)
            .unwrap();
        assert_eq!(
            bench.setup(1_000_000_000, 7).bench,
            Some((Kind::Multicore, 2_500_000))
        );
        assert_eq!(interval_ticks(3), 1);
    }

    #[test]
    fn cpus_limits_the_cores() {
        let c = Cmdline::parse(words("lock=ticket cpus=2")).unwrap();
        assert_eq!(c.cpus, Some(2));
        assert_eq!(c.cores(4, 8), 2);
        assert_eq!(c.cores(1, 8), 1);
        let all = Cmdline::parse(words("")).unwrap();
        assert_eq!(all.cores(4, 8), 4);
        assert_eq!(all.cores(16, 8), 8);
        assert_eq!(
            Cmdline::parse(words("cpus=0")),
            Err(CmdlineError::Cpus("0"))
        );
        assert_eq!(
            Cmdline::parse(words("cpus=many")),
            Err(CmdlineError::Cpus("many"))
        );
        assert!(CmdlineError::Cpus("x").to_string().contains("cpus=\"x\""));
    }
}
