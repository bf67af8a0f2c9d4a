//! A local HTTPS server standing in for the provider API in the proxy tests.
//!
//! It has its own CA, made with rcgen in the test (handed to the proxy as
//! `[proxy] extra_ca_file`), serves `localhost` and `127.0.0.1`, logs every
//! request it gets, and answers each with a server-sent event stream whose
//! events echo the request's text, sent as separate chunks with a pause
//! between them. Blocking std threads: it needs no runtime, and it stops
//! when the test drops it.

#![allow(dead_code)] // each test binary uses a different part

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hangar_testkit::http::read_request;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// One request the server received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    /// Lowercase header names with their values.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

pub struct ApiServer {
    pub port: u16,
    /// The address it listens on.
    pub ip: std::net::IpAddr,
    /// The server's CA certificate (PEM).
    pub ca_file: PathBuf,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Events per response.
    pub events: usize,
    stop: Arc<AtomicBool>,
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect((self.ip, self.port));
    }
}

impl ApiServer {
    /// Start a server writing its CA to `dir`; each response has `events`
    /// events, `pause` apart.
    pub fn start(dir: &Path, events: usize, pause: Duration) -> ApiServer {
        Self::start_together(dir, events, pause, 1)
    }

    /// Like `start`, but no response begins before `together` requests have
    /// arrived: concurrent callers are then certain to overlap.
    pub fn start_together(
        dir: &Path,
        events: usize,
        pause: Duration,
        together: usize,
    ) -> ApiServer {
        Self::start_at(
            dir,
            events,
            pause,
            together,
            "127.0.0.1".parse().expect("ip"),
            &[],
        )
    }

    /// Like `start`, listening on `ip` and serving `names` too (a name of
    /// this machine that is not a loopback name, as a real API host is not).
    pub fn start_named(
        dir: &Path,
        events: usize,
        pause: Duration,
        ip: std::net::IpAddr,
        names: &[&str],
    ) -> ApiServer {
        Self::start_at(dir, events, pause, 1, ip, names)
    }

    fn start_at(
        dir: &Path,
        events: usize,
        pause: Duration,
        together: usize,
        ip: std::net::IpAddr,
        names: &[&str],
    ) -> ApiServer {
        let ca_key = KeyPair::generate().expect("ca key");
        let mut ca_params = CertificateParams::default();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "proxy test upstream CA");
        let ca_cert = ca_params.self_signed(&ca_key).expect("ca cert");
        let ca_file = dir.join("upstream-ca.pem");
        std::fs::write(&ca_file, ca_cert.pem()).expect("write ca");
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().expect("leaf key");
        let mut served = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
        served.extend(names.iter().map(|n| (*n).to_owned()));
        let leaf = CertificateParams::new(served)
            .expect("leaf params")
            .signed_by(&key, &issuer)
            .expect("leaf cert");
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .expect("tls versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .expect("server config"),
        );
        let listener = TcpListener::bind((ip, 0)).expect("bind test server");
        let port = listener.local_addr().expect("addr").port();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (log, stopping) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            for tcp in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(tcp) = tcp else { continue };
                let (config, log) = (config.clone(), log.clone());
                std::thread::spawn(move || {
                    let _ = serve(config, tcp, &log, events, pause, together);
                });
            }
        });
        ApiServer {
            port,
            ip,
            ca_file,
            seen,
            events,
            stop,
        }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(
    config: Arc<rustls::ServerConfig>,
    tcp: TcpStream,
    log: &Mutex<Vec<Seen>>,
    events: usize,
    pause: Duration,
    together: usize,
) -> std::io::Result<()> {
    tcp.set_read_timeout(Some(Duration::from_secs(30)))?;
    let conn = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut tls = BufReader::new(rustls::StreamOwned::new(conn, tcp));
    let request = read_request(&mut tls)?.unwrap_or_default();
    let body = request.body_text();
    let (path, headers) = (request.path, request.headers);
    let text = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["messages"][0]["content"].as_str().map(str::to_owned))
        .unwrap_or_default();
    log.lock().unwrap().push(Seen {
        path,
        headers,
        body,
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while log.lock().unwrap().len() < together && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = tls.get_mut();
    out.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\
          Set-Cookie: upstream=cookie-secret\r\nrequest-id: req_test\r\nConnection: close\r\n\r\n",
    )?;
    out.flush()?;
    for i in 0..events {
        let event = if i == 0 {
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n".to_owned()
        } else {
            format!(
                "event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"text\":\"{text} part {i}\"}},\"usage\":{{\"output_tokens\":{}}}}}\n\n",
                i * 7
            )
        };
        write!(out, "{:x}\r\n{event}\r\n", event.len())?;
        out.flush()?;
        std::thread::sleep(pause);
    }
    out.write_all(b"0\r\n\r\n")?;
    out.conn.send_close_notify();
    out.flush()?;
    Ok(())
}

/// Write `$HANGAR_HOME/config.toml` so the proxy captures `localhost` and
/// trusts the test server's CA, plus `extra` lines.
pub fn write_proxy_config(home: &Path, server: &ApiServer, extra: &str) {
    std::fs::create_dir_all(home).expect("home");
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[proxy]\nallow_hosts = [\"localhost\"]\nextra_ca_file = {:?}\n{extra}",
            server.ca_file.display().to_string()
        ),
    )
    .expect("write config");
}

/// The events of a session's capture files (today's and rotated ones).
pub fn capture_events(home: &Path, session: &str) -> Vec<serde_json::Value> {
    let dir = home.join("capture").join(session);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|r| r.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The raw text of every capture file under the home.
pub fn all_capture_text(home: &Path) -> String {
    fn walk(dir: &Path, out: &mut String) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    let mut out = String::new();
    walk(&home.join("capture"), &mut out);
    out
}

/// An environment variable of a running process.
pub fn env_of(pid: i32, name: &str) -> Option<String> {
    let prefix = format!("{name}=");
    std::fs::read(format!("/proc/{pid}/environ"))
        .ok()?
        .split(|&b| b == 0)
        .filter_map(|e| std::str::from_utf8(e).ok())
        .find_map(|e| e.strip_prefix(&prefix).map(str::to_owned))
}

/// Send `CONNECT host:port` to the proxy with an optional
/// `Proxy-Authorization` value; returns the status code.
pub fn connect_status(proxy_port: u16, target: &str, auth: Option<&str>) -> u16 {
    let mut tcp = TcpStream::connect(("127.0.0.1", proxy_port)).expect("connect proxy");
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some(a) = auth {
        req.push_str(&format!("Proxy-Authorization: {a}\r\n"));
    }
    req.push_str("\r\n");
    tcp.write_all(req.as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(tcp).read_line(&mut line).unwrap();
    line.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad proxy answer {line:?}"))
}

/// `Basic base64(user:pass)`.
pub fn basic(user_pass: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(user_pass)
    )
}
