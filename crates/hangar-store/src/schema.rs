//! The store's SQLite schema and its ordered migrations.
//!
//! The schema version lives in `PRAGMA user_version`. `MIGRATIONS[i]` takes a
//! file from version `i` to `i + 1`, inside one transaction that also bumps
//! the version, so a crash mid-migration leaves the old version intact.
//! Migrations are append-only: never edit or reorder a published one, and
//! never run one against a file whose version is newer than
//! [`SUPPORTED_VERSION`] (such a file is refused, not rewritten).
//!
//! One row per entity, so a change writes only what changed:
//! - `sessions(id, data)`: `SessionMeta` as JSON.
//! - `tabs(id, position, data)`: `Tab` (with its tile tree) as JSON, ordered
//!   by `position`.
//! - `parked(session, data)`, `buried(session, data)`: the owner records.
//! - `pins(position, session)`: the ordered quick-access list.
//! - `kv(key, value)`: `active_tab`, `dispatch`, `settings` as JSON.
//! - `screens(session, screen, updated_ms)`: the last screen of a session.
//! - `processes(session, pid, start_time, pgid)`: live child processes, so a
//!   start after a daemon SIGKILL can find and end orphans (the start time
//!   guards against killing a reused pid).
//! - `usage_requests(session, request_key, ...)`: the usage ledger, one row
//!   per request (issue 29; `usage_ledger.rs`), with the agent's own cost
//!   figure when it keeps one (`agent_cost_usd`, migration 4).
//! - `usage_windows(provider, account, kind, ...)`: each account's limit
//!   windows as last reported.
//! - `usage_sessions(session, data)`: a session's limit and its own
//!   auto-continue switch, as JSON.

use rusqlite::{Connection, TransactionBehavior};

/// Migration 1: the initial schema. `IF NOT EXISTS` so that a version-0 file
/// that already has some of these tables fails the shape check on load (and
/// is moved aside) instead of failing here with an opaque error.
const MIGRATION_1: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    id   TEXT PRIMARY KEY NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tabs (
    id       TEXT PRIMARY KEY NOT NULL,
    position INTEGER NOT NULL,
    data     TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS parked (
    session TEXT PRIMARY KEY NOT NULL,
    data    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS buried (
    session TEXT PRIMARY KEY NOT NULL,
    data    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS pins (
    position INTEGER PRIMARY KEY NOT NULL,
    session  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS kv (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS screens (
    session    TEXT PRIMARY KEY NOT NULL,
    screen     BLOB NOT NULL,
    updated_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS processes (
    session    TEXT PRIMARY KEY NOT NULL,
    pid        INTEGER NOT NULL,
    start_time INTEGER NOT NULL,
    pgid       INTEGER NOT NULL
);
";

/// Migration 2: the usage ledger (issue 29). One row per request: sources
/// that saw the same request (`request_key`) update its row, never add one.
/// Accounts are hashes of credentials, never credentials.
const MIGRATION_2: &str = "
CREATE TABLE IF NOT EXISTS usage_requests (
    session     TEXT NOT NULL,
    request_key TEXT NOT NULL,
    provider    TEXT NOT NULL,
    account     TEXT,
    model       TEXT,
    at_ms       INTEGER NOT NULL,
    input       INTEGER NOT NULL,
    output      INTEGER NOT NULL,
    cache_write INTEGER NOT NULL,
    cache_read  INTEGER NOT NULL,
    status      INTEGER,
    source      TEXT NOT NULL,
    PRIMARY KEY (session, request_key)
);
CREATE INDEX IF NOT EXISTS usage_requests_at ON usage_requests (at_ms);
CREATE TABLE IF NOT EXISTS usage_windows (
    provider     TEXT NOT NULL,
    account      TEXT NOT NULL,
    kind         TEXT NOT NULL,
    used_percent REAL,
    resets_at    INTEGER,
    status       TEXT,
    updated_ms   INTEGER NOT NULL,
    PRIMARY KEY (provider, account, kind)
);
CREATE TABLE IF NOT EXISTS usage_sessions (
    session TEXT PRIMARY KEY NOT NULL,
    data    TEXT NOT NULL
);
";

/// Migration 3: `hangar usage`'s sums per session and model read from an
/// index alone, already in their order (no table lookups, no sort): 4x
/// faster over 100,000 requests (docs/src/benchmarks-history.md, issue 29).
const MIGRATION_3: &str = "
CREATE INDEX IF NOT EXISTS usage_requests_sums ON usage_requests
    (session, provider, model, at_ms, input, output, cache_write, cache_read);
";

/// Migration 4: what the agent itself says a request cost (OpenCode's
/// `message.data.cost`), NULL when it says nothing; in the sums' index too,
/// so `hangar usage` still reads the index alone.
const MIGRATION_4: &str = "
ALTER TABLE usage_requests ADD COLUMN agent_cost_usd REAL;
DROP INDEX IF EXISTS usage_requests_sums;
CREATE INDEX IF NOT EXISTS usage_requests_sums ON usage_requests
    (session, provider, model, at_ms, input, output, cache_write, cache_read, agent_cost_usd);
";

/// Ordered migrations; `MIGRATIONS[i]` goes from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[MIGRATION_1, MIGRATION_2, MIGRATION_3, MIGRATION_4];

/// The schema version this build reads and writes.
pub const SUPPORTED_VERSION: u32 = 4;

const _: () = assert!(MIGRATIONS.len() == SUPPORTED_VERSION as usize);

/// Queries whose successful preparation proves a table exists with the
/// columns the store reads. A failure means the file is not a hangar store
/// (or was damaged) and is treated as corrupt.
pub(crate) const SHAPE_CHECKS: &[(&str, &str)] = &[
    ("sessions", "SELECT rowid, id, data FROM sessions LIMIT 0"),
    ("tabs", "SELECT rowid, id, position, data FROM tabs LIMIT 0"),
    ("parked", "SELECT rowid, session, data FROM parked LIMIT 0"),
    ("buried", "SELECT rowid, session, data FROM buried LIMIT 0"),
    ("pins", "SELECT rowid, position, session FROM pins LIMIT 0"),
    ("kv", "SELECT rowid, key, value FROM kv LIMIT 0"),
    (
        "screens",
        "SELECT session, screen, updated_ms FROM screens LIMIT 0",
    ),
    (
        "processes",
        "SELECT session, pid, start_time, pgid FROM processes LIMIT 0",
    ),
    (
        "usage_requests",
        "SELECT session, request_key, provider, account, model, at_ms, input, output, \
         cache_write, cache_read, status, source, agent_cost_usd FROM usage_requests LIMIT 0",
    ),
    (
        "usage_windows",
        "SELECT provider, account, kind, used_percent, resets_at, status, updated_ms \
         FROM usage_windows LIMIT 0",
    ),
    (
        "usage_sessions",
        "SELECT session, data FROM usage_sessions LIMIT 0",
    ),
];

/// Bring a file at `from` (which must be `<= SUPPORTED_VERSION`) up to
/// [`SUPPORTED_VERSION`], one migration per transaction.
pub(crate) fn migrate(conn: &mut Connection, from: u32) -> rusqlite::Result<()> {
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(from as usize) {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(sql)?;
        // `user_version` lives in the header page, so it commits (or rolls
        // back) together with the migration.
        tx.pragma_update(None, "user_version", (index + 1) as i64)?;
        tx.commit()?;
    }
    Ok(())
}
