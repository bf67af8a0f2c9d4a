//! Adopting the tmux sessions behind Agent Code's terminals on import.
//!
//! Agent Code runs a terminal inside a tmux session named `agentcode-<uuid>`
//! (its `TmuxRegistry`, default tmux server) and re-attaches it on launch,
//! so the shell, and whatever runs in it, survives the app. An import keeps
//! that promise: a session still alive is attached by the imported shell pane
//! (`tmux attach-session -t =NAME`, see `hangar_providers::launch::launch_spec`); one that is
//! gone is forgotten, so the pane starts a fresh shell in its folder, and the
//! report says which happened. It only asks tmux (`has-session`); it never
//! creates, kills or changes a tmux session.

use std::process::{Command, Stdio};

use hangar_store::{ImportReport, KeptItem};

/// Check every imported session that names a tmux session, with the tmux
/// found on `path_var`.
pub fn adopt_tmux_sessions(report: &mut ImportReport, path_var: Option<&str>) {
    let tmux = hangar_providers::launch::find_program("tmux", path_var);
    for (id, meta) in report.workspace.sessions.iter_mut() {
        let Some(name) = meta.tmux_session.clone() else {
            continue;
        };
        let alive = tmux.as_ref().is_some_and(|tmux| {
            Command::new(tmux)
                .args(["has-session", "-t", &format!("={name}")])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        });
        let note = if alive {
            format!("tmux session {name} is running: the shell pane attaches to it")
        } else {
            meta.tmux_session = None;
            let why = if tmux.is_some() {
                "is gone"
            } else {
                "cannot be checked (tmux is not installed)"
            };
            format!(
                "tmux session {name} {why}: the terminal starts a fresh shell in {}",
                meta.cwd
            )
        };
        report.kept.push(KeptItem::new(id.as_str(), "tmux", note));
    }
}
