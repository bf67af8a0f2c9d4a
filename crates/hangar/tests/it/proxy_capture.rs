//! Issue 7, end to end: hangar-fake-agent, started by hangar, calls a local
//! HTTPS test server (the stand-in for the provider API) through the
//! daemon's shared recording proxy.

use crate::proxy_support;
use crate::support;

use std::time::Duration;

use proxy_support::{
    ApiServer, all_capture_text, basic, capture_events, connect_status, env_of, write_proxy_config,
};
use serde_json::Value;
use support::{DEADLINE, Hangar, descendants_of};

const PAUSE: Duration = Duration::from_millis(60);

fn fixture(server_events: usize, extra_config: &str) -> (Hangar, ApiServer) {
    let h = Hangar::new();
    let server = ApiServer::start(&h.root, server_events, PAUSE);
    write_proxy_config(&h.home, &server, extra_config);
    (h, server)
}

/// Types `api <url> <text>` into a session and waits for its answer line.
fn call_api(h: &Hangar, id: &str, url: &str, text: &str) -> String {
    h.ok(&["send", id, &format!("api {url} {text}")]);
    wait_answer(h, id, text)
}

fn wait_answer(h: &Hangar, id: &str, text: &str) -> String {
    let mut screen = String::new();
    h.wait_until(
        &format!("{id} answered the api call {text}"),
        DEADLINE,
        || {
            screen = h.screen(id);
            screen.contains("api-done") || screen.contains("api-error")
        },
    );
    screen
}

fn wait_capture_end(h: &Hangar, id: &str) -> Vec<Value> {
    let mut events = Vec::new();
    h.wait_until(
        &format!("{id}'s capture has an end event"),
        DEADLINE,
        || {
            events = capture_events(&h.home, id);
            events.iter().any(|e| e["event"] == "end")
        },
    );
    events
}

#[test]
fn an_agent_call_streams_through_the_proxy_and_lands_in_its_own_capture_only() {
    let (h, server) = fixture(5, "");
    let id = h.new_agent(&["--provider", "claude"]);
    let other = h.new_agent(&["--provider", "claude"]);
    let url = format!("https://localhost:{}/v1/messages", server.port);

    let screen = call_api(&h, &id, &url, "hello-proxy");
    assert!(screen.contains("api-done 200"), "{screen}");
    assert!(
        screen.contains("hello-proxy part 4"),
        "the last chunk reached the agent: {screen}"
    );

    // The upstream got the agent's request, without the proxy's credentials.
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/messages");
    assert!(seen[0].headers.iter().any(|(k, _)| k == "authorization"));
    assert!(
        !seen[0]
            .headers
            .iter()
            .any(|(k, _)| k == "proxy-authorization")
    );

    let events = wait_capture_end(&h, &id);
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"request"));
    assert_eq!(kinds.get(1), Some(&"response"));
    assert_eq!(kinds.last(), Some(&"end"));
    let chunks: Vec<&Value> = events.iter().filter(|e| e["event"] == "chunk").collect();
    assert_eq!(
        chunks.len(),
        server.events,
        "every streamed chunk is recorded"
    );
    for (i, c) in chunks.iter().enumerate().skip(1) {
        assert!(
            c["data"]
                .as_str()
                .unwrap()
                .contains(&format!("hello-proxy part {i}")),
            "chunk {i}: {c}"
        );
    }
    assert_eq!(events[0]["method"], "POST");
    assert_eq!(events[0]["path"], "/v1/messages");
    assert!(events[0]["body"].as_str().unwrap().contains("hello-proxy"));
    assert_eq!(events[1]["status"], 200);
    assert!(events.iter().all(|e| e["session"] == id.as_str()));

    // Nowhere else: no other session has a capture.
    let dirs: Vec<String> = std::fs::read_dir(h.home.join("capture"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(dirs, vec![id.clone()]);
    assert!(capture_events(&h.home, &other).is_empty());

    // Credentials never reach a capture file.
    let text = all_capture_text(&h.home).to_lowercase();
    for secret in [
        "authorization",
        "x-api-key",
        "cookie",
        "sk-ant-fake",
        "0000secret",
    ] {
        assert!(!text.contains(secret), "a capture holds {secret:?}");
    }

    // Usage per turn, in ls and in the capture.
    let row = h.session(&id);
    assert_eq!(row["usage"]["requests"], 1, "{row}");
    assert_eq!(row["usage"]["input_tokens"], 25);
    assert_eq!(row["usage"]["output_tokens"], 28);
    assert_eq!(row["usage"]["errors"], 0);
    assert!(h.session(&other)["usage"].is_null());

    // `hangar capture` reads it back, by a prefix of the id.
    let doc = h.json(&["capture", &id[..8]]);
    assert_eq!(doc["session"], id.as_str());
    assert_eq!(doc["events"].as_array().unwrap().len(), events.len());
    let human = h.ok(&["capture", &id]);
    assert!(human.contains("> POST https://localhost"), "{human}");

    let status = h.status();
    assert_eq!(status["proxy"]["running"], true, "{status}");
    assert_eq!(status["proxy"]["sessions"], 2);
}

#[test]
fn two_agents_calling_at_once_are_each_attributed_to_their_own_session() {
    let h = Hangar::new();
    // Neither response starts before both requests are in: they overlap.
    let server = ApiServer::start_together(&h.root, 6, PAUSE, 2);
    write_proxy_config(&h.home, &server, "");
    let a = h.new_agent(&["--provider", "claude"]);
    let b = h.new_agent(&["--provider", "codex"]);
    let url = format!("https://localhost:{}/v1/messages", server.port);
    h.ok(&["send", &a, &format!("api {url} from-agent-a")]);
    h.ok(&["send", &b, &format!("api {url} from-agent-b")]);
    assert!(wait_answer(&h, &a, "from-agent-a").contains("api-done 200"));
    assert!(wait_answer(&h, &b, "from-agent-b").contains("api-done 200"));

    let ea = wait_capture_end(&h, &a);
    let eb = wait_capture_end(&h, &b);
    let text = |events: &[Value]| events.iter().map(Value::to_string).collect::<String>();
    let (ta, tb) = (text(&ea), text(&eb));
    assert!(ta.contains("from-agent-a") && !ta.contains("from-agent-b"));
    assert!(tb.contains("from-agent-b") && !tb.contains("from-agent-a"));
    assert_eq!(ea.iter().filter(|e| e["event"] == "chunk").count(), 6);
    assert_eq!(eb.iter().filter(|e| e["event"] == "chunk").count(), 6);
    // The two exchanges overlapped in time (the server saw to it):
    // attribution is by credential, not by order.
    let span = |events: &[Value]| {
        let ts: Vec<u64> = events.iter().filter_map(|e| e["ts"].as_u64()).collect();
        (*ts.iter().min().unwrap(), *ts.iter().max().unwrap())
    };
    let ((a0, a1), (b0, b1)) = (span(&ea), span(&eb));
    assert!(a0 < b1 && b0 < a1, "the calls did not overlap");
}

/// This machine's own name and the address it resolves to: a host name
/// that is not loopback by name, so no `NO_PROXY` entry covers it (as a
/// real API's host is not covered), yet the test server can listen on it.
fn a_name_of_this_machine() -> Option<(String, std::net::IpAddr)> {
    use std::net::ToSocketAddrs;
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim().to_owned();
    if name.is_empty() || name == "localhost" {
        return None;
    }
    let ip = (name.as_str(), 0).to_socket_addrs().ok()?.next()?.ip();
    std::net::TcpListener::bind((ip, 0)).ok()?;
    Some((name, ip))
}

#[test]
fn a_host_off_the_allow_list_is_tunnelled_untouched_and_not_captured() {
    let Some((name, ip)) = a_name_of_this_machine() else {
        hangar_testkit::required::missing(
            "a_host_off_the_allow_list_is_tunnelled_untouched_and_not_captured",
            "this machine's host name does not resolve to an address of its own",
        );
        return;
    };
    let h0 = Hangar::new();
    let server = ApiServer::start_named(&h0.root, 3, PAUSE, ip, &[&name]);
    // The agent sees the server's own certificate through the tunnel: let
    // the fake trust that CA too.
    let ca = server.ca_file.display().to_string();
    let h = Hangar::with_env(&[("FAKE_AGENT_CA_FILE", &ca)]);
    write_proxy_config(&h.home, &server, "");
    let id = h.new_agent(&["--provider", "claude"]);
    // Not on the allow-list (only "localhost" is), and not a loopback name:
    // the agent goes through the proxy, which must tunnel it untouched.
    let no_proxy = env_of(h.pid_of(&id), "NO_PROXY").expect("NO_PROXY is set");
    assert!(
        !no_proxy.split(',').any(|e| e.eq_ignore_ascii_case(&name)),
        "{no_proxy}"
    );
    assert!(env_of(h.pid_of(&id), "HTTPS_PROXY").is_some());
    let url = format!("https://{name}:{}/v1/messages", server.port);
    let screen = call_api(&h, &id, &url, "tunnelled-call");
    assert!(screen.contains("api-done 200"), "{screen}");
    assert!(screen.contains("tunnelled-call part 2"), "{screen}");
    assert_eq!(server.seen().len(), 1, "the request reached the server");
    assert!(capture_events(&h.home, &id).is_empty());
    assert!(!all_capture_text(&h.home).contains("tunnelled-call"));
    assert!(h.session(&id)["usage"].is_null());
}

#[test]
fn requests_without_valid_credentials_get_407_and_credentials_die_with_the_process() {
    let (h, server) = fixture(2, "");
    let id = h.new_agent(&["--provider", "claude"]);
    let port = h.status()["proxy"]["port"].as_u64().expect("proxy port") as u16;
    let target = format!("localhost:{}", server.port);
    let pid = h.pid_of(&id);
    let url = env_of(pid, "HTTPS_PROXY").expect("the agent has HTTPS_PROXY");
    assert_eq!(env_of(pid, "HTTP_PROXY").as_deref(), Some(url.as_str()));
    assert_eq!(env_of(pid, "https_proxy").as_deref(), Some(url.as_str()));
    let ca = env_of(pid, "NODE_EXTRA_CA_CERTS").expect("claude gets NODE_EXTRA_CA_CERTS");
    assert_eq!(
        ca,
        h.home.join("proxy").join("ca.pem").display().to_string()
    );
    assert_eq!(
        env_of(pid, "SSL_CERT_FILE"),
        None,
        "claude keeps the system trust"
    );
    let creds = url
        .strip_prefix("http://")
        .and_then(|r| r.rsplit_once('@'))
        .map(|(c, _)| c.to_owned())
        .expect("credentials in HTTPS_PROXY");
    assert!(creds.starts_with(&format!("{id}:")));
    assert!(url.ends_with(&format!("@127.0.0.1:{port}")));

    assert_eq!(connect_status(port, &target, None), 407);
    assert_eq!(
        connect_status(port, &target, Some(&basic(&format!("{id}:wrong")))),
        407
    );
    assert_eq!(connect_status(port, &target, Some("Basic not-base64")), 407);
    assert_eq!(connect_status(port, &target, Some(&basic(&creds))), 200);

    // The key file is private.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(h.home.join("proxy").join("ca.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    h.ok(&["hibernate", &id]);
    h.wait_until("the proxy holds no credentials", DEADLINE, || {
        h.status()["proxy"]["sessions"] == 0
    });
    assert_eq!(connect_status(port, &target, Some(&basic(&creds))), 407);
    assert!(server.seen().is_empty());
}

#[test]
fn codex_gets_a_bundle_of_the_system_trust_plus_hangars_ca() {
    let (h, _server) = fixture(1, "");
    let id = h.new_agent(&["--provider", "codex"]);
    let bundle = env_of(h.pid_of(&id), "SSL_CERT_FILE").expect("codex gets SSL_CERT_FILE");
    let text = std::fs::read_to_string(&bundle).unwrap();
    let ca = std::fs::read_to_string(h.home.join("proxy").join("ca.pem")).unwrap();
    assert!(text.ends_with(&ca));
    let system = std::fs::read_to_string("/etc/ssl/certs/ca-certificates.crt").unwrap_or_default();
    assert!(
        text.starts_with(&system),
        "the system bundle comes first, whole"
    );
}

#[test]
fn no_capture_and_non_agent_sessions_get_no_proxy() {
    let (h, _server) = fixture(1, "");
    let plain = h.new_agent(&["--provider", "claude", "--no-capture"]);
    let shell = h.new_agent(&["--provider", "shell"]);
    assert_eq!(env_of(h.pid_of(&plain), "HTTPS_PROXY"), None);
    assert_eq!(env_of(h.pid_of(&shell), "HTTPS_PROXY"), None);
    assert_eq!(
        h.status()["proxy"]["running"],
        false,
        "nothing used the proxy yet"
    );
}

#[test]
fn a_taken_port_starts_the_agent_without_capture_and_says_so() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let (h, _server) = fixture(1, &format!("port = {port}\n"));
    let id = h.new_agent(&["--provider", "claude"]);
    assert_eq!(h.state_of(&id), "live");
    assert_eq!(env_of(h.pid_of(&id), "HTTPS_PROXY"), None);
    let status = h.status();
    let notices = status["notices"].to_string();
    assert!(
        notices.contains("without capture") && notices.contains(&format!("127.0.0.1:{port}")),
        "{status}"
    );
    assert!(status["proxy"]["fault"].is_string());
}

#[test]
fn a_taken_port_fails_the_start_when_capture_is_required() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let (h, _server) = fixture(1, &format!("port = {port}\nrequired = true\n"));
    let out = h.json(&["new", "--provider", "claude"]);
    let id = out["id"].as_str().unwrap().to_owned();
    let row = h.session(&id);
    assert_eq!(row["state"], "failed", "{row}");
    assert!(
        row["reason"].as_str().unwrap().contains("required"),
        "{row}"
    );
    assert!(h.fake_agent_pids_for_home().is_empty());
}

#[test]
fn fifty_live_sessions_share_one_proxy_listener_and_add_no_process() {
    let (h, _server) = fixture(1, "[governor]\nwake_spacing_ms = 0\nwake_concurrency = 8\n");
    let mut ids = Vec::new();
    for i in 0..50 {
        if i % 10 == 0 {
            h.ok(&["tab", "new", &format!("t{i}")]);
        }
        ids.push(h.new_agent(&["--provider", "claude"]));
    }
    let daemon = h.daemon_pid();
    h.wait_until("50 sessions are live", DEADLINE, || {
        h.ls().iter().filter(|r| r["state"] == "live").count() == 50
    });
    let status = h.status();
    let port = status["proxy"]["port"].as_u64().unwrap();
    assert_eq!(status["proxy"]["sessions"], 50);

    // Exactly the 50 agents under the daemon: the proxy adds no process.
    // Counted once each agent is at its prompt: before it, an agent may
    // still be running its SessionStart hook (`/bin/sh -c 'hangar hook
    // ...'`), a descendant of the daemon that is not the proxy's.
    for id in &ids {
        h.wait_screen(id, "> ");
    }
    let agents = h.session_agent_pids();
    assert_eq!(agents.len(), 50);
    let mut sorted = agents.clone();
    sorted.sort_unstable();
    assert_eq!(
        descendants_of(daemon),
        sorted,
        "the daemon's descendants are its 50 agents"
    );

    // Every agent points at the same listener, with its own credentials.
    let mut tokens = std::collections::BTreeSet::new();
    for pid in &agents {
        let url = env_of(*pid, "HTTPS_PROXY").expect("HTTPS_PROXY");
        assert!(url.ends_with(&format!("@127.0.0.1:{port}")), "{url}");
        tokens.insert(url);
    }
    assert_eq!(tokens.len(), 50, "each session has its own credentials");

    // One listening socket on that port, owned by the daemon.
    let listening = std::fs::read_to_string("/proc/net/tcp")
        .unwrap()
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[3] == "0A" && f[1].ends_with(&format!(":{port:04X}"))
        })
        .count();
    assert_eq!(listening, 1);
}

/// Kills a `hangar capture --follow` child even when the test fails.
struct Follower {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Follower {
    fn start(h: &Hangar, id: &str) -> Follower {
        let mut child = h
            .command(&["capture", id, "--follow", "--json"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start hangar capture --follow");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Follower { child, lines }
    }

    /// Events printed so far, waiting until `done` holds for them.
    fn wait_for(&self, what: &str, mut done: impl FnMut(&[Value]) -> bool) -> Vec<Value> {
        let mut events: Vec<Value> = Vec::new();
        let deadline = std::time::Instant::now() + DEADLINE;
        while !done(&events) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(
                !left.is_zero(),
                "timed out waiting until {what}: {events:?}"
            );
            if let Ok(line) = self
                .lines
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                events.push(serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("--follow --json printed a line that is not JSON ({e}): {line}")
                }));
            }
        }
        events
    }
}

#[test]
fn capture_follow_prints_what_is_there_then_each_new_event_once_as_it_is_recorded() {
    let (h, server) = fixture(3, "");
    let id = h.new_agent(&["--provider", "claude"]);
    let url = format!("https://localhost:{}/v1/messages", server.port);
    assert!(call_api(&h, &id, &url, "before-follow").contains("api-done 200"));
    let before = wait_capture_end(&h, &id);

    let follower = Follower::start(&h, &id[..8]);
    let ends = |events: &[Value]| events.iter().filter(|e| e["event"] == "end").count();
    let shown = follower.wait_for("the existing exchange is printed", |e| ends(e) == 1);
    assert_eq!(shown, before, "the existing events, in order");

    // A second exchange while following: its events arrive as they are
    // recorded, each once.
    assert!(call_api(&h, &id, &url, "while-following").contains("api-done 200"));
    let more = follower.wait_for("the new exchange is printed", |e| ends(e) == 1);
    assert_eq!(
        more.first().map(|e| &e["event"]),
        Some(&Value::from("request"))
    );
    assert!(
        more[0]["body"]
            .as_str()
            .unwrap()
            .contains("while-following")
    );
    assert_eq!(more.iter().filter(|e| e["event"] == "chunk").count(), 3);
    let exchange = &more[0]["exchange"];
    assert!(
        more.iter()
            .all(|e| &e["exchange"] == exchange && e["session"] == id.as_str())
    );
    assert_ne!(exchange, &before[0]["exchange"]);
    let all = capture_events(&h.home, &id);
    assert_eq!(
        all.len(),
        before.len() + more.len(),
        "nothing repeated or lost"
    );
}

#[test]
fn usage_survives_a_daemon_restart_in_ls_and_status() {
    let (h, server) = fixture(4, "");
    let id = h.new_agent(&["--provider", "claude"]);
    let url = format!("https://localhost:{}/v1/messages", server.port);
    assert!(call_api(&h, &id, &url, "first-turn").contains("api-done 200"));
    assert!(call_api(&h, &id, &url, "second-turn").contains("api-done 200"));
    h.wait_until("both turns are counted", DEADLINE, || {
        h.session(&id)["usage"]["requests"] == 2
    });
    let before = h.session(&id)["usage"].clone();
    assert_eq!(before["input_tokens"], 50, "{before}");
    let status = h.status();
    assert_eq!(status["proxy"]["usage"]["requests"], 2, "{status}");
    assert_eq!(status["proxy"]["usage"]["input_tokens"], 50);
    assert_eq!(
        status["proxy"]["usage"]["output_tokens"],
        before["output_tokens"]
    );
    assert_eq!(status["proxy"]["usage"]["errors"], 0);

    h.shutdown();
    h.start_daemon();
    // Regression: usage lived only in memory and was zero after a restart.
    h.wait_until(
        "usage is read back from the capture files",
        DEADLINE,
        || h.session(&id)["usage"] == before,
    );
    let status = h.status();
    assert_eq!(status["proxy"]["usage"]["requests"], 2, "{status}");
    assert_eq!(
        status["proxy"]["usage"]["output_tokens"],
        before["output_tokens"]
    );
    let human = h.ok(&["status"]);
    assert!(
        human.contains(&format!(
            "usage    2 request(s), 50 input / {} output tokens, 0 error(s)",
            before["output_tokens"]
        )),
        "{human}"
    );

    // New turns add to the restored figures, counted once.
    assert!(call_api(&h, &id, &url, "third-turn").contains("api-done 200"));
    h.wait_until("the third turn is counted once", DEADLINE, || {
        h.session(&id)["usage"]["requests"] == 3
    });
    assert_eq!(h.status()["proxy"]["usage"]["input_tokens"], 75);
}

#[test]
fn status_shows_fleet_errors_and_the_latest_one() {
    let (h, _server) = fixture(2, "");
    let id = h.new_agent(&["--provider", "claude"]);
    // Nothing listens there: the proxy cannot reach the upstream.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("https://localhost:{port}/v1/messages");
    h.ok(&["send", &id, &format!("api {url} into-the-void")]);
    h.wait_until("the failed call is counted", DEADLINE, || {
        h.status()["proxy"]["usage"]["errors"] == 1
    });
    let status = h.status();
    let p = &status["proxy"];
    assert_eq!(p["usage"]["requests"], 1, "{status}");
    assert!(
        p["usage"]["last_error"]
            .as_str()
            .unwrap()
            .contains("upstream"),
        "{status}"
    );
    assert_eq!(p["last_error_session"], id.as_str());
    let human = h.ok(&["status"]);
    assert!(human.contains("1 error(s)"), "{human}");
    assert!(
        human.contains(&format!("last error ({})", &id[..8])),
        "{human}"
    );
}

/// The TCP ports `pid` listens on (from its socket fds and /proc/net).
fn listening_ports(pid: i32) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .filter_map(|l| {
                    let l = l.to_string_lossy().into_owned();
                    l.strip_prefix("socket:[")?
                        .strip_suffix(']')
                        .map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default();
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .skip(1)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let listening = f.len() > 9 && f[3] == "0A" && inodes.iter().any(|i| i == f[9]);
            listening.then(|| u16::from_str_radix(f[1].rsplit(':').next()?, 16).ok())?
        })
        .collect()
}

#[test]
fn with_the_proxy_disabled_in_config_agents_get_no_proxy_and_nothing_listens() {
    let (h, _server) = fixture(1, "enabled = false\n");
    let claude = h.new_agent(&["--provider", "claude"]);
    let codex = h.new_agent(&["--provider", "codex"]);
    h.wait_until("both agents run", DEADLINE, || {
        h.session_agent_pids().len() == 2
    });
    for id in [&claude, &codex] {
        let pid = h.pid_of(id);
        for var in [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "NODE_EXTRA_CA_CERTS",
            "SSL_CERT_FILE",
        ] {
            assert_eq!(env_of(pid, var), None, "{id} got {var}");
        }
    }
    let status = h.status();
    assert_eq!(status["proxy"]["enabled"], false, "{status}");
    assert_eq!(status["proxy"]["running"], false);
    assert!(status["proxy"]["port"].is_null());
    assert!(h.ok(&["status"]).contains("off ([proxy] enabled = false)"));
    // The daemon listens on no TCP port at all (its socket is a Unix one).
    assert_eq!(listening_ports(h.daemon_pid()), Vec::<u16>::new());
    assert!(
        !h.home.join("proxy").join("ca.key").exists(),
        "no CA was even made"
    );
}

#[test]
fn a_provider_id_seen_only_in_a_request_header_is_provisional_and_never_resumed() {
    // No transcript: the request header is the only place the id shows.
    let h = Hangar::with_env(&[("FAKE_AGENT_NO_TRANSCRIPT", "1")]);
    let server = ApiServer::start(&h.root, 2, PAUSE);
    write_proxy_config(&h.home, &server, "");
    let id = h.new_agent(&["--provider", "codex"]);
    let url = format!("https://localhost:{}/v1/responses", server.port);
    assert!(call_api(&h, &id, &url, "header-only").contains("api-done 200"));
    let events = wait_capture_end(&h, &id);
    let sent = events[0]["headers"]["session_id"]
        .as_str()
        .expect("the request carried codex's session_id header")
        .to_owned();
    h.wait_until("ls shows the header's id", DEADLINE, || {
        h.session(&id)["provider_session_id"] == sent.as_str()
    });
    assert_eq!(h.session(&id)["provider_session_source"], "proxy-header");

    h.ok(&["hibernate", &id]);
    h.wait_state(&id, "hibernated");
    h.ok(&["wake", &id]);
    h.wait_state(&id, "live");
    let args = support::cmdline(h.pid_of(&id));
    assert!(
        !args.iter().any(|a| a == "resume" || a == &sent),
        "a provisional id was used to resume: {args:?}"
    );
}

#[test]
fn codex_bundle_follows_a_system_ca_update() {
    let h = Hangar::new();
    let server = ApiServer::start(&h.root, 1, PAUSE);
    let system = h.root.join("system-roots.pem");
    std::fs::write(&system, "# system roots v1\n").unwrap();
    write_proxy_config(
        &h.home,
        &server,
        &format!("system_ca_bundle = {:?}\n", system.display().to_string()),
    );
    let ca = || std::fs::read_to_string(h.home.join("proxy").join("ca.pem")).unwrap();
    let first = h.new_agent(&["--provider", "codex"]);
    let bundle = env_of(h.pid_of(&first), "SSL_CERT_FILE").expect("codex gets SSL_CERT_FILE");
    let text = std::fs::read_to_string(&bundle).unwrap();
    assert!(text.starts_with("# system roots v1\n"), "{text}");
    assert!(text.ends_with(&ca()));

    // Regression: the bundle was made once and never again, so a CA update
    // on the system never reached codex.
    std::fs::write(&system, "# system roots v2\n").unwrap();
    let made = std::fs::metadata(&bundle).unwrap().modified().unwrap();
    std::fs::File::options()
        .write(true)
        .open(&system)
        .unwrap()
        .set_modified(made + Duration::from_secs(10))
        .unwrap();
    let second = h.new_agent(&["--provider", "codex"]);
    assert_eq!(
        env_of(h.pid_of(&second), "SSL_CERT_FILE").as_deref(),
        Some(bundle.as_str())
    );
    let text = std::fs::read_to_string(&bundle).unwrap();
    assert!(text.starts_with("# system roots v2\n"), "{text}");
    assert!(!text.contains("roots v1"), "{text}");
    assert!(text.ends_with(&ca()));
}

#[test]
fn without_a_system_ca_bundle_codex_starts_without_capture_and_says_so() {
    let (h, _server) = fixture(1, "system_ca_bundle = \"/nonexistent/roots.pem\"\n");
    let codex = h.new_agent(&["--provider", "codex"]);
    let claude = h.new_agent(&["--provider", "claude"]);
    assert_eq!(h.state_of(&codex), "live");
    let pid = h.pid_of(&codex);
    // Regression: codex got a bundle of hangar's CA alone, which broke
    // git, pip and curl inside it.
    assert_eq!(env_of(pid, "SSL_CERT_FILE"), None);
    assert_eq!(env_of(pid, "HTTPS_PROXY"), None);
    assert!(!h.home.join("proxy").join("ca-bundle.pem").exists());
    let status = h.status();
    let notices = status["notices"].to_string();
    assert!(
        notices.contains("without capture") && notices.contains("no system CA bundle"),
        "{status}"
    );
    // Claude adds hangar's CA to its trust instead: it keeps capture.
    assert!(env_of(h.pid_of(&claude), "HTTPS_PROXY").is_some());
    assert!(env_of(h.pid_of(&claude), "NODE_EXTRA_CA_CERTS").is_some());
}

#[test]
fn a_loopback_host_named_in_allow_hosts_is_captured_not_sent_around_the_proxy() {
    // A local model gateway (LiteLLM, claude-code-router) on localhost:
    // `allow_hosts = ["localhost"]` (the support's config) wins over the
    // loopback names every agent gets in NO_PROXY, which the fake agent
    // honours as the real CLIs' HTTP stacks do.
    let (h, server) = fixture(2, "");
    let id = h.new_agent(&["--provider", "claude"]);
    let no_proxy = env_of(h.pid_of(&id), "NO_PROXY").expect("NO_PROXY is set");
    let entries: Vec<&str> = no_proxy.split(',').collect();
    assert!(!entries.contains(&"localhost"), "{no_proxy}");
    assert!(entries.contains(&"127.0.0.1"), "{no_proxy}");
    let url = format!("https://localhost:{}/v1/messages", server.port);
    let screen = call_api(&h, &id, &url, "gateway-call");
    assert!(screen.contains("api-done 200"), "{screen}");
    assert!(all_capture_text(&h.home).contains("gateway-call"));
}
