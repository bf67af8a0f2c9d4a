//! Sessions on a container engine (issue 32): `[engines.NAME]`,
//! `hangar new --engine NAME [--image IMAGE]`.
//!
//! A session bound to an engine (its `SessionMeta::engine`) runs there and
//! never on this machine (DESIGN.md rule 14): every start goes through
//! [`Engines::wrap_launch`], which makes sure the image is in the engine
//! (never pulling one), makes or starts the session's container, and turns
//! the launch into the exec bridge (`bridge.rs`) inside the same PTY a
//! local agent gets, so the rest of the daemon (screen, attach, resize,
//! exit watch, hibernate, restore's bound) treats it like any session. Any
//! engine error is the start's failure, with the engine's own words.
//!
//! Hibernate stops the container and keeps it and its volume (the CLI's
//! state); wake starts it and execs the agent again, resuming by the
//! provider id as for a local agent; close removes both. Everything made is
//! labelled with the session and a hash of `HANGAR_HOME`: a start stops this
//! home's running leftovers before restoring, and removes those of sessions
//! it no longer has, never another home's.

pub mod bridge;
mod built_images;
mod config;
mod container_state;
mod docker;
mod image;
mod kube_exec;
mod kubernetes;
mod podman_service;

use std::path::PathBuf;

use hangar_core::SessionMeta;
use hangar_core::engine::{self as rules, Leftover};
use hangar_protocol::view::EngineView;

pub use config::{EngineConfig, EngineKind, EnginesConfig};

use crate::pty::SpawnRequest;
use crate::section::Section;

/// An engine's refusal, in words a person can act on (the engine's own
/// message inside).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EngineError(pub String);

/// The engines sessions run on.
pub struct Engines {
    home: PathBuf,
    home_hash: String,
    config: Section<EnginesConfig>,
    /// The Podman services hangar runs for engines with no `socket`.
    services: podman_service::Services,
    /// The images `hangar engine image build` made, per engine and provider.
    built: built_images::BuiltImages,
}

impl Engines {
    pub fn new(home: PathBuf, config: Section<EnginesConfig>) -> Engines {
        let home_hash = rules::home_hash(&home.display().to_string());
        Engines {
            services: podman_service::Services::new(home.clone()),
            built: built_images::BuiltImages::load(&home),
            home,
            home_hash,
            config,
        }
    }

    /// The API socket of Docker or Podman engine `name`: its `socket`, else
    /// (Podman) the service hangar runs for it, started now when needed.
    async fn socket(&self, name: &str, cfg: &EngineConfig) -> Result<String, EngineError> {
        match cfg.socket_path() {
            Some(socket) => Ok(socket),
            None => self.services.socket(name).await,
        }
    }

    /// End the Podman services hangar started (the daemon's shutdown, after
    /// its sessions' stops).
    pub async fn end_services(&self) {
        self.services.end_all().await;
    }

    /// The image a session of `meta` runs on engine `name`: its own
    /// (`--image`), else the engine's `image`, else the one `hangar engine
    /// image build` made there for its provider.
    fn image_of(
        &self,
        meta: &SessionMeta,
        name: &str,
        cfg: Option<&EngineConfig>,
    ) -> Option<String> {
        let binding = meta.engine.as_ref()?;
        binding
            .image(cfg.and_then(|c| c.image.as_deref()))
            .map(str::to_owned)
            .or_else(|| self.built.get(name, meta.provider.name()))
    }

    /// The `hangar.home` label of everything this home makes.
    pub fn home_hash(&self) -> &str {
        &self.home_hash
    }

    fn engine(&self, name: &str) -> Result<&'static EngineConfig, EngineError> {
        self.config.get().get(name).ok_or_else(|| {
            EngineError(format!(
                "engine {name} is not in config.toml (add [engines.{name}]); this session runs only on it"
            ))
        })
    }

    /// Whether `name` may be asked for by `hangar new --engine`.
    pub fn check_new(&self, name: &str) -> Result<(), EngineError> {
        self.engine(name).map(|_| ())
    }

    /// The session's engine as `hangar ls` shows it.
    pub fn view(&self, meta: &SessionMeta) -> Option<EngineView> {
        let binding = meta.engine.as_ref()?;
        let cfg = self.config.get().get(&binding.name);
        let name = rules::container_name(meta.id.as_str());
        let kubernetes = cfg.is_some_and(|c| c.kind == EngineKind::Kubernetes);
        Some(EngineView {
            name: binding.name.clone(),
            kind: cfg.map(|c| c.kind.name().to_owned()),
            container: (!kubernetes).then(|| name.clone()),
            pod: kubernetes.then_some(name),
            image: self.image_of(meta, &binding.name, cfg),
        })
    }

    /// Turn a launch of `meta` (bound to an engine) into the exec bridge:
    /// the image checked, the container (or pod) made or started with the
    /// walls hangar's sandbox gives an agent (`sandbox.walls`: its CLI's
    /// state folder under `HANGAR_HOME`, the proxy through the relay, its
    /// own socket back to the daemon, a placeholder for every key). Any
    /// engine error is returned, never a local process.
    pub async fn wrap_launch(
        &self,
        meta: &SessionMeta,
        request: SpawnRequest,
        sandbox: &crate::sandbox::Sandbox,
        grant: Option<&hangar_proxy::Grant>,
    ) -> Result<(SpawnRequest, crate::sandbox::Held), EngineError> {
        let Some(binding) = &meta.engine else {
            return Ok((request, Default::default()));
        };
        let name = binding.name.as_str();
        let cfg = self.engine(name)?;
        let image = self.image_of(meta, name, Some(cfg)).ok_or_else(|| {
            let provider = meta.provider.name();
            EngineError(format!(
                "engine {name} has no image for {provider}: build one with `hangar engine image build {name} --provider {provider}`, set image = \"...\" in [engines.{name}] or pass --image"
            ))
        })?;
        let image = image.as_str();
        let cwd = request.cwd.display().to_string();
        let program = cfg
            .programs
            .get(meta.provider.name())
            .cloned()
            .or_else(|| {
                request
                    .program
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| request.program.display().to_string());
        // The same walls as hangar's sandbox; on the engine's network the
        // agent has a loopback of its own for the relay, on the host's it
        // reaches the proxy itself.
        let walls = sandbox
            .walls(
                meta,
                &request,
                grant,
                &crate::sandbox::Inside {
                    home: cfg.home.clone(),
                    kind: cfg.kind.name(),
                    host_env: false,
                    relay_proxy: cfg.network_mode() != "host",
                },
            )
            .map_err(|e| {
                EngineError(format!(
                    "cannot start {} on engine {name}: {e}",
                    meta.id.short()
                ))
            })?;
        let mounts = rules::wall_mounts(&rules::Walls {
            hangar: walls.hangar.clone(),
            run: (walls.run.clone(), walls.control_run.clone()),
            state: walls.state.clone(),
            files: walls.files.clone(),
            writable: walls.writable.clone(),
        });
        let inside_socket = format!("{}/proxy.sock", walls.control_run);
        let cmd = hangar_core::sandbox::relay_command(
            walls
                .proxy
                .as_ref()
                .map(|(_, port)| (inside_socket.as_str(), *port)),
            &program,
            &request.args,
        );
        let env: Vec<String> = walls.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let target = if cfg.kind == EngineKind::Kubernetes {
            let cluster = kubernetes::connect(name, cfg).await?;
            kubernetes::ensure_pod(
                &cluster,
                &kubernetes::PodSpec {
                    cfg,
                    session: meta.id.as_str(),
                    home_hash: &self.home_hash,
                    image,
                    cwd: &cwd,
                    walls: &mounts,
                },
            )
            .await?;
            bridge::Target::Kubernetes {
                access: kubernetes::Access::of(cfg),
                namespace: cluster.namespace.clone(),
                pod: rules::container_name(meta.id.as_str()),
                container: kubernetes::CONTAINER.to_owned(),
            }
        } else {
            let socket = self.socket(name, cfg).await?;
            let engine = docker::connect(name, cfg, &socket)?;
            docker::ensure_image(&engine.docker, name, image).await?;
            docker::ensure_container(
                &engine,
                &docker::ContainerSpec {
                    engine: name,
                    cfg,
                    session: meta.id.as_str(),
                    home_hash: &self.home_hash,
                    image,
                    cwd: &cwd,
                    walls: &mounts,
                },
            )
            .await?;
            bridge::Target::Docker {
                socket,
                container: rules::container_name(meta.id.as_str()),
                podman: cfg.kind == EngineKind::Podman,
            }
        };
        let spec = bridge::ExecSpec {
            engine: name.to_owned(),
            target,
            cmd,
            env,
            working_dir: cwd,
            stop_timeout_secs: cfg.stop_timeout_secs,
        };
        let exe = std::env::current_exe().map_err(|e| {
            EngineError(format!(
                "cannot find hangar's own program for the bridge: {e}"
            ))
        })?;
        let spec = serde_json::to_string(&spec)
            .map_err(|e| EngineError(format!("cannot write the bridge's spec: {e}")))?;
        Ok((
            SpawnRequest {
                program: exe,
                args: vec!["engine-exec".to_owned()],
                env: vec![
                    (bridge::SPEC_VAR.to_owned(), spec),
                    ("TERM".to_owned(), "xterm-256color".to_owned()),
                ],
                ..request
            },
            walls.held,
        ))
    }

    /// Hibernate: stop the session's container, keeping it and its volume;
    /// on Kubernetes, delete its pod and keep its volume claim.
    pub async fn stop(&self, meta: &SessionMeta) {
        let Some(binding) = &meta.engine else { return };
        let name = rules::container_name(meta.id.as_str());
        let result = match self.connect_quietly(&binding.name).await {
            Some((Client::Docker(engine), cfg)) => {
                docker::stop(&engine.docker, &name, cfg.stop_timeout_secs).await
            }
            Some((Client::Kubernetes(cluster), cfg)) => {
                kubernetes::delete_pod(&cluster, &name, cfg.stop_timeout_secs).await
            }
            None => return,
        };
        if let Err(e) = result {
            tracing::warn!(session = %meta.id, "engine {}: {e}", binding.name);
        }
    }

    /// Close: remove the sessions' containers (or pods) and volumes.
    pub async fn remove(&self, metas: &[SessionMeta]) {
        for meta in metas {
            let Some(binding) = &meta.engine else {
                continue;
            };
            let result = match self.connect_quietly(&binding.name).await {
                Some((Client::Docker(engine), _)) => {
                    docker::remove(&engine.docker, meta.id.as_str()).await
                }
                Some((Client::Kubernetes(cluster), _)) => {
                    kubernetes::remove(&cluster, meta.id.as_str()).await
                }
                None => continue,
            };
            if let Err(e) = result {
                tracing::warn!(session = %meta.id, "engine {}: {e}", binding.name);
            }
        }
    }

    async fn connect_quietly(&self, name: &str) -> Option<(Client, &'static EngineConfig)> {
        let cfg = self.config.get().get(name)?;
        let client = match cfg.kind {
            EngineKind::Kubernetes => kubernetes::connect(name, cfg)
                .await
                .map(|c| Client::Kubernetes(Box::new(c))),
            _ => match self.socket(name, cfg).await {
                Ok(socket) => docker::connect(name, cfg, &socket).map(Client::Docker),
                Err(e) => Err(e),
            },
        };
        match client {
            Ok(c) => Some((c, cfg)),
            Err(e) => {
                tracing::warn!("{e}");
                None
            }
        }
    }

    /// The engines a start looks for leftovers on: every Kubernetes one,
    /// every Docker or Podman one whose socket is there, and every Podman
    /// one hangar runs the service of (started for the look: a killed
    /// predecessor's containers outlive its service).
    async fn reachable(&self) -> Vec<(&'static str, Client, &'static EngineConfig)> {
        let mut out = Vec::new();
        for (name, cfg) in self.config.get() {
            if cfg.kind != EngineKind::Kubernetes
                && cfg
                    .socket_path()
                    .is_some_and(|s| !std::path::Path::new(&s).exists())
            {
                continue;
            }
            if let Some((client, cfg)) = self.connect_quietly(name).await {
                out.push((name.as_str(), client, cfg));
            }
        }
        out
    }

    /// Before a start restores anything: stop this home's containers a
    /// killed predecessor left running (delete its pods, keeping their
    /// claims), so no agent of theirs writes a conversation a restored pane
    /// resumes (the restore starts the visible ones again). Another home's
    /// are never looked at twice.
    pub async fn stop_leftovers(&self) {
        for (name, client, cfg) in self.reachable().await {
            let found = match &client {
                Client::Docker(engine) => docker::list_own(engine, &self.home_hash)
                    .await
                    .map(|f| f.into_iter().map(|c| found_container(name, c)).collect()),
                Client::Kubernetes(cluster) => kubernetes::list_pods(cluster, &self.home_hash)
                    .await
                    .map(|f| {
                        f.into_iter()
                            .map(|p| (p.name, p.labels, p.running))
                            .collect()
                    }),
            };
            let found: Vec<FoundObject> = match found {
                Ok(f) => f,
                Err(e) => {
                    tracing::warn!("engine {name}: {e}");
                    continue;
                }
            };
            let stops = found.iter().filter_map(|(id, labels, running)| {
                match rules::leftover(labels, &self.home_hash, *running, |_| true) {
                    Leftover::Adopt { running: true } => Some(id.clone()),
                    _ => None,
                }
            });
            let stops = stops.map(|target| {
                let client = &client;
                async move {
                    let result = match client {
                        Client::Docker(engine) => {
                            docker::stop(&engine.docker, &target, cfg.stop_timeout_secs).await
                        }
                        Client::Kubernetes(cluster) => {
                            kubernetes::delete_pod(cluster, &target, cfg.stop_timeout_secs).await
                        }
                    };
                    if let Err(e) = result {
                        tracing::warn!(target, "engine {name}: {e}");
                    }
                }
            });
            futures::future::join_all(stops).await;
        }
    }

    /// Once every session is loaded: remove this home's containers (and
    /// volumes; pods and claims) of sessions it no longer has. Returns how
    /// many sessions' worth.
    pub async fn remove_unknown(&self, known: impl Fn(&str) -> bool) -> usize {
        let mut removed = 0;
        for (name, client, _) in self.reachable().await {
            let found = match &client {
                Client::Docker(engine) => docker::list_own(engine, &self.home_hash)
                    .await
                    .map(|f| f.into_iter().map(|c| found_container(name, c)).collect()),
                // A hibernated session has a claim and no pod: look at both.
                Client::Kubernetes(cluster) => {
                    match (
                        kubernetes::list_pods(cluster, &self.home_hash).await,
                        kubernetes::list_claims(cluster, &self.home_hash).await,
                    ) {
                        (Ok(p), Ok(c)) => Ok(p
                            .into_iter()
                            .chain(c)
                            .map(|f| (f.name, f.labels, f.running))
                            .collect()),
                        (Err(e), _) | (_, Err(e)) => Err(e),
                    }
                }
            };
            let found: Vec<FoundObject> = match found {
                Ok(f) => f,
                Err(e) => {
                    tracing::warn!("engine {name}: {e}");
                    continue;
                }
            };
            let mut done = std::collections::BTreeSet::new();
            for (id, labels, running) in found {
                if rules::leftover(&labels, &self.home_hash, running, &known) != Leftover::Remove {
                    continue;
                }
                let Some(session) = session_of(&labels) else {
                    continue;
                };
                let result = match &client {
                    Client::Docker(engine) => {
                        docker::remove_container(&engine.docker, &id, &session).await
                    }
                    Client::Kubernetes(cluster) => {
                        if !done.insert(session.clone()) {
                            continue;
                        }
                        kubernetes::remove(cluster, &session).await
                    }
                };
                match result {
                    Ok(()) => removed += 1,
                    Err(e) => tracing::warn!(session, "engine {name}: {e}"),
                }
            }
        }
        removed
    }

    /// `hangar engine image build NAME [--provider P]`.
    pub async fn build_image(
        &self,
        name: &str,
        provider: Option<&str>,
    ) -> Result<hangar_protocol::reply::ImageBuilt, EngineError> {
        let cfg = self.engine(name)?;
        if cfg.kind == EngineKind::Kubernetes {
            return Err(EngineError(format!(
                "engine {name} is a kubernetes engine: hangar builds images for Docker and Podman; \
                 build one with a Docker or Podman engine and load it into the cluster's nodes \
                 (or push it to a registry the cluster reaches), then set image = \"...\""
            )));
        }
        let socket = self.socket(name, cfg).await?;
        let built = image::build(&self.home, name, cfg, &socket, provider).await?;
        // That engine's default for these providers from now on (config's
        // `image` still wins).
        let providers = built_images::providers_of(provider);
        if let Err(e) = self.built.record(name, &providers, &built.image) {
            tracing::warn!(
                "engine {name}: built {} but cannot record it as the default image of {}: {e}",
                built.image,
                providers.join(", ")
            );
        }
        Ok(built)
    }
}

fn session_of(labels: &[(String, String)]) -> Option<String> {
    labels
        .iter()
        .find(|(k, _)| k == rules::SESSION_LABEL)
        .map(|(_, v)| v.clone())
}

/// A container or pod this home made: its id or name, its labels, whether
/// it runs.
type FoundObject = (String, Vec<(String, String)>, bool);

/// A listed container as a leftover check reads it: a state word no engine
/// documents is taken as not running, and said.
fn found_container(engine: &str, c: docker::Found) -> FoundObject {
    if let rules::ContainerState::Unknown(word) = &c.state {
        tracing::warn!(
            "engine {engine}: container {} is in a state hangar does not know ({word:?}); taken as not running",
            c.id
        );
    }
    let running = c.state.holds_processes();
    (c.id, c.labels, running)
}

/// A connection to one engine (a cluster's client is large: boxed).
enum Client {
    Docker(docker::Engine),
    Kubernetes(Box<kubernetes::Cluster>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_core::engine::EngineBinding;
    use hangar_core::{Provider, SessionId};

    fn engines_with(home: &std::path::Path, config: &str) -> (Engines, &'static EnginesConfig) {
        let config: &'static EnginesConfig =
            Box::leak(Box::new(toml::from_str(config).expect("config")));
        (
            Engines::new(home.to_owned(), Section::new(move || config)),
            config,
        )
    }

    fn on_pod(provider: &str, image: Option<&str>) -> SessionMeta {
        let mut meta = SessionMeta::new(SessionId::from("s1"), Provider::from_name(provider), "/w");
        meta.engine = Some(Box::new(EngineBinding {
            name: "pod".into(),
            image: image.map(str::to_owned),
        }));
        meta
    }

    #[test]
    fn a_built_image_is_the_engines_default_for_its_provider_until_config_names_one() {
        let home = tempfile::TempDir::new().expect("home");
        let (engines, config) = engines_with(home.path(), "[pod]\nkind = \"podman\"\n");
        let claude = on_pod("claude", None);
        assert_eq!(engines.image_of(&claude, "pod", config.get("pod")), None);

        engines
            .built
            .record(
                "pod",
                &built_images::providers_of(Some("claude@2.1.197")),
                "localhost/hangar-pod-claude-2.1.197",
            )
            .expect("record");
        assert_eq!(
            engines
                .image_of(&claude, "pod", config.get("pod"))
                .as_deref(),
            Some("localhost/hangar-pod-claude-2.1.197")
        );
        assert_eq!(
            engines.view(&claude).and_then(|v| v.image).as_deref(),
            Some("localhost/hangar-pod-claude-2.1.197"),
            "ls shows it"
        );
        // Another provider has no image of its own.
        let codex = on_pod("codex", None);
        assert_eq!(engines.image_of(&codex, "pod", config.get("pod")), None);
        // The next daemon reads it back.
        let (again, _) = engines_with(home.path(), "[pod]\nkind = \"podman\"\n");
        assert_eq!(
            again.image_of(&claude, "pod", config.get("pod")).as_deref(),
            Some("localhost/hangar-pod-claude-2.1.197")
        );
        // config.toml's `image` says otherwise, and `--image` over both.
        let (named, named_config) = engines_with(
            home.path(),
            "[pod]\nkind = \"podman\"\nimage = \"localhost/mine\"\n",
        );
        assert_eq!(
            named
                .image_of(&claude, "pod", named_config.get("pod"))
                .as_deref(),
            Some("localhost/mine")
        );
        let own = on_pod("claude", Some("localhost/for-this-one"));
        assert_eq!(
            named
                .image_of(&own, "pod", named_config.get("pod"))
                .as_deref(),
            Some("localhost/for-this-one")
        );
    }
}
