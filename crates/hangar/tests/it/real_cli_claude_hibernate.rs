//! Issue 31 item 6, against the real Claude Code: a hibernate in the first
//! second after an answer never loses the conversation.
//!
//! Regression: a hibernate (or a budget stop) right after claude answered
//! once, on a loaded machine, lost the whole conversation: the next wake
//! said "No conversation found". Claude Code draws the answer before its
//! transcript holds it (seen here: the first round measures the gap), so a
//! stop in between had nothing to resume. hangar now stops a session only
//! once its transcript has the turn its hooks said ended.
//!
//! Skipped with one line when the CLIs cannot be installed (see
//! `real_cli_support`).

use crate::real_cli_support;
use crate::support;

use std::time::{Duration, Instant};

use real_cli_support::{REAL_DEADLINE, RealCli};
use serde_json::Value;

/// Rounds of answer, hibernate at once, wake.
const ROUNDS: usize = 12;

fn screen(rc: &RealCli, id: &str) -> String {
    String::from_utf8_lossy(&rc.hangar.run(&["screen", id]).stdout).into_owned()
}

/// Whether any claude transcript of the home holds `text`.
fn transcript_holds(rc: &RealCli, text: &str) -> bool {
    rc.claude_transcripts()
        .iter()
        .any(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(text)))
}

/// Polls as fast as `hangar screen` answers until `answer` is on screen;
/// returns when it was first seen.
fn wait_answer_on_screen(rc: &RealCli, id: &str, answer: &str) -> Instant {
    let start = Instant::now();
    loop {
        if screen(rc, id).contains(answer) {
            return Instant::now();
        }
        assert!(
            start.elapsed() < REAL_DEADLINE,
            "{answer} never reached the screen:\n{}",
            screen(rc, id)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_real_claude_hibernated_in_the_first_second_after_each_answer_wakes_with_its_conversation() {
    let Some(rc) = RealCli::start() else { return };
    rc.hangar.start_daemon();
    let id = rc
        .hangar
        .new_agent(&["--provider", "claude", "--title", "hibernate-rounds"]);
    rc.wait_ready(&id);

    // What the real claude does, measured once: when its transcript holds
    // an answer, against when its screen shows it.
    let text = "observed question";
    rc.submit(&id, text);
    let answer = format!("ANSWER({text})");
    let shown = wait_answer_on_screen(&rc, &id, &answer);
    let in_transcript_at_once = transcript_holds(&rc, &answer);
    support::wait_until("the answer in the transcript", REAL_DEADLINE, || {
        transcript_holds(&rc, &answer)
    });
    eprintln!(
        "observed: answer on screen, in the transcript {} ({} ms after the screen, \
         polling every few ms)",
        if in_transcript_at_once {
            "already"
        } else {
            "not yet"
        },
        shown.elapsed().as_millis()
    );
    let mut earlier = vec![answer];

    for round in 0..ROUNDS {
        let text = format!("round {round} question");
        let request = rc.submit(&id, &text);
        // The conversation came back whole: the model is sent every earlier
        // answer.
        let body = request["body"].to_string();
        for answer in &earlier {
            assert!(
                body.contains(answer.as_str()),
                "round {round}: the turn after a wake lost {answer}; request: {body}"
            );
        }
        let answer = format!("ANSWER({text})");
        let shown = wait_answer_on_screen(&rc, &id, &answer);
        rc.hangar.ok(&["hibernate", &id]);
        eprintln!(
            "round {round}: hibernated {} ms after the answer was shown",
            shown.elapsed().as_millis()
        );
        assert_eq!(rc.hangar.state_of(&id), "hibernated");
        assert!(
            transcript_holds(&rc, &answer),
            "round {round}: stopped before the transcript held {answer}"
        );
        rc.hangar.ok(&["wake", &id]);
        rc.wait_state(&id, "live");
        let woke = rc.wait_ready(&id);
        assert!(
            !woke.contains("No conversation found"),
            "round {round}: {woke}"
        );
        earlier.push(answer);
    }
    let last: Value = rc.submit(&id, "after every round");
    let body = last["body"].to_string();
    for answer in &earlier {
        assert!(body.contains(answer.as_str()), "lost {answer}");
    }
}

#[test]
fn a_real_claude_running_a_background_command_is_not_hibernated_unless_forced() {
    // Issue 46 part 3: Claude Code runs a background Bash task as a shell
    // under its own process, and it goes on after the turn ends. Stopping
    // claude would cut it, so `hangar hibernate` refuses, naming it.
    let Some(rc) = RealCli::start() else { return };
    rc.api.script(serde_json::json!({"rules": [
        {"when": "start the long job", "tool": {"name": "Bash", "input": {
            "command": "sleep 300", "run_in_background": true,
            "description": "a long job"}}}
    ]}));
    rc.hangar.start_daemon();
    let id = rc.hangar.new_agent(&["--provider", "claude"]);
    rc.wait_ready(&id);
    let before = rc.api.requests().len();
    rc.submit(&id, "start the long job");
    rc.wait_tool_call("Bash", before);
    // `sleep` runs without a question (Claude Code 2.1.197: "Running in the
    // background", then "1 shell still running" once the turn ended).
    rc.wait_screen(&id, "TOOL-DONE(");
    support::wait_until("the turn ended", REAL_DEADLINE, || {
        rc.hangar.session(&id)["activity"] == "idle"
    });
    let refused = rc.hangar.run(&["--json", "hibernate", &id]);
    assert!(!refused.status.success(), "hibernated while its job ran");
    let said = String::from_utf8_lossy(&refused.stderr).into_owned()
        + &String::from_utf8_lossy(&refused.stdout);
    assert!(said.contains("sleep 300"), "it says what runs: {said}");
    assert!(said.contains("--force"), "{said}");
    assert_eq!(rc.hangar.session(&id)["state"], "live");
    rc.hangar.ok(&["hibernate", "--force", &id]);
    rc.wait_state(&id, "hibernated");
}
