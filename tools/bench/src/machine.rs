//! The machine a benchmark ran on: CPU model, host cores, QEMU and rustc versions.

use std::path::Path;

use super::records::Machine;
use host_env::proc::Cmd;

/// Reads the machine description (`unknown` / `none` where a fact cannot be found).
pub fn detect(root: &Path) -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpu_model(&cpuinfo).unwrap_or_else(|| "unknown".into());
    let host_cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let qemu = Cmd::new("qemu-system-x86_64")
        .arg("--version")
        .read_stdout(root)
        .and_then(|v| v.lines().next().map(str::to_owned))
        .unwrap_or_else(|| "none".into());
    let rustc = Cmd::new("rustc")
        .arg("--version")
        .read_stdout(root)
        .unwrap_or_else(|| "unknown".into());
    Machine {
        cpu,
        host_cores,
        qemu,
        rustc,
    }
}

/// The first `model name` of a `/proc/cpuinfo` text.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_name_from_cpuinfo() {
        let text = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n\
                    processor\t: 1\nmodel name\t: AMD EPYC 7B13\n";
        assert_eq!(cpu_model(text).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(cpu_model("processor: 0\n"), None);
    }
}
