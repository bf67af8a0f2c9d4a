//! Finding provider transcripts on disk and reading the few facts the ledger
//! needs from each: the provider session id and the folder it ran in.
//!
//! Cost is bounded by construction: a claude session only ever lists its own
//! project folder (`projects/<cwd slug>`), a codex session only the date
//! folders around its start and around today (at most a dozen), and a file is only
//! re-read when its size or modification time changed. This module must never
//! read a whole transcript to find an id: the first entries carry it.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use hangar_core::Provider;
use hangar_core::ledger::TranscriptFacts;
use serde_json::Value;

/// How many leading lines of a transcript are looked at for its id and cwd.
const HEAD_LINES: usize = 64;

/// Where a provider keeps its transcripts, from the daemon's environment (the
/// agents inherit it, so they write where we read).
pub fn transcript_root(
    provider: &Provider,
    var: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    let state = crate::adapter::adapter(provider).transcript_state()?;
    match var(state.var).filter(|v| !v.is_empty()) {
        Some(dir) if state.under_var.is_empty() => Some(PathBuf::from(dir)),
        Some(dir) => Some(Path::new(&dir).join(state.under_var)),
        None => var("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| Path::new(&h).join(state.under_home)),
    }
}

/// Where one session's transcripts are: a sandboxed session's CLI keeps its
/// state in the session's own sandbox folder (issue 32), one under an
/// account with a config folder of its own in that folder (issue 47), any
/// other in the folder the daemon's environment names.
pub fn session_transcript_root(
    meta: &hangar_core::SessionMeta,
    var: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    let Some(dir) = &meta.sandbox else {
        if let Some(folder) = meta.state_folder.as_deref() {
            crate::adapter::adapter(&meta.provider).transcript_state()?;
            return Some(PathBuf::from(folder));
        }
        return transcript_root(&meta.provider, var);
    };
    let adapter = crate::adapter::adapter(&meta.provider);
    let name = adapter.transcript_state()?.var;
    hangar_core::sandbox::state_dir_for_var(adapter.sandbox_state(), dir, name).map(PathBuf::from)
}

pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Claude Code's project folder name of `cwd` (see `hangar_core::claude_slug`).
pub fn claude_slug(cwd: &str) -> String {
    hangar_core::claude_slug::claude_project_slug(cwd)
}

/// The folder as the kernel sees it (symlinks resolved), which is what
/// transcripts record; the given text when it cannot be resolved.
pub fn canonical_cwd(cwd: &str) -> String {
    fs::canonicalize(cwd)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| cwd.to_owned())
}

/// A civil date (year, month, day) in UTC from milliseconds since the epoch.
/// Past year 9999 (no real clock) the date stops there.
pub fn utc_date(ms: u64) -> (i64, u32, u32) {
    let at = time::OffsetDateTime::UNIX_EPOCH
        .checked_add(time::Duration::milliseconds(
            i64::try_from(ms).unwrap_or(i64::MAX),
        ))
        .unwrap_or(time::PrimitiveDateTime::MAX.assume_utc());
    (
        i64::from(at.year()),
        u32::from(u8::from(at.month())),
        u32::from(at.day()),
    )
}

pub use hangar_clock::local_offset_ms;

/// The folders a session's new transcripts can appear in.
pub fn candidate_dirs(
    provider: &Provider,
    root: &Path,
    cwd: &str,
    started_ms: u64,
    now_ms: u64,
) -> Vec<PathBuf> {
    candidate_dirs_in_zone(provider, root, cwd, started_ms, now_ms, &local_offset_ms)
}

/// [`candidate_dirs`] with the local time zone given, for tests.
///
/// Codex names its date folders by the LOCAL date, so the days are taken in
/// both UTC and local time: one day either side of the session's start
/// (its first rollout) and of now (a rollout begun since). The days in
/// between are not listed, which keeps a long-lived session's poll to at
/// most a dozen folders; a rollout begun on such a day was seen while it
/// was "now", and an open one is found through the process anyway.
pub fn candidate_dirs_in_zone(
    provider: &Provider,
    root: &Path,
    cwd: &str,
    started_ms: u64,
    now_ms: u64,
    local_offset_ms: &dyn Fn(u64) -> i64,
) -> Vec<PathBuf> {
    crate::adapter::adapter(provider).transcript_dirs(
        root,
        cwd,
        started_ms,
        now_ms,
        local_offset_ms,
    )
}

fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Facts read from one file, remembered with the size and time they were
/// read at.
struct Cached {
    len: u64,
    modified_ms: u64,
    facts: Option<TranscriptFacts>,
}

/// A per-session cache so a poll re-reads only files that changed.
#[derive(Default)]
pub struct TranscriptCache {
    files: HashMap<PathBuf, Cached>,
}

impl TranscriptCache {
    /// The facts of every transcript in `dirs` (missing folders are fine:
    /// the provider has not written anything yet), plus those of `files`
    /// wherever they are (a resumed rollout lives in an older date folder).
    pub fn scan(
        &mut self,
        provider: &Provider,
        dirs: &[PathBuf],
        files: &[PathBuf],
    ) -> Vec<TranscriptFacts> {
        let adapter = crate::adapter::adapter(provider);
        let mut out = Vec::new();
        let mut seen: HashSet<PathBuf> = HashSet::new();
        let listed = dirs
            .iter()
            .filter_map(|dir| fs::read_dir(dir).ok())
            .flat_map(|entries| entries.flatten().map(|e| e.path()));
        for path in listed.chain(files.iter().cloned()) {
            if seen.contains(&path) {
                continue;
            }
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if !adapter.is_transcript_name(name) {
                continue;
            }
            let Ok(md) = fs::metadata(&path) else {
                continue;
            };
            if !md.is_file() {
                continue;
            }
            let modified_ms = md.modified().map(millis).unwrap_or(0);
            let len = md.len();
            let fresh = self
                .files
                .get(&path)
                .is_some_and(|c| c.len == len && c.modified_ms == modified_ms);
            if !fresh {
                let facts = read_facts(provider, &path).map(|mut f| {
                    f.modified_ms = modified_ms;
                    f
                });
                self.files.insert(
                    path.clone(),
                    Cached {
                        len,
                        modified_ms,
                        facts,
                    },
                );
            }
            if let Some(f) = self.files.get(&path).and_then(|c| c.facts.clone()) {
                out.push(f);
            }
            seen.insert(path);
        }
        // Forget files that went away so the cache stays as small as the folders.
        self.files.retain(|p, _| seen.contains(p));
        out
    }

    /// The ids of the transcripts at `paths`, read through the cache (a
    /// file not yet scanned is read once).
    pub fn ids_of(&mut self, provider: &Provider, paths: &[PathBuf]) -> BTreeSet<String> {
        paths
            .iter()
            .filter_map(|p| match self.files.get(p) {
                Some(c) => c.facts.as_ref().map(|f| f.id.clone()),
                None => read_facts(provider, p).map(|f| f.id),
            })
            .collect()
    }
}

/// The id and cwd of one transcript, from its first lines.
///
/// The id is the first one seen; the folder comes from whichever line
/// carries it. Real Claude Code (2.1.197) begins a transcript with lines
/// that have `sessionId` but no `cwd` (`mode`, `permission-mode`,
/// `file-history-snapshot`); `cwd` first appears on the `user` entry.
pub fn read_facts(provider: &Provider, path: &Path) -> Option<TranscriptFacts> {
    let adapter = crate::adapter::adapter(provider);
    let file = fs::File::open(path).ok()?;
    let mut facts: Option<TranscriptFacts> = None;
    for line in BufReader::new(file).lines().take(HEAD_LINES) {
        let Ok(line) = line else { break };
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            // A half-written last line or foreign junk: skip it.
            continue;
        };
        let Some(found) = adapter.transcript_entry_facts(&v) else {
            continue;
        };
        match &mut facts {
            None => facts = Some(found),
            // A line of another conversation (never seen, but a file is
            // untrusted text) says nothing about this one's folder.
            Some(f) if f.id != found.id => continue,
            Some(f) => {
                if f.cwd.is_none() {
                    f.cwd = found.cwd;
                }
            }
        }
        if facts.as_ref().is_some_and(|f| f.cwd.is_some()) {
            break;
        }
    }
    facts
}

pub(crate) fn str_at(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The transcript of provider session `psid`, wherever it is: the claude
/// project folder of `cwd` first, then any project folder; for codex any
/// rollout under `sessions/` whose name ends in the id. Used by `hangar
/// transcript`, once per request, so a full walk is acceptable.
pub fn find_transcript(provider: &Provider, root: &Path, cwd: &str, psid: &str) -> Option<PathBuf> {
    crate::adapter::adapter(provider).find_transcript(root, cwd, psid)
}

/// `e` in `best` when it is newer (the first one found wins a tie).
pub(crate) fn keep_newest(best: &mut Option<(SystemTime, PathBuf)>, e: &fs::DirEntry) {
    let t = e
        .metadata()
        .and_then(|m| m.modified())
        .unwrap_or(UNIX_EPOCH);
    if best.as_ref().is_none_or(|(bt, _)| t > *bt) {
        *best = Some((t, e.path()));
    }
}

/// Transcripts by the conversation ids their names carry, found in one
/// walk (`Adapter::transcript_index`): for a caller that looks up many
/// sessions at once (`hangar search`), instead of a walk per session. An
/// id's file is the one `find_transcript` would pick (the newest).
#[derive(Debug, Default)]
pub struct TranscriptIndex {
    pub(crate) newest: HashMap<String, (SystemTime, PathBuf)>,
}

impl TranscriptIndex {
    /// The transcript of conversation `psid`, if there is one.
    pub fn get(&self, psid: &str) -> Option<&Path> {
        self.newest.get(psid).map(|(_, p)| p.as_path())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates_match_known_days() {
        assert_eq!(utc_date(0), (1970, 1, 1));
        // 2024-02-29T12:00:00Z
        assert_eq!(utc_date(1_709_208_000_000), (2024, 2, 29));
        // 2025-12-31T23:59:59Z
        assert_eq!(utc_date(1_767_225_599_000), (2025, 12, 31));
    }

    #[test]
    fn the_claude_slug_replaces_every_character_but_letters_and_digits() {
        assert_eq!(claude_slug("/tmp/a.b/c"), "-tmp-a-b-c");
        assert_eq!(claude_slug("/w/a_b c~d+e@f/é"), "-w-a-b-c-d-e-f--");
    }

    fn day_dirs(dirs: &[PathBuf]) -> Vec<String> {
        dirs.iter()
            .map(|d| d.strip_prefix("/c/sessions").unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn codex_looks_at_the_days_around_the_start_and_now_in_utc_and_local_time() {
        let day = 86_400_000;
        let utc = |_: u64| 0;
        // 1970-01-11 00:30 UTC, started and looked at the same minute.
        let t = 10 * day + 30 * 60_000;
        let dirs = candidate_dirs_in_zone(&Provider::Codex, Path::new("/c"), "/w", t, t, &utc);
        assert_eq!(day_dirs(&dirs), ["1970/01/10", "1970/01/11", "1970/01/12"]);
        // Long-lived: the days around the start and around now only.
        let dirs =
            candidate_dirs_in_zone(&Provider::Codex, Path::new("/c"), "/w", 1, 40 * day, &utc);
        assert_eq!(dirs.len(), 5);
    }

    #[test]
    fn codex_finds_a_rollout_in_the_local_date_folder_two_days_off_utc() {
        // 2025-06-10 23:30 UTC is already 2025-06-11 13:30 at UTC+14 (Kiribati):
        // codex writes into 2025/06/11 and on the next local day into 06/12.
        let t = 1_749_598_200_000;
        assert_eq!(utc_date(t), (2025, 6, 10));
        let plus14 = |_: u64| 14 * 3_600_000;
        let dirs = candidate_dirs_in_zone(&Provider::Codex, Path::new("/c"), "/w", t, t, &plus14);
        let days = day_dirs(&dirs);
        for local in ["2025/06/11", "2025/06/12"] {
            assert!(days.contains(&local.to_owned()), "{local} not in {days:?}");
        }
        // West of Greenwich the local date lags: UTC-11 at 2025-06-10 05:00 UTC
        // is 2025-06-09 18:00, and the day before that is looked at too.
        let t = 1_749_531_600_000;
        let minus11 = |_: u64| -11 * 3_600_000;
        let days = day_dirs(&candidate_dirs_in_zone(
            &Provider::Codex,
            Path::new("/c"),
            "/w",
            t,
            t,
            &minus11,
        ));
        for local in ["2025/06/08", "2025/06/09"] {
            assert!(days.contains(&local.to_owned()), "{local} not in {days:?}");
        }
    }

    #[test]
    fn the_local_offset_follows_tz() {
        // Whatever the machine's zone, the offset is within a day.
        assert!(local_offset_ms(1_749_598_200_000).abs() < 86_400_000);
    }

    #[test]
    fn facts_come_from_the_first_entries_of_each_format() {
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("a.jsonl");
        fs::write(
            &c,
            "not json\n{\"type\":\"system\",\"sessionId\":\"s2\",\"cwd\":\"/w\"}\n",
        )
        .unwrap();
        let f = read_facts(&Provider::Claude, &c).unwrap();
        assert_eq!((f.id.as_str(), f.cwd.as_deref()), ("s2", Some("/w")));
        let x = dir.path().join("rollout-x.jsonl");
        fs::write(
            &x,
            "{\"type\":\"session_meta\",\"payload\":{\"id\":\"t1\",\"cwd\":\"/w\"}}\n",
        )
        .unwrap();
        let f = read_facts(&Provider::Codex, &x).unwrap();
        assert_eq!((f.id.as_str(), f.cwd.as_deref()), ("t1", Some("/w")));
    }

    #[test]
    fn a_real_claude_transcript_gives_its_folder_from_the_first_line_that_has_one() {
        // The first four lines of a transcript Claude Code 2.1.197 wrote
        // (2026-12-01, this project's machine), cut to the fields that matter.
        let dir = tempfile::tempdir().unwrap();
        let c = dir
            .path()
            .join("11111111-2222-4333-8444-555555555555.jsonl");
        let id = "11111111-2222-4333-8444-555555555555";
        let lines = [
            format!(r#"{{"type":"mode","mode":"normal","sessionId":"{id}"}}"#),
            format!(r#"{{"type":"permission-mode","permissionMode":"default","sessionId":"{id}"}}"#),
            r#"{"type":"file-history-snapshot","messageId":"f147ca53","snapshot":{"messageId":"f147ca53","trackedFileBackups":{},"timestamp":"2026-12-01T08:18:28.145Z"},"isSnapshotUpdate":false}"#.to_owned(),
            format!(r#"{{"parentUuid":null,"isSidechain":false,"type":"user","message":{{"role":"user","content":"say hi"}},"uuid":"f147ca53","timestamp":"2026-12-01T08:18:28.073Z","cwd":"/tmp/obs/w/my.proj_dir/a b/é","sessionId":"{id}","version":"2.1.197"}}"#),
        ];
        fs::write(&c, lines.join("\n") + "\n").unwrap();
        let f = read_facts(&Provider::Claude, &c).unwrap();
        assert_eq!(f.id, id);
        assert_eq!(f.cwd.as_deref(), Some("/tmp/obs/w/my.proj_dir/a b/é"));
        // Before the first prompt is answered only the leading lines exist:
        // the id is known, the folder not yet.
        fs::write(&c, lines[..3].join("\n") + "\n").unwrap();
        let f = read_facts(&Provider::Claude, &c).unwrap();
        assert_eq!((f.id.as_str(), f.cwd), (id, None));
    }

    #[test]
    fn one_walk_finds_each_codex_rollout_as_find_transcript_does() {
        let dir = tempfile::tempdir().unwrap();
        let day = dir.path().join("sessions/2026/11/30");
        let later = dir.path().join("sessions/2026/12/01");
        fs::create_dir_all(&day).unwrap();
        fs::create_dir_all(&later).unwrap();
        let a = "0199aaaa-1111-7000-8000-000000000001";
        let b = "0199bbbb-2222-7000-8000-000000000002";
        let old_a = day.join(format!("rollout-2026-11-30T10-00-00-{a}.jsonl"));
        let new_a = later.join(format!("rollout-2026-12-01T09-00-00-{a}.jsonl"));
        let only_b = day.join(format!("rollout-2026-11-30T11-00-00-{b}.jsonl"));
        for p in [&old_a, &new_a, &only_b] {
            fs::write(p, "{}\n").unwrap();
        }
        let at = |p: &Path, secs: u64| {
            let f = fs::File::options().write(true).open(p).unwrap();
            f.set_modified(UNIX_EPOCH + std::time::Duration::from_secs(secs))
                .unwrap();
        };
        at(&old_a, 1_000);
        at(&new_a, 2_000);
        at(&only_b, 1_500);
        fs::write(day.join(format!("notes-{a}.jsonl")), "{}\n").unwrap();
        let index = crate::adapter::adapter(&Provider::Codex)
            .transcript_index(dir.path())
            .unwrap();
        assert_eq!(
            index.get(a),
            Some(new_a.as_path()),
            "the newest file of a thread"
        );
        assert_eq!(index.get(b), Some(only_b.as_path()));
        assert_eq!(index.get("0199cccc-3333-7000-8000-000000000003"), None);
        for id in [a, b, "8000-000000000002", "nope"] {
            let walked = find_transcript(&Provider::Codex, dir.path(), "/", id);
            assert_eq!(index.get(id).map(Path::to_path_buf), walked, "{id}");
        }
    }
}
