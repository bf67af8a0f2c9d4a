//! The proxy end to end, in process: a local HTTPS server with its own CA
//! stands in for the provider API, a small client speaks through the proxy
//! the way an agent does (CONNECT with credentials, then TLS trusting
//! hangar's CA).

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::attribution::basic_header;
use super::*;

const EVENTS: usize = 4;

struct TestServer {
    port: u16,
    ca_file: PathBuf,
    seen: Arc<Mutex<Vec<(String, hyper::HeaderMap)>>>,
}

/// An HTTPS server for `localhost` and `127.0.0.1` answering every POST with
/// an Anthropic-style event stream of `EVENTS` events, 20 ms apart.
async fn test_server(dir: &Path) -> TestServer {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::default();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "test upstream CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let ca_file = dir.join("upstream-ca.pem");
    std::fs::write(&ca_file, ca_cert.pem()).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![leaf.der().clone()],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
    )
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Arc<Mutex<Vec<(String, hyper::HeaderMap)>>> = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let log = log.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let log = log.clone();
                        async move {
                            let (parts, body) = req.into_parts();
                            let body = body
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            log.lock()
                                .unwrap()
                                .push((String::from_utf8_lossy(&body).into_owned(), parts.headers));
                            let events = futures::stream::unfold(0usize, |i| async move {
                                if i == EVENTS {
                                    return None;
                                }
                                tokio::time::sleep(Duration::from_millis(20)).await;
                                let data = if i == 0 {
                                    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n".to_owned()
                                } else {
                                    format!(
                                        "event: message_delta\ndata: {{\"type\":\"message_delta\",\"n\":{i},\"usage\":{{\"output_tokens\":{}}}}}\n\n",
                                        i * 10
                                    )
                                };
                                Some((Ok::<_, Infallible>(Frame::data(Bytes::from(data))), i + 1))
                            });
                            let mut resp = hyper::Response::new(StreamBody::new(events));
                            resp.headers_mut().insert(
                                "content-type",
                                hyper::header::HeaderValue::from_static("text/event-stream"),
                            );
                            resp.headers_mut().insert(
                                "set-cookie",
                                hyper::header::HeaderValue::from_static("upstream=secret-cookie"),
                            );
                            Ok::<_, Infallible>(resp)
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    TestServer {
        port,
        ca_file,
        seen,
    }
}

/// What a call through the proxy got: the CONNECT status, and for a
/// tunnel that opened, the response status and its body frames.
#[derive(Debug)]
struct Called {
    connect_status: u16,
    status: u16,
    frames: Vec<Bytes>,
}

async fn read_head(tcp: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if tcp.read(&mut b).await.unwrap() == 0 {
            break;
        }
        head.push(b[0]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

async fn call(
    proxy_port: u16,
    auth: Option<&str>,
    host: &str,
    port: u16,
    trust: &[&Path],
    text: &str,
) -> Called {
    let mut tcp = TcpStream::connect(("127.0.0.1", proxy_port)).await.unwrap();
    let mut connect = format!("CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n");
    if let Some(a) = auth {
        connect.push_str(&format!("Proxy-Authorization: {a}\r\n"));
    }
    connect.push_str("\r\n");
    tcp.write_all(connect.as_bytes()).await.unwrap();
    let head = read_head(&mut tcp).await;
    let connect_status: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    if connect_status != 200 {
        return Called {
            connect_status,
            status: 0,
            frames: vec![],
        };
    }
    let mut roots = rustls::RootCertStore::empty();
    for f in trust {
        for c in ca::certificates_in(f).unwrap() {
            roots.add(c).unwrap();
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(
            rustls::pki_types::ServerName::try_from(host.to_owned()).unwrap(),
            tcp,
        )
        .await
        .unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = hyper::Request::post("/v1/messages")
        .header("host", format!("{host}:{port}"))
        .header(
            "authorization",
            "Bearer sk-ant-secret-000000000000000000000",
        )
        .header("x-api-key", "sk-ant-api-key-00000000000000000000000")
        .header("cookie", "c=secret-cookie")
        .header("content-type", "application/json")
        .header("x-claude-code-session-id", "provider-conv-1")
        .header("accept-encoding", "gzip, br")
        .body(Full::new(Bytes::from(format!(
            "{{\"messages\":[{{\"content\":\"{text}\"}}]}}"
        ))))
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    let status = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut frames = Vec::new();
    while let Some(f) = body.frame().await {
        if let Ok(d) = f.unwrap().into_data() {
            frames.push(d);
        }
    }
    Called {
        connect_status,
        status,
        frames,
    }
}

async fn started(
    dir: &Path,
    config: ProxyConfig,
) -> (
    Proxy,
    tokio::sync::mpsc::UnboundedReceiver<(String, String)>,
) {
    let proxy = Proxy::new(config, dir.join("home"));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    proxy.ensure_started(move || tx).await.unwrap();
    (proxy, rx)
}

/// A proxy started against `server` (allowed to reach it), a grant for
/// claude session `s`, the proxy's port, and what its observer is told.
async fn granted(
    dir: &Path,
    server: &TestServer,
) -> (
    Proxy,
    Grant,
    u16,
    tokio::sync::mpsc::UnboundedReceiver<(String, String)>,
) {
    let (proxy, rx) = started(dir, config_for(server)).await;
    let grant = proxy
        .grant(&SessionId::from("s"), CaTrust::Added, || unreachable!())
        .await
        .unwrap();
    let port = proxy.view().port.unwrap();
    (proxy, grant, port, rx)
}

fn config_for(server: &TestServer) -> ProxyConfig {
    ProxyConfig {
        allow_hosts: vec!["localhost".into()],
        extra_ca_file: Some(server.ca_file.clone()),
        ..Default::default()
    }
}

fn auth_of(g: &Grant) -> String {
    basic_header(&g.lease.credential.session, &g.lease.credential.token)
}

async fn capture_lines(
    proxy: &Proxy,
    session: &str,
    until: impl Fn(&[serde_json::Value]) -> bool,
) -> Vec<serde_json::Value> {
    let file = capture::session_dir(&proxy.capture_root(), session)
        .join(format!("{}.jsonl", capture::today()));
    for _ in 0..500 {
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(&file)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if until(&lines) {
            return lines;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("capture of {session} never got what the test waited for");
}

fn ended(lines: &[serde_json::Value]) -> bool {
    lines.iter().any(|l| l["event"] == "end")
}

#[tokio::test]
async fn an_allow_listed_exchange_streams_through_and_every_chunk_is_captured_for_its_session() {
    let dir = tempfile::tempdir().unwrap();
    let server = test_server(dir.path()).await;
    let (proxy, mut observed) = started(dir.path(), config_for(&server)).await;
    let grant = proxy
        .grant(&SessionId::from("s-one"), CaTrust::Added, || unreachable!())
        .await
        .unwrap();
    let port = proxy.view().port.unwrap();
    let ca = proxy.ca_files().cert();

    let got = call(
        port,
        Some(&auth_of(&grant)),
        "localhost",
        server.port,
        &[&ca],
        "hello",
    )
    .await;
    assert_eq!((got.connect_status, got.status), (200, 200));
    assert_eq!(
        got.frames.len(),
        EVENTS,
        "each event arrives as its own chunk"
    );

    // Upstream got the agent's own Authorization, never the proxy's.
    {
        let seen = server.seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert!(seen[0].1.get("authorization").is_some());
        assert!(seen[0].1.get("proxy-authorization").is_none());
        assert!(
            seen[0].1.get("accept-encoding").is_none(),
            "recorded hosts are asked for plain bodies"
        );
    }

    let lines = capture_lines(&proxy, "s-one", ended).await;
    let kinds: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(kinds[0], "request");
    assert_eq!(kinds[1], "response");
    assert_eq!(kinds.iter().filter(|k| **k == "chunk").count(), EVENTS);
    assert_eq!(*kinds.last().unwrap(), "end");
    assert_eq!(lines[0]["method"], "POST");
    assert_eq!(lines[0]["path"], "/v1/messages");
    assert!(lines[0]["body"].as_str().unwrap().contains("hello"));
    assert_eq!(lines[1]["status"], 200);
    for (chunk, frame) in lines
        .iter()
        .filter(|l| l["event"] == "chunk")
        .zip(&got.frames)
    {
        assert_eq!(chunk["data"].as_str().unwrap().as_bytes(), &frame[..]);
    }
    let text = lines
        .iter()
        .map(|l| l.to_string())
        .collect::<String>()
        .to_lowercase();
    for secret in [
        "authorization",
        "x-api-key",
        "cookie",
        "secret",
        "sk-ant-api",
    ] {
        assert!(!text.contains(secret), "capture holds {secret}: {text}");
    }
    let end = lines.last().unwrap();
    assert_eq!(end["usage"]["input_tokens"], 12);
    assert_eq!(end["usage"]["output_tokens"], 30);

    let usage = proxy.usage_view("s-one").unwrap();
    assert_eq!(
        (
            usage.requests,
            usage.input_tokens,
            usage.output_tokens,
            usage.errors
        ),
        (1, 12, 30, 0)
    );
    assert_eq!(
        observed.recv().await,
        Some(("s-one".to_owned(), "provider-conv-1".to_owned()))
    );
}

#[tokio::test]
async fn missing_wrong_and_revoked_credentials_get_407() {
    let dir = tempfile::tempdir().unwrap();
    let server = test_server(dir.path()).await;
    let (proxy, grant, port, _rx) = granted(dir.path(), &server).await;
    let ca = proxy.ca_files().cert();
    let good = auth_of(&grant);
    for auth in [
        None,
        Some(basic_header("s", "wrong")),
        Some(basic_header("other", "x")),
    ] {
        let got = call(port, auth.as_deref(), "localhost", server.port, &[&ca], "x").await;
        assert_eq!(got.connect_status, 407, "{auth:?}");
    }
    assert_eq!(proxy.view().sessions, 1);
    drop(grant.lease);
    let got = call(port, Some(&good), "localhost", server.port, &[&ca], "x").await;
    assert_eq!(got.connect_status, 407, "credentials die with the process");
    assert_eq!(proxy.view().sessions, 0);
    assert!(server.seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_host_off_the_allow_list_is_tunnelled_untouched_and_not_captured() {
    let dir = tempfile::tempdir().unwrap();
    let server = test_server(dir.path()).await;
    let (proxy, grant, port, _rx) = granted(dir.path(), &server).await;
    // 127.0.0.1 is not "localhost": the agent sees the server's own
    // certificate, so only the upstream CA verifies it.
    let got = call(
        port,
        Some(&auth_of(&grant)),
        "127.0.0.1",
        server.port,
        &[&server.ca_file],
        "x",
    )
    .await;
    assert_eq!((got.connect_status, got.status), (200, 200));
    assert_eq!(got.frames.len(), EVENTS);
    assert_eq!(server.seen.lock().unwrap().len(), 1);
    assert!(!capture::session_dir(&proxy.capture_root(), "s").exists());
    assert_eq!(proxy.usage_view("s"), None);
}

#[tokio::test]
async fn an_unreachable_upstream_is_a_502_and_a_recorded_error() {
    let dir = tempfile::tempdir().unwrap();
    let server = test_server(dir.path()).await;
    let (proxy, grant, port, _rx) = granted(dir.path(), &server).await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ca = proxy.ca_files().cert();
    let got = call(
        port,
        Some(&auth_of(&grant)),
        "localhost",
        closed,
        &[&ca],
        "x",
    )
    .await;
    assert_eq!(got.status, 502);
    let lines = capture_lines(&proxy, "s", |l| l.iter().any(|l| l["event"] == "error")).await;
    assert!(
        lines
            .iter()
            .any(|l| l["message"].as_str().unwrap_or("").contains("cannot reach"))
    );
    let usage = proxy.usage_view("s").unwrap();
    assert_eq!((usage.requests, usage.errors), (1, 1));
    assert!(usage.last_error.unwrap().contains("cannot reach"));
}

#[tokio::test]
async fn a_taken_port_is_a_clear_fault_and_a_later_start_may_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let proxy = Proxy::new(
        ProxyConfig {
            port,
            ..Default::default()
        },
        dir.path().join("home"),
    );
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let e = match proxy.ensure_started(|| tx.clone()).await {
        Err(e) => e.to_string(),
        Ok(_) => panic!("started on a taken port"),
    };
    assert!(e.contains(&format!("127.0.0.1:{port}")), "{e}");
    assert!(proxy.view().fault.is_some());
    drop(taken);
    proxy.ensure_started(|| tx).await.unwrap();
    assert_eq!(proxy.view().port, Some(port));
    assert!(proxy.view().fault.is_none());
}
