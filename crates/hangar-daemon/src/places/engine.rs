//! A container engine (Docker, Podman) or a Kubernetes cluster (issue 32):
//! the agent in the session's container or pod behind the sandbox's walls,
//! the exec bridge (`hangar engine-exec`) in this machine's PTY in its
//! place, so the screen, attach, resize and exit watch are a local
//! session's. `crate::engines` talks to the engine and picks the kind by
//! `[engines.NAME]`; any engine error is the start's failure, in the
//! engine's words.

use std::sync::Arc;

use futures::future::BoxFuture;
use hangar_core::SessionMeta;

use super::{Inspection, Launch, Place, Started, start_in_pty};
use crate::engines::Engines;
use crate::journal::FailureKind;
use crate::os::Os;
use crate::sandbox::Sandbox;
use crate::spawn_failure::SpawnFailure;

pub struct EnginePlace {
    os: Arc<dyn Os>,
    sandbox: Arc<Sandbox>,
    engines: Arc<Engines>,
}

impl EnginePlace {
    pub fn new(os: Arc<dyn Os>, sandbox: Arc<Sandbox>, engines: Arc<Engines>) -> EnginePlace {
        EnginePlace {
            os,
            sandbox,
            engines,
        }
    }
}

impl Place for EnginePlace {
    fn start<'a>(&'a self, launch: Launch<'a>) -> BoxFuture<'a, Result<Started, SpawnFailure>> {
        Box::pin(async move {
            // A session bound to an engine runs there or not at all
            // (DESIGN.md rule 14): the launch becomes the exec bridge, or
            // fails with the engine's words.
            let (request, held) = self
                .engines
                .wrap_launch(launch.meta, launch.request, &self.sandbox, launch.grant)
                .await
                .map_err(|e| SpawnFailure::new(FailureKind::SpawnError, e.to_string()))?;
            let started = start_in_pty(self.os.as_ref(), launch.meta, request, launch.begin)?;
            crate::sandbox::hold_until_exit(held, started.live.exit_watch());
            Ok(started)
        })
    }

    fn stop<'a>(&'a self, meta: &'a SessionMeta) -> BoxFuture<'a, ()> {
        Box::pin(self.engines.stop(meta))
    }

    fn remove<'a>(&'a self, meta: &'a SessionMeta) -> BoxFuture<'a, ()> {
        Box::pin(self.engines.remove(std::slice::from_ref(meta)))
    }

    fn inspect(&self, meta: &SessionMeta) -> Inspection {
        let engine = self.engines.view(meta);
        let mut sandbox = self.sandbox.view(meta);
        // Its walls are the engine's container, not bubblewrap.
        if let (Some(sandbox), Some(kind)) = (
            sandbox.as_mut(),
            engine.as_ref().and_then(|e| e.kind.as_ref()),
        ) {
            sandbox.kind = kind.clone();
        }
        Inspection { sandbox, engine }
    }
}
