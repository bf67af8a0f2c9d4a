//! Why a spawn failed (a leaf: the proxy's grants, the sandbox, the
//! places and the launch all make one, and none of them imports `spawn`).

use crate::journal::FailureKind;

/// Why a spawn failed: a category for the journal and the breaker, and a
/// message for the person.
#[derive(Clone, Debug, PartialEq)]
pub struct SpawnFailure {
    pub kind: FailureKind,
    pub message: String,
    pub exit_code: Option<i32>,
}

impl SpawnFailure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> SpawnFailure {
        SpawnFailure {
            kind,
            message: message.into(),
            exit_code: None,
        }
    }
}

impl From<hangar_core::launch_plan::LaunchRefusal> for SpawnFailure {
    fn from(refusal: hangar_core::launch_plan::LaunchRefusal) -> SpawnFailure {
        use hangar_core::launch_plan::RefusalKind;
        SpawnFailure {
            kind: match refusal.kind {
                RefusalKind::ResumeRefused | RefusalKind::AccountUnusable => FailureKind::Other,
                RefusalKind::ProgramMissing => FailureKind::ProgramMissing,
                RefusalKind::FolderMissing => FailureKind::CwdMissing,
                RefusalKind::ExitedDuringStart => FailureKind::ExitedDuringStart,
                RefusalKind::AuthFailure => FailureKind::AuthFailure,
                RefusalKind::Timeout => FailureKind::Timeout,
            },
            message: refusal.message,
            exit_code: refusal.exit_code,
        }
    }
}
