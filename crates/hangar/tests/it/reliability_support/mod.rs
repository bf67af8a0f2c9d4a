//! Extra harness for the reliability suite (issue 10): a raw control-socket
//! client that speaks frames and envelopes directly (so a test can count
//! exactly which changes the daemon acknowledged, and can misbehave on
//! purpose), the long-run switch, and the figures line every test prints.
//!
//! Nothing here starts a process; the `Hangar` fixture in `support` owns
//! every process and cleans it up.

#![allow(dead_code)] // each reliability test binary uses a different part

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use hangar_protocol::frame::{self, Decoder, Frame, MAX_SERVER_FRAME};
use serde_json::{Value, json};

/// `HANGAR_LONG_TESTS=1` turns on the long versions (≥200 kills, 2,000
/// cycles, 100,000 sessions). Without it each test runs its short version.
pub fn long_run() -> bool {
    std::env::var("HANGAR_LONG_TESTS").is_ok_and(|v| v == "1")
}

/// `short` normally, `long` under `HANGAR_LONG_TESTS=1`.
pub fn scale(short: usize, long: usize) -> usize {
    if long_run() { long } else { short }
}

/// Prints one figures line (`cargo test -- --nocapture` shows it; the long
/// run's lines are copied into RELIABILITY.md).
pub fn figures(test: &str, line: String) {
    eprintln!(
        "FIGURES [{test}{}] {line}",
        if long_run() { ", long" } else { "" }
    );
}

/// Why a raw request did not get an ok reply.
#[derive(Debug)]
pub enum RawError {
    /// The connection broke (the daemon died or hung up).
    Io(std::io::Error),
    /// The daemon answered with an error: `(code, message)`.
    Daemon(String, String),
}

/// A blocking client of the control socket that sends envelopes as JSON.
pub struct RawClient {
    pub stream: UnixStream,
    decoder: Decoder,
    next_id: u64,
}

impl RawClient {
    /// Connect without greeting.
    pub fn connect_bare(socket: &Path) -> std::io::Result<RawClient> {
        let stream = UnixStream::connect(socket)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(RawClient::from_stream(stream))
    }

    /// Wrap a connected stream (no greeting is sent).
    pub fn from_stream(stream: UnixStream) -> RawClient {
        RawClient {
            stream,
            decoder: Decoder::new(MAX_SERVER_FRAME),
            next_id: 1,
        }
    }

    /// Connect and complete the hello handshake.
    pub fn connect(socket: &Path) -> Result<RawClient, RawError> {
        let mut c = RawClient::connect_bare(socket).map_err(RawError::Io)?;
        c.request(
            "hello",
            json!({"protocol_version": 1, "client": "reliability"}),
        )?;
        Ok(c)
    }

    /// Send `kind` with `body`, wait for its reply.
    pub fn request(&mut self, kind: &str, body: Value) -> Result<Value, RawError> {
        let id = self.next_id;
        self.next_id += 1;
        let env = json!({"id": id, "kind": kind, "body": body});
        let bytes = frame::encode(frame::TAG_MESSAGE, env.to_string().as_bytes());
        self.stream.write_all(&bytes).map_err(RawError::Io)?;
        loop {
            let reply = self.read_message().map_err(RawError::Io)?;
            if reply["id"].as_u64() != Some(id) && reply["id"].as_u64() != Some(0) {
                continue;
            }
            return if reply["ok"] == true {
                Ok(reply["body"].clone())
            } else {
                Err(RawError::Daemon(
                    reply["error"]["code"].as_str().unwrap_or("").to_owned(),
                    reply["error"]["message"].as_str().unwrap_or("").to_owned(),
                ))
            };
        }
    }

    /// The next message frame as JSON (data frames are skipped).
    pub fn read_message(&mut self) -> std::io::Result<Value> {
        loop {
            match self.next_frame()? {
                Frame::Message(payload) => {
                    return serde_json::from_slice(&payload).map_err(std::io::Error::other);
                }
                _ => continue,
            }
        }
    }

    /// The next frame of any kind.
    pub fn next_frame(&mut self) -> std::io::Result<Frame> {
        let mut buf = [0u8; 64 * 1024];
        loop {
            if let Some(f) = self.decoder.next_frame().map_err(std::io::Error::other)? {
                return Ok(f);
            }
            let n = hangar_testkit::io::read_some(&mut self.stream, &mut buf)?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            self.decoder.push(&buf[..n]);
        }
    }
}

/// The hello envelope as one frame, for tests that write it by hand.
pub fn hello_frame() -> Vec<u8> {
    let env = json!({"id": 1, "kind": "hello", "body": {"protocol_version": 1}});
    frame::encode(frame::TAG_MESSAGE, env.to_string().as_bytes())
}

/// Open fds of `pid`, by target (for a readable leak report).
pub use hangar_testkit::proc::fd_targets;
