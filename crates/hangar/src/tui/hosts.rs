//! The TUI's host switcher: this machine and every `[hosts.NAME]`, each
//! probed in the background (`hangar hosts`' probe, on its own thread, with
//! ssh's connect timeout), so a host that is down is shown as such and never
//! holds up the screen or the other hosts.

use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::conn::Target;
use crate::remote::{Host, hosts_command};
use crate::tui::events::Event;

/// How often each host is asked again.
const PROBE_EVERY: Duration = Duration::from_secs(10);

/// One entry of the switcher.
#[derive(Clone, Debug, PartialEq)]
pub struct HostRow {
    pub name: String,
    /// None until the first probe answers.
    pub reachable: Option<bool>,
    /// Sessions and live count, or why it cannot be reached.
    pub detail: String,
    /// None for this machine.
    pub host: Option<Host>,
}

#[derive(Clone, Debug)]
pub struct HostBar {
    pub rows: Vec<HostRow>,
    pub current: usize,
}

impl HostBar {
    /// This machine first, then the configured hosts by name; `selected`
    /// (from `--host`) is the one shown first.
    pub fn new(hosts: Vec<Host>, selected: Option<&str>) -> HostBar {
        let mut rows = vec![HostRow {
            name: hangar_core::hosts::LOCAL.to_owned(),
            reachable: None,
            detail: String::new(),
            host: None,
        }];
        rows.extend(hosts.into_iter().map(|h| HostRow {
            name: h.name.clone(),
            reachable: None,
            detail: String::new(),
            host: Some(h),
        }));
        let current = selected
            .and_then(|s| rows.iter().position(|r| r.name == s))
            .unwrap_or(0);
        HostBar { rows, current }
    }

    pub fn current(&self) -> &HostRow {
        &self.rows[self.current]
    }

    /// Move `step` hosts along, wrapping.
    pub fn step(&mut self, step: isize) {
        let n = self.rows.len() as isize;
        self.current = (self.current as isize + step).rem_euclid(n) as usize;
    }

    /// Take a probe's answer (a `hangar hosts` row).
    pub fn update(&mut self, name: &str, row: &Value) {
        if let Some(r) = self.rows.iter_mut().find(|r| r.name == name) {
            let reachable = row["reachable"] == true;
            r.reachable = Some(reachable);
            r.detail = if reachable {
                format!(
                    "{} sessions, {} live",
                    row["sessions"].as_u64().unwrap_or(0),
                    row["live"].as_u64().unwrap_or(0)
                )
            } else {
                hosts_command::printable(row["error"].as_str().unwrap_or("unreachable"))
            };
        }
    }
}

/// One thread per host, each sending `Event::Host` to whichever view is
/// on screen now.
pub fn spawn_probes(bar: &HostBar, target: &Target, events: Arc<Mutex<Sender<Event>>>) {
    for row in &bar.rows {
        let (name, target, events) = (
            row.name.clone(),
            target.with_host(row.host.clone()),
            events.clone(),
        );
        std::thread::spawn(move || {
            loop {
                let answer = hosts_command::probe(&target);
                let sent = events
                    .lock()
                    .map(|tx| {
                        tx.send(Event::Host {
                            name: name.clone(),
                            row: answer,
                        })
                        .is_ok()
                    })
                    .unwrap_or(false);
                if !sent {
                    return;
                }
                std::thread::sleep(PROBE_EVERY);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_core::hosts::HostConfig;
    use serde_json::json;

    fn host(name: &str) -> Host {
        Host {
            name: name.into(),
            config: HostConfig {
                ssh: format!("me@{name}"),
                ..HostConfig::default()
            },
        }
    }

    #[test]
    fn local_comes_first_and_the_selected_host_is_shown() {
        let bar = HostBar::new(vec![host("box"), host("gpu")], Some("gpu"));
        let names: Vec<&str> = bar.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["local", "box", "gpu"]);
        assert_eq!(bar.current().name, "gpu");
    }

    #[test]
    fn stepping_wraps_both_ways() {
        let mut bar = HostBar::new(vec![host("box")], None);
        bar.step(1);
        assert_eq!(bar.current().name, "box");
        bar.step(1);
        assert_eq!(bar.current().name, "local");
        bar.step(-1);
        assert_eq!(bar.current().name, "box");
    }

    #[test]
    fn a_probe_marks_a_host_reachable_or_says_why_not() {
        let mut bar = HostBar::new(vec![host("box"), host("gpu")], None);
        bar.update("box", &json!({"reachable": true, "sessions": 3, "live": 1}));
        bar.update(
            "gpu",
            &json!({"reachable": false, "error": "cannot reach host \"gpu\": refused\x1b[2J"}),
        );
        assert_eq!(bar.rows[1].reachable, Some(true));
        assert_eq!(bar.rows[1].detail, "3 sessions, 1 live");
        assert_eq!(bar.rows[2].reachable, Some(false));
        assert!(!bar.rows[2].detail.contains('\x1b'));
    }
}
