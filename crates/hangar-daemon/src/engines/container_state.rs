//! A container's state and labels read from the engine's API socket with
//! types of hangar's own: `GET /containers/NAME/json` (inspect) and
//! `GET /containers/json` (the listing), over a plain HTTP/1.1 request.
//!
//! Not through bollard: its state fields are closed enums (Docker's words
//! and `stopping`), and Podman 4.3 answers with others: `stopped` for a
//! moment after a stop, until its cleanup (`fixtures/` has the bodies as
//! captured), so the whole inspect or listing failed to deserialize and the
//! session's start failed with it. Here the state is a plain word that
//! `hangar_core::engine::ContainerState::read` turns into what it means;
//! nothing an engine says about a state can fail a read.

use std::collections::HashMap;
use std::time::Duration;

use hangar_core::engine::ContainerState;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use serde::Deserialize;

/// An inspect's answer, as much of it as hangar reads (the API's names are
/// PascalCase).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Inspected {
    #[serde(default)]
    state: Option<InspectState>,
    #[serde(default)]
    config: Option<InspectConfig>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectState {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    running: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectConfig {
    #[serde(default)]
    labels: Option<HashMap<String, String>>,
}

impl Inspected {
    pub fn state(&self) -> ContainerState {
        let state = self.state.as_ref();
        ContainerState::read(
            state.and_then(|s| s.status.as_deref()),
            state.and_then(|s| s.running),
        )
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.config
            .as_ref()?
            .labels
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }
}

/// One row of a listing, as much of it as hangar reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Listed {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    labels: Option<HashMap<String, String>>,
    #[serde(default)]
    state: Option<String>,
}

impl Listed {
    pub fn state(&self) -> ContainerState {
        ContainerState::read(self.state.as_deref(), None)
    }

    pub fn labels(&self) -> Vec<(String, String)> {
        self.labels
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect()
    }
}

/// An engine's refusal or a failed request: the status (when there was an
/// answer) and the engine's own words.
#[derive(Debug)]
pub struct ApiFailure {
    pub status: Option<u16>,
    pub message: String,
}

impl std::fmt::Display for ApiFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Container `name`'s inspect; `None` when there is no such container.
pub async fn inspect(
    socket: &str,
    name: &str,
    timeout: Duration,
) -> Result<Option<Inspected>, ApiFailure> {
    let path = format!("/containers/{}/json", encode(name));
    match get(socket, &path, timeout).await {
        Ok(body) => parse(&body).map(Some),
        Err(ApiFailure {
            status: Some(404), ..
        }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Every container (running or not) carrying label `label` (`KEY=VALUE`).
pub async fn list_labelled(
    socket: &str,
    label: &str,
    timeout: Duration,
) -> Result<Vec<Listed>, ApiFailure> {
    let filters = serde_json::json!({ "label": [label] }).to_string();
    let path = format!("/containers/json?all=true&filters={}", encode(&filters));
    parse(&get(socket, &path, timeout).await?)
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiFailure> {
    serde_json::from_slice(body).map_err(|e| ApiFailure {
        status: None,
        message: format!(
            "the engine's answer is not what its API documents ({e}): {}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ),
    })
}

/// Percent-encode everything but RFC 3986's unreserved characters.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `GET path` on the engine's socket; the body of a 2xx answer, else the
/// engine's `message` (Docker and Podman both answer `{"message": ...}`).
async fn get(socket: &str, path: &str, timeout: Duration) -> Result<Vec<u8>, ApiFailure> {
    let failed = |message: String| ApiFailure {
        status: None,
        message,
    };
    let request = async {
        let stream = tokio::net::UnixStream::connect(socket)
            .await
            .map_err(|e| failed(format!("cannot connect to {socket}: {e}")))?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| failed(format!("cannot talk to {socket}: {e}")))?;
        // Drives the connection; it ends when the answer is read and the
        // sender dropped.
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("engine API connection: {e}");
            }
        });
        let request = hyper::Request::get(path)
            .header(hyper::header::HOST, "localhost")
            .body(Empty::<Bytes>::new())
            .map_err(|e| failed(format!("cannot write the request {path}: {e}")))?;
        let answer = sender
            .send_request(request)
            .await
            .map_err(|e| failed(format!("{socket}: GET {path}: {e}")))?;
        let status = answer.status().as_u16();
        let body = answer
            .into_body()
            .collect()
            .await
            .map_err(|e| failed(format!("{socket}: GET {path}: {e}")))?
            .to_bytes()
            .to_vec();
        if (200..300).contains(&status) {
            return Ok(body);
        }
        #[derive(Deserialize)]
        struct Refusal {
            message: String,
        }
        let message = serde_json::from_slice::<Refusal>(&body)
            .map(|r| r.message)
            .unwrap_or_else(|_| String::from_utf8_lossy(&body).trim().to_owned());
        Err(ApiFailure {
            status: Some(status),
            message: if message.is_empty() {
                format!("status {status}")
            } else {
                message
            },
        })
    };
    tokio::time::timeout(timeout, request)
        .await
        .unwrap_or_else(|_| {
            Err(failed(format!(
                "{socket}: GET {path}: no answer within {} s",
                timeout.as_secs()
            )))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Podman 4.3.1's own answers (fixtures/README.md says how they were
    // captured).
    const INSPECT_STOPPING: &str = include_str!("fixtures/podman-4.3-inspect-stopping.json");
    const INSPECT_STOPPED: &str = include_str!("fixtures/podman-4.3-inspect-stopped.json");
    const INSPECT_CREATED: &str = include_str!("fixtures/podman-4.3-inspect-created-labelled.json");
    const LIST_STOPPING: &str = include_str!("fixtures/podman-4.3-list-stopping.json");
    const LIST_STOPPED: &str = include_str!("fixtures/podman-4.3-list-stopped.json");
    const LIST_CREATED: &str = include_str!("fixtures/podman-4.3-list-created-labelled.json");

    #[test]
    fn podman_4_3_stopping_and_stopped_inspects_read_as_not_running() {
        let stopping: Inspected = parse(INSPECT_STOPPING.as_bytes()).expect("read");
        assert_eq!(stopping.state(), ContainerState::Stopping);
        let stopped: Inspected = parse(INSPECT_STOPPED.as_bytes()).expect("read");
        assert_eq!(stopped.state(), ContainerState::NotRunning);
        assert!(!stopped.state().holds_processes());
        let created: Inspected = parse(INSPECT_CREATED.as_bytes()).expect("read");
        assert_eq!(created.state(), ContainerState::NotRunning);
        assert_eq!(created.label("hangar.home"), Some("h1"));
        assert_eq!(created.label("hangar.session"), Some("s1"));
        assert_eq!(created.label("nothing"), None);
    }

    #[test]
    fn podman_4_3_stopping_and_stopped_listings_read_as_not_running() {
        let stopping: Vec<Listed> = parse(LIST_STOPPING.as_bytes()).expect("read");
        assert_eq!(stopping[0].state(), ContainerState::Stopping);
        let stopped: Vec<Listed> = parse(LIST_STOPPED.as_bytes()).expect("read");
        assert_eq!(stopped[0].state(), ContainerState::NotRunning);
        let created: Vec<Listed> = parse(LIST_CREATED.as_bytes()).expect("read");
        assert_eq!(created[0].state(), ContainerState::NotRunning);
        let labels = created[0].labels();
        assert!(labels.contains(&("hangar.session".to_owned(), "s1".to_owned())));
        assert!(!created[0].id.is_empty());
    }

    /// The cause this module exists for: bollard's closed enums refuse
    /// Podman's `stopped` (a restored session failed with "unknown variant
    /// `stopped`"); they know `stopping`, but the next word an engine adds
    /// would fail the same way.
    #[test]
    fn bollards_own_types_refuse_podmans_stopped() {
        let read =
            serde_json::from_str::<bollard::models::ContainerInspectResponse>(INSPECT_STOPPED);
        assert!(
            read.as_ref()
                .is_err_and(|e| e.to_string().contains("unknown variant `stopped`")),
            "{read:?}"
        );
        let read = serde_json::from_str::<Vec<bollard::models::ContainerSummary>>(LIST_STOPPED);
        assert!(
            read.as_ref()
                .is_err_and(|e| e.to_string().contains("unknown variant `stopped`")),
            "{read:?}"
        );
    }

    #[test]
    fn names_and_filters_are_percent_encoded() {
        assert_eq!(encode("hangar-ab12"), "hangar-ab12");
        assert_eq!(
            encode(r#"{"label":["hangar.home=ab"]}"#),
            "%7B%22label%22%3A%5B%22hangar.home%3Dab%22%5D%7D"
        );
    }

    /// A fake engine on a socket: the request hangar sends, a 404 read as
    /// no container, a refusal's message passed on.
    #[tokio::test]
    async fn inspect_and_list_over_a_socket_read_an_engines_answers() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let dir = tempfile::TempDir::new().expect("dir");
        let socket = dir.path().join("engine.sock");
        let listener = tokio::net::UnixListener::bind(&socket).expect("bind");
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let seen_by_server = seen.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut conn, _)) = listener.accept().await else {
                    return;
                };
                let mut buf = vec![0u8; 4096];
                let n = conn.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                let line = head.lines().next().unwrap_or_default().to_owned();
                seen_by_server.lock().unwrap().push(line.clone());
                let (status, body) = if line.contains("/containers/gone/json") {
                    (
                        "404 Not Found",
                        include_str!("fixtures/podman-4.3-inspect-missing.json"),
                    )
                } else if line.contains("/containers/broken/json") {
                    (
                        "500 Internal Server Error",
                        r#"{"message":"the engine broke"}"#,
                    )
                } else if line.contains("/containers/json") {
                    ("200 OK", LIST_STOPPED)
                } else {
                    ("200 OK", INSPECT_STOPPED)
                };
                let answer = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(answer.as_bytes()).await;
            }
        });
        let socket = socket.display().to_string();
        let t = Duration::from_secs(10);
        let found = inspect(&socket, "hangar-s1", t).await.expect("inspect");
        assert_eq!(found.expect("found").state(), ContainerState::NotRunning);
        assert!(
            inspect(&socket, "gone", t)
                .await
                .expect("no error")
                .is_none()
        );
        let refused = inspect(&socket, "broken", t).await.expect_err("refused");
        assert_eq!(refused.status, Some(500));
        assert_eq!(refused.message, "the engine broke");
        let listed = list_labelled(&socket, "hangar.home=ab", t)
            .await
            .expect("list");
        assert_eq!(listed[0].state(), ContainerState::NotRunning);
        let lines = seen.lock().unwrap().clone();
        assert_eq!(lines[0], "GET /containers/hangar-s1/json HTTP/1.1");
        assert!(
            lines[3].starts_with(
                "GET /containers/json?all=true&filters=%7B%22label%22%3A%5B%22hangar.home%3Dab%22%5D%7D "
            ),
            "{lines:?}"
        );
    }
}
