//! A fake Kubernetes API server for the Kubernetes engine's tests: no real
//! one can be installed on this project's machines (issue 32), so this one
//! speaks the real paths, objects and exec WebSocket that hangar's calls
//! (kube-rs) use, and plays a one-node cluster's kubelet behind them.
//!
//! Where each part comes from (read with the search tools, not from
//! memory):
//! - The REST paths (`/api/v1/namespaces/{ns}/pods[/{name}]`, the same for
//!   `persistentvolumeclaims`, `labelSelector`, a `DeleteOptions` body with
//!   `gracePeriodSeconds`): kube-rs `kube-core/src/request.rs`, the URLs
//!   its `Api<Pod>` builds.
//! - Errors: a `Status` object as apimachinery's `pkg/api/errors/errors.go`
//!   builds it: `NewNotFound` is code 404, reason `NotFound`, message
//!   `pods "NAME" not found`; `NewAlreadyExists` 409 `AlreadyExists`; a
//!   missing or wrong bearer token 401 `Unauthorized`.
//! - A missing image under `imagePullPolicy: Never`: the pod stays Pending
//!   with its container waiting, reason `ErrImageNeverPull`, message
//!   `Container image "X" is not present with pull policy of Never`
//!   (kubelet's `pkg/kubelet/images/image_manager.go`).
//! - The exec WebSocket (`/pods/{name}/exec?command=..&stdin=true&stdout=
//!   true&tty=true&container=..`): subprotocols `v5.channel.k8s.io` (then
//!   `v4`), as kube-rs `client/upgrade.rs` offers them and
//!   apimachinery's `util/remotecommand/constants.go` names them; every
//!   binary message starts with its channel byte (`wsstream/conn.go`): 0
//!   stdin, 1 stdout, 2 stderr, 3 error (the exit `Status` as JSON), 4
//!   resize (`{"Width":W,"Height":H}`), 255 close (v5: `[255, channel]`).
//!   On open the server sends an empty message on stdout (kubelet's
//!   `remotecommand/websocket.go`: "notify the client the connection is
//!   established"); at the end the `Status` of `remotecommand/exec.go`:
//!   `Success`, or `Failure` / `NonZeroExitCode` with an `ExitCode` cause.
//! - Pod deletion: the kubelet's SIGTERM, then SIGKILL after the grace
//!   period, then the object is gone; while it goes, the pod carries a
//!   `deletionTimestamp`.
//!
//! The kubelet part runs each exec as a local process in a PTY inside
//! bubblewrap, with the pod's volumes mounted where the pod asks (its claim
//! at the agent's home, hostPath volumes at their paths) and a pid and a
//! network namespace of its own, so the agent sees the pod's file system
//! and loopback as it would in a container. Everything it starts is killed on drop.

#![allow(dead_code)] // each test binary uses a different part

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the fake saw and holds; the tests read it.
#[derive(Default)]
pub struct Cluster {
    pub pods: BTreeMap<String, Value>,
    pub claims: BTreeMap<String, Value>,
    /// `METHOD PATH?QUERY` of every request, in order.
    pub requests: Vec<String>,
    /// Every exec: its command.
    pub execs: Vec<Vec<String>>,
    /// The subprotocol each exec's WebSocket agreed on.
    pub protocols: Vec<String>,
    /// Every resize message, `(width, height)`.
    pub resizes: Vec<(u16, u16)>,
    /// Requests refused for their credentials.
    pub unauthorized: usize,
    /// Process groups of running execs, by pod.
    execs_running: BTreeMap<String, Vec<i32>>,
}

struct Shared {
    cluster: Mutex<Cluster>,
    token: String,
    /// Images the node has.
    images: Vec<String>,
    /// Where claims keep their files.
    storage: PathBuf,
}

type S = Arc<Shared>;

/// The fake API server, on 127.0.0.1, until dropped.
pub struct FakeApiServer {
    shared: S,
    runtime: Option<tokio::runtime::Runtime>,
    pub url: String,
    pub token: String,
    _dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

impl FakeApiServer {
    /// A server whose node has `images`.
    pub fn start(images: &[&str]) -> FakeApiServer {
        let dir = tempfile::Builder::new()
            .prefix("hangar-fake-kube-")
            .tempdir()
            .expect("temp dir");
        let token = format!("t{}", std::process::id()) + &uuid_like();
        let shared = Arc::new(Shared {
            cluster: Mutex::new(Cluster::default()),
            token: token.clone(),
            images: images.iter().map(|s| (*s).to_owned()).collect(),
            storage: dir.path().join("claims"),
        });
        std::fs::create_dir_all(&shared.storage).expect("claims folder");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        let app = Router::new()
            .route(
                "/api/v1/namespaces/{ns}/pods",
                get(list_pods).post(create_pod),
            )
            .route(
                "/api/v1/namespaces/{ns}/pods/{name}",
                get(get_pod).delete(delete_pod),
            )
            .route(
                "/api/v1/namespaces/{ns}/pods/{name}/exec",
                get(exec).post(exec),
            )
            .route(
                "/api/v1/namespaces/{ns}/persistentvolumeclaims",
                get(list_claims).post(create_claim),
            )
            .route(
                "/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}",
                get(get_claim).delete(delete_claim),
            )
            .fallback(not_served)
            .layer(axum::middleware::from_fn_with_state(
                shared.clone(),
                authenticate,
            ))
            .with_state(shared.clone());
        runtime.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let url = format!("http://{addr}");
        let kubeconfig = dir.path().join("kubeconfig");
        // The kubeconfig layout kubectl writes (kube-rs
        // `config/file_config.rs` reads these fields).
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {url}\n\
                 contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: hangar\n    namespace: agents\n\
                 current-context: fake\nusers:\n- name: hangar\n  user:\n    token: {token}\n"
            ),
        )
        .expect("write kubeconfig");
        FakeApiServer {
            shared,
            runtime: Some(runtime),
            url,
            token,
            _dir: dir,
            kubeconfig,
        }
    }

    /// Read what the fake holds and saw.
    pub fn with<T>(&self, f: impl FnOnce(&Cluster) -> T) -> T {
        f(&self
            .shared
            .cluster
            .lock()
            .unwrap_or_else(|p| p.into_inner()))
    }

    /// The folder a claim's files are in.
    pub fn claim_dir(&self, claim: &str) -> PathBuf {
        self.shared.storage.join(claim)
    }

    /// Make a pod by hand (another home's, a leftover).
    pub fn put_pod(&self, name: &str, labels: Value) {
        let mut c = self
            .shared
            .cluster
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        c.pods.insert(
            name.to_owned(),
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": name, "namespace": "agents", "labels": labels, "uid": uuid_like()},
                   "spec": {"containers": [{"name": "agent", "image": "x"}]},
                   "status": {"phase": "Running"}}),
        );
    }

    pub fn put_claim(&self, name: &str, labels: Value) {
        let mut c = self
            .shared
            .cluster
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        c.claims.insert(
            name.to_owned(),
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                   "metadata": {"name": name, "namespace": "agents", "labels": labels},
                   "spec": {}, "status": {"phase": "Bound"}}),
        );
    }
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        let groups: Vec<i32> = self.with(|c| c.execs_running.values().flatten().copied().collect());
        for g in groups {
            // SAFETY: a kill of a process group this fake started.
            unsafe { libc::kill(-g, libc::SIGKILL) };
        }
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(2));
        }
    }
}

fn uuid_like() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let n = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{n:x}")
}

/// A `Status` as apimachinery's errors.go makes it.
fn status(code: u16, reason: &str, message: String) -> Response {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code,
    });
    (
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        axum::Json(body),
    )
        .into_response()
}

fn not_found(resource: &str, name: &str) -> Response {
    status(404, "NotFound", format!("{resource} {name:?} not found"))
}

async fn not_served() -> Response {
    status(
        404,
        "NotFound",
        "the server could not find the requested resource".into(),
    )
}

async fn authenticate(
    State(s): State<S>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let line = format!(
        "{} {}",
        req.method(),
        req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("")
    );
    let good = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {}", s.token));
    {
        let mut c = s.cluster.lock().unwrap_or_else(|p| p.into_inner());
        c.requests.push(line);
        if !good {
            c.unauthorized += 1;
        }
    }
    if !good {
        return status(401, "Unauthorized", "Unauthorized".into());
    }
    next.run(req).await
}

/// `k=v[,k=v]` label selectors, the equality form hangar uses.
fn matches_selector(obj: &Value, query: Option<&str>) -> bool {
    let Some(selector) = query.and_then(|q| query_values(q, "labelSelector").into_iter().next())
    else {
        return true;
    };
    selector.split(',').all(|term| match term.split_once('=') {
        Some((k, v)) => obj["metadata"]["labels"][k.trim()] == v.trim(),
        None => !obj["metadata"]["labels"][term.trim()].is_null(),
    })
}

/// Every value of `key` in a query string, percent-decoded.
fn query_values(query: &str, key: &str) -> Vec<String> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(k, _)| *k == key)
        .map(|(_, v)| percent_decode(v))
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn list(kind: &str, items: Vec<Value>) -> Response {
    axum::Json(json!({
        "kind": kind, "apiVersion": "v1",
        "metadata": {"resourceVersion": "1"}, "items": items,
    }))
    .into_response()
}

async fn list_pods(State(s): State<S>, RawQuery(q): RawQuery) -> Response {
    let c = s.cluster.lock().unwrap_or_else(|p| p.into_inner());
    let items = c
        .pods
        .values()
        .filter(|p| matches_selector(p, q.as_deref()))
        .cloned()
        .collect();
    list("PodList", items)
}

async fn get_pod(State(s): State<S>, UrlPath((_ns, name)): UrlPath<(String, String)>) -> Response {
    let c = s.cluster.lock().unwrap_or_else(|p| p.into_inner());
    match c.pods.get(&name) {
        Some(p) => axum::Json(p.clone()).into_response(),
        None => not_found("pods", &name),
    }
}

async fn create_pod(
    State(s): State<S>,
    UrlPath(ns): UrlPath<String>,
    axum::Json(mut pod): axum::Json<Value>,
) -> Response {
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut c = s.cluster.lock().unwrap_or_else(|p| p.into_inner());
    if c.pods.contains_key(&name) {
        return status(
            409,
            "AlreadyExists",
            format!("pods {name:?} already exists"),
        );
    }
    pod["metadata"]["namespace"] = json!(ns);
    pod["metadata"]["uid"] = json!(uuid_like());
    pod["metadata"]["resourceVersion"] = json!("2");
    let container = &pod["spec"]["containers"][0];
    let image = container["image"].as_str().unwrap_or_default().to_owned();
    let policy = container["imagePullPolicy"]
        .as_str()
        .unwrap_or("IfNotPresent");
    let cname = container["name"].clone();
    let claim_missing = pod["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["persistentVolumeClaim"]["claimName"].as_str())
        .find(|claim| !c.claims.contains_key(*claim))
        .map(str::to_owned);
    pod["status"] = if let Some(claim) = claim_missing {
        json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable",
            "message": format!("persistentvolumeclaim {claim:?} not found")}]})
    } else if !s.images.contains(&image) && policy == "Never" {
        json!({"phase": "Pending", "containerStatuses": [{
            "name": cname, "image": image, "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "ErrImageNeverPull",
                "message": format!("Container image {image:?} is not present with pull policy of Never")}}}]})
    } else {
        json!({"phase": "Running", "containerStatuses": [{
            "name": cname, "image": image, "imageID": "", "ready": true, "restartCount": 0,
            "state": {"running": {"startedAt": "2026-12-03T00:00:00Z"}}}]})
    };
    c.pods.insert(name, pod.clone());
    (StatusCode::CREATED, axum::Json(pod)).into_response()
}

async fn delete_pod(
    State(s): State<S>,
    UrlPath((_ns, name)): UrlPath<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let options: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let grace = {
        let c = s.cluster.lock().unwrap_or_else(|p| p.into_inner());
        let Some(pod) = c.pods.get(&name) else {
            return not_found("pods", &name);
        };
        options["gracePeriodSeconds"]
            .as_u64()
            .or_else(|| pod["spec"]["terminationGracePeriodSeconds"].as_u64())
            .unwrap_or(30)
    };
    let (pod, groups, first) = {
        let mut c = s.cluster.lock().unwrap_or_else(|p| p.into_inner());
        let groups = c.execs_running.get(&name).cloned().unwrap_or_default();
        let Some(pod) = c.pods.get_mut(&name) else {
            return not_found("pods", &name);
        };
        let first = pod["metadata"]["deletionTimestamp"].is_null();
        if first {
            pod["metadata"]["deletionTimestamp"] = json!("2026-12-03T00:00:00Z");
            pod["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
        }
        (pod.clone(), groups, first)
    };
    // A second delete of a pod already going starts no second countdown
    // (the first one ends it): one keyed by the name alone would outlive
    // the pod and kill and remove a new pod made under the same name.
    if !first {
        return axum::Json(pod).into_response();
    }
    // The kubelet: SIGTERM, the grace period, SIGKILL, then the object goes.
    for g in &groups {
        // SAFETY: a kill of a process group this fake started.
        unsafe { libc::kill(-*g, libc::SIGTERM) };
    }
    let uid = pod["metadata"]["uid"].clone();
    let s2 = s.clone();
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(grace);
        loop {
            let left: Vec<i32> = {
                let c = s2.cluster.lock().unwrap_or_else(|p| p.into_inner());
                c.execs_running.get(&name).cloned().unwrap_or_default()
            };
            if left.is_empty() {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                for g in left {
                    // SAFETY: as above.
                    unsafe { libc::kill(-g, libc::SIGKILL) };
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut c = s2.cluster.lock().unwrap_or_else(|p| p.into_inner());
        // The object this countdown is for, not a new one of the same name.
        if c.pods
            .get(&name)
            .is_some_and(|p| p["metadata"]["uid"] == uid)
        {
            c.pods.remove(&name);
            c.execs_running.remove(&name);
        }
    });
    axum::Json(pod).into_response()
}

async fn list_claims(State(s): State<S>, RawQuery(q): RawQuery) -> Response {
    let c = s.cluster.lock().unwrap_or_else(|p| p.into_inner());
    let items = c
        .claims
        .values()
        .filter(|p| matches_selector(p, q.as_deref()))
        .cloned()
        .collect();
    list("PersistentVolumeClaimList", items)
}

async fn get_claim(
    State(s): State<S>,
    UrlPath((_ns, name)): UrlPath<(String, String)>,
) -> Response {
    let c = s.cluster.lock().unwrap_or_else(|p| p.into_inner());
    match c.claims.get(&name) {
        Some(p) => axum::Json(p.clone()).into_response(),
        None => not_found("persistentvolumeclaims", &name),
    }
}

async fn create_claim(
    State(s): State<S>,
    UrlPath(ns): UrlPath<String>,
    axum::Json(mut claim): axum::Json<Value>,
) -> Response {
    let name = claim["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut c = s.cluster.lock().unwrap_or_else(|p| p.into_inner());
    if c.claims.contains_key(&name) {
        return status(
            409,
            "AlreadyExists",
            format!("persistentvolumeclaims {name:?} already exists"),
        );
    }
    claim["metadata"]["namespace"] = json!(ns);
    claim["status"] = json!({"phase": "Bound"});
    let _ = std::fs::create_dir_all(s.storage.join(&name));
    c.claims.insert(name, claim.clone());
    (StatusCode::CREATED, axum::Json(claim)).into_response()
}

async fn delete_claim(
    State(s): State<S>,
    UrlPath((_ns, name)): UrlPath<(String, String)>,
) -> Response {
    let mut c = s.cluster.lock().unwrap_or_else(|p| p.into_inner());
    match c.claims.remove(&name) {
        Some(claim) => {
            let _ = std::fs::remove_dir_all(s.storage.join(&name));
            axum::Json(claim).into_response()
        }
        None => not_found("persistentvolumeclaims", &name),
    }
}

/// What an exec runs, as the kubelet would set it up.
struct ExecPlan {
    pod: String,
    command: Vec<String>,
    /// `(source on this machine, path in the pod, read-only)`.
    mounts: Vec<(PathBuf, String, bool)>,
    env: Vec<(String, String)>,
    working_dir: String,
}

async fn exec(
    State(s): State<S>,
    UrlPath((_ns, name)): UrlPath<(String, String)>,
    RawQuery(q): RawQuery,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let q = q.unwrap_or_default();
    let command = query_values(&q, "command");
    let tty = query_values(&q, "tty").first().map(String::as_str) == Some("true");
    let plan = {
        let c = s.cluster.lock().unwrap_or_else(|p| p.into_inner());
        let Some(pod) = c.pods.get(&name) else {
            return not_found("pods", &name);
        };
        if pod["status"]["phase"] != "Running" || !pod["metadata"]["deletionTimestamp"].is_null() {
            return status(
                400,
                "BadRequest",
                format!("pod {name} is not running, cannot exec into it"),
            );
        }
        let container = &pod["spec"]["containers"][0];
        let volumes = pod["spec"]["volumes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut mounts = Vec::new();
        for m in container["volumeMounts"].as_array().into_iter().flatten() {
            let vol = volumes.iter().find(|v| v["name"] == m["name"]);
            let Some(vol) = vol else { continue };
            let source = if let Some(claim) = vol["persistentVolumeClaim"]["claimName"].as_str() {
                s.storage.join(claim)
            } else if let Some(path) = vol["hostPath"]["path"].as_str() {
                PathBuf::from(path)
            } else {
                continue;
            };
            mounts.push((
                source,
                m["mountPath"].as_str().unwrap_or_default().to_owned(),
                m["readOnly"] == true,
            ));
        }
        let env = container["env"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| {
                Some((
                    e["name"].as_str()?.to_owned(),
                    e["value"].as_str()?.to_owned(),
                ))
            })
            .collect();
        ExecPlan {
            pod: name.clone(),
            command,
            mounts,
            env,
            working_dir: container["workingDir"].as_str().unwrap_or("/").to_owned(),
        }
    };
    let offered = headers
        .get("sec-websocket-protocol")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    ws.protocols(["v5.channel.k8s.io", "v4.channel.k8s.io"])
        .on_upgrade(move |socket| async move {
            let chosen = if offered.contains("v5.channel.k8s.io") {
                "v5.channel.k8s.io"
            } else {
                "v4.channel.k8s.io"
            };
            {
                let mut c = s.cluster.lock().unwrap_or_else(|p| p.into_inner());
                c.execs.push(plan.command.clone());
                c.protocols.push(chosen.to_owned());
            }
            run_exec(s, plan, tty, socket).await;
        })
}

/// The kubelet's side of one exec: the process in a PTY, its bytes on
/// channel 1, channel 0 to its input, channel 4 resizes, and the exit
/// `Status` on channel 3.
async fn run_exec(s: S, plan: ExecPlan, _tty: bool, socket: WebSocket) {
    let (mut tx, mut rx) = socket.split();
    let (pty, pts) = match pty_process::open() {
        Ok(p) => p,
        Err(e) => {
            let _ = tx
                .send(Message::Binary(error_status(&e.to_string()).into()))
                .await;
            return;
        }
    };
    let _ = pty.resize(pty_process::Size::new(24, 80));
    let mut cmd = pty_process::Command::new("bwrap")
        .args(["--dev-bind", "/", "/"])
        .env_clear()
        .env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        );
    for (source, target, read_only) in &plan.mounts {
        let flag = if *read_only { "--ro-bind" } else { "--bind" };
        cmd = cmd.arg(flag).arg(source).arg(target);
    }
    // A pod has a network namespace of its own (its own loopback, where
    // hangar's relay listens): without one the relay's port would be this
    // machine's, the proxy's own.
    cmd = cmd
        .args([
            "--unshare-pid",
            "--unshare-net",
            "--proc",
            "/proc",
            "--chdir",
        ])
        .arg(&plan.working_dir)
        .arg("--");
    cmd = cmd.args(&plan.command);
    for (k, v) in &plan.env {
        cmd = cmd.env(k, v);
    }
    let mut child = match cmd.spawn(pts) {
        Ok(c) => c,
        Err(e) => {
            let _ = tx
                .send(Message::Binary(error_status(&e.to_string()).into()))
                .await;
            return;
        }
    };
    let group = child.id().map(|p| p as i32).unwrap_or(0);
    {
        let mut c = s.cluster.lock().unwrap_or_else(|p| p.into_inner());
        c.execs_running
            .entry(plan.pod.clone())
            .or_default()
            .push(group);
    }
    // "Send an empty message to the lowest writable channel to notify the
    // client the connection is established."
    let _ = tx.send(Message::Binary(vec![1u8].into())).await;
    let (mut pty_r, mut pty_w) = pty.into_split();
    let out = tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        loop {
            match pty_r.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let mut frame = Vec::with_capacity(n + 1);
                    frame.push(1u8);
                    frame.extend_from_slice(&buf[..n]);
                    if tx.send(Message::Binary(frame.into())).await.is_err() {
                        break;
                    }
                }
            }
        }
        tx
    });
    let s_in = s.clone();
    let input = tokio::spawn(async move {
        while let Some(Ok(msg)) = rx.next().await {
            let Message::Binary(data) = msg else { continue };
            match data.first() {
                Some(0) if pty_w.write_all(&data[1..]).await.is_err() => break,
                Some(0) => {}
                Some(4) => {
                    let size: Value = serde_json::from_slice(&data[1..]).unwrap_or(Value::Null);
                    let (w, h) = (
                        size["Width"].as_u64().unwrap_or(0) as u16,
                        size["Height"].as_u64().unwrap_or(0) as u16,
                    );
                    s_in.cluster
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .resizes
                        .push((w, h));
                    if w > 0 && h > 0 {
                        let _ = pty_w.resize(pty_process::Size::new(h, w));
                    }
                }
                // v5's CLOSE of stdin: a TTY has nothing to close.
                Some(255) => {}
                _ => {}
            }
        }
    });
    let exit = child.wait().await;
    {
        let mut c = s.cluster.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(groups) = c.execs_running.get_mut(&plan.pod) {
            groups.retain(|g| *g != group);
        }
    }
    input.abort();
    // The PTY's reader ends once every process holding the terminal is gone.
    let tx = tokio::time::timeout(Duration::from_secs(5), out).await;
    let Ok(Ok(mut tx)) = tx else { return };
    let code = exit
        .ok()
        .and_then(|e| {
            use std::os::unix::process::ExitStatusExt;
            e.code().or_else(|| e.signal().map(|s| 128 + s))
        })
        .unwrap_or(1);
    let status = if code == 0 {
        json!({"metadata": {}, "status": "Success"})
    } else {
        json!({"metadata": {}, "status": "Failure",
            "message": format!("command terminated with non-zero exit code: exit status {code}"),
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}})
    };
    let mut frame = vec![3u8];
    frame.extend_from_slice(status.to_string().as_bytes());
    let _ = tx.send(Message::Binary(frame.into())).await;
    let _ = tx.send(Message::Close(None)).await;
}

fn error_status(message: &str) -> Vec<u8> {
    let mut frame = vec![3u8];
    frame.extend_from_slice(
        json!({"metadata": {}, "status": "Failure", "message": message, "reason": "InternalError"})
            .to_string()
            .as_bytes(),
    );
    frame
}
