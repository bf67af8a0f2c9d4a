//! One agent connection to the proxy: authenticate, then tunnel, intercept or
//! forward.
//!
//! - `CONNECT host:port` to a host on the allow-list: hangar's CA presents a
//!   certificate for the host, each request inside is forwarded upstream
//!   over a fresh TLS connection and recorded; the response streams back
//!   frame by frame while each chunk is handed to the capture writer.
//! - `CONNECT` to any other host: bytes are copied both ways, never decrypted.
//! - A plain `http://` request: forwarded (recorded when allow-listed).
//!
//! Every request must carry a live session's credentials or it gets 407.
//! `Proxy-Authorization` is consumed here and never forwarded.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpStream;

use crate::attribution::Grants;
use crate::ca::Authority;
use crate::capture::{self, Sink};
use crate::confine::Confinement;
use crate::in_flight::InFlight;
use crate::observer::ProxyObserver;
use crate::prompt_texts;
use crate::usage::{self, TurnMeter, Usage};

pub type ProxyBody = BoxBody<Bytes, hyper::Error>;

/// What every connection shares.
pub struct Shared {
    pub grants: Grants,
    pub ca: Authority,
    pub sink: Sink,
    /// Lowercase host names; `*.example.com` matches subdomains.
    pub allow_hosts: Vec<String>,
    pub upstream_tls: Arc<rustls::ClientConfig>,
    pub stats: Arc<crate::Stats>,
    pub exchanges: AtomicU64,
    /// Told of recorded exchanges (activity, issue 11) and of provider
    /// session ids seen in headers, for the daemon to record.
    pub observer: Arc<dyn ProxyObserver>,
}

impl Shared {
    pub fn is_allowed(&self, host: &str) -> bool {
        host_allowed(&self.allow_hosts, host)
    }
}

pub fn host_allowed(allow: &[String], host: &str) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    allow.iter().any(|a| match a.strip_prefix("*.") {
        Some(suffix) => host.ends_with(&format!(".{suffix}")),
        None => *a == host,
    })
}

fn full(text: impl Into<Bytes>) -> ProxyBody {
    Full::new(text.into()).map_err(|e| match e {}).boxed()
}

fn plain(status: StatusCode, text: &str) -> Response<ProxyBody> {
    let mut r = Response::new(full(format!("{text}\n")));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Serve one TCP connection from an agent.
pub async fn serve_client(shared: Arc<Shared>, tcp: TcpStream) {
    let _ = tcp.set_nodelay(true);
    let service = hyper::service::service_fn(move |req| {
        let shared = shared.clone();
        async move { Ok::<_, std::convert::Infallible>(handle(shared, req).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .preserve_header_case(true)
        .serve_connection(TokioIo::new(tcp), service)
        .with_upgrades()
        .await;
}

async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Response<ProxyBody> {
    let auth = req
        .headers()
        .get(header::PROXY_AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let Some(session) = shared.grants.authenticate(auth) else {
        let mut r = plain(
            StatusCode::PROXY_AUTHENTICATION_REQUIRED,
            "hangar proxy: this proxy needs the credentials hangar gave the session (HTTPS_PROXY)",
        );
        r.headers_mut().insert(
            header::PROXY_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"hangar\""),
        );
        return r;
    };
    if req.method() == Method::CONNECT {
        return connect(shared, session, req).await;
    }
    forward_plain(shared, session, req).await
}

/// `host`, `port` of a CONNECT target or absolute URI.
fn target(uri: &Uri, default_port: u16) -> Option<(String, u16)> {
    let auth = uri.authority()?;
    Some((
        auth.host().to_owned(),
        auth.port_u16().unwrap_or(default_port),
    ))
}

async fn connect(
    shared: Arc<Shared>,
    session: String,
    req: Request<Incoming>,
) -> Response<ProxyBody> {
    let Some((host, port)) = target(req.uri(), 443) else {
        return plain(
            StatusCode::BAD_REQUEST,
            "hangar proxy: CONNECT needs host:port",
        );
    };
    if let Some(c) = shared.grants.confinement(&session)
        && !c.allows(&shared.allow_hosts, &host)
    {
        return plain(StatusCode::FORBIDDEN, &Confinement::refusal(&host));
    }
    if shared.is_allowed(&host) {
        // Intercepted: the upstream connection is made per request inside.
        tokio::spawn(async move {
            match hyper::upgrade::on(req).await {
                Ok(up) => intercept(shared, session, host, port, TokioIo::new(up)).await,
                Err(e) => tracing::debug!("proxy: upgrade failed: {e}"),
            }
        });
        return Response::new(full(Bytes::new()));
    }
    // Tunnelled untouched: reach the host first so a failure is a clear 502.
    let upstream = match TcpStream::connect((host.as_str(), port)).await {
        Ok(s) => s,
        Err(e) => {
            return plain(
                StatusCode::BAD_GATEWAY,
                &format!("hangar proxy: cannot reach {host}:{port}: {e}"),
            );
        }
    };
    let _ = upstream.set_nodelay(true);
    tokio::spawn(async move {
        match hyper::upgrade::on(req).await {
            Ok(up) => {
                let mut client = TokioIo::new(up);
                let mut upstream = upstream;
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            }
            Err(e) => tracing::debug!("proxy: upgrade failed: {e}"),
        }
    });
    Response::new(full(Bytes::new()))
}

/// Terminate TLS with a certificate for `host` and serve the agent's
/// requests, forwarding each one upstream.
async fn intercept<IO>(shared: Arc<Shared>, session: String, host: String, port: u16, io: IO)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let config = match shared.ca.server_config(&host) {
        Ok(c) => c,
        Err(e) => {
            shared.stats.error(&session, format!("proxy: {e}"));
            return;
        }
    };
    let tls = match tokio_rustls::TlsAcceptor::from(config).accept(io).await {
        Ok(t) => t,
        Err(e) => {
            // Usually the agent does not trust hangar's CA.
            shared.stats.error(
                &session,
                format!("TLS with the agent for {host} failed: {e} (does it trust hangar's CA?)"),
            );
            return;
        }
    };
    let upstream: Arc<tokio::sync::Mutex<Option<Upstream>>> = Arc::default();
    let service = hyper::service::service_fn(move |req| {
        let shared = shared.clone();
        let session = session.clone();
        let host = host.clone();
        let upstream = upstream.clone();
        async move {
            let target = Target {
                host: &host,
                port,
                tls: true,
            };
            Ok::<_, std::convert::Infallible>(
                exchange(&shared, &session, target, &upstream, req, true).await,
            )
        }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .preserve_header_case(true)
        .serve_connection(TokioIo::new(tls), service)
        .await;
}

/// A plain `http://` request through the proxy.
async fn forward_plain(
    shared: Arc<Shared>,
    session: String,
    req: Request<Incoming>,
) -> Response<ProxyBody> {
    if req.uri().scheme_str() != Some("http") {
        return plain(
            StatusCode::BAD_REQUEST,
            "hangar proxy: expected CONNECT or an absolute http:// URL",
        );
    }
    let Some((host, port)) = target(req.uri(), 80) else {
        return plain(StatusCode::BAD_REQUEST, "hangar proxy: no host in the URL");
    };
    if let Some(c) = shared.grants.confinement(&session)
        && !c.allows(&shared.allow_hosts, &host)
    {
        return plain(StatusCode::FORBIDDEN, &Confinement::refusal(&host));
    }
    let record = shared.is_allowed(&host);
    let upstream: tokio::sync::Mutex<Option<Upstream>> = Default::default();
    let target = Target {
        host: &host,
        port,
        tls: false,
    };
    exchange(&shared, &session, target, &upstream, req, record).await
}

#[derive(Clone, Copy)]
struct Target<'a> {
    host: &'a str,
    port: u16,
    tls: bool,
}

impl Target<'_> {
    fn authority(&self) -> String {
        let default = if self.tls { 443 } else { 80 };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.to_owned()
        };
        if self.port == default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

type Upstream = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn open_upstream(shared: &Shared, t: Target<'_>) -> Result<Upstream, String> {
    let tcp = TcpStream::connect((t.host, t.port))
        .await
        .map_err(|e| format!("cannot reach {}:{}: {e}", t.host, t.port))?;
    let _ = tcp.set_nodelay(true);
    if t.tls {
        let name = rustls::pki_types::ServerName::try_from(t.host.to_owned())
            .map_err(|e| format!("{}: {e}", t.host))?;
        let tls = tokio_rustls::TlsConnector::from(shared.upstream_tls.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS with {}:{} failed: {e}", t.host, t.port))?;
        handshake(TokioIo::new(tls)).await
    } else {
        handshake(TokioIo::new(tcp)).await
    }
}

async fn handshake<IO>(io: IO) -> Result<Upstream, String>
where
    IO: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http1::Builder::new()
        .preserve_header_case(true)
        .handshake(io)
        .await
        .map_err(|e| format!("HTTP handshake failed: {e}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

const HOP_BY_HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // Headers named by Connection are hop-by-hop too.
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(',').map(|s| s.trim().to_ascii_lowercase()))
        .collect();
    for h in HOP_BY_HOP
        .iter()
        .copied()
        .chain(named.iter().map(String::as_str))
    {
        headers.remove(h);
    }
}

/// Forward one request to `t` and stream its response back, recording it
/// when `record` is set.
async fn exchange(
    shared: &Arc<Shared>,
    session: &str,
    t: Target<'_>,
    upstream: &tokio::sync::Mutex<Option<Upstream>>,
    req: Request<Incoming>,
    record: bool,
) -> Response<ProxyBody> {
    let begun = Instant::now();
    let at_ms = i64::try_from(hangar_clock::now_ms()).unwrap_or(i64::MAX);
    let n = shared.exchanges.fetch_add(1, Ordering::Relaxed) + 1;
    let (mut parts, body) = req.into_parts();
    let account = record.then(|| account_of(&parts.headers)).flatten();
    // Request bodies are small and sent whole; only responses stream.
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return plain(StatusCode::BAD_REQUEST, &format!("hangar proxy: {e}")),
    };
    // A request in flight means the agent is working; reported as finished
    // when this guard drops, on every path out.
    let in_flight = record.then(|| {
        InFlight::start(
            &shared.observer,
            session,
            prompt_texts::trailing_user_prints(&body),
        )
    });
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "/".to_owned());
    if record {
        let (text, cut) = capture::body_text(&body, shared.sink.limits.max_body_bytes);
        shared.sink.record(
            session,
            json!({
                "event": "request", "exchange": n, "method": parts.method.as_str(),
                "host": t.authority(), "path": capture::redact(&path),
                "headers": capture::kept_headers(&parts.headers),
                "body": text, "body_bytes": body.len(), "body_truncated": cut,
            }),
        );
        let headers = parts
            .headers
            .iter()
            .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)));
        if let Some(id) = usage::provider_session_id(headers) {
            shared
                .stats
                .observe_provider_id(session, &id, shared.observer.as_ref());
        }
        // A compressed response would be recorded as bytes nobody can read
        // and its usage lost: ask recorded hosts for plain bodies.
        parts.headers.remove(header::ACCEPT_ENCODING);
    }
    // A sandboxed agent holds a placeholder: the real key goes on here,
    // after the recording, and only towards a captured host (issue 32).
    if record && let Some(c) = shared.grants.confinement(session) {
        c.put_back(&mut parts.headers);
    }
    strip_hop_by_hop(&mut parts.headers);
    if !parts.headers.contains_key(header::HOST)
        && let Ok(v) = HeaderValue::from_str(&t.authority())
    {
        parts.headers.insert(header::HOST, v);
    }
    parts.uri = match path.parse() {
        Ok(u) => u,
        Err(_) => return plain(StatusCode::BAD_REQUEST, "hangar proxy: bad request path"),
    };
    parts.version = hyper::Version::HTTP_11;
    let outgoing = Request::from_parts(parts, Full::new(body));

    let sent = {
        let mut slot = upstream.lock().await;
        let reusable = slot.as_mut().is_some_and(|s| !s.is_closed());
        if !reusable {
            *slot = None;
            match open_upstream(shared, t).await {
                Ok(s) => *slot = Some(s),
                Err(e) => return upstream_failed(shared, session, n, record, &e),
            }
        }
        let Some(sender) = slot.as_mut() else {
            return upstream_failed(shared, session, n, record, "no upstream connection");
        };
        match sender.ready().await {
            Ok(()) => sender.send_request(outgoing).await,
            Err(e) => {
                *slot = None;
                return upstream_failed(shared, session, n, record, &e.to_string());
            }
        }
    };
    let response = match sent {
        Ok(r) => r,
        Err(e) => {
            *upstream.lock().await = None;
            return upstream_failed(shared, session, n, record, &e.to_string());
        }
    };
    let (mut parts, body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    if !record {
        return Response::from_parts(parts, body.boxed());
    }
    let status = parts.status.as_u16();
    shared.sink.record(
        session,
        json!({
            "event": "response", "exchange": n, "status": status,
            "headers": capture::kept_headers(&parts.headers),
        }),
    );
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let ledger_headers = parts
        .headers
        .iter()
        .filter(|(k, _)| crate::observer::ledger_header(k.as_str()))
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let tap = Tap {
        shared: shared.clone(),
        session: session.to_owned(),
        exchange: n,
        path: capture::redact(&path).into_owned(),
        account,
        at_ms,
        headers: ledger_headers,
        status,
        meter: Some(TurnMeter::new(status, content_type)),
        in_flight,
        chunks: 0,
        bytes: 0,
        recorded: 0,
        begun,
    };
    Response::from_parts(parts, TapBody { inner: body, tap }.boxed())
}

/// The account a request is made for: a hash of the credential it carries
/// (`x-api-key` for Anthropic keys, `authorization` for OAuth and OpenAI),
/// never the credential itself.
fn account_of(headers: &HeaderMap) -> Option<String> {
    let credential = headers
        .get("x-api-key")
        .or_else(|| headers.get(header::AUTHORIZATION))?
        .as_bytes();
    if credential.is_empty() {
        return None;
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, credential);
    let hex: String = digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Some(format!("sha256:{hex}"))
}

fn upstream_failed(
    shared: &Shared,
    session: &str,
    n: u64,
    record: bool,
    why: &str,
) -> Response<ProxyBody> {
    let message = format!("hangar proxy: upstream failed: {why}");
    if record {
        shared.sink.record(
            session,
            json!({"event": "error", "exchange": n, "message": message}),
        );
        shared.stats.turn(
            session,
            &Usage {
                requests: 1,
                errors: 1,
                ..Default::default()
            },
        );
    }
    shared.stats.error(session, message.clone());
    plain(StatusCode::BAD_GATEWAY, &message)
}

/// Watches a recorded response body as it streams.
struct Tap {
    shared: Arc<Shared>,
    session: String,
    exchange: u64,
    path: String,
    account: Option<String>,
    at_ms: i64,
    /// The response headers the ledger reads.
    headers: Vec<(String, String)>,
    status: u16,
    meter: Option<TurnMeter>,
    /// Dropped when the response ends: the turn's stop reason is reported.
    in_flight: Option<InFlight>,
    chunks: u64,
    bytes: u64,
    /// Bytes of chunk data written to the capture so far (capped).
    recorded: usize,
    begun: Instant,
}

impl Tap {
    fn chunk(&mut self, data: &Bytes) {
        self.chunks += 1;
        self.bytes += data.len() as u64;
        if let Some(m) = &mut self.meter {
            m.feed(data);
        }
        if let Some(f) = &mut self.in_flight {
            f.feed(data);
        }
        let room = self
            .shared
            .sink
            .limits
            .max_body_bytes
            .saturating_sub(self.recorded);
        let (text, cut) = capture::body_text(data, room);
        self.recorded += data.len().min(room);
        self.shared.sink.record(
            &self.session,
            json!({
                "event": "chunk", "exchange": self.exchange, "seq": self.chunks,
                "bytes": data.len(), "data": text, "truncated": cut,
            }),
        );
    }

    fn finish(&mut self, error: Option<String>) {
        self.in_flight = None;
        let Some(meter) = self.meter.take() else {
            return;
        };
        let (usage, detail) = meter.finish_detailed(error.is_some());
        self.shared.sink.record(
            &self.session,
            json!({
                "event": "end", "exchange": self.exchange, "status": self.status,
                "chunks": self.chunks, "bytes": self.bytes,
                "duration_ms": self.begun.elapsed().as_millis() as u64,
                "usage": usage, "error": error,
            }),
        );
        self.shared.stats.turn(&self.session, &usage);
        self.shared.observer.exchange_metered(
            &self.session,
            crate::observer::ExchangeReport {
                exchange: self.exchange,
                path: std::mem::take(&mut self.path),
                status: self.status,
                headers: std::mem::take(&mut self.headers),
                account: self.account.take(),
                at_ms: self.at_ms,
                usage,
                detail,
                error: error.clone(),
            },
        );
        if let Some(e) = error {
            self.shared.stats.error(&self.session, e);
        }
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        // The agent went away before the response ended.
        self.finish(Some("the response was cut off before its end".to_owned()));
    }
}

/// A response body that hands each frame to the capture as it passes.
struct TapBody {
    inner: Incoming,
    tap: Tap,
}

impl Body for TapBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.tap.chunk(data);
                }
            }
            Poll::Ready(Some(Err(e))) => this.tap.finish(Some(format!("upstream: {e}"))),
            Poll::Ready(None) => this.tap.finish(None),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allow_list_matches_exact_hosts_and_wildcard_subdomains() {
        let allow = vec!["api.anthropic.com".to_owned(), "*.example.com".to_owned()];
        assert!(host_allowed(&allow, "api.anthropic.com"));
        assert!(host_allowed(&allow, "API.Anthropic.com."));
        assert!(host_allowed(&allow, "a.example.com"));
        assert!(!host_allowed(&allow, "example.com"));
        assert!(!host_allowed(&allow, "anthropic.com"));
        assert!(!host_allowed(&allow, "api.anthropic.com.evil.net"));
    }

    #[test]
    fn proxy_authorization_and_connection_named_headers_are_stripped() {
        let mut h = HeaderMap::new();
        h.insert("proxy-authorization", HeaderValue::from_static("Basic x"));
        h.insert(
            "connection",
            HeaderValue::from_static("keep-alive, x-private"),
        );
        h.insert("x-private", HeaderValue::from_static("1"));
        h.insert(
            "authorization",
            HeaderValue::from_static("Bearer upstream-needs-this"),
        );
        strip_hop_by_hop(&mut h);
        assert!(h.get("proxy-authorization").is_none());
        assert!(h.get("x-private").is_none());
        assert!(h.get("connection").is_none());
        assert!(h.get("authorization").is_some());
    }
}
