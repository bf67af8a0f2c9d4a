//! Issue 10, part 1: crash safety. A client streams workspace changes (parked
//! shell sessions, tabs, renames, pins, closes) while the test SIGKILLs the
//! daemon at random moments. After every kill the store must open without
//! repair, the persisted model must be closed (DESIGN.md rule 2), the daemon
//! must start again, and every change the daemon acknowledged before the kill
//! must be there (and every acknowledged close must stay closed).
//!
//! The changes need no agent process, so a kill costs one daemon restart.
//! Short run: 20 kills. `HANGAR_LONG_TESTS=1`: 200 kills.

use crate::reliability_support;
use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hangar_core::{SessionId, TabId, Workspace};
use reliability_support::{RawClient, RawError, figures, scale};
use serde_json::json;
use support::*;

/// A tiny xorshift, so a failing run can be replayed from its printed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// What the test knows the daemon promised, from acknowledged replies only.
#[derive(Default)]
struct Expected {
    /// Sessions created (and not closed), by id, with their titles.
    sessions: BTreeMap<String, String>,
    /// Sessions whose close was acknowledged: must never come back.
    closed: BTreeSet<String>,
    /// Tabs by id, with their last acknowledged title.
    tabs: BTreeMap<String, String>,
    pinned: BTreeSet<String>,
    acknowledged: usize,
}

/// The one change in flight when the daemon died: it may or may not have
/// been applied, so whatever it touched is not checked this round.
#[derive(Clone, Debug)]
enum InFlight {
    Nothing,
    Session(String),
    Tab(String),
}

/// How the stream of changes goes, for the killer to aim by.
#[derive(Default)]
struct Pace {
    connected: AtomicBool,
    acknowledged: AtomicUsize,
    /// How long the last acknowledged change took, in microseconds.
    last_change_us: AtomicU64,
}

impl Pace {
    fn acknowledged(&self, took: Duration) {
        self.last_change_us
            .store(took.as_micros() as u64, Ordering::Relaxed);
        self.acknowledged.fetch_add(1, Ordering::Relaxed);
    }

    /// Waits (bounded) until the client is connected and `changes` were
    /// acknowledged.
    fn wait_for(&self, changes: usize) {
        let waiting = Instant::now();
        while (!self.connected.load(Ordering::Relaxed)
            || self.acknowledged.load(Ordering::Relaxed) < changes)
            && waiting.elapsed() < DEADLINE
        {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Streams changes until the connection breaks. Returns the change that was
/// sent but not acknowledged, if any.
fn stream_changes(
    socket: &Path,
    main_tab: &str,
    rng: &mut Rng,
    exp: &mut Expected,
    counter: &mut usize,
    stop: &AtomicBool,
    pace: &Pace,
) -> InFlight {
    let client = RawClient::connect(socket);
    pace.connected.store(true, Ordering::Relaxed);
    let Ok(mut c) = client else {
        return InFlight::Nothing;
    };
    while !stop.load(Ordering::Relaxed) {
        let sent = Instant::now();
        *counter += 1;
        let n = *counter;
        let roll = rng.below(100);
        let live: Vec<String> = exp.sessions.keys().cloned().collect();
        let (in_flight, result) = if roll < 45 || live.len() < 3 {
            let title = format!("change-{n}");
            let r = c.request(
                "new",
                json!({"provider": "shell", "parked": true, "tab": main_tab, "title": title}),
            );
            if let Ok(body) = &r {
                let id = body["id"].as_str().expect("new returns an id").to_owned();
                exp.sessions.insert(id, title);
            }
            (InFlight::Nothing, r.map(|_| ()))
        } else if roll < 60 {
            let id = live[rng.below(live.len() as u64) as usize].clone();
            let r = c.request("close", json!({"session": id, "yes": true}));
            if r.is_ok() {
                exp.sessions.remove(&id);
                exp.pinned.remove(&id);
                exp.closed.insert(id.clone());
            }
            (InFlight::Session(id), r.map(|_| ()))
        } else if roll < 72 {
            let id = live[rng.below(live.len() as u64) as usize].clone();
            let pin = !exp.pinned.contains(&id);
            let r = c.request(if pin { "pin" } else { "unpin" }, json!({"session": id}));
            if r.is_ok() {
                if pin {
                    exp.pinned.insert(id.clone());
                } else {
                    exp.pinned.remove(&id);
                }
            }
            (InFlight::Session(id), r.map(|_| ()))
        } else if roll < 86 || exp.tabs.len() < 2 {
            let title = format!("tab-{n}");
            let r = c.request("tab_new", json!({"title": title}));
            if let Ok(body) = &r {
                let id = body["id"]
                    .as_str()
                    .expect("tab_new returns an id")
                    .to_owned();
                exp.tabs.insert(id, title);
            }
            (InFlight::Nothing, r.map(|_| ()))
        } else {
            let tabs: Vec<String> = exp.tabs.keys().cloned().collect();
            let id = tabs[rng.below(tabs.len() as u64) as usize].clone();
            let title = format!("renamed-{n}");
            let r = c.request("tab_rename", json!({"tab": id, "title": title}));
            if r.is_ok() {
                exp.tabs.insert(id.clone(), title);
            }
            (InFlight::Tab(id), r.map(|_| ()))
        };
        match result {
            Ok(()) => {
                exp.acknowledged += 1;
                pace.acknowledged(sent.elapsed());
            }
            Err(RawError::Io(_)) => return in_flight,
            Err(RawError::Daemon(code, msg)) => {
                // Nothing above should be refused; a refusal is a bug.
                panic!("the daemon refused change {n}: {code}: {msg}");
            }
        }
    }
    InFlight::Nothing
}

/// Every acknowledged fact holds in `ws`; returns how many facts were checked.
fn check(ws: &Workspace, exp: &Expected, skip: &InFlight, when: &str) -> usize {
    let skip_session = |id: &str| matches!(skip, InFlight::Session(s) if s == id);
    let skip_tab = |id: &str| matches!(skip, InFlight::Tab(t) if t == id);
    let mut checked = 0;
    for (id, title) in &exp.sessions {
        if skip_session(id) {
            continue;
        }
        let meta = ws
            .sessions
            .get(&SessionId::new(id.clone()))
            .unwrap_or_else(|| panic!("{when}: acknowledged session {id} ({title}) is missing"));
        assert_eq!(
            &meta.title, title,
            "{when}: session {id} has the wrong title"
        );
        assert!(
            ws.parked.contains_key(&SessionId::new(id.clone())),
            "{when}: acknowledged parked session {id} lost its parked record"
        );
        let pinned = ws.pins.iter().any(|p| p.as_str() == id);
        assert_eq!(
            pinned,
            exp.pinned.contains(id),
            "{when}: the pin of session {id} is not what was acknowledged"
        );
        checked += 2;
    }
    for id in &exp.closed {
        if skip_session(id) {
            continue;
        }
        assert!(
            !ws.sessions.contains_key(&SessionId::new(id.clone())),
            "{when}: session {id} came back after its close was acknowledged"
        );
        checked += 1;
    }
    for (id, title) in &exp.tabs {
        if skip_tab(id) {
            continue;
        }
        let tab = ws
            .tabs
            .iter()
            .find(|t| t.id == TabId::new(id.clone()))
            .unwrap_or_else(|| panic!("{when}: acknowledged tab {id} ({title}) is missing"));
        assert_eq!(&tab.title, title, "{when}: tab {id} has the wrong title");
        checked += 1;
    }
    checked
}

#[test]
fn every_acknowledged_change_survives_sigkill_of_the_daemon_at_random_points() {
    let kills = scale(20, 200);
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1;
    eprintln!("crash test seed {seed}");
    let mut rng = Rng(seed);

    let h = Hangar::new();
    h.start_daemon();
    let work = h.work.to_str().expect("utf-8 path");
    let main_tab = h.json(&["tab", "new", "main", "--cwd", work])["id"]
        .as_str()
        .expect("tab id")
        .to_owned();
    let socket = h.home.join("run").join("hangar.sock");
    let store = h.home.join("state.db");

    let mut exp = Expected::default();
    exp.tabs.insert(main_tab.clone(), "main".into());
    let mut counter = 0usize;
    let mut facts_checked = 0usize;
    let mut in_flight_lost = 0usize;
    let mut acknowledged_per_kill = Vec::new();
    let started = Instant::now();

    for kill in 0..kills {
        let daemon = h.daemon_pid();
        let stop = Arc::new(AtomicBool::new(false));
        let pace = Arc::new(Pace::default());
        // The killer, from another thread so the kill lands anywhere inside
        // a request: after 0 to 3 acknowledged changes, a random part of one
        // change's time (up to one and a half), or for a kill before any
        // acknowledgement 5-125 ms after the connection. Aimed by the
        // daemon's own pace, not by fixed delays: on a loaded machine one
        // change outlasted every fixed delay and too few changes were
        // acknowledged to mean anything (RELIABILITY.md).
        let after_changes = rng.below(4) as usize;
        let fraction = rng.below(1500);
        let first_delay = Duration::from_millis(5 + rng.below(120));
        let killer_sees = pace.clone();
        let killer = std::thread::spawn(move || {
            killer_sees.wait_for(after_changes);
            let delay = if after_changes == 0 {
                first_delay
            } else {
                let change = killer_sees
                    .last_change_us
                    .load(Ordering::Relaxed)
                    .max(5_000);
                Duration::from_micros(change * fraction / 1000)
            };
            std::thread::sleep(delay);
            // SAFETY: kill has no memory effects; `daemon` is our child.
            unsafe { libc::kill(daemon, libc::SIGKILL) };
        });
        let before = exp.acknowledged;
        let skip = stream_changes(
            &socket,
            &main_tab,
            &mut rng,
            &mut exp,
            &mut counter,
            &stop,
            &pace,
        );
        stop.store(true, Ordering::Relaxed);
        killer.join().expect("killer thread");
        wait_until("the killed daemon is gone", DEADLINE, || {
            !is_running(daemon)
        });
        if !matches!(skip, InFlight::Nothing) {
            in_flight_lost += 1;
        }
        acknowledged_per_kill.push(exp.acknowledged - before);

        // The store opens as it is, without moving anything aside or repairing.
        let when = format!("after kill {}", kill + 1);
        {
            let opened = hangar_store::Store::open(&store)
                .unwrap_or_else(|e| panic!("{when}: the store does not open: {e}"));
            assert!(
                opened.recovered.is_none(),
                "{when}: the store was reported damaged: {:?}",
                opened.recovered
            );
            assert!(
                opened.pruned.is_empty(),
                "{when}: the persisted model was not closed (rule 2); pruning dropped {:?}",
                opened.pruned
            );
            assert!(
                hangar_core::is_closed(&opened.workspace),
                "{when}: not closed"
            );
            facts_checked += check(&opened.workspace, &exp, &skip, &when);
        }

        // The daemon starts again and serves the same model.
        h.start_daemon();
        let ws: Workspace = serde_json::from_value(
            RawClient::connect(&socket)
                .ok()
                .and_then(|mut c| c.request("workspace", json!({})).ok())
                .expect("the restarted daemon answers `workspace`"),
        )
        .expect("the workspace decodes");
        check(
            &ws,
            &exp,
            &skip,
            &format!("{when}, in the restarted daemon"),
        );
        // The in-flight change is settled now: learn what the daemon kept.
        match skip {
            InFlight::Session(id) => {
                let sid = SessionId::new(id.clone());
                if ws.sessions.contains_key(&sid) {
                    exp.closed.remove(&id);
                    let title = ws.sessions[&sid].title.clone();
                    exp.sessions.insert(id.clone(), title);
                    if ws.pins.contains(&sid) {
                        exp.pinned.insert(id);
                    } else {
                        exp.pinned.remove(&id);
                    }
                } else {
                    exp.sessions.remove(&id);
                    exp.pinned.remove(&id);
                    exp.closed.insert(id);
                }
            }
            InFlight::Tab(id) => {
                if let Some(t) = ws.tabs.iter().find(|t| t.id.as_str() == id) {
                    exp.tabs.insert(id, t.title.clone());
                }
            }
            InFlight::Nothing => {}
        }
        let status = h.status();
        let notices = status["notices"].to_string();
        assert!(
            !notices.contains("damaged") && !notices.contains("repaired"),
            "{when}: the restarted daemon reports {notices}"
        );
    }
    figures(
        "crash",
        format!(
            "kills={kills} acknowledged_changes={} facts_checked={facts_checked} \
             unsettled_in_flight={in_flight_lost} kills_before_any_ack={} \
             sessions_at_end={} tabs_at_end={} elapsed_s={}",
            exp.acknowledged,
            acknowledged_per_kill.iter().filter(|&&n| n == 0).count(),
            exp.sessions.len(),
            exp.tabs.len(),
            started.elapsed().as_secs()
        ),
    );
    assert!(
        exp.acknowledged > kills,
        "too few changes were acknowledged to mean anything"
    );
}
