//! Summary statistics of a record's samples.

/// Mean, sample standard deviation, minimum and median of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (divisor n - 1; 0 for a single sample).
    pub stddev: f64,
    /// Smallest sample.
    pub min: f64,
    /// Median (mean of the two middle samples for an even count).
    pub median: f64,
}

/// The statistics of `samples`, or `None` if there are none or one is not finite.
pub fn stats(samples: &[f64]) -> Option<Stats> {
    if samples.is_empty() || samples.iter().any(|s| !s.is_finite()) {
        return None;
    }
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    let stddev = if samples.len() < 2 {
        0.0
    } else {
        (samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    };
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    let median = if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    };
    Some(Stats {
        mean,
        stddev,
        min: sorted[0],
        median,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        let s = stats(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.mean, 5.0);
        // Sample (n - 1) standard deviation: sqrt(32 / 7).
        assert!((s.stddev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12, "{s:?}");
        assert_eq!(s.min, 2.0);
        assert_eq!(s.median, 4.5);
    }

    #[test]
    fn odd_count_median_and_single_sample() {
        assert_eq!(stats(&[3.0, 1.0, 2.0]).unwrap().median, 2.0);
        let one = stats(&[7.0]).unwrap();
        assert_eq!(
            (one.mean, one.stddev, one.min, one.median),
            (7.0, 0.0, 7.0, 7.0)
        );
    }

    #[test]
    fn identical_samples_have_no_spread() {
        let s = stats(&[421.0; 16]).unwrap();
        assert_eq!((s.mean, s.stddev), (421.0, 0.0));
    }

    #[test]
    fn empty_or_non_finite_is_none() {
        assert!(stats(&[]).is_none());
        assert!(stats(&[1.0, f64::NAN]).is_none());
        assert!(stats(&[f64::INFINITY]).is_none());
    }
}
