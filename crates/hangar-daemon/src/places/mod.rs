//! Where a session's process runs (issue 43; wezterm's `Domain` is the
//! model): one [`Place`] per kind of where, each starting a planned launch,
//! stopping and removing what it made for a session, and saying what it
//! is. `local.rs` is this machine's PTY, `sandbox.rs` bubblewrap's walls
//! around it, `engine.rs` a container engine (Docker, Podman) or a
//! Kubernetes cluster, the bridge in the PTY and the agent in a container
//! or pod (`engines/` keeps the engines' own code; `Engines` picks the
//! kind by `[engines.NAME]`).
//!
//! Which place a session runs in is `hangar_core::launch_plan::place_of`;
//! nothing outside this folder branches on it. Every place's process is a
//! `LiveProcess` in a PTY of `Os`, so the spawner watches, stops and
//! hibernates them all alike.

mod engine;
mod local;
mod sandbox;

use std::sync::Arc;

use futures::future::BoxFuture;
use hangar_core::SessionMeta;
use hangar_core::launch_plan::{PlaceKind, place_of};
use hangar_protocol::view::{EngineView, SandboxView};

use crate::engines::Engines;
use crate::journal::FailureKind;
use crate::os::Os;
use crate::pty::{LiveProcess, SpawnRequest};
use crate::spawn_failure::SpawnFailure;

pub use engine::EnginePlace;
pub use local::LocalPlace;
pub use sandbox::SandboxPlace;

/// A planned launch handed to its place.
pub struct Launch<'a> {
    pub meta: &'a SessionMeta,
    /// The plan's command, folder and environment, as this machine's PTY
    /// would start it.
    pub request: SpawnRequest,
    pub grant: Option<&'a hangar_proxy::Grant>,
    /// Called once the place's walls are up, just before the process
    /// starts (the journal's `spawn-begin`).
    pub begin: &'a (dyn Fn() + Send + Sync),
}

/// A started process and the program a person knows it by (bwrap, the
/// engine's bridge, or the agent itself).
pub struct Started {
    pub live: Arc<LiveProcess>,
    pub program: String,
}

/// What `hangar ls` shows of where a session runs.
#[derive(Default)]
pub struct Inspection {
    pub sandbox: Option<SandboxView>,
    pub engine: Option<EngineView>,
}

/// One kind of where a session's process runs.
pub trait Place: Send + Sync {
    /// Put up the place's walls (a sandbox, a container or pod) and start
    /// the launch's process in a PTY; any wall that cannot go up fails the
    /// start, never a process without it (DESIGN.md rule 14).
    fn start<'a>(&'a self, launch: Launch<'a>) -> BoxFuture<'a, Result<Started, SpawnFailure>>;

    /// Hibernate, once the process has ended: what the place keeps for the
    /// session stops (a container is stopped, kept with its volume).
    fn stop<'a>(&'a self, meta: &'a SessionMeta) -> BoxFuture<'a, ()>;

    /// Close: what the place made for the session goes (a container and
    /// its volume, a pod and its claim).
    fn remove<'a>(&'a self, meta: &'a SessionMeta) -> BoxFuture<'a, ()>;

    /// What `hangar ls` shows of it.
    fn inspect(&self, meta: &SessionMeta) -> Inspection;
}

/// Every place, and which one a session runs in.
pub struct Places {
    local: LocalPlace,
    sandbox: SandboxPlace,
    engine: EnginePlace,
}

impl Places {
    pub fn new(
        os: Arc<dyn Os>,
        sandbox: Arc<crate::sandbox::Sandbox>,
        engines: Arc<Engines>,
    ) -> Places {
        Places {
            local: LocalPlace::new(os.clone()),
            sandbox: SandboxPlace::new(os.clone(), sandbox.clone()),
            engine: EnginePlace::new(os, sandbox, engines),
        }
    }

    /// The place of a kind.
    pub fn place(&self, kind: &PlaceKind) -> &dyn Place {
        match kind {
            PlaceKind::Local => &self.local,
            PlaceKind::Sandbox => &self.sandbox,
            PlaceKind::Engine { .. } => &self.engine,
        }
    }

    /// The place `meta`'s session runs in.
    pub fn of(&self, meta: &SessionMeta) -> &dyn Place {
        self.place(&place_of(meta))
    }

    /// Close: remove what each session's place made for it.
    pub async fn remove(&self, metas: &[SessionMeta]) {
        for meta in metas {
            self.of(meta).remove(meta).await;
        }
    }

    /// What `hangar ls` shows of where `meta`'s session runs.
    pub fn inspect(&self, meta: &SessionMeta) -> Inspection {
        self.of(meta).inspect(meta)
    }
}

/// Start `request` in a PTY of `os`, after telling `begin`; the error a
/// person reads when the program cannot start.
fn start_in_pty(
    os: &dyn Os,
    meta: &SessionMeta,
    request: SpawnRequest,
    begin: &(dyn Fn() + Send + Sync),
) -> Result<Started, SpawnFailure> {
    let program = request.program.display().to_string();
    begin();
    let live = LiveProcess::spawn(os, request).map_err(|e| {
        SpawnFailure::new(
            FailureKind::SpawnError,
            format!(
                "cannot start {} (title {:?}): {program}: {e}",
                meta.id.short(),
                meta.title
            ),
        )
    })?;
    Ok(Started { live, program })
}
