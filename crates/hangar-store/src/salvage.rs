//! What a daemon start keeps when the rest of its store cannot be read after
//! the visible panes were forked from the first look (`first_look.rs`).
//!
//! The first look checked the whole file (`PRAGMA quick_check`) and read the
//! tabs, the `kv` rows and the panes' rows; phase two reads every other row
//! a moment later. If that read fails because of the file's content (a page
//! damaged since the check, a table dropped by hand, a row SQLite cannot
//! give back), the one-phase open's answer (move the file aside, start
//! empty) would stop the panes a person sees and drop every tab. Instead:
//!
//! 1. [`salvage_read`] reads every row SQLite can still give, table by table:
//!    a scan that stops at a page it cannot read starts again past it,
//!    skipping ever more rowids until a read succeeds, and names what it
//!    skipped.
//! 2. `Store::finish_loading` (phase two's end) then sets the damaged file
//!    aside whole, as the one-phase open does (`<path>.corrupt-<unix ms>`,
//!    with its WAL, never written again), and writes a fresh store from the
//!    first look's tabs and settings, the panes' sessions as the forks left
//!    them, and every salvaged row, last screen and process record.
//!
//! Rule 5 holds: nothing replaces the damaged file's bytes (the person keeps
//! it whole for `sqlite3 .recover`), and the fresh store holds everything
//! that could be read. What could not be read is said in the recovery
//! notice; sessions whose owner record was lost are pruned as any unowned
//! session is (rule 2), and are in the kept file.

use hangar_core::{BuriedRecord, ParkedRecord, SessionId, SessionMeta, Workspace};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, Row, Transaction};

use crate::screen::{SavedScreen, Screens};
use crate::store::{RecordedProcess, Skipped, SkippedRow, decode};

/// What phase two's read could not do, and what was read instead.
#[derive(Debug)]
pub(crate) struct Damage {
    /// What SQLite said when the full read failed.
    pub(crate) reason: String,
    /// The rows the salvage could not read, by table and rowid range.
    pub(crate) lost: Vec<String>,
}

/// Whether a failed read says the file's content is damaged (set the file
/// aside, keep what can be read) rather than that it cannot be read now
/// (permission, I/O, a lock, memory: the file may well be good).
pub(crate) fn is_content_error(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(
            ErrorCode::DatabaseCorrupt
                | ErrorCode::NotADatabase
                // "no such table", a misshapen schema: the file was edited.
                | ErrorCode::Unknown
                | ErrorCode::TypeMismatch
                | ErrorCode::TooBig
                | ErrorCode::SchemaChanged
        )
    )
}

/// The sessions, parked and buried records and pins that can still be read
/// (tabs and `kv` are the first look's), with the rows that did not decode.
pub(crate) fn salvage_read(conn: &mut Connection) -> (Workspace, Vec<Skipped>, Vec<String>) {
    let mut ws = Workspace::default();
    let mut skipped = Vec::new();
    let mut lost = Vec::new();
    let Ok(tx) = conn.transaction() else {
        lost.push("every table: no read transaction could be started".to_owned());
        return (ws, skipped, lost);
    };
    let mut skip = |table: &'static str, rowid: i64, key: ValueRef<'_>, error: String| {
        skipped.push(Skipped {
            rowid,
            row: SkippedRow {
                table,
                key: crate::store::key_text(key),
                error,
            },
        });
    };
    salvage_rows(&tx, "sessions", "id, data", &mut lost, |rowid, row| {
        let (Ok(key), Ok(data)) = (row.get_ref(1), row.get_ref(2)) else {
            return;
        };
        match decode(key, data, |m: &SessionMeta| m.id.as_str()) {
            Ok(meta) => {
                ws.sessions.insert(meta.id.clone(), meta);
            }
            Err(e) => skip("sessions", rowid, key, e),
        }
    });
    salvage_rows(&tx, "parked", "session, data", &mut lost, |rowid, row| {
        let (Ok(key), Ok(data)) = (row.get_ref(1), row.get_ref(2)) else {
            return;
        };
        match decode(key, data, |p: &ParkedRecord| p.session.as_str()) {
            Ok(rec) => {
                ws.parked.insert(rec.session.clone(), rec);
            }
            Err(e) => skip("parked", rowid, key, e),
        }
    });
    salvage_rows(&tx, "buried", "session, data", &mut lost, |rowid, row| {
        let (Ok(key), Ok(data)) = (row.get_ref(1), row.get_ref(2)) else {
            return;
        };
        match decode(key, data, |b: &BuriedRecord| b.session.as_str()) {
            Ok(rec) => {
                ws.buried.insert(rec.session.clone(), rec);
            }
            Err(e) => skip("buried", rowid, key, e),
        }
    });
    // `position` is the rowid: rowid order is the pins' order.
    salvage_rows(&tx, "pins", "position, session", &mut lost, |rowid, row| {
        let (Ok(key), Ok(session)) = (row.get_ref(1), row.get_ref(2)) else {
            return;
        };
        match session.as_str() {
            Ok(id) => ws.pins.push(SessionId::new(id)),
            Err(e) => skip("pins", rowid, key, e.to_string()),
        }
    });
    drop(tx);
    (ws, skipped, lost)
}

/// The last screens and process records that can still be read through the
/// store's own connection (the forks write them there until the rebuild).
pub(crate) fn salvage_runtime_rows(
    conn: &mut Connection,
    lost: &mut Vec<String>,
) -> (Screens, Vec<RecordedProcess>) {
    let mut screens = Screens::new();
    let mut processes = Vec::new();
    let Ok(tx) = conn.transaction() else {
        lost.push("screens and processes: no read transaction could be started".to_owned());
        return (screens, processes);
    };
    salvage_rows(
        &tx,
        "screens",
        "session, screen, updated_ms",
        lost,
        |_, row| {
            if let (Ok(id), Ok(screen), Ok(updated)) = (
                row.get::<_, String>(1),
                row.get::<_, Vec<u8>>(2),
                row.get::<_, i64>(3),
            ) {
                let updated_ms = u64::try_from(updated).unwrap_or(0);
                screens.insert(SessionId::new(id), SavedScreen { screen, updated_ms });
            }
        },
    );
    salvage_rows(
        &tx,
        "processes",
        "session, pid, pgid, start_time",
        lost,
        |_, row| {
            let positive = |i: usize| {
                row.get::<_, i64>(i)
                    .ok()
                    .filter(|n| *n > 0)
                    .and_then(|n| u32::try_from(n).ok())
            };
            if let (Ok(session), Some(pid), Some(pgid), Ok(start)) = (
                row.get::<_, String>(1),
                positive(2),
                positive(3),
                row.get::<_, i64>(4),
            ) && let Ok(start_time) = u64::try_from(start)
            {
                processes.push(RecordedProcess {
                    session: SessionId::new(session),
                    pid,
                    pgid,
                    start_time,
                });
            }
        },
    );
    drop(tx);
    (screens, processes)
}

/// How many times one table's scan starts again past a page it cannot read.
const MAX_RESTARTS: u32 = 64;

/// Call `f(rowid, row)` for every row of `table` that can be read, in rowid
/// order (`row` holds the rowid, then `columns`). Where the scan fails, it
/// starts again right past the rows it cannot reach; each range skipped is
/// added to `lost`.
///
/// Past where: a seek to "the first rowid from S on" fails exactly while S
/// is at most the last rowid of the unreadable page (the seek lands in it)
/// and succeeds from there on, so the smallest S it succeeds from is found
/// by doubling a step from the first rowid not read, then halving the
/// interval. Only the unreadable page's rows are skipped.
fn salvage_rows(
    tx: &Transaction<'_>,
    table: &'static str,
    columns: &str,
    lost: &mut Vec<String>,
    mut f: impl FnMut(i64, &Row<'_>),
) {
    // The table name comes from a fixed list, never from the file.
    let scan = format!("SELECT rowid, {columns} FROM {table} WHERE rowid >= ?1 ORDER BY rowid");
    let seek = format!("SELECT rowid FROM {table} WHERE rowid >= ?1 ORDER BY rowid LIMIT 1");
    let (mut scan, mut seek) = match (tx.prepare(&scan), tx.prepare(&seek)) {
        (Ok(scan), Ok(seek)) => (scan, seek),
        (Err(e), _) | (_, Err(e)) => {
            lost.push(format!("{table}: every row (SQLite said \"{e}\")"));
            return;
        }
    };
    // The first rowid from `from` on (`Some(None)`: none), if the seek works.
    let mut first_from = |from: i64| -> Option<Option<i64>> {
        seek.query([from])
            .and_then(|mut rows| match rows.next()? {
                Some(row) => row.get::<_, i64>(0).map(Some),
                None => Ok(None),
            })
            .ok()
    };
    // The first rowid not read yet.
    let mut next = i64::MIN;
    for _ in 0..MAX_RESTARTS {
        let error = match scan.query([next]) {
            Err(e) => e,
            Ok(mut rows) => loop {
                match rows.next() {
                    Ok(Some(row)) => {
                        if let Ok(rowid) = row.get::<_, i64>(0) {
                            f(rowid, row);
                            let Some(after) = rowid.checked_add(1) else {
                                return;
                            };
                            next = after;
                        }
                    }
                    Ok(None) => return,
                    Err(e) => break e,
                }
            },
        };
        if let Some(found) = first_from(next) {
            // The row's place reads, its content does not (a damaged
            // overflow page): that one row is left out.
            let Some(rowid) = found else { return };
            lost.push(format!(
                "{table}: the row of rowid {rowid} (SQLite said \"{error}\")"
            ));
            let Some(after) = rowid.checked_add(1) else {
                return;
            };
            next = after;
            continue;
        }
        let (mut failing, mut step) = (next, 1i64);
        let mut works = loop {
            let probe = failing.saturating_add(step);
            if first_from(probe).is_some() {
                break probe;
            }
            if probe == i64::MAX {
                lost.push(format!(
                    "{table}: the rows from rowid {next} on (SQLite said \"{error}\")"
                ));
                return;
            }
            failing = probe;
            step = step.saturating_mul(2);
        };
        // In i128: from `i64::MIN` the interval is wider than an i64.
        while i128::from(works) - i128::from(failing) > 1 {
            let mid = ((i128::from(works) + i128::from(failing)) / 2) as i64;
            if first_from(mid).is_some() {
                works = mid;
            } else {
                failing = mid;
            }
        }
        let first = if next == i64::MIN {
            "its first row".to_owned()
        } else {
            format!("rowid {next}")
        };
        lost.push(format!(
            "{table}: the rows from {first} to rowid {} (SQLite said \"{error}\")",
            works - 1
        ));
        next = works;
    }
    lost.push(format!(
        "{table}: the rows from rowid {next} on (more than {MAX_RESTARTS} unreadable stretches)"
    ));
}
