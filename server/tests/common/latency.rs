//! Hosts that are far away: a test bed of N hosts, each its own sshd and
//! its own private tmux server, each reached through a relay on 127.0.0.1
//! that holds every chunk, each way, for half a round trip
//! ([`panescan::testing::far`]), so a search over ssh pays real round
//! trips while the machine does the work of N small hosts.
//!
//! * The client config the bed writes points each `Host` alias at its
//!   relay's port; nothing of the machine's ssh configuration or any
//!   address but 127.0.0.1 is touched.
//! * A hung host is a listener that accepts and never speaks
//!   ([`panescan::testing::far::Hung`]); a host with too old a tmux is an
//!   sshd whose sessions find a fake `tmux` (3.1c) first on their `PATH`.
//! * Cleanup is ownership: the relays and the listener stop on drop (and
//!   are threads of the test: they end with it), the sshds are killed on
//!   drop, the fixtures kill their tmux servers on drop, also when a test
//!   fails.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use panescan::testing::far::{Far, Hung};
use panescan::testing::fixture::{Fixture, FixtureShape};

use super::sshd::{self, Alias, SshWorld};
use super::{Serve, TempDir};

/// Fails the calling test unless sshd is here.
pub fn require() {
    sshd::require();
}

/// What a host of the bed is.
pub enum Kind {
    /// sshd and a filled tmux server.
    Filled(Box<Fixture>),
    /// sshd whose `tmux -V` says 3.1c (a fake tmux first on its `PATH`).
    OldTmux,
    /// A listener that accepts and never speaks.
    Hung,
}

/// One host: its `Host` alias and what it is.
pub struct BedHost {
    pub name: String,
    pub kind: Kind,
    /// Its sshd in the world (none for a hung host).
    pub sshd: Option<usize>,
    tmux_tmpdir: Option<TempDir>,
    /// The relay its alias points at (none for a hung host).
    far: Option<Far>,
}

/// N hosts behind a delayed loopback.
pub struct Bed {
    // Dropped in this order: hosts (their tmux servers, relays), the
    // listeners, the sshds.
    pub hosts: Vec<BedHost>,
    hung: Vec<Hung>,
    pub world: SshWorld,
    pub rtt: Duration,
    /// The key exchange every host's ssh uses (`None`: ssh's default;
    /// OpenSSH 9.x's sntrup761x25519 costs ~80 ms of CPU a side here, and
    /// the bed's "far" hosts spend theirs on this machine too).
    pub kex: Option<&'static str>,
}

impl Bed {
    /// An empty bed whose round trips take `rtt`.
    pub fn new(label: &str, rtt: Duration) -> Bed {
        Bed {
            hosts: Vec::new(),
            hung: Vec::new(),
            world: SshWorld::new(label),
            rtt,
            kex: None,
        }
    }

    /// Adds host `name`: an sshd and a tmux server of `shape` filled with
    /// corpus text, its default server (`TMUX_TMPDIR` of its alias).
    pub fn add_filled(&mut self, name: &str, shape: &FixtureShape) {
        let fixture = Fixture::build(
            &format!("bed-{name}"),
            shape.clone(),
            &panescan::testing::corpus::sources(),
            Duration::from_secs(120),
            &mut |_, _| {},
        )
        .expect("a filled tmux server");
        let dir = TempDir::new(&format!("bed-{name}"));
        let uid_dir = dir.0.join(format!("tmux-{}", current_uid()));
        std::fs::create_dir_all(&uid_dir).unwrap();
        std::fs::set_permissions(
            &uid_dir,
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            fixture.server.socket_path().unwrap(),
            uid_dir.join("default"),
        )
        .unwrap();
        let n = self.world.start_sshd();
        let far = self.far(n);
        self.hosts.push(BedHost {
            name: name.to_owned(),
            kind: Kind::Filled(Box::new(fixture)),
            sshd: Some(n),
            tmux_tmpdir: Some(dir),
            far: Some(far),
        });
    }

    /// Adds host `name` whose tmux is too old for panescan.
    pub fn add_old_tmux(&mut self, name: &str) {
        let dir = TempDir::new(&format!("bed-{name}"));
        let fake = dir.0.join("tmux");
        std::fs::write(
            &fake,
            "#!/bin/sh\n[ \"$1\" = -V ] && echo 'tmux 3.1c' && exit 0\necho 'unknown' >&2; exit 1\n",
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let path = format!("PATH={}:/usr/local/bin:/usr/bin:/bin", dir.0.display());
        let n = self.world.start_sshd_env(&[&path]);
        let far = self.far(n);
        self.hosts.push(BedHost {
            name: name.to_owned(),
            kind: Kind::OldTmux,
            sshd: Some(n),
            tmux_tmpdir: Some(dir),
            far: Some(far),
        });
    }

    /// Adds host `name`: a listener that accepts and never speaks.
    pub fn add_hung(&mut self, name: &str) {
        self.hung
            .push(Hung::start().expect("a listener on 127.0.0.1"));
        self.hosts.push(BedHost {
            name: name.to_owned(),
            kind: Kind::Hung,
            sshd: None,
            tmux_tmpdir: None,
            far: None,
        });
    }

    /// A relay to sshd `n`, a round trip away.
    fn far(&mut self, n: usize) -> Far {
        let port = self.world.sshd(n).port;
        Far::start(SocketAddr::from(([127, 0, 0, 1], port)), self.rtt)
            .expect("a relay on 127.0.0.1")
    }

    /// The host named `name`.
    pub fn host(&self, name: &str) -> &BedHost {
        self.hosts.iter().find(|h| h.name == name).unwrap()
    }

    /// When each connection to host `name` (through its relay) was
    /// accepted, in order: how many ssh opened, and when.
    pub fn connections(&self, name: &str) -> Vec<std::time::Instant> {
        self.host(name)
            .far
            .as_ref()
            .map(Far::accepted)
            .unwrap_or_default()
    }

    /// The filled server of host `name`.
    pub fn fixture(&self, name: &str) -> &Fixture {
        match &self.host(name).kind {
            Kind::Filled(f) => f,
            _ => panic!("{name} has no tmux server"),
        }
    }

    /// The ssh client config naming every host; its path.
    pub fn client_config(&self) -> PathBuf {
        let mut aliases = Vec::new();
        let mut hung_ports = Vec::new();
        let mut hung = self.hung.iter();
        for h in &self.hosts {
            match h.sshd {
                Some(n) => aliases.push(Alias {
                    name: &h.name,
                    sshd: n,
                    tmux_tmpdir: match h.kind {
                        Kind::Filled(_) => h.tmux_tmpdir.as_ref().map(|d| d.0.as_path()),
                        _ => None,
                    },
                    identity: None,
                }),
                None => hung_ports.push((&h.name, hung.next().unwrap().port())),
            }
        }
        let path = self.world.client_config(&aliases);
        let mut text = std::fs::read_to_string(&path).unwrap();
        // Each alias reaches its sshd through its relay: the host key is
        // still the sshd's (known_hosts names it by the sshd's port).
        for h in &self.hosts {
            if let (Some(far), Some(n)) = (&h.far, h.sshd) {
                let port = self.world.sshd_port(n);
                text = text.replace(
                    &format!("Host {}\n  HostName 127.0.0.1\n  Port {port}\n", h.name),
                    &format!(
                        "Host {}\n  HostName 127.0.0.1\n  Port {}\n  HostKeyAlias [127.0.0.1]:{port}\n",
                        h.name,
                        far.port()
                    ),
                );
            }
        }
        for (name, port) in hung_ports {
            text.push_str(&format!(
                "Host {name}\n  HostName 127.0.0.1\n  Port {port}\n  StrictHostKeyChecking yes\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
            ));
        }
        if let Some(kex) = self.kex {
            text.push_str(&format!("Host *\n  KexAlgorithms {kex}\n"));
        }
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `panescan serve` with every host of the bed
    /// (`--ssh` each) and `extra` arguments, initialized.
    pub fn serve(&self, extra: &[&str]) -> Serve {
        let names: Vec<&str> = self.hosts.iter().map(|h| h.name.as_str()).collect();
        self.serve_hosts(&names, extra)
    }

    /// [`Bed::serve`] with only `hosts` configured.
    pub fn serve_hosts(&self, hosts: &[&str], extra: &[&str]) -> Serve {
        let config = self.client_config();
        let mut args: Vec<String> = vec!["serve".into(), "--ssh-config".into()];
        args.push(config.display().to_string());
        for h in hosts {
            args.push("--ssh".into());
            args.push((*h).to_owned());
        }
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // `PANESCAN_BED_SPANS=FILE`: the serve's timing spans appended
        // to FILE, to see where a bench's time goes.
        let mut s = match std::env::var_os("PANESCAN_BED_SPANS") {
            Some(log) => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(log)
                    .unwrap();
                Serve::spawn_logged(&args, &[("PANESCAN_SPANS", "1")], &[], file.into())
            }
            None => Serve::spawn_with(&args, &[]),
        };
        s.initialize();
        s
    }

    /// Kills host `name`'s sshd and every session it forked.
    pub fn kill(&mut self, name: &str) {
        let n = self.host(name).sshd.unwrap();
        self.world.sshd(n).kill();
    }

    /// Freezes host `name`'s sshd and sessions (SIGSTOP).
    pub fn freeze(&mut self, name: &str) {
        let n = self.host(name).sshd.unwrap();
        self.world.sshd(n).freeze();
    }

    /// The tmux server pids and sshd pids of the filled hosts (the
    /// "remote" side, for CPU counts).
    pub fn remote_pids(&mut self) -> Vec<u32> {
        let mut pids: Vec<u32> = Vec::new();
        let mut sshds = Vec::new();
        for h in &self.hosts {
            if let Kind::Filled(f) = &h.kind {
                pids.extend(f.server.pid().ok());
            }
            sshds.extend(h.sshd);
        }
        for n in sshds {
            pids.extend(self.world.sshd(n).pid());
        }
        pids
    }
}

/// Where a host's tmux sockets are (for a test that looks at them).
pub fn tmux_dir(host: &BedHost) -> Option<&Path> {
    host.tmux_tmpdir.as_ref().map(|d| d.0.as_path())
}

fn current_uid() -> u32 {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

impl Bed {
    /// Starts host `name`'s sshd again (on its port) after [`Bed::kill`].
    pub fn restart(&mut self, name: &str) {
        let n = self.host(name).sshd.unwrap();
        self.world.sshd(n).start();
    }
}
