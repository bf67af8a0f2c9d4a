//! Carrying a conversation to another config folder: a session moved to an
//! account with a folder of its own (issue 47, `[accounts.NAME].folder`)
//! resumes its conversation there, and the CLI finds a conversation only in
//! the folder it runs with (Claude Code reads `--resume ID` from
//! `$CLAUDE_CONFIG_DIR/projects/<cwd slug>/ID.jsonl`, Codex looks for the
//! rollout named after the id under `$CODEX_HOME/sessions/`).
//!
//! The transcript is copied to the same place under the new folder, with
//! the folder Claude Code keeps beside it for the same conversation
//! (`ID/`: its subagents' transcripts and large tool results). The source
//! is left as it was: the conversation's record in the old account stays
//! whole, and a move back carries the newer copy again.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use hangar_core::Provider;

/// Copy conversation `psid` (run in `cwd`) from the config folder
/// `from_root` to `to_root`, where the CLI will look for it. Returns where
/// it now is; `Ok(None)` when `from_root` holds no transcript of it (a
/// conversation not written yet has nothing to carry).
pub fn carry_conversation(
    provider: &Provider,
    from_root: &Path,
    to_root: &Path,
    cwd: &str,
    psid: &str,
) -> io::Result<Option<PathBuf>> {
    if from_root == to_root {
        return Ok(super::discovery::find_transcript(
            provider, from_root, cwd, psid,
        ));
    }
    let Some(source) = super::discovery::find_transcript(provider, from_root, cwd, psid) else {
        return Ok(None);
    };
    let relative = source.strip_prefix(from_root).map_err(|_| {
        io::Error::other(format!(
            "the transcript {} is not under {}",
            source.display(),
            from_root.display()
        ))
    })?;
    let target = to_root.join(relative);
    copy_private(&source, &target)?;
    // Claude Code's folder of the same conversation, beside its transcript.
    let beside = source.with_extension("");
    if beside != source && beside.is_dir() {
        copy_tree(&beside, &target.with_extension(""))?;
    }
    Ok(Some(target))
}

/// Copy `from` to `to` whole (a new file renamed into place, readable by
/// its owner only, as the CLIs keep them), making the folders on the way.
fn copy_private(from: &Path, to: &Path) -> io::Result<()> {
    let parent = to
        .parent()
        .ok_or_else(|| io::Error::other(format!("{} has no folder", to.display())))?;
    make_private_dirs(parent)?;
    let name = to
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let partial = parent.join(format!(".{name}.hangar-carry"));
    let copied = fs::copy(from, &partial).and_then(|_| {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&partial, fs::Permissions::from_mode(0o600))?;
        fs::rename(&partial, to)
    });
    if copied.is_err() {
        // Best effort: the error that matters is the copy's.
        let _ = fs::remove_file(&partial);
    }
    copied
}

fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    make_private_dirs(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            copy_private(&entry.path(), &target)?;
        }
        // A link in a CLI's state folder is not followed out of it.
    }
    Ok(())
}

fn make_private_dirs(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A claude config folder with one conversation of `/w`, laid out as
    /// Claude Code 2.1.197 writes it (docs/src/cli-facts.md): the
    /// transcript under `projects/<slug>/`, its folder of subagents beside.
    fn claude_folder(root: &Path, psid: &str, text: &str) -> PathBuf {
        let project = root
            .join("projects")
            .join(crate::transcript::discovery::claude_slug("/w"));
        fs::create_dir_all(project.join(psid).join("subagents")).unwrap();
        let line = format!(
            "{{\"type\":\"user\",\"sessionId\":\"{psid}\",\"cwd\":\"/w\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\"}}}}\n"
        );
        let transcript = project.join(format!("{psid}.jsonl"));
        fs::write(&transcript, line).unwrap();
        fs::write(
            project.join(psid).join("subagents").join("agent-1.jsonl"),
            "{}\n",
        )
        .unwrap();
        transcript
    }

    #[test]
    fn a_claude_conversation_is_carried_to_the_same_place_under_the_other_folder() {
        let dir = tempfile::tempdir().unwrap();
        let (work, home) = (dir.path().join("work"), dir.path().join("home"));
        let psid = "3f1c0a52-1111-4222-8333-444455556666";
        let source = claude_folder(&work, psid, "first");
        let carried = carry_conversation(&Provider::Claude, &work, &home, "/w", psid)
            .unwrap()
            .unwrap();
        assert_eq!(carried, home.join(source.strip_prefix(&work).unwrap()));
        assert_eq!(fs::read(&carried).unwrap(), fs::read(&source).unwrap());
        assert!(
            carried
                .with_extension("")
                .join("subagents/agent-1.jsonl")
                .is_file()
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&carried).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(source.is_file(), "the old account's record stays whole");
        // Found there as the CLI and hangar look for it.
        assert_eq!(
            crate::transcript::discovery::find_transcript(&Provider::Claude, &home, "/w", psid),
            Some(carried.clone())
        );
        // A move back carries the newer copy over the stale one.
        fs::write(&carried, "newer\n").unwrap();
        carry_conversation(&Provider::Claude, &home, &work, "/w", psid).unwrap();
        assert_eq!(fs::read_to_string(&source).unwrap(), "newer\n");
    }

    #[test]
    fn a_conversation_not_written_yet_has_nothing_to_carry() {
        let dir = tempfile::tempdir().unwrap();
        let carried = carry_conversation(
            &Provider::Claude,
            &dir.path().join("a"),
            &dir.path().join("b"),
            "/w",
            "none",
        )
        .unwrap();
        assert_eq!(carried, None);
        assert!(!dir.path().join("b").exists());
    }
}
