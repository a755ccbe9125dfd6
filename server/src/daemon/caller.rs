//! The client a daemon session serves, as the daemon may believe it: what
//! serve said of itself ([`CallerSpec`]) checked against what the kernel
//! says of the connection's peer.
//!
//! What must hold: the pid serve names is the peer's (SO_PEERCRED); its
//! `$TMUX` and `$TMUX_PANE` are those of that process's environment
//! (`/proc/PID/environ`, where it can be read); its parents are read again
//! from `/proc`, not taken from the spec. A spec that does not hold is
//! refused (serve then serves in-process, where the caller is its own).

use crate::tmux::caller::CallerPane;
use crate::tmux::procfs;

use super::wire::CallerSpec;

/// The caller of a session whose spec says `said`, on a connection whose
/// peer is `peer` (`None` where the system does not tell: the spec, with
/// its private runtime directory as the only guard).
pub fn verify(said: &CallerSpec, peer: Option<u32>) -> Result<CallerPane, String> {
    let Some(peer) = peer else {
        return Ok(pane_of(said).with_processes(said_processes(said)));
    };
    if said.pid != peer {
        return Err(format!(
            "the session names pid {} as its client, but the connection is pid {peer}'s",
            said.pid
        ));
    }
    if let Some(environ) = procfs::environ_of(peer) {
        for (name, value) in [("TMUX", &said.tmux), ("TMUX_PANE", &said.tmux_pane)] {
            let seen = procfs::environ_value(&environ, name)
                .filter(|v| !v.is_empty())
                .map(|v| String::from_utf8_lossy(v).into_owned());
            if &seen != value {
                return Err(format!(
                    "the session's ${name} ({value:?}) is not its client's ({seen:?}, /proc/{peer}/environ)"
                ));
            }
        }
    }
    let mut processes = procfs::ancestors(peer);
    if processes.is_empty() {
        // No /proc here: what the spec says is all there is.
        processes = said_processes(said);
    }
    Ok(pane_of(said).with_processes(processes))
}

/// serve and its parents as the spec names them.
fn said_processes(said: &CallerSpec) -> Vec<u32> {
    std::iter::once(said.pid)
        .chain(said.parents.iter().copied())
        .collect()
}

fn pane_of(said: &CallerSpec) -> CallerPane {
    CallerPane::from_values(said.tmux.clone(), said.tmux_pane.clone())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_spec_is_believed_only_where_the_kernel_agrees() {
        let mut here = CallerSpec::here();
        let me = std::process::id();
        let caller = verify(&here, Some(me)).unwrap();
        assert!(caller.runs_under(me));
        assert!(here.parents.iter().all(|p| caller.runs_under(*p)));
        // Another pid than the peer's.
        let err = verify(&here, Some(1)).unwrap_err();
        assert!(err.contains("connection is pid 1's"), "{err}");
        // A pane this process was not started in.
        here.tmux_pane = Some("%4242".into());
        let err = verify(&here, Some(me)).unwrap_err();
        assert!(err.contains("$TMUX_PANE"), "{err}");
        // Parents are read, not taken: a made-up one is not believed.
        let mut made_up = CallerSpec::here();
        made_up.parents.push(4_000_000);
        let caller = verify(&made_up, Some(me)).unwrap();
        assert!(!caller.runs_under(4_000_000));
    }
}
