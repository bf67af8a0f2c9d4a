//! Where each style's transcripts live, computed exactly like the real CLIs.
//!
//! hangar's provider adapters find transcripts by these rules
//! (hangar-providers' `claude::transcript`, `codex::transcript`), so they
//! must never drift from what the real CLIs do and the fake's README
//! promises.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use crate::timestamp::UtcTime;

/// The environment variables that decide the transcript roots.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    pub home: Option<OsString>,
    pub claude_config_dir: Option<OsString>,
    pub codex_home: Option<OsString>,
    pub opencode_dir: Option<OsString>,
}

impl Roots {
    pub fn from_env() -> Roots {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        Roots {
            home: var("HOME"),
            claude_config_dir: var("CLAUDE_CONFIG_DIR"),
            codex_home: var("CODEX_HOME"),
            opencode_dir: var("HANGAR_FAKE_OPENCODE_DIR"),
        }
    }

    fn under_home(
        &self,
        explicit: &Option<OsString>,
        rel: &str,
        var: &str,
    ) -> Result<PathBuf, String> {
        match (explicit, &self.home) {
            (Some(dir), _) => Ok(PathBuf::from(dir)),
            (None, Some(home)) => Ok(Path::new(home).join(rel)),
            (None, None) => Err(format!(
                "cannot place transcripts: neither {var} nor HOME is set"
            )),
        }
    }

    /// `$CLAUDE_CONFIG_DIR`, default `$HOME/.claude`.
    pub fn claude_dir(&self) -> Result<PathBuf, String> {
        self.under_home(&self.claude_config_dir, ".claude", "CLAUDE_CONFIG_DIR")
    }

    /// `$CODEX_HOME`, default `$HOME/.codex`.
    pub fn codex_dir(&self) -> Result<PathBuf, String> {
        self.under_home(&self.codex_home, ".codex", "CODEX_HOME")
    }

    /// `$HANGAR_FAKE_OPENCODE_DIR`, default `$HOME/.local/share/opencode/fake`.
    pub fn opencode_dir(&self) -> Result<PathBuf, String> {
        self.under_home(
            &self.opencode_dir,
            ".local/share/opencode/fake",
            "HANGAR_FAKE_OPENCODE_DIR",
        )
    }
}

/// Claude Code's project directory name, as Claude Code 2.1.197 makes it:
/// every UTF-16 unit of the cwd that is not `[A-Za-z0-9]` becomes `-`; a slug
/// longer than 200 is cut to 200 and gets `-` + base 36 of the absolute value
/// of the path's Java-style 32-bit string hash (`h = 31 * h + unit`).
pub fn claude_slug(cwd: &str) -> String {
    let slug: String = cwd
        .encode_utf16()
        .map(|u| match u8::try_from(u) {
            Ok(b) if b.is_ascii_alphanumeric() => char::from(b),
            _ => '-',
        })
        .collect();
    if slug.len() <= 200 {
        return slug;
    }
    let hash = cwd
        .encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)));
    let mut n = hash.unsigned_abs();
    let mut digits = Vec::new();
    loop {
        digits.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    digits.reverse();
    format!("{}-{}", &slug[..200], String::from_utf8_lossy(&digits))
}

/// `<claude dir>/projects/<slug>/<id>.jsonl`
pub fn claude_transcript(claude_dir: &Path, cwd: &str, id: &str) -> PathBuf {
    claude_dir
        .join("projects")
        .join(claude_slug(cwd))
        .join(format!("{id}.jsonl"))
}

/// `<codex home>/sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDThh-mm-ss>-<id>.jsonl`
pub fn codex_new_rollout(codex_dir: &Path, now: &UtcTime, id: &str) -> PathBuf {
    codex_dir
        .join("sessions")
        .join(format!("{:04}", now.year))
        .join(format!("{:02}", now.month))
        .join(format!("{:02}", now.day))
        .join(format!("rollout-{}-{id}.jsonl", now.rollout_stamp()))
}

/// The existing rollout of thread `id` anywhere under `<codex home>/sessions`.
/// When several match (never in practice), the lexically last (newest) wins.
pub fn find_codex_rollout(codex_dir: &Path, id: &str) -> Option<PathBuf> {
    let suffix = format!("-{id}.jsonl");
    let mut found: Option<PathBuf> = None;
    let mut stack = vec![codex_dir.join("sessions")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(path);
            } else if let Some(name) = path.file_name().and_then(|n| n.to_str())
                && name.starts_with("rollout-")
                && name.ends_with(&suffix)
                && found.as_ref().is_none_or(|f| *f < path)
            {
                found = Some(path);
            }
        }
    }
    found
}

/// `<opencode dir>/<id>.jsonl`
pub fn opencode_transcript(opencode_dir: &Path, id: &str) -> PathBuf {
    opencode_dir.join(format!("{id}.jsonl"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slug_replaces_every_unit_but_ascii_letters_and_digits() {
        // Folders the real Claude Code 2.1.197 created for these cwds.
        assert_eq!(claude_slug("/tmp/a.b/c"), "-tmp-a-b-c");
        assert_eq!(claude_slug("/home/u/.tmpX1"), "-home-u--tmpX1");
        assert_eq!(
            claude_slug("/tmp/obs/w/my.proj_dir/a b/é"),
            "-tmp-obs-w-my-proj-dir-a-b--"
        );
        assert_eq!(claude_slug("/tmp/obs/w/x😀y~+@z"), "-tmp-obs-w-x--y---z");
    }

    #[test]
    fn a_long_slug_is_cut_and_suffixed_with_the_paths_hash() {
        let mut path = String::from("/tmp/obs/long/");
        for i in 1..=22 {
            path.push_str(&format!("segment_{i:02}.x/"));
        }
        path.push_str("end");
        // The real folder name for this 303-character path.
        assert_eq!(
            claude_slug(&path),
            "-tmp-obs-long-segment-01-x-segment-02-x-segment-03-x-segment-04-x-segment-05-x-\
             segment-06-x-segment-07-x-segment-08-x-segment-09-x-segment-10-x-segment-11-x-\
             segment-12-x-segment-13-x-segment-14-x-segm-ia1fnx"
        );
    }

    #[test]
    fn claude_dir_defaults_under_home_and_the_variable_wins() {
        let mut roots = Roots {
            home: Some("/h".into()),
            ..Roots::default()
        };
        assert_eq!(roots.claude_dir().unwrap(), Path::new("/h/.claude"));
        assert_eq!(roots.codex_dir().unwrap(), Path::new("/h/.codex"));
        assert_eq!(
            roots.opencode_dir().unwrap(),
            Path::new("/h/.local/share/opencode/fake")
        );
        roots.claude_config_dir = Some("/c".into());
        assert_eq!(roots.claude_dir().unwrap(), Path::new("/c"));
    }

    #[test]
    fn without_home_or_variable_the_error_names_both() {
        let err = Roots::default().codex_dir().unwrap_err();
        assert!(err.contains("CODEX_HOME") && err.contains("HOME"), "{err}");
    }

    #[test]
    fn claude_transcripts_live_under_the_project_slug() {
        assert_eq!(
            claude_transcript(Path::new("/c"), "/w/x.y", "id1"),
            Path::new("/c/projects/-w-x-y/id1.jsonl")
        );
    }

    #[test]
    fn codex_rollouts_are_filed_by_date() {
        let now = UtcTime {
            year: 2025,
            month: 3,
            day: 7,
            hour: 9,
            minute: 8,
            second: 5,
            millis: 0,
        };
        assert_eq!(
            codex_new_rollout(Path::new("/x"), &now, "t1"),
            Path::new("/x/sessions/2025/03/07/rollout-2025-03-07T09-08-05-t1.jsonl")
        );
    }
}
