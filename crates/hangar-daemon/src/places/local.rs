//! This machine's PTY: the plan's command started as it is. Nothing to
//! stop or remove beyond the process, which the spawner ends.

use std::sync::Arc;

use futures::future::BoxFuture;
use hangar_core::SessionMeta;

use super::{Inspection, Launch, Place, Started, start_in_pty};
use crate::os::Os;
use crate::spawn_failure::SpawnFailure;

pub struct LocalPlace {
    os: Arc<dyn Os>,
}

impl LocalPlace {
    pub fn new(os: Arc<dyn Os>) -> LocalPlace {
        LocalPlace { os }
    }
}

impl Place for LocalPlace {
    fn start<'a>(&'a self, launch: Launch<'a>) -> BoxFuture<'a, Result<Started, SpawnFailure>> {
        Box::pin(async move {
            start_in_pty(self.os.as_ref(), launch.meta, launch.request, launch.begin)
        })
    }

    fn stop<'a>(&'a self, _meta: &'a SessionMeta) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn remove<'a>(&'a self, _meta: &'a SessionMeta) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn inspect(&self, _meta: &SessionMeta) -> Inspection {
        Inspection::default()
    }
}
