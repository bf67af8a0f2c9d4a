//! Requests about container engines (issue 32): `hangar engine image build`
//! and the `engine` of each `ls` row.

use hangar_core::SessionId;
use hangar_protocol::message::{self as msg, codes};
use hangar_protocol::reply::ImageBuilt;
use hangar_protocol::view::SessionView;

use crate::Daemon;
use crate::errors::ApiError;

/// `hangar engine image build NAME [--provider P]`.
pub async fn image_build(
    daemon: &Daemon,
    req: msg::EngineImageBuild,
) -> Result<ImageBuilt, ApiError> {
    daemon
        .engines
        .build_image(&req.engine, req.provider.as_deref())
        .await
        .map_err(|e| ApiError::new(codes::FAILED, e.0))
}

/// `ls` rows with each session's engine filled in.
pub fn with_engines(daemon: &Daemon, mut rows: Vec<SessionView>) -> Vec<SessionView> {
    for row in &mut rows {
        let view = daemon
            .sessions
            .meta(&SessionId::from(row.id.as_str()))
            .and_then(|meta| daemon.engines.view(&meta));
        if let Some(view) = view {
            // Its walls are the engine's container, not bubblewrap.
            if let (Some(sandbox), Some(kind)) = (row.sandbox.as_mut(), view.kind.as_ref()) {
                sandbox.kind = kind.clone();
            }
            row.engine = Some(view);
        }
    }
    rows
}
