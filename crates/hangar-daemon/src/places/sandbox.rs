//! Hangar's sandbox (issue 32): bubblewrap's walls around the relay around
//! the agent, in this machine's PTY (`crate::sandbox` puts them up). The
//! walls' pieces (the proxy socket's forwarder, the session's socket back)
//! live as long as the process.

use std::sync::Arc;

use futures::future::BoxFuture;
use hangar_core::SessionMeta;

use super::{Inspection, Launch, Place, Started, start_in_pty};
use crate::os::Os;
use crate::sandbox::Sandbox;
use crate::spawn_failure::SpawnFailure;

pub struct SandboxPlace {
    os: Arc<dyn Os>,
    sandbox: Arc<Sandbox>,
}

impl SandboxPlace {
    pub fn new(os: Arc<dyn Os>, sandbox: Arc<Sandbox>) -> SandboxPlace {
        SandboxPlace { os, sandbox }
    }
}

impl Place for SandboxPlace {
    fn start<'a>(&'a self, launch: Launch<'a>) -> BoxFuture<'a, Result<Started, SpawnFailure>> {
        Box::pin(async move {
            // A sandboxed session runs inside its walls or not at all.
            let wrapped = self
                .sandbox
                .wrap(launch.meta, launch.request, launch.grant)
                .await?;
            let started =
                start_in_pty(self.os.as_ref(), launch.meta, wrapped.request, launch.begin)?;
            crate::sandbox::hold_until_exit(wrapped.held, started.live.exit_watch());
            Ok(started)
        })
    }

    fn stop<'a>(&'a self, _meta: &'a SessionMeta) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn remove<'a>(&'a self, _meta: &'a SessionMeta) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn inspect(&self, meta: &SessionMeta) -> Inspection {
        Inspection {
            sandbox: self.sandbox.view(meta),
            engine: None,
        }
    }
}
