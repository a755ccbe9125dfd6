//! A host made far away: a TCP relay on 127.0.0.1 that forwards to a
//! local port (an sshd) and holds every chunk, each direction, for half a
//! round trip, so a client pointed at the relay pays that round trip on
//! every exchange; and a listener that accepts and never speaks (a host
//! that hangs after accepting).
//!
//! Must hold: bytes arrive whole and in order, each no earlier than half
//! the round trip after the relay read it; a side that closes or fails
//! closes the other (a killed sshd drops its clients); nothing outside
//! 127.0.0.1 and the process is touched, and dropping the relay or the
//! listener stops accepting and closes what it holds.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an accept loop rests after a failed accept (out of file
/// descriptors, say) before it tries again.
const POLL: Duration = Duration::from_millis(20);

/// Accepts on `listener` until `stop`, handing each connection to `each`.
/// The accept blocks (a connection is taken the moment it arrives, as a
/// far host's kernel would): whoever sets `stop` then [`wake`]s it.
fn accept_loop(
    listener: TcpListener,
    stop: Arc<AtomicBool>,
    mut each: impl FnMut(TcpStream) + Send + 'static,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("far-accept".into())
        .spawn(move || {
            for s in listener.incoming() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                match s {
                    Ok(s) => each(s),
                    Err(_) => std::thread::sleep(POLL),
                }
            }
        })?;
    Ok(())
}

/// Stops the accept loop listening on `addr` whose `stop` was set: its
/// blocked accept returns with this connection and sees `stop`.
fn wake(addr: SocketAddr) {
    let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
}

/// A relay to `target` whose round trips take `rtt` more.
#[derive(Debug)]
pub struct Far {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    /// Every stream of every connection, shut down on drop.
    open: Arc<Mutex<Vec<TcpStream>>>,
    /// When each connection was accepted, in order.
    accepted: Arc<Mutex<Vec<Instant>>>,
}

impl Far {
    /// Listens on a free port of 127.0.0.1, relaying to `target`.
    pub fn start(target: SocketAddr, rtt: Duration) -> std::io::Result<Far> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let kept = open.clone();
        let accepted: Arc<Mutex<Vec<Instant>>> = Arc::default();
        let stamps = accepted.clone();
        let one_way = rtt / 2;
        accept_loop(listener, stop.clone(), move |client| {
            crate::sync::lock(&stamps).push(Instant::now());
            let Ok(server) = TcpStream::connect(target) else {
                let _ = client.shutdown(Shutdown::Both);
                return;
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            if let (Ok(c), Ok(s)) = (client.try_clone(), server.try_clone()) {
                crate::sync::lock(&kept).extend([c, s]);
            }
            relay(&client, &server, one_way);
            relay(&server, &client, one_way);
        })?;
        Ok(Far {
            addr,
            stop,
            open,
            accepted,
        })
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// When each connection so far was accepted, in order (how many
    /// connections a client opened, and when).
    pub fn accepted(&self) -> Vec<Instant> {
        crate::sync::lock(&self.accepted).clone()
    }
}

impl Drop for Far {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        wake(self.addr);
        for s in crate::sync::lock(&self.open).drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// Copies `from` to `to`, each chunk held `delay` after it was read: a
/// reading thread stamps the chunks, a writing thread sends each when due.
/// The end of `from` (or a failure either side) closes both.
fn relay(from: &TcpStream, to: &TcpStream, delay: Duration) {
    let (Ok(mut from), Ok(mut to)) = (from.try_clone(), to.try_clone()) else {
        return;
    };
    let (tx, rx) = crossbeam_channel::unbounded::<(Instant, Vec<u8>)>();
    let reader = std::thread::Builder::new()
        .name("far-read".into())
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match from.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if tx
                            .send((Instant::now() + delay, buf[..n].to_vec()))
                            .is_err()
                        {
                            break;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            // The end travels as late as the bytes before it.
            let _ = tx.send((Instant::now() + delay, Vec::new()));
        });
    if reader.is_err() {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("far-write".into())
        .spawn(move || {
            for (due, bytes) in rx {
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
                if bytes.is_empty() || to.write_all(&bytes).is_err() {
                    break;
                }
            }
            let _ = to.shutdown(Shutdown::Write);
        });
}

/// A listener on 127.0.0.1 that accepts every connection and never says
/// a word; the connections are held open until it is dropped.
#[derive(Debug)]
pub struct Hung {
    port: u16,
    stop: Arc<AtomicBool>,
    held: Arc<Mutex<Vec<TcpStream>>>,
}

impl Hung {
    /// Listens on a free port of 127.0.0.1.
    pub fn start() -> std::io::Result<Hung> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let held: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let keep = held.clone();
        accept_loop(listener, stop.clone(), move |s| {
            crate::sync::lock(&keep).push(s);
        })?;
        Ok(Hung { port, stop, held })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for Hung {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        wake(SocketAddr::from(([127, 0, 0, 1], self.port)));
        for s in crate::sync::lock(&self.held).drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo server on 127.0.0.1; its address.
    fn echo() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut r = s.try_clone().unwrap();
                    let mut w = s;
                    let _ = std::io::copy(&mut r, &mut w);
                });
            }
        });
        addr
    }

    #[test]
    fn bytes_come_back_whole_in_order_and_a_round_trip_late() {
        let rtt = Duration::from_millis(80);
        let far = Far::start(echo(), rtt).unwrap();
        let mut c = TcpStream::connect(("127.0.0.1", far.port())).unwrap();
        let sent: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let t = Instant::now();
        let mut w = c.try_clone().unwrap();
        let writing = {
            let sent = sent.clone();
            std::thread::spawn(move || w.write_all(&sent).unwrap())
        };
        let mut first = [0u8; 1];
        c.read_exact(&mut first).unwrap();
        assert!(t.elapsed() >= rtt, "came back after {:?}", t.elapsed());
        let mut rest = vec![0u8; sent.len() - 1];
        c.read_exact(&mut rest).unwrap();
        writing.join().unwrap();
        assert_eq!(first[0], sent[0]);
        assert_eq!(rest, sent[1..]);
    }

    #[test]
    fn a_hung_host_accepts_and_never_speaks() {
        let hung = Hung::start().unwrap();
        let mut c = TcpStream::connect(("127.0.0.1", hung.port())).unwrap();
        c.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut b = [0u8; 1];
        // A signal to the test process may cut a read short: read again.
        let mut read = |c: &mut TcpStream| loop {
            match c.read(&mut b) {
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                r => break r,
            }
        };
        let e = read(&mut c).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
            "{e:?}"
        );
        drop(hung);
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(read(&mut c).unwrap(), 0, "closed once dropped");
    }
}
