//! The provider's own hook mechanism, the daemon's side: the settings file
//! that installs Claude Code's hooks for a session, written under
//! `$HANGAR_HOME/hooks/` (mode 0600) and passed with `--settings`. What the
//! hooks are and what each event means is hangar-providers'
//! (`claude::hooks`). This module must never write the user's settings
//! files.

use std::path::{Path, PathBuf};

use hangar_core::SessionId;
use serde_json::Value;

/// The settings file of `session`.
pub fn settings_path(home: &Path, session: &SessionId) -> PathBuf {
    home.join("hooks")
        .join(format!("{}.json", session.as_str()))
}

/// Write the settings file (0600, in a 0700 folder under `home`) and
/// return its path.
pub fn write_settings(body: &Value, home: &Path, session: &SessionId) -> std::io::Result<PathBuf> {
    let path = settings_path(home, session);
    crate::paths::ensure_private_dir(&home.join("hooks"))?;
    let body = serde_json::to_vec_pretty(body).map_err(std::io::Error::other)?;
    // Written whole and renamed: an agent starting at the same moment never
    // reads half a file.
    crate::paths::write_private_for_start(&path, &body)?;
    Ok(path)
}

/// Remove a closed session's settings file.
pub fn remove_settings(home: &Path, session: &SessionId) {
    let _ = std::fs::remove_file(settings_path(home, session));
}

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_providers::claude::hooks::HookEvent;
    use serde_json::Value;

    #[test]
    fn the_settings_file_is_private_and_calls_hangar_back_for_every_event() {
        let dir = tempfile::tempdir().unwrap();
        let id = SessionId::from("s-1");
        let settings = hangar_providers::HookSettings {
            hangar: "/bin/hangar".into(),
            home: dir.path().to_owned(),
            hooks: true,
            own_sandbox_off: false,
        };
        let body = hangar_providers::adapter(&hangar_core::Provider::Claude)
            .hook_settings(&settings, &id)
            .unwrap();
        let path = write_settings(&body, dir.path(), &id).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        for event in HookEvent::ALL {
            let cmd = v["hooks"][event.claude_name()][0]["hooks"][0]["command"]
                .as_str()
                .unwrap();
            assert!(
                cmd.contains(&format!(
                    "'/bin/hangar' hook {} --session 's-1'",
                    event.cli_name()
                )),
                "{cmd}"
            );
        }
        let start = v["hooks"]["SessionStart"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap();
        assert!(
            start.contains("hook session-start --session 's-1'"),
            "{start}"
        );
        remove_settings(dir.path(), &id);
        assert!(!path.exists());
    }
}
