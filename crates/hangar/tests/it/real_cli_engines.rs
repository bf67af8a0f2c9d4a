//! Issue 32, the real CLIs in a Podman container: Claude Code 2.1.197 and
//! Codex 0.171.0 (the conformance suite's pinned versions) installed from
//! npm into an image that `hangar engine image build --provider
//! claude@2.1.197,codex@0.171.0` makes (Debian bookworm from mmdebstrap,
//! Debian's nodejs, the CLIs installed with this machine's npm), each started with `--engine` by the real
//! daemon through Podman's Docker Engine API, reaching
//! `hangar-fake-model-api` only through hangar's relay and proxy (the
//! container has no network but its own loopback; the fake API's HTTPS side
//! is on 127.0.0.2 of this machine, and the proxy trusts its CA through
//! `[proxy] extra_ca_file`).
//!
//! What a person would notice: the answer on screen, the conversation's
//! transcript found (in the session's own state folder under
//! `HANGAR_HOME`, mounted into the container), hibernate and wake resume the
//! same conversation, a daemon restart restores it; the real key reaches the
//! model and never the agent.
//!
//! Skipped with one line when podman, runc, mmdebstrap, npm or the registry
//! is missing, unless required (`HANGAR_TESTS_REQUIRED=1`). The image is built once per machine and
//! kept (about two minutes here: the two CLIs installed with this machine's
//! npm, a Debian root with Debian's nodejs from mmdebstrap, the CLIs copied
//! in, the root imported).

use crate::engines_podman as pod;
use crate::real_cli_support;
use crate::support;

use std::fs;
use std::path::Path;
use std::sync::Mutex;

use real_cli_support::{ANTHROPIC_KEY, RealCli};

/// The image with both pinned CLIs.
const IMAGE: &str = "localhost/hangar-test-real-clis";
const PROVIDERS: &str = "claude@2.1.197,codex@0.171.0";

static BUILD: Mutex<()> = Mutex::new(());

/// The real CLIs' world on a Podman engine, the proxy capturing the fake
/// API's HTTPS side.
fn engine_world(test: &str) -> Option<(pod::Service, pod::Sweep, RealCli)> {
    if !pod::engines_here(test) {
        return None;
    }
    let rc = RealCli::start()?;
    let service = pod::Service::start();
    let sweep = pod::Sweep(hangar_core::engine::home_hash(
        &rc.hangar.home.display().to_string(),
    ));
    rc.hangar_config(&format!(
        r#"[proxy]
allow_hosts = ["127.0.0.2"]
extra_ca_file = "{ca}"

[engines.pod]
kind = "podman"
socket = "{socket}"
image = "{IMAGE}"
runtime = "runc"
ulimits = {{ nofile = 20000, nproc = 32768 }}
network = "none"
programs = {{ claude = "claude", codex = "codex" }}
stop_timeout_secs = 5
"#,
        ca = rc.api.ca_file().display(),
        socket = service.socket.display(),
    ));
    let _one_build = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    if !pod::exists("image", IMAGE) {
        let out = rc
            .hangar
            .command(&[
                "--json",
                "engine",
                "image",
                "build",
                "pod",
                "--provider",
                PROVIDERS,
            ])
            .output()
            .expect("run hangar engine image build");
        assert!(
            out.status.success(),
            "hangar engine image build --provider {PROVIDERS} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The build started this home's daemon; the test starts its own
        // (with the variables it sets first).
        if rc.hangar.daemon_pid_opt().is_some() {
            rc.hangar.shutdown();
        }
    }
    Some((service, sweep, rc))
}

/// Whether any file under `dir` contains `needle`.
fn contains_text(dir: &Path, needle: &str) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            contains_text(&p, needle)
        } else {
            fs::read(&p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle))
        }
    })
}

/// The session's row once it is live again after a daemon restart; the
/// row it had says why when it never is.
fn live_after_restart(rc: &RealCli, id: &str) -> serde_json::Value {
    let end = std::time::Instant::now() + real_cli_support::REAL_DEADLINE;
    loop {
        let row = rc.hangar.session(id);
        if row["state"] == "live" {
            return row;
        }
        assert!(
            std::time::Instant::now() < end,
            "session {id} is not live after the restart: state {} reason {} exit {}\n{}\nrow: {row}",
            row["state"],
            row["reason"],
            row["exit_code"],
            rc.hangar.daemon_logs_tail()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

fn body_of(rc: &RealCli, api: &str, turn: &str) -> String {
    rc.api
        .wait_request(&format!("the turn {turn:?} reached the model"), |r| {
            r["api"] == api && r["turn"] == turn
        })["body"]
        .to_string()
}

#[test]
fn the_real_claude_in_a_podman_container_answers_through_the_proxy_and_resumes() {
    let Some((_service, _sweep, mut rc)) =
        engine_world("the_real_claude_in_a_podman_container_answers_through_the_proxy_and_resumes")
    else {
        return;
    };
    rc.hangar.set_env("ANTHROPIC_BASE_URL", rc.api.https_url());
    rc.hangar.start_daemon();
    let id = rc
        .hangar
        .new_agent(&["--provider", "claude", "--engine", "pod"]);
    rc.wait_ready(&id);
    let row = rc.hangar.session(&id);
    assert_eq!(row["engine"]["kind"], "podman", "{row}");
    assert_eq!(row["sandbox"]["network"], "proxy", "{row}");

    rc.ask(&id, "inside the container");
    let turn = rc
        .api
        .wait_request("the turn reached the model over TLS", |r| {
            r["api"] == "anthropic" && r["turn"] == "inside the container"
        });
    assert_eq!(turn["tls"], true, "{turn}");
    let sent_key = turn["headers"]["x-api-key"].as_str().unwrap_or_default();
    assert_eq!(sent_key, ANTHROPIC_KEY, "{turn}");
    for pid in rc.processes_matching("claude") {
        let env = support::environ(pid).join("\n");
        assert!(!env.contains(ANTHROPIC_KEY), "pid {pid} holds the real key");
    }

    // The transcript is in the session's own state folder, found by hangar.
    let own_folder = rc.hangar.home.join("sandbox").join(&id).join("claude");
    assert!(contains_text(&own_folder, "ANSWER(inside the container)"));
    let psid = rc.wait_provider_id(&id);
    assert!(
        contains_text(&own_folder.join("projects"), &psid),
        "the provider id {psid} is not the transcript's"
    );

    hibernate_wake_and_restart_keep_the_conversation(
        &rc,
        &id,
        &psid,
        "anthropic",
        [
            "inside the container",
            "after the wake",
            "after the restart",
        ],
    );
}

/// Hibernate and wake, then a daemon restart: each time the session comes
/// back in its container resuming `psid`, and the model sees the
/// conversation so far (`turns`: the first prompt, the one asked after the
/// wake, the one asked after the restart; the fake answers `ANSWER(turn)`).
fn hibernate_wake_and_restart_keep_the_conversation(
    rc: &RealCli,
    id: &str,
    psid: &str,
    api: &str,
    [first, after_wake, after_restart]: [&str; 3],
) {
    rc.hangar.ok(&["hibernate", id]);
    rc.wait_state(id, "hibernated");
    rc.hangar.ok(&["wake", id]);
    let row = rc.wait_state(id, "live");
    assert_eq!(row["started"], "resumed", "{row}");
    assert_eq!(row["provider_session_id"], psid, "{row}");
    rc.wait_ready(id);
    rc.ask(id, after_wake);
    let body = body_of(rc, api, after_wake);
    assert!(
        body.contains(&format!("ANSWER({first})")),
        "not its own conversation"
    );

    rc.hangar.shutdown();
    rc.hangar.start_daemon();
    rc.hangar.wait_restore_complete();
    let row = live_after_restart(rc, id);
    assert_eq!(row["started"], "resumed", "{row}");
    assert_eq!(row["provider_session_id"], psid, "{row}");
    assert_eq!(row["engine"]["kind"], "podman", "{row}");
    rc.wait_ready(id);
    rc.ask(id, after_restart);
    let body = body_of(rc, api, after_restart);
    assert!(
        body.contains(&format!("ANSWER({after_wake})")),
        "not its own conversation"
    );
}

#[test]
fn the_real_codex_in_a_podman_container_answers_through_the_proxy_and_resumes() {
    let Some((_service, _sweep, rc)) =
        engine_world("the_real_codex_in_a_podman_container_answers_through_the_proxy_and_resumes")
    else {
        return;
    };
    rc.use_https_api();
    rc.hangar.start_daemon();
    let id = rc
        .hangar
        .new_agent(&["--provider", "codex", "--engine", "pod"]);
    rc.wait_ready(&id);

    rc.ask(&id, "codex contained");
    let turn = rc
        .api
        .wait_request("the turn reached the model over TLS", |r| {
            r["api"] == "responses" && r["turn"] == "codex contained"
        });
    assert_eq!(turn["tls"], true, "{turn}");
    let auth = turn["headers"]["authorization"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        auth,
        format!("Bearer {}", real_cli_support::OPENAI_KEY),
        "{turn}"
    );
    for pid in rc.processes_matching("codex") {
        let env = support::environ(pid).join("\n");
        assert!(
            !env.contains(real_cli_support::OPENAI_KEY),
            "pid {pid} holds the real key"
        );
    }
    // Its rollout is in the session's own state folder, and hangar found it.
    let own_folder = rc.hangar.home.join("sandbox").join(&id).join("codex");
    assert!(contains_text(
        &own_folder.join("sessions"),
        "ANSWER(codex contained)"
    ));
    let thread = rc.wait_provider_id(&id);
    assert!(contains_text(&own_folder.join("sessions"), &thread));

    hibernate_wake_and_restart_keep_the_conversation(
        &rc,
        &id,
        &thread,
        "responses",
        ["codex contained", "codex again", "codex restarted"],
    );
}
