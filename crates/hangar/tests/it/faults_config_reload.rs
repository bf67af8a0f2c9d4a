//! Issue 18, fault: config.toml half-written (an editor or a script caught
//! mid-write) when `hangar reload` reads it. The reload is refused with an
//! error naming the file and the line, the running settings are kept (a
//! provider the half file would add is still unknown, one it would change
//! still works as before), no live session is restarted, and the daemon
//! serves. Once the file is whole, the same reload takes it.

use crate::reliability_support;
use crate::support;

use support::*;

const BEFORE: &str = "[providers.tool]\nprogram = \"/bin/sh\"\n";

/// What a person means to write: `tool` changes, `other` is new.
const AFTER: &str = "[restore]\nspawn_timeout_secs = 30\n\n[providers.tool]\nprogram = \"/bin/sh\"\nargs = [\"-c\", \"echo tool-v2; exec sleep 1000\"]\n\n[providers.other]\nprogram = \"/bin/cat\"\n";

#[test]
fn a_half_written_config_is_refused_naming_file_and_line_and_nothing_restarts() {
    let h = Hangar::new();
    h.write_config(BEFORE);
    h.start_daemon();
    let agent = h.new_pane();
    h.wait_state(&agent, "live");
    let agent_pid = h.pid_of(&agent);
    let daemon = h.daemon_pid();

    // Cut in the middle of the `args` string, as a write caught half way.
    let cut = AFTER.find("tool-v2").expect("marker") + 3;
    let half = &AFTER[..cut];
    let line = half.lines().count();
    std::fs::write(h.home.join("config.toml"), half).expect("write half");
    let stderr = h.fail(&["reload"]);
    let config = h.home.join("config.toml");
    assert!(
        stderr.contains(&config.display().to_string()),
        "the error names the file: {stderr}"
    );
    assert!(
        stderr.contains(&format!("line {line}")),
        "and the line ({line}) where it breaks off: {stderr}"
    );
    assert!(
        stderr.contains("keeps the settings it has"),
        "and says the running settings are kept: {stderr}"
    );
    // Nothing restarted; the daemon is the same and serves.
    assert_eq!(h.daemon_pid(), daemon);
    assert_eq!(
        h.pid_of(&agent),
        agent_pid,
        "the live agent was not restarted"
    );
    assert_eq!(h.state_of(&agent), "live");
    // The running settings: `other` unknown, `tool` as before.
    let unknown = h.fail(&["new", "--provider", "other", "--parked"]);
    assert!(unknown.contains("unknown provider"), "{unknown}");
    let tool = h.new_agent(&["--provider", "tool", "--title", "tool"]);
    h.wait_state(&tool, "live");
    h.ok(&["send", &tool, "echo still-v1"]);
    h.wait_screen(&tool, "\nstill-v1");

    // A second kind of half file: a table header cut off.
    let header_cut = AFTER.find("[providers.other]").expect("header") + 8;
    std::fs::write(h.home.join("config.toml"), &AFTER[..header_cut]).expect("write half");
    let stderr2 = h.fail(&["reload"]);
    let line2 = AFTER[..header_cut].lines().count();
    assert!(
        stderr2.contains(&format!("line {line2}")),
        "a cut-off table header is refused at line {line2}: {stderr2}"
    );
    assert_eq!(h.pid_of(&agent), agent_pid);

    // The whole file: the reload takes it.
    std::fs::write(h.home.join("config.toml"), AFTER).expect("write whole");
    h.ok(&["reload"]);
    h.new_agent(&["--provider", "other", "--parked", "--title", "other"]);
    let v2 = h.new_agent(&["--provider", "tool", "--title", "tool-v2"]);
    h.wait_screen(&v2, "tool-v2");
    reliability_support::figures(
        "half-written config",
        format!(
            "refused_reloads=2 restarted_during_refusals=0 error={:?}",
            stderr.trim()
        ),
    );
}

#[test]
fn a_config_the_daemon_refuses_at_start_is_reported_by_the_client_with_its_reason() {
    let h = Hangar::new();
    // A misspelt field: `hangar daemon` refuses it naming the line, the
    // column, the unknown field and the allowed ones.
    h.write_config("[restore]\nspawn_timeout = 30\n");
    let daemon = String::from_utf8_lossy(&h.run(&["daemon"]).stderr).into_owned();
    assert!(daemon.contains("spawn_timeout"), "{daemon}");
    // The auto-start of any command passes all of that on.
    let stderr = h.fail(&["ls"]);
    for part in [
        "line 2, column 1",
        "unknown field `spawn_timeout`",
        "spawn_timeout_secs",
    ] {
        assert!(daemon.contains(part), "the daemon says {part:?}: {daemon}");
        assert!(stderr.contains(part), "the client says {part:?}: {stderr}");
    }
    assert!(stderr.contains("did not start"), "{stderr}");
}
