//! In-process tests, on the fake machine, of the races issue 44 found
//! between deciding to type an automatic prompt and typing it: a goal's
//! continuation waits for the turn to settle, a limit's continuation wakes
//! the session and closes a question first, and in that window a person, a
//! limit, a spent budget or `goal --stop` can come. Each must type nothing
//! (`hangar_core::auto_prompt::may_type`, looked at inside the step that
//! types). Also: a spent budget hibernates an agent waiting for a person
//! after a bounded wait, and a limited session reads `limited` whatever
//! its agent seems to do.

use std::time::Duration;

use hangar_core::goal::{Goal, GoalState, PauseCause};
use hangar_core::usage::{Tokens, UsageRecord, UsageSource};
use hangar_core::usage_limits::SessionLimit;
use hangar_core::{Provider, SessionId};
use hangar_providers::claude::hooks::HookEvent;

use crate::journal::{Caller, Event, HibernateReason};
use crate::on_a_fake_machine::{FakeMachine, build, until};
use crate::os::Clock;
use crate::sessions::RunState;

/// What a goal's continuation starts with (`goal::continuation_prompt`).
const CONTINUATION: &[u8] = b"Continue with the goal";

/// A machine with claude session `a` live (the fake runs no program, but
/// the launch looks the program up first: any that exists does), its
/// activity committed at once.
async fn live_claude() -> (FakeMachine, SessionId, u32) {
    live_claude_made_by(None).await
}

/// `live_claude`, the agent of session `parent` when given (a pane of its
/// own that is not started).
async fn live_claude_made_by(parent: Option<&str>) -> (FakeMachine, SessionId, u32) {
    live_agent(Provider::Claude, parent).await
}

/// `live_claude_made_by` for any provider's agent.
async fn live_agent(provider: Provider, parent: Option<&str>) -> (FakeMachine, SessionId, u32) {
    let panes: &[&str] = if parent.is_some() {
        &["lead", "a"]
    } else {
        &["a"]
    };
    let m = build(
        panes,
        &[],
        |c| {
            c.activity.debounce_ms = 0;
            // The launch looks the program up first: any that exists does.
            let program = hangar_providers::ProviderConfig {
                program: Some("/bin/sh".into()),
                ..Default::default()
            };
            c.providers.insert(provider.name().to_owned(), program);
        },
        |m| {
            if m.id.as_str() == "a" {
                m.provider = provider.clone();
                if let Some(parent) = parent {
                    m.relationships.orchestration_parent = Some(SessionId::from(parent));
                    m.relationships.orchestration_root = Some(SessionId::from(parent));
                }
            }
        },
    );
    let a = SessionId::from("a");
    let state = m.daemon.governor.wake_as(&a, Caller::Cli).await.unwrap();
    assert_eq!(state, RunState::Live);
    let pid = m.daemon.sessions.process(&a).unwrap().pid;
    (m, a, pid)
}

/// `a` has a running goal and is mid-turn (a prompt was just typed), and
/// its turn's end was reported: the continuation is decided and waits for
/// the turn to settle.
fn goal_decided_mid_turn(m: &FakeMachine, a: &SessionId) {
    let now = m.daemon.usage.now();
    let goal = Goal::new("make the tests pass", Some(10), now).unwrap();
    m.daemon
        .usage
        .update_goal(a.as_str(), |slot| *slot = Some(goal));
    m.daemon.monitor.note_input(a, m.os.now_ms());
    assert!(m.daemon.monitor.is_busy(a), "mid-turn");
    m.daemon.goals.turn_ended(a);
    let g = m.daemon.usage.goal_of(a.as_str()).unwrap();
    assert_eq!((g.state, g.turns), (GoalState::Running, 1), "decided");
}

/// Longer than the settle wait and every Enter a delivery may press.
async fn past_the_settle_wait() {
    tokio::time::sleep(Duration::from_secs(60)).await;
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn journal(m: &FakeMachine) -> Vec<Event> {
    crate::journal::read_entries(m.daemon.journal.path())
        .into_iter()
        .map(|e| e.event)
        .collect()
}

fn limit_until(m: &FakeMachine, resets_at: Option<i64>) -> SessionLimit {
    SessionLimit {
        kind: "five_hour".to_owned(),
        resets_at,
        source: "proxy".to_owned(),
        since_ms: m.daemon.usage.now(),
        continue_at: None,
        stopped_mid_task: true,
        continued: false,
        account: None,
    }
}

/// Control for the races below: with nothing changed during the settle
/// wait, the continuation is typed once the wait is over.
#[tokio::test(start_paused = true)]
async fn a_goal_s_continuation_nothing_changed_for_is_typed_after_the_settle_wait() {
    let (m, a, pid) = live_claude().await;
    goal_decided_mid_turn(&m, &a);
    until("the continuation is typed", || {
        contains(&m.os.typed(pid), CONTINUATION)
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_goal_stopped_during_the_settle_wait_types_nothing() {
    let (m, a, pid) = live_claude().await;
    goal_decided_mid_turn(&m, &a);
    tokio::time::sleep(Duration::from_secs(1)).await;
    m.daemon.goals.stop(&a).unwrap();
    past_the_settle_wait().await;
    assert_eq!(m.os.typed(pid), b"", "nothing typed after the stop");
    let g = m.daemon.usage.goal_of(a.as_str()).unwrap();
    assert_eq!(g.state, GoalState::Stopped);
}

#[tokio::test(start_paused = true)]
async fn a_limit_arriving_during_the_settle_wait_types_nothing_and_pauses_the_goal() {
    let (m, a, pid) = live_claude().await;
    goal_decided_mid_turn(&m, &a);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let reset = m.daemon.usage.now() + 3_600_000;
    m.daemon.usage.limited(&a, limit_until(&m, Some(reset)));
    past_the_settle_wait().await;
    assert_eq!(m.os.typed(pid), b"", "nothing typed to a limited account");
    let g = m.daemon.usage.goal_of(a.as_str()).unwrap();
    assert_eq!(
        (g.state, g.pause),
        (GoalState::Paused, Some(PauseCause::Limited)),
        "it resumes after the limit's continuation"
    );
}

#[tokio::test(start_paused = true)]
async fn a_person_typing_during_the_settle_wait_types_nothing_and_pauses_the_goal() {
    let (m, a, pid) = live_claude().await;
    goal_decided_mid_turn(&m, &a);
    tokio::time::sleep(Duration::from_secs(1)).await;
    m.daemon.usage.person_typed(&a);
    past_the_settle_wait().await;
    assert_eq!(m.os.typed(pid), b"", "nothing typed over the person");
    let g = m.daemon.usage.goal_of(a.as_str()).unwrap();
    assert_eq!(
        (g.state, g.pause),
        (GoalState::Paused, Some(PauseCause::Person))
    );
}

/// `a` spends `usd`'s worth of claude-opus-4-5 output at list price ($25
/// per million output tokens).
fn spend(m: &FakeMachine, a: &SessionId, usd: f64) {
    let output = (usd / 25.0 * 1_000_000.0) as u64;
    m.daemon.usage.record_usage(UsageRecord {
        request_key: format!("msg_{output}"),
        session: a.to_string(),
        provider: "claude".to_owned(),
        account: None,
        model: Some("claude-opus-4-5".to_owned()),
        at_ms: m.daemon.usage.now(),
        tokens: Tokens {
            output,
            ..Tokens::default()
        },
        status: Some(200),
        source: UsageSource::Proxy,
        agent_cost_usd: None,
    });
}

#[tokio::test(start_paused = true)]
async fn a_budget_spent_during_the_settle_wait_types_nothing_and_stops_the_goal() {
    let (m, a, pid) = live_claude().await;
    m.daemon.usage.start();
    m.daemon.budgets.set_session_budget(&a, Some(1.0)).unwrap();
    goal_decided_mid_turn(&m, &a);
    tokio::time::sleep(Duration::from_secs(1)).await;
    // The request that spends it is recorded and the budget looked at;
    // its session's goal is stopped by the check at typing, not by the
    // budget's own stop (not run here).
    spend(&m, &a, 2.0);
    let spent = m.daemon.budgets.look();
    assert_eq!(spent.len(), 1, "{spent:?}");
    past_the_settle_wait().await;
    assert_eq!(m.os.typed(pid), b"", "nothing typed over the budget");
    let g = m.daemon.usage.goal_of(a.as_str()).unwrap();
    assert_eq!(g.state, GoalState::Stopped, "{g:?}");
}

/// The continuation's own window: decided (marked continued) at the
/// reset, then the wake and the limit question come before the keys.
async fn continuation_decided(m: &FakeMachine, a: &SessionId) -> i64 {
    let since = m.daemon.usage.now();
    m.daemon
        .usage
        .limited(a, limit_until(m, Some(since + 1_000)));
    m.os.advance(Duration::from_secs(120));
    assert!(
        m.daemon.usage.may_use_account(a.as_str()),
        "the reset passed"
    );
    assert!(m.daemon.usage.mark_continued(a.as_str(), since), "decided");
    since
}

#[tokio::test(start_paused = true)]
async fn a_limit_s_continuation_nothing_changed_for_is_typed() {
    let (m, a, pid) = live_claude().await;
    let since = continuation_decided(&m, &a).await;
    // The agent takes the prompt: its `UserPromptSubmit` hook confirms it.
    let (os, monitor, id) = (m.os.clone(), m.daemon.monitor.clone(), a.clone());
    tokio::spawn(async move {
        until("the Enter is typed", || os.typed(pid).ends_with(b"\r")).await;
        monitor.record_hook(&id, HookEvent::UserPromptSubmit);
    });
    m.daemon
        .continuation
        .type_continuation(a.clone(), since, false, "continue".to_owned())
        .await;
    assert!(contains(&m.os.typed(pid), b"continue"), "typed");
    let typed = journal(&m).into_iter().any(
        |e| matches!(e, Event::LimitContinue { ref session, typed: true, .. } if session == "a"),
    );
    assert!(typed, "journal: limit-continue typed");
}

#[tokio::test(start_paused = true)]
async fn a_limit_s_continuation_after_a_person_typed_types_nothing_and_the_limit_stands() {
    let (m, a, pid) = live_claude().await;
    let since = continuation_decided(&m, &a).await;
    m.daemon.usage.person_typed(&a);
    m.daemon
        .continuation
        .type_continuation(a.clone(), since, false, "continue".to_owned())
        .await;
    assert_eq!(m.os.typed(pid), b"", "nothing typed over the person");
    assert!(
        m.daemon.usage.limit_view(a.as_str()).is_some(),
        "the limit stands again for the scheduler to stand down and say why"
    );
}

#[tokio::test(start_paused = true)]
async fn a_limit_s_continuation_after_a_new_refusal_or_a_spent_budget_types_nothing() {
    let (m, a, pid) = live_claude().await;
    let since = continuation_decided(&m, &a).await;
    // Refused again (a person's own prompt went through meanwhile and hit
    // the next window).
    m.os.advance(Duration::from_secs(1));
    let reset = m.daemon.usage.now() + 3_600_000;
    m.daemon.usage.limited(&a, limit_until(&m, Some(reset)));
    m.daemon
        .continuation
        .type_continuation(a.clone(), since, false, "continue".to_owned())
        .await;
    assert_eq!(m.os.typed(pid), b"", "nothing typed to a limited account");

    let (m, a, pid) = live_claude().await;
    m.daemon.usage.start();
    m.daemon.budgets.set_session_budget(&a, Some(1.0)).unwrap();
    let since = continuation_decided(&m, &a).await;
    spend(&m, &a, 2.0);
    assert_eq!(m.daemon.budgets.look().len(), 1);
    m.daemon
        .continuation
        .type_continuation(a.clone(), since, false, "continue".to_owned())
        .await;
    assert_eq!(m.os.typed(pid), b"", "nothing typed over the budget");
}

#[tokio::test(start_paused = true)]
async fn a_budget_spent_while_the_agent_waits_for_a_person_hibernates_it_after_a_bounded_wait() {
    let (m, a, _pid) = live_claude().await;
    assert!(m.daemon.monitor.record_hook(&a, HookEvent::Notification));
    until("the agent waits for the person", || {
        m.daemon.monitor.activity_of(&a).0 == crate::activity::Activity::Waiting
    })
    .await;
    let budgets = m.daemon.budgets.clone();
    let id = a.clone();
    let spending =
        tokio::spawn(async move { budgets.spend(id, "spent $2.00 of $1.00".to_owned()).await });
    let bound = Duration::from_millis(hangar_core::budget::PERSON_WAIT_MS);
    tokio::time::sleep(bound / 2).await;
    assert_eq!(
        m.daemon.sessions.run_state(&a),
        RunState::Live,
        "the person has a while to see the notice"
    );
    tokio::time::timeout(bound, spending)
        .await
        .expect("hibernated within the bound")
        .unwrap();
    assert_eq!(m.daemon.sessions.run_state(&a), RunState::Hibernated);
    let events = journal(&m);
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::Hibernate { session, reason: HibernateReason::Budget } if session == "a"
        )),
        "{events:?}"
    );
    let row = crate::handlers::sessions::list(&m.daemon)
        .into_iter()
        .find(|r| r.id == "a")
        .unwrap();
    let reason = row.reason.unwrap_or_default();
    assert!(reason.contains("cost budget is spent"), "{reason}");
}

#[tokio::test(start_paused = true)]
async fn a_limited_session_reads_limited_while_its_cli_retries_until_the_reset() {
    let (m, a, _pid) = live_claude_made_by(Some("lead")).await;
    let row = |m: &FakeMachine| {
        crate::handlers::sessions::list(&m.daemon)
            .into_iter()
            .find(|r| r.id == "a")
            .unwrap()
    };
    let reset = m.daemon.usage.now() + 60_000;
    m.daemon.usage.limited(&a, limit_until(&m, Some(reset)));
    // The CLI retries by itself: a request in flight through the proxy.
    m.daemon.monitor.activity_signal(
        "a",
        crate::activity::sources::proxy::Signal::RequestStarted {
            prompts: Vec::new(),
        },
    );
    until("the agent reads working", || {
        m.daemon.monitor.activity_of(&a).0 == crate::activity::Activity::Working
    })
    .await;
    assert_eq!(row(&m).activity, "limited");
    // `hangar wait` and MCP's `list_agents` (for the agent that made it)
    // say the same as `ls`.
    let waited = |m: &FakeMachine| {
        let m = m.daemon.clone();
        async move {
            crate::handlers::activity::wait(&m, &["a".to_owned()], "any", Some(0))
                .await
                .unwrap()
                .sessions[0]
                .activity
                .clone()
        }
    };
    assert_eq!(waited(&m).await, "limited");
    let lead = SessionId::from("lead");
    let listed = |m: &FakeMachine| {
        let (m, lead) = (m.daemon.clone(), lead.clone());
        async move {
            let reply = m
                .agents
                .tool_list(&lead, serde_json::json!({}))
                .await
                .unwrap();
            reply["agents"][0]["status"]
                .as_str()
                .unwrap_or_else(|| panic!("{reply}"))
                .to_owned()
        }
    };
    assert_eq!(listed(&m).await, "limited");
    // Until the reset passes: then the account may be used and the row
    // says what the agent does (its limit still shows until it carries on).
    m.os.advance(Duration::from_secs(61));
    let after = row(&m);
    assert_eq!(after.activity, "working", "{after:?}");
    assert!(after.limit.is_some());
    assert_eq!(waited(&m).await, "working");
    assert_eq!(listed(&m).await, "working");
}

/// OpenCode retries a refused request by itself (`[retrying in 8s attempt
/// #1]` under `Rate limit reached for requests`): its limit, however seen,
/// never gets hangar's continuation typed over the retry. Seen in CI: the
/// screen was read between two retries, the limit read as a stopped task,
/// and `continue` was typed a second after the reset.
#[tokio::test(start_paused = true)]
async fn a_cli_that_retries_by_itself_gets_no_continuation_whichever_source_saw_its_limit() {
    let (m, a, pid) = live_agent(Provider::Opencode, None).await;
    tokio::spawn(m.daemon.continuation.clone().run());
    for (seen_before, source) in ["proxy", "screen", "transcript"].into_iter().enumerate() {
        let since = m.daemon.usage.now();
        let seen = SessionLimit {
            source: source.to_owned(),
            ..limit_until(&m, Some(since + 1_000))
        };
        m.daemon.usage.limited(&a, seen);
        m.os.advance(Duration::from_secs(120));
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!contains(&m.os.typed(pid), b"continue"), "{source}: typed");
        let stood_down = journal(&m)
            .into_iter()
            .filter(|e| {
                matches!(e, Event::LimitContinue { typed: false, reason: Some(r), .. }
                    if r == "the limit did not stop a task")
            })
            .count();
        assert_eq!(
            stood_down,
            seen_before + 1,
            "{source}: the stand-down is journaled"
        );
        m.daemon.usage.allowed(&a);
    }
}
