//! `[engines.NAME]` in config.toml: the container engines a session may run
//! on (`hangar new --engine NAME`).
//!
//! ```toml
//! [engines.pod]
//! kind = "podman"                       # or "docker", "kubernetes"
//! socket = "/run/podman/podman.sock"    # the Docker Engine API socket; for
//!                                       # podman without it, hangar runs its own
//! image = "localhost/hangar-claude"     # never pulled; default: what
//!                                       # `hangar engine image build` made
//! runtime = "runc"                      # HostConfig.Runtime, when the default is refused
//! ulimits = { nofile = 20000, nproc = 32768 }
//! network = "none"                      # the container's network mode
//! mounts = ["/opt/tools:/opt/tools:ro"] # extra bind mounts
//! programs = { claude = "/usr/local/bin/claude" }
//!
//! [engines.cluster]
//! kind = "kubernetes"
//! kubeconfig = "/home/me/.kube/config"  # default: KUBECONFIG, ~/.kube/config, in-cluster
//! context = "agents"                    # default: the kubeconfig's current context
//! namespace = "hangar"                  # default: "default"
//! image = "registry.local/hangar-claude"
//! storage = "2Gi"                       # each session's home volume claim
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;

/// Every `[engines.NAME]`, by name.
pub type EnginesConfig = BTreeMap<String, EngineConfig>;

/// What runs the containers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    Docker,
    Podman,
    Kubernetes,
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Docker => "docker",
            EngineKind::Podman => "podman",
            EngineKind::Kubernetes => "kubernetes",
        }
    }
}

/// One `[engines.NAME]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    /// What runs the containers: the Docker Engine API (Docker, or Podman's
    /// compatible service) or a Kubernetes API server.
    pub kind: EngineKind,
    /// The engine's API socket (a path, or `unix://PATH`). Default: Docker's
    /// `/var/run/docker.sock`; for Podman, hangar starts `podman system
    /// service` itself on a socket of its own under `HANGAR_HOME`
    /// (`engines/NAME/podman.sock`) and ends it with the daemon.
    #[serde(default)]
    pub socket: Option<String>,
    /// The image sessions run unless `hangar new --image` names another.
    /// It must already be in the engine: hangar never pulls one.
    #[serde(default)]
    pub image: Option<String>,
    /// The OCI runtime (`HostConfig.Runtime`), e.g. `runc`.
    #[serde(default)]
    pub runtime: Option<String>,
    /// Resource limits by name (`nofile`, `nproc`...), soft and hard alike.
    #[serde(default)]
    pub ulimits: BTreeMap<String, i64>,
    /// The container's network mode. Default `none`: the agent reaches
    /// nothing; `host` lets it reach hangar's proxy on this machine's
    /// loopback (and everything else this machine reaches).
    #[serde(default)]
    pub network: Option<String>,
    /// Extra bind mounts, `HOST:CONTAINER[:ro]`.
    #[serde(default)]
    pub mounts: Vec<String>,
    /// The program each provider runs inside the container, by provider
    /// name. Default: the file name of the program it runs on this machine,
    /// looked up on the image's PATH.
    #[serde(default)]
    pub programs: BTreeMap<String, String>,
    /// The agent's home folder inside the container, kept in the session's
    /// volume across hibernate and wake (the CLI's state lives there).
    #[serde(default = "default_home")]
    pub home: String,
    /// Seconds an agent gets to exit after its container is asked to stop.
    #[serde(default = "default_stop_secs")]
    pub stop_timeout_secs: u32,
    /// Kubernetes: the namespace of the pods.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Kubernetes: the kubeconfig file (default: as kubectl finds one).
    #[serde(default)]
    pub kubeconfig: Option<String>,
    /// Kubernetes: the kubeconfig context (default: its current one).
    #[serde(default)]
    pub context: Option<String>,
    /// Kubernetes: the size of each session's home volume claim.
    #[serde(default = "default_storage")]
    pub storage: String,
    /// Kubernetes: the claims' storage class (default: the cluster's).
    #[serde(default)]
    pub storage_class: Option<String>,
    /// Kubernetes: the pod's `imagePullPolicy`. Default `Never`: hangar
    /// never pulls behind the person's back; `IfNotPresent` is their choice.
    #[serde(default)]
    pub image_pull_policy: Option<String>,
    /// Kubernetes: seconds a pod may take to be scheduled and run.
    #[serde(default = "default_start_secs")]
    pub start_timeout_secs: u64,
}

fn default_storage() -> String {
    "1Gi".to_owned()
}

fn default_start_secs() -> u64 {
    120
}

fn default_home() -> String {
    "/root".to_owned()
}

fn default_stop_secs() -> u32 {
    5
}

impl EngineConfig {
    /// The socket path to connect to; `None` for a Podman engine with no
    /// `socket`, whose service hangar runs itself (`podman_service.rs`).
    pub fn socket_path(&self) -> Option<String> {
        if let Some(s) = &self.socket {
            return Some(s.strip_prefix("unix://").unwrap_or(s).to_owned());
        }
        match self.kind {
            EngineKind::Podman => None,
            _ => Some("/var/run/docker.sock".to_owned()),
        }
    }

    /// The network mode containers get.
    pub fn network_mode(&self) -> &str {
        self.network.as_deref().unwrap_or("none")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_section_reads_with_its_defaults() {
        let c: EnginesConfig = toml::from_str(
            r#"
            [pod]
            kind = "podman"
            socket = "unix:///tmp/p.sock"
            ulimits = { nofile = 20000 }
            "#,
        )
        .unwrap();
        let pod = &c["pod"];
        assert_eq!(pod.kind, EngineKind::Podman);
        assert_eq!(pod.socket_path().as_deref(), Some("/tmp/p.sock"));
        assert_eq!(pod.network_mode(), "none");
        assert_eq!(pod.home, "/root");
        assert_eq!(pod.ulimits["nofile"], 20000);
    }

    #[test]
    fn a_podman_engine_without_a_socket_is_hangars_own_service() {
        let c: EnginesConfig =
            toml::from_str("[pod]\nkind = \"podman\"\n[d]\nkind = \"docker\"\n").unwrap();
        assert_eq!(c["pod"].socket_path(), None);
        assert_eq!(
            c["d"].socket_path().as_deref(),
            Some("/var/run/docker.sock")
        );
    }

    #[test]
    fn an_unknown_kind_or_key_is_refused() {
        assert!(toml::from_str::<EnginesConfig>("[x]\nkind = \"lxc\"\n").is_err());
        assert!(
            toml::from_str::<EnginesConfig>("[x]\nkind = \"docker\"\nimgae = \"a\"\n").is_err()
        );
    }
}
