//! Kubernetes through kube-rs (issue 32): one pod per session, its agent
//! CLI's home folder on a PersistentVolumeClaim, everything labelled with
//! the session and the hangar home.
//!
//! The pod runs a keep-alive as its one container's main process; the agent
//! is `exec`ed into it with a TTY by the bridge (`bridge.rs`) over the API
//! server's exec WebSocket. Hibernate deletes the pod and keeps the claim
//! (the CLI's conversation files); wake makes the pod again and the agent
//! resumes by its provider id; close deletes both. Images are never pulled
//! behind the person's back: the pod asks for `imagePullPolicy: Never`
//! unless config says otherwise, and a node without the image is a failed
//! start with the kubelet's own words (`ErrImageNeverPull`).
//!
//! The agent gets no service account token (`automountServiceAccountToken:
//! false`): an agent holds no credential, of the cluster neither.

use std::time::Duration;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;

use hangar_core::engine::{self, HOME_LABEL};

use super::EngineError;
use super::config::EngineConfig;

/// The one container of every session's pod (the exec's target).
pub const CONTAINER: &str = "agent";

/// How long one API call may take to connect (a start never hangs on an API
/// server that is not there).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The keep-alive the pod runs as its main process (as the Docker engine's
/// container does): on the kubelet's SIGTERM it asks the agent to end,
/// gives it a moment, and exits.
const KEEPALIVE: &str = "trap 'kill -TERM -1 2>/dev/null; sleep 1; exit 0' TERM INT; \
     while :; do sleep 3600 & wait $!; done";

/// Where the API server is and who hangar is to it: a kubeconfig, read as
/// kubectl reads it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Access {
    /// The kubeconfig file; `None`: `KUBECONFIG`, `~/.kube/config`, or the
    /// in-cluster service account, as kubectl finds them.
    pub kubeconfig: Option<String>,
    /// The kubeconfig context; `None`: its current context.
    pub context: Option<String>,
}

impl Access {
    pub fn of(cfg: &EngineConfig) -> Access {
        Access {
            kubeconfig: cfg.kubeconfig.clone(),
            context: cfg.context.clone(),
        }
    }

    /// The client config; `long_lived` drops the read timeout (an exec's
    /// stream is quiet for as long as the agent is).
    pub async fn config(&self, long_lived: bool) -> Result<kube::Config, String> {
        let mut config = match &self.kubeconfig {
            Some(path) => {
                let kc = kube::config::Kubeconfig::read_from(path)
                    .map_err(|e| format!("cannot read kubeconfig {path}: {e}"))?;
                let options = kube::config::KubeConfigOptions {
                    context: self.context.clone(),
                    ..Default::default()
                };
                kube::Config::from_custom_kubeconfig(kc, &options)
                    .await
                    .map_err(|e| format!("kubeconfig {path}: {e}"))?
            }
            None if self.context.is_some() => {
                let options = kube::config::KubeConfigOptions {
                    context: self.context.clone(),
                    ..Default::default()
                };
                kube::Config::from_kubeconfig(&options)
                    .await
                    .map_err(|e| format!("kubeconfig: {e}"))?
            }
            None => kube::Config::infer()
                .await
                .map_err(|e| format!("no Kubernetes configuration found ({e}); set kubeconfig = \"...\" in the engine's section"))?,
        };
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        if long_lived {
            config.read_timeout = None;
        }
        Ok(config)
    }

    pub async fn client(&self, long_lived: bool) -> Result<Client, String> {
        let config = self.config(long_lived).await?;
        Client::try_from(config).map_err(|e| format!("cannot make a Kubernetes client: {e}"))
    }
}

/// The API server's own words for an error.
pub fn message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

fn status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// The engine `name`'s client and its namespace's pods and claims.
pub struct Cluster {
    pub name: String,
    /// The engine's `namespace`, else the kubeconfig context's, else
    /// `default`.
    pub namespace: String,
    pub pods: Api<Pod>,
    pub claims: Api<PersistentVolumeClaim>,
}

pub async fn connect(name: &str, cfg: &EngineConfig) -> Result<Cluster, EngineError> {
    let client = Access::of(cfg)
        .client(false)
        .await
        .map_err(|e| EngineError(format!("engine {name}: {e}")))?;
    let ns = cfg
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_owned());
    Ok(Cluster {
        name: name.to_owned(),
        pods: Api::namespaced(client.clone(), &ns),
        claims: Api::namespaced(client, &ns),
        namespace: ns,
    })
}

/// What the pod of a session is made with.
pub struct PodSpec<'a> {
    pub cfg: &'a EngineConfig,
    pub session: &'a str,
    pub home_hash: &'a str,
    pub image: &'a str,
    /// The session's folder: a hostPath volume at the same path, so the
    /// node must see it there (a one-node cluster on this machine, or the
    /// folder on storage every node mounts at the same path).
    pub cwd: &'a str,
    /// The walls hangar's sandbox would give the agent (its state folder,
    /// the relay, its sockets): hostPath volumes, so, like the session's
    /// folder, they need a node that sees this machine's paths.
    pub walls: &'a [engine::Mount],
}

fn labels(session: &str, home_hash: &str) -> serde_json::Value {
    let map: serde_json::Map<String, serde_json::Value> = engine::labels(session, home_hash)
        .into_iter()
        .map(|(k, v)| (k, serde_json::Value::String(v)))
        .collect();
    serde_json::Value::Object(map)
}

/// The PersistentVolumeClaim of a session's home folder.
fn claim_manifest(spec: &PodSpec<'_>) -> serde_json::Value {
    let mut claim_spec = json!({
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": spec.cfg.storage}},
    });
    if let Some(class) = &spec.cfg.storage_class {
        claim_spec["storageClassName"] = json!(class);
    }
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": engine::volume_name(spec.session),
            "labels": labels(spec.session, spec.home_hash),
        },
        "spec": claim_spec,
    })
}

/// The session's pod: the keep-alive, the claim at the agent's home, the
/// session's folder, and no credential.
fn pod_manifest(spec: &PodSpec<'_>) -> serde_json::Value {
    let mut volumes = vec![
        json!({"name": "home", "persistentVolumeClaim": {"claimName": engine::volume_name(spec.session)}}),
        json!({"name": "work", "hostPath": {"path": spec.cwd, "type": "Directory"}}),
    ];
    let mut mounts = vec![
        json!({"name": "home", "mountPath": spec.cfg.home}),
        json!({"name": "work", "mountPath": spec.cwd}),
    ];
    for (i, m) in spec.cfg.mounts.iter().enumerate() {
        let mut parts = m.split(':');
        let (Some(host), Some(inside)) = (parts.next(), parts.next()) else {
            continue;
        };
        let read_only = parts.next() == Some("ro");
        let vol = format!("extra{i}");
        volumes.push(json!({"name": vol, "hostPath": {"path": host}}));
        mounts.push(json!({"name": vol, "mountPath": inside, "readOnly": read_only}));
    }
    for (i, m) in spec.walls.iter().enumerate() {
        let vol = format!("walls{i}");
        volumes.push(json!({"name": vol, "hostPath": {"path": m.outside}}));
        mounts.push(json!({"name": vol, "mountPath": m.inside, "readOnly": m.read_only}));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": engine::container_name(spec.session),
            "labels": labels(spec.session, spec.home_hash),
        },
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": false,
            "enableServiceLinks": false,
            "terminationGracePeriodSeconds": spec.cfg.stop_timeout_secs,
            "containers": [{
                "name": CONTAINER,
                "image": spec.image,
                "imagePullPolicy": spec.cfg.image_pull_policy.as_deref().unwrap_or("Never"),
                "command": ["/bin/sh", "-c", KEEPALIVE],
                "env": [{"name": "HOME", "value": spec.cfg.home}],
                "workingDir": spec.cwd,
                "volumeMounts": mounts,
            }],
            "volumes": volumes,
        },
    })
}

/// The waiting reasons of a container that will not start by itself.
fn hopeless(reason: &str) -> bool {
    matches!(
        reason,
        "ErrImageNeverPull"
            | "ErrImagePull"
            | "ImagePullBackOff"
            | "InvalidImageName"
            | "CreateContainerConfigError"
            | "CreateContainerError"
            | "RunContainerError"
            | "CrashLoopBackOff"
    )
}

/// What a pod's status says about the wait for it to run.
enum PodState {
    Running,
    /// Still coming up; the last word on why, for a timeout's message.
    Pending(String),
    Failed(String),
    /// Being deleted (a hibernate a moment ago): wait for it to go.
    Terminating,
}

fn pod_state(pod: &Pod) -> PodState {
    if pod.metadata.deletion_timestamp.is_some() {
        return PodState::Terminating;
    }
    let Some(status) = &pod.status else {
        return PodState::Pending("no status yet".into());
    };
    for c in status.container_statuses.iter().flatten() {
        if let Some(w) = c.state.as_ref().and_then(|s| s.waiting.as_ref()) {
            let reason = w.reason.clone().unwrap_or_default();
            let message = w.message.clone().unwrap_or_default();
            if hopeless(&reason) {
                return PodState::Failed(format!("{reason}: {message}"));
            }
        }
        if let Some(t) = c.state.as_ref().and_then(|s| s.terminated.as_ref()) {
            return PodState::Failed(format!(
                "its container ended ({}, exit code {})",
                t.reason.clone().unwrap_or_default(),
                t.exit_code
            ));
        }
    }
    match status.phase.as_deref() {
        Some("Running") => PodState::Running,
        Some("Failed" | "Succeeded") => PodState::Failed(format!(
            "the pod is {} ({})",
            status.phase.as_deref().unwrap_or_default(),
            status.message.clone().unwrap_or_default()
        )),
        phase => {
            let why = status
                .conditions
                .iter()
                .flatten()
                .find(|c| c.status == "False")
                .map(|c| {
                    format!(
                        "{}: {}",
                        c.reason.clone().unwrap_or_default(),
                        c.message.clone().unwrap_or_default()
                    )
                })
                .unwrap_or_else(|| phase.unwrap_or("no phase").to_owned());
            PodState::Pending(why)
        }
    }
}

/// The session's claim and pod, made when missing; returns once the pod
/// runs. A pod of that name that this home did not make is never touched.
pub async fn ensure_pod(cluster: &Cluster, spec: &PodSpec<'_>) -> Result<(), EngineError> {
    let name = engine::container_name(spec.session);
    let engine_name = &cluster.name;
    let refused = |what: &str, e: &kube::Error| {
        EngineError(format!(
            "engine {engine_name}: cannot {what} pod {name}: {}",
            message(e)
        ))
    };
    ensure_claim(cluster, spec).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(spec.cfg.start_timeout_secs);
    let mut made = false;
    loop {
        let found = cluster
            .pods
            .get_opt(&name)
            .await
            .map_err(|e| refused("look at", &e))?;
        let why = match found {
            Some(pod) => {
                let home = pod.metadata.labels.as_ref().and_then(|l| l.get(HOME_LABEL));
                if home.map(String::as_str) != Some(spec.home_hash) {
                    return Err(EngineError(format!(
                        "engine {engine_name}: a pod named {name} exists that this hangar home did not make; it is left alone"
                    )));
                }
                match pod_state(&pod) {
                    PodState::Running => return Ok(()),
                    PodState::Pending(why) => why,
                    PodState::Terminating => "the previous pod is still being deleted".to_owned(),
                    PodState::Failed(why) if made => {
                        return Err(EngineError(format!(
                            "engine {engine_name}: pod {name} cannot run: {why}"
                        )));
                    }
                    PodState::Failed(_) => {
                        // A pod that ended (its node restarted, say): make
                        // a new one; the claim keeps the conversation.
                        delete_pod(cluster, &name, 0).await?;
                        "the previous pod ended".to_owned()
                    }
                }
            }
            None => {
                let pod: Pod = serde_json::from_value(pod_manifest(spec))
                    .map_err(|e| EngineError(format!("cannot write pod {name}: {e}")))?;
                match cluster.pods.create(&PostParams::default(), &pod).await {
                    Ok(_) => {}
                    // Still there a moment ago (a delete finishing).
                    Err(e) if status_code(&e) == Some(409) => {}
                    Err(e) => return Err(refused("create", &e)),
                }
                made = true;
                "just made".to_owned()
            }
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(EngineError(format!(
                "engine {engine_name}: pod {name} did not start within {} s ({why})",
                spec.cfg.start_timeout_secs
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn ensure_claim(cluster: &Cluster, spec: &PodSpec<'_>) -> Result<(), EngineError> {
    let name = engine::volume_name(spec.session);
    let refused = |what: &str, e: &kube::Error| {
        EngineError(format!(
            "engine {}: cannot {what} volume claim {name}: {}",
            cluster.name,
            message(e)
        ))
    };
    if let Some(found) = cluster
        .claims
        .get_opt(&name)
        .await
        .map_err(|e| refused("look at", &e))?
    {
        let home = found
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(HOME_LABEL));
        if home.map(String::as_str) != Some(spec.home_hash) {
            return Err(EngineError(format!(
                "engine {}: a volume claim named {name} exists that this hangar home did not make; it is left alone",
                cluster.name
            )));
        }
        return Ok(());
    }
    let claim: PersistentVolumeClaim = serde_json::from_value(claim_manifest(spec))
        .map_err(|e| EngineError(format!("cannot write volume claim {name}: {e}")))?;
    match cluster.claims.create(&PostParams::default(), &claim).await {
        Ok(_) => Ok(()),
        Err(e) if status_code(&e) == Some(409) => Ok(()),
        Err(e) => Err(refused("create", &e)),
    }
}

/// Delete a pod (hibernate: its claim is kept). A missing one is no error.
pub async fn delete_pod(cluster: &Cluster, name: &str, grace_secs: u32) -> Result<(), EngineError> {
    let params = DeleteParams {
        grace_period_seconds: Some(grace_secs),
        ..Default::default()
    };
    match cluster.pods.delete(name, &params).await {
        Ok(_) => Ok(()),
        Err(e) if status_code(&e) == Some(404) => Ok(()),
        Err(e) => Err(EngineError(format!(
            "cannot delete pod {name}: {}",
            message(&e)
        ))),
    }
}

/// Delete a session's pod and its claim (close).
pub async fn remove(cluster: &Cluster, session: &str) -> Result<(), EngineError> {
    delete_pod(cluster, &engine::container_name(session), 0).await?;
    let claim = engine::volume_name(session);
    match cluster
        .claims
        .delete(&claim, &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if status_code(&e) == Some(404) => Ok(()),
        Err(e) => Err(EngineError(format!(
            "cannot delete volume claim {claim}: {}",
            message(&e)
        ))),
    }
}

/// A pod or claim this home made, as a listing shows it.
pub struct Found {
    pub name: String,
    pub labels: Vec<(String, String)>,
    /// A pod not being deleted (claims: false).
    pub running: bool,
}

fn selector(home_hash: &str) -> ListParams {
    ListParams::default().labels(&format!("{HOME_LABEL}={home_hash}"))
}

/// Every pod labelled with this home's hash.
pub async fn list_pods(cluster: &Cluster, home_hash: &str) -> Result<Vec<Found>, EngineError> {
    let list = cluster
        .pods
        .list(&selector(home_hash))
        .await
        .map_err(|e| EngineError(format!("cannot list pods: {}", message(&e))))?;
    Ok(list
        .items
        .into_iter()
        .map(|p| Found {
            running: p.metadata.deletion_timestamp.is_none(),
            name: p.metadata.name.unwrap_or_default(),
            labels: p.metadata.labels.unwrap_or_default().into_iter().collect(),
        })
        .collect())
}

/// Every volume claim labelled with this home's hash.
pub async fn list_claims(cluster: &Cluster, home_hash: &str) -> Result<Vec<Found>, EngineError> {
    let list = cluster
        .claims
        .list(&selector(home_hash))
        .await
        .map_err(|e| EngineError(format!("cannot list volume claims: {}", message(&e))))?;
    Ok(list
        .items
        .into_iter()
        .map(|c| Found {
            running: false,
            name: c.metadata.name.unwrap_or_default(),
            labels: c.metadata.labels.unwrap_or_default().into_iter().collect(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> EngineConfig {
        toml::from_str("kind = \"kubernetes\"\nmounts = [\"/opt/t:/opt/t:ro\"]\n").unwrap()
    }

    #[test]
    fn the_pod_holds_no_credential_never_pulls_and_keeps_its_home_on_the_claim() {
        let cfg = cfg();
        let spec = PodSpec {
            cfg: &cfg,
            session: "s1",
            home_hash: "h",
            image: "local/agent",
            cwd: "/work/p",
            walls: &[],
        };
        let pod: Pod = serde_json::from_value(pod_manifest(&spec)).expect("a valid Pod");
        assert_eq!(pod.metadata.name.as_deref(), Some("hangar-s1"));
        let labels = pod.metadata.labels.unwrap();
        assert_eq!(labels["hangar.session"], "s1");
        assert_eq!(labels["hangar.home"], "h");
        let spec = pod.spec.unwrap();
        assert_eq!(spec.automount_service_account_token, Some(false));
        let c = &spec.containers[0];
        assert_eq!(c.name, CONTAINER);
        assert_eq!(c.image_pull_policy.as_deref(), Some("Never"));
        let mounts = c.volume_mounts.as_ref().unwrap();
        assert!(
            mounts
                .iter()
                .any(|m| m.mount_path == "/root" && m.name == "home")
        );
        assert!(mounts.iter().any(|m| m.mount_path == "/work/p"));
        assert!(
            mounts
                .iter()
                .any(|m| m.mount_path == "/opt/t" && m.read_only == Some(true))
        );
        let volumes = spec.volumes.unwrap();
        let home = volumes.iter().find(|v| v.name == "home").unwrap();
        assert_eq!(
            home.persistent_volume_claim.as_ref().unwrap().claim_name,
            "hangar-s1-home"
        );
        let claim: PersistentVolumeClaim = serde_json::from_value(claim_manifest(&PodSpec {
            cfg: &cfg,
            session: "s1",
            home_hash: "h",
            image: "x",
            cwd: "/w",
            walls: &[],
        }))
        .expect("a valid claim");
        assert_eq!(claim.metadata.name.as_deref(), Some("hangar-s1-home"));
    }

    #[test]
    fn a_pod_that_cannot_pull_its_image_is_a_failure_with_the_kubelets_words() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "status": {"phase": "Pending", "containerStatuses": [{
                "name": "agent", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ErrImageNeverPull",
                    "message": "Container image \"x\" is not present with pull policy of Never"}}
            }]}
        }))
        .unwrap();
        match pod_state(&pod) {
            PodState::Failed(why) => assert!(why.contains("ErrImageNeverPull"), "{why}"),
            _ => panic!("not a failure"),
        }
        let running: Pod =
            serde_json::from_value(json!({"metadata": {}, "status": {"phase": "Running"}}))
                .unwrap();
        assert!(matches!(pod_state(&running), PodState::Running));
    }
}
