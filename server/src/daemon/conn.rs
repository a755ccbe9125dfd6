//! One connection to the daemon, on a thread of its own: the peer's uid
//! checked (SO_PEERCRED) before a byte is read, the hello, the client's
//! request, then an MCP session until either side ends it.
//!
//! A session runs under its client's spec (tier, ceilings, default
//! server) with the daemon's pane cache; its end (end of input, a stop)
//! cancels and answers its own calls only.

use std::io::BufReader;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::bounded;

use super::wire::{self, Answer, Hello, Request, SessionEnv, SessionSpec};
use super::{Daemon, VERSION};
use crate::mcp::session;

/// How long a client has to send its request after the hello.
const REQUEST_WAIT: Duration = Duration::from_secs(5);

/// Serves one accepted connection to its end.
pub fn serve(daemon: &Arc<Daemon>, stream: UnixStream) {
    let peer_pid = match peer(&stream) {
        Ok(Some((uid, pid))) if uid == super::place::uid() => u32::try_from(pid).ok(),
        Ok(None) => None,
        Ok(Some((uid, pid))) => {
            eprintln!("panescan daemon: refused a connection of uid {uid} (pid {pid})");
            return;
        }
        Err(e) => {
            eprintln!("panescan daemon: refused a connection whose peer is unknown: {e}");
            return;
        }
    };
    if let Err(e) = handshake_and_serve(daemon, stream, peer_pid) {
        // A probe (a starting daemon, a client checking the build) ends
        // its connection after the hello: not worth a line.
        if !e.contains("closed the connection") {
            eprintln!("panescan daemon: connection: {e}");
        }
    }
}

/// The peer's uid and pid (SO_PEERCRED).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn peer(stream: &UnixStream) -> std::io::Result<Option<(u32, i32)>> {
    let cred = rustix::net::sockopt::socket_peercred(stream)?;
    Ok(Some((cred.uid.as_raw(), cred.pid.as_raw_nonzero().get())))
}

/// Where SO_PEERCRED does not exist, the private directory is the guard.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn peer(_stream: &UnixStream) -> std::io::Result<Option<(u32, i32)>> {
    Ok(None)
}

fn handshake_and_serve(
    daemon: &Arc<Daemon>,
    stream: UnixStream,
    peer_pid: Option<u32>,
) -> Result<(), String> {
    let mut out = stream.try_clone().map_err(|e| e.to_string())?;
    let hello = Hello {
        panescan_daemon: VERSION.to_owned(),
        build: daemon.build.clone(),
        pid: std::process::id(),
    };
    wire::send(&mut out, &hello).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(REQUEST_WAIT))
        .map_err(|e| e.to_string())?;
    let mut input = BufReader::new(stream);
    let request = wire::receive::<Request>(&mut input)?;
    match request {
        Request::Status => {
            let answer = Answer {
                status: Some(daemon.status()),
                ..Answer::default()
            };
            wire::send(&mut out, &answer).map_err(|e| e.to_string())
        }
        Request::Stop => {
            eprintln!("panescan daemon: stop asked, stopping");
            daemon.begin_stop();
            wire::send(&mut out, &Answer::default()).map_err(|e| e.to_string())
        }
        Request::Session { spec } => run_session(daemon, &spec, peer_pid, input, out),
    }
}

/// Why a session with `spec` cannot be served here, if it cannot.
fn unfit(spec: &SessionSpec) -> Option<String> {
    let here = SessionEnv::here();
    (spec.env != here).then(|| {
        format!(
            "the daemon runs tmux {} with TMUX_TMPDIR {:?}; this session asks for tmux {} with TMUX_TMPDIR {:?}",
            here.tmux.display(),
            here.tmux_tmpdir,
            spec.env.tmux.display(),
            spec.env.tmux_tmpdir
        )
    })
}

/// The ssh hosts a session may name and their ids in the daemon's host
/// table: its serve's, registered with their options (a host already held
/// with the same ones is shared, its master connection up), else the
/// daemon's own.
fn hosts(daemon: &Daemon, spec: &SessionSpec) -> Result<(Vec<String>, Vec<String>), String> {
    let Some(ssh) = &spec.ssh else {
        return Ok((daemon.config.hosts.clone(), daemon.config.hosts.clone()));
    };
    let ids = crate::tmux::ssh::configure(&ssh.settings()?)?;
    Ok((ssh.hosts.clone(), ids))
}

fn run_session(
    daemon: &Arc<Daemon>,
    spec: &SessionSpec,
    peer_pid: Option<u32>,
    input: BufReader<UnixStream>,
    mut out: UnixStream,
) -> Result<(), String> {
    let refuse = |out: &mut UnixStream, why: String| {
        let answer = Answer {
            refused: Some(why),
            ..Answer::default()
        };
        wire::send(out, &answer).map_err(|e| e.to_string())
    };
    if let Some(why) = unfit(spec) {
        return refuse(&mut out, why);
    }
    let caller = match super::caller::verify(&spec.caller, peer_pid) {
        Ok(caller) => Arc::new(caller),
        Err(why) => return refuse(&mut out, why),
    };
    let (names, ids) = match hosts(daemon, spec) {
        Ok(hosts) => hosts,
        Err(why) => return refuse(&mut out, why),
    };
    let (stop_tx, stop_rx) = bounded::<()>(1);
    let closer = out.try_clone().map_err(|e| e.to_string())?;
    let id = match daemon.open_session(stop_tx, closer) {
        Ok(id) => id,
        Err(why) => return refuse(&mut out, why),
    };
    let ended = (|| {
        wire::send(&mut out, &Answer::default()).map_err(|e| e.to_string())?;
        input
            .get_ref()
            .set_read_timeout(None)
            .map_err(|e| e.to_string())?;
        let shared = daemon.shared.clone();
        let spec = spec.over(&daemon.config.defaults);
        let mut config = spec.config(names, daemon.config.cache_bytes);
        config.caller = Some(caller);
        config.host_ids = Some(ids);
        let closer = out.try_clone().map_err(|e| e.to_string())?;
        let ended = session::run(
            Arc::new(config),
            &shared,
            (input, out),
            &stop_rx,
            ["session-in", "session-out"],
        );
        // Unblocks a writer stuck on a client that stopped reading.
        let _ = closer.shutdown(std::net::Shutdown::Both);
        ended.map(|_| ())
    })();
    daemon.close_session(id);
    ended
}
