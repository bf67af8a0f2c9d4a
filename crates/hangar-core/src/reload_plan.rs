//! Which sessions a settings reload restarts (DESIGN.md rule 7).
//!
//! A reload restarts live agent sessions only, one at a time in display
//! order, keeping their local ids; a custom provider counts as an agent here
//! when its config defines `dangerous_args`, since the dangerous setting
//! changes its command line too. Hibernated sessions are never started: they
//! pick the new setting up when they wake. Shells keep running.

use crate::model::{Provider, SessionId, Workspace};

/// Whether a reload restarts a live session of `provider`: the agent CLIs,
/// and custom providers that `has_dangerous_args` (whose command line the
/// dangerous setting changes).
pub fn restarts_on_reload(provider: &Provider, has_dangerous_args: impl Fn(&str) -> bool) -> bool {
    match provider {
        Provider::Custom(name) => has_dangerous_args(name),
        other => other.is_agent(),
    }
}

/// The sessions a reload restarts, in the order given (`order`, the display
/// order): those whose process `is_running` (live or spawning) and whose
/// provider restarts on reload. Ids with no metadata are skipped.
pub fn reload_restart_set(
    ws: &Workspace,
    order: &[SessionId],
    is_running: impl Fn(&SessionId) -> bool,
    has_dangerous_args: impl Fn(&str) -> bool,
) -> Vec<SessionId> {
    order
        .iter()
        .filter(|id| {
            ws.sessions
                .get(*id)
                .is_some_and(|m| restarts_on_reload(&m.provider, &has_dangerous_args))
                && is_running(id)
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::*;
    use proptest::prelude::*;

    fn with_providers(list: &[(&str, Provider)]) -> Workspace {
        let mut ws = Workspace::default();
        for (id, provider) in list {
            add_meta(&mut ws, id);
            ws.sessions.get_mut(&sid(id)).unwrap().provider = provider.clone();
        }
        ws
    }

    #[test]
    fn agent_clis_restart_and_shells_do_not() {
        let never = |_: &str| false;
        assert!(restarts_on_reload(&Provider::Claude, never));
        assert!(restarts_on_reload(&Provider::Codex, never));
        assert!(restarts_on_reload(&Provider::Opencode, never));
        assert!(!restarts_on_reload(&Provider::Shell, never));
    }

    #[test]
    fn a_custom_provider_restarts_only_when_it_has_dangerous_args() {
        let deploy = Provider::Custom("deploy".into());
        assert!(!restarts_on_reload(&deploy, |_| false));
        assert!(restarts_on_reload(&deploy, |name| name == "deploy"));
        assert!(!restarts_on_reload(&deploy, |name| name == "other"));
    }

    #[test]
    fn only_running_agents_restart_in_the_order_given() {
        let ws = with_providers(&[
            ("a", Provider::Claude),
            ("b", Provider::Shell),
            ("c", Provider::Codex),
            ("d", Provider::Claude),
            ("e", Provider::Custom("aider".into())),
        ]);
        let order = ids(&["d", "c", "b", "a", "e", "gone"]);
        let running = |id: &SessionId| id.as_str() != "a";
        assert_eq!(
            reload_restart_set(&ws, &order, running, |n| n == "aider"),
            ids(&["d", "c", "e"])
        );
    }

    proptest! {
        #[test]
        fn a_hibernated_session_is_never_in_the_restart_set(
            running in proptest::collection::vec(any::<bool>(), 6),
        ) {
            let names = ["a", "b", "c", "d", "e", "f"];
            let ws = with_providers(&names.map(|n| (n, Provider::Claude)));
            let order = ids(&names);
            let is_running = |id: &SessionId| {
                running[names.iter().position(|n| *n == id.as_str()).unwrap()]
            };
            let set = reload_restart_set(&ws, &order, is_running, |_| false);
            prop_assert!(set.iter().all(is_running));
            prop_assert_eq!(set.len(), running.iter().filter(|r| **r).count());
        }
    }
}
