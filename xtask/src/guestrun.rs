//! The `cargo xtask qemu` runs that the steps of `cargo xtask test` make, as typed values.
//!
//! A QEMU step runs this xtask binary's `qemu` command in a child process (its own time limit,
//! output and exit status, as a user would run it). [`QemuRun`] says what the run is (the
//! workload, architecture, machine, cores, lock and options) in the types of
//! [`qemu_runner::qemu`], and [`QemuRun::argv`] writes it as the command line, so that a step
//! is a value rather than a list of argument strings.

use qemu_runner::qemu::{arch_name, Arch, Lock, Machine};

/// What the guest runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Workload {
    /// The IPC demo (no workload option).
    #[default]
    Demo,
    /// The in-kernel and user-level test suite (`--tests`).
    Tests,
    /// The system-call fuzzer (`--fuzz`).
    Fuzz,
    /// The memory system's checks (`--memory`).
    Memory,
    /// A kernel stack overflow provoked on purpose (`--stack-overflow`).
    StackOverflow,
    /// The network server (`--net`), with the scripted session (`--check`) or not.
    Net {
        /// Whether xtask drives its scripted RESP session.
        check: bool,
    },
}

/// Build variants of the image and run options that some steps add.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The dev-profile image (`--debug`).
    Debug,
    /// The IPC fastpath off (`--no-fastpath`).
    NoFastpath,
    /// ARMv7 without semihosting (`--no-semihosting`).
    NoSemihosting,
    /// The Sabre Lite's console on UART2 (`--console-uart2`).
    ConsoleUart2,
    /// The guest cores on one host thread (`--single-thread-tcg`).
    SingleThreadTcg,
}

impl Variant {
    fn flag(self) -> &'static str {
        match self {
            Variant::Debug => "--debug",
            Variant::NoFastpath => "--no-fastpath",
            Variant::NoSemihosting => "--no-semihosting",
            Variant::ConsoleUart2 => "--console-uart2",
            Variant::SingleThreadTcg => "--single-thread-tcg",
        }
    }
}

/// One `cargo xtask qemu` run.
#[derive(Clone, Debug, Default)]
pub struct QemuRun {
    /// What the guest runs.
    pub workload: Workload,
    /// `--arch` (the command's default, x86_64, when absent).
    pub arch: Option<Arch>,
    /// `--machine` (the architecture's default when absent).
    pub machine: Option<Machine>,
    /// `--smp`.
    pub smp: Option<u32>,
    /// `--lock`.
    pub lock: Option<Lock>,
    /// Variants, in the order they are written.
    pub variants: Vec<Variant>,
    /// `--append`: more kernel command line.
    pub append: Option<&'static str>,
    /// `--pager`.
    pub pager: Option<&'static str>,
    /// `--nodes`.
    pub nodes: Option<u32>,
    /// `--numa`.
    pub numa: Option<u32>,
    /// `--network`.
    pub network: Option<&'static str>,
    /// `--client`: a shell command run against the network server.
    pub client: Option<&'static str>,
    /// `--timeout`, in seconds.
    pub timeout: u32,
}

impl QemuRun {
    /// A run of `workload` that may take `timeout` seconds; the rest as the command defaults.
    pub fn new(workload: Workload, timeout: u32) -> Self {
        Self {
            workload,
            timeout,
            ..Self::default()
        }
    }

    /// On `machine` of `arch`.
    pub fn on(mut self, arch: Arch, machine: Machine) -> Self {
        self.arch = Some(arch);
        self.machine = Some(machine);
        self
    }

    /// With `smp` cores and lock `lock`.
    pub fn with(mut self, smp: u32, lock: Lock) -> Self {
        self.smp = Some(smp);
        self.lock = Some(lock);
        self
    }

    /// With `variant` as well.
    pub fn variant(mut self, variant: Variant) -> Self {
        self.variants.push(variant);
        self
    }

    /// The arguments of this xtask binary that make the run.
    pub fn argv(&self) -> Vec<String> {
        let mut v: Vec<String> = vec!["qemu".into()];
        let mut push = |flag: &str, value: Option<String>| {
            v.push(flag.to_owned());
            v.extend(value);
        };
        match self.workload {
            Workload::Demo => {}
            Workload::Tests => push("--tests", None),
            Workload::Fuzz => push("--fuzz", None),
            Workload::Memory => push("--memory", None),
            Workload::StackOverflow => push("--stack-overflow", None),
            Workload::Net { check } => {
                push("--net", None);
                if check {
                    push("--check", None);
                }
            }
        }
        if let Some(arch) = self.arch {
            push("--arch", Some(arch_name(arch).to_owned()));
        }
        if let Some(machine) = self.machine {
            push("--machine", Some(machine.name().to_owned()));
        }
        for variant in &self.variants {
            push(variant.flag(), None);
        }
        if let Some(smp) = self.smp {
            push("--smp", Some(smp.to_string()));
        }
        if let Some(lock) = self.lock {
            push("--lock", Some(lock.name().to_owned()));
        }
        let options = [
            ("--append", self.append.map(str::to_owned)),
            ("--pager", self.pager.map(str::to_owned)),
            ("--nodes", self.nodes.map(|n| n.to_string())),
            ("--numa", self.numa.map(|n| n.to_string())),
            ("--network", self.network.map(str::to_owned)),
        ];
        for (flag, value) in options {
            if value.is_some() {
                push(flag, value);
            }
        }
        push("--timeout", Some(self.timeout.to_string()));
        if let Some(client) = self.client {
            push("--client", Some(client.to_owned()));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_written_as_the_qemu_command_line() {
        let run = QemuRun::new(Workload::Tests, 60)
            .on(Arch::Armv7, Machine::Sabrelite)
            .with(4, Lock::Fine)
            .variant(Variant::Debug);
        assert_eq!(
            run.argv().join(" "),
            "qemu --tests --arch armv7 --machine sabrelite --debug --smp 4 --lock fine \
             --timeout 60"
        );
        let mut net = QemuRun::new(Workload::Net { check: false }, 900);
        net.client = Some("true");
        net.network = Some("user");
        assert_eq!(
            net.argv().join(" "),
            "qemu --net --network user --timeout 900 --client true"
        );
    }
}
