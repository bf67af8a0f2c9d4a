//! Issue 18, fault: the wall clock jumping a day forward and a day back
//! while the daemon runs. libfaketime (Debian's `faketime` package) is
//! preloaded into the daemon and everything it starts, reading its offset
//! from a file this test rewrites; CLOCK_BOOTTIME is left real
//! (`FAKETIME_DONT_FAKE_MONOTONIC=1`), as a real clock step leaves it.
//!
//! What must hold: no session is closed or evicted as "idle for a day"
//! because of a jump; no age goes negative and nothing panics; the journal
//! is ordered by a strictly increasing `seq`, and its times never run
//! backwards within one daemon's life. The test also checks that the daemon
//! really reads the faked clock (its journal times move by a day when it
//! starts under the jumped clock). Without libfaketime it prints SKIPPED.

use crate::faults_support;
use crate::reliability_support;
use crate::support;

use std::path::{Path, PathBuf};

use support::*;

const DAY_MS: i64 = 86_400_000;

fn libfaketime() -> Option<PathBuf> {
    [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/faketime/libfaketime.so.1",
        "/usr/local/lib/faketime/libfaketime.so.1",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

fn real_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as i64
}

/// Sets the faked clock's offset and waits until a fresh process under the
/// same preload sees it.
fn jump(h: &Hangar, clock: &Path, offset: &str, days: i64) {
    std::fs::write(clock, format!("{offset}\n")).expect("write the faketime file");
    wait_until(&format!("the faked clock reads {offset}"), DEADLINE, || {
        let mut date = std::process::Command::new("date");
        date.arg("+%s").env_clear();
        for (k, v) in h_env(h) {
            date.env(k, v);
        }
        let Ok(o) = date.output() else { return false };
        let secs: i64 = String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse()
            .unwrap_or(0);
        (secs * 1000 - real_now_ms() - days * DAY_MS).abs() < 600_000
    });
}

/// The preload variables of the fixture (what `date` needs to see the same
/// clock as the daemon).
fn h_env(h: &Hangar) -> Vec<(String, String)> {
    h.command(&[])
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v?.to_str()?.to_owned())))
        .filter(|(k, _)| k.starts_with("FAKETIME") || k == "LD_PRELOAD")
        .collect()
}

/// close-idle and evict with `older_than`: neither may take anything.
fn nothing_is_idle(h: &Hangar, older_than: &str, when: &str) {
    let closed = h.json(&["close-idle", "--older-than", older_than, "--yes"]);
    assert_eq!(
        closed["closed"].as_array().map(Vec::len),
        Some(0),
        "{when}: close-idle --older-than {older_than} closed sessions used seconds ago: {closed}"
    );
    let evicted = h.json(&["evict", "--parked-older-than", older_than]);
    assert_eq!(
        evicted["evicted"].as_array().map(Vec::len),
        Some(0),
        "{when}: evict --parked-older-than {older_than} took fresh records: {evicted}"
    );
}

#[test]
fn the_wall_clock_jumping_a_day_either_way_closes_nothing_and_keeps_the_journal_ordered() {
    let Some(lib) = libfaketime() else {
        faults_support::skip(
            "clock jumps",
            "libfaketime is not installed (apt-get install faketime)",
        );
        return;
    };
    let mut h = Hangar::new();
    let clock = h.root.join("faketime-offset");
    std::fs::write(&clock, "+0\n").expect("write the faketime file");
    h.set_env("LD_PRELOAD", &lib);
    h.set_env("FAKETIME_TIMESTAMP_FILE", &clock);
    h.set_env("FAKETIME_NO_CACHE", "1");
    h.set_env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    // The preload works here at all.
    jump(&h, &clock, "+1d", 1);
    jump(&h, &clock, "+0", 0);

    let daemon = h.start_daemon();
    let maps = std::fs::read_to_string(format!("/proc/{daemon}/maps")).unwrap_or_default();
    assert!(
        maps.contains("libfaketime"),
        "libfaketime is loaded into the daemon"
    );
    let pane = h.new_pane();
    h.wait_state(&pane, "live");
    let parked: Vec<String> = (0..2)
        .map(|i| {
            h.new_agent(&[
                "--provider",
                "shell",
                "--parked",
                "--title",
                &format!("p{i}"),
            ])
        })
        .collect();

    jump(&h, &clock, "+1d", 1);
    nothing_is_idle(&h, "12h", "a day forward");
    h.ok(&["park", &pane]);
    let rows = h.ls();
    assert_eq!(rows.len(), 3, "every session is kept: {rows:?}");
    h.ok(&["ls"]);
    h.ok(&["status"]);

    jump(&h, &clock, "-1d", -1);
    nothing_is_idle(&h, "1h", "a day back");
    h.ok(&["unpark", &pane]);
    h.wait_state(&pane, "live");
    h.new_agent(&[
        "--provider",
        "shell",
        "--parked",
        "--title",
        "made-yesterday",
    ]);
    nothing_is_idle(&h, "1h", "a day back, after changes");

    jump(&h, &clock, "+0", 0);
    nothing_is_idle(&h, "1h", "back to now");
    assert_eq!(h.daemon_pid(), daemon, "the daemon never restarted");
    for id in &parked {
        h.session(id);
    }
    for row in h.ls() {
        if let Some(since) = row["activity_since"].as_i64() {
            assert!(since > 0, "an activity time is sane: {row}");
        }
    }
    let jr = h.ok(&["journal"]);
    assert!(!jr.is_empty(), "the journal prints");

    let entries = h.journal();
    assert!(entries.len() > 5, "the journal has the run's events");
    let seqs: Vec<u64> = entries
        .iter()
        .map(|e| e["seq"].as_u64().unwrap_or(0))
        .collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "the journal's seq is strictly increasing: {seqs:?}"
    );
    let times: Vec<i64> = entries
        .iter()
        .map(|e| e["time_ms"].as_i64().unwrap_or(0))
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "within one daemon's life the journal's times never run backwards: {times:?}"
    );
    let spread = times.last().unwrap() - times.first().unwrap();
    assert!(
        spread < DAY_MS / 2,
        "and never jump by a day: spread {spread} ms"
    );

    // The daemon really reads the faked wall clock: started under +1d, its
    // journal times are a day ahead. Nothing saved is lost across it.
    h.shutdown();
    jump(&h, &clock, "+1d", 1);
    h.start_daemon();
    h.wait_restore_complete();
    let later = h.journal();
    let first_new = &later[entries.len()..];
    assert!(!first_new.is_empty(), "the new daemon journaled its start");
    let shift = first_new[0]["time_ms"].as_i64().unwrap() - real_now_ms();
    assert!(
        (shift - DAY_MS).abs() < 3_600_000,
        "a daemon started under the jumped clock sees it: shift {shift} ms"
    );
    assert!(
        first_new[0]["seq"].as_u64().unwrap() > *seqs.last().unwrap(),
        "the seq continues across the restart"
    );
    assert_eq!(h.ls().len(), 4, "every session is still there");
    reliability_support::figures(
        "clock jumps",
        format!(
            "jumps=+1d,-1d,+0 closed_or_evicted=0 journal_entries={} seq_strictly_increasing=true \
             time_spread_ms={spread} restart_shift_ms={shift}",
            entries.len()
        ),
    );
}
