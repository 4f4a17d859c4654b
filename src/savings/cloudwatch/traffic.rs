//! What an endpoint's traffic shows of each five-minute step: quiet (CloudWatch shows no
//! request), busy, or unknown (CloudWatch has no point). Only a step CloudWatch shows quiet
//! can be idle; a metric absent for the whole window leaves every step unknown, never idle.
//!
//! - Real-time endpoints, `Invocations`: over the last 15 days at the finest resolution
//!   CloudWatch keeps, one minute, where a step is quiet only inside a stretch of 30 or more
//!   minutes each showing zero invocations (a pause between requests is not idle); older
//!   steps by their five-minute sum.
//!   <https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_concepts.html#Metric>
//!   (retention: one-minute points for 15 days, five-minute points for 63).
//! - Asynchronous endpoints publish no `Invocations`: a step is quiet when
//!   `InvocationsProcessed` is zero and `ApproximateBacklogSize` is zero, both shown.
//!   <https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference-monitor.html>

/// A quiet stretch counts as idle from this many minutes.
const QUIET_MINUTES: usize = 30;

/// What one step shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Quiet,
    Busy,
    Unknown,
}

/// Which minutes lie in a stretch of at least [`QUIET_MINUTES`] minutes each showing zero.
fn quiet_stretches(minutes: &[f32]) -> Vec<bool> {
    let mut out = vec![false; minutes.len()];
    let mut run = 0usize;
    for i in 0..=minutes.len() {
        let quiet = minutes.get(i).is_some_and(|v| *v == 0.0);
        if quiet {
            run += 1;
        } else {
            if run >= QUIET_MINUTES {
                out[i - run..i].iter_mut().for_each(|m| *m = true);
            }
            run = 0;
        }
    }
    out
}

/// A real-time endpoint's steps: `sums` is the five-minute `Invocations` on the grid (step
/// `i` covers the `step` seconds before `time(i)`); `minutes` the by-minute points from
/// their first minute's start.
pub fn real_time(
    sums: &[f32],
    minutes: Option<&(i64, Vec<f32>)>,
    times: impl Fn(usize) -> i64,
    step: i64,
) -> Vec<Step> {
    let stretches = minutes.map(|(_, values)| quiet_stretches(values));
    (0..sums.len())
        .map(|i| {
            let begins = times(i) - step;
            if let (Some((from, values)), Some(stretches)) = (minutes, &stretches) {
                let first = (begins - from).div_euclid(60);
                let count = (step / 60) as usize;
                if let Ok(first) = usize::try_from(first)
                    && first + count <= values.len()
                {
                    let range = first..first + count;
                    let minutes = &values[range.clone()];
                    return if minutes.iter().any(|v| *v > 0.0) {
                        Step::Busy
                    } else if minutes.iter().any(|v| v.is_nan()) {
                        // A minute CloudWatch shows nothing of: not shown quiet.
                        Step::Unknown
                    } else if stretches[range].iter().all(|q| *q) {
                        Step::Quiet
                    } else {
                        // A pause shorter than 30 minutes.
                        Step::Busy
                    };
                }
            }
            let sum = sums[i];
            if sum.is_nan() {
                Step::Unknown
            } else if sum == 0.0 {
                Step::Quiet
            } else {
                Step::Busy
            }
        })
        .collect()
}

/// An asynchronous endpoint's steps, from `InvocationsProcessed` and `ApproximateBacklogSize`.
pub fn asynchronous(processed: &[f32], backlog: Option<&Vec<f32>>) -> Vec<Step> {
    (0..processed.len())
        .map(|i| {
            let p = processed[i];
            let b = backlog.and_then(|b| b.get(i).copied()).unwrap_or(f32::NAN);
            if p > 0.0 || b > 0.0 {
                Step::Busy
            } else if p == 0.0 && b == 0.0 {
                Step::Quiet
            } else {
                Step::Unknown
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two hours by the minute: requests every minute but `quiet` minutes at the end of each
    /// hour that show zero; the five-minute sums agree.
    fn hours_with_quiet(quiet: usize) -> (Vec<f32>, (i64, Vec<f32>)) {
        let minutes: Vec<f32> = (0..120).map(|m| if m % 60 >= 60 - quiet { 0.0 } else { 3.0 }).collect();
        let sums = minutes.chunks(5).map(|c| c.iter().sum()).collect();
        (sums, (0, minutes))
    }

    #[test]
    fn quiet_twenty_minutes_in_every_hour_is_never_idle() {
        let (sums, minutes) = hours_with_quiet(20);
        let steps = real_time(&sums, Some(&minutes), |i| (i as i64 + 1) * 300, 300);
        assert!(steps.iter().all(|s| *s == Step::Busy), "{steps:?}");
    }

    #[test]
    fn quiet_forty_minutes_in_every_hour_is_quiet_for_those_forty() {
        let (sums, minutes) = hours_with_quiet(40);
        let steps = real_time(&sums, Some(&minutes), |i| (i as i64 + 1) * 300, 300);
        // Minutes 20–59 of each hour: steps 4–11 and 16–23.
        let quiet: Vec<usize> = (0..steps.len()).filter(|i| steps[*i] == Step::Quiet).collect();
        assert_eq!(quiet, (4..12).chain(16..24).collect::<Vec<_>>());
    }

    #[test]
    fn a_step_with_minutes_missing_is_unknown_though_its_five_minute_sum_is_zero() {
        // An hour of zeros but for two minutes CloudWatch has no point for, in the third step:
        // its five-minute Sum is 0, yet CloudWatch never showed those minutes quiet. The steps
        // around it still lie in stretches of 30 zero minutes or more.
        let mut minutes = vec![0.0; 60];
        minutes[11] = f32::NAN;
        minutes[12] = f32::NAN;
        let sums: Vec<f32> = vec![0.0; 12];
        let steps = real_time(&sums, Some(&(0, minutes)), |i| (i as i64 + 1) * 300, 300);
        assert_eq!(steps[2], Step::Unknown);
        assert_eq!(steps[3..], [Step::Quiet; 9]);
    }

    #[test]
    fn no_point_is_unknown_never_quiet() {
        let steps = real_time(&[f32::NAN; 4], None, |i| (i as i64 + 1) * 300, 300);
        assert!(steps.iter().all(|s| *s == Step::Unknown));
        let minutes = (0, vec![f32::NAN; 20]);
        let steps = real_time(&[f32::NAN; 4], Some(&minutes), |i| (i as i64 + 1) * 300, 300);
        assert!(steps.iter().all(|s| *s == Step::Unknown));
        // Before the by-minute range, the five-minute sum decides.
        let late = (1200, vec![0.0; 60]);
        let steps = real_time(&[0.0, 2.0, f32::NAN], Some(&late), |i| (i as i64 + 1) * 300, 300);
        assert_eq!(steps, [Step::Quiet, Step::Busy, Step::Unknown]);
    }

    #[test]
    fn an_asynchronous_step_is_quiet_only_with_nothing_processed_and_nothing_queued() {
        let processed = [0.0, 0.0, 4.0, f32::NAN, 0.0];
        let backlog = vec![0.0, 3.0, 0.0, 0.0, f32::NAN];
        assert_eq!(
            asynchronous(&processed, Some(&backlog)),
            [Step::Quiet, Step::Busy, Step::Busy, Step::Unknown, Step::Unknown]
        );
    }
}
