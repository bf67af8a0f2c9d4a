//! Sessions on a real Podman engine (issue 32), through Podman's Docker
//! Engine API (`podman system service`): the fake agent, bind-mounted with
//! the target folder into an image built by `hangar engine image build`
//! (Debian's bookworm from mmdebstrap; glibc matches the host's Debian 12),
//! runs in one container per session: its answer on screen, its TTY sized
//! like the pane and resized with it, its model calls only through hangar's
//! relay and recording proxy with a placeholder key, its transcript in its
//! state folder under HANGAR_HOME (found, and resumed after a wake),
//! hibernate stops the container and keeps its volume, wake
//! resumes the same conversation from it, close removes both; labels on
//! everything; a missing image and a missing socket are `failed` sessions
//! with the engine's own words and no local agent; a restart removes this
//! home's leftovers and never another home's.
//!
//! Needs podman, runc and mmdebstrap (Debian packages; `.ci/run` installs
//! them). Without them each test says so in one line and passes, unless
//! `HANGAR_TESTS_REQUIRED=1` (set by `.ci/run`), where it fails.
//! Podman here needs `--runtime runc` and lowered ulimits (crun and the
//! default limits are refused on this project's machines), hence the
//! engine's `runtime` and `ulimits`.

use crate::proxy_support;
use crate::pty_screen;
use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use proxy_support::{ApiServer, capture_events, env_of};
use pty_screen::PtyApp;
use support::*;

/// The test image, built once per machine (and so once per CI run) by
/// `hangar engine image build` and then reused.
const IMAGE: &str = "localhost/hangar-test-engines";
/// A container's first start includes making its volume.
const ENGINE_DEADLINE: Duration = Duration::from_secs(60);

static BUILD: Mutex<()> = Mutex::new(());

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
        || Path::new("/usr/sbin").join(program).is_file()
}

/// Whether the machine has what these tests need; one line says why not.
pub(crate) fn engines_here(test: &str) -> bool {
    let missing: Vec<_> = ["podman", "runc", "mmdebstrap"]
        .into_iter()
        .filter(|p| !on_path(p))
        .collect();
    if missing.is_empty() {
        return true;
    }
    let why = format!(
        "{} not installed (Debian: apt-get install podman runc mmdebstrap uidmap)",
        missing.join(", ")
    );
    hangar_testkit::required::missing(&format!("engines_podman::{test}"), &why);
    false
}

/// `podman system service` on a socket of its own, ended on drop.
pub(crate) struct Service {
    _dir: tempfile::TempDir,
    pub(crate) socket: PathBuf,
    child: Child,
}

impl Service {
    pub(crate) fn start() -> Service {
        let dir = tempfile::Builder::new()
            .prefix("hangar-podman-")
            .tempdir()
            .expect("temp dir");
        let socket = dir.path().join("podman.sock");
        let child = Command::new("podman")
            .args(["system", "service", "--time=0"])
            .arg(format!("unix://{}", socket.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start podman system service");
        wait_until("podman's API socket is there", DEADLINE, || socket.exists());
        Service {
            _dir: dir,
            socket,
            child,
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Removes every container and volume labelled with a home's hash when
/// dropped (declared before the fixture, so it runs after its shutdown).
pub(crate) struct Sweep(pub(crate) String);

impl Drop for Sweep {
    fn drop(&mut self) {
        let filter = format!("label=hangar.home={}", self.0);
        let _ = podman(&["rm", "--force", "--volumes", "--filter", &filter]);
        let _ = podman(&["volume", "prune", "--force", "--filter", &filter]);
    }
}

pub(crate) fn podman(args: &[&str]) -> std::process::Output {
    Command::new("podman")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run podman")
}

pub(crate) fn podman_ok(args: &[&str]) -> String {
    let out = podman(args);
    assert!(
        out.status.success(),
        "podman {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

pub(crate) fn exists(what: &str, name: &str) -> bool {
    podman(&[what, "exists", name]).status.success()
}

pub(crate) fn container_status(name: &str) -> String {
    podman_ok(&["inspect", "--format", "{{.State.Status}}", name])
}

/// `[engines.pod]` for this fixture: the target folder (the fake agent and
/// its siblings) bind-mounted read-only at the same path.
fn engine_config(socket: &Path, extra: &str) -> String {
    let fake = fake_agent_bin();
    let target = fake.parent().expect("target folder").display().to_string();
    format!(
        r#"[engines.pod]
kind = "podman"
socket = "{socket}"
image = "{IMAGE}"
runtime = "runc"
ulimits = {{ nofile = 20000, nproc = 32768 }}
network = "none"
mounts = ["{target}:{target}:ro"]
programs = {{ claude = "{fake}" }}
stop_timeout_secs = 2
{extra}"#,
        socket = socket.display(),
        fake = fake.display(),
    )
}

fn home_hash(h: &Hangar) -> String {
    hangar_core::engine::home_hash(&h.home.display().to_string())
}

/// The engine and its test image, built through hangar itself the first
/// time on this machine.
fn engine_fixture() -> (Service, Sweep, Hangar) {
    engine_fixture_with(Hangar::new(), "")
}

/// [`engine_fixture`] for `h`, its config.toml starting with `before`.
fn engine_fixture_with(h: Hangar, before: &str) -> (Service, Sweep, Hangar) {
    let service = Service::start();
    let sweep = Sweep(home_hash(&h));
    h.write_config(&format!("{before}{}", engine_config(&service.socket, "")));
    let _one_build = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    if !exists("image", IMAGE) {
        let mut build = h.command(&["--json", "engine", "image", "build", "pod"]);
        let out = build.output().expect("run hangar engine image build");
        assert!(
            out.status.success(),
            "hangar engine image build failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON reply");
        assert_eq!(v["image"], IMAGE);
        assert!(exists("image", IMAGE), "the built image is in podman");
    }
    (service, sweep, h)
}

fn wait_engine_state(h: &Hangar, id: &str, state: &str) -> serde_json::Value {
    let start = std::time::Instant::now();
    loop {
        let row = h.session(id);
        if row["state"] == state {
            return row;
        }
        assert!(
            start.elapsed() < ENGINE_DEADLINE,
            "timed out waiting until {id} is {state}: {row}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Host pids of fake agents carrying `session`'s id (the exec passes it
/// into the container; the host's /proc sees the container's processes).
fn agents_of(session: &str) -> Vec<i32> {
    let want = format!("HANGAR_SESSION_ID={session}");
    all_pids()
        .into_iter()
        .filter(|&p| {
            cmdline(p)
                .first()
                .is_some_and(|a| a.ends_with("hangar-fake-agent"))
        })
        .filter(|&p| environ(p).iter().any(|e| e == &want))
        .collect()
}

fn pid_namespace(pid: i32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok()
}

#[test]
fn an_agent_in_a_podman_container_answers_hibernates_wakes_and_closes() {
    if !engines_here("an_agent_in_a_podman_container_answers_hibernates_wakes_and_closes") {
        return;
    }
    let (_service, _sweep, h) = engine_fixture();
    let id = h.json(&["new", "--engine", "pod"])["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let row = wait_engine_state(&h, &id, "live");
    let container = format!("hangar-{id}");
    assert_eq!(
        row["engine"],
        serde_json::json!({"name": "pod", "kind": "podman", "container": container, "image": IMAGE}),
        "ls --json names the engine: {row}"
    );
    h.wait_screen(&id, "fake-agent claude session");

    // The agent runs in the container, not beside the daemon: its pid
    // namespace is not ours, and the session's own process is the bridge.
    let agents = agents_of(&id);
    assert_eq!(agents.len(), 1, "one agent for the session: {agents:?}");
    assert_ne!(
        pid_namespace(agents[0]),
        pid_namespace(std::process::id() as i32),
        "the agent is in the container's pid namespace"
    );
    let bridge = h.pid_of(&id);
    assert!(
        cmdline(bridge).iter().any(|a| a == "engine-exec"),
        "the session's process is the exec bridge: {:?}",
        cmdline(bridge)
    );

    // Labels on the container and its volume.
    let labels = podman_ok(&["inspect", "--format", "{{json .Config.Labels}}", &container]);
    let labels: serde_json::Value = serde_json::from_str(&labels).expect("labels JSON");
    assert_eq!(labels["hangar.session"], id.as_str());
    assert_eq!(labels["hangar.home"], home_hash(&h).as_str());
    let volume = format!("hangar-{id}-home");
    let volume_labels = podman_ok(&["volume", "inspect", "--format", "{{json .Labels}}", &volume]);
    let volume_labels: serde_json::Value =
        serde_json::from_str(&volume_labels).expect("volume labels JSON");
    assert_eq!(volume_labels["hangar.home"], home_hash(&h).as_str());
    assert_eq!(volume_labels["hangar.session"], id.as_str());

    // Bytes both ways, and the container's TTY is the pane's size.
    h.ok(&["send", &id, "hello"]);
    h.wait_screen(&id, "answer: hello");
    h.ok(&["send", &id, "size"]);
    h.wait_screen(&id, "size: 120x40");
    let psid = row["provider_session_id"]
        .as_str()
        .expect("a provider id")
        .to_owned();

    // Hibernate stops the container and keeps it and its volume.
    h.ok(&["hibernate", &id]);
    wait_engine_state(&h, &id, "hibernated");
    assert_eq!(container_status(&container), "exited");
    assert!(exists("volume", &volume), "the volume is kept");
    wait_until("the agent is gone", DEADLINE, || agents_of(&id).is_empty());

    // Wake starts it again and resumes the same conversation from the CLI's
    // state in the volume.
    h.ok(&["wake", &id]);
    let woke = wait_engine_state(&h, &id, "live");
    h.wait_screen(&id, &format!("session {psid} (resumed)"));
    assert_eq!(woke["provider_session_id"], psid.as_str());
    assert_eq!(container_status(&container), "running");

    // Close removes the container and its volume.
    h.ok(&["close", &id]);
    h.wait_until("the container is removed", ENGINE_DEADLINE, || {
        !exists("container", &container)
    });
    assert!(!exists("volume", &volume), "the volume is removed");
    assert!(agents_of(&id).is_empty(), "no agent left");
}

#[test]
fn engine_errors_fail_the_session_with_the_engines_words_and_run_nothing_here() {
    if !engines_here("engine_errors_fail_the_session_with_the_engines_words_and_run_nothing_here") {
        return;
    }
    let (service, _sweep, h) = engine_fixture();
    let gone = h.root.join("no-engine.sock");
    h.write_config(&engine_config(
        &service.socket,
        &format!(
            "[engines.gone]\nkind = \"docker\"\nsocket = \"{}\"\nimage = \"{IMAGE}\"\n",
            gone.display()
        ),
    ));

    // An image the engine does not have: Podman's own "no such image", and
    // no pull.
    let missing = h.json(&[
        "new",
        "--engine",
        "pod",
        "--image",
        "localhost/hangar-no-such-image",
    ])["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let row = wait_engine_state(&h, &missing, "failed");
    let reason = row["reason"].as_str().unwrap_or_default();
    assert!(
        reason.to_lowercase().contains("no such image") && reason.contains("never pulls"),
        "the engine's words and the way out: {reason}"
    );
    assert!(
        !exists("image", "localhost/hangar-no-such-image"),
        "nothing was pulled"
    );
    assert!(!exists("container", &format!("hangar-{missing}")));

    // An engine whose socket is not there.
    let unreachable = h.json(&["new", "--engine", "gone"])["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let row = wait_engine_state(&h, &unreachable, "failed");
    let reason = row["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(&gone.display().to_string()) && reason.contains("does not exist"),
        "names the socket: {reason}"
    );

    // Never a local agent instead (DESIGN.md rule 14), also on a retry.
    let woke = h.run(&["wake", &unreachable]);
    assert!(!woke.status.success(), "a wake still fails");
    assert!(
        h.fake_agent_pids_for_home().is_empty(),
        "no agent ran on this machine"
    );

    // An engine config.toml does not name is refused up front.
    let err = h.fail(&["new", "--engine", "nowhere"]);
    assert!(
        err.contains("engine nowhere is not in config.toml"),
        "{err}"
    );
}

#[test]
fn a_start_removes_its_own_leftovers_and_never_another_homes() {
    if !engines_here("a_start_removes_its_own_leftovers_and_never_another_homes") {
        return;
    }
    let (_service, _sweep, h) = engine_fixture();
    let mine = home_hash(&h);
    let suffix = uuid_like(&h);
    // Another home's container, and one of this home for a session it does
    // not have (a crash between a close and its removal leaves one).
    let theirs = format!("hangar-theirs-{suffix}");
    let _their_sweep = Sweep(format!("other-{suffix}"));
    let ghost = format!("hangar-ghost-{suffix}");
    for (name, home, session) in [
        (&theirs, format!("other-{suffix}"), "someone-elses"),
        (&ghost, mine.clone(), "closed-long-ago"),
    ] {
        podman_ok(&[
            "create",
            "--name",
            name,
            "--runtime",
            "runc",
            "--label",
            &format!("hangar.home={home}"),
            "--label",
            &format!("hangar.session={session}"),
            IMAGE,
            "true",
        ]);
    }

    // A start of this home (the first command starts the daemon).
    h.ok(&["ls"]);
    h.wait_until("this home's leftover is removed", ENGINE_DEADLINE, || {
        !exists("container", &ghost)
    });
    assert!(
        exists("container", &theirs),
        "another home's container is left alone"
    );
}

/// A name part unique to this fixture (its temp folder's name).
fn uuid_like(h: &Hangar) -> String {
    h.root
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect()
}

#[test]
fn a_restart_after_a_crash_restores_the_container_agent_and_resumes_it() {
    if !engines_here("a_restart_after_a_crash_restores_the_container_agent_and_resumes_it") {
        return;
    }
    let (_service, _sweep, h) = engine_fixture();
    let id = h.json(&["new", "--engine", "pod"])["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let row = wait_engine_state(&h, &id, "live");
    h.wait_screen(&id, "fake-agent claude session");
    h.ok(&["send", &id, "before the crash"]);
    h.wait_screen(&id, "answer: before the crash");
    let psid = row["provider_session_id"]
        .as_str()
        .expect("a provider id")
        .to_owned();

    // The daemon dies without a word; its agent must not go on writing the
    // conversation the next start resumes.
    let daemon = h.daemon_pid();
    // SAFETY: a plain kill of a pid this test's fixture started.
    unsafe { libc::kill(daemon, libc::SIGKILL) };
    wait_until("the daemon is gone", DEADLINE, || !is_running(daemon));
    wait_until("the old agent is gone", ENGINE_DEADLINE, || {
        agents_of(&id).is_empty()
    });

    // The next start restores the pane in the same container, resumed.
    h.ok(&["ls"]);
    let woke = wait_engine_state(&h, &id, "live");
    h.wait_screen(&id, &format!("session {psid} (resumed)"));
    assert_eq!(woke["provider_session_id"], psid.as_str());
    assert_eq!(agents_of(&id).len(), 1, "one agent after the restore");
    assert_eq!(container_status(&format!("hangar-{id}")), "running");
}

/// Whether any file under `dir` contains `needle`.
fn contains_text(dir: &Path, needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            contains_text(&p, needle)
        } else {
            std::fs::read(&p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle))
        }
    })
}

#[test]
fn an_agent_in_a_container_reaches_the_model_only_through_hangars_proxy_and_resumes_its_transcript()
{
    if !engines_here(
        "an_agent_in_a_container_reaches_the_model_only_through_hangars_proxy_and_resumes_its_transcript",
    ) {
        return;
    }
    const REAL: &str = "sk-ant-api03-REAL-KEY-NEVER-IN-A-CONTAINER-7e2a";
    let h = Hangar::with_env(&[
        ("ANTHROPIC_API_KEY", REAL),
        ("FAKE_AGENT_APIKEY_FROM", "ANTHROPIC_API_KEY"),
    ]);
    // The model API on this machine's loopback: the container (network
    // "none") reaches it only through the relay, the session's proxy
    // socket and hangar's proxy.
    let server = ApiServer::start(&h.root, 2, Duration::from_millis(10));
    let proxy = format!(
        "[proxy]\nallow_hosts = [\"localhost\"]\nextra_ca_file = {:?}\n",
        server.ca_file.display().to_string()
    );
    let (_service, _sweep, h) = engine_fixture_with(h, &proxy);
    let id = h.json(&["new", "--engine", "pod"])["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let row = wait_engine_state(&h, &id, "live");
    assert_eq!(row["sandbox"]["kind"], "podman", "{row}");
    assert_eq!(row["sandbox"]["network"], "proxy", "{row}");
    h.wait_screen(&id, "fake-agent claude session");

    let url = format!("https://localhost:{}/v1/messages", server.port);
    h.ok(&["send", &id, &format!("api {url} hello-container")]);
    let mut screen = String::new();
    h.wait_until("the API call ends", ENGINE_DEADLINE, || {
        screen = h.screen(&id);
        screen.contains("api-done") || screen.contains("api-error")
    });
    assert!(screen.contains("api-done 200"), "{screen}");
    // It went through hangar's proxy: recorded, with the real key put on
    // a request the agent made with a placeholder.
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "one request reached the model");
    let key = seen[0].headers.iter().find(|(k, _)| k == "x-api-key");
    assert_eq!(key.map(|(_, v)| v.as_str()), Some(REAL));
    h.wait_until("the proxy recorded the call", ENGINE_DEADLINE, || {
        capture_events(&h.home, &id)
            .iter()
            .any(|e| e["event"] == "end")
    });
    // The usage ledger counts it for this session, as for a host agent.
    h.wait_until("the ledger has the call", ENGINE_DEADLINE, || {
        let u = h.json(&["usage", "--session", &id]);
        u["sessions"][0]["requests"].as_u64() >= Some(1)
    });
    let agents = agents_of(&id);
    assert_eq!(agents.len(), 1, "{agents:?}");
    let inside = env_of(agents[0], "ANTHROPIC_API_KEY").expect("a placeholder key");
    assert_ne!(inside, REAL);
    let environ = std::fs::read(format!("/proc/{}/environ", agents[0])).expect("environ");
    assert!(!String::from_utf8_lossy(&environ).contains(REAL));
    // Its HTTPS_PROXY names its own loopback, where the relay listens.
    let proxy_var = env_of(agents[0], "HTTPS_PROXY").expect("HTTPS_PROXY");
    assert!(proxy_var.contains("@127.0.0.1:"), "{proxy_var}");

    // Its transcript is in the session's state folder under HANGAR_HOME,
    // where hangar finds it: the provider id comes from it.
    h.ok(&["send", &id, "remember-the-container"]);
    h.wait_screen(&id, "answer: remember-the-container");
    let psid = h.wait_transcript_id(&id);
    let state = h.home.join("sandbox").join(&id).join("claude");
    assert!(contains_text(&state, "remember-the-container"));
    assert!(!contains_text(&h.claude_dir, "remember-the-container"));
    assert!(!contains_text(&h.home.join("sandbox"), REAL));

    // Hibernate and wake: the same conversation, resumed in the container.
    h.ok(&["hibernate", &id]);
    wait_engine_state(&h, &id, "hibernated");
    wait_until("the agent is gone", DEADLINE, || agents_of(&id).is_empty());
    // `hangar search` finds its words in that transcript, container stopped
    // and nothing started for it.
    let found = h.json(&["search", "remember-the-container"]);
    let from_transcript: Vec<&serde_json::Value> = found["matches"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["source"] == "transcript" && m["session"] == id.as_str())
        .collect();
    assert!(!from_transcript.is_empty(), "{found:#}");
    assert!(agents_of(&id).is_empty(), "the search started nothing");
    h.ok(&["wake", &id]);
    let woke = wait_engine_state(&h, &id, "live");
    assert_eq!(woke["started"], "resumed", "{woke}");
    assert_eq!(woke["provider_session_id"], psid.as_str());
    h.wait_screen(&id, &format!("session {psid} (resumed)"));
    // And the proxy still carries its calls after the wake.
    h.ok(&["send", &id, &format!("api {url} after-the-wake")]);
    h.wait_until("the second call is answered", ENGINE_DEADLINE, || {
        h.screen(&id).matches("api-done 200").count() >= 1 && server.seen().len() == 2
    });
}

/// The last `size` answer on an attached terminal.
fn last_size_answer(app: &PtyApp) -> Option<String> {
    app.rows()
        .iter()
        .rev()
        .find_map(|r| r.split("size: ").nth(1).map(|s| s.trim().to_owned()))
}

#[test]
fn a_pane_resize_reaches_the_agents_tty_in_its_container() {
    if !engines_here("a_pane_resize_reaches_the_agents_tty_in_its_container") {
        return;
    }
    let (_service, _sweep, h) = engine_fixture();
    let id = h.json(&["new", "--engine", "pod"])["id"]
        .as_str()
        .expect("id")
        .to_owned();
    wait_engine_state(&h, &id, "live");
    h.wait_screen(&id, "fake-agent claude session");
    h.ok(&["send", &id, "size"]);
    h.wait_screen(&id, "size: 120x40");

    // An attached 100x30 terminal makes the pane 100x30, and so the TTY of
    // the agent's exec (resized by the bridge on its SIGWINCH).
    let mut app = PtyApp::spawn(h.command(&["attach", &id]), 30, 100);
    app.wait_text("fake-agent claude session");
    h.wait_until(
        "the container's TTY follows the pane",
        ENGINE_DEADLINE,
        || {
            app.write(b"size\r");
            std::thread::sleep(Duration::from_millis(200));
            last_size_answer(&app).as_deref() == Some("100x30")
        },
    );
    drop(app);
}

#[test]
fn a_fork_of_an_agent_in_a_container_runs_on_the_same_engine_and_forks_its_conversation() {
    if !engines_here(
        "a_fork_of_an_agent_in_a_container_runs_on_the_same_engine_and_forks_its_conversation",
    ) {
        return;
    }
    let (_service, _sweep, h) = engine_fixture();
    let parent = h.json(&["new", "--engine", "pod"])["id"]
        .as_str()
        .expect("id")
        .to_owned();
    wait_engine_state(&h, &parent, "live");
    h.wait_screen(&parent, "fake-agent claude session");
    h.ok(&["send", &parent, "parent-in-a-box"]);
    h.wait_screen(&parent, "answer: parent-in-a-box");
    let psid = h.wait_transcript_id(&parent);
    let parent_state = h.home.join("sandbox").join(&parent).join("claude");
    assert!(contains_text(&parent_state, "parent-in-a-box"));

    let forked = h.json(&["fork", &parent]);
    let id = forked["id"].as_str().expect("id").to_owned();
    assert_eq!(forked["forked_from"], parent.as_str());
    let row = wait_engine_state(&h, &id, "live");
    let container = format!("hangar-{id}");
    assert_eq!(row["engine"]["name"], "pod", "{row}");
    assert_eq!(row["engine"]["container"], container.as_str(), "{row}");
    assert_eq!(row["sandbox"]["kind"], "podman", "{row}");
    // Its CLI found the parent's conversation in its own container.
    h.wait_screen(&id, &format!("(forked from {psid})"));
    assert_eq!(container_status(&container), "running");
    let agents = agents_of(&id);
    assert_eq!(agents.len(), 1, "{agents:?}");
    assert_ne!(
        pid_namespace(agents[0]),
        pid_namespace(std::process::id() as i32),
        "the fork's agent is in a container"
    );
    h.ok(&["send", &id, "fork-in-a-box"]);
    h.wait_screen(&id, "answer: fork-in-a-box");
    let own = h.wait_transcript_id(&id);
    assert_ne!(own, psid);
    let own_state = h.home.join("sandbox").join(&id).join("claude");
    assert!(contains_text(&own_state, "parent-in-a-box"));
    assert!(contains_text(&own_state, "fork-in-a-box"));
    assert!(!contains_text(&parent_state, "fork-in-a-box"));

    h.ok(&["close", &id]);
    h.wait_until("the fork's container is removed", ENGINE_DEADLINE, || {
        !exists("container", &container)
    });
}

/// Container `name`'s state word as Podman's API says it, read with one
/// raw request on the engine's socket (the `podman` program takes a tenth
/// of a second or more per look, a stop about a second).
fn api_state(socket: &Path, name: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut stream = std::os::unix::net::UnixStream::connect(socket).ok()?;
    // HTTP/1.0: the answer is the whole body, then the connection ends.
    write!(
        stream,
        "GET /containers/{name}/json HTTP/1.0\r\nHost: localhost\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let body = answer.split_once("\r\n\r\n")?.1;
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    v["State"]["Status"].as_str().map(str::to_owned)
}

/// Wait until session `id` is in one of `states`; a `failed` row on the way
/// fails the test at once with its reason (an engine state read as an error
/// is what these tests are about).
fn wait_state_never_failed(h: &Hangar, id: &str, states: &[&str]) -> serde_json::Value {
    let start = std::time::Instant::now();
    loop {
        let row = h.session(id);
        assert_ne!(
            row["state"],
            "failed",
            "session {id} failed: {row}\n{}",
            h.daemon_logs_tail()
        );
        if states.iter().any(|s| row["state"] == *s) {
            return row;
        }
        assert!(
            start.elapsed() < ENGINE_DEADLINE,
            "timed out waiting until {id} is one of {states:?}: {row}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Issue 44: Podman 4.3 says `stopped` (then `exited`) for a moment after a
/// stop returns, a word bollard's enum did not know, so a wake right after
/// a hibernate failed the session ("cannot look at container ...: unknown
/// variant `stopped`"). Three hibernate-and-wake rounds, each wake sent
/// the moment the hibernate returned: every one live and resumed.
#[test]
fn a_wake_right_after_a_hibernate_starts_the_container_again_and_resumes() {
    if !engines_here("a_wake_right_after_a_hibernate_starts_the_container_again_and_resumes") {
        return;
    }
    let (_service, _sweep, h) = engine_fixture();
    let id = h.json(&["new", "--engine", "pod"])["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let row = wait_state_never_failed(&h, &id, &["live"]);
    h.wait_screen(&id, "fake-agent claude session");
    let psid = row["provider_session_id"]
        .as_str()
        .expect("a provider id")
        .to_owned();
    let container = format!("hangar-{id}");
    for round in 1..=3 {
        h.ok(&["hibernate", &id]);
        h.ok(&["wake", &id]);
        let woke = wait_state_never_failed(&h, &id, &["live"]);
        assert_eq!(woke["provider_session_id"], psid.as_str(), "round {round}");
        let resumed = format!("session {psid} (resumed)");
        h.wait_until(
            "the agent resumed its conversation",
            ENGINE_DEADLINE,
            || h.screen(&id).contains(&resumed),
        );
        h.ok(&["send", &id, &format!("round-{round}")]);
        h.wait_screen(&id, &format!("answer: round-{round}"));
        assert_eq!(agents_of(&id).len(), 1, "one agent in round {round}");
        assert_eq!(container_status(&container), "running", "round {round}");
    }
}

/// Issue 44: the daemon SIGKILLed while its session's container stops (a
/// hibernate under way, Podman saying `stopping`): the next start reads the
/// container's state whatever Podman calls it, and the session comes back
/// live and resumed (never `failed`), with one agent.
#[test]
fn a_daemon_killed_during_a_containers_stop_restores_the_session_resumed() {
    if !engines_here("a_daemon_killed_during_a_containers_stop_restores_the_session_resumed") {
        return;
    }
    let (service, _sweep, h) = engine_fixture();
    let id = h.json(&["new", "--engine", "pod"])["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let row = wait_state_never_failed(&h, &id, &["live"]);
    h.wait_screen(&id, "fake-agent claude session");
    h.ok(&["send", &id, "before the stop"]);
    h.wait_screen(&id, "answer: before the stop");
    let psid = row["provider_session_id"]
        .as_str()
        .expect("a provider id")
        .to_owned();
    let container = format!("hangar-{id}");
    assert_eq!(
        api_state(&service.socket, &container).as_deref(),
        Some("running")
    );

    let mut hibernate = h
        .command(&["hibernate", &id])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start hangar hibernate");
    let mut seen: Vec<String> = Vec::new();
    wait_until("the container is stopping", ENGINE_DEADLINE, || {
        let now = api_state(&service.socket, &container);
        if let Some(s) = &now
            && seen.last() != Some(s)
        {
            seen.push(s.clone());
        }
        now.is_some_and(|s| s != "running")
    });
    let daemon = h.daemon_pid();
    // SAFETY: a plain kill of a pid this test's fixture started.
    unsafe { libc::kill(daemon, libc::SIGKILL) };
    assert_eq!(
        seen.last().map(String::as_str),
        Some("stopping"),
        "the daemon was killed during the stop: {seen:?}"
    );
    wait_until("the daemon is gone", DEADLINE, || !is_running(daemon));
    let _ = hibernate.wait();

    h.ok(&["ls"]);
    let row = wait_state_never_failed(&h, &id, &["live", "hibernated"]);
    if row["state"] == "hibernated" {
        h.ok(&["wake", &id]);
        wait_state_never_failed(&h, &id, &["live"]);
    }
    h.wait_screen(&id, &format!("session {psid} (resumed)"));
    assert_eq!(agents_of(&id).len(), 1, "one agent after the restart");
    assert_eq!(container_status(&container), "running");
}

/// The `podman system service` processes serving `socket`, from /proc.
fn services_on(socket: &Path) -> Vec<i32> {
    let listen = format!("unix://{}", socket.display());
    all_pids()
        .into_iter()
        .filter(|&p| is_running(p))
        .filter(|&p| {
            let c = cmdline(p);
            c.first().is_some_and(|a| a.ends_with("podman"))
                && c.iter().any(|a| a == "service")
                && c.iter().any(|a| a == &listen)
        })
        .collect()
}

/// Issue 44: `kind = "podman"` with no `socket`: hangar starts `podman
/// system service` itself on a socket of its own in a private folder under
/// HANGAR_HOME, the session runs through it, and it ends with the daemon:
/// after `hangar shutdown`, and after a SIGKILL of the daemon too (counted
/// from /proc).
#[test]
fn a_podman_engine_without_a_socket_runs_hangars_own_service_and_ends_it_with_the_daemon() {
    if !engines_here(
        "a_podman_engine_without_a_socket_runs_hangars_own_service_and_ends_it_with_the_daemon",
    ) {
        return;
    }
    // The fixture makes sure the test image is there (its own service).
    let (_service, _sweep, h) = engine_fixture();
    if h.daemon_pid_opt().is_some() {
        h.shutdown();
    }
    let config = engine_config(Path::new("unused"), "");
    let config: String = config
        .lines()
        .filter(|l| !l.starts_with("socket = "))
        .map(|l| format!("{l}\n"))
        .collect();
    h.write_config(&config);
    let socket = h.home.join("engines").join("pod").join("podman.sock");

    let id = h.json(&["new", "--engine", "pod"])["id"]
        .as_str()
        .expect("id")
        .to_owned();
    wait_state_never_failed(&h, &id, &["live"]);
    h.wait_screen(&id, "fake-agent claude session");
    h.ok(&["send", &id, "through hangars own podman"]);
    h.wait_screen(&id, "answer: through hangars own podman");
    let services = services_on(&socket);
    assert_eq!(services.len(), 1, "one service: {services:?}");
    let daemon = h.daemon_pid();
    assert_eq!(ppid(services[0]), Some(daemon), "the daemon's own child");
    {
        use std::os::unix::fs::PermissionsExt;
        let folder = socket.parent().expect("its folder");
        let mode = std::fs::metadata(folder)
            .expect("folder")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "{} is private", folder.display());
    }

    // A shutdown ends it.
    h.shutdown();
    wait_until("the service ended with the daemon", DEADLINE, || {
        services_on(&socket).is_empty()
    });

    // The next start runs a new one and restores the pane through it; a
    // SIGKILL of that daemon takes it along too.
    h.ok(&["ls"]);
    wait_state_never_failed(&h, &id, &["live"]);
    h.wait_screen(&id, "fake-agent claude session");
    assert_eq!(services_on(&socket).len(), 1, "one service again");
    let daemon = h.daemon_pid();
    // SAFETY: a plain kill of a pid this test's fixture started.
    unsafe { libc::kill(daemon, libc::SIGKILL) };
    wait_until("the daemon is gone", DEADLINE, || !is_running(daemon));
    wait_until("the service ended with the killed daemon", DEADLINE, || {
        services_on(&socket).is_empty()
    });
    // Its container is stopped by the bridge's hangup as before; the next
    // start restores it once more.
    wait_until("the old agent is gone", ENGINE_DEADLINE, || {
        agents_of(&id).is_empty()
    });
    h.ok(&["ls"]);
    wait_state_never_failed(&h, &id, &["live"]);
    h.shutdown();
    wait_until("no service is left", DEADLINE, || {
        services_on(&socket).is_empty()
    });
}
