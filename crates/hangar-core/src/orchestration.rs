//! The rules of orchestration (DESIGN.md rule 9): which sessions an agent may
//! see and act on, and whether a close it asks for is safe.
//!
//! An agent sees only its own orchestration descendants that sit in its own
//! project tab; everything else is invisible to it. A close is refused when it
//! names the agent itself, names a session the agent cannot see, or would
//! cascade to a session that was not named. The plans of the orchestration
//! tools live here too: which agent a name means, what `close_run` closes and
//! skips, which children a hibernation takes along, what a new child agent
//! inherits, and the status (and "finished") an agent is told of its agents.
//! These functions only decide; they never change the workspace.

use std::collections::{BTreeMap, BTreeSet};

use crate::activity::Activity;
use crate::model::{Provider, SessionId, SessionMeta, TabId, Workspace};

/// The orchestration tools an agent's CLI may run without asking its
/// person (issue 46 part 5): the ones that only read (its agents' list,
/// transcripts and outputs, a wait on their turns, the usage ledger) and
/// `goal_done`, the agent ending the goal hangar gave it. Every tool that
/// creates, types, closes, parks, hibernates or sets a goal still asks.
pub const TOOLS_WITHOUT_QUESTION: [&str; 6] = [
    "list_agents",
    "read_agent",
    "read_run_outputs",
    "wait_agents",
    "usage_read",
    "goal_done",
];

/// The project tab a session belongs to (pane, parked or buried).
pub fn project_tab(ws: &Workspace, id: &SessionId) -> Option<TabId> {
    ws.placement_of(id).map(|(_, tab)| tab)
}

/// Every orchestration descendant of `ancestor` (children, their children,
/// ...), breadth first. Cycles in a hand-edited file are tolerated.
pub fn descendants(ws: &Workspace, ancestor: &SessionId) -> Vec<SessionId> {
    let mut children: BTreeMap<&SessionId, Vec<&SessionId>> = BTreeMap::new();
    for meta in ws.sessions.values() {
        if let Some(parent) = &meta.relationships.orchestration_parent {
            children.entry(parent).or_default().push(&meta.id);
        }
    }
    let mut seen: BTreeSet<&SessionId> = BTreeSet::from([ancestor]);
    let mut out: Vec<SessionId> = Vec::new();
    let mut frontier = vec![ancestor];
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for parent in frontier {
            for child in children.get(parent).into_iter().flatten() {
                if seen.insert(child) {
                    out.push((*child).clone());
                    next.push(*child);
                }
            }
        }
        frontier = next;
    }
    out
}

/// The orchestration tree `id` belongs to: its recorded root, or itself
/// when it was not created by an agent.
pub fn tree_root(ws: &Workspace, id: &SessionId) -> SessionId {
    ws.sessions
        .get(id)
        .and_then(|m| m.relationships.orchestration_root.clone())
        .unwrap_or_else(|| id.clone())
}

/// How many agents the orchestration tree of `id` holds (every descendant
/// of its root). A limit on what one caller created alone would let each
/// child create as many again, so a runaway tree is bounded by this count.
pub fn tree_size(ws: &Workspace, id: &SessionId) -> usize {
    descendants(ws, &tree_root(ws, id)).len()
}

/// The sessions `caller` may see and act on: its descendants in its own
/// project tab. A caller with no tab sees nothing.
pub fn visible_agents(ws: &Workspace, caller: &SessionId) -> Vec<SessionId> {
    let Some(tab) = project_tab(ws, caller) else {
        return Vec::new();
    };
    descendants(ws, caller)
        .into_iter()
        .filter(|id| project_tab(ws, id).as_ref() == Some(&tab))
        .collect()
}

/// Why an agent's close was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CloseRefusal {
    /// An agent can never close itself.
    SelfClose,
    /// Not a descendant of the caller in its project tab.
    NotYours(SessionId),
    /// Closing the named sessions would also close these others; the whole
    /// set the close would affect is `would_close`.
    Cascade {
        beyond: Vec<SessionId>,
        would_close: Vec<SessionId>,
    },
}

/// May `caller` close exactly `named`? On success, the sessions to close (the
/// named ones, in cascade order).
pub fn check_close(
    ws: &Workspace,
    caller: &SessionId,
    named: &[SessionId],
) -> Result<Vec<SessionId>, CloseRefusal> {
    if named.contains(caller) {
        return Err(CloseRefusal::SelfClose);
    }
    let visible: BTreeSet<SessionId> = visible_agents(ws, caller).into_iter().collect();
    if let Some(stranger) = named.iter().find(|id| !visible.contains(*id)) {
        return Err(CloseRefusal::NotYours(stranger.clone()));
    }
    let named_set: BTreeSet<&SessionId> = named.iter().collect();
    let mut would_close: Vec<SessionId> = Vec::new();
    let mut seen = BTreeSet::new();
    for id in named {
        for c in ws.close_cascade(id) {
            if seen.insert(c.clone()) {
                would_close.push(c);
            }
        }
    }
    // The caller itself can be reached through a linked-child loop; that is
    // a self close too.
    if seen.contains(caller) {
        return Err(CloseRefusal::SelfClose);
    }
    let beyond: Vec<SessionId> = would_close
        .iter()
        .filter(|c| !named_set.contains(c))
        .cloned()
        .collect();
    if beyond.is_empty() {
        Ok(would_close)
    } else {
        Err(CloseRefusal::Cascade {
            beyond,
            would_close,
        })
    }
}

/// What a session name given by an agent resolves to, among the caller and
/// its visible agents only (nothing else is ever confirmed to exist).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentMatch {
    /// The caller itself.
    Me,
    /// One of the caller's visible agents.
    Mine(SessionId),
    /// Nothing the caller may see has that id or prefix.
    NoMatch,
    /// The prefix fits several of them.
    Ambiguous,
}

/// Resolve `given` (already trimmed) among `caller` and its visible agents:
/// an exact id first, else a unique prefix.
pub fn resolve_agent(ws: &Workspace, caller: &SessionId, given: &str) -> AgentMatch {
    let mut candidates = visible_agents(ws, caller);
    candidates.push(caller.clone());
    let exact: Vec<&SessionId> = candidates.iter().filter(|c| c.as_str() == given).collect();
    let matches: Vec<&SessionId> = if exact.is_empty() {
        candidates
            .iter()
            .filter(|c| c.as_str().starts_with(given))
            .collect()
    } else {
        exact
    };
    match matches.as_slice() {
        [one] if *one == caller => AgentMatch::Me,
        [one] => AgentMatch::Mine((*one).clone()),
        [] => AgentMatch::NoMatch,
        _ => AgentMatch::Ambiguous,
    }
}

/// How `close_run` splits a run: members whose close cascade stays inside
/// the run are closed; each other member is skipped with everything its
/// close would take.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CloseRunPlan {
    pub closable: Vec<SessionId>,
    pub skipped: Vec<(SessionId, Vec<SessionId>)>,
}

/// Split the run members `named` into those whose whole close cascade is
/// named too and those whose close would reach outside the run.
pub fn close_run_plan(ws: &Workspace, named: &[SessionId]) -> CloseRunPlan {
    let named_set: BTreeSet<&SessionId> = named.iter().collect();
    let mut plan = CloseRunPlan::default();
    for id in named {
        let cascade = ws.close_cascade(id);
        if cascade.iter().all(|c| named_set.contains(c)) {
            plan.closable.push(id.clone());
        } else {
            plan.skipped.push((id.clone(), cascade));
        }
    }
    plan
}

/// The live orchestration children of `parent`, in id order: what a
/// hibernation of `parent` also hibernates when they are not in use.
pub fn live_children(
    ws: &Workspace,
    parent: &SessionId,
    is_live: impl Fn(&SessionId) -> bool,
) -> Vec<SessionId> {
    ws.sessions
        .values()
        .filter(|m| m.relationships.orchestration_parent.as_ref() == Some(parent))
        .filter(|m| is_live(&m.id))
        .map(|m| m.id.clone())
        .collect()
}

/// How many parent links `descends_from` follows before it gives up: a
/// hand-edited ledger may hold a loop.
const MAX_ANCESTRY: usize = 128;

/// Whether something whose parent is `parent` descends from `ancestor`,
/// following `parent_of` (live sessions' links, then closed ones'). Used for
/// closed agents, whose own links are only in the ledger.
pub fn descends_from(
    parent: Option<String>,
    ancestor: &str,
    parent_of: impl Fn(&str) -> Option<String>,
) -> bool {
    let mut at = parent;
    for _ in 0..MAX_ANCESTRY {
        match at {
            Some(p) if p == ancestor => return true,
            Some(p) => at = parent_of(&p),
            None => return false,
        }
    }
    false
}

/// What an agent asked `create_agent` for, already validated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChildRequest {
    pub provider: Option<Provider>,
    pub cwd: Option<String>,
    pub title: Option<String>,
    pub role: Option<String>,
    pub run: String,
}

/// The metadata of a child agent `parent` creates: the parent's provider,
/// folder and capture setting unless the request says otherwise, titled by
/// its title, else its role, else "<provider> agent", linked to the parent
/// and to the parent's tree root (or the parent itself, at the top).
pub fn child_session(
    parent: &SessionMeta,
    id: SessionId,
    request: ChildRequest,
    dangerous: bool,
    now_ms: u64,
) -> SessionMeta {
    let provider = request.provider.unwrap_or_else(|| parent.provider.clone());
    let mut meta = SessionMeta::new(
        id,
        provider.clone(),
        request.cwd.unwrap_or_else(|| parent.cwd.clone()),
    );
    meta.title = request
        .title
        .or_else(|| request.role.clone())
        .unwrap_or_else(|| format!("{} agent", provider.name()));
    meta.created_at_ms = now_ms;
    meta.last_active_ms = now_ms;
    meta.capture = parent.capture;
    meta.dangerous = dangerous;
    let rel = &mut meta.relationships;
    rel.orchestration_parent = Some(parent.id.clone());
    rel.orchestration_root = Some(
        parent
            .relationships
            .orchestration_root
            .clone()
            .unwrap_or_else(|| parent.id.clone()),
    );
    rel.run = Some(request.run);
    rel.role = request.role;
    // A sandboxed agent's children are sandboxed too, each with a state
    // folder of its own beside its parent's: otherwise an agent could
    // step out of its walls by creating an unsandboxed one.
    if let Some(dir) = &parent.sandbox {
        let folder = std::path::Path::new(dir)
            .parent()
            .map(|p| p.join(meta.id.as_str()).display().to_string());
        meta.sandbox = Some(folder.unwrap_or_else(|| format!("{dir}-{}", meta.id.as_str())));
    }
    // An agent in a container makes its children in containers of the same
    // engine (its walls are the container's).
    meta.engine = parent.engine.clone();
    meta
}

/// Why a sandboxed agent may not create a child in `cwd`: a child's folder
/// is writable in its sandbox, so it must lie in the parent's own folder
/// (the only place the parent may write). `None` when it may, or when the
/// parent is not sandboxed.
pub fn sandboxed_child_refusal(parent: &SessionMeta, cwd: Option<&str>) -> Option<String> {
    parent.sandbox.as_ref()?;
    let cwd = cwd?;
    let inside = std::path::Path::new(cwd).starts_with(&parent.cwd)
        && !cwd.split('/').any(|part| part == "..");
    (!inside).then(|| {
        format!(
            "cwd {cwd:?} is outside your folder {:?}: a sandboxed agent's agents work in its own folder",
            parent.cwd
        )
    })
}

/// A child agent's process, as the orchestration tools report it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentProcess {
    Live,
    Spawning,
    Hibernated,
    /// It failed to start or exited on its own.
    Ended,
}

/// The status an agent sees for one of its agents: `working`, `waiting`,
/// `live`, `hibernated` or `failed`.
pub fn agent_status(process: AgentProcess, activity: Activity) -> &'static str {
    match process {
        AgentProcess::Live | AgentProcess::Spawning => match activity {
            Activity::Working => "working",
            Activity::Waiting => "waiting",
            _ => "live",
        },
        AgentProcess::Hibernated => "hibernated",
        AgentProcess::Ended => "failed",
    }
}

/// Done waiting on an agent (`wait_agents`): its turn finished, it waits for
/// a person, or it has no process to make progress with. One still starting
/// is not done.
pub fn agent_settled(process: AgentProcess, activity: Activity) -> bool {
    match process {
        AgentProcess::Spawning => false,
        AgentProcess::Live => activity != Activity::Working,
        AgentProcess::Hibernated | AgentProcess::Ended => true,
    }
}

/// Its turn is over, not merely paused at a question for a person.
pub fn agent_finished(process: AgentProcess, activity: Activity) -> bool {
    agent_settled(process, activity) && activity != Activity::Waiting
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_sandboxed_agents_children_are_sandboxed_and_stay_in_its_folder() {
        let mut parent = SessionMeta::new(SessionId::from("p1"), Provider::Claude, "/w/proj");
        parent.sandbox = Some("/h/sandbox/p1".into());
        let request = |cwd: Option<&str>| ChildRequest {
            provider: Some(Provider::Shell),
            cwd: cwd.map(str::to_owned),
            title: None,
            role: None,
            run: "r".into(),
        };
        let child = child_session(&parent, SessionId::from("c1"), request(None), false, 1);
        assert_eq!(child.sandbox.as_deref(), Some("/h/sandbox/c1"));
        assert_eq!(child.cwd, "/w/proj");
        for ok in [None, Some("/w/proj"), Some("/w/proj/sub")] {
            assert_eq!(sandboxed_child_refusal(&parent, ok), None, "{ok:?}");
        }
        for bad in ["/", "/w", "/w/proj2", "/w/proj/../other", "/root/.ssh"] {
            assert!(
                sandboxed_child_refusal(&parent, Some(bad)).is_some(),
                "{bad}"
            );
        }
        // An unsandboxed parent's children are as before.
        parent.sandbox = None;
        let child = child_session(&parent, SessionId::from("c2"), request(None), false, 1);
        assert_eq!(child.sandbox, None);
        assert_eq!(sandboxed_child_refusal(&parent, Some("/")), None);
    }

    #[test]
    fn an_agent_in_a_container_makes_its_children_on_the_same_engine() {
        let mut parent = SessionMeta::new(SessionId::from("p1"), Provider::Claude, "/w/proj");
        parent.sandbox = Some("/h/sandbox/p1".into());
        parent.engine = Some(Box::new(crate::engine::EngineBinding {
            name: "pod".into(),
            image: Some("local/a".into()),
        }));
        let request = ChildRequest {
            provider: Some(Provider::Shell),
            cwd: None,
            title: None,
            role: None,
            run: "r".into(),
        };
        let child = child_session(&parent, SessionId::from("c1"), request, false, 1);
        assert_eq!(child.engine, parent.engine);
        assert_eq!(child.sandbox.as_deref(), Some("/h/sandbox/c1"));
    }

    use super::*;
    use crate::test_support::*;

    /// Tab t1: pane `p` with children `a`, `b` (parked in t1), grandchild `g`
    /// under `a`, and `x` a child of `p` moved to tab t2. Pane `q` in t1 is
    /// another agent with its own child `z`.
    fn family() -> Workspace {
        let mut ws = workspace(vec![
            tab("t1", Some(v(leaf("p"), leaf("q")))),
            tab("t2", Some(leaf("other"))),
        ]);
        for (child, parent, tab) in [
            ("a", "p", "t1"),
            ("b", "p", "t1"),
            ("g", "a", "t1"),
            ("x", "p", "t2"),
            ("z", "q", "t1"),
        ] {
            add_parked(&mut ws, child, tab);
            let m = ws.sessions.get_mut(&sid(child)).unwrap();
            m.relationships.orchestration_parent = Some(sid(parent));
            m.relationships.orchestration_root = Some(sid("p"));
        }
        ws
    }

    #[test]
    fn an_agent_sees_its_descendants_in_its_own_tab_only() {
        let ws = family();
        assert_eq!(visible_agents(&ws, &sid("p")), ids(&["a", "b", "g"]));
        assert_eq!(visible_agents(&ws, &sid("a")), ids(&["g"]));
        assert_eq!(visible_agents(&ws, &sid("q")), ids(&["z"]));
        assert!(visible_agents(&ws, &sid("nobody")).is_empty());
    }

    #[test]
    fn a_tree_is_counted_from_its_root_whoever_asks() {
        let ws = family();
        // p's tree: a, b, g and x (in another tab, still created by it).
        for member in ["p", "a", "b", "g"] {
            assert_eq!(tree_size(&ws, &sid(member)), 4, "asked by {member}");
        }
        // A grandchild alone has no children, yet its tree is full-sized:
        // a per-caller count would let it create as many again.
        assert!(visible_agents(&ws, &sid("g")).is_empty());
        assert_eq!(tree_size(&ws, &sid("q")), 1);
        assert_eq!(tree_root(&ws, &sid("q")), sid("q"));
    }

    #[test]
    fn an_agent_can_never_close_itself() {
        let ws = family();
        assert_eq!(
            check_close(&ws, &sid("a"), &ids(&["a"])),
            Err(CloseRefusal::SelfClose)
        );
    }

    #[test]
    fn closing_another_agents_child_or_another_tabs_session_is_not_yours() {
        let ws = family();
        assert_eq!(
            check_close(&ws, &sid("p"), &ids(&["z"])),
            Err(CloseRefusal::NotYours(sid("z")))
        );
        assert_eq!(
            check_close(&ws, &sid("p"), &ids(&["x"])),
            Err(CloseRefusal::NotYours(sid("x")))
        );
        assert_eq!(
            check_close(&ws, &sid("p"), &ids(&["other"])),
            Err(CloseRefusal::NotYours(sid("other")))
        );
    }

    #[test]
    fn a_close_that_cascades_beyond_the_named_sessions_is_refused_with_what_it_would_close() {
        let ws = family();
        assert_eq!(
            check_close(&ws, &sid("p"), &ids(&["a"])),
            Err(CloseRefusal::Cascade {
                beyond: ids(&["g"]),
                would_close: ids(&["a", "g"]),
            })
        );
        assert_eq!(
            check_close(&ws, &sid("p"), &ids(&["a", "g"])),
            Ok(ids(&["a", "g"]))
        );
        assert_eq!(check_close(&ws, &sid("p"), &ids(&["b"])), Ok(ids(&["b"])));
    }

    #[test]
    fn a_linked_child_in_another_tab_makes_a_close_cascade() {
        let mut ws = family();
        ws.sessions
            .get_mut(&sid("other"))
            .unwrap()
            .relationships
            .linked_parent = Some(sid("b"));
        assert!(matches!(
            check_close(&ws, &sid("p"), &ids(&["b"])),
            Err(CloseRefusal::Cascade { beyond, .. }) if beyond == ids(&["other"])
        ));
    }

    #[test]
    fn an_agent_name_resolves_among_its_own_agents_and_itself_only() {
        let ws = family();
        assert_eq!(
            resolve_agent(&ws, &sid("p"), "a"),
            AgentMatch::Mine(sid("a"))
        );
        assert_eq!(resolve_agent(&ws, &sid("p"), "p"), AgentMatch::Me);
        // z is q's child and x sits in another tab: neither is p's to name.
        assert_eq!(resolve_agent(&ws, &sid("p"), "z"), AgentMatch::NoMatch);
        assert_eq!(resolve_agent(&ws, &sid("p"), "x"), AgentMatch::NoMatch);
    }

    #[test]
    fn an_exact_agent_id_wins_over_longer_ids_it_prefixes_and_a_shared_prefix_is_ambiguous() {
        let mut ws = workspace(vec![tab("t1", Some(leaf("p")))]);
        for child in ["ab", "abc", "abd"] {
            add_parked(&mut ws, child, "t1");
            let m = ws.sessions.get_mut(&sid(child)).unwrap();
            m.relationships.orchestration_parent = Some(sid("p"));
        }
        assert_eq!(
            resolve_agent(&ws, &sid("p"), "ab"),
            AgentMatch::Mine(sid("ab"))
        );
        assert_eq!(
            resolve_agent(&ws, &sid("p"), "abc"),
            AgentMatch::Mine(sid("abc"))
        );
        assert_eq!(resolve_agent(&ws, &sid("p"), "a"), AgentMatch::Ambiguous);
    }

    #[test]
    fn close_run_closes_members_whose_cascade_stays_in_the_run_and_skips_the_rest() {
        let ws = family();
        // a's close takes g, which is not in the run; b's takes only b.
        let plan = close_run_plan(&ws, &ids(&["a", "b"]));
        assert_eq!(plan.closable, ids(&["b"]));
        assert_eq!(plan.skipped, vec![(sid("a"), ids(&["a", "g"]))]);
        let plan = close_run_plan(&ws, &ids(&["a", "g", "b"]));
        assert_eq!(plan.closable, ids(&["a", "g", "b"]));
        assert!(plan.skipped.is_empty());
        assert_eq!(close_run_plan(&ws, &[]), CloseRunPlan::default());
    }

    #[test]
    fn only_live_direct_children_are_hibernated_with_their_parent() {
        let ws = family();
        assert_eq!(
            live_children(&ws, &sid("p"), |_| true),
            ids(&["a", "b", "x"])
        );
        assert_eq!(
            live_children(&ws, &sid("p"), |id| id.as_str() != "a"),
            ids(&["b", "x"])
        );
        assert!(live_children(&ws, &sid("g"), |_| true).is_empty());
    }

    #[test]
    fn a_closed_agent_descends_through_closed_parents_and_a_loop_ends() {
        let parents = |id: &str| match id {
            "g" => Some("a".to_owned()),
            "a" => Some("p".to_owned()),
            "loop1" => Some("loop2".to_owned()),
            "loop2" => Some("loop1".to_owned()),
            _ => None,
        };
        assert!(descends_from(Some("g".into()), "p", parents));
        assert!(!descends_from(Some("g".into()), "q", parents));
        assert!(!descends_from(None, "p", parents));
        assert!(!descends_from(Some("loop1".into()), "p", parents));
    }

    #[test]
    fn a_child_inherits_its_parents_provider_folder_and_capture_and_joins_its_tree() {
        let mut parent = SessionMeta::new(sid("p"), Provider::Codex, "/src/api");
        parent.capture = false;
        let child = child_session(
            &parent,
            sid("c"),
            ChildRequest {
                run: "run-1".into(),
                ..Default::default()
            },
            true,
            42,
        );
        assert_eq!(child.provider, Provider::Codex);
        assert_eq!(child.cwd, "/src/api");
        assert_eq!(child.title, "codex agent");
        assert!(!child.capture && child.dangerous);
        assert_eq!((child.created_at_ms, child.last_active_ms), (42, 42));
        let rel = &child.relationships;
        assert_eq!(rel.orchestration_parent, Some(sid("p")));
        assert_eq!(rel.orchestration_root, Some(sid("p")));
        assert_eq!(rel.run.as_deref(), Some("run-1"));
        // A grandchild joins the root's tree; a role names it when no title does.
        let grandchild = child_session(
            &child,
            sid("g"),
            ChildRequest {
                provider: Some(Provider::Claude),
                cwd: Some("/tmp".into()),
                role: Some("reviewer".into()),
                run: "run-2".into(),
                ..Default::default()
            },
            false,
            43,
        );
        assert_eq!(grandchild.title, "reviewer");
        assert_eq!(grandchild.relationships.role.as_deref(), Some("reviewer"));
        assert_eq!(grandchild.relationships.orchestration_root, Some(sid("p")));
        assert_eq!(
            grandchild.relationships.orchestration_parent,
            Some(sid("c"))
        );
        assert_eq!(
            (grandchild.provider, grandchild.cwd.as_str()),
            (Provider::Claude, "/tmp")
        );
    }

    #[test]
    fn a_running_agent_reports_its_turn_and_a_stopped_one_its_process() {
        use AgentProcess::*;
        assert_eq!(agent_status(Live, Activity::Working), "working");
        assert_eq!(agent_status(Spawning, Activity::Waiting), "waiting");
        assert_eq!(agent_status(Live, Activity::Idle), "live");
        assert_eq!(agent_status(Live, Activity::Unknown), "live");
        assert_eq!(agent_status(Hibernated, Activity::Working), "hibernated");
        assert_eq!(agent_status(Ended, Activity::Idle), "failed");
    }

    #[test]
    fn waiting_ends_when_the_turn_ends_or_the_process_is_gone_but_not_while_it_starts() {
        use AgentProcess::*;
        assert!(!agent_settled(Spawning, Activity::Idle));
        assert!(!agent_settled(Live, Activity::Working));
        assert!(agent_settled(Live, Activity::Idle));
        assert!(agent_settled(Live, Activity::Waiting));
        assert!(agent_settled(Hibernated, Activity::Unknown));
        assert!(agent_settled(Ended, Activity::Working));
        // A question for the person settles the wait but does not finish the turn.
        assert!(!agent_finished(Live, Activity::Waiting));
        assert!(agent_finished(Live, Activity::Idle));
        assert!(agent_finished(Ended, Activity::Unknown));
    }
}
