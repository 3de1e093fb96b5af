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
//!              "per_waiter": 40, "data_lines": 4 }
//! }
//! ```

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

/// The cache-coherence cost model (beyond the thesis), charged when a lock is handed to a core
/// other than its last holder: the lock's line and `data_lines` lines of the data it protects
/// move to the new holder, each transfer costing more the more cores share the line, plus an
/// invalidation per core still spinning on the lock.
///
/// `cost = (1 + data_lines) × (line_transfer + per_sharer × sharers) + per_waiter × waiters`
///
/// where `sharers` is the number of other cores that held the lock since this core last did and
/// `waiters` the number of cores still queued on it. A core that takes a lock it held last pays
/// nothing, so a single core, disjoint object locks and the no-lock strategy are unchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheModel {
    /// Whether the model is applied.
    pub enabled: bool,
    /// Cycles to move one line from another core's cache (the calibration benchmark's hand-off).
    pub line_transfer: u64,
    /// Extra cycles per transfer for each other core that shared the line.
    pub per_sharer: u64,
    /// Extra cycles per core spinning on the lock when it is handed over.
    pub per_waiter: u64,
    /// Lines of protected data that move with the lock.
    pub data_lines: u64,
}

/// A simulator run's configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
}
