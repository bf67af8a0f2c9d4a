//! Notifications about the agents of other hosts (issue 47): this
//! machine's daemon is told, host by host, what each far daemon lists, and
//! tells the person once when a far agent starts waiting for them or
//! finishes its turn, through this machine's `[notify]` (the command with
//! HANGAR_HOST set, OSC to attached clients, `notify-send`).
//!
//! The links themselves are the `hangar` binary's (`remote::far_watch`:
//! one ssh link per host, asked every few seconds); here is only what a
//! list means. A host's first answer is where it starts: nothing in it is
//! news, so a daemon that starts, or a host that is first reached, tells
//! nothing old. What was last seen of a host is kept while it is down, so
//! when it answers again only what changed while it was away is told, once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hangar_core::SessionId;

use super::notify::{self, NotifyConfig};
use super::{Activity, Hub};
use crate::section::Section;

/// One session of a far host's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FarRow {
    pub id: String,
    pub title: String,
    pub activity: Activity,
}

/// A far session's change worth telling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FarChange {
    pub id: String,
    pub title: String,
    pub from: Activity,
    pub to: Activity,
}

/// What was last seen of one far session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Seen {
    /// Its last state other than `unknown`; none yet for a session that
    /// appeared since its host's first answer and has only been unknown.
    known: Option<Activity>,
    /// `unknown` was seen since `known` (its daemon restarted, it was
    /// woken, its limit stood): what follows is a new start.
    restarted: bool,
}

/// What was last seen of each far host's sessions.
#[derive(Debug, Default)]
pub struct FarSeen {
    hosts: HashMap<String, HashMap<String, Seen>>,
}

impl FarSeen {
    /// Take `host`'s answer: the changes since its last answer that are
    /// news. None in a host's first answer (where it starts). A list is a
    /// sample, so a state between two answers may go unseen; the rules
    /// read the two samples as the local tracker reads a transition
    /// (`notify::worth_notifying`), and beyond it: a session new since the
    /// last answer that is already waiting is news (it asked at once), and
    /// after `unknown` (a start, a wake, its daemon restarted) only a wait
    /// that was not the last state known is (never the same wait twice).
    pub fn answer(&mut self, host: &str, rows: &[FarRow]) -> Vec<FarChange> {
        let first = !self.hosts.contains_key(host);
        let before = self.hosts.remove(host).unwrap_or_default();
        let mut now = HashMap::with_capacity(rows.len());
        let mut changes = Vec::new();
        for r in rows {
            let prior = before.get(&r.id).copied();
            let seen = match (r.activity, prior) {
                (Activity::Unknown, prior) => {
                    let known = prior.and_then(|p| p.known);
                    Seen {
                        known,
                        restarted: known.is_some(),
                    }
                }
                (to, prior) => {
                    let prior = prior.unwrap_or_default();
                    let news = match prior.known {
                        _ if first => false,
                        Some(from) if prior.restarted => {
                            to == Activity::Waiting && from != Activity::Waiting
                        }
                        Some(from) => notify::worth_notifying(from, to),
                        None => to == Activity::Waiting,
                    };
                    if news {
                        changes.push(FarChange {
                            id: r.id.clone(),
                            title: r.title.clone(),
                            from: prior.known.unwrap_or(Activity::Unknown),
                            to,
                        });
                    }
                    Seen {
                        known: Some(to),
                        restarted: false,
                    }
                }
            };
            now.insert(r.id.clone(), seen);
        }
        self.hosts.insert(host.to_owned(), now);
        changes
    }
}

/// The activity a far listing names; `limited` and anything this build
/// does not know count as `unknown` (never news, never a start of news).
pub fn activity_named(name: &str) -> Activity {
    match name {
        "working" => Activity::Working,
        "waiting" => Activity::Waiting,
        "idle" => Activity::Idle,
        _ => Activity::Unknown,
    }
}

/// The daemon's side of the far watch: handed to the `hangar` binary's
/// watcher once the daemon serves.
#[derive(Clone)]
pub struct FarNotifier {
    hub: Arc<Hub>,
    notify: Section<NotifyConfig>,
    runtime: tokio::runtime::Handle,
    seen: Arc<Mutex<FarSeen>>,
    /// `true` once the daemon has shut down: the watch ends.
    done: tokio::sync::watch::Receiver<bool>,
}

impl FarNotifier {
    pub(crate) fn new(
        hub: Arc<Hub>,
        notify: Section<NotifyConfig>,
        shutdown: &crate::shutdown::Shutdown,
    ) -> FarNotifier {
        FarNotifier {
            hub,
            notify,
            runtime: tokio::runtime::Handle::current(),
            seen: Arc::default(),
            done: shutdown.watch(),
        }
    }

    /// The daemon has shut down: the watch ends, and tells nothing more.
    pub fn ended(&self) -> bool {
        *self.done.borrow()
    }

    /// `[notify] far_hosts`, as the settings in use say.
    pub fn enabled(&self) -> bool {
        self.notify.get().far_hosts
    }

    /// `host` answered with `rows`: tell each change worth telling, once.
    /// Never blocks on the notification (commands are spawned and reaped).
    pub fn answered(&self, host: &str, rows: &[FarRow]) -> usize {
        let changes = self
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .answer(host, rows);
        if changes.is_empty() || !self.enabled() || self.ended() {
            return 0;
        }
        let config = self.notify.get();
        let _in_runtime = self.runtime.enter();
        for c in &changes {
            let text = far_message(host, &c.title, &c.id, c.to);
            tracing::info!(
                "host {host:?}: session {:?} is {}; notifying",
                c.id,
                c.to.name()
            );
            notify::run_commands_about(config, Some(host), &c.id, &c.title, c.to.name(), &text);
            if config.osc {
                // About a session no local client views: every attached
                // client shows it.
                self.hub.send_osc(
                    &SessionId::from(format!("{host}:{}", c.id).as_str()),
                    notify::osc_bytes(&text),
                );
            }
        }
        changes.len()
    }
}

/// The one-line message about a far session: its host named first.
fn far_message(host: &str, title: &str, id: &str, to: Activity) -> String {
    format!("{host}: {}", notify::message(title, id, to))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, a: Activity) -> FarRow {
        FarRow {
            id: id.to_owned(),
            title: format!("t-{id}"),
            activity: a,
        }
    }

    #[test]
    fn a_hosts_first_answer_is_where_it_starts_and_tells_nothing() {
        let mut seen = FarSeen::default();
        assert!(
            seen.answer(
                "h1",
                &[row("a", Activity::Waiting), row("b", Activity::Idle)]
            )
            .is_empty()
        );
    }

    #[test]
    fn a_change_is_told_once() {
        let mut seen = FarSeen::default();
        seen.answer("h1", &[row("a", Activity::Working)]);
        let told = seen.answer(
            "h1",
            &[row("a", Activity::Waiting), row("new", Activity::Idle)],
        );
        assert_eq!(
            told,
            vec![FarChange {
                id: "a".into(),
                title: "t-a".into(),
                from: Activity::Working,
                to: Activity::Waiting
            }]
        );
        assert!(
            seen.answer(
                "h1",
                &[row("a", Activity::Waiting), row("new", Activity::Idle)]
            )
            .is_empty(),
            "the same state again is not told again"
        );
        let told = seen.answer("h1", &[row("a", Activity::Idle)]);
        assert_eq!(told.len(), 1);
        assert_eq!(told[0].to, Activity::Idle);
    }

    #[test]
    fn a_host_back_from_down_tells_only_what_changed_while_away_and_once() {
        let mut seen = FarSeen::default();
        seen.answer(
            "h1",
            &[row("a", Activity::Working), row("b", Activity::Idle)],
        );
        seen.answer("h2", &[row("c", Activity::Working)]);
        // h1 is down for a while (no answers); h2 goes on.
        assert_eq!(seen.answer("h2", &[row("c", Activity::Idle)]).len(), 1);
        // Back: `a` started waiting meanwhile; `b` is as it was.
        let told = seen.answer(
            "h1",
            &[row("a", Activity::Waiting), row("b", Activity::Idle)],
        );
        assert_eq!(told.len(), 1);
        assert_eq!(told[0].id, "a");
        assert!(
            seen.answer(
                "h1",
                &[row("a", Activity::Waiting), row("b", Activity::Idle)]
            )
            .is_empty()
        );
    }

    #[test]
    fn a_far_daemon_restarted_is_not_news_and_never_tells_the_same_wait_twice() {
        let mut seen = FarSeen::default();
        seen.answer(
            "h1",
            &[row("a", Activity::Working), row("b", Activity::Waiting)],
        );
        // Restarted there: unknown first, then idle (a start) and the same
        // wait as before: neither is told.
        let unknown = activity_named("unknown");
        assert!(
            seen.answer("h1", &[row("a", unknown), row("b", unknown)])
                .is_empty()
        );
        assert!(
            seen.answer(
                "h1",
                &[row("a", Activity::Idle), row("b", Activity::Waiting)]
            )
            .is_empty()
        );
        // A limit standing reads as unknown; its end is a start too.
        assert!(
            seen.answer("h1", &[row("a", activity_named("limited"))])
                .is_empty()
        );
        assert!(seen.answer("h1", &[row("a", Activity::Idle)]).is_empty());
        // From there on, changes are news again.
        assert_eq!(seen.answer("h1", &[row("a", Activity::Waiting)]).len(), 1);
    }

    #[test]
    fn a_session_new_since_the_last_answer_is_news_only_when_it_already_waits() {
        let mut seen = FarSeen::default();
        seen.answer("h1", &[]);
        assert!(
            seen.answer(
                "h1",
                &[
                    row("a", Activity::Idle),
                    row("b", activity_named("unknown"))
                ]
            )
            .is_empty()
        );
        let told = seen.answer(
            "h1",
            &[row("a", Activity::Idle), row("b", Activity::Waiting)],
        );
        assert_eq!(told.len(), 1);
        assert_eq!((told[0].id.as_str(), told[0].to), ("b", Activity::Waiting));
        assert!(seen.answer("h1", &[row("c", Activity::Idle)]).is_empty());
    }
}
