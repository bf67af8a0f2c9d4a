//! Finding the session or tab a person named: an exact id, a unique id
//! prefix, or (for tabs) an exact title.
//!
//! Every command that takes a session or a tab resolves it here, so `hangar
//! close 3f2a` and `hangar tab close api` mean the same thing everywhere. A
//! name that fits more than one is refused as ambiguous, never guessed. These
//! functions only read the workspace.

use crate::model::{SessionId, TabId, Workspace};

/// How many ambiguous matches a refusal names before it says "...".
const NAMED_MATCHES: usize = 5;

/// Why a name did not resolve to exactly one session or tab. The messages
/// are the ones people see; the daemon picks the reply code by variant.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    #[error("empty session id")]
    EmptySessionId,
    #[error("no session {given:?}; `hangar ls` lists the sessions")]
    NoSession { given: String },
    /// `matches` holds the first few sessions it fits, in id order;
    /// `more` says there are others beyond them.
    #[error(
        "session id {given:?} is ambiguous: it matches {}{}; give more characters",
        join(matches),
        if *more { ", ..." } else { "" }
    )]
    AmbiguousSession {
        given: String,
        matches: Vec<SessionId>,
        more: bool,
    },
    #[error("no tab {given:?}; `hangar tab ls` lists the tabs")]
    NoTab { given: String },
    #[error("tab {given:?} is ambiguous; use its id from `hangar tab ls`")]
    AmbiguousTab { given: String },
}

impl LookupError {
    /// Nothing by that name exists (as opposed to a name that is empty or
    /// fits several).
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            LookupError::NoSession { .. } | LookupError::NoTab { .. }
        )
    }

    pub fn is_ambiguous(&self) -> bool {
        matches!(
            self,
            LookupError::AmbiguousSession { .. } | LookupError::AmbiguousTab { .. }
        )
    }
}

fn join(ids: &[SessionId]) -> String {
    ids.iter()
        .map(SessionId::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The session `given` names: its exact id, or the one id it is a prefix of.
/// Surrounding whitespace is ignored.
pub fn resolve_session(ws: &Workspace, given: &str) -> Result<SessionId, LookupError> {
    let given = given.trim();
    if given.is_empty() {
        return Err(LookupError::EmptySessionId);
    }
    let exact = SessionId::from(given);
    if ws.sessions.contains_key(&exact) {
        return Ok(exact);
    }
    // Ids are sorted, so every id with this prefix follows `given` directly;
    // one more than is named is enough to know there are others.
    let mut matches: Vec<SessionId> = ws
        .sessions
        .range(exact..)
        .take_while(|(k, _)| k.as_str().starts_with(given))
        .map(|(k, _)| k.clone())
        .take(NAMED_MATCHES + 1)
        .collect();
    match matches.len() {
        0 => Err(LookupError::NoSession {
            given: given.to_owned(),
        }),
        1 => Ok(matches.remove(0)),
        n => {
            matches.truncate(NAMED_MATCHES);
            Err(LookupError::AmbiguousSession {
                given: given.to_owned(),
                matches,
                more: n > NAMED_MATCHES,
            })
        }
    }
}

/// The tab `given` names, tried in this order: its exact id, then a title
/// only one tab has, then the one id it is a prefix of. Surrounding
/// whitespace is ignored.
pub fn resolve_tab(ws: &Workspace, given: &str) -> Result<TabId, LookupError> {
    let given = given.trim();
    if let Some(t) = ws.tabs.iter().find(|t| t.id.as_str() == given) {
        return Ok(t.id.clone());
    }
    let by_title: Vec<_> = ws.tabs.iter().filter(|t| t.title == given).collect();
    if let [one] = by_title.as_slice() {
        return Ok(one.id.clone());
    }
    let by_prefix: Vec<_> = ws
        .tabs
        .iter()
        .filter(|t| !given.is_empty() && t.id.as_str().starts_with(given))
        .collect();
    match (by_prefix.as_slice(), by_title.len()) {
        ([one], _) => Ok(one.id.clone()),
        ([], 0) => Err(LookupError::NoTab {
            given: given.to_owned(),
        }),
        // Several prefixes, or a title two tabs share.
        _ => Err(LookupError::AmbiguousTab {
            given: given.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Tab;
    use crate::test_support::*;
    use proptest::prelude::*;

    fn sessions(list: &[&str]) -> Workspace {
        let mut ws = Workspace::default();
        for id in list {
            add_meta(&mut ws, id);
        }
        ws
    }

    fn tabs(list: &[(&str, &str)]) -> Workspace {
        let mut ws = Workspace::default();
        for (id, title) in list {
            ws.tabs.push(Tab::new(tid(id), *title));
        }
        ws
    }

    #[test]
    fn an_exact_id_wins_even_when_it_is_also_a_prefix_of_others() {
        let ws = sessions(&["ab", "abc", "abd"]);
        assert_eq!(resolve_session(&ws, "ab"), Ok(sid("ab")));
    }

    #[test]
    fn a_unique_prefix_names_its_session_and_whitespace_is_ignored() {
        let ws = sessions(&["3f2a-1", "9c00-2"]);
        assert_eq!(resolve_session(&ws, "  3f "), Ok(sid("3f2a-1")));
    }

    #[test]
    fn an_empty_name_is_refused_as_empty_not_as_ambiguous() {
        let ws = sessions(&["a", "b"]);
        assert_eq!(resolve_session(&ws, "  "), Err(LookupError::EmptySessionId));
        assert_eq!(LookupError::EmptySessionId.to_string(), "empty session id");
    }

    #[test]
    fn an_unknown_session_says_where_the_sessions_are_listed() {
        let e = resolve_session(&sessions(&["a"]), "zz").unwrap_err();
        assert!(e.is_not_found());
        assert_eq!(
            e.to_string(),
            r#"no session "zz"; `hangar ls` lists the sessions"#
        );
    }

    #[test]
    fn an_ambiguous_prefix_names_at_most_five_matches_and_says_there_are_more() {
        let ws = sessions(&["x1", "x2", "x3", "x4", "x5", "x6", "x7"]);
        let e = resolve_session(&ws, "x").unwrap_err();
        assert!(e.is_ambiguous());
        assert_eq!(
            e.to_string(),
            r#"session id "x" is ambiguous: it matches x1, x2, x3, x4, x5, ...; give more characters"#
        );
        let ws = sessions(&["x1", "x2", "y"]);
        assert_eq!(
            resolve_session(&ws, "x").unwrap_err().to_string(),
            r#"session id "x" is ambiguous: it matches x1, x2; give more characters"#
        );
    }

    #[test]
    fn exactly_five_matches_are_all_named_without_dots() {
        let ws = sessions(&["x1", "x2", "x3", "x4", "x5"]);
        assert!(
            resolve_session(&ws, "x")
                .unwrap_err()
                .to_string()
                .contains("x5; give")
        );
    }

    #[test]
    fn a_tab_is_found_by_id_then_unique_title_then_unique_id_prefix() {
        let ws = tabs(&[("t-100", "api"), ("t-200", "t-100x"), ("u-1", "web")]);
        assert_eq!(resolve_tab(&ws, "t-100"), Ok(tid("t-100")));
        assert_eq!(resolve_tab(&ws, " api "), Ok(tid("t-100")));
        assert_eq!(resolve_tab(&ws, "t-100x"), Ok(tid("t-200")));
        assert_eq!(resolve_tab(&ws, "u"), Ok(tid("u-1")));
    }

    #[test]
    fn a_shared_title_or_a_shared_prefix_is_ambiguous() {
        let ws = tabs(&[("t-1", "api"), ("t-2", "api")]);
        let e = resolve_tab(&ws, "api").unwrap_err();
        assert!(e.is_ambiguous());
        assert_eq!(
            e.to_string(),
            r#"tab "api" is ambiguous; use its id from `hangar tab ls`"#
        );
        assert!(resolve_tab(&ws, "t-").unwrap_err().is_ambiguous());
    }

    #[test]
    fn a_shared_title_still_resolves_when_it_is_one_tabs_id_prefix() {
        // The prefix is unique, so it wins over the two equal titles.
        let ws = tabs(&[("api-1", "api"), ("t-2", "api")]);
        assert_eq!(resolve_tab(&ws, "api"), Ok(tid("api-1")));
    }

    #[test]
    fn an_unknown_or_empty_tab_is_not_found() {
        let ws = tabs(&[("t-1", "api")]);
        let e = resolve_tab(&ws, "web").unwrap_err();
        assert!(e.is_not_found());
        assert_eq!(
            e.to_string(),
            r#"no tab "web"; `hangar tab ls` lists the tabs"#
        );
        assert!(resolve_tab(&ws, "").unwrap_err().is_not_found());
    }

    proptest! {
        #[test]
        fn a_resolved_session_exists_and_starts_with_the_name(
            ids in proptest::collection::btree_set("[ab]{1,4}", 0..12),
            given in "[ab]{1,3}",
        ) {
            let list: Vec<&str> = ids.iter().map(String::as_str).collect();
            let ws = sessions(&list);
            let fitting = ids.iter().filter(|i| i.starts_with(&given)).count();
            match resolve_session(&ws, &given) {
                Ok(id) => {
                    prop_assert!(ws.sessions.contains_key(&id));
                    prop_assert!(id.as_str().starts_with(&given));
                    prop_assert!(fitting == 1 || id.as_str() == given);
                }
                Err(LookupError::NoSession { .. }) => prop_assert_eq!(fitting, 0),
                Err(LookupError::AmbiguousSession { matches, more, .. }) => {
                    prop_assert!(fitting > 1 && !ids.contains(&given));
                    prop_assert_eq!(matches.len(), fitting.min(NAMED_MATCHES));
                    prop_assert_eq!(more, fitting > NAMED_MATCHES);
                }
                Err(e) => prop_assert!(false, "unexpected {e:?}"),
            }
        }
    }
}
