//! Provider identity: discovering each live agent's provider session id from
//! its transcripts, recording id changes in the resume ledger, refusing to
//! wake a duplicate, and the `doctor` and `transcript` requests.
//!
//! The rules (which id wins, which transcript is a session's own, what a
//! duplicate is) live in `hangar_core::ledger`, and how each provider's
//! transcripts are found and read in hangar-providers; this module gathers the facts
//! (folders, files, clocks, the live set) and carries the answers out. A
//! watcher must never hold the state lock while touching the file system, and
//! never outlive the process it watches.
//!
//! `Identity` is built with the session owner alone; OpenCode's typed-prompt
//! log (`opencode.rs`) lives in it too.

pub mod opencode;

use std::sync::Arc;
use std::time::Duration;

use hangar_core::ledger::{self, Observation, TranscriptMatch};
use hangar_core::{IdSource, Provider, SessionId, Workspace};

use crate::os::Os;
use crate::pty::LiveProcess;
use crate::sessions::Sessions;
use hangar_providers::transcript::discovery::{self, TranscriptCache};

/// The least time between two looks at an agent that keeps printing, and how
/// often a folder inotify could not watch is looked at. One `read_dir` and a
/// `stat` per file each time; files are only re-read when they change.
pub const POLL: Duration = Duration::from_millis(700);

/// `hangar transcript` shows this many messages unless told otherwise.
pub const DEFAULT_TAIL: usize = 20;

/// One notice per duplicate group, for `hangar status` after a load.
pub fn duplicate_notices(ws: &Workspace) -> Vec<String> {
    ledger::duplicate_groups(ws)
        .into_iter()
        .map(|g| {
            format!(
                "sessions {} share {} session id {}; only one of them can run at a time. \
                 `hangar doctor` shows how to fix it",
                g.sessions
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                g.provider,
                g.provider_session_id
            )
        })
        .collect()
}

/// Whether a hook event is Claude Code's `SessionStart` (either spelling).
pub fn is_session_start(event: &str) -> bool {
    let e = event.trim();
    e.eq_ignore_ascii_case("session-start") || e.eq_ignore_ascii_case("SessionStart")
}

/// The identity subsystem: finds and proves which provider conversation
/// each session is, and records it.
pub struct Identity {
    sessions: Arc<Sessions>,
    /// Prompts hangar typed into each session (OpenCode's identity proof).
    typed: opencode::TypedLog,
    /// The daemon's folder watcher: what wakes the watchers here.
    files: Arc<crate::file_watch::FileWatcher>,
    /// Told when a session's provider id changes (its transcript does).
    activity: Arc<crate::activity::Hub>,
    /// The clock, and the process facts (a process's tree, its open files).
    os: Arc<dyn Os>,
}

impl Identity {
    pub fn new(
        sessions: Arc<Sessions>,
        files: Arc<crate::file_watch::FileWatcher>,
        activity: Arc<crate::activity::Hub>,
        os: Arc<dyn Os>,
    ) -> Identity {
        Identity {
            sessions,
            typed: Default::default(),
            files,
            activity,
            os,
        }
    }

    /// Watch a freshly spawned agent's transcripts for as long as `live` is
    /// its process; record the provider session id they show.
    /// `started_ms`: the wall clock just before the process was spawned.
    pub fn watch_identity(
        self: &Arc<Self>,
        id: SessionId,
        live: Arc<LiveProcess>,
        started_ms: u64,
    ) {
        let Some(meta) = self.sessions.meta(&id) else {
            return;
        };
        let provider = meta.provider.clone();
        let Some(root) = discovery::session_transcript_root(&meta, &discovery::env_var) else {
            return;
        };
        // Transcript folders are named by the wall clock of the agent.
        let daemon = self.clone();
        tokio::spawn(async move {
            // Which ids other sessions hold is a fact about every session:
            // a pane forked from a start's first look waits for the rest.
            daemon.sessions.full_model().await;
            let mut cache = TranscriptCache::default();
            let mut exit = live.exit_watch();
            let mut output = live.output_watch();
            let mut files = daemon.files.subscribe();
            let mut last_look = tokio::time::Instant::now();
            let mut first = true;
            loop {
                // What can reveal the id: claude's process record or a
                // transcript appearing in the folders (by notification), or
                // the agent printing (a `/new` started today, in a codex
                // date folder not watched yet).
                files.watch(daemon.identity_folders(&id, &provider, &root, started_ms));
                let exited = if first {
                    false
                } else {
                    tokio::select! {
                        _ = files.changed(POLL) => false,
                        _ = output.changed() => false,
                        _ = exit.wait_for(|e| e.is_some()) => true,
                    }
                };
                if !exited && !first {
                    // An agent busy writing its transcript is looked at no
                    // more often than the old poll did.
                    tokio::time::sleep_until(last_look + POLL).await;
                }
                last_look = tokio::time::Instant::now();
                first = false;
                output.borrow_and_update();
                let current = daemon
                    .sessions
                    .process(&id)
                    .is_some_and(|p| Arc::ptr_eq(&p, &live));
                if !current && !exited {
                    return;
                }
                // One last look after an exit: a `/clear` just before quitting
                // must still be what the next wake resumes.
                let pid = (!exited).then_some(live.pid);
                daemon.discover_once(&id, &provider, &root, started_ms, pid, &mut cache, false);
                if exited {
                    return;
                }
            }
        });
    }

    /// The folders whose changes can show `id`'s provider session id: the
    /// transcript folders `discover_once` reads, and claude's per-process
    /// records.
    fn identity_folders(
        &self,
        id: &SessionId,
        provider: &Provider,
        root: &std::path::Path,
        started_ms: u64,
    ) -> Vec<std::path::PathBuf> {
        let Some(cwd) = self.sessions.meta(id).map(|m| m.cwd) else {
            return Vec::new();
        };
        let cwd = discovery::canonical_cwd(&cwd);
        let mut dirs =
            discovery::candidate_dirs(provider, root, &cwd, started_ms, self.os.wall_ms());
        dirs.extend(hangar_providers::adapter(provider).record_dir(root));
        dirs
    }

    /// Look once at what proves which conversation the session's own
    /// process writes, and record it (DESIGN.md rule 10). `pid` is the
    /// session's process while it runs (`None` after it exited).
    ///
    /// claude: its per-process record (`sessions/<pid>.json`) of a process
    /// in the session's tree; codex: the rollouts that tree holds open.
    /// Transcripts in the folder only ever confirm the id the session has:
    /// a newer one there may be a person's own CLI in another terminal.
    #[allow(clippy::too_many_arguments)]
    fn discover_once(
        &self,
        id: &SessionId,
        provider: &Provider,
        root: &std::path::Path,
        started_ms: u64,
        pid: Option<u32>,
        cache: &mut TranscriptCache,
        only_open: bool,
    ) {
        let Some(facts) = self.sessions.identity_facts(id, provider) else {
            return;
        };
        let (cwd, current, held, neighbours) =
            (facts.cwd, facts.current, facts.held, facts.neighbours);
        let cwd = discovery::canonical_cwd(&cwd);
        let adapter = hangar_providers::adapter(provider);
        // A CLI that keeps a record per process (claude): its own word.
        if adapter.record_dir(root).is_some() {
            let record = pid.and_then(|p| adapter.own_record(root, &self.os.process_tree(p)));
            if let Some(record) = record {
                // As trustworthy as the SessionStart hook: the process's own
                // word, so recorded with source `transcript`.
                let observed = Observation {
                    id: record.session_id,
                    source: IdSource::Transcript,
                    cwd: Some(
                        record
                            .cwd
                            .as_deref()
                            .map(discovery::canonical_cwd)
                            .unwrap_or_else(|| cwd.clone()),
                    ),
                };
                self.record_provider_id(id, &observed, &cwd);
                return;
            }
        }
        // Only a CLI that holds its transcript open for the whole session
        // (codex) is proven by its open files; Claude Code opens, appends
        // and closes, so for claude they prove nothing (its record and
        // SessionStart hook do).
        let by_fd = adapter.holds_transcript_open();
        // `/proc` shows the path as the kernel sees it: symlinks resolved.
        let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        // A sandboxed process's open files show as it sees them (its own
        // mount namespace): its state folder's inside path, mapped back.
        let inside_root = self
            .sessions
            .meta(id)
            .and_then(|m| crate::sandbox::inside_path(&m, &real_root));
        let open_of = |pid: u32| -> Vec<std::path::PathBuf> {
            match &inside_root {
                Some(inside) => self
                    .os
                    .open_files_under(pid, inside)
                    .into_iter()
                    .filter_map(|p| Some(real_root.join(p.strip_prefix(inside).ok()?)))
                    .collect(),
                None => self
                    .os
                    .open_files_under(pid, &real_root)
                    .into_iter()
                    .collect(),
            }
        };
        // An engine session's state folder is its own: only its container
        // mounts it, so every transcript there is its own process's (rule
        // 10), the proof open files give elsewhere (its agent is in the
        // container, not in this machine's process tree of the session).
        let own_folder = self
            .sessions
            .meta(id)
            .is_some_and(|m| m.engine.is_some() && m.sandbox.is_some());
        let mine = match pid {
            _ if own_folder => {
                let dirs =
                    discovery::candidate_dirs(provider, root, &cwd, started_ms, self.os.wall_ms());
                transcripts_in(&dirs)
            }
            Some(p) if by_fd => open_of(p),
            _ => Vec::new(),
        };
        if only_open && mine.is_empty() {
            return;
        }
        let theirs: Vec<std::path::PathBuf> = if by_fd {
            neighbours.into_iter().flat_map(open_of).collect()
        } else {
            Vec::new()
        };
        let dirs = if only_open {
            Vec::new()
        } else {
            discovery::candidate_dirs(provider, root, &cwd, started_ms, self.os.wall_ms())
        };
        let facts = cache.scan(provider, &dirs, &mine);
        let open_by_self = cache.ids_of(provider, &mine);
        let open_by_others = cache.ids_of(provider, &theirs);
        let m = TranscriptMatch {
            session_cwd: &cwd,
            current: current.as_deref(),
            held_by_others: &held,
            open_by_self: &open_by_self,
            open_by_others: &open_by_others,
        };
        let Some(own) = ledger::pick_transcript(&facts, &m) else {
            return;
        };
        let observed = Observation {
            id: own.id.clone(),
            source: IdSource::Transcript,
            cwd: own.cwd.clone(),
        };
        self.record_provider_id(id, &observed, &cwd);
    }

    /// One last look at the transcripts `live` holds open, just before it is
    /// stopped: after the exit its open files are gone, and a session
    /// hibernated before the watcher's first poll must still keep its
    /// conversation.
    pub fn note_identity_before_stop(&self, id: &SessionId, live: &LiveProcess) {
        if live.exited().is_some() {
            return;
        }
        let Some(meta) = self.sessions.meta(id) else {
            return;
        };
        let provider = meta.provider.clone();
        let Some(root) = discovery::session_transcript_root(&meta, &discovery::env_var) else {
            return;
        };
        let mut cache = TranscriptCache::default();
        let now = self.os.now_ms();
        self.discover_once(id, &provider, &root, now, Some(live.pid), &mut cache, true);
    }

    /// Record an observed provider session id if the ledger accepts it;
    /// persist it, and flag a duplicate it creates. Returns whether the
    /// session's record changed.
    pub fn record_provider_id(
        &self,
        id: &SessionId,
        observed: &Observation,
        session_cwd: &str,
    ) -> bool {
        let changed = self
            .sessions
            .record_provider_id(id, observed, session_cwd, self.os.now_ms());
        if changed {
            // Its activity is read from the transcript of this id.
            self.activity.nudge(id);
        }
        changed
    }
}

/// The transcript files (`*.jsonl`) directly in `dirs`.
fn transcripts_in(dirs: &[std::path::PathBuf]) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(d) else {
            continue;
        };
        out.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && p.is_file()),
        );
    }
    out
}
