//! What can go wrong while opening or writing the store, in terms a caller can
//! act on.
//!
//! Every message says what happened, to which file, and what to do next. A
//! variant never hides whether something was written: the ones that refuse
//! (`NewerSchema`, `UnexplainedDrop`, `DuplicateTab`,
//! `ScreenWithoutSession`, `NotLoaded`) guarantee nothing was.

use std::io;
use std::path::PathBuf;

use hangar_core::{SessionId, TabId};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum StoreError {
    /// The file was written by a newer hangar. It was opened read-only and is
    /// left byte-for-byte unchanged.
    #[error(
        "{path} was written by a newer hangar (store schema version {found}; this hangar \
         supports up to {supported}). The file was not touched. Upgrade hangar, or point \
         HANGAR_HOME at another folder to start a separate workspace."
    )]
    NewerSchema {
        path: PathBuf,
        found: u32,
        supported: u32,
    },

    /// `save` was given a workspace that lacks sessions the last save had,
    /// without naming them as removed. Nothing was written.
    #[error(
        "refusing to save the workspace: {} session(s) from the last save are missing and were \
         not named as removed ({}); nothing was written. Every close, eviction or prune must \
         name the sessions it removes (this is a bug in the caller, and the refusal protects \
         the saved workspace from a partial or empty model)",
        ids.len(),
        list_ids(ids)
    )]
    UnexplainedDrop { ids: Vec<SessionId> },

    /// Two tabs of the workspace share an id; saving would silently merge
    /// them. Nothing was written.
    #[error(
        "refusing to save the workspace: two tabs share the id {id}; nothing was written \
         (this is a bug in the caller)"
    )]
    DuplicateTab { id: TabId },

    /// A screen was to be saved for a session the workspace does not have;
    /// nothing would ever show or delete it. Nothing was written.
    #[error(
        "refusing to save the workspace: a screen names session {id}, which is not in it; \
         nothing was written (this is a bug in the caller)"
    )]
    ScreenWithoutSession { id: SessionId },

    /// `save` was called on a store opened for a first look
    /// ([`crate::Store::open_first_look`]) before the rest of the file was
    /// loaded: the model it was given holds only the sessions of the visible
    /// panes, and saving it would drop every other one. Nothing was written.
    #[error(
        "refusing to save the workspace to {path}: only its visible panes are loaded yet, and \
         saving now would drop every other session; nothing was written (this is a bug in the \
         caller)"
    )]
    NotLoaded { path: PathBuf },

    /// A file operation failed (creating the folder or file, reading the
    /// header, moving a damaged file aside).
    #[error("could not {action} {path}: {source}; check that the folder exists and is writable")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// SQLite failed for a reason other than a damaged file (locked, disk
    /// full, permission denied...). When this comes from `save`, the
    /// transaction was rolled back: the previous save is intact.
    #[error("could not {action} {path}: {source}")]
    Sqlite {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },

    /// A record could not be turned into JSON. Nothing was written.
    #[error("could not encode {what} for {path}: {source}; nothing was written")]
    Encode {
        what: String,
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },

    /// A number does not fit the column it goes into (a process start time
    /// beyond 2^63). Nothing was written.
    #[error("{what} = {value} is out of range for {path}; nothing was written")]
    OutOfRange {
        what: &'static str,
        value: u64,
        path: PathBuf,
    },
}

impl StoreError {
    /// The write failed because the disk (or the tmpfs) holding the store is
    /// full.
    pub fn is_disk_full(&self) -> bool {
        match self {
            StoreError::Sqlite { source, .. } => {
                source.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
            }
            StoreError::Io { source, .. } => source.raw_os_error() == Some(libc_enospc()),
            _ => false,
        }
    }

    /// The write failed because the store's folder or file cannot be written
    /// (a read-only mount, permissions).
    pub fn is_read_only(&self) -> bool {
        match self {
            StoreError::Sqlite { source, .. } => {
                source.sqlite_error_code() == Some(rusqlite::ErrorCode::ReadOnly)
            }
            StoreError::Io { source, .. } => source.raw_os_error() == Some(libc_erofs()),
            _ => false,
        }
    }
}

/// `ENOSPC` and `EROFS` on Linux and macOS alike (the store has no libc
/// dependency for two numbers).
const fn libc_enospc() -> i32 {
    28
}
const fn libc_erofs() -> i32 {
    30
}

fn list_ids(ids: &[SessionId]) -> String {
    const SHOWN: usize = 10;
    let mut s = ids
        .iter()
        .take(SHOWN)
        .map(SessionId::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        s.push_str(&format!(" and {} more", ids.len() - SHOWN));
    }
    s
}
