//! Progress lines for commands made of many similar parts (benchmark points, trace runs, a
//! soak's rounds): which part starts, how long the command has run, and an estimate of what is
//! left, from the mean time of the parts done so far. The estimate is rough when the parts
//! differ (a build first, then short boots), which is why it says "about"; it appears once one
//! part is done.

use std::time::{Duration, Instant};

/// Counts parts as they start and times the whole.
#[derive(Debug)]
pub struct Progress {
    /// The command's prefix (`bench`, `trace`).
    who: &'static str,
    started: Instant,
    /// Parts started so far.
    begun: usize,
    total: usize,
}

impl Progress {
    /// Progress over `total` parts, printed with the prefix `who`.
    pub fn new(who: &'static str, total: usize) -> Progress {
        Progress {
            who,
            started: Instant::now(),
            begun: 0,
            total,
        }
    }

    /// The next part's line: `who: [i/N, 1 min 5 s so far, about 3 min left] what`.
    pub fn next(&mut self, what: &str) -> String {
        self.begun += 1;
        format!(
            "{}: [{}/{}{}] {what}",
            self.who,
            self.begun,
            self.total,
            timing(self.started.elapsed(), self.begun - 1, self.total)
        )
    }

    /// Time since the first part started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

/// `, T so far, about L left` after `done` of `total` parts took `elapsed` (nothing before
/// the first part is done; no estimate once all are).
fn timing(elapsed: Duration, done: usize, total: usize) -> String {
    if done == 0 {
        return String::new();
    }
    let so_far = format!(", {} so far", human(elapsed));
    if done >= total {
        return so_far;
    }
    let left = elapsed.mul_f64((total - done) as f64 / done as f64);
    format!("{so_far}, about {} left", human(left))
}

/// A duration as people say it: `45 s`, `3 min 10 s`, `1 h 5 min`.
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human(Duration::from_secs(45)), "45 s");
        assert_eq!(human(Duration::from_secs(190)), "3 min 10 s");
        assert_eq!(human(Duration::from_secs(3900)), "1 h 5 min");
    }

    #[test]
    fn the_estimate_is_the_mean_part_times_the_parts_left() {
        assert_eq!(timing(Duration::from_secs(5), 0, 10), "");
        assert_eq!(
            timing(Duration::from_secs(60), 2, 10),
            ", 1 min 0 s so far, about 4 min 0 s left"
        );
        assert_eq!(timing(Duration::from_secs(30), 3, 3), ", 30 s so far");
        let mut p = Progress::new("bench", 3);
        assert_eq!(p.next("first"), "bench: [1/3] first");
        assert!(p
            .next("second")
            .starts_with("bench: [2/3, 0 s so far, about 0 s left] second"));
    }
}
