//! Docker and Podman through the Docker Engine API (bollard; Podman's
//! `podman system service` answers the same API): the image check, the
//! session's container and volume, stop, remove, and the listing of this
//! home's containers.
//!
//! One container per session, named from its id, running a keep-alive as
//! its main process; the agent itself is `exec`ed into it with a TTY by the
//! bridge (`bridge.rs`) at each start, so a wake resumes the conversation in
//! the same container, with the CLI's state kept in the session's volume.

use std::collections::HashMap;

use bollard::Docker;
use bollard::errors::Error as BollardError;
use bollard::models::{ContainerCreateBody, HostConfig, ResourcesUlimits, VolumeCreateRequest};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, CreateImageOptionsBuilder, RemoveContainerOptionsBuilder,
    RemoveVolumeOptionsBuilder, StopContainerOptionsBuilder,
};
use futures::StreamExt;
use hangar_core::engine::{self, ContainerState, HOME_LABEL};

use super::EngineError;
use super::config::EngineConfig;
use super::container_state;

/// How long one call to the engine may take before it counts as a refusal
/// (a start never hangs on an engine that stopped answering).
const API_TIMEOUT_SECS: u64 = 60;
const API_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(API_TIMEOUT_SECS);

/// A connection to one Docker or Podman engine: bollard's client, and the
/// socket itself for the reads bollard's types cannot hold
/// (`container_state.rs`).
#[derive(Clone)]
pub struct Engine {
    pub docker: Docker,
    pub socket: String,
}

/// The keep-alive the container runs as its main process: on a stop it asks
/// every other process (the agent) to end, gives them a moment, and exits,
/// instead of leaving them to the engine's SIGKILL.
const KEEPALIVE: &str = "trap 'kill -TERM -1 2>/dev/null; sleep 1; exit 0' TERM INT; \
     while :; do sleep 3600 & wait $!; done";

/// A connection to engine `name` through `socket` (its configured one, or
/// the Podman service hangar started for it).
pub fn connect(name: &str, cfg: &EngineConfig, socket: &str) -> Result<Engine, EngineError> {
    if !std::path::Path::new(socket).exists() {
        return Err(EngineError(format!(
            "engine {name}: its socket {socket} does not exist (is the {} service running? for Podman: `podman system service --time=0 unix://{socket}`, or leave `socket` out and hangar starts one)",
            cfg.kind.name()
        )));
    }
    let docker = Docker::connect_with_unix(socket, API_TIMEOUT_SECS, bollard::API_DEFAULT_VERSION)
        .map_err(|e| EngineError(format!("engine {name}: cannot connect to {socket}: {e}")))?;
    Ok(Engine {
        docker,
        socket: socket.to_owned(),
    })
}

/// The engine's own words for an error.
pub fn message(e: &BollardError) -> String {
    match e {
        BollardError::DockerResponseServerError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

fn status(e: &BollardError) -> Option<u16> {
    match e {
        BollardError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

fn not_found(e: &BollardError) -> bool {
    status(e) == Some(404)
}

/// The image must already be in the engine: a missing one is an error that
/// says how to get it, never a pull.
pub async fn ensure_image(docker: &Docker, name: &str, image: &str) -> Result<(), EngineError> {
    match docker.inspect_image(image).await {
        Ok(_) => Ok(()),
        Err(e) if engine::image_missing(status(&e).unwrap_or(0), &message(&e)) => {
            Err(EngineError(format!(
                "engine {name}: image {image} is not in the engine ({}); build one with `hangar engine image build {name}` or load it yourself: hangar never pulls an image",
                message(&e)
            )))
        }
        Err(e) => Err(EngineError(format!(
            "engine {name}: cannot look at image {image}: {}",
            message(&e)
        ))),
    }
}

/// What the container of a session is made with.
pub struct ContainerSpec<'a> {
    pub engine: &'a str,
    pub cfg: &'a EngineConfig,
    pub session: &'a str,
    pub home_hash: &'a str,
    pub image: &'a str,
    /// The session's folder, bind-mounted read-write at the same path.
    pub cwd: &'a str,
    /// The walls hangar's sandbox would give the agent (its state folder,
    /// the relay, its sockets), as mounts.
    pub walls: &'a [engine::Mount],
}

/// The label that records which mounts a container was made with: a
/// container made with others (an older hangar, a new CA file, hooks turned
/// on) is made again, its volume kept.
const MOUNTS_LABEL: &str = "hangar.mounts";

fn label_map(session: &str, home_hash: &str) -> HashMap<String, String> {
    engine::labels(session, home_hash).into_iter().collect()
}

impl ContainerSpec<'_> {
    fn binds(&self) -> Vec<String> {
        let mut binds = vec![
            format!("{}:{}", self.cwd, self.cwd),
            format!("{}:{}", engine::volume_name(self.session), self.cfg.home),
        ];
        binds.extend(self.cfg.mounts.iter().cloned());
        binds.extend(self.walls.iter().map(engine::Mount::bind));
        binds
    }

    /// A hash of the container's mounts, image and network.
    fn mounts_hash(&self) -> String {
        let mut all = self.binds();
        all.push(self.image.to_owned());
        all.push(self.cfg.network_mode().to_owned());
        engine::home_hash(&all.join("\n"))
    }
}

/// The session's container, made when missing and started when not
/// running. A container of that name made by another hangar home is never
/// touched: that is an error. Its state is read as a plain word
/// (`container_state.rs`): whatever the engine calls it, a container that
/// does not run is started, never a failed start.
pub async fn ensure_container(
    engine: &Engine,
    spec: &ContainerSpec<'_>,
) -> Result<(), EngineError> {
    let docker = &engine.docker;
    let name = engine::container_name(spec.session);
    let refused = |what: &str, e: &BollardError| {
        EngineError(format!(
            "engine {}: cannot {what} container {name}: {}",
            spec.engine,
            message(e)
        ))
    };
    let found = container_state::inspect(&engine.socket, &name, API_TIMEOUT)
        .await
        .map_err(|e| {
            EngineError(format!(
                "engine {}: cannot look at container {name}: {e}",
                spec.engine
            ))
        })?;
    let state = match found {
        Some(found) => {
            if found.label(HOME_LABEL) != Some(spec.home_hash) {
                return Err(EngineError(format!(
                    "engine {}: a container named {name} exists that this hangar home did not make; it is left alone",
                    spec.engine
                )));
            }
            if found.label(MOUNTS_LABEL) != Some(spec.mounts_hash().as_str()) {
                // Made with other mounts: made again (the agent's home
                // volume and its state folder are kept).
                let options = RemoveContainerOptionsBuilder::new().force(true).build();
                match docker.remove_container(&name, Some(options)).await {
                    Ok(()) => {}
                    Err(e) if not_found(&e) => {}
                    Err(e) => return Err(refused("remove", &e)),
                }
                create(docker, spec, &name).await?;
                ContainerState::NotRunning
            } else {
                found.state()
            }
        }
        None => {
            create(docker, spec, &name).await?;
            ContainerState::NotRunning
        }
    };
    match state {
        ContainerState::Running => return Ok(()),
        // A stop under way (a hibernate a moment ago, or the bridge of a
        // daemon that died): a start is refused until it ends.
        ContainerState::Stopping => {
            wait_stopped(engine, &name, spec.cfg.stop_timeout_secs).await;
        }
        ContainerState::Unknown(word) => tracing::warn!(
            "engine {}: container {name} is in a state hangar does not know ({word:?}); taken as not running",
            spec.engine
        ),
        ContainerState::Paused | ContainerState::NotRunning => {}
    }
    if let Err(first) = docker.start_container(&name, None).await {
        // Still stopping (a bridge of a daemon that died asked for the stop
        // a moment ago), or paused: let a stop finish, then start it once
        // more.
        tracing::debug!("start {name}: {}; stopping it first", message(&first));
        stop(docker, &name, spec.cfg.stop_timeout_secs).await?;
        docker
            .start_container(&name, None)
            .await
            .map_err(|e| refused("start", &e))?;
    }
    Ok(())
}

/// Wait (a bounded time: the stop's own timeout and a margin) until
/// container `name` is no longer stopping; a read that fails ends the wait
/// (the start that follows says what is wrong).
async fn wait_stopped(engine: &Engine, name: &str, stop_timeout_secs: u32) {
    let until = tokio::time::Instant::now()
        + std::time::Duration::from_secs(u64::from(stop_timeout_secs) + 10);
    while tokio::time::Instant::now() < until {
        match container_state::inspect(&engine.socket, name, API_TIMEOUT).await {
            Ok(Some(found)) if found.state() == ContainerState::Stopping => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            _ => return,
        }
    }
}

async fn create(docker: &Docker, spec: &ContainerSpec<'_>, name: &str) -> Result<(), EngineError> {
    let volume = engine::volume_name(spec.session);
    match docker
        .create_volume(VolumeCreateRequest {
            name: Some(volume.clone()),
            labels: Some(label_map(spec.session, spec.home_hash)),
            ..Default::default()
        })
        .await
    {
        Ok(_) => {}
        // Kept from the container made before (remade with other mounts).
        Err(e) if status(&e) == Some(409) => {}
        Err(e) => {
            return Err(EngineError(format!(
                "engine {}: cannot create volume {volume}: {}",
                spec.engine,
                message(&e)
            )));
        }
    }
    let binds = spec.binds();
    let mut labels = label_map(spec.session, spec.home_hash);
    labels.insert(MOUNTS_LABEL.to_owned(), spec.mounts_hash());
    let ulimits = spec
        .cfg
        .ulimits
        .iter()
        .map(|(name, n)| ResourcesUlimits {
            name: Some(name.clone()),
            soft: Some(*n),
            hard: Some(*n),
        })
        .collect::<Vec<_>>();
    let body = ContainerCreateBody {
        image: Some(spec.image.to_owned()),
        cmd: Some(vec!["/bin/sh".into(), "-c".into(), KEEPALIVE.into()]),
        entrypoint: Some(Vec::new()),
        env: Some(vec![format!("HOME={}", spec.cfg.home)]),
        working_dir: Some(spec.cwd.to_owned()),
        labels: Some(labels),
        stop_timeout: Some(i64::from(spec.cfg.stop_timeout_secs)),
        host_config: Some(HostConfig {
            binds: Some(binds),
            network_mode: Some(spec.cfg.network_mode().to_owned()),
            runtime: spec.cfg.runtime.clone(),
            ulimits: (!ulimits.is_empty()).then_some(ulimits),
            ..Default::default()
        }),
        ..Default::default()
    };
    let options = CreateContainerOptionsBuilder::new().name(name).build();
    docker
        .create_container(Some(options), body)
        .await
        .map_err(|e| {
            EngineError(format!(
                "engine {}: cannot create container {name}: {}",
                spec.engine,
                message(&e)
            ))
        })?;
    Ok(())
}

/// Stop a session's container (hibernate): its volume, and the container's
/// own files, are kept. A missing or already stopped one is no error.
/// `name` is the container's name or id.
pub async fn stop(docker: &Docker, name: &str, timeout_secs: u32) -> Result<(), EngineError> {
    let options = StopContainerOptionsBuilder::new()
        .t(i32::try_from(timeout_secs).unwrap_or(i32::MAX))
        .build();
    match docker.stop_container(name, Some(options)).await {
        Ok(()) => Ok(()),
        // 304: already stopped; 404: gone.
        Err(e) if matches!(status(&e), Some(304 | 404)) => Ok(()),
        Err(e) => Err(EngineError(format!(
            "cannot stop container {name}: {}",
            message(&e)
        ))),
    }
}

/// Remove a session's container and its volume (close).
pub async fn remove(docker: &Docker, session: &str) -> Result<(), EngineError> {
    remove_container(docker, &engine::container_name(session), session).await
}

/// Remove container `name` (a name or an id) and session `session`'s volume.
pub async fn remove_container(
    docker: &Docker,
    name: &str,
    session: &str,
) -> Result<(), EngineError> {
    let options = RemoveContainerOptionsBuilder::new()
        .force(true)
        .v(true)
        .build();
    match docker.remove_container(name, Some(options)).await {
        Ok(()) => {}
        Err(e) if not_found(&e) => {}
        Err(e) => {
            return Err(EngineError(format!(
                "cannot remove container {name}: {}",
                message(&e)
            )));
        }
    }
    let volume = engine::volume_name(session);
    match docker
        .remove_volume(
            &volume,
            Some(RemoveVolumeOptionsBuilder::new().force(true).build()),
        )
        .await
    {
        Ok(()) => Ok(()),
        Err(e) if not_found(&e) => Ok(()),
        Err(e) => Err(EngineError(format!(
            "cannot remove volume {volume}: {}",
            message(&e)
        ))),
    }
}

/// A container this home made, as a listing shows it.
pub struct Found {
    /// The engine's id of the container.
    pub id: String,
    pub labels: Vec<(String, String)>,
    pub state: ContainerState,
}

/// Every container labelled with this home's hash (running or not), read
/// with hangar's own types (`container_state.rs`).
pub async fn list_own(engine: &Engine, home_hash: &str) -> Result<Vec<Found>, EngineError> {
    let found = container_state::list_labelled(
        &engine.socket,
        &format!("{HOME_LABEL}={home_hash}"),
        API_TIMEOUT,
    )
    .await
    .map_err(|e| EngineError(format!("cannot list containers: {e}")))?;
    Ok(found
        .into_iter()
        .map(|c| Found {
            labels: c.labels(),
            state: c.state(),
            id: c.id,
        })
        .collect())
}

/// Import a root file system tarball as image `repo:tag`, its default
/// command a shell. Returns the engine's last word (the image id).
pub async fn import(
    docker: &Docker,
    tarball: tokio::fs::File,
    repo: &str,
    tag: &str,
) -> Result<String, EngineError> {
    let options = CreateImageOptionsBuilder::new()
        .from_src("-")
        .repo(repo)
        .tag(tag)
        .changes(vec!["CMD [\"/bin/sh\"]".to_owned()])
        .build();
    let chunks = futures::stream::try_unfold(tarball, |mut file| async move {
        use tokio::io::AsyncReadExt;
        let mut buf = vec![0u8; 1 << 20];
        let n = file.read(&mut buf).await?;
        buf.truncate(n);
        Ok::<_, std::io::Error>((n > 0).then(|| (bytes::Bytes::from(buf), file)))
    });
    let mut stream =
        docker.create_image(Some(options), Some(bollard::body_try_stream(chunks)), None);
    let mut last = String::new();
    while let Some(item) = stream.next().await {
        let info = item
            .map_err(|e| EngineError(format!("the engine refused the import: {}", message(&e))))?;
        if let Some(err) = info.error_detail.and_then(|d| d.message) {
            return Err(EngineError(format!("the engine refused the import: {err}")));
        }
        if let Some(s) = info.status {
            last = s;
        }
    }
    Ok(last)
}
