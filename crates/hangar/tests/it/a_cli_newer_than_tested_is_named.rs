//! What a person sees when an agent CLI is newer than any version hangar
//! is tested with: a notice in `hangar status` the first time a session
//! starts it, and `hangar doctor` naming each CLI's version and the tested
//! one. The CLI here is the fake behind a wrapper answering `--version` as
//! Claude Code does (`<version> (Claude Code)`).

use crate::support;

use std::os::unix::fs::PermissionsExt;

use support::{DEADLINE, Hangar};

#[test]
fn a_newer_claude_gets_a_status_notice_and_doctor_names_the_tested_version() {
    let mut h = Hangar::new();
    let claude = h.root.join("bin").join("claude-newer");
    std::fs::write(
        &claude,
        format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo '9.9.9 (Claude Code)'; exit 0; }}\nexec '{}' \"$@\"\n",
            support::fake_agent_bin().display()
        ),
    )
    .expect("write wrapper");
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    h.set_env("HANGAR_CLAUDE_BIN", &claude);
    h.start_daemon();
    let id = h.new_agent(&["--provider", "claude"]);
    h.wait_state(&id, "live");
    let mut status = serde_json::Value::Null;
    h.wait_until("status carries the newer-version notice", DEADLINE, || {
        status = h.status();
        status.to_string().contains(
            "claude 9.9.9 is newer than the newest version hangar is tested with (2.1.197)",
        )
    });
    let human = h.ok(&["status"]);
    assert!(human.contains("claude 9.9.9 is newer"), "{human}");

    let doctor = h.json(&["doctor"]);
    let row = doctor["clis"]
        .as_array()
        .and_then(|r| r.iter().find(|c| c["provider"] == "claude").cloned())
        .unwrap_or_else(|| panic!("doctor has no claude row: {doctor}"));
    assert_eq!(row["version"], "9.9.9", "{row}");
    assert_eq!(row["tested"], "2.1.197");
    assert_eq!(row["newer_than_tested"], true);
    let text = h.ok(&["doctor"]);
    assert!(
        text.contains("9.9.9 (tested with 2.1.197)")
            && text.contains("@anthropic-ai/claude-code@2.1.197"),
        "{text}"
    );
}

#[test]
fn many_starts_while_the_version_probe_runs_run_the_cli_once() {
    let h = Hangar::new();
    // An opencode that takes 1.5 s to print its version (opencode does on a
    // machine without network: cli_probe.rs) and notes every probe.
    let probes = h.root.join("probes");
    std::fs::write(
        &h.opencode_bin,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo probe >> '{}'; sleep 1.5; echo 1.14.0; exit 0; fi\nexec '{}' --style opencode \"$@\"\n",
            probes.display(),
            support::fake_agent_bin().display()
        ),
    )
    .expect("write wrapper");
    let ids: Vec<String> = (0..6)
        .map(|i| {
            h.new_agent(&[
                "--provider",
                "opencode",
                "--parked",
                "--title",
                &format!("o{i}"),
            ])
        })
        .collect();
    let wakes: Vec<_> = ids
        .iter()
        .map(|id| h.command(&["wake", id]).spawn().expect("spawn hangar wake"))
        .collect();
    for w in wakes {
        assert!(w.wait_with_output().unwrap().status.success());
    }
    h.wait_until("no probe is running", DEADLINE, || {
        probes.exists()
            && !h
                .pids_for_home()
                .into_iter()
                .any(|p| support::cmdline(p).iter().any(|a| a == "--version"))
    });
    assert_eq!(h.session_agent_pids().len(), ids.len());
    let runs = std::fs::read_to_string(&probes).unwrap_or_default();
    assert_eq!(runs.lines().count(), 1, "opencode --version ran {runs:?}");
}
