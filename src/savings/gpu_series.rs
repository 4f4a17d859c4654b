//! GPUs' utilisation as five-minute step means over one grid of steps, whichever source
//! measured it (DCGM through Prometheus, or CloudWatch): what the utilisation rules judge.

use std::collections::BTreeMap;

use crate::savings::model::ActivityMetric;

/// The steps every source fills: `steps` steps of `step` seconds, the first ending at
/// `start` (unix seconds). A step's value is the mean of the samples in the `step` seconds
/// up to its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Grid {
    pub start: i64,
    pub step: i64,
    pub steps: usize,
}

impl Grid {
    /// `days` days of five-minute steps ending at the last step boundary at or before `now`.
    pub fn ending(now: i64, days: i64, step: i64) -> Grid {
        let end = now - now.rem_euclid(step);
        let steps = (days.max(1) * 86_400 / step) as usize + 1;
        Grid {
            start: end - (steps as i64 - 1) * step,
            step,
            steps,
        }
    }

    /// The last step's time.
    pub fn end(self) -> i64 {
        self.start + (self.steps as i64 - 1) * self.step
    }

    /// The step a sample time falls on, if it is one of the grid's.
    pub fn index(self, time: i64) -> Option<usize> {
        let offset = time - self.start;
        (offset >= 0 && offset % self.step == 0)
            .then_some((offset / self.step) as usize)
            .filter(|i| *i < self.steps)
    }

    /// A step's time.
    pub fn time(self, index: usize) -> i64 {
        self.start + index as i64 * self.step
    }
}

/// One GPU: its project (or none), host and index.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gpu {
    pub project: Option<String>,
    pub host: String,
    pub gpu: String,
}

impl Gpu {
    /// The group the GPU counts in: its project, or `host:<Hostname>` when unlabelled.
    pub fn group(&self) -> String {
        match &self.project {
            Some(project) => project.clone(),
            None => format!("host:{}", self.host),
        }
    }
}

/// Whole-window means, in percent (ratios × 100), and memory in MiB; `None` where the GPU
/// does not publish the counter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Means {
    pub gpu_util: Option<f64>,
    pub engine_active: Option<f64>,
    pub sm_active: Option<f64>,
    pub tensor_active: Option<f64>,
    pub sm_occupancy: Option<f64>,
    pub peak_memory_used_mib: Option<f64>,
    pub memory_total_mib: Option<f64>,
    /// Where the peak comes from and which statistic it is: what right-sizing from
    /// observation names as its evidence.
    pub peak_memory_source: Option<&'static str>,
}

impl Means {
    /// The counter the GPU is judged by: the best one it publishes.
    pub fn judged_by(&self) -> ActivityMetric {
        if self.sm_active.is_some() {
            ActivityMetric::SmActive
        } else if self.engine_active.is_some() {
            ActivityMetric::EngineActive
        } else {
            ActivityMetric::GpuUtil
        }
    }
}

/// One GPU's steps over the window. `NaN` is a step without samples.
#[derive(Debug, Clone)]
pub struct Reading {
    /// Percent busy per step, by the best counter published in that step.
    pub activity: Vec<f32>,
    /// Percent of the step any kernel ran (engine activity, else `GPU_UTIL`): what decides
    /// idle, so a kernel that keeps one SM busy is not called idle.
    pub kernel: Vec<f32>,
    /// Memory used ÷ the card's memory per step (0 to 1).
    pub memory: Vec<f32>,
    pub means: Means,
    /// How many GPUs the series stands for: 1 for a DCGM or agent GPU, instances × GPUs for a
    /// SageMaker endpoint variant (CloudWatch averages them).
    pub gpus: u32,
    /// What it is when it is not one GPU of a host (a SageMaker endpoint variant).
    pub resource: Option<String>,
    /// When its source was read (unix seconds), if earlier than the grid's end: a stretch
    /// that reaches that read runs to now.
    pub read_at: Option<i64>,
}

impl Default for Reading {
    fn default() -> Reading {
        Reading {
            activity: Vec::new(),
            kernel: Vec::new(),
            memory: Vec::new(),
            means: Means::default(),
            gpus: 1,
            resource: None,
            read_at: None,
        }
    }
}

/// Every GPU's steps over one grid.
#[derive(Debug, Default)]
pub struct GpuSeries {
    pub grid: Grid,
    pub gpus: BTreeMap<Gpu, Reading>,
}

impl GpuSeries {
    pub fn new(grid: Grid) -> GpuSeries {
        GpuSeries {
            grid,
            gpus: BTreeMap::new(),
        }
    }

    /// The same readings on another grid of the same step: steps outside this one's are
    /// gaps. Lets a read from earlier in the hour join a fresh one.
    pub fn regrid(&self, grid: Grid) -> GpuSeries {
        let shift = |series: &Vec<f32>| -> Vec<f32> {
            if series.is_empty() {
                return Vec::new();
            }
            (0..grid.steps)
                .map(|i| {
                    self.grid
                        .index(grid.time(i))
                        .filter(|_| grid.step == self.grid.step)
                        .and_then(|j| series.get(j).copied())
                        .unwrap_or(f32::NAN)
                })
                .collect()
        };
        GpuSeries {
            grid,
            gpus: self
                .gpus
                .iter()
                .map(|(gpu, r)| {
                    let reading = Reading {
                        activity: shift(&r.activity),
                        kernel: shift(&r.kernel),
                        memory: shift(&r.memory),
                        ..r.clone()
                    };
                    (gpu.clone(), reading)
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_ends_on_a_step_and_regridding_keeps_each_reading_at_its_time() {
        let grid = Grid::ending(1_000_123, 1, 300);
        assert_eq!(grid.end(), 999_900);
        assert_eq!(grid.steps, 289);
        assert_eq!(grid.index(grid.start + 300), Some(1));
        assert_eq!(grid.index(grid.start + 299), None);
        let mut series = GpuSeries::new(grid);
        let gpu = Gpu {
            project: None,
            host: "h".into(),
            gpu: "0".into(),
        };
        let reading = Reading {
            activity: (0..grid.steps).map(|i| i as f32).collect(),
            ..Reading::default()
        };
        series.gpus.insert(gpu.clone(), reading);
        let later = Grid::ending(1_000_123 + 600, 1, 300);
        let moved = series.regrid(later);
        let steps = &moved.gpus[&gpu].activity;
        assert_eq!(steps[0], 2.0, "two steps later");
        assert!(
            steps[later.steps - 1].is_nan() && steps[later.steps - 2].is_nan(),
            "not read yet"
        );
    }
}
