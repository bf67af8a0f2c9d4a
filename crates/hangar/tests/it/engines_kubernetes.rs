//! Sessions on a Kubernetes engine (issue 32), against the fake API server
//! of `kube_support` (no real API server can be installed on this
//! project's machines; README says so): the fake agent runs in one pod per
//! session, `exec`ed with a TTY over the exec WebSocket (v5.channel.k8s.io),
//! its answer on screen, its terminal sized like the pane and resized with
//! it; hibernate deletes the pod and keeps the volume claim, wake makes the
//! pod again and resumes the conversation from the claim, close deletes
//! both; labels on everything; a missing image, an API server that is not
//! there and a refused token are `failed` sessions with the server's words
//! and no local agent; a restart deletes this home's leftovers and never
//! another home's, and restores a crashed daemon's pane.
//!
//! The fake's kubelet runs each exec in bubblewrap (the pod's volumes at
//! their paths, a pid namespace of its own): without `bwrap` each test says
//! so in one line and passes, unless `HANGAR_TESTS_REQUIRED=1`.

use crate::kube_support;
use crate::pty_screen;
use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube_support::FakeApiServer;
use pty_screen::PtyApp;
use serde_json::json;
use support::*;

/// The image the fake node has.
const IMAGE: &str = "localhost/hangar-test-kube";
const ENGINE_DEADLINE: Duration = Duration::from_secs(60);

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
}

/// Whether the machine has what the fake kubelet needs; one line says why
/// not.
fn kubelet_here(test: &str) -> bool {
    if on_path("bwrap") {
        return true;
    }
    let why = "bwrap not installed (Debian: apt-get install bubblewrap)";
    hangar_testkit::required::missing(&format!("engines_kubernetes::{test}"), why);
    false
}

/// `[engines.k8s]` for `api`: the target folder (the fake agent) mounted
/// read-only at the same path, as a registry image would carry the CLI.
fn engine_config(kubeconfig: &Path, extra: &str) -> String {
    let fake = fake_agent_bin();
    let target = fake.parent().expect("target folder").display().to_string();
    format!(
        r#"[engines.k8s]
kind = "kubernetes"
kubeconfig = "{kubeconfig}"
image = "{IMAGE}"
mounts = ["{target}:{target}:ro"]
programs = {{ claude = "{fake}" }}
stop_timeout_secs = 2
start_timeout_secs = 20
{extra}"#,
        kubeconfig = kubeconfig.display(),
        fake = fake.display(),
    )
}

fn home_hash(h: &Hangar) -> String {
    hangar_core::engine::home_hash(&h.home.display().to_string())
}

fn new_on(h: &Hangar, args: &[&str]) -> String {
    let mut all = vec!["new"];
    all.extend_from_slice(args);
    h.json(&all)["id"].as_str().expect("id").to_owned()
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

/// Host pids of fake agents carrying `session`'s id.
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

/// The size the session reported last on `app`'s screen (`COLSxROWS`).
fn last_size_answer(app: &PtyApp) -> Option<String> {
    app.rows()
        .iter()
        .rev()
        .find_map(|r| r.split("size: ").nth(1).map(|s| s.trim().to_owned()))
}

#[test]
fn an_agent_in_a_pod_answers_resizes_hibernates_wakes_and_closes() {
    if !kubelet_here("an_agent_in_a_pod_answers_resizes_hibernates_wakes_and_closes") {
        return;
    }
    let api = FakeApiServer::start(&[IMAGE]);
    let h = Hangar::new();
    h.write_config(&engine_config(&api.kubeconfig, ""));
    let id = new_on(&h, &["--engine", "k8s"]);
    let row = wait_engine_state(&h, &id, "live");
    let pod = format!("hangar-{id}");
    let claim = format!("hangar-{id}-home");
    assert_eq!(
        row["engine"],
        json!({"name": "k8s", "kind": "kubernetes", "pod": pod, "image": IMAGE}),
        "ls --json names the engine: {row}"
    );
    h.wait_screen(&id, "fake-agent claude session");

    // The pod and its claim as the API server holds them: labelled, no
    // service account token, the image never pulled.
    let (pod_obj, claim_obj) =
        api.with(|c| (c.pods.get(&pod).cloned(), c.claims.get(&claim).cloned()));
    let pod_obj = pod_obj.expect("the pod exists");
    let claim_obj = claim_obj.expect("the claim exists");
    for labels in [
        &pod_obj["metadata"]["labels"],
        &claim_obj["metadata"]["labels"],
    ] {
        assert_eq!(labels["hangar.session"], id.as_str());
        assert_eq!(labels["hangar.home"], home_hash(&h).as_str());
    }
    assert_eq!(
        pod_obj["metadata"]["namespace"], "agents",
        "the kubeconfig's namespace"
    );
    assert_eq!(pod_obj["spec"]["automountServiceAccountToken"], false);
    assert_eq!(pod_obj["spec"]["containers"][0]["imagePullPolicy"], "Never");

    // The agent was exec'd over the v5 WebSocket, its variables through env.
    let (protocols, execs, unauthorized) =
        api.with(|c| (c.protocols.clone(), c.execs.clone(), c.unauthorized));
    assert_eq!(protocols, ["v5.channel.k8s.io"]);
    assert_eq!(&execs[0][..2], ["env", "--"]);
    assert!(
        execs[0].contains(&format!("HANGAR_SESSION_ID={id}")),
        "{:?}",
        execs[0]
    );
    assert_eq!(unauthorized, 0, "hangar sent the kubeconfig's token");

    // It runs in the pod, not beside the daemon; the session's own process
    // is the bridge.
    let agents = agents_of(&id);
    assert_eq!(agents.len(), 1, "one agent for the session: {agents:?}");
    assert_ne!(
        pid_namespace(agents[0]),
        pid_namespace(std::process::id() as i32)
    );
    assert!(cmdline(h.pid_of(&id)).iter().any(|a| a == "engine-exec"));

    // Bytes both ways; the terminal-size channel carries the pane's size.
    h.ok(&["send", &id, "hello"]);
    h.wait_screen(&id, "answer: hello");
    h.ok(&["send", &id, "size"]);
    h.wait_screen(&id, "size: 120x40");
    assert!(api.with(|c| c.resizes.contains(&(120, 40))));

    // A resize after the start: an attached 100x30 terminal makes the
    // pane, and so the pod's TTY, 100x30.
    let mut app = PtyApp::spawn(h.command(&["attach", &id]), 30, 100);
    app.wait_text("fake-agent claude session");
    h.wait_until("the pod's TTY follows the pane", DEADLINE, || {
        app.write(b"size\r");
        std::thread::sleep(Duration::from_millis(200));
        last_size_answer(&app).as_deref() == Some("100x30")
    });
    assert!(api.with(|c| c.resizes.contains(&(100, 30))));
    drop(app);

    let psid = row["provider_session_id"]
        .as_str()
        .expect("a provider id")
        .to_owned();

    // Hibernate deletes the pod and keeps the claim, with the conversation.
    h.ok(&["hibernate", &id]);
    wait_engine_state(&h, &id, "hibernated");
    h.wait_until("the pod is deleted", ENGINE_DEADLINE, || {
        api.with(|c| !c.pods.contains_key(&pod))
    });
    assert!(
        api.with(|c| c.claims.contains_key(&claim)),
        "the claim is kept"
    );
    wait_until("the agent is gone", DEADLINE, || agents_of(&id).is_empty());
    // The conversation is in the session's state folder on this machine
    // (mounted into the pod as in a sandbox), where hangar reads it.
    let transcripts = files_under(&h.home.join("sandbox").join(&id).join("claude"));
    assert!(
        transcripts
            .iter()
            .any(|p| p.to_string_lossy().contains(&psid)),
        "the conversation is in its state folder: {transcripts:?}"
    );

    // Wake makes the pod again and resumes the same conversation.
    h.ok(&["wake", &id]);
    let woke = wait_engine_state(&h, &id, "live");
    h.wait_screen(&id, &format!("session {psid} (resumed)"));
    assert_eq!(woke["provider_session_id"], psid.as_str());
    assert!(api.with(|c| c.pods.contains_key(&pod)));

    // Close deletes the pod and the claim.
    h.ok(&["close", &id]);
    h.wait_until("the pod and claim are deleted", ENGINE_DEADLINE, || {
        api.with(|c| !c.pods.contains_key(&pod) && !c.claims.contains_key(&claim))
    });
    wait_until("no agent left", DEADLINE, || agents_of(&id).is_empty());
}

#[test]
fn kubernetes_errors_fail_the_session_with_the_servers_words_and_run_nothing_here() {
    if !kubelet_here(
        "kubernetes_errors_fail_the_session_with_the_servers_words_and_run_nothing_here",
    ) {
        return;
    }
    let api = FakeApiServer::start(&[IMAGE]);
    let h = Hangar::new();
    // A kubeconfig with the wrong token, and one whose server is not there.
    let text = std::fs::read_to_string(&api.kubeconfig).expect("kubeconfig");
    let wrong = h.root.join("wrong-token.kubeconfig");
    std::fs::write(&wrong, text.replace(&api.token, "not-the-token")).expect("write");
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let gone = h.root.join("gone.kubeconfig");
    std::fs::write(
        &gone,
        text.replace(&api.url, &format!("http://127.0.0.1:{closed}")),
    )
    .expect("write");
    h.write_config(&format!(
        "{}\n[engines.refused]\nkind = \"kubernetes\"\nkubeconfig = \"{}\"\nimage = \"{IMAGE}\"\n\
         [engines.gone]\nkind = \"kubernetes\"\nkubeconfig = \"{}\"\nimage = \"{IMAGE}\"\n",
        engine_config(&api.kubeconfig, ""),
        wrong.display(),
        gone.display()
    ));

    // An image the node does not have: the kubelet's ErrImageNeverPull, and
    // no pull.
    let missing = new_on(
        &h,
        &["--engine", "k8s", "--image", "localhost/no-such-image"],
    );
    let row = wait_engine_state(&h, &missing, "failed");
    let reason = row["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("ErrImageNeverPull")
            && reason.contains("is not present with pull policy of Never"),
        "the kubelet's words: {reason}"
    );

    // A token the API server refuses.
    let refused = new_on(&h, &["--engine", "refused"]);
    let row = wait_engine_state(&h, &refused, "failed");
    let reason = row["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("Unauthorized"), "{reason}");

    // An API server that is not there.
    let unreachable = new_on(&h, &["--engine", "gone"]);
    let row = wait_engine_state(&h, &unreachable, "failed");
    let reason = row["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("engine gone"), "{reason}");

    // Never a local agent instead (DESIGN.md rule 14), also on a retry.
    assert!(!h.run(&["wake", &unreachable]).status.success());
    assert!(
        h.fake_agent_pids_for_home().is_empty(),
        "no agent ran on this machine"
    );
}

#[test]
fn a_start_deletes_its_own_leftover_pods_and_claims_and_never_another_homes() {
    if !kubelet_here("a_start_deletes_its_own_leftover_pods_and_claims_and_never_another_homes") {
        return;
    }
    let api = FakeApiServer::start(&[IMAGE]);
    let h = Hangar::new();
    h.write_config(&engine_config(&api.kubeconfig, ""));
    let mine = home_hash(&h);
    api.put_pod(
        "hangar-closed-long-ago",
        json!({"hangar.home": mine, "hangar.session": "closed-long-ago"}),
    );
    api.put_claim(
        "hangar-closed-long-ago-home",
        json!({"hangar.home": mine, "hangar.session": "closed-long-ago"}),
    );
    // A hibernated session's claim has no pod: a leftover all the same.
    // (Names as hangar makes them: hangar-<session>, hangar-<session>-home.)
    api.put_claim(
        "hangar-also-closed-home",
        json!({"hangar.home": mine, "hangar.session": "also-closed"}),
    );
    api.put_pod(
        "hangar-theirs",
        json!({"hangar.home": "another-home", "hangar.session": "someone-elses"}),
    );
    api.put_claim(
        "hangar-theirs-home",
        json!({"hangar.home": "another-home", "hangar.session": "someone-elses"}),
    );

    h.ok(&["ls"]);
    h.wait_until("this home's leftovers are deleted", ENGINE_DEADLINE, || {
        api.with(|c| {
            !c.pods.contains_key("hangar-closed-long-ago")
                && !c.claims.contains_key("hangar-closed-long-ago-home")
                && !c.claims.contains_key("hangar-also-closed-home")
        })
    });
    api.with(|c| {
        assert!(
            c.pods.contains_key("hangar-theirs"),
            "another home's pod stays"
        );
        assert!(c.claims.contains_key("hangar-theirs-home"));
    });
}

#[test]
fn a_restart_after_a_crash_restores_the_pod_agent_and_resumes_it() {
    if !kubelet_here("a_restart_after_a_crash_restores_the_pod_agent_and_resumes_it") {
        return;
    }
    let api = FakeApiServer::start(&[IMAGE]);
    let h = Hangar::new();
    h.write_config(&engine_config(&api.kubeconfig, ""));
    let id = new_on(&h, &["--engine", "k8s"]);
    let row = wait_engine_state(&h, &id, "live");
    h.wait_screen(&id, "fake-agent claude session");
    h.ok(&["send", &id, "before the crash"]);
    h.wait_screen(&id, "answer: before the crash");
    let psid = row["provider_session_id"]
        .as_str()
        .expect("a provider id")
        .to_owned();

    let daemon = h.daemon_pid();
    // SAFETY: a plain kill of a pid this test's fixture started.
    unsafe { libc::kill(daemon, libc::SIGKILL) };
    wait_until("the daemon is gone", DEADLINE, || !is_running(daemon));
    wait_until("the old agent is gone", ENGINE_DEADLINE, || {
        agents_of(&id).is_empty()
    });

    let ls = h.run(&["ls"]);
    assert!(
        ls.status.success(),
        "`hangar ls` after the crash failed: {}\nthe new daemon's log:\n{}",
        String::from_utf8_lossy(&ls.stderr),
        std::fs::read_to_string(h.home.join("daemon.log")).unwrap_or_default()
    );
    let woke = wait_engine_state(&h, &id, "live");
    h.wait_screen(&id, &format!("session {psid} (resumed)"));
    assert_eq!(woke["provider_session_id"], psid.as_str());
    assert_eq!(agents_of(&id).len(), 1, "one agent after the restore");
    assert!(api.with(|c| c.pods.contains_key(&format!("hangar-{id}"))));
}

/// Whether any file under `dir` holds `needle`.
fn holds(dir: &Path, needle: &str) -> bool {
    files_under(dir)
        .iter()
        .any(|p| std::fs::read(p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle)))
}

#[test]
fn a_fork_of_an_agent_in_a_pod_runs_in_a_pod_of_its_own_and_forks_its_conversation() {
    if !kubelet_here(
        "a_fork_of_an_agent_in_a_pod_runs_in_a_pod_of_its_own_and_forks_its_conversation",
    ) {
        return;
    }
    let api = FakeApiServer::start(&[IMAGE]);
    let h = Hangar::new();
    h.write_config(&engine_config(&api.kubeconfig, ""));
    let parent = new_on(&h, &["--engine", "k8s"]);
    wait_engine_state(&h, &parent, "live");
    h.wait_screen(&parent, "fake-agent claude session");
    h.ok(&["send", &parent, "parent-in-a-pod"]);
    h.wait_screen(&parent, "answer: parent-in-a-pod");
    let psid = h.wait_transcript_id(&parent);
    let parent_state = h.home.join("sandbox").join(&parent).join("claude");

    let id = h.json(&["fork", &parent])["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let row = wait_engine_state(&h, &id, "live");
    let pod = format!("hangar-{id}");
    assert_eq!(row["engine"]["name"], "k8s", "{row}");
    assert_eq!(row["engine"]["pod"], pod.as_str(), "{row}");
    assert!(
        api.with(|c| c.pods.contains_key(&pod)),
        "the fork's own pod"
    );
    h.wait_screen(&id, &format!("(forked from {psid})"));
    let agents = agents_of(&id);
    assert_eq!(agents.len(), 1, "{agents:?}");
    assert_ne!(
        pid_namespace(agents[0]),
        pid_namespace(std::process::id() as i32)
    );
    h.ok(&["send", &id, "fork-in-a-pod"]);
    h.wait_screen(&id, "answer: fork-in-a-pod");
    let own_state = h.home.join("sandbox").join(&id).join("claude");
    assert!(holds(&own_state, "parent-in-a-pod"));
    assert!(holds(&own_state, "fork-in-a-pod"));
    assert!(!holds(&parent_state, "fork-in-a-pod"));
}
