//! glibc's malloc arenas, capped for `serve`.
//!
//! # Why
//!
//! `serve` runs every call, cache worker and capture sweep on a thread of
//! its own, so tens of short-lived threads allocate at once. glibc gives
//! each concurrent thread an arena of its own (up to 8 per core) and keeps
//! what an arena once held resident after the thread is gone: under the
//! soak's churn panescan grew from 23 to 74 MB resident on 2 cores, of
//! which 59 MB was free memory in 16 arenas and under 7 MB in use
//! (`malloc_info`, server/tests/HARDENING.md, "Soak"), and a machine with
//! more cores allows more arenas. With 2 arenas the same run stays at
//! 24 MB.
//!
//! The crate has no `unsafe`, so `mallopt` is out of reach; glibc reads
//! `MALLOC_ARENA_MAX` from the environment when a program starts. `serve`
//! therefore starts itself again (`exec`: same process id, same standard
//! streams, nothing read yet) with it set, and a marker that says it was
//! set here; the restarted process removes both from its environment
//! before any thread or child starts (its tmux and ssh clients get only
//! the variables they need anyway, `tmux::client_env`), so nothing it
//! runs inherits them. An operator's own `MALLOC_ARENA_MAX` (or an
//! `arena_max` in `GLIBC_TUNABLES`) is left as it is: `MALLOC_ARENA_MAX=16`
//! gives back glibc's own choice on 2 cores.

use std::ffi::OsStr;

/// Arenas `serve` asks glibc for.
const ARENAS: &str = "2";

/// glibc's variable.
const ARENA_MAX: &str = "MALLOC_ARENA_MAX";

/// Set beside [`ARENA_MAX`] by the restart, so the restarted process
/// knows the cap is its own and not the operator's.
const MARKER: &str = "PANESCAN_ARENAS_CAPPED";

/// What `serve` does at start about the arenas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Start again with the cap set.
    Restart,
    /// Restarted: the cap holds; remove it and the marker from the
    /// environment.
    Restarted,
    /// The operator chose: nothing to do.
    AsIs,
}

/// The decision from the three variables' values (pure).
pub fn decide(
    arena_max: Option<&OsStr>,
    marker: Option<&OsStr>,
    tunables: Option<&OsStr>,
) -> Start {
    if marker.is_some() {
        // Never restarts twice, whatever else the environment says.
        return Start::Restarted;
    }
    let tuned = tunables.is_some_and(|t| {
        t.to_string_lossy()
            .split(':')
            .any(|kv| kv.starts_with("glibc.malloc.arena_max="))
    });
    if arena_max.is_some() || tuned {
        return Start::AsIs;
    }
    Start::Restart
}

/// Caps the arenas of this process: restarts it with the cap, or clears
/// the restart's variables. Call first thing in `serve`, before any
/// thread starts (removing variables is only sound then).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn cap() {
    let var = std::env::var_os;
    match decide(
        var(ARENA_MAX).as_deref(),
        var(MARKER).as_deref(),
        var("GLIBC_TUNABLES").as_deref(),
    ) {
        Start::Restart => restart(),
        Start::Restarted => {
            std::env::remove_var(ARENA_MAX);
            std::env::remove_var(MARKER);
        }
        Start::AsIs => {}
    }
}

/// Not glibc: nothing to cap.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn cap() {}

/// `exec`s this program with the same arguments and the cap; returns only
/// if that failed, and then the server runs on uncapped.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn restart() {
    use std::os::unix::process::CommandExt;

    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return not_capped(&e),
    };
    let mut args = std::env::args_os();
    let mut cmd = std::process::Command::new(exe);
    if let Some(arg0) = args.next() {
        cmd.arg0(arg0);
    }
    let e = cmd
        .args(args)
        .env(ARENA_MAX, ARENAS)
        .env(MARKER, "1")
        .exec();
    not_capped(&e);
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn not_capped(e: &std::io::Error) {
    eprintln!("panescan serve: malloc arenas not capped (cannot start again: {e})");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Option<&OsStr> {
        Some(OsStr::new(s))
    }

    #[test]
    fn restarts_once_unless_the_operator_chose() {
        assert_eq!(decide(None, None, None), Start::Restart);
        assert_eq!(
            decide(None, None, os("glibc.malloc.tcache_count=0")),
            Start::Restart
        );
        assert_eq!(decide(os("2"), os("1"), None), Start::Restarted);
        // The marker alone (the cap removed by someone): still no loop.
        assert_eq!(decide(None, os("1"), None), Start::Restarted);
        assert_eq!(decide(os("16"), None, None), Start::AsIs);
        assert_eq!(
            decide(
                None,
                None,
                os("glibc.malloc.check=0:glibc.malloc.arena_max=4")
            ),
            Start::AsIs
        );
    }
}
