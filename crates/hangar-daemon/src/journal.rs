//! The lifecycle journal: an append-only JSON-lines record of what happened
//! to sessions (spawns, wakes, hibernations, closes, budget decisions).
//!
//! The vocabulary is closed: every event is a variant of [`Event`] whose
//! fields are ids, counts, codes and reason categories. There is no field
//! that could carry prompt text, environment, tokens or keys, so none can
//! leak into the file. The file is rotated at a bounded size (one previous
//! generation kept).

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::os::{Clock, RealOs};

/// Rotate when the journal grows past this.
pub const MAX_JOURNAL_BYTES: u64 = 8 * 1024 * 1024;

/// Who asked for a wake.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Caller {
    Cli,
    Attach,
    Send,
    Unpark,
    Unbury,
    New,
    Restore,
    Reload,
    Agent,
    Tui,
}

impl Caller {
    /// Whether a person is waiting on this wake at a terminal (answered at
    /// once while the wake queue is paused) rather than an agent or the
    /// daemon itself (queued until a person resumes it).
    pub fn is_person(self) -> bool {
        !matches!(self, Caller::Restore | Caller::Agent)
    }
}

/// Why a spawn failed, as a category (never the program's output).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    ProgramMissing,
    CwdMissing,
    ExitedDuringStart,
    AuthFailure,
    Timeout,
    SpawnError,
    Duplicate,
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HibernateReason {
    User,
    Budget,
    Reload,
    Agent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CloseCause {
    User,
    Tab,
    Cascade,
    Idle,
    Evicted,
    Agent,
}

/// Every event the journal can hold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    RestoreStart {
        expected: usize,
        /// Absent at a daemon's start: its restore begins from a first look
        /// at the store, before the sessions that stay hibernated are read
        /// (a [`Event::RestoreHibernated`] follows with the count).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hibernated: Option<usize>,
    },
    /// A daemon start's full load is in: how many sessions its restore
    /// leaves hibernated. Recorded after the start's `restore-start`, which
    /// is written before the first fork, when only the visible panes' rows
    /// have been read; counting the others there would delay the fork.
    RestoreHibernated {
        hibernated: usize,
    },
    RestoreComplete {
        restored: usize,
        failed: usize,
        duration_ms: u64,
    },
    SpawnBegin {
        session: String,
        resumed: bool,
    },
    SpawnEnd {
        session: String,
        pid: u32,
        duration_ms: u64,
    },
    SpawnFailed {
        session: String,
        kind: FailureKind,
        exit_code: Option<i32>,
    },
    WakeRequest {
        session: String,
        caller: Caller,
    },
    WakeResult {
        session: String,
        caller: Caller,
        ok: bool,
        joined: bool,
    },
    Hibernate {
        session: String,
        reason: HibernateReason,
    },
    Reload {
        dangerous: bool,
        restarted: usize,
        failed: usize,
    },
    Close {
        session: String,
        cause: CloseCause,
    },
    Exited {
        session: String,
        code: i32,
    },
    BudgetDecision {
        live: usize,
        memory_bytes: u64,
        hibernated: usize,
        over_budget: bool,
    },
    BreakerTrip {
        failures: u32,
    },
    BreakerReset,
    Evict {
        session: String,
    },
    /// An orchestration tool call by the agent `caller` (its request kind,
    /// the sessions it named or touched, the error code if refused). Never
    /// the prompt text or the token.
    AgentAction {
        caller: String,
        action: String,
        sessions: Vec<String>,
        ok: bool,
        code: Option<String>,
    },
    /// A provider refused `session` for a usage limit (issue 29): the
    /// window, the reset (ms, null when unknown) and who said so.
    Limited {
        session: String,
        kind: String,
        resets_at: Option<i64>,
        source: String,
    },
    /// The continuation after a limit: typed, or not and why (a reason
    /// category, never text from the session).
    LimitContinue {
        session: String,
        typed: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A session's goal changed state or counted a turn (`hangar goal`);
    /// the reason is hangar's own words, never the agent's summary.
    Goal {
        session: String,
        state: String,
        turns: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A session's cost budget (its own or the day's) is spent: its goal
    /// stopped and it hibernates after its turn.
    Budget {
        session: String,
        why: String,
    },
    /// `hangar finish` landed a session's work: every ref it moved, with
    /// the backup ref of where each was (issue 30).
    Finish {
        session: String,
        strategy: String,
        refs: serde_json::Value,
    },
    /// A session was moved to another `[accounts.NAME]` (`hangar limit ID
    /// --failover ACCOUNT`): the names only, never a credential.
    AccountMove {
        session: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<String>,
        to: String,
    },
    /// An event kind from a newer hangar (when reading).
    #[serde(other)]
    Unknown,
}

/// One line of the journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Strictly increasing over the journal's life (across restarts and
    /// rotation): the order of events, whatever the clock said. Lines of
    /// journals older than this field read as 0.
    #[serde(default)]
    pub seq: u64,
    pub time_ms: u64,
    #[serde(flatten)]
    pub event: Event,
}

pub struct Journal {
    path: PathBuf,
    /// Each entry's `time_ms` (the daemon's clock; a fake one in tests).
    clock: Arc<dyn Clock>,
    max_bytes: u64,
    /// The next entry's `seq`; held while a line is written, so lines are
    /// in `seq` order in the file.
    next_seq: Mutex<u64>,
}

impl Journal {
    pub fn new(path: PathBuf) -> Journal {
        let next = last_seq(&path).map_or(1, |s| s + 1);
        Journal {
            path,
            clock: Arc::new(RealOs),
            max_bytes: MAX_JOURNAL_BYTES,
            next_seq: Mutex::new(next),
        }
    }

    /// The journal with its times from `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Journal {
        self.clock = clock;
        self
    }

    pub fn with_max_bytes(mut self, max: u64) -> Journal {
        self.max_bytes = max;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append an event. Journal trouble (a full disk) is logged, never fatal.
    pub fn record(&self, event: Event) {
        let mut next = self.next_seq.lock().unwrap_or_else(|p| p.into_inner());
        let entry = Entry {
            seq: *next,
            time_ms: self.clock.now_ms(),
            event,
        };
        let Ok(mut line) = serde_json::to_vec(&entry) else {
            return;
        };
        line.push(b'\n');
        // A number is used even when the write fails: a gap says a line is
        // missing, a repeat would be ambiguous.
        *next += 1;
        if let Err(e) = self.append(&line) {
            tracing::warn!("cannot write the journal {}: {e}", self.path.display());
        }
    }

    fn append(&self, line: &[u8]) -> std::io::Result<()> {
        if let Ok(meta) = std::fs::metadata(&self.path)
            && meta.len() + line.len() as u64 > self.max_bytes
        {
            std::fs::rename(&self.path, rotated(&self.path))?;
        }
        let mut f = {
            use std::os::unix::fs::OpenOptionsExt;
            OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(&self.path)?
        };
        f.write_all(line)
    }
}

/// The highest `seq` in the last lines of the journal (or of its previous
/// generation when the current one is empty or gone), read from the end so a
/// start costs a few KiB however long the journal is.
fn last_seq(path: &Path) -> Option<u64> {
    use std::io::{Read, Seek, SeekFrom};
    const TAIL: u64 = 64 * 1024;
    [path.to_path_buf(), rotated(path)].iter().find_map(|p| {
        let mut f = std::fs::File::open(p).ok()?;
        let len = f.metadata().ok()?.len();
        f.seek(SeekFrom::Start(len.saturating_sub(TAIL))).ok()?;
        let mut tail = Vec::new();
        f.read_to_end(&mut tail).ok()?;
        String::from_utf8_lossy(&tail)
            .lines()
            .filter_map(|l| serde_json::from_str::<Entry>(l).ok())
            .map(|e| e.seq)
            .max()
    })
}

/// The previous generation's path.
pub fn rotated(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".1");
    PathBuf::from(p)
}

/// Read every entry (previous generation first). Lines that do not parse
/// (a torn last line after a crash) are skipped.
pub fn read_entries(path: &Path) -> Vec<Entry> {
    let mut out = Vec::new();
    for p in [rotated(path), path.to_path_buf()] {
        if let Ok(text) = std::fs::read_to_string(&p) {
            out.extend(
                text.lines()
                    .filter_map(|l| serde_json::from_str::<Entry>(l).ok()),
            );
        }
    }
    out
}

/// What `hangar journal summarize` reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub entries: usize,
    pub restores: Vec<RestoreSummary>,
    /// Sessions whose last spawn began and never ended.
    pub stuck_spawning: Vec<String>,
    pub wake_storms: Vec<WakeStorm>,
    /// Failed spawns counted by reason category.
    pub failed_spawns: std::collections::BTreeMap<String, usize>,
    pub budget_hibernations: usize,
    pub breaker_trips: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RestoreSummary {
    pub time_ms: u64,
    pub restored: usize,
    pub failed: usize,
    pub duration_ms: u64,
    /// How many sessions the restore left hibernated: from its
    /// `restore-start`, or the `restore-hibernated` a daemon start records
    /// after it. Absent for a journal that has neither (journals written
    /// between the two-phase start and this field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hibernated: Option<usize>,
}

/// More than `threshold` wake requests within `window_ms`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WakeStorm {
    pub start_ms: u64,
    pub end_ms: u64,
    pub wakes: usize,
}

/// Summarize a journal. A wake storm is a maximal run of wake requests in
/// which every `threshold + 1` consecutive requests fall within `window_ms`.
pub fn summarize(entries: &[Entry], storm_threshold: usize, window_ms: u64) -> Summary {
    let mut s = Summary {
        entries: entries.len(),
        ..Default::default()
    };
    let mut spawning: std::collections::BTreeMap<String, bool> = Default::default();
    let mut wakes: Vec<u64> = Vec::new();
    // The hibernated count of the restore under way, for its
    // `restore-complete` (each restore starts with its `restore-start`).
    let mut hibernated = None;
    for e in entries {
        match &e.event {
            Event::RestoreStart {
                hibernated: count, ..
            } => hibernated = *count,
            Event::RestoreHibernated { hibernated: count } => hibernated = Some(*count),
            Event::RestoreComplete {
                restored,
                failed,
                duration_ms,
            } => s.restores.push(RestoreSummary {
                time_ms: e.time_ms,
                restored: *restored,
                failed: *failed,
                duration_ms: *duration_ms,
                hibernated,
            }),
            Event::SpawnBegin { session, .. } => {
                spawning.insert(session.clone(), true);
            }
            Event::SpawnEnd { session, .. } => {
                spawning.insert(session.clone(), false);
            }
            Event::SpawnFailed { session, kind, .. } => {
                spawning.insert(session.clone(), false);
                let key = serde_json::to_value(kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                *s.failed_spawns.entry(key).or_default() += 1;
            }
            Event::WakeRequest { .. } => wakes.push(e.time_ms),
            Event::Hibernate {
                reason: HibernateReason::Budget,
                ..
            } => s.budget_hibernations += 1,
            Event::BreakerTrip { .. } => s.breaker_trips += 1,
            _ => {}
        }
    }
    s.stuck_spawning = spawning
        .into_iter()
        .filter(|(_, open)| *open)
        .map(|(id, _)| id)
        .collect();
    wakes.sort_unstable();
    let threshold = storm_threshold.max(1);
    let mut i = 0;
    while i + threshold < wakes.len() {
        if wakes[i + threshold] - wakes[i] <= window_ms {
            // Extend the storm while the density holds.
            let mut j = i + threshold;
            while j + 1 < wakes.len() && wakes[j + 1] - wakes[j + 1 - threshold] <= window_ms {
                j += 1;
            }
            s.wake_storms.push(WakeStorm {
                start_ms: wakes[i],
                end_ms: wakes[j],
                wakes: j - i + 1,
            });
            i = j + 1;
        } else {
            i += 1;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_written_as_one_json_line_each_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path().join("journal.jsonl"));
        j.record(Event::WakeRequest {
            session: "s1".into(),
            caller: Caller::Send,
        });
        j.record(Event::BreakerReset);
        let entries = read_entries(j.path());
        assert_eq!(entries.len(), 2);
        assert_eq!(
            entries[0].event,
            Event::WakeRequest {
                session: "s1".into(),
                caller: Caller::Send
            }
        );
        let text = std::fs::read_to_string(j.path()).unwrap();
        assert!(text.lines().all(|l| l.contains("\"event\"")));
    }

    #[test]
    fn the_journal_rotates_at_its_size_bound() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path().join("journal.jsonl")).with_max_bytes(300);
        for i in 0..50 {
            j.record(Event::Evict {
                session: format!("s{i}"),
            });
        }
        let main = std::fs::metadata(j.path()).unwrap().len();
        let old = std::fs::metadata(rotated(j.path())).unwrap().len();
        assert!(main <= 300 && old <= 300, "{main} {old}");
    }

    #[test]
    fn the_sequence_continues_across_restarts_and_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let j = Journal::new(path.clone()).with_max_bytes(300);
        for i in 0..20 {
            j.record(Event::Evict {
                session: format!("s{i}"),
            });
        }
        drop(j);
        Journal::new(path.clone()).record(Event::BreakerReset);
        let seqs: Vec<u64> = read_entries(&path).iter().map(|e| e.seq).collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
        assert_eq!(seqs.last(), Some(&21), "{seqs:?}");
    }

    #[test]
    fn an_unknown_event_from_a_newer_hangar_reads_as_unknown() {
        let e: Entry = serde_json::from_str(r#"{"time_ms":1,"event":"teleport","x":1}"#).unwrap();
        assert_eq!(e.event, Event::Unknown);
    }

    fn at(time_ms: u64, event: Event) -> Entry {
        Entry {
            seq: 0,
            time_ms,
            event,
        }
    }

    #[test]
    fn summarize_reports_a_wake_storm_stuck_spawns_and_failures_by_reason() {
        let mut entries = Vec::new();
        for i in 0..30 {
            entries.push(at(
                1000 + i * 10,
                Event::WakeRequest {
                    session: format!("s{i}"),
                    caller: Caller::Agent,
                },
            ));
        }
        entries.push(at(
            60_000,
            Event::WakeRequest {
                session: "late".into(),
                caller: Caller::Cli,
            },
        ));
        entries.push(at(
            1,
            Event::SpawnBegin {
                session: "stuck".into(),
                resumed: false,
            },
        ));
        entries.push(at(
            2,
            Event::SpawnFailed {
                session: "bad".into(),
                kind: FailureKind::AuthFailure,
                exit_code: Some(1),
            },
        ));
        let s = summarize(&entries, 10, 5000);
        assert_eq!(s.wake_storms.len(), 1);
        assert_eq!(s.wake_storms[0].wakes, 30);
        assert_eq!(s.stuck_spawning, vec!["stuck".to_owned()]);
        assert_eq!(s.failed_spawns.get("auth-failure"), Some(&1));
    }

    #[test]
    fn a_restores_hibernated_count_is_summarized_from_any_journal_generation() {
        let lines = [
            // Before the two-phase start: the count on `restore-start`.
            r#"{"seq":1,"time_ms":10,"event":"restore-start","expected":2,"hibernated":40}"#,
            r#"{"seq":2,"time_ms":20,"event":"restore-complete","restored":2,"failed":0,"duration_ms":9}"#,
            // The two-phase start before the follow-up event: no count.
            r#"{"seq":3,"time_ms":30,"event":"restore-start","expected":9}"#,
            r#"{"seq":4,"time_ms":40,"event":"restore-complete","restored":9,"failed":0,"duration_ms":8}"#,
            // Now: the count follows once the rest of the store is loaded,
            // while the forks are still starting.
            r#"{"seq":5,"time_ms":50,"event":"restore-start","expected":9}"#,
            r#"{"seq":6,"time_ms":51,"event":"spawn-begin","session":"a","resumed":true}"#,
            r#"{"seq":7,"time_ms":52,"event":"restore-hibernated","hibernated":9991}"#,
            r#"{"seq":8,"time_ms":90,"event":"restore-complete","restored":8,"failed":1,"duration_ms":40}"#,
        ];
        let entries: Vec<Entry> = lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let counts: Vec<Option<usize>> = summarize(&entries, 10, 5000)
            .restores
            .iter()
            .map(|r| r.hibernated)
            .collect();
        assert_eq!(counts, vec![Some(40), None, Some(9991)]);

        // Written back, a start's `restore-start` still has no count field,
        // and the follow-up reads back as itself.
        let start = serde_json::to_value(&entries[4]).unwrap();
        assert!(start.get("hibernated").is_none(), "{start}");
        assert_eq!(
            entries[6].event,
            Event::RestoreHibernated { hibernated: 9991 }
        );
        let summary = serde_json::to_value(summarize(&entries[2..4], 10, 5000)).unwrap();
        assert!(
            summary["restores"][0].get("hibernated").is_none(),
            "{summary}"
        );
    }

    #[test]
    fn sparse_wakes_are_not_a_storm() {
        let entries: Vec<_> = (0..30)
            .map(|i| {
                at(
                    i * 10_000,
                    Event::WakeRequest {
                        session: "s".into(),
                        caller: Caller::Cli,
                    },
                )
            })
            .collect();
        assert!(summarize(&entries, 10, 5000).wake_storms.is_empty());
    }
}
