//! The churning server of the soak: slots of panes that print lines naming
//! themselves, and a thread that kills and creates again, resizes and
//! clears the churned ones.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::common::{eventually, TempDir};
use panescan::testing::private_server::PrivateServer;

/// Panes per session.
const PER_SESSION: usize = 50;
/// History lines each pane keeps; every pane fills it before it ticks, so
/// tmux holds about as much at the start as at the end.
pub const HISTORY: usize = 500;
/// The time between two churn actions.
const CHURN_PAUSE: Duration = Duration::from_millis(100);

/// The script every pane runs: `SLOT GEN RUN`. It fills the history,
/// prints its banner, then a tick a second (and the banner every 100, so
/// history trimming never takes the last one). `read -t` on a pipe nobody
/// writes waits without starting a process.
const PRINTER: &str = r#"slot=$1 gen=$2 run=$3
seq -f "fill $slot $gen %g" 600
echo "banner-$run-$slot-$gen"
exec 3<> <(:)
i=0
while :; do
  i=$((i+1))
  echo "tick $slot $gen $i"
  [ $((i % 100)) = 0 ] && echo "banner-$run-$slot-$gen"
  read -t 1 -u 3
done
"#;

/// One slot: the pane that holds it now and how often it was churned.
#[derive(Debug, Clone, Default)]
pub struct Slot {
    pub pane: String,
    pub gen: u32,
    /// Bumped by every churn action (kill, resize, clear).
    pub epoch: u64,
}

/// Slot state and every pane id a slot ever had (tmux never reuses one).
#[derive(Debug, Default)]
pub struct State {
    pub slots: Vec<Slot>,
    pub pane_slot: HashMap<String, usize>,
}

/// What the churn did.
#[derive(Debug, Default, Clone)]
pub struct Faults {
    pub recreated: u32,
    pub resized: u32,
    pub cleared: u32,
}

pub struct World {
    pub tmux: PrivateServer,
    /// A unique word in every banner, so no other text can match.
    pub run: String,
    dir: TempDir,
    state: Mutex<State>,
}

/// Stable slots are never churned: a quarter, spread over the sessions.
pub fn is_stable(slot: usize) -> bool {
    slot % 4 == 0
}

pub fn session_of(slot: usize) -> String {
    format!("s{}", slot / PER_SESSION)
}

impl World {
    /// A server with `panes` printing panes, each once its history is full
    /// and its banner shows, and a plain shell in `main` for commands.
    pub fn start(label: &str, panes: usize) -> World {
        let tmux = PrivateServer::start(label, 80, 24).expect("private tmux server");
        let dir = TempDir::new(label);
        std::fs::write(dir.0.join("printer.sh"), PRINTER).unwrap();
        let run = format!("r{}x{}", std::process::id(), panes);
        let world = World {
            tmux,
            run,
            dir,
            state: Mutex::new(State::default()),
        };
        world
            .tmux
            .run_ok(["set-option", "-g", "history-limit", &HISTORY.to_string()])
            .unwrap();
        let mut script = String::new();
        for slot in 0..panes {
            let cmd = world.printer(slot, 0);
            let session = session_of(slot);
            if slot % PER_SESSION == 0 {
                script += &format!("new-session -d -s {session} -x 80 -y 24 \"{cmd}\"\n");
            } else {
                script += &format!("new-window -d -t {session}: \"{cmd}\"\n");
            }
        }
        world.tmux.source(&script).unwrap();
        world.learn_panes(panes);
        world.wait_banners();
        crate::common::plain_shell(&world.tmux, "main:0.0");
        world
    }

    fn printer(&self, slot: usize, gen: u32) -> String {
        format!(
            "bash {}/printer.sh {slot} {gen} {}",
            self.dir.0.display(),
            self.run
        )
    }

    /// Pane ids by slot, read from each pane's start command.
    fn learn_panes(&self, panes: usize) {
        let out = self
            .tmux
            .run_ok(["list-panes", "-a", "-F", "#{pane_id} #{pane_start_command}"])
            .unwrap();
        let mut st = self.lock();
        st.slots = vec![Slot::default(); panes];
        for line in out.lines() {
            let pane = line.split(' ').next().unwrap_or_default().to_owned();
            // The start command, however tmux quotes it: `... printer.sh SLOT GEN RUN`.
            let Some(slot) = line
                .split_once("printer.sh ")
                .and_then(|(_, rest)| rest.split(' ').next())
                .and_then(|w| w.parse::<usize>().ok())
            else {
                continue;
            };
            st.slots[slot].pane = pane.clone();
            st.pane_slot.insert(pane, slot);
        }
        let missing: Vec<usize> = (0..panes)
            .filter(|s| st.slots[*s].pane.is_empty())
            .collect();
        assert!(
            missing.is_empty(),
            "slots without a pane: {missing:?}\n{out}"
        );
    }

    fn wait_banners(&self) {
        let slots = self.snapshot().slots;
        for (slot, s) in slots.iter().enumerate() {
            let banner = self.banner(slot, 0);
            let shown = eventually(Duration::from_secs(60), || {
                self.tmux
                    .run_ok(["capture-pane", "-p", "-t", &s.pane])
                    .is_ok_and(|t| t.contains(&banner))
            });
            assert!(shown, "{banner} never showed in {}", s.pane);
        }
    }

    pub fn banner(&self, slot: usize, gen: u32) -> String {
        format!("banner-{}-{slot}-{gen}", self.run)
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// A copy of the state now (churn actions run under the lock, so a
    /// pane tmux showed before this call is in it).
    pub fn snapshot(&self) -> State {
        let st = self.lock();
        State {
            slots: st.slots.clone(),
            pane_slot: st.pane_slot.clone(),
        }
    }

    /// Churns until `stop`: one action on a churned slot every
    /// [`CHURN_PAUSE`], in turn resize, kill and create again, clear.
    ///
    /// Not `respawn-pane`: tmux up to 3.6a segfaults when a pane is
    /// respawned while a control client has not yet been written all of
    /// its output (tmux issue #5499), which panescan's client cannot rule
    /// out for a pane it watches (HARDENING.md, "Seen, not fixed").
    pub fn churn(&self, stop: &AtomicBool) -> Faults {
        let mut faults = Faults::default();
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        let mut k = 0u32;
        let slots = self.lock().slots.len();
        while !stop.load(Ordering::Relaxed) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let slot = (rng % slots as u64) as usize;
            if is_stable(slot) {
                continue;
            }
            self.act(slot, k % 3, rng, &mut faults);
            k += 1;
            std::thread::sleep(CHURN_PAUSE);
        }
        faults
    }

    fn act(&self, slot: usize, action: u32, rng: u64, faults: &mut Faults) {
        let mut st = self.lock();
        st.slots[slot].epoch += 1;
        let pane = st.slots[slot].pane.clone();
        let gen = st.slots[slot].gen + 1;
        match action {
            0 => {
                let w = (40 + rng % 120).to_string();
                let h = (8 + (rng >> 8) % 40).to_string();
                let _ = self
                    .tmux
                    .run_ok(["resize-window", "-t", &pane, "-x", &w, "-y", &h]);
                faults.resized += 1;
            }
            1 => {
                let _ = self.tmux.run_ok(["kill-pane", "-t", &pane]);
                let target = format!("{}:", session_of(slot));
                let cmd = self.printer(slot, gen);
                let new = self
                    .tmux
                    .run_ok([
                        "new-window",
                        "-d",
                        "-P",
                        "-F",
                        "#{pane_id}",
                        "-t",
                        &target,
                        &cmd,
                    ])
                    .unwrap();
                let new = new.trim().to_owned();
                st.pane_slot.insert(new.clone(), slot);
                st.slots[slot].pane = new;
                st.slots[slot].gen = gen;
                faults.recreated += 1;
            }
            _ => {
                let _ = self.tmux.run_ok(["clear-history", "-t", &pane]);
                faults.cleared += 1;
            }
        }
    }

    /// Once panescan has exited: no client attached, no paste buffer.
    pub fn assert_nothing_left(&self) {
        let clients = || {
            self.tmux
                .run_ok(["list-clients", "-F", "#{client_pid} #{client_name}"])
                .unwrap()
        };
        assert!(
            eventually(Duration::from_secs(10), || clients().trim().is_empty()),
            "clients left: {}",
            clients()
        );
        let buffers = self
            .tmux
            .run_ok(["list-buffers", "-F", "#{buffer_name}"])
            .unwrap();
        assert!(buffers.trim().is_empty(), "buffers left: {buffers}");
    }
}
