//! The special inputs hangar's tests type: slow turns, questions, permission
//! prompts, child processes, memory and terminal size.

use crate::support;

use std::fs;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Stdio;

use serde_json::Value;
use support::{Agent, Setup, assistant_text, read_jsonl, wait_for_lines, wait_until};

const ID: &str = "5d1c5f0e-2a43-4f7e-8b36-1f0c6a9e2b77";

fn claude_agent(setup: &Setup) -> Agent {
    let agent = setup.start(&["--session-id", ID]);
    agent.wait_for_output("> ");
    agent
}

#[test]
fn a_slow_turn_leaves_the_user_entry_last_until_it_answers() {
    let setup = Setup::new();
    let mut agent = claude_agent(&setup);
    agent.send("slow 1500 take your time");
    agent.wait_for_output("working...");
    let path = setup.claude_transcript(ID);
    let during = read_jsonl(&path);
    let last = during.last().unwrap();
    assert_eq!(last["type"], "user", "the turn is in progress");
    assert_eq!(last["message"]["content"], "slow 1500 take your time");
    assert!(!agent.stdout().contains("answer:"));

    agent.wait_for_output("answer: take your time");
    let after = read_jsonl(&path);
    let last = after.last().unwrap();
    assert_eq!(assistant_text(last), Some("answer: take your time"));
    assert_eq!(last["message"]["stop_reason"], "end_turn");
}

#[test]
fn ask_answers_with_a_question_that_ends_the_turn() {
    let setup = Setup::new();
    let mut agent = claude_agent(&setup);
    agent.send("ask which branch");
    agent.wait_for_output("question: which branch?\n");
    let lines = read_jsonl(&setup.claude_transcript(ID));
    let last = lines.last().unwrap();
    assert_eq!(assistant_text(last), Some("question: which branch?"));
    assert_eq!(last["message"]["stop_reason"], "end_turn");
}

fn tool_use_block(entry: &Value) -> &Value {
    let content = entry["message"]["content"].as_array().unwrap();
    content
        .iter()
        .find(|b| b["type"] == "tool_use")
        .expect("a tool_use block")
}

#[test]
fn an_allowed_permission_records_tool_use_then_tool_result_and_done() {
    let setup = Setup::new();
    let mut agent = claude_agent(&setup);
    agent.send("permission Bash");
    agent.wait_for_output("Do you want to allow Bash?\n❯ 1. Yes\n  2. No\n");
    let path = setup.claude_transcript(ID);
    let asking = read_jsonl(&path);
    let ask = asking.last().unwrap();
    assert_eq!(ask["type"], "assistant");
    assert_eq!(ask["message"]["stop_reason"], "tool_use");
    let tool_use = tool_use_block(ask);
    assert_eq!(tool_use["name"], "Bash");

    agent.send("1");
    agent.wait_for_output("allowed\n");
    let lines = read_jsonl(&path);
    let n = lines.len();
    let result = &lines[n - 2];
    assert_eq!(result["type"], "user");
    assert_eq!(result["message"]["content"][0]["type"], "tool_result");
    assert_eq!(
        result["message"]["content"][0]["tool_use_id"],
        tool_use["id"]
    );
    assert_eq!(result["message"]["content"][0]["is_error"], false);
    assert_eq!(assistant_text(&lines[n - 1]), Some("done"));
    assert_eq!(lines[n - 1]["message"]["stop_reason"], "end_turn");
}

#[test]
fn a_denied_permission_records_an_error_result() {
    let setup = Setup::new();
    let mut agent = claude_agent(&setup);
    agent.send("permission Write");
    agent.wait_for_output("2. No\n");
    agent.send("n");
    agent.wait_for_output("denied\n");
    let lines = read_jsonl(&setup.claude_transcript(ID));
    let n = lines.len();
    assert_eq!(lines[n - 2]["message"]["content"][0]["is_error"], true);
    assert_eq!(assistant_text(&lines[n - 1]), Some("denied"));
}

#[test]
fn codex_permission_records_a_function_call_and_its_output() {
    let setup = Setup::new();
    let mut agent = setup.start(&["--style", "codex"]);
    agent.banner_session_id();
    agent.send("permission shell");
    agent.wait_for_output("2. No\n");
    agent.send("y");
    agent.wait_for_output("allowed\n");
    let files = Setup::files_under(&setup.home.join(".codex/sessions"));
    let lines = read_jsonl(&files[0]);
    let call = lines
        .iter()
        .find(|l| l["payload"]["type"] == "function_call")
        .expect("function_call");
    assert_eq!(call["payload"]["name"], "shell");
    let output = lines
        .iter()
        .find(|l| l["payload"]["type"] == "function_call_output")
        .expect("output");
    assert_eq!(output["payload"]["call_id"], call["payload"]["call_id"]);
    assert_eq!(output["payload"]["output"], "allowed");
    assert_eq!(lines.last().unwrap()["payload"]["type"], "task_complete");
}

/// Field 5 of /proc/<pid>/stat: the process group id.
fn process_group(pid: i32) -> Option<i32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    after_name.split_whitespace().nth(2)?.parse().ok()
}

#[test]
fn spawn_child_starts_a_child_in_the_agents_process_group() {
    let setup = Setup::new();
    let mut agent = claude_agent(&setup);
    agent.send("spawn-child");
    let out = agent.wait_for_output("child: ");
    let pid: i32 = wait_until("the child pid is printed", || {
        let out = agent.stdout();
        let rest = out.split("child: ").nth(1)?;
        rest.split_once('\n')?.0.trim().parse().ok()
    });
    assert!(!out.contains("failed"), "{out}");
    assert_eq!(process_group(pid), Some(agent.pid()));
    assert_eq!(process_group(agent.pid()), Some(agent.pid()));
    // Dropping the agent kills the whole group, the child included.
}

/// Regression: the child inherited the agent's blocked SIGTERM, so a
/// SIGTERM to the group left it running.
#[test]
fn a_sigterm_to_the_group_ends_the_spawned_child_too() {
    let setup = Setup::new();
    let mut agent = claude_agent(&setup);
    agent.send("spawn-child");
    let child: i32 = wait_until("the child pid is printed", || {
        let out = agent.stdout();
        let rest = out.split("child: ").nth(1)?;
        rest.split_once('\n')?.0.trim().parse().ok()
    });
    let status = fs::read_to_string(format!("/proc/{child}/status")).unwrap();
    assert!(status.contains("SigBlk:\t0000000000000000"), "{status}");

    // SAFETY: plain syscall on the group of an agent we have not reaped.
    assert_eq!(unsafe { libc::killpg(agent.pid(), libc::SIGTERM) }, 0);
    assert_eq!(agent.wait_exit().code(), Some(0));
    wait_until("the child is gone", || {
        let stat = fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
        (stat.is_empty() || stat.contains(") Z ")).then_some(())
    });
}

fn resident_mib(pid: i32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        / 1024
}

#[test]
fn alloc_touches_the_memory_so_it_is_resident() {
    let setup = Setup::new();
    let mut agent = claude_agent(&setup);
    let before = resident_mib(agent.pid());
    agent.send("alloc 48");
    agent.wait_for_output("allocated 48\n");
    assert!(resident_mib(agent.pid()) >= before + 48);
}

#[test]
fn the_alloc_knob_makes_the_agent_heavy_from_the_start() {
    let setup = Setup::new();
    let agent = setup.start_with(&["--session-id", ID], &[("FAKE_AGENT_ALLOC_MB", "40")]);
    agent.wait_for_output("> ");
    assert!(resident_mib(agent.pid()) >= 40);
}

#[test]
fn size_reports_the_terminal_size_of_its_pty() {
    let setup = Setup::new();
    let (mut master, slave) = open_pty(100, 30);
    let mut cmd = setup.command(&["--session-id", ID]);
    cmd.stdin(Stdio::from(slave));
    let agent = Agent::spawn(cmd);
    agent.wait_for_output("> ");
    std::io::Write::write_all(&mut master, b"size\n").unwrap();
    agent.wait_for_output("size: 100x30\n");
    let lines = wait_for_lines(
        &setup.claude_transcript(ID),
        "the size answer is recorded",
        |l| l.last().and_then(assistant_text) == Some("size: 100x30"),
    );
    assert_eq!(lines[lines.len() - 2]["message"]["content"], "size");
}

fn open_pty(cols: u16, rows: u16) -> (fs::File, OwnedFd) {
    let (mut master, mut slave) = (-1, -1);
    let ws = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: out pointers are valid; name and termios may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &ws,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: openpty just returned these descriptors and nothing else owns them.
    unsafe {
        (
            fs::File::from(OwnedFd::from_raw_fd(master)),
            OwnedFd::from_raw_fd(slave),
        )
    }
}
