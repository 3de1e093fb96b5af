//! The retry policy of [`RtmLock`](super::RtmLock): how often to try a transaction and when to
//! stop eliding for a while.

/// Tuning of the elision policy (glibc's `elision-conf` knobs, with oneTBB's wait-before-retry).
///
/// The decision after an aborted attempt (see the [module docs](super) for the whole algorithm):
///
/// | abort cause | attempts left | action |
/// |-------------|---------------|--------|
/// | busy (`XABORT 0xff`) | yes | wait until the fallback is free, retry |
/// | busy | no | skip the next [`busy_skip`](Self::busy_skip) elisions; fallback |
/// | conflict, or retry bit alone | yes | wait until the fallback is free, retry |
/// | conflict, or retry bit alone | no | fallback |
/// | capacity, debug, nested, other | - | skip the next [`abort_skip`](Self::abort_skip) elisions; fallback now |
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtmPolicy {
    /// How many transactions `lock` starts at most before it takes the fallback lock: the first
    /// attempt plus `max_attempts - 1` retries (glibc's `retry_try_xbegin`). 0 disables elision.
    /// `try_lock` never retries: it makes at most one attempt.
    pub max_attempts: u32,
    /// Acquisitions that take the fallback directly after the attempts ended in busy aborts: the
    /// lock is being used through its fallback by other CPUs, and eliding now would only abort
    /// (glibc's `skip_lock_busy`).
    pub busy_skip: u32,
    /// Acquisitions that take the fallback directly after an abort that a retry cannot fix:
    /// capacity, debug, nested, or an unnamed cause such as an interrupt or an always-aborting
    /// instruction (glibc's `skip_lock_internal_abort`).
    pub abort_skip: u32,
}

impl RtmPolicy {
    /// 3 attempts, skip 3 acquisitions after busy or non-retryable aborts (glibc's defaults).
    pub const DEFAULT: Self = Self {
        max_attempts: 3,
        busy_skip: 3,
        abort_skip: 3,
    };

    /// This policy with another number of attempts.
    pub const fn with_max_attempts(self, max_attempts: u32) -> Self {
        Self {
            max_attempts,
            ..self
        }
    }

    /// This policy with other skip counts (busy, then other non-retryable aborts).
    pub const fn with_skips(self, busy_skip: u32, abort_skip: u32) -> Self {
        Self {
            busy_skip,
            abort_skip,
            ..self
        }
    }
}

impl Default for RtmPolicy {
    fn default() -> Self {
        Self::DEFAULT
    }
}
