//! The `api <url> <text>` input: one streamed API call, made the way the real
//! CLIs make theirs, through `HTTPS_PROXY`.
//!
//! It sends `CONNECT host:port` with the proxy's credentials, speaks TLS
//! inside the tunnel trusting only the CA files the agent was given
//! (`NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE`, `FAKE_AGENT_CA_FILE`), POSTs a
//! small JSON body carrying fake credentials (`Authorization`, `x-api-key`:
//! hangar must never record them) and the session id header of its style,
//! and prints every server-sent event's data line as it arrives:
//! `api-chunk: <data>`. Blocking std I/O only: no async runtime in the fake.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use base64::Engine;

use crate::args::Style;

/// A fake key in the shape of a real one, so redaction is exercised.
pub const FAKE_API_KEY: &str = "sk-ant-fake0000000000000000000000secret";

struct Url {
    tls: bool,
    host: String,
    port: u16,
    path: String,
}

fn parse_url(url: &str) -> anyhow::Result<Url> {
    let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else {
        bail!("{url}: only http:// and https:// URLs");
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_owned()),
        None => (rest, "/".to_owned()),
    };
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (
            h.to_owned(),
            p.parse().with_context(|| format!("port in {url}"))?,
        ),
        _ => (authority.to_owned(), if tls { 443 } else { 80 }),
    };
    Ok(Url {
        tls,
        host: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned(),
        port,
        path,
    })
}

/// `NO_PROXY` (or `no_proxy`) names `host`, which then is reached
/// directly, as the real CLIs' HTTP stacks do (Node's `EnvHttpProxyAgent`
/// for claude, reqwest for codex: a comma-separated list of hosts, each
/// matching itself and its subdomains, a leading dot allowed, `*` for
/// all; a `:port` suffix is not looked at here).
fn no_proxy_covers(host: &str) -> bool {
    let Some(list) = ["NO_PROXY", "no_proxy"]
        .iter()
        .find_map(|k| std::env::var(k).ok())
    else {
        return false;
    };
    let host = host.to_ascii_lowercase();
    list.split(',')
        .map(|e| e.trim().trim_start_matches('.').to_ascii_lowercase())
        .filter(|e| !e.is_empty())
        .any(|e| e == "*" || host == e || host.ends_with(&format!(".{e}")))
}

/// The proxy from `HTTPS_PROXY` (or `https_proxy`): address and
/// `Proxy-Authorization` value.
fn proxy_from_env() -> anyhow::Result<Option<(String, Option<String>)>> {
    let Some(raw) = ["HTTPS_PROXY", "https_proxy"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    else {
        return Ok(None);
    };
    let rest = raw
        .strip_prefix("http://")
        .with_context(|| format!("HTTPS_PROXY={raw}: expected http://"))?;
    let rest = rest.trim_end_matches('/');
    let (auth, addr) = match rest.rsplit_once('@') {
        Some((a, h)) => (Some(a), h),
        None => (None, rest),
    };
    let header = auth.map(|a| {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(a)
        )
    });
    Ok(Some((addr.to_owned(), header)))
}

fn trust() -> anyhow::Result<rustls::RootCertStore> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for var in ["NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "FAKE_AGENT_CA_FILE"] {
        let Some(path) = std::env::var_os(var).filter(|v| !v.is_empty()) else {
            continue;
        };
        let bytes =
            std::fs::read(&path).with_context(|| format!("{var}={}", path.to_string_lossy()))?;
        for cert in CertificateDer::pem_slice_iter(&bytes).flatten() {
            let _ = roots.add(cert);
        }
    }
    if roots.is_empty() {
        bail!("no CA to trust: set NODE_EXTRA_CA_CERTS, SSL_CERT_FILE or FAKE_AGENT_CA_FILE");
    }
    Ok(roots)
}

/// Reads an HTTP/1.1 response head; returns the status and lowercase headers.
fn read_head(r: &mut impl BufRead) -> anyhow::Result<(u16, Vec<(String, String)>)> {
    let mut status_line = String::new();
    r.read_line(&mut status_line)?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("bad status line {status_line:?}"))?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    Ok((status, headers))
}

/// Make the call; `emit` gets each line to print. Returns the HTTP status.
pub fn call(
    url: &str,
    text: &str,
    style: Style,
    provider_session: &str,
    emit: &mut dyn FnMut(&str),
) -> anyhow::Result<u16> {
    let url = parse_url(url)?;
    let proxy = proxy_from_env()?.filter(|_| !no_proxy_covers(&url.host));
    let target = format!("{}:{}", url.host, url.port);
    let tcp = match &proxy {
        Some((addr, _)) => TcpStream::connect(addr).with_context(|| format!("proxy {addr}"))?,
        None => TcpStream::connect(&target).with_context(|| target.clone())?,
    };
    tcp.set_read_timeout(Some(Duration::from_secs(60)))?;
    tcp.set_nodelay(true)?;
    let body = serde_json::json!({
        "model": "fake-agent",
        "stream": true,
        "messages": [{"role": "user", "content": text}],
    })
    .to_string();
    // `FAKE_AGENT_APIKEY_FROM=NAME`: send the key in `$NAME`, as a real CLI
    // sends its `ANTHROPIC_API_KEY` (hangar's sandbox puts a placeholder there).
    let key = std::env::var("FAKE_AGENT_APIKEY_FROM")
        .ok()
        .and_then(|name| std::env::var(name).ok())
        .unwrap_or_else(|| FAKE_API_KEY.to_owned());
    let session_header = match style {
        Style::Codex => "session_id",
        _ => "X-Claude-Code-Session-Id",
    };
    let mut request = format!(
        "POST {} HTTP/1.1\r\nHost: {target}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n\
         Authorization: Bearer {key}\r\nx-api-key: {key}\r\nCookie: session=fake-cookie-secret\r\n\
         {session_header}: {provider_session}\r\nContent-Length: {}\r\nConnection: close\r\n",
        if url.tls || proxy.is_none() {
            url.path.clone()
        } else {
            format!("http://{target}{}", url.path)
        },
        body.len()
    );
    if !url.tls
        && let Some((_, Some(auth))) = &proxy
    {
        request.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);

    let stream: Box<dyn ReadWrite> = if url.tls {
        let mut tcp = tcp;
        if let Some((_, auth)) = &proxy {
            let mut connect = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
            if let Some(a) = auth {
                connect.push_str(&format!("Proxy-Authorization: {a}\r\n"));
            }
            connect.push_str("\r\n");
            tcp.write_all(connect.as_bytes())?;
            let (status, _) = read_head_unbuffered(&mut tcp)?;
            if status != 200 {
                emit(&format!("api-error: proxy answered {status}"));
                return Ok(status);
            }
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(trust()?)
        .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from(url.host.clone())?;
        let conn = rustls::ClientConnection::new(Arc::new(config), name)?;
        Box::new(rustls::StreamOwned::new(conn, tcp))
    } else {
        Box::new(tcp)
    };
    let mut reader = BufReader::new(stream);
    reader.get_mut().write_all(request.as_bytes())?;
    reader.get_mut().flush()?;
    let (status, headers) = read_head(&mut reader)?;
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let mut lines = LineSplitter::default();
    let mut on_data = |data: &[u8], emit: &mut dyn FnMut(&str)| {
        for line in lines.push(data) {
            if let Some(d) = line.strip_prefix("data:") {
                emit(&format!("api-chunk: {}", d.trim()));
            }
        }
    };
    if chunked {
        loop {
            let mut size_line = String::new();
            if reader.read_line(&mut size_line)? == 0 {
                break;
            }
            let size = usize::from_str_radix(size_line.trim().split(';').next().unwrap_or(""), 16)
                .with_context(|| format!("bad chunk size {size_line:?}"))?;
            if size == 0 {
                break;
            }
            let mut chunk = vec![0; size];
            reader.read_exact(&mut chunk)?;
            let mut crlf = [0; 2];
            reader.read_exact(&mut crlf)?;
            on_data(&chunk, emit);
        }
    } else {
        let mut buf = [0; 8192];
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                // Servers that close without TLS close_notify.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                Err(e) => return Err(e.into()),
            };
            on_data(&buf[..n], emit);
        }
    }
    Ok(status)
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// The proxy's answer to CONNECT, read byte by byte so no TLS byte that
/// follows is swallowed by a buffer.
fn read_head_unbuffered(tcp: &mut TcpStream) -> anyhow::Result<(u16, Vec<(String, String)>)> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if tcp.read(&mut byte)? == 0 {
            bail!("the proxy closed the connection");
        }
        head.push(byte[0]);
        if head.len() > 16 * 1024 {
            bail!("the proxy's answer is too long");
        }
    }
    read_head(&mut &head[..])
}

/// Splits a byte stream into lines across reads.
#[derive(Default)]
struct LineSplitter {
    partial: Vec<u8>,
}

impl LineSplitter {
    fn push(&mut self, data: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        for &b in data {
            if b == b'\n' {
                let line = std::mem::take(&mut self.partial);
                out.push(
                    String::from_utf8_lossy(&line)
                        .trim_end_matches('\r')
                        .to_owned(),
                );
            } else {
                self.partial.push(b);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_split_into_host_port_and_path() {
        let u = parse_url("https://localhost:8443/v1/messages?beta=1").unwrap();
        assert_eq!(
            (u.tls, u.host.as_str(), u.port, u.path.as_str()),
            (true, "localhost", 8443, "/v1/messages?beta=1")
        );
        let u = parse_url("http://example.com").unwrap();
        assert_eq!((u.tls, u.port, u.path.as_str()), (false, 80, "/"));
        assert!(parse_url("ftp://x").is_err());
    }

    #[test]
    fn lines_split_across_reads_are_joined() {
        let mut s = LineSplitter::default();
        assert_eq!(s.push(b"data: a\r\nda"), vec!["data: a"]);
        assert_eq!(s.push(b"ta: b\n"), vec!["data: b"]);
    }
}
