//! The seed paper's reference figures that the report and Figure 1 put beside ours: the IPC
//! round-trip overheads of big-lock-is-fine (seL4 on multicore, APSys 2015), Fig. 1.

/// One overhead the paper reports: a locking strategy's round trip over no lock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Overhead {
    /// Our kernel lock that corresponds to the paper's variant (`clh`, `fine`, `rtm`).
    pub lock: &'static str,
    /// The architecture (`x86_64`, `armv7`).
    pub arch: &'static str,
    /// The overhead in percent.
    pub percent: f64,
    /// Whether the paper gives it only roughly (`~`).
    pub approx: bool,
    /// What it is, for the report's table.
    pub what: &'static str,
    /// The paper's figure as the report quotes it.
    pub text: &'static str,
}

impl Overhead {
    /// The percentage as a label: `+10%`, `~+30%`.
    pub fn label(&self) -> String {
        format!(
            "{}{:+.0}%",
            if self.approx { "~" } else { "" },
            self.percent
        )
    }
}

/// Where the paper's figures come from.
pub const SOURCE: &str = "big-lock-is-fine, Fig. 1";

/// The machine the paper measured `arch` on.
pub fn machine(arch: &str) -> &'static str {
    match arch {
        "x86_64" => "Haswell i7-4770",
        _ => "Cortex-A9 i.MX6Q",
    }
}

/// The paper's round-trip overheads, x86 first.
pub const OVERHEADS: [Overhead; 5] = [
    Overhead {
        lock: "clh",
        arch: "x86_64",
        percent: 10.0,
        approx: false,
        what: "x86 big-lock (CLH) overhead",
        text: "+65 cycles (+10%), Haswell i7-4770",
    },
    Overhead {
        lock: "fine",
        arch: "x86_64",
        percent: 30.0,
        approx: true,
        what: "x86 fine-grained overhead",
        text: "~+30%",
    },
    Overhead {
        lock: "rtm",
        arch: "x86_64",
        percent: 30.0,
        approx: true,
        what: "x86 RTM overhead",
        text: "~+30% (with RTM)",
    },
    Overhead {
        lock: "clh",
        arch: "armv7",
        percent: 20.0,
        approx: false,
        what: "ARM big-lock (CLH) overhead",
        text: "+124 cycles (+20%), Cortex-A9 i.MX6Q",
    },
    Overhead {
        lock: "fine",
        arch: "armv7",
        percent: 60.0,
        approx: true,
        what: "ARM fine-grained overhead",
        text: "~+60% (mostly dmb: 6 with BKL, 16 fine)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_are_the_papers() {
        // /work/shared/notes/seeds.md: BKL +10% x86, +20% ARM; fine-grained and RTM ~30% on
        // x86, ~60% on ARM (no RTM on ARM).
        let of = |lock: &str, arch: &str| {
            OVERHEADS
                .iter()
                .find(|o| o.lock == lock && o.arch == arch)
                .map(Overhead::label)
        };
        assert_eq!(of("clh", "x86_64").as_deref(), Some("+10%"));
        assert_eq!(of("clh", "armv7").as_deref(), Some("+20%"));
        assert_eq!(of("fine", "x86_64").as_deref(), Some("~+30%"));
        assert_eq!(of("fine", "armv7").as_deref(), Some("~+60%"));
        assert_eq!(of("rtm", "x86_64").as_deref(), Some("~+30%"));
        assert_eq!(of("rtm", "armv7"), None);
        assert!(OVERHEADS
            .iter()
            .all(|o| o.text.contains(&format!("{:.0}%", o.percent))));
    }
}
