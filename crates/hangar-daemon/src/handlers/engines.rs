//! Requests about container engines (issue 32): `hangar engine image build`
//! and the `engine` of each `ls` row.

use hangar_core::SessionId;
use hangar_protocol::message::{self as msg, codes};
use serde_json::Value;

use crate::Daemon;
use crate::errors::ApiError;

/// `hangar engine image build NAME [--provider P]`.
pub async fn image_build(daemon: &Daemon, req: msg::EngineImageBuild) -> Result<Value, ApiError> {
    daemon
        .engines
        .build_image(&req.engine, req.provider.as_deref())
        .await
        .map_err(|e| ApiError::new(codes::FAILED, e.0))
}

/// `ls` rows with each session's engine filled in.
pub fn with_engines(daemon: &Daemon, mut rows: Value) -> Value {
    for row in rows.as_array_mut().into_iter().flatten() {
        let Some(id) = row["id"].as_str() else {
            continue;
        };
        let view = daemon
            .sessions
            .meta(&SessionId::from(id))
            .and_then(|meta| daemon.engines.view(&meta));
        if let Some(view) = view {
            row["engine"] = serde_json::to_value(view).unwrap_or(Value::Null);
        }
    }
    rows
}
