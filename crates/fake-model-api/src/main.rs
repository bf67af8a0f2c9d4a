//! `hangar-fake-model-api`: a scripted model API on loopback, for running the
//! real agent CLIs (Claude Code, Codex, OpenCode, Gemini CLI, Qwen Code, Pi,
//! ...) offline in tests.
//!
//! It answers Anthropic Messages (`POST /v1/messages`), OpenAI Responses
//! (`POST /v1/responses`), chat completions (`POST /v1/chat/completions`)
//! and Gemini (`POST .../models/<model>:generateContent` and
//! `:streamGenerateContent?alt=sse`, `:countTokens`) as server-sent event
//! streams (or whole bodies when a request does not stream), `HEAD /`
//! (Claude Code's reachability check) and model lists,
//! over HTTP and, with `--https`, over TLS with a CA it makes at start.
//! What it says is decided by `<state dir>/script.json` (see `script.rs`);
//! every request it gets is appended to `<state dir>/requests.jsonl`, so a
//! test can assert on what each CLI sent. Once listening it writes
//! `<state dir>/ports.json` (`{"http": P, "https": P|null, "pid": N}`).
//!
//! It is a test tool: it binds loopback addresses only, and it never
//! forwards anything anywhere.

#![forbid(unsafe_code)]

mod http;
mod limits;
mod script;
mod structured;
mod tls;
mod wire;

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use serde_json::{Value, json};

use crate::http::{Conn, Request};
use crate::script::{Api, Reply, Script};
use crate::wire::{Ids, Usage};

#[derive(Parser, Debug)]
#[command(
    name = "hangar-fake-model-api",
    about = "A scripted fake of the Anthropic, OpenAI and Gemini model APIs on loopback (for tests)."
)]
struct Args {
    /// Folder for ports.json, ca.pem, requests.jsonl and script.json.
    #[arg(long)]
    state_dir: PathBuf,
    /// Loopback address for plain HTTP (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:0")]
    http: SocketAddr,
    /// Also serve HTTPS on this loopback address, with a CA of its own
    /// (written to <state dir>/ca.pem).
    #[arg(long)]
    https: Option<SocketAddr>,
    /// Names the HTTPS certificate covers.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "localhost,127.0.0.1,127.0.0.2,::1"
    )]
    tls_names: Vec<String>,
    /// Exit when standard input reaches its end: a test keeps the pipe open
    /// for as long as it needs the server, so a test that dies takes the
    /// server with it.
    #[arg(long)]
    until_stdin_closes: bool,
}

/// State shared by every connection.
struct Server {
    state_dir: PathBuf,
    log: Mutex<File>,
    next: AtomicU64,
    /// How often each script rule has fired (by index).
    fired: Mutex<HashMap<usize, u64>>,
    /// The reset of each `lasts_secs` limit that has opened (by index).
    opened: Mutex<HashMap<usize, i64>>,
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        let _ = writeln!(std::io::stderr(), "hangar-fake-model-api: {e:#}");
        std::process::exit(1);
    }
}

fn loopback_only(addr: &SocketAddr) -> anyhow::Result<()> {
    let ok = match addr.ip() {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback(),
    };
    if !ok {
        bail!("{addr} is not a loopback address; this test server listens on loopback only");
    }
    Ok(())
}

fn run(args: Args) -> anyhow::Result<()> {
    loopback_only(&args.http)?;
    std::fs::create_dir_all(&args.state_dir)
        .with_context(|| format!("create {}", args.state_dir.display()))?;
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(args.state_dir.join("requests.jsonl"))
        .context("open requests.jsonl")?;
    let server = Arc::new(Server {
        state_dir: args.state_dir.clone(),
        log: Mutex::new(log),
        next: AtomicU64::new(1),
        fired: Mutex::new(HashMap::new()),
        opened: Mutex::new(HashMap::new()),
    });
    let http = TcpListener::bind(args.http).with_context(|| format!("bind {}", args.http))?;
    let http_port = http.local_addr()?.port();
    let mut https_port = None;
    if let Some(addr) = args.https {
        loopback_only(&addr)?;
        let config = tls::server_config(&args.state_dir.join("ca.pem"), &args.tls_names)?;
        let listener = TcpListener::bind(addr).with_context(|| format!("bind {addr}"))?;
        https_port = Some(listener.local_addr()?.port());
        let server = server.clone();
        std::thread::spawn(move || accept(listener, server, Some(config)));
    }
    {
        let server = server.clone();
        std::thread::spawn(move || accept(http, server, None));
    }
    tls::write_atomically(
        &args.state_dir.join("ports.json"),
        json!({"http": http_port, "https": https_port, "pid": std::process::id()})
            .to_string()
            .as_bytes(),
    )?;
    if args.until_stdin_closes {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        return Ok(());
    }
    loop {
        std::thread::park();
    }
}

fn accept(listener: TcpListener, server: Arc<Server>, tls: Option<Arc<rustls::ServerConfig>>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let (server, tls) = (server.clone(), tls.clone());
        std::thread::spawn(move || {
            if let Err(e) = serve_connection(stream, &server, tls) {
                // A client that hangs up mid-stream is normal (a CLI
                // cancelling a turn); anything else is worth a line.
                if !matches!(
                    e.kind(),
                    std::io::ErrorKind::BrokenPipe
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::UnexpectedEof
                ) {
                    let _ = writeln!(std::io::stderr(), "hangar-fake-model-api: connection: {e}");
                }
            }
        });
    }
}

fn serve_connection(
    stream: TcpStream,
    server: &Server,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(300)))?;
    match tls {
        Some(config) => {
            let conn = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
            serve_requests(
                Conn::new(rustls::StreamOwned::new(conn, stream)),
                server,
                true,
            )
        }
        None => serve_requests(Conn::new(stream), server, false),
    }
}

fn serve_requests<S: Read + Write>(
    mut conn: Conn<S>,
    server: &Server,
    tls: bool,
) -> std::io::Result<()> {
    while let Some(req) = conn.read_request()? {
        let close = req.wants_close();
        answer(&mut conn, server, &req, tls)?;
        if close {
            break;
        }
    }
    Ok(())
}

fn api_of(req: &Request) -> Option<Api> {
    if req.method != "POST" {
        return None;
    }
    let path = req.path().trim_end_matches('/');
    if path.ends_with("/messages") {
        Some(Api::Anthropic)
    } else if path.ends_with("/responses") {
        Some(Api::Responses)
    } else if path.ends_with("/chat/completions") {
        Some(Api::Chat)
    } else if path.ends_with(":generateContent") || path.ends_with(":streamGenerateContent") {
        Some(Api::Gemini)
    } else {
        None
    }
}

/// A Gemini API path (`/v1beta/...`, `/v1alpha/...`).
fn is_gemini_path(path: &str) -> bool {
    path.contains("/v1beta/") || path.contains("/v1alpha/")
}

fn read_script(dir: &Path) -> Result<Script, String> {
    match std::fs::read(dir.join("script.json")) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Script::default()),
        Err(e) => Err(format!("cannot read script.json: {e}")),
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| format!("bad script.json: {e}")),
    }
}

fn answer<S: Read + Write>(
    conn: &mut Conn<S>,
    server: &Server,
    req: &Request,
    tls: bool,
) -> std::io::Result<()> {
    let n = server.next.fetch_add(1, Ordering::SeqCst);
    let body: Value = serde_json::from_slice(&req.body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&req.body).into_owned()));
    let mut record = json!({
        "n": n,
        "method": req.method,
        "target": req.target,
        "path": req.path(),
        "tls": tls,
        "headers": Value::Object(
            req.headers
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        ),
        "body": body,
    });
    let json_headers = [("request-id", format!("req_fake{n:06}"))];
    let Some(api) = api_of(req) else {
        let path = req.path();
        let (status, reply) = if req.method == "HEAD" {
            (200, Value::Null)
        } else if req.method == "GET" && (path == "/" || path.is_empty()) {
            (200, json!({"ok": true}))
        } else if req.method == "GET" && is_gemini_path(path) && path.contains("/models") {
            // Gemini's model list (`models.list`) and one model (`models.get`).
            let model = json!({"name": "models/fake-model", "displayName": "Fake model",
                "inputTokenLimit": 1_048_576, "outputTokenLimit": 65_536,
                "supportedGenerationMethods": ["generateContent", "countTokens"]});
            if path.trim_end_matches('/').ends_with("/models") {
                (200, json!({"models": [model]}))
            } else {
                (200, model)
            }
        } else if req.method == "POST" && path.ends_with(":countTokens") {
            (200, json!({"totalTokens": (req.body.len() / 4).max(1)}))
        } else if req.method == "GET" && path.trim_end_matches('/').ends_with("/models") {
            (
                200,
                json!({"object": "list", "has_more": false, "data": [
                    {"id": "fake-model", "object": "model", "type": "model",
                     "display_name": "Fake model", "created": 0, "owned_by": "hangar"}]}),
            )
        } else if req.method == "POST" && path.ends_with("/messages/count_tokens") {
            (200, json!({"input_tokens": (req.body.len() / 4).max(1)}))
        } else {
            (
                404,
                json!({"error": {"message": format!("no such route: {} {path}", req.method)}}),
            )
        };
        record["status"] = json!(status);
        log(server, &record);
        let bytes = if reply.is_null() {
            Vec::new()
        } else {
            reply.to_string().into_bytes()
        };
        return conn.respond(status, "application/json", &json_headers, &bytes);
    };
    let parsed = &record["body"];
    let turn = script::user_turn(api, parsed);
    let offered = script::offered_tools(parsed);
    // Gemini names the model, and whether it streams, in the path.
    let (model, stream) = match api {
        Api::Gemini => (
            wire::gemini_model(req.path())
                .unwrap_or("fake-model")
                .to_owned(),
            req.path().ends_with(":streamGenerateContent"),
        ),
        _ => (
            parsed["model"].as_str().unwrap_or("fake-model").to_owned(),
            parsed["stream"].as_bool().unwrap_or(false),
        ),
    };
    let plan = match read_script(&server.state_dir) {
        Ok(s) => {
            let fired = server
                .fired
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            let mut opened = server.opened.lock().unwrap_or_else(|e| e.into_inner());
            let s =
                script::with_opened_limits(script::for_credential(s, req.credential()), &opened);
            let now = limits::now_secs();
            let fired_of = |i: usize| fired.get(&i).copied().unwrap_or(0);
            let mut plan = script::through_tool_search(&s, api, &turn, parsed, &offered, &fired_of)
                .unwrap_or_else(|| script::plan(&s, api, &turn, &offered, &fired_of, now));
            if let Some((rule, reset)) = script::open_limit(&mut plan, now) {
                opened.insert(rule, reset);
            }
            drop(opened);
            if let Some(schema) = structured::requested_schema(parsed)
                && !matches!(plan.reply, Reply::Fail(_))
            {
                plan = script::Plan {
                    reply: Reply::Text(structured::smallest_instance(schema).to_string()),
                    delay_ms: 0,
                    stall_ms: 0,
                    rule: None,
                    limit: None,
                };
            }
            if let Some(i) = plan.rule {
                *server
                    .fired
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(i)
                    .or_insert(0) += 1;
            }
            plan
        }
        Err(why) => script::Plan {
            reply: Reply::Fail(script::Failure {
                status: 500,
                message: why,
            }),
            delay_ms: 0,
            stall_ms: 0,
            rule: None,
            limit: None,
        },
    };
    let windows = read_script(&server.state_dir)
        .map(|s| s.windows)
        .unwrap_or_default();
    let now = limits::now_secs();
    let usage = Usage::for_reply(req.body.len(), &plan.reply);
    record["api"] = json!(api.name());
    record["turn"] = json!(turn.text());
    record["stream"] = json!(stream);
    record["reply"] = match &plan.reply {
        Reply::Text(t) => json!({"text": t}),
        Reply::Tool(t) => json!({"tool": t.name, "input": t.input}),
        Reply::Fail(f) => json!({"fail": f.status, "message": f.message}),
    };
    let refusal = plan
        .limit
        .as_ref()
        .map(|spec| limits::refusal(api, spec, &windows, now));
    if let Some(r) = &refusal {
        record["limit"] = json!({"status": r.status, "resets_at": r.resets_at});
    }
    if !matches!(plan.reply, Reply::Fail(_)) {
        record["usage"] = json!({"input": usage.input, "output": usage.output});
    }
    log(server, &record);
    if plan.stall_ms > 0 {
        std::thread::sleep(Duration::from_millis(plan.stall_ms));
    }
    let ids = Ids { n };
    if let Some(r) = refusal {
        let mut headers = json_headers.to_vec();
        headers.extend(r.headers);
        return conn.respond(
            r.status,
            "application/json",
            &headers,
            r.body.to_string().as_bytes(),
        );
    }
    if let Reply::Fail(f) = &plan.reply {
        let body = wire::error_body(api, f).to_string();
        return conn.respond(f.status, "application/json", &json_headers, body.as_bytes());
    }
    let mut allowed_headers = json_headers.to_vec();
    allowed_headers.extend(limits::window_headers(api, &windows, now));
    if !stream {
        let body = wire::whole_body(api, &plan.reply, &model, &ids, usage).to_string();
        return conn.respond(200, "application/json", &allowed_headers, body.as_bytes());
    }
    conn.start_stream(&allowed_headers)?;
    for event in wire::stream_events(api, &plan.reply, &model, &ids, usage) {
        conn.chunk(event.as_bytes())?;
        if plan.delay_ms > 0 {
            std::thread::sleep(Duration::from_millis(plan.delay_ms));
        }
    }
    conn.end_stream()
}

fn log(server: &Server, record: &Value) {
    let mut file = server.log.lock().unwrap_or_else(|e| e.into_inner());
    let line = format!("{record}\n");
    if let Err(e) = file.write_all(line.as_bytes()).and_then(|_| file.flush()) {
        let _ = writeln!(
            std::io::stderr(),
            "hangar-fake-model-api: requests.jsonl: {e}"
        );
    }
}
