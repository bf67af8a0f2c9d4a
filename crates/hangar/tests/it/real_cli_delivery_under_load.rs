//! hangar's word under load (issue 44 part 1): with every core of the
//! machine busy, each `hangar send` to the real claude that exits 0 reaches
//! the model exactly once within 60 s: six sends to a live session, four to
//! a hibernated one that the send itself wakes. No Enter is pressed here:
//! what the product pressed is all there is (DESIGN.md rule 15).
//!
//! Runs against `hangar-fake-model-api`; skipped with one line when the CLIs
//! cannot be installed (a failure under `HANGAR_TESTS_REQUIRED=1`).

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::real_cli_support;
use crate::reliability_support;

use real_cli_support::RealCli;
use serde_json::Value;

/// The contract's bound for a delivered prompt to reach the model.
const REACHES_WITHIN: Duration = Duration::from_secs(60);

/// One busy loop per core for as long as it lives.
struct BusyCores(Vec<Child>);

impl BusyCores {
    fn start() -> BusyCores {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        BusyCores(
            (0..cores)
                .map(|_| {
                    Command::new("bash")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .expect("start a busy loop")
                })
                .collect(),
        )
    }
}

impl Drop for BusyCores {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The main-turn requests that carry `text` as their prompt (Claude's side
/// requests, such as a title, offer no tools).
fn turns_of(rc: &RealCli, text: &str) -> Vec<Value> {
    rc.api
        .requests()
        .into_iter()
        .filter(|r| r["turn"] == text)
        .filter(|r| r["body"]["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect()
}

/// Sends `text`, which must be delivered (exit 0), and returns how long it
/// took to reach the model.
fn send_and_reach(rc: &RealCli, id: &str, text: &str) -> Duration {
    let begun = Instant::now();
    let out = rc.hangar.run(&["--json", "send", id, text]);
    assert!(
        out.status.success(),
        "`hangar send {id} {text:?}` failed under load: {}\nscreen:\n{}",
        String::from_utf8_lossy(&out.stderr),
        rc.hangar.screen(id)
    );
    while turns_of(rc, text).is_empty() {
        assert!(
            begun.elapsed() < REACHES_WITHIN,
            "`hangar send` answered {} but {text:?} never reached the model within \
             {REACHES_WITHIN:?}\nscreen:\n{}",
            String::from_utf8_lossy(&out.stdout),
            rc.hangar.screen(id)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = begun.elapsed();
    rc.wait_screen(id, &format!("ANSWER({text})"));
    took
}

#[test]
fn every_delivered_send_reaches_the_real_claude_once_with_every_core_busy() {
    let Some(rc) = RealCli::start() else { return };
    rc.hangar.start_daemon();
    let id = rc
        .hangar
        .new_agent(&["--provider", "claude", "--title", "under load"]);
    rc.wait_ready(&id);
    let busy = BusyCores::start();
    let mut sent = Vec::new();
    let mut live = Vec::new();
    for n in 0..6 {
        let text = format!("live send {n}");
        live.push(send_and_reach(&rc, &id, &text));
        sent.push(text);
    }
    let mut woken = Vec::new();
    for n in 0..4 {
        rc.hangar.ok(&["hibernate", &id]);
        rc.wait_state(&id, "hibernated");
        let text = format!("send that wakes {n}");
        woken.push(send_and_reach(&rc, &id, &text));
        sent.push(text);
    }
    drop(busy);
    // Every prompt reached the model once: none was typed or entered twice.
    for text in &sent {
        let turns = turns_of(&rc, text);
        assert_eq!(
            turns.len(),
            1,
            "{text:?} reached the model {} times",
            turns.len()
        );
    }
    let secs = |d: &[Duration]| {
        d.iter()
            .map(|d| format!("{:.1}", d.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    reliability_support::figures(
        "delivery under load",
        format!(
            "10 of 10 sends delivered once; seconds to reach the model: live [{}], woken by the send [{}]",
            secs(&live),
            secs(&woken)
        ),
    );
}
