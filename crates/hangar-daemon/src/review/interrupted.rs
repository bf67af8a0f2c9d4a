//! A finish cut off between its steps (the daemon killed after a backup ref
//! was written but before the target moved, or after the target moved but
//! before the agent's branch followed). Before its first ref changes, a
//! finish writes what it means to move to a record in hangar's home; when
//! it ends, the record goes. A record still there was cut off: at the next
//! start (and before any other finish) each planned move is settled from
//! where its ref is now (`hangar_core::review::interrupted_move`): a ref
//! that moved keeps its backup and is journaled as landed, a ref that never
//! moved loses the backup that backs up nothing.
//!
//! What it must never do: move a person's ref, or delete a backup ref whose
//! ref is not exactly where the backup says it was.

use std::io::Write;
use std::path::{Path, PathBuf};

use hangar_core::review::{InterruptedMove, interrupted_move};
use hangar_protocol::reply::MovedRef;
use serde::{Deserialize, Serialize};

use super::git::{git, git_line};
use crate::os::Git;

/// What a finish is about to move, written before it moves anything.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub session: String,
    pub strategy: String,
    /// A checkout of the repository (the session's).
    pub dir: PathBuf,
    /// Every ref it will move, in order, with its backup ref.
    pub moves: Vec<MovedRef>,
}

/// The folder of records under hangar's home.
pub fn folder(home: &Path) -> PathBuf {
    home.join("finishing")
}

/// Write `record` to `path` durably (a temporary file, synced, renamed): a
/// finish whose record is not on disk must not move anything.
pub fn write(path: &Path, record: &Record) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&serde_json::to_vec(record).map_err(std::io::Error::other)?)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}

/// Where `refname` points now, `None` when it does not exist.
fn points_at(os: &dyn Git, dir: &Path, refname: &str) -> Option<String> {
    git_line(os, dir, &["rev-parse", "--verify", "-q", refname])
        .ok()
        .filter(|c| !c.is_empty())
}

/// Settle one record: the moves that happened (their backups kept); the
/// backups of moves that never happened are deleted (compare-and-swap on
/// the value they back up).
pub fn settle(os: &dyn Git, record: &Record) -> Vec<MovedRef> {
    let mut landed = Vec::new();
    for m in &record.moves {
        let now = points_at(os, &record.dir, &m.refname);
        match interrupted_move(&m.old, &m.new, now.as_deref()) {
            InterruptedMove::Moved => landed.push(m.clone()),
            InterruptedMove::NeverMoved => {
                // Absent already when the finish was cut off before it.
                if points_at(os, &record.dir, &m.backup).as_deref() == Some(m.old.as_str())
                    && let Err(e) = git(os, &record.dir, ["update-ref", "-d", &m.backup, &m.old])
                {
                    tracing::warn!("cannot delete the unused backup ref {}: {e}", m.backup);
                }
            }
            InterruptedMove::MovedSince => {}
        }
    }
    landed
}

/// Settle every record left in `folder` and remove it; each record with
/// the moves that happened, for the journal. A record that cannot be read
/// is left for a person (and said once in the log).
pub fn settle_all(os: &dyn Git, folder: &Path) -> Vec<(Record, Vec<MovedRef>)> {
    let mut done = Vec::new();
    let Ok(entries) = std::fs::read_dir(folder) else {
        return done;
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    for path in paths {
        let record: Record = match std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(
                    "cannot read the interrupted finish {}: {e}; left as it is",
                    path.display()
                );
                continue;
            }
        };
        if !record.dir.is_dir() {
            tracing::warn!(
                "the interrupted finish of {} was in {}, which is gone; its record is dropped",
                record.session,
                record.dir.display()
            );
            let _ = std::fs::remove_file(&path);
            continue;
        }
        let landed = settle(os, &record);
        tracing::info!(
            "settled an interrupted finish of {}: {} of {} ref(s) had moved",
            record.session,
            landed.len(),
            record.moves.len()
        );
        let _ = std::fs::remove_file(&path);
        done.push((record, landed));
    }
    done
}
