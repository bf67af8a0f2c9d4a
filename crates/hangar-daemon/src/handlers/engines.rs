//! Requests about container engines (issue 32): `hangar engine image build`
//! (an `ls` row's engine is its place's, `places/`).

use hangar_protocol::message::{self as msg, codes};
use hangar_protocol::reply::ImageBuilt;

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
