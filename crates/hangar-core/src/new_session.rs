//! Where `hangar new` puts a session: which tab it lands in, which folder it
//! starts in, what it is called, and which provider it runs when none is
//! named (DESIGN.md section 4).
//!
//! Without `--tab` a new session goes to the active tab, and a workspace with
//! no active tab gets a new one named after the session's folder. Without
//! `--cwd` it starts in its tab's project folder, then in the folder the
//! client ran in. These functions decide only; the daemon creates the tab,
//! checks the folder exists and saves.

use std::path::Path;

use crate::lookup::{LookupError, resolve_tab};
use crate::model::{Provider, TabId, Workspace};

/// The tab a new session lands in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NewSessionTab {
    /// A tab that exists: the one named, or the active one.
    Existing(TabId),
    /// No tab was named and none is active: make this one first.
    Create { title: String, cwd: Option<String> },
}

/// Choose the tab for a new session from what the request gave: `tab` (a tab
/// id, id prefix or title), `cwd` (`--cwd`) and `fallback_cwd` (the folder
/// the client ran in).
pub fn new_session_tab(
    ws: &Workspace,
    tab: Option<&str>,
    cwd: Option<&str>,
    fallback_cwd: Option<&str>,
) -> Result<NewSessionTab, LookupError> {
    if let Some(given) = tab {
        return resolve_tab(ws, given).map(NewSessionTab::Existing);
    }
    if let Some(active) = &ws.active_tab {
        return Ok(NewSessionTab::Existing(active.clone()));
    }
    let folder = cwd.or(fallback_cwd);
    Ok(NewSessionTab::Create {
        title: tab_title_for(folder),
        cwd: folder.map(str::to_owned),
    })
}

/// A new tab's title from its project folder: the folder's last name, or
/// `main` when there is none (no folder, `/`, `..`).
pub fn tab_title_for(folder: Option<&str>) -> String {
    folder
        .and_then(|c| Path::new(c).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "main".to_owned())
}

/// The folder a new session starts in: `--cwd`, else its tab's project
/// folder, else the client's folder. `None` when there is none at all.
pub fn new_session_cwd(
    cwd: Option<&str>,
    tab_cwd: Option<&str>,
    fallback_cwd: Option<&str>,
) -> Option<String> {
    cwd.or(tab_cwd).or(fallback_cwd).map(str::to_owned)
}

/// A new session's title: the one given unless it is blank, else the
/// provider's name. A given title is kept exactly as typed.
pub fn new_session_title(given: Option<&str>, provider: &Provider) -> String {
    given
        .filter(|t| !t.trim().is_empty())
        .unwrap_or(provider.name())
        .to_owned()
}

/// The provider `new` runs when none is named: the first agent CLI, in the
/// order of `Provider::AGENT_CLIS` (claude, codex, opencode, gemini, pi, qwen, copilot, crush,
/// kilo, aider, kimi), whose program `is_installed` says is
/// found; else the shell, so hangar is useful on a machine with no agent
/// CLI at all.
pub fn default_provider(is_installed: impl Fn(&Provider) -> bool) -> Provider {
    Provider::AGENT_CLIS
        .into_iter()
        .find(|p| is_installed(p))
        .unwrap_or(Provider::Shell)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Tab;
    use crate::test_support::*;

    fn two_tabs(active: Option<&str>) -> Workspace {
        let mut ws = Workspace::default();
        let mut api = Tab::new(tid("t-api"), "api");
        api.cwd = Some("/src/api".into());
        ws.tabs.push(api);
        ws.tabs.push(Tab::new(tid("t-web"), "web"));
        ws.active_tab = active.map(tid);
        ws
    }

    #[test]
    fn a_named_tab_is_used_even_when_another_is_active() {
        let ws = two_tabs(Some("t-web"));
        assert_eq!(
            new_session_tab(&ws, Some("api"), None, None),
            Ok(NewSessionTab::Existing(tid("t-api")))
        );
    }

    #[test]
    fn a_named_tab_that_does_not_exist_is_refused_not_created() {
        let ws = two_tabs(None);
        assert!(
            new_session_tab(&ws, Some("docs"), Some("/src/docs"), None)
                .unwrap_err()
                .is_not_found()
        );
    }

    #[test]
    fn without_a_tab_the_session_lands_in_the_active_tab() {
        let ws = two_tabs(Some("t-web"));
        assert_eq!(
            new_session_tab(&ws, None, Some("/elsewhere"), None),
            Ok(NewSessionTab::Existing(tid("t-web")))
        );
    }

    #[test]
    fn with_no_active_tab_a_new_one_is_named_after_the_folder() {
        let ws = two_tabs(None);
        assert_eq!(
            new_session_tab(&ws, None, Some("/src/hangar"), Some("/home/me")),
            Ok(NewSessionTab::Create {
                title: "hangar".into(),
                cwd: Some("/src/hangar".into())
            })
        );
        assert_eq!(
            new_session_tab(&Workspace::default(), None, None, Some("/home/me")),
            Ok(NewSessionTab::Create {
                title: "me".into(),
                cwd: Some("/home/me".into())
            })
        );
    }

    #[test]
    fn a_new_tab_without_a_nameable_folder_is_called_main() {
        assert_eq!(tab_title_for(None), "main");
        assert_eq!(tab_title_for(Some("/")), "main");
        assert_eq!(tab_title_for(Some("/src/..")), "main");
        assert_eq!(tab_title_for(Some("/src/api/")), "api");
    }

    #[test]
    fn the_folder_is_the_given_one_then_the_tabs_then_the_clients() {
        let given = Some("/given");
        let tab = Some("/tab");
        let client = Some("/client");
        assert_eq!(new_session_cwd(given, tab, client).as_deref(), given);
        assert_eq!(new_session_cwd(None, tab, client).as_deref(), tab);
        assert_eq!(new_session_cwd(None, None, client).as_deref(), client);
        assert_eq!(new_session_cwd(None, None, None), None);
    }

    #[test]
    fn a_blank_title_becomes_the_providers_name() {
        assert_eq!(new_session_title(Some("  "), &Provider::Codex), "codex");
        assert_eq!(new_session_title(None, &Provider::Shell), "shell");
        assert_eq!(
            new_session_title(Some(" api review"), &Provider::Claude),
            " api review"
        );
    }

    #[test]
    fn the_default_provider_is_the_first_installed_agent_else_the_shell() {
        assert_eq!(default_provider(|_| true), Provider::Claude);
        assert_eq!(
            default_provider(|p| matches!(p, Provider::Opencode | Provider::Codex)),
            Provider::Codex
        );
        assert_eq!(default_provider(|_| false), Provider::Shell);
    }

    #[test]
    fn the_file_described_clis_follow_the_three_in_their_documented_order() {
        let order: Vec<&str> = Provider::AGENT_CLIS.iter().map(|p| p.name()).collect();
        assert_eq!(
            order,
            [
                "claude", "codex", "opencode", "gemini", "pi", "qwen", "copilot", "crush", "kilo",
                "aider", "kimi"
            ]
        );
        assert_eq!(
            default_provider(|p| matches!(p, Provider::Kimi | Provider::Gemini)),
            Provider::Gemini
        );
        assert_eq!(default_provider(|p| *p == Provider::Aider), Provider::Aider);
        // Each name reads back as its provider, and is an agent.
        for p in Provider::AGENT_CLIS {
            assert_eq!(Provider::from_name(p.name()), p);
            assert!(p.is_agent());
        }
    }
}
