//! Test support for `hangar web`: the server as a child process, a small
//! blocking HTTP/1.1 client, and a WebDriver client for a real headless
//! Chromium (Debian's `chromium` and `chromium-driver`).
//!
//! The WebDriver client speaks the W3C protocol (JSON over HTTP to
//! chromedriver) with this file's HTTP client: a handful of endpoints, no
//! extra crates. Everything it starts (the web server, chromedriver, the
//! browser) is killed and reaped on drop, even when a test panics.

#![allow(dead_code)] // each test binary uses a different part

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{DEADLINE, Hangar, all_pids, cmdline, wait_until};

/// A running `hangar web`.
pub struct WebServer {
    child: Child,
    /// The printed pairing URL, token included.
    pub url: String,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    pub token: String,
    pub read_only: bool,
    /// What it wrote to stderr (read after it stops, or by `stderr_now`).
    stderr_file: PathBuf,
}

impl WebServer {
    /// `hangar --json web EXTRA...`, waiting for its one JSON line.
    pub fn start(h: &Hangar, extra: &[&str]) -> WebServer {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let stderr_file = h.root.join(format!("web-{n}.stderr"));
        let mut args = vec!["--json", "web"];
        args.extend_from_slice(extra);
        let mut child = h
            .command(&args)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_file).expect("web stderr file"))
            .spawn()
            .expect("start hangar web");
        let stdout = child.stdout.take().expect("web stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = match rx.recv_timeout(DEADLINE) {
            Ok(l) if !l.trim().is_empty() => l,
            other => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "hangar web printed no URL ({other:?}); stderr: {}",
                    std::fs::read_to_string(&stderr_file).unwrap_or_default()
                );
            }
        };
        let v: Value = serde_json::from_str(line.trim()).expect("hangar web --json prints JSON");
        let url = v["url"].as_str().expect("url").to_owned();
        let (base, token) = url.split_once("/?token=").expect("the URL carries a token");
        WebServer {
            child,
            base: base.to_owned(),
            token: token.to_owned(),
            url,
            read_only: v["read_only"].as_bool().expect("read_only"),
            stderr_file,
        }
    }

    /// host:port, as a browser sends it in `Host`.
    pub fn host(&self) -> &str {
        self.base
            .trim_start_matches("http://")
            .trim_start_matches("https://")
    }

    pub fn stderr_now(&self) -> String {
        std::fs::read_to_string(&self.stderr_file).unwrap_or_default()
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// GET with the Bearer token.
    pub fn get(&self, path: &str) -> Response {
        http(
            "GET",
            &format!("{}{path}", self.base),
            &[("Authorization", &format!("Bearer {}", self.token))],
            None,
        )
    }

    /// POST JSON with the Bearer token.
    pub fn post(&self, path: &str, body: &Value) -> Response {
        http(
            "POST",
            &format!("{}{path}", self.base),
            &[
                ("Authorization", &format!("Bearer {}", self.token)),
                ("Content-Type", "application/json"),
            ],
            Some(body.to_string().as_bytes()),
        )
    }

    /// Pair like a browser does and return the cookie (`name=value`).
    pub fn pair_cookie(&self) -> String {
        let r = http("GET", &self.url, &[], None);
        assert_eq!(r.status, 303, "pairing redirects: {}", r.text());
        let set = r.header("set-cookie").expect("pairing sets a cookie");
        set.split(';')
            .next()
            .expect("cookie pair")
            .trim()
            .to_owned()
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// One HTTP/1.1 request over a fresh connection (`Connection: close`).
pub fn http(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Response {
    let rest = url.strip_prefix("http://").expect("http:// URL");
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let mut stream = TcpStream::connect(host).unwrap_or_else(|e| panic!("connect {host}: {e}"));
    stream
        .set_read_timeout(Some(DEADLINE))
        .expect("read timeout");
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n");
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("connection"))
    {
        req.push_str("Connection: close\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    if let Some(b) = body {
        bytes.extend_from_slice(b);
    }
    stream.write_all(&bytes).expect("send request");
    read_response(&mut stream)
}

/// Read a whole response (to EOF, or its length), decoding chunked bodies.
pub fn read_response(stream: &mut impl Read) -> Response {
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let (head_end, status, headers) = loop {
        let n = hangar_testkit::io::read_some(stream, &mut buf).unwrap_or(0);
        if n == 0 && raw.is_empty() {
            panic!("the server closed without a response");
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..i]).into_owned();
            let mut lines = head.split("\r\n");
            let status: u16 = lines
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|s| s.parse().ok())
                .expect("status line");
            let headers: Vec<(String, String)> = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                .collect();
            break (i + 4, status, headers);
        }
        assert!(n > 0, "the server closed mid-header");
    };
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let mut body = raw[head_end..].to_vec();
    if let Some(len) = find("content-length").and_then(|l| l.parse::<usize>().ok()) {
        while body.len() < len {
            let n = hangar_testkit::io::read_some(stream, &mut buf).unwrap_or(0);
            if n == 0 {
                break;
            }
            body.extend_from_slice(&buf[..n]);
        }
        body.truncate(len);
    } else if status != 101 && status != 304 {
        loop {
            let n = hangar_testkit::io::read_some(stream, &mut buf).unwrap_or(0);
            if n == 0 {
                break;
            }
            body.extend_from_slice(&buf[..n]);
        }
        if find("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
            body = dechunk(&body);
        }
    }
    Response {
        status,
        headers,
        body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(i) = data.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&data[..i])
                .split(';')
                .next()
                .unwrap_or("0")
                .trim(),
            16,
        )
        .unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = i + 2;
        let end = (start + size).min(data.len());
        out.extend_from_slice(&data[start..end]);
        data = data.get(end + 2..).unwrap_or(&[]);
    }
    out
}

// ---- a real browser ----

/// Debian's chromium and chromedriver, or `None` (the caller skips with one
/// line saying so).
pub fn browser_binaries() -> Option<(PathBuf, PathBuf)> {
    let find = |names: &[&str]| {
        names.iter().find_map(|n| {
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .map(|d| d.join(n))
                .find(|p| p.is_file())
        })
    };
    let chromium = find(&["chromium", "chromium-browser", "google-chrome"])?;
    let driver = find(&["chromedriver"])?;
    Some((chromium, driver))
}

/// Skip a browser test with one clear line when Chromium is not installed.
#[macro_export]
macro_rules! browser_or_skip {
    () => {
        match web_support::browser_binaries() {
            Some(b) => b,
            None => {
                hangar_testkit::required::missing(
                    module_path!(),
                    "chromium or chromedriver not on PATH (apt-get install chromium chromium-driver)",
                );
                return;
            }
        }
    };
}

/// A screen to emulate.
#[derive(Clone, Copy)]
pub enum Screen {
    /// A 390x844 phone (iPhone 12-14 class), touch, pixel ratio 3.
    Phone,
    Desktop,
}

/// A headless Chromium driven over WebDriver.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    profile: tempfile::TempDir,
}

impl Browser {
    pub fn start((chromium, chromedriver): &(PathBuf, PathBuf), screen: Screen) -> Browser {
        let port = free_port();
        let profile = tempfile::Builder::new()
            .prefix("hangar-web-chromium-")
            .tempdir()
            .expect("profile dir");
        let log = profile.path().join("chromedriver.log");
        let mut cmd = Command::new(chromedriver);
        cmd.arg(format!("--port={port}"))
            .arg(format!("--log-path={}", log.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group, so the browser it starts dies with it.
            .process_group(0);
        let driver = cmd.spawn().expect("start chromedriver");
        let mut b = Browser {
            driver,
            port,
            session: String::new(),
            profile,
        };
        wait_until("chromedriver answers", DEADLINE, || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        let mut args = vec![
            "--headless".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--disable-extensions".to_owned(),
            format!(
                "--user-data-dir={}",
                b.profile.path().join("profile").display()
            ),
        ];
        let mut options = json!({"binary": chromium.display().to_string()});
        match screen {
            Screen::Phone => {
                options["mobileEmulation"] = json!({
                    "deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 3.0, "touch": true}
                });
                args.push("--window-size=390,844".to_owned());
            }
            Screen::Desktop => args.push("--window-size=1280,900".to_owned()),
        }
        options["args"] = json!(args);
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": options,
        }}});
        let v = b.call("POST", "/session", Some(caps));
        b.session = v["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {v}"))
            .to_owned();
        b
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        let body = body.map(|b| b.to_string());
        let r = http(
            method,
            &url,
            &[("Content-Type", "application/json")],
            body.as_deref().map(str::as_bytes),
        );
        let v: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
        assert!(
            r.status < 400,
            "WebDriver {method} {path} failed ({}): {}",
            r.status,
            r.text()
        );
        v["value"].clone()
    }

    fn at(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    pub fn goto(&self, url: &str) {
        self.call("POST", &self.at("/url"), Some(json!({"url": url})));
    }

    /// Run `script` (a function body; `arguments[i]` are `args`) and return
    /// its value.
    pub fn js(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            &self.at("/execute/sync"),
            Some(json!({"script": script, "args": args})),
        )
    }

    /// Run `script` asynchronously: it calls `arguments[0]` with its result.
    pub fn call_async(&self, script: &str) -> Value {
        self.call(
            "POST",
            &self.at("/execute/async"),
            Some(json!({"script": script, "args": []})),
        )
    }

    /// Wait until `script` returns true.
    pub fn wait_js(&self, what: &str, script: &str) {
        wait_until(what, DEADLINE, || {
            self.js(script, json!([])) == Value::Bool(true)
        });
    }

    pub fn find(&self, css: &str) -> String {
        let v = self.call(
            "POST",
            &self.at("/element"),
            Some(json!({"using": "css selector", "value": css})),
        );
        v.as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {css}"))
            .to_owned()
    }

    /// Click the element `css` names. The live list re-renders as the
    /// daemon's state moves, so an element found may be replaced before
    /// the click lands: find it again then.
    pub fn click(&self, css: &str) {
        let mut tries = 0;
        loop {
            let e = self.find(css);
            let url = format!(
                "http://127.0.0.1:{}{}",
                self.port,
                self.at(&format!("/element/{e}/click"))
            );
            let r = http(
                "POST",
                &url,
                &[("Content-Type", "application/json")],
                Some(b"{}"),
            );
            if r.status < 400 {
                return;
            }
            tries += 1;
            assert!(
                r.text().contains("stale element") && tries < 10,
                "WebDriver click on {css} failed ({}): {}",
                r.status,
                r.text()
            );
        }
    }

    /// Type into an element as a person does (real key events). WebDriver's
    /// Enter is U+E007.
    pub fn type_into(&self, css: &str, text: &str) {
        let e = self.find(css);
        self.call(
            "POST",
            &self.at(&format!("/element/{e}/value")),
            Some(json!({"text": text})),
        );
    }

    /// Perform WebDriver input actions (a wheel, a finger) as a person does.
    pub fn actions(&self, actions: Value) {
        self.call(
            "POST",
            &self.at("/actions"),
            Some(json!({"actions": actions})),
        );
    }

    /// A PNG of the viewport, written to `path`.
    pub fn screenshot(&self, path: &Path) {
        use base64::Engine;
        let v = self.call("GET", &self.at("/screenshot"), None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().expect("screenshot data"))
            .expect("screenshot base64");
        std::fs::write(path, png).expect("write screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let url = format!("http://127.0.0.1:{}/session/{}", self.port, self.session);
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                let path = url
                    .split_once(&format!("{}", self.port))
                    .map(|x| x.1)
                    .unwrap_or("/");
                let _ = s.write_all(
                    format!(
                        "DELETE {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                    )
                    .as_bytes(),
                );
                let mut sink = Vec::new();
                let _ = s.read_to_end(&mut sink);
            }
        }
        let group = self.driver.id() as i32;
        // SAFETY: kill has no memory effects; the group is chromedriver's own.
        unsafe {
            libc::kill(-group, libc::SIGKILL);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        // A browser that left the group still names our unique profile.
        let profile = self.profile.path().display().to_string();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left: Vec<i32> = all_pids()
                .into_iter()
                .filter(|&p| cmdline(p).iter().any(|a| a.contains(&profile)))
                .collect();
            if left.is_empty() || Instant::now() > deadline {
                break;
            }
            for p in left {
                // SAFETY: as above; only processes naming our temp profile.
                unsafe {
                    libc::kill(p, libc::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A bare RFC 6455 WebSocket client: enough to type into an attached
/// session and read what comes back, without a browser.
pub struct WsClient {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl WsClient {
    /// Open `path` on `host` with extra request headers; panics unless the
    /// server switches protocols.
    pub fn connect(host: &str, path: &str, headers: &[(&str, &str)]) -> WsClient {
        let mut stream = TcpStream::connect(host).expect("connect");
        stream.set_read_timeout(Some(DEADLINE)).expect("timeout");
        let mut req = format!(
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        stream.write_all(req.as_bytes()).expect("handshake");
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n =
                hangar_testkit::io::read_some(&mut stream, &mut chunk).expect("handshake reply");
            assert!(n > 0, "closed during the handshake");
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        assert!(head.starts_with("HTTP/1.1 101"), "no upgrade: {head}");
        WsClient {
            stream,
            buf: buf[end..].to_vec(),
        }
    }

    fn send(&mut self, opcode: u8, payload: &[u8]) {
        // Clients must mask; a fixed mask is as good as any for a test.
        let mask = [0x12u8, 0x34, 0x56, 0x78];
        let mut frame = vec![0x80 | opcode];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n < 65536 => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream.write_all(&frame).expect("send frame");
    }

    pub fn send_binary(&mut self, payload: &[u8]) {
        self.send(0x2, payload);
    }

    pub fn send_text(&mut self, text: &str) {
        self.send(0x1, text.as_bytes());
    }

    fn fill(&mut self, n: usize) {
        let mut chunk = [0u8; 65536];
        while self.buf.len() < n {
            let got =
                hangar_testkit::io::read_some(&mut self.stream, &mut chunk).expect("read frame");
            assert!(got > 0, "the server closed the WebSocket");
            self.buf.extend_from_slice(&chunk[..got]);
        }
    }

    /// The next frame: (opcode, payload). Server frames are unmasked.
    pub fn read_frame(&mut self) -> (u8, Vec<u8>) {
        self.fill(2);
        let opcode = self.buf[0] & 0x0f;
        let (len, off) = match self.buf[1] & 0x7f {
            126 => {
                self.fill(4);
                (u16::from_be_bytes([self.buf[2], self.buf[3]]) as usize, 4)
            }
            127 => {
                self.fill(10);
                let mut b = [0u8; 8];
                b.copy_from_slice(&self.buf[2..10]);
                (u64::from_be_bytes(b) as usize, 10)
            }
            n => (n as usize, 2),
        };
        self.fill(off + len);
        let payload = self.buf[off..off + len].to_vec();
        self.buf.drain(..off + len);
        (opcode, payload)
    }

    /// Read frames until a text frame (a JSON notice) arrives.
    pub fn next_notice(&mut self) -> Value {
        loop {
            let (op, payload) = self.read_frame();
            match op {
                0x1 => {
                    let notice: Value = serde_json::from_slice(&payload).expect("notice JSON");
                    // Where history ends comes with the output (the page's
                    // scrollback reads it): not a notice a test waits for.
                    if notice["type"] != "history" {
                        return notice;
                    }
                }
                0x8 => panic!("closed: {:?}", String::from_utf8_lossy(&payload)),
                _ => continue,
            }
        }
    }

    /// Read frames until a close frame; its code.
    pub fn wait_close(&mut self) -> u16 {
        loop {
            let (op, payload) = self.read_frame();
            if op == 0x8 {
                return payload
                    .get(..2)
                    .map(|b| u16::from_be_bytes([b[0], b[1]]))
                    .unwrap_or(1005);
            }
        }
    }
}
