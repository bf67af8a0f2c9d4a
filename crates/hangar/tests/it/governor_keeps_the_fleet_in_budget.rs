//! The resource governor, end to end: a live budget, a throttled wake queue
//! with a circuit breaker, eviction of stale parked agents, and a journal
//! that never holds prompt text. Processes are counted from /proc.

use crate::support;

use std::collections::BTreeSet;
use std::fs;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::*;

fn with_config(h: &Hangar, config: &str) {
    fs::create_dir_all(&h.home).unwrap();
    fs::write(h.home.join("config.toml"), config).unwrap();
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn parked(h: &Hangar, title: &str) -> String {
    h.new_agent(&["--provider", "claude", "--parked", "--title", title])
}

#[test]
fn over_a_budget_of_five_the_least_recently_used_eligible_agent_is_hibernated() {
    let h = Hangar::new();
    with_config(&h, "[governor]\nmax_live = 5\ncheck_interval_ms = 600000\n");
    let v1 = h.new_pane();
    let v2 = h.split(&v1, "vertical");
    let pinned = parked(&h, "pinned");
    let busy = parked(&h, "busy");
    let oldest_eligible = parked(&h, "oldest eligible");
    let sixth = parked(&h, "sixth");

    h.ok(&["wake", &pinned]);
    h.ok(&["pin", &pinned]);
    h.ok(&["wake", &busy]);
    // A long turn: the transcript's last entry is the user's until it ends.
    h.ok(&["send", &busy, "slow 600000 think hard"]);
    h.wait_screen(&busy, "working");
    h.ok(&["wake", &oldest_eligible]);
    assert_eq!(h.session_agent_pids().len(), 5, "five live: at the budget");
    // The sixth wake: the panes, the pinned and the busy agent are all older
    // than `oldest_eligible`, but none of them may go.
    h.ok(&["wake", &sixth]);

    h.wait_until("the oldest eligible agent is hibernated", DEADLINE, || {
        h.state_of(&oldest_eligible) == "hibernated"
    });
    for id in [&v1, &v2, &pinned, &busy, &sixth] {
        assert_eq!(h.state_of(id), "live", "{id} must stay live");
    }
    // `ls` says hibernated as the stop begins; the agent is given its
    // grace to save and exit, so its process ends a moment later.
    h.wait_until("five agents run", DEADLINE, || {
        h.session_agent_pids().len() == 5
    });
    let status = h.status();
    assert_eq!(status["budget"]["max_live"], 5);
    assert_eq!(status["budget"]["live"], 5);
}

/// How many of this fixture's session agents were younger than `age` at
/// one moment: the `/proc/uptime` read before the scan. A process started
/// after that moment is not counted: the scan takes a while, longer on a
/// loaded machine, and counting against a moment before a process existed
/// would call every start during the scan "at once".
fn younger_than(h: &Hangar, age: Duration) -> usize {
    let Some(now) = uptime_secs() else {
        return 0;
    };
    h.session_agent_pids()
        .into_iter()
        .filter_map(start_secs)
        .filter(|&start| start <= now && now - start < age.as_secs_f64())
        .count()
}

#[test]
fn forty_wakes_at_once_never_run_more_than_k_spawns_and_all_finish() {
    // Each fake agent stays silent for 400 ms, so a process younger than
    // that is still spawning: at most K may exist at any sampled moment.
    let h = Hangar::with_env(&[("FAKE_AGENT_START_DELAY_MS", "400")]);
    with_config(
        &h,
        "[governor]\nwake_concurrency = 2\nwake_spacing_ms = 0\ncheck_interval_ms = 600000\n",
    );
    let ids: Vec<String> = (0..40).map(|i| parked(&h, &format!("p{i}"))).collect();
    let mut wakes: Vec<_> = ids
        .iter()
        .map(|id| h.command(&["wake", id]).spawn().expect("spawn hangar wake"))
        .collect();
    let mut peak = 0;
    let start = Instant::now();
    while wakes
        .iter_mut()
        .any(|c| c.try_wait().ok().flatten().is_none())
    {
        peak = peak.max(younger_than(&h, Duration::from_millis(350)));
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "wakes did not finish"
        );
        std::thread::sleep(Duration::from_millis(15));
    }
    for mut w in wakes {
        assert!(w.wait().unwrap().success());
    }
    assert!(peak <= 2, "saw {peak} spawns at once with K = 2");
    assert!(peak >= 1, "the sampler saw no spawn at all");
    assert_eq!(h.session_agent_pids().len(), 40);
    assert!(h.ls().iter().all(|r| r["state"] == "live"));
}

#[test]
fn three_auth_failures_trip_the_breaker_and_a_person_resumes_it() {
    let h = Hangar::new();
    with_config(
        &h,
        "[governor]\nwake_concurrency = 1\nwake_spacing_ms = 0\nbreaker_threshold = 3\ncheck_interval_ms = 600000\n",
    );
    // A codex that fails its login while the marker file exists.
    let marker = h.root.join("logged-out");
    fs::write(&marker, "").unwrap();
    let script = format!(
        "#!/bin/sh\nif [ -e '{}' ]; then FAKE_AGENT_FAIL=auth; export FAKE_AGENT_FAIL; fi\nexec '{}' --style codex \"$@\"\n",
        marker.display(),
        fake_agent_bin().display()
    );
    fs::write(&h.codex_bin, script).unwrap();
    let ids: Vec<String> = (0..4)
        .map(|i| {
            h.new_agent(&[
                "--provider",
                "codex",
                "--parked",
                "--title",
                &format!("c{i}"),
            ])
        })
        .collect();
    for id in &ids[..3] {
        let err = h.fail(&["wake", id]);
        assert!(err.contains("exited with code 1"), "{err}");
    }
    let status = h.status();
    assert_eq!(status["wake_queue"]["breaker"], "open");

    // A person's wake is answered at once while the queue is paused (an
    // agent's wake waits instead: governor_spares_people_and_families.rs).
    let refused = h.fail(&["wake", &ids[3]]);
    assert!(refused.contains("hangar wake --resume-queue"), "{refused}");
    assert_eq!(h.state_of(&ids[3]), "hibernated");
    assert!(h.fake_agent_pids_for_home().is_empty());

    fs::remove_file(&marker).unwrap();
    h.ok(&["wake", "--resume-queue"]);
    assert_eq!(h.status()["wake_queue"]["breaker"], "closed");
    h.ok(&["wake", &ids[3]]);
    assert_eq!(h.state_of(&ids[3]), "live");
    assert_eq!(h.session_agent_pids().len(), 1);
    let summary = h.json(&["journal", "summarize"]);
    assert_eq!(summary["breaker_trips"], 1);
    assert_eq!(summary["failed_spawns"]["auth-failure"], 3);
}

#[test]
fn evicting_stale_parked_agents_keeps_transcripts_and_records_resume_commands() {
    let h = Hangar::new();
    let ids: Vec<String> = (0..3).map(|i| parked(&h, &format!("p{i}"))).collect();
    let mut transcripts = Vec::new();
    for id in &ids {
        h.ok(&["wake", id]);
        let psid = h.session(id)["provider_session_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let t = h.claude_transcript(&h.work, &psid);
        h.wait_until("the transcript exists", DEADLINE, || t.exists());
        transcripts.push(t);
        h.ok(&["hibernate", id]);
    }
    let mut export: Value = serde_json::from_str(&h.ok(&["export"])).unwrap();
    h.shutdown();
    // Age two of them by ten days, then load that workspace.
    let ten_days_ago = now_ms() - 10 * 86_400_000;
    for id in &ids[..2] {
        export["workspace"]["sessions"][id]["last_active_ms"] = ten_days_ago.into();
        export["workspace"]["parked"][id]["parked_at_ms"] = ten_days_ago.into();
    }
    for f in ["state.db", "state.db-wal", "state.db-shm"] {
        let _ = fs::remove_file(h.home.join(f));
    }
    let file = h.root.join("aged.json");
    fs::write(&file, serde_json::to_string(&export).unwrap()).unwrap();
    h.ok(&["import", "hangar", file.to_str().unwrap()]);

    let dry = h.json(&["evict", "--parked-older-than", "7d", "--dry-run"]);
    assert_eq!(dry["dry_run"], true);
    let listed: BTreeSet<String> = dry["evicted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, ids[..2].iter().cloned().collect());
    assert_eq!(h.ls().len(), 3, "a dry run changes nothing");

    let done = h.json(&["evict", "--parked-older-than", "7d"]);
    assert_eq!(done["dry_run"], false);
    for e in done["evicted"].as_array().unwrap() {
        assert!(
            e["resume_command"]
                .as_str()
                .unwrap()
                .contains("claude --resume "),
            "{e}"
        );
    }
    let left: Vec<String> = h
        .ls()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(left, vec![ids[2].clone()]);
    assert!(
        transcripts.iter().all(|t| t.exists()),
        "transcripts are never deleted"
    );
    let log = fs::read_to_string(h.home.join("evicted.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 2);
    assert!(log.contains("resume_command"));
}

#[test]
fn the_journal_holds_no_prompt_text_and_summarize_reports_a_wake_storm() {
    let h = Hangar::new();
    with_config(
        &h,
        "[governor]\nwake_spacing_ms = 0\ncheck_interval_ms = 600000\n",
    );
    let agent = h.new_pane();
    h.ok(&["send", &agent, "SECRET-PROMPT-4242 please"]);
    h.wait_screen(&agent, "answer: SECRET-PROMPT-4242");
    let ids: Vec<String> = (0..12).map(|i| parked(&h, &format!("s{i}"))).collect();
    let mut wakes: Vec<_> = ids
        .iter()
        .map(|id| h.command(&["wake", id]).spawn().unwrap())
        .collect();
    for w in &mut wakes {
        assert!(w.wait().unwrap().success());
    }
    let journal = fs::read_to_string(h.home.join("journal.jsonl")).unwrap();
    assert!(!journal.contains("SECRET-PROMPT-4242"));
    assert!(
        journal
            .lines()
            .all(|l| serde_json::from_str::<Value>(l).is_ok())
    );
    let summary = h.json(&[
        "journal",
        "summarize",
        "--storm-wakes",
        "10",
        "--storm-window",
        "60s",
    ]);
    let storms = summary["wake_storms"].as_array().unwrap();
    assert_eq!(storms.len(), 1, "{summary}");
    assert!(storms[0]["wakes"].as_u64().unwrap() >= 11);
}

#[test]
fn a_memory_budget_hibernates_the_least_recently_used_agent_when_the_fleet_grows_past_it() {
    // Each agent holds 64 MiB; the budget fits two of them.
    let h = Hangar::with_env(&[("FAKE_AGENT_ALLOC_MB", "64")]);
    with_config(
        &h,
        "[governor]\nmax_memory_mb = 150\ncheck_interval_ms = 600000\n",
    );
    let ids: Vec<String> = (0..3).map(|i| parked(&h, &format!("m{i}"))).collect();
    for id in &ids {
        h.ok(&["wake", id]);
        h.wait_screen(id, "fake-agent");
    }
    h.wait_until(
        "the first agent is hibernated to fit the budget",
        DEADLINE,
        || h.state_of(&ids[0]) == "hibernated",
    );
    assert_eq!(h.state_of(&ids[1]), "live");
    assert_eq!(h.state_of(&ids[2]), "live");
    let status = h.status();
    assert!(status["budget"]["memory_bytes"].as_u64().unwrap() <= 150 * 1024 * 1024);
}

#[test]
fn the_budget_counts_pages_agents_share_once_where_resident_memory_counts_them_per_agent() {
    const MIB: u64 = 1024 * 1024;
    // A 64 MiB file every agent maps, as agents share their runtime's pages.
    let shared = tempfile::NamedTempFile::new().unwrap();
    fs::write(shared.path(), vec![7u8; 64 * MIB as usize]).unwrap();
    let h = Hangar::with_env(&[("FAKE_AGENT_SHARED_FILE", shared.path().to_str().unwrap())]);
    with_config(&h, "[governor]\nmax_memory_mb = 4096\n");
    let ids: Vec<String> = (0..3).map(|i| parked(&h, &format!("s{i}"))).collect();
    for id in &ids {
        h.ok(&["wake", id]);
        h.wait_screen(id, "fake-agent");
    }
    // The governor reads each tree at most every 2 s: wait for a reading
    // of all three after they mapped the file.
    let budget = || h.status()["budget"].clone();
    h.wait_until("a reading of all three agents", DEADLINE, || {
        budget()["resident_bytes"].as_u64().unwrap_or(0) >= 3 * 64 * MIB
    });
    let b = budget();
    let (share, resident) = (
        b["memory_bytes"].as_u64().unwrap(),
        b["resident_bytes"].as_u64().unwrap(),
    );
    // Resident memory counts the file three times, the shares once: two
    // copies apart, less what else the kernel divides differently (the
    // binary's pages, page tables); more than one and a half copies.
    assert!(resident >= share + 96 * MIB, "{b}");
    assert!(share >= 64 * MIB, "the file counts once: {b}");
}

#[test]
fn close_idle_asks_first_then_closes_only_idle_agents_and_skips_busy_ones() {
    let h = Hangar::new();
    let idle = parked(&h, "idle");
    let busy = parked(&h, "busy");
    let fresh = parked(&h, "fresh");
    h.ok(&["wake", &busy]);
    h.ok(&["send", &busy, "slow 600000 long job"]);
    h.wait_screen(&busy, "working");
    // Everything is older than 0s; `fresh` is touched right before.
    std::thread::sleep(Duration::from_millis(20));
    let asked = h.fail(&["close-idle", "--older-than", "0s", "--include-live"]);
    assert!(asked.contains("--yes"), "{asked}");
    assert_eq!(h.ls().len(), 3, "nothing closes without --yes");
    let done = h.json(&[
        "close-idle",
        "--older-than",
        "0s",
        "--include-live",
        "--yes",
    ]);
    let closed: BTreeSet<String> = done["closed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert!(closed.contains(&idle));
    assert!(closed.contains(&fresh));
    assert!(!closed.contains(&busy), "a busy agent is never closed");
    assert_eq!(h.state_of(&busy), "live");
}
