//! Issue 21 acceptance over plain HTTP: who may use `hangar web` and what
//! its API answers. Each test runs the real daemon and a real `hangar web`
//! in its own `HANGAR_HOME`.
//!
//! 401 without (or with a wrong) credential; the pairing URL's cookie is
//! HttpOnly and SameSite=Strict; 403 for a state-changing request or a
//! WebSocket from another Origin, and for anything but looking with a
//! read-only token; 429 after failed logins; `--revoke` ends every pairing of
//! a running server; no token in the process list or in hangar's files; a
//! non-loopback listen needs TLS or `--insecure-lan`. The API's JSON is the
//! CLI's.

use crate::pty_screen;
use crate::support;
use crate::web_support;

use serde_json::{Value, json};
use support::*;
use web_support::{WebServer, http};

fn ws_upgrade_headers<'a>(origin: &'a str, cookie: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ("Origin", origin),
        ("Cookie", cookie),
    ]
}

#[test]
fn every_request_needs_the_token_and_the_pairing_cookie_is_httponly_and_strict() {
    let h = Hangar::new();
    h.new_agent(&["--provider", "shell", "--title", "one"]);
    let web = WebServer::start(&h, &[]);
    assert!(!web.read_only);
    assert!(web.url.starts_with("http://127.0.0.1:"), "{}", web.url);
    assert_eq!(web.token.len(), 64);

    for path in ["/api/sessions", "/", "/assets/app.js", "/assets/xterm.js"] {
        let r = http("GET", &format!("{}{path}", web.base), &[], None);
        assert_eq!(r.status, 401, "{path} without a token");
    }
    let r = http(
        "GET",
        &format!("{}/api/sessions", web.base),
        &[("Authorization", "Bearer not-the-token")],
        None,
    );
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["error"]["code"], "unauthorized");

    // The printed URL pairs: a redirect that drops the token, and a cookie
    // the page's scripts cannot read and other sites never send.
    let r = http("GET", &web.url, &[], None);
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/"));
    let cookie = r.header("set-cookie").expect("cookie").to_owned();
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attr), "{cookie} lacks {attr}");
    }
    assert!(
        !cookie.contains(&web.token),
        "the cookie is the browser's own secret, not the token"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();
    let page = http("GET", &format!("{}/", web.base), &[("Cookie", &pair)], None);
    assert_eq!(page.status, 200);
    assert!(page.text().contains("/assets/xterm.js"));
    // A strict CSP: scripts from this server only, nothing inline, no framing.
    let csp = page
        .header("content-security-policy")
        .expect("CSP")
        .to_owned();
    let script_src = csp
        .split(';')
        .find(|d| d.trim().starts_with("script-src"))
        .expect("script-src");
    assert_eq!(script_src.trim(), "script-src 'self'");
    assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"));
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    // xterm.js is served from the binary.
    let js = http(
        "GET",
        &format!("{}/assets/xterm.js", web.base),
        &[("Cookie", &pair)],
        None,
    );
    assert_eq!(js.status, 200);
    assert!(js.text().contains("xterm"), "vendored xterm.js");
    assert!(
        js.header("content-type")
            .unwrap_or_default()
            .starts_with("text/javascript")
    );
}

#[test]
fn the_api_answers_with_the_clis_json_and_its_actions_act() {
    let h = Hangar::new();
    let a = h.new_agent(&["--provider", "shell", "--title", "api one"]);
    let web = WebServer::start(&h, &[]);

    // GET /api/sessions is `hangar ls --json` (polled until two reads agree:
    // activity may move between them).
    h.wait_until("the API's list equals `hangar ls --json`", DEADLINE, || {
        let api = web.get("/api/sessions").json();
        api == h.json(&["ls"])
    });
    let screen = web.get(&format!("/api/sessions/{a}/screen"));
    assert_eq!(screen.status, 200);
    assert_eq!(screen.json()["id"], json!(a));
    assert_eq!(
        web.get("/api/tabs").json(),
        h.json(&["tab", "ls"]),
        "GET /api/tabs is `hangar tab ls --json`"
    );

    let r = web.post(
        &format!("/api/sessions/{a}/send"),
        &json!({"text": "echo sent-$((4*4))"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    h.wait_screen(&a, "sent-16");
    let shown = web.get(&format!("/api/sessions/{a}/screen")).json();
    assert!(shown["screen"].as_str().unwrap().contains("sent-16"));

    // Keys are keys, not pasted text: Ctrl-C interrupts.
    web.post(
        &format!("/api/sessions/{a}/send"),
        &json!({"text": "sleep 300; echo missed-$((2+5))"}),
    );
    h.wait_until("sleep runs", DEADLINE, || {
        h.screen(&a).contains("sleep 300")
    });
    let r = web.post(&format!("/api/sessions/{a}/interrupt"), &json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    let begun = std::time::Instant::now();
    loop {
        let screen = h.screen(&a);
        if screen.trim_end().ends_with("^C\n#") {
            break;
        }
        assert!(
            begun.elapsed() < DEADLINE,
            "the interrupt did not end sleep within {DEADLINE:?}; screen:\n{screen}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let r = web.post(
        &format!("/api/sessions/{a}/keys"),
        &json!({"keys": ["e", "c", "h", "o", " ", "k", "e", "y", "s", "enter"]}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    h.wait_screen(&a, "keys\n");
    assert!(!h.screen(&a).contains("missed-7"));
    let r = web.post(
        &format!("/api/sessions/{a}/keys"),
        &json!({"keys": ["f13"]}),
    );
    assert_eq!(r.status, 400);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("f13")
    );

    // Park, unpark, hibernate, wake: `hangar ls` sees each.
    assert_eq!(
        web.post(&format!("/api/sessions/{a}/park"), &json!({}))
            .status,
        200
    );
    assert_eq!(h.session(&a)["placement"], "parked");
    assert_eq!(
        web.post(&format!("/api/sessions/{a}/unpark"), &json!({}))
            .status,
        200
    );
    assert_eq!(h.session(&a)["placement"], "pane");
    assert_eq!(
        web.post(&format!("/api/sessions/{a}/hibernate"), &json!({}))
            .status,
        200
    );
    h.wait_state(&a, "hibernated");
    assert_eq!(
        web.post(&format!("/api/sessions/{a}/wake"), &json!({}))
            .status,
        200
    );
    h.wait_state(&a, "live");

    // Bad input: a clear error, and the server and daemon stay up.
    let r = web.post("/api/sessions/nope/send", &json!({"text": "x"}));
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["code"], "not_found");
    let r = http(
        "POST",
        &format!("{}/api/sessions/{a}/send", web.base),
        &[
            ("Authorization", &format!("Bearer {}", web.token)),
            ("Content-Type", "application/json"),
        ],
        Some(b"{not json"),
    );
    assert!(r.status == 400 || r.status == 422, "{}", r.status);
    assert_eq!(web.get("/api/sessions").status, 200);
}

#[test]
fn cross_origin_writes_and_websockets_are_forbidden_and_scripts_need_no_origin() {
    let h = Hangar::new();
    let a = h.new_agent(&["--provider", "shell"]);
    let web = WebServer::start(&h, &[]);
    let cookie = web.pair_cookie();
    let send = format!("{}/api/sessions/{a}/send", web.base);
    let body = json!({"text": "echo from-$((8*8))"}).to_string();
    let own = format!("http://{}", web.host());
    let post = |headers: &[(&str, &str)]| {
        let mut all = vec![("Content-Type", "application/json")];
        all.extend_from_slice(headers);
        http("POST", &send, &all, Some(body.as_bytes())).status
    };
    // A browser's cookie from another site, or with no Origin: refused.
    assert_eq!(
        post(&[("Cookie", &cookie), ("Origin", "http://evil.example")]),
        403
    );
    assert_eq!(post(&[("Cookie", &cookie)]), 403);
    assert_eq!(
        post(&[
            ("Cookie", &cookie),
            ("Origin", &format!("https://{}", web.host()))
        ]),
        403,
        "the scheme is part of the origin"
    );
    // A WebSocket from another site: refused before any upgrade.
    let attach = format!("{}/api/sessions/{a}/attach?cols=80&rows=24", web.base);
    let r = http(
        "GET",
        &attach,
        &ws_upgrade_headers("http://evil.example", &cookie),
        None,
    );
    assert_eq!(r.status, 403);
    assert_eq!(r.json()["error"]["code"], "bad_origin");
    assert!(!h.screen(&a).contains("from-64"));
    // The page's own origin works, for writes and for the terminal socket.
    assert_eq!(post(&[("Cookie", &cookie), ("Origin", &own)]), 200);
    h.wait_screen(&a, "from-64");
    let r = http("GET", &attach, &ws_upgrade_headers(&own, &cookie), None);
    assert_eq!(r.status, 101, "{}", r.text());
    // A script with the Bearer token needs no Origin (no browser sends that
    // header cross-site, so there is nothing to forge).
    let bearer = format!("Bearer {}", web.token);
    assert_eq!(post(&[("Authorization", &bearer)]), 200);
}

#[test]
fn a_read_only_token_can_look_but_never_type_or_act() {
    let h = Hangar::new();
    let a = h.new_agent(&["--provider", "shell"]);
    let web = WebServer::start(&h, &["--read-only"]);
    assert!(web.read_only);
    assert_eq!(web.get("/api/sessions").status, 200);
    assert_eq!(web.get(&format!("/api/sessions/{a}/screen")).status, 200);
    assert_eq!(web.get("/api/whoami").json()["read_only"], json!(true));
    for (path, body) in [
        ("send", json!({"text": "echo nope"})),
        ("keys", json!({"keys": ["x"]})),
        ("interrupt", json!({})),
        ("hibernate", json!({})),
        ("park", json!({})),
        ("wake", json!({})),
    ] {
        let r = web.post(&format!("/api/sessions/{a}/{path}"), &body);
        assert_eq!(r.status, 403, "{path}");
        assert_eq!(r.json()["error"]["code"], "read_only");
    }
    assert_eq!(h.session(&a)["placement"], "pane");
    assert_eq!(h.state_of(&a), "live");
}

#[test]
fn failed_logins_are_rate_limited_per_address() {
    let h = Hangar::new();
    let web = WebServer::start(&h, &[]);
    let api = format!("{}/api/sessions", web.base);
    for _ in 0..5 {
        let r = http("GET", &api, &[("Authorization", "Bearer guess")], None);
        assert_eq!(r.status, 401);
    }
    // Now even the right token is turned away for a while from there.
    let r = web.get("/api/sessions");
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("60"));
    let r = http("GET", &format!("{}/?token=guess", web.base), &[], None);
    assert_eq!(r.status, 429, "pairing attempts count too");
}

#[test]
fn revoke_ends_every_paired_browser_of_a_running_server() {
    let h = Hangar::new();
    let web = WebServer::start(&h, &[]);
    let cookie = web.pair_cookie();
    let with_cookie = |path: &str| {
        http(
            "GET",
            &format!("{}{path}", web.base),
            &[("Cookie", &cookie)],
            None,
        )
    };
    assert_eq!(with_cookie("/api/sessions").status, 200);
    let out = h.json(&["web", "--revoke"]);
    assert_eq!(out, json!({"revoked": true}));
    let r = with_cookie("/api/sessions");
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["error"]["code"], "revoked");
    assert_eq!(
        web.get("/api/sessions").status,
        401,
        "the token is dead too"
    );
    assert_eq!(
        http("GET", &web.url, &[], None).status,
        401,
        "and the URL pairs no one"
    );
    let file = h.home.join("web").join("revoked");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    // A new run pairs anew.
    let again = WebServer::start(&h, &[]);
    assert_eq!(again.get("/api/sessions").status, 200);
}

#[test]
fn the_token_is_in_no_process_list_and_no_file_of_hangars() {
    let h = Hangar::new();
    let a = h.new_agent(&["--provider", "shell"]);
    let web = WebServer::start(&h, &[]);
    let cookie = web.pair_cookie();
    let secret = cookie.split_once('=').unwrap().1.to_owned();
    assert_eq!(
        web.post(&format!("/api/sessions/{a}/send"), &json!({"text": "true"}))
            .status,
        200
    );
    for pid in all_pids() {
        let line = cmdline(pid).join(" ");
        assert!(
            !line.contains(&web.token),
            "pid {pid} carries the token: {line}"
        );
        assert!(!line.contains(&secret), "pid {pid} carries a cookie secret");
    }
    let mut files = vec![h.home.clone()];
    while let Some(p) = files.pop() {
        if p.is_dir() {
            files.extend(
                std::fs::read_dir(&p)
                    .unwrap()
                    .filter_map(|e| Some(e.ok()?.path())),
            );
        } else if let Ok(bytes) = std::fs::read(&p) {
            let text = String::from_utf8_lossy(&bytes);
            assert!(
                !text.contains(&web.token),
                "{} holds the token",
                p.display()
            );
            assert!(
                !text.contains(&secret),
                "{} holds a cookie secret",
                p.display()
            );
        }
    }
    assert!(!web.stderr_now().contains(&web.token));
}

#[test]
fn listening_beyond_loopback_needs_tls_or_an_explicit_insecure_lan() {
    let h = Hangar::new();
    let err = h.fail(&["web", "--listen", "0.0.0.0:0"]);
    assert!(
        err.contains("--tls-cert") && err.contains("--insecure-lan"),
        "{err}"
    );
    let err = h.fail(&["web", "--tls-cert", "/nonexistent.pem"]);
    assert!(err.contains("--tls-key"), "{err}");
    let web = WebServer::start(&h, &["--listen", "0.0.0.0:0", "--insecure-lan"]);
    h.wait_until("the server warns about plain HTTP", DEADLINE, || {
        web.stderr_now().contains("WARNING: plain HTTP")
    });
    let listen: Value = web.url.clone().into();
    assert!(
        !listen.as_str().unwrap().contains("0.0.0.0"),
        "the URL names a reachable address"
    );
}

#[test]
fn with_a_certificate_it_serves_only_tls_and_the_cookie_is_secure() {
    use rustls::pki_types::ServerName;
    use std::io::Write;
    use std::sync::Arc;

    let h = Hangar::new();
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".into()])
        .expect("params")
        .self_signed(&key)
        .expect("self-signed cert");
    let (cert_file, key_file) = (h.root.join("web-cert.pem"), h.root.join("web-key.pem"));
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let web = WebServer::start(
        &h,
        &[
            "--tls-cert",
            cert_file.to_str().unwrap(),
            "--tls-key",
            key_file.to_str().unwrap(),
        ],
    );
    assert!(web.url.starts_with("https://127.0.0.1:"), "{}", web.url);

    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der().clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = std::net::TcpStream::connect(web.host()).unwrap();
    tcp.set_read_timeout(Some(DEADLINE)).unwrap();
    let conn = rustls::ClientConnection::new(
        Arc::new(config),
        ServerName::try_from("127.0.0.1").unwrap().to_owned(),
    )
    .unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let path = web.url.split_once(web.host()).unwrap().1;
    write!(
        tls,
        "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        web.host()
    )
    .unwrap();
    let r = web_support::read_response(&mut tls);
    assert_eq!(r.status, 303);
    let cookie = r.header("set-cookie").unwrap();
    assert!(cookie.contains("; Secure"), "{cookie}");

    // Plain HTTP to the same port gets no page.
    let mut plain = std::net::TcpStream::connect(web.host()).unwrap();
    plain.set_read_timeout(Some(DEADLINE)).unwrap();
    plain
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut back = Vec::new();
    let _ = std::io::Read::read_to_end(&mut plain, &mut back);
    assert!(!String::from_utf8_lossy(&back).contains("HTTP/1.1 200"));
}

#[test]
fn on_a_terminal_it_prints_the_url_with_a_qr_code_and_ctrl_c_stops_it() {
    let h = Hangar::new();
    let mut term = pty_screen::PtyApp::spawn(h.command(&["web"]), 60, 120);
    term.wait_text("web: http://127.0.0.1:");
    term.wait_for("a QR code below the URL", |text| {
        text.lines()
            .filter(|l| l.contains("█") || l.contains("▀") || l.contains("▄"))
            .count()
            > 10
    });
    let url = term
        .text()
        .lines()
        .find_map(|l| l.trim().strip_prefix("web: ").map(str::to_owned))
        .expect("the URL line");
    let token = url
        .split_once("?token=")
        .expect("token")
        .1
        .trim()
        .to_owned();
    assert_eq!(token.len(), 64, "{url}");
    // A paired page's live list stays open (server-sent events); Ctrl-C
    // must stop the server all the same.
    let host = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut events = std::net::TcpStream::connect(&host).unwrap();
    events.set_read_timeout(Some(DEADLINE)).unwrap();
    std::io::Write::write_all(
        &mut events,
        format!(
            "GET /api/events HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\r\n"
        )
        .as_bytes(),
    )
    .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("event: sessions") {
        let n = std::io::Read::read(&mut events, &mut buf).unwrap();
        assert!(n > 0, "the event stream closed");
        seen.extend_from_slice(&buf[..n]);
    }
    term.write(b"\x03");
    assert_eq!(term.wait_exit(), Some(0), "Ctrl-C stops the server cleanly");
}

#[test]
fn the_screen_route_is_hangar_screen_json() {
    let h = Hangar::new();
    let a = h.new_agent(&["--provider", "shell"]);
    h.ok(&["send", &a, "echo shown-$((3+4))"]);
    h.wait_screen(&a, "shown-7");
    let web = WebServer::start(&h, &[]);
    h.wait_until(
        "GET /screen equals `hangar screen --json`",
        DEADLINE,
        || web.get(&format!("/api/sessions/{a}/screen")).json() == h.json(&["screen", &a]),
    );
}

#[test]
fn the_terminal_socket_types_resizes_refuses_read_only_input_and_closes_on_revoke() {
    let h = Hangar::new();
    let a = h.new_agent(&["--provider", "shell"]);
    let web = WebServer::start(&h, &[]);
    let bearer = format!("Bearer {}", web.token);
    let path = format!("/api/sessions/{a}/attach?cols=100&rows=30");
    let mut ws = web_support::WsClient::connect(web.host(), &path, &[("Authorization", &bearer)]);
    // The terminal's own bytes come first (the screen), then the live stream.
    ws.send_binary(b"echo ws-$((5+6))\r");
    h.wait_screen(&a, "ws-11");
    ws.send_text(r#"{"type":"resize","cols":91,"rows":27}"#);
    ws.send_binary(b"stty size\r");
    h.wait_screen(&a, "27 91");

    // A read-only pairing sees the terminal but its keystrokes are refused.
    let viewer = WebServer::start(&h, &["--read-only"]);
    let bearer_ro = format!("Bearer {}", viewer.token);
    let mut ro =
        web_support::WsClient::connect(viewer.host(), &path, &[("Authorization", &bearer_ro)]);
    ro.send_binary(b"echo ro-$((7+7))\r");
    let refused = ro.next_notice();
    assert_eq!(refused["code"], "read_only", "{refused}");
    ro.send_text(r#"{"type":"resize","cols":20,"rows":5}"#);
    ws.send_binary(b"stty size; echo probe-$((1+1))\r");
    h.wait_screen(&a, "probe-2");
    let screen = h.screen(&a);
    assert!(!screen.contains("ro-14"), "{screen}");
    assert!(
        !screen.contains("5 20"),
        "a read-only viewer never resizes: {screen}"
    );

    // Revoking closes open terminals with "policy violation".
    h.ok(&["web", "--revoke"]);
    assert_eq!(ws.wait_close(), 1008);
    assert_eq!(ro.wait_close(), 1008);
    assert_eq!(h.state_of(&a), "live", "the session keeps running");
}
