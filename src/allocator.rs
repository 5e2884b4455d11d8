//! The memory allocator's settings, made at the process's start before any thread exists.
//!
//! On Linux with glibc, `malloc` gives each thread that allocates while another holds its
//! arena an arena of its own, up to 8 per core, and keeps what every arena once held. The
//! server runs many such threads (the runtime's workers, the blocking pool's parsers, one per
//! SQLite connection). glibc also raises the size from which it maps a block on its own
//! (rather than carving it from an arena, where its pages stay once freed) to the largest block
//! freed so far, so that after one 5 MB feed body every body of that size is kept in the
//! arenas. A 500-feed OPML import took the server to 83–89 MB that way; with two arenas and a
//! fixed threshold it stays under 61 MB at no measured cost in time (docs/benchmarks.md,
//! "Importing the world's mix"). Both are set here, unless the environment sets them for glibc
//! (`MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_`, or `GLIBC_TUNABLES`), which then wins. They
//! are settings of the system's allocator rather than another allocator linked in: nothing
//! more to build, and the allocator every other benchmark was measured with. Elsewhere than
//! glibc this does nothing.

/// Arenas of glibc's allocator: two keep the two cores of a small server from waiting on one
/// lock, without a heap per thread.
pub const ARENA_MAX: i32 = 2;

/// The block size, in bytes, from which glibc maps each block on its own and gives it back
/// whole when freed: glibc's starting value (128 KiB), kept fixed rather than raised to the
/// largest block freed, so feed bodies and their parses do not stay in the arenas.
pub const MMAP_THRESHOLD: i32 = 128 * 1024;

/// One of glibc's `mallopt` settings this module makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// `M_ARENA_MAX`.
    ArenaMax(i32),
    /// `M_MMAP_THRESHOLD`.
    MmapThreshold(i32),
}

/// The settings to make, given the environment's variables (`var` answers a variable's
/// value): each unless the environment sets it for glibc already.
pub fn settings(var: impl Fn(&str) -> Option<String>) -> Vec<Setting> {
    let tunables = var("GLIBC_TUNABLES").unwrap_or_default();
    let tuned = |name: &str| {
        tunables
            .split(':')
            .any(|tunable| tunable.split('=').next() == Some(name))
    };
    let mut settings = Vec::new();
    if var("MALLOC_ARENA_MAX").is_none() && !tuned("glibc.malloc.arena_max") {
        settings.push(Setting::ArenaMax(ARENA_MAX));
    }
    if var("MALLOC_MMAP_THRESHOLD_").is_none() && !tuned("glibc.malloc.mmap_threshold") {
        settings.push(Setting::MmapThreshold(MMAP_THRESHOLD));
    }
    settings
}

/// Makes [`settings`] for this process's environment. Call it first in `main`, before any
/// thread starts: glibc applies an arena limit only to threads that have no arena yet.
pub fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    for setting in settings(|name| std::env::var(name).ok()) {
        let (parameter, value) = match setting {
            Setting::ArenaMax(value) => (libc::M_ARENA_MAX, value),
            Setting::MmapThreshold(value) => (libc::M_MMAP_THRESHOLD, value),
        };
        // SAFETY: mallopt only changes the allocator's parameters, under its own lock; it
        // takes no pointer and may be called at any time. A refused value (it answers 0)
        // leaves glibc's default, which is only more memory, so it is not an error.
        unsafe {
            libc::mallopt(parameter, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        move |name| {
            vars.iter()
                .find(|(n, _)| n == name)
                .map(|(_, value)| value.clone())
        }
    }

    #[test]
    fn two_arenas_and_a_fixed_mapping_threshold_by_default() {
        assert_eq!(
            settings(from(&[])),
            vec![
                Setting::ArenaMax(ARENA_MAX),
                Setting::MmapThreshold(MMAP_THRESHOLD)
            ]
        );
    }

    #[test]
    fn what_the_environment_sets_for_glibc_wins() {
        assert_eq!(
            settings(from(&[("MALLOC_ARENA_MAX", "8")])),
            vec![Setting::MmapThreshold(MMAP_THRESHOLD)]
        );
        assert_eq!(
            settings(from(&[(
                "GLIBC_TUNABLES",
                "glibc.malloc.mmap_threshold=65536:glibc.malloc.arena_max=4"
            )])),
            vec![]
        );
        assert_eq!(
            settings(from(&[("MALLOC_MMAP_THRESHOLD_", "1048576")])),
            vec![Setting::ArenaMax(ARENA_MAX)]
        );
        // Another tunable leaves both to tidings.
        assert_eq!(
            settings(from(&[("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0")])).len(),
            2
        );
    }
}
