//! A stopwatch of the calling thread's own CPU time, for the tests that bound how much work
//! hostile input costs. Wall-clock time also counts the moments other processes hold the CPU,
//! so on a loaded machine (CI next to other builds) a wall-clock bound fails for reasons that
//! have nothing to do with the code; the thread's CPU time does not grow with the load.

use std::time::{Duration, Instant};

/// Measures the CPU time the current thread spends from [`CpuStopwatch::start`] on.
pub struct CpuStopwatch {
    cpu_at_start: Option<Duration>,
    wall_at_start: Instant,
}

impl CpuStopwatch {
    /// Starts measuring on the current thread.
    pub fn start() -> Self {
        Self {
            cpu_at_start: thread_cpu_time(),
            wall_at_start: Instant::now(),
        }
    }

    /// The thread's CPU time since the start; wall-clock time where the system does not say
    /// (outside Linux, or a kernel without scheduler statistics).
    pub fn elapsed(&self) -> Duration {
        match (self.cpu_at_start, thread_cpu_time()) {
            (Some(start), Some(now)) => now.saturating_sub(start),
            _ => self.wall_at_start.elapsed(),
        }
    }
}

/// The current thread's time on a CPU, from Linux's `/proc/thread-self/schedstat`, whose first
/// field is nanoseconds spent running.
fn thread_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = stat.split_whitespace().next()?.parse::<u64>().ok()?;
    Some(Duration::from_nanos(nanos))
}
