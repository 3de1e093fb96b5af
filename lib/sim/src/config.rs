//! The simulator's JSON configuration.
//!
//! It follows the thesis's (`simulatedCores`, `defaultLatency`, `modeSwitchCost`,
//! `isCoarseGrained`, `actualCores`) with three changes: the recorded core count comes from the
//! trace header instead of the configuration (so the two cannot disagree); the strategy is one
//! enumeration instead of two booleans; and the lock-exit latency distribution is data in the
//! configuration (measured by a benchmark) rather than hard-coded. The cache model is new.
//!
//! ```json
//! {
//!   "simulated_cores": 8,
//!   "strategy": "big_lock",
//!   "lock_latency": { "fixed": { "entry": 170, "exit": 85 } },
//!   "mode_switch_cost": 39,
//!   "cache": { "enabled": true, "line_transfer": 120, "per_sharer": 20,
//!              "per_waiter": 40, "data_lines": 4, "lock_handoff": 150,
//!              "lock_cold": 100, "entry_lines": 1.5, "pre_lock_lines": 1 }
//! }
//! ```
//!
//! A [`Calibration`] file (written by the calibration benchmark) holds measured cache models,
//! one per kernel lock, and the measurements they come from.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How the simulated kernel synchronises its cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LockStrategy {
    /// One lock around every kernel entry's locked section.
    BigLock,
    /// The object locks each record names (entries that name none take no lock).
    FineGrained,
    /// No lock: the ideal for disjoint objects (unsafe in a real kernel).
    NoLock,
}

impl LockStrategy {
    /// Every strategy, in the order reports list them.
    pub const ALL: [LockStrategy; 3] = [
        LockStrategy::BigLock,
        LockStrategy::FineGrained,
        LockStrategy::NoLock,
    ];
}

/// A kernel lock the hosted recordings and the calibration name (one cache model per lock);
/// written once here for the recorder (`tests::tracing`) and `cargo xtask sim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KernelLock {
    /// Big lock over a CLH lock.
    Clh,
    /// Big lock over a ticket lock.
    Ticket,
    /// Fine-grained: the big-reader lock's shared side and ticket locks per object.
    Fine,
    /// No lock.
    None,
}

impl From<crate::trace::Strategy> for LockStrategy {
    /// The strategy the simulator replays a trace of this recording kernel with: per-object
    /// locks for a fine-grained kernel (an entry with no object locks then replays as no lock),
    /// no lock for a lock-free one, the big lock for a big-lock kernel and for an RTM kernel
    /// (its fallback lock). [`Strategy::replayed_as`](crate::trace::Strategy::replayed_as)
    /// calls it.
    fn from(recorded: crate::trace::Strategy) -> Self {
        use crate::trace::Strategy;
        match recorded {
            Strategy::FineGrained => LockStrategy::FineGrained,
            Strategy::None => LockStrategy::NoLock,
            Strategy::BigLock | Strategy::Rtm => LockStrategy::BigLock,
        }
    }
}

impl KernelLock {
    /// Every lock, in the order reports list them.
    pub const ALL: [KernelLock; 4] = [
        KernelLock::Clh,
        KernelLock::Ticket,
        KernelLock::Fine,
        KernelLock::None,
    ];

    /// The name used on command lines and in files (`clh`, `ticket`, `fine`, `none`).
    pub fn name(self) -> &'static str {
        match self {
            KernelLock::Clh => "clh",
            KernelLock::Ticket => "ticket",
            KernelLock::Fine => "fine",
            KernelLock::None => "none",
        }
    }

    /// The lock named `s`, if any.
    pub fn parse(s: &str) -> Option<KernelLock> {
        KernelLock::ALL.into_iter().find(|l| l.name() == s)
    }

    /// What a trace of this kernel names as its strategy (the file header's).
    pub fn recorded_as(self) -> crate::trace::Strategy {
        use crate::trace::Strategy;
        match self {
            KernelLock::Clh | KernelLock::Ticket => Strategy::BigLock,
            KernelLock::Fine => Strategy::FineGrained,
            KernelLock::None => Strategy::None,
        }
    }

    /// The strategy the simulator replays this kernel's traces with (see
    /// [`LockStrategy::from`]).
    pub fn replay_strategy(self) -> LockStrategy {
        self.recorded_as().replayed_as()
    }
}

/// One bucket of a measured latency distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bucket {
    /// The latency in cycles.
    pub cycles: u64,
    /// Its relative frequency (any positive scale).
    pub weight: u64,
}

/// The cost of the lock itself, without any waiting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum LockLatency {
    /// Constant entry (acquire) and exit (release) latencies in cycles.
    Fixed {
        /// Cycles to acquire a free lock.
        entry: u64,
        /// Cycles to release it.
        exit: u64,
    },
    /// A constant entry latency and an exit latency drawn from a measured distribution (the
    /// thesis found lock exit bimodal under contention). Draws come from a seeded generator, one
    /// stream per simulated core, so runs are deterministic.
    Distribution {
        /// Cycles to acquire a free lock.
        entry: u64,
        /// The exit latency's distribution.
        exit: Vec<Bucket>,
        /// Seed of the generator.
        seed: u64,
    },
}

impl LockLatency {
    /// The latency a trace measured: the median request-to-acquire time of the entries that
    /// found no other core in the kernel (the lock's own cost, with the counter reads around
    /// it), and no separate exit latency (the release is inside the recorded time after the
    /// lock). Replaying a trace on its own core count with it reproduces the recorded run,
    /// where zero would drop the lock's cost from every entry.
    pub fn measured(trace: &crate::trace::Trace) -> LockLatency {
        let mut waits: Vec<u64> = trace
            .records
            .iter()
            .filter(|r| !r.contended())
            .map(|r| u64::from(r.lock_wait()))
            .collect();
        waits.sort_unstable();
        LockLatency::Fixed {
            entry: waits.get(waits.len() / 2).copied().unwrap_or(0),
            exit: 0,
        }
    }
}

impl Default for LockLatency {
    fn default() -> Self {
        LockLatency::Fixed { entry: 0, exit: 0 }
    }
}

/// The cache-coherence cost model (beyond the thesis). Two costs, each charged only when a
/// line that another core wrote last has to move to this core, so that a single simulated core
/// never pays anything:
///
/// * **Lock hand-off**, when a lock is taken by a core other than its last holder: the lock's
///   own lines (`lock_handoff` cycles if the core waited for the lock, `lock_cold` if it found
///   the lock free), plus `data_lines` lines of the data the lock protects:
///
///   `lock cost + data_lines × line_transfer + (1 + data_lines) × per_sharer × (sharers - 1)
///   + per_waiter × waiters`
///
///   where `sharers` is the number of other cores that held the lock since this core last did
///   (at least one on a hand-off) and `waiters` the number of cores still queued on it.
/// * **Kernel entry**, whatever the lock strategy (no lock included), when other cores entered
///   the kernel since this core's last entry: lines of kernel state every entry touches and
///   other cores write (global state, per-object or per-core arrays whose elements share cache
///   lines, the other cores' flags a traced kernel reads), `pre_lock_lines` of them before the
///   lock is requested and `entry_lines` at the start of the critical section (inside the big
///   lock, so that they lengthen the time the lock is held), each
///
///   `lines × (line_transfer + per_sharer × (sharers - 1))`, rounded to whole cycles,
///
///   with `sharers` the number of other cores that entered since.
///
/// `cargo run --release -p tests --features trace --example calibrate` measures the
/// parameters on the machine it runs on ([`Calibration`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheModel {
    /// Whether the model is applied.
    pub enabled: bool,
    /// Cycles to move one line that another core wrote (the calibration's one-way line
    /// ping-pong between two cores).
    pub line_transfer: u64,
    /// Extra cycles per transfer for each further core that shared the line since this core
    /// last had it, beyond the one it comes from (needs three cores or more to measure).
    pub per_sharer: u64,
    /// Extra cycles per core spinning on the lock when it is handed over (needs three cores or
    /// more to measure).
    pub per_waiter: u64,
    /// Lines of protected data that move with a lock (per lock hand-off).
    pub data_lines: u64,
    /// Cycles a lock's own lines add to an acquisition that waited for another core's release
    /// (the release-to-acquire latency between two cores, less an uncontended acquisition).
    pub lock_handoff: u64,
    /// Cycles a lock's own lines add to the acquisition of a free lock another core held last.
    pub lock_cold: u64,
    /// Lines of shared kernel state a kernel entry moves in its critical section when other
    /// cores entered since (per entry, whatever the strategy). Fractional: an effective count,
    /// measured as what an entry costs more divided by one line's transfer (a core overlaps
    /// some of its misses).
    pub entry_lines: f64,
    /// Lines of shared kernel state a kernel entry moves before it requests the lock, when
    /// other cores entered since.
    pub pre_lock_lines: f64,
}
/// A simulator run's configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Cores to simulate; simulated core `s` replays the rows of recorded core
    /// `s mod recorded cores`.
    pub simulated_cores: usize,
    /// The lock strategy to simulate.
    pub strategy: LockStrategy,
    /// The lock's own latency.
    #[serde(default)]
    pub lock_latency: LockLatency,
    /// Extra cycles per switch between user and kernel mode, charged twice per entry on top of
    /// the recorded times (which already contain the real switches: the trace has entry and exit
    /// timestamps, unlike the thesis's); 0 replays the recorded kernel.
    #[serde(default)]
    pub mode_switch_cost: u64,
    /// The cache-coherence cost model.
    #[serde(default)]
    pub cache: CacheModel,
    /// The trace to replay (read by the command line tools; the library takes a trace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_file: Option<String>,
}

/// Why a configuration was rejected.
#[derive(Debug)]
pub enum ConfigError {
    /// Not valid JSON for a [`Config`].
    Json(serde_json::Error),
    /// Valid JSON, but a value out of range.
    Invalid(&'static str),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Json(e) => write!(f, "simulator configuration: {e}"),
            ConfigError::Invalid(why) => write!(f, "simulator configuration: {why}"),
        }
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// A configuration with no lock latency, mode-switch cost or cache model.
    pub fn new(simulated_cores: usize, strategy: LockStrategy) -> Config {
        Config {
            simulated_cores,
            strategy,
            lock_latency: LockLatency::default(),
            mode_switch_cost: 0,
            cache: CacheModel::default(),
            trace_file: None,
        }
    }

    /// Parses and checks a JSON configuration.
    pub fn from_json(text: &str) -> Result<Config, ConfigError> {
        let c: Config = serde_json::from_str(text).map_err(ConfigError::Json)?;
        c.validate()?;
        Ok(c)
    }

    /// The configuration as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a Config always serialises")
    }

    /// Checks values that JSON types cannot.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.simulated_cores == 0 {
            return Err(ConfigError::Invalid("simulated_cores must be at least 1"));
        }
        if let LockLatency::Distribution { exit, .. } = &self.lock_latency {
            if exit.iter().map(|b| b.weight).sum::<u64>() == 0 {
                return Err(ConfigError::Invalid(
                    "the exit latency distribution needs a bucket with positive weight",
                ));
            }
        }
        Ok(())
    }
}

/// What the calibration benchmark measured of one kernel lock (cycles of the timestamp counter).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockCosts {
    /// One uncontended acquisition and release on one core, the lock's lines in its cache.
    pub uncontended: f64,
    /// What an uncontended acquisition and release costs more when the other core held the
    /// lock last (its lines in the other core's cache).
    pub cold_extra: f64,
    /// Release on one core to acquisition on the other core, which waited for it (the
    /// counter's read cost taken out).
    pub handoff: f64,
}

/// What the calibration's kernel runs measured for one kernel lock: the hosted IPC workload on
/// one core, then on two cores taking turns (each entry right after the other core's, never
/// two cores in the kernel at once), mean cycles per kernel entry (entry to exit).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntryCosts {
    /// One core.
    pub one_core: f64,
    /// Two cores taking turns.
    pub alternating: f64,
    /// Kernel runs the means are the medians of.
    pub runs: usize,
}

impl EntryCosts {
    /// What an entry costs more right after another core's entry.
    pub fn extra(&self) -> f64 {
        self.alternating - self.one_core
    }
}

/// The calibration benchmark's output: the measurements, and the cache model of each kernel
/// lock derived from them ([`Calibration::derive`]). `cargo xtask sim --calibration FILE
/// --lock NAME` replays a trace with the model of lock `NAME`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// The machine measured (CPU model and CPU count).
    pub machine: String,
    /// How it was measured.
    pub method: String,
    /// When (seconds since the Unix epoch).
    pub unix_time: u64,
    /// The timestamp counter's frequency in Hz.
    pub frequency_hz: u64,
    /// One-way hand-off of one cache line between two cores (a line ping-pong), in cycles.
    pub line_transfer: f64,
    /// Per lock (`clh`, `ticket`): its costs.
    pub locks: std::collections::BTreeMap<String, LockCosts>,
    /// Per kernel lock (`clh`, `ticket`, `fine`, `none`): what an entry costs.
    pub entries: std::collections::BTreeMap<String, EntryCosts>,
    /// Per kernel lock: the cache model derived from the measurements.
    pub models: std::collections::BTreeMap<String, CacheModel>,
}

/// Lines a traced kernel entry moves before it requests the lock: the start of its trace
/// record reads every other core's `in_kernel` flag (each on its own cache line, written by
/// that core at each of its entries and exits) to count the cores in the kernel. With two
/// cores, one line; the calibration counts the rest of an entry's extra in its critical
/// section. (Argued from the kernel's entry path, `Kernel::trace_begin`, not measured apart.)
pub const TRACED_PRE_LOCK_LINES: f64 = 1.0;

/// Rounds a measured cost to whole cycles, negatives (noise around zero) to zero.
fn cycles(v: f64) -> u64 {
    if v.is_finite() && v > 0.0 {
        v.round() as u64
    } else {
        0
    }
}

impl Calibration {
    /// The cache model of a kernel lock from the measurements:
    /// * `line_transfer`: the line ping-pong's one-way hand-off;
    /// * what a kernel entry costs more right after another core's entry (the whole entry: the
    ///   lock's lines, if it has one, and the kernel state both cores write), in line
    ///   transfers: [`TRACED_PRE_LOCK_LINES`] of them before the lock (`pre_lock_lines`), the
    ///   rest in the critical section (`entry_lines`);
    /// * with a lock the simulator replays (`lock` given: the big locks), `lock_handoff`: what
    ///   waiting for another core's release costs more than finding the lock free where
    ///   another core left it, which the entry cost already holds: the hand-off latency less
    ///   the cold extra and less the uncontended acquisition (half the measured pair; the
    ///   trace's lock latency holds it). `lock_cold` is 0 for the same reason;
    /// * `per_sharer`, `per_waiter` and `data_lines` 0: a two-core machine cannot tell how a
    ///   transfer grows with more sharers or waiters, and the data that moves with the big
    ///   lock is what moves on every entry.
    pub fn derive(line_transfer: f64, lock: Option<&LockCosts>, entry: &EntryCosts) -> CacheModel {
        let extra = entry.extra();
        let lines = if extra > 0.0 && line_transfer >= 1.0 {
            // Two decimals: what the measurement resolves, and a file that reads well.
            (extra / line_transfer * 100.0).round() / 100.0
        } else {
            0.0
        };
        let pre = lines.min(TRACED_PRE_LOCK_LINES);
        CacheModel {
            enabled: true,
            line_transfer: cycles(line_transfer),
            per_sharer: 0,
            per_waiter: 0,
            data_lines: 0,
            lock_handoff: lock.map_or(0, |l| {
                cycles(l.handoff - l.cold_extra - l.uncontended / 2.0)
            }),
            lock_cold: 0,
            entry_lines: ((lines - pre) * 100.0).round() / 100.0,
            pre_lock_lines: pre,
        }
    }

    /// Parses and checks a calibration file: every model enabled and every lock that has
    /// entry costs has a model.
    pub fn from_json(text: &str) -> Result<Calibration, ConfigError> {
        let c: Calibration = serde_json::from_str(text).map_err(ConfigError::Json)?;
        if c.models.is_empty() {
            return Err(ConfigError::Invalid("the calibration has no cache model"));
        }
        if c.models.values().any(|m| !m.enabled) {
            return Err(ConfigError::Invalid("a calibrated cache model is disabled"));
        }
        if c.entries.keys().any(|k| !c.models.contains_key(k)) {
            return Err(ConfigError::Invalid(
                "a kernel lock with entry costs has no cache model",
            ));
        }
        Ok(c)
    }

    /// The calibration as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a Calibration always serialises")
    }

    /// The cache model of kernel lock `lock` (`clh`, `ticket`, `fine`, `none`).
    pub fn model(&self, lock: &str) -> Result<CacheModel, ConfigError> {
        self.models.get(lock).copied().ok_or(ConfigError::Invalid(
            "the calibration has no model for this lock",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example_and_round_trips() {
        let text = r#"{
          "simulated_cores": 8,
          "strategy": "big_lock",
          "lock_latency": { "fixed": { "entry": 170, "exit": 85 } },
          "mode_switch_cost": 39,
          "cache": { "enabled": true, "line_transfer": 120, "per_sharer": 20,
                     "per_waiter": 40, "data_lines": 4 }
        }"#;
        let c = Config::from_json(text).unwrap();
        assert_eq!(c.simulated_cores, 8);
        assert_eq!(c.strategy, LockStrategy::BigLock);
        assert_eq!(
            c.lock_latency,
            LockLatency::Fixed {
                entry: 170,
                exit: 85
            }
        );
        assert!(c.cache.enabled);
        assert_eq!(c.cache.data_lines, 4);
        assert_eq!(Config::from_json(&c.to_json()).unwrap(), c);
    }

    #[test]
    fn defaults_and_distribution() {
        let c = Config::from_json(
            r#"{"simulated_cores": 2, "strategy": "fine_grained",
                "lock_latency": {"distribution": {"entry": 100,
                  "exit": [{"cycles": 80, "weight": 9}, {"cycles": 400, "weight": 1}], "seed": 7}}}"#,
        )
        .unwrap();
        assert_eq!(c.mode_switch_cost, 0);
        assert!(!c.cache.enabled);
        assert!(matches!(
            c.lock_latency,
            LockLatency::Distribution { seed: 7, .. }
        ));
    }

    #[test]
    fn rejects_bad_configurations() {
        for bad in [
            r#"{"simulated_cores": 0, "strategy": "no_lock"}"#,
            r#"{"simulated_cores": 2, "strategy": "giant"}"#,
            r#"{"simulated_cores": 2, "strategy": "no_lock", "typo": 1}"#,
            r#"{"simulated_cores": 2, "strategy": "big_lock",
                "lock_latency": {"distribution": {"entry": 1, "exit": [], "seed": 1}}}"#,
        ] {
            assert!(Config::from_json(bad).is_err(), "accepted {bad}");
        }
    }

    fn sample_calibration() -> Calibration {
        let lock = LockCosts {
            uncontended: 8.0,
            cold_extra: 61.4,
            handoff: 140.0,
        };
        let entry = |one, alt| EntryCosts {
            one_core: one,
            alternating: alt,
            runs: 3,
        };
        let big = entry(200.0, 330.0);
        let fine = entry(330.0, 427.5);
        Calibration {
            machine: "test CPU, 2 CPUs".into(),
            method: "by hand".into(),
            unix_time: 0,
            frequency_hz: 2_000_000_000,
            line_transfer: 65.0,
            locks: [("clh".to_string(), lock.clone())].into(),
            entries: [
                ("clh".to_string(), big.clone()),
                ("fine".to_string(), fine.clone()),
            ]
            .into(),
            models: [
                (
                    "clh".to_string(),
                    Calibration::derive(65.0, Some(&lock), &big),
                ),
                ("fine".to_string(), Calibration::derive(65.0, None, &fine)),
            ]
            .into(),
        }
    }

    #[test]
    fn calibration_derives_known_models() {
        let c = sample_calibration();
        let clh = c.model("clh").unwrap();
        // Entry 330 - 200 = 130 more: two lines of 65, one before the lock. The hand-off 140
        // less the cold extra 61.4 and half the uncontended pair's 8: 74.6.
        assert_eq!(
            clh,
            CacheModel {
                enabled: true,
                line_transfer: 65,
                per_sharer: 0,
                per_waiter: 0,
                data_lines: 0,
                lock_handoff: 75,
                lock_cold: 0,
                entry_lines: 1.0,
                pre_lock_lines: 1.0,
            }
        );
        // No replayed lock: no lock costs; 97.5 / 65 = 1.5 lines.
        let fine = c.model("fine").unwrap();
        assert_eq!(
            (
                fine.pre_lock_lines,
                fine.entry_lines,
                fine.lock_handoff,
                fine.lock_cold
            ),
            (1.0, 0.5, 0, 0)
        );
        assert!(c.model("ticket").is_err());
        // (alternating entry cost against 300 on one core, expected pre-lock and entry lines)
        let cases = [
            // Less than a line in all: all of it before the lock.
            (326.0, (0.4, 0.0)),
            // Noise below zero is no cost.
            (290.0, (0.0, 0.0)),
        ];
        for (alternating, lines) in cases {
            let costs = EntryCosts {
                one_core: 300.0,
                alternating,
                runs: 1,
            };
            let m = Calibration::derive(65.0, None, &costs);
            assert_eq!((m.pre_lock_lines, m.entry_lines), lines, "{alternating}");
        }
    }
    #[test]
    fn calibration_files_parse_and_round_trip() {
        let c = sample_calibration();
        let text = c.to_json();
        assert_eq!(Calibration::from_json(&text).unwrap(), c);
        // The models are what a configuration's `cache` holds.
        let cfg = Config {
            cache: c.model("clh").unwrap(),
            ..Config::new(2, LockStrategy::BigLock)
        };
        assert_eq!(Config::from_json(&cfg.to_json()).unwrap(), cfg);

        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["models"]["clh"]["enabled"] = false.into();
        assert!(
            Calibration::from_json(&v.to_string()).is_err(),
            "disabled model"
        );
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["models"].as_object_mut().unwrap().remove("fine");
        assert!(
            Calibration::from_json(&v.to_string()).is_err(),
            "entry costs without model"
        );
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["models"] = serde_json::json!({});
        v["entries"] = serde_json::json!({});
        assert!(Calibration::from_json(&v.to_string()).is_err(), "no model");
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["line_transfer_typo"] = 1.into();
        assert!(
            Calibration::from_json(&v.to_string()).is_err(),
            "unknown field"
        );
        assert!(Calibration::from_json("{").is_err());
    }
}
