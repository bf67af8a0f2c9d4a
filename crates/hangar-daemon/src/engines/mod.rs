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
mod config;
mod docker;
mod image;

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
}

impl Engines {
    pub fn new(home: PathBuf, config: Section<EnginesConfig>) -> Engines {
        let home_hash = rules::home_hash(&home.display().to_string());
        Engines {
            home,
            home_hash,
            config,
        }
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
        let cfg = self.engine(name)?;
        if cfg.kind == EngineKind::Kubernetes {
            return Err(unsupported(name));
        }
        Ok(())
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
            image: binding
                .image(cfg.and_then(|c| c.image.as_deref()))
                .map(str::to_owned),
        })
    }

    /// Turn a launch of `meta` (bound to an engine) into the exec bridge:
    /// the image checked, the container made or started. Any engine error
    /// is returned, never a local process.
    pub async fn wrap_launch(
        &self,
        meta: &SessionMeta,
        request: SpawnRequest,
    ) -> Result<SpawnRequest, EngineError> {
        let Some(binding) = &meta.engine else {
            return Ok(request);
        };
        let name = binding.name.as_str();
        let cfg = self.engine(name)?;
        if cfg.kind == EngineKind::Kubernetes {
            return Err(unsupported(name));
        }
        let image = binding.image(cfg.image.as_deref()).ok_or_else(|| {
            EngineError(format!(
                "engine {name} has no image: set image = \"...\" in [engines.{name}] or pass --image"
            ))
        })?;
        let docker = docker::connect(name, cfg)?;
        docker::ensure_image(&docker, name, image).await?;
        let cwd = request.cwd.display().to_string();
        docker::ensure_container(
            &docker,
            &docker::ContainerSpec {
                engine: name,
                cfg,
                session: meta.id.as_str(),
                home_hash: &self.home_hash,
                image,
                cwd: &cwd,
            },
        )
        .await?;
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
        let mut cmd = vec![program];
        cmd.extend(request.args.iter().cloned());
        let spec = bridge::ExecSpec {
            engine: name.to_owned(),
            socket: cfg.socket_path(),
            container: rules::container_name(meta.id.as_str()),
            cmd,
            env: request
                .env
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect(),
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
        Ok(SpawnRequest {
            program: exe,
            args: vec!["engine-exec".to_owned()],
            env: vec![
                (bridge::SPEC_VAR.to_owned(), spec),
                ("TERM".to_owned(), "xterm-256color".to_owned()),
            ],
            ..request
        })
    }

    /// Hibernate: stop the session's container, keeping it and its volume.
    pub async fn stop(&self, meta: &SessionMeta) {
        let Some(binding) = &meta.engine else { return };
        let Some((docker, cfg)) = self.connect_quietly(&binding.name) else {
            return;
        };
        let name = rules::container_name(meta.id.as_str());
        if let Err(e) = docker::stop(&docker, &name, cfg.stop_timeout_secs).await {
            tracing::warn!(session = %meta.id, "engine {}: {e}", binding.name);
        }
    }

    /// Close: remove the sessions' containers and volumes.
    pub async fn remove(&self, metas: &[SessionMeta]) {
        for meta in metas {
            let Some(binding) = &meta.engine else {
                continue;
            };
            let Some((docker, _)) = self.connect_quietly(&binding.name) else {
                continue;
            };
            if let Err(e) = docker::remove(&docker, meta.id.as_str()).await {
                tracing::warn!(session = %meta.id, "engine {}: {e}", binding.name);
            }
        }
    }

    fn connect_quietly(&self, name: &str) -> Option<(bollard::Docker, &'static EngineConfig)> {
        let cfg = self.config.get().get(name)?;
        if cfg.kind == EngineKind::Kubernetes {
            return None;
        }
        match docker::connect(name, cfg) {
            Ok(d) => Some((d, cfg)),
            Err(e) => {
                tracing::warn!("{e}");
                None
            }
        }
    }

    /// Before a start restores anything: stop this home's containers a
    /// killed predecessor left running, so no agent of theirs writes a
    /// conversation a restored pane resumes (the restore starts the visible
    /// ones again). Another home's are never looked at twice.
    pub async fn stop_leftovers(&self) {
        for (name, cfg) in self.config.get() {
            if cfg.kind == EngineKind::Kubernetes
                || !std::path::Path::new(&cfg.socket_path()).exists()
            {
                continue;
            }
            let Some((docker, cfg)) = self.connect_quietly(name) else {
                continue;
            };
            let found = match docker::list_own(&docker, &self.home_hash).await {
                Ok(f) => f,
                Err(e) => {
                    tracing::warn!("engine {name}: {e}");
                    continue;
                }
            };
            let stops = found.iter().filter_map(|c| {
                match rules::leftover(&c.labels, &self.home_hash, c.running, |_| true) {
                    Leftover::Adopt { running: true } => Some(c.id.clone()),
                    _ => None,
                }
            });
            let stops = stops.map(|container| {
                let docker = docker.clone();
                async move {
                    if let Err(e) = docker::stop(&docker, &container, cfg.stop_timeout_secs).await {
                        tracing::warn!(container, "engine {name}: {e}");
                    }
                }
            });
            futures::future::join_all(stops).await;
        }
    }

    /// Once every session is loaded: remove this home's containers (and
    /// volumes) of sessions it no longer has. Returns how many.
    pub async fn remove_unknown(&self, known: impl Fn(&str) -> bool) -> usize {
        let mut removed = 0;
        for (name, cfg) in self.config.get() {
            if cfg.kind == EngineKind::Kubernetes
                || !std::path::Path::new(&cfg.socket_path()).exists()
            {
                continue;
            }
            let Some((docker, _)) = self.connect_quietly(name) else {
                continue;
            };
            let Ok(found) = docker::list_own(&docker, &self.home_hash).await else {
                continue;
            };
            for c in found {
                if rules::leftover(&c.labels, &self.home_hash, c.running, &known)
                    == Leftover::Remove
                    && let Some(session) = session_of(&c.labels)
                {
                    match docker::remove_container(&docker, &c.id, &session).await {
                        Ok(()) => removed += 1,
                        Err(e) => tracing::warn!(session, "engine {name}: {e}"),
                    }
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
            return Err(unsupported(name));
        }
        image::build(&self.home, name, cfg, provider).await
    }
}

fn session_of(labels: &[(String, String)]) -> Option<String> {
    labels
        .iter()
        .find(|(k, _)| k == rules::SESSION_LABEL)
        .map(|(_, v)| v.clone())
}

fn unsupported(name: &str) -> EngineError {
    EngineError(format!(
        "engine {name} is a kubernetes engine, which this build of hangar cannot run sessions on yet; use a docker or podman engine"
    ))
}
