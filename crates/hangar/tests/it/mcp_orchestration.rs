//! Orchestration over MCP, end to end: a test MCP client (rmcp's own) drives
//! `hangar mcp --session <parent>` over stdio, exactly as an agent's MCP
//! client would, with the token from the MCP config file hangar wrote for
//! the parent. Every step is checked against the processes in /proc.

use crate::support;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use support::mcp::{Mcp, mcp_config, token_of};
use support::{DEADLINE, Hangar, user_entries};

fn fake_count(h: &Hangar) -> usize {
    h.session_agent_pids().len()
}

fn wait_fakes(h: &Hangar, n: usize) {
    h.wait_until(&format!("{n} fake agents run"), DEADLINE, || {
        fake_count(h) == n
    });
}

fn ids_of(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|a| a["id"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn agent<'a>(list: &'a Value, id: &str) -> &'a Value {
    list["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not in {list}"))
}

#[test]
fn agents_are_given_hangar_mcp_with_a_private_config_and_a_checked_token() {
    let h = Hangar::new();
    let parent = h.new_pane();
    let (path, v) = mcp_config(&h, &parent);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let server = &v["mcpServers"]["hangar"];
    assert_eq!(server["args"], json!(["mcp", "--session", parent]));
    assert_eq!(server["env"]["HANGAR_HOME"], h.home.display().to_string());
    let path = path.display().to_string();
    assert_eq!(h.processes_with_flag("--mcp-config", &path).len(), 1);

    let no_mcp = h.new_agent(&["--provider", "claude", "--no-mcp"]);
    h.wait_state(&no_mcp, "live");
    assert!(!h.home.join("mcp").join(format!("{no_mcp}.json")).exists());

    let forged = Mcp::launch_with_token(&h, &parent, "not-the-token");
    assert_eq!(forged.refused("list_agents", json!({})), "unauthorized");
    let other_sessions_token = Mcp::launch_with_token(&h, &no_mcp, &token_of(&h, &parent));
    assert_eq!(
        other_sessions_token.refused("list_agents", json!({})),
        "unauthorized"
    );
}

#[test]
fn an_agent_creates_prompts_waits_for_reads_and_closes_a_run_of_children() {
    let h = Hangar::new();
    let parent = h.new_pane();
    wait_fakes(&h, 1);
    let mcp = Mcp::launch(&h, &parent);
    let tools = mcp.tools();
    for t in [
        "create_agent",
        "send_prompt",
        "list_agents",
        "read_agent",
        "read_run_outputs",
        "wait_agents",
        "close_agent",
        "close_run",
        "park_agent",
        "hibernate_agent",
    ] {
        assert!(tools.iter().any(|n| n == t), "{t} missing from {tools:?}");
    }

    let a = mcp.ok(
        "create_agent",
        json!({"run": "r1", "role": "coder", "prompt": "slow 400 first-a"}),
    );
    assert_eq!(a["prompt_delivered"], true);
    let a = a["id"].as_str().unwrap().to_owned();
    wait_fakes(&h, 2);
    let b = mcp.ok("create_agent", json!({"run": "r1", "role": "tester"}));
    assert_eq!(b["status"], "hibernated", "no prompt, no process: {b}");
    let b = b["id"].as_str().unwrap().to_owned();
    assert_eq!(fake_count(&h), 2);
    let row = h.session(&b);
    assert_eq!(row["placement"], "parked");
    assert_eq!(row["parent"], parent);
    assert_eq!(row["run"], "r1");

    let sent = mcp.ok(
        "send_prompt",
        json!({"session": b, "prompt": "slow 200 second-b"}),
    );
    assert_eq!(sent["woke"], true);
    wait_fakes(&h, 3);

    let waited = mcp.ok("wait_agents", json!({"run": "r1", "timeout_ms": 30000}));
    assert_eq!(waited["all_finished"], true, "{waited}");
    assert_eq!(agent(&waited, &a)["output"], "answer: first-a");
    assert_eq!(agent(&waited, &b)["output"], "answer: second-b");
    assert_eq!(fake_count(&h), 3, "waiting wakes nobody");

    let outputs = mcp.ok("read_run_outputs", json!({"run": "r1"}));
    let outs: Vec<&str> = outputs["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["output"].as_str().unwrap_or(""))
        .collect();
    assert!(outs.contains(&"answer: first-a") && outs.contains(&"answer: second-b"));

    let read = mcp.ok("read_agent", json!({"session": a, "max_messages": 5}));
    let texts: Vec<&str> = read["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(texts, vec!["slow 400 first-a", "answer: first-a"]);

    let listed = mcp.ok("list_agents", json!({"run": "r1"}));
    assert_eq!(listed["agents"].as_array().unwrap().len(), 2);
    assert_eq!(agent(&listed, &a)["status"], "live");

    let closed = mcp.ok("close_run", json!({"run": "r1"}));
    let mut got = closed["closed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect::<Vec<_>>();
    got.sort();
    let mut want = vec![a.clone(), b.clone()];
    want.sort();
    assert_eq!(got, want);
    assert_eq!(closed["skipped"], json!([]));
    wait_fakes(&h, 1);
    assert_eq!(ids_of(&Value::Array(h.ls())), vec![parent.clone()]);
    let listed = mcp.ok("list_agents", json!({}));
    assert_eq!(agent(&listed, &a)["status"], "closed");
    assert_eq!(agent(&listed, &b)["status"], "closed");
}

#[test]
fn send_prompt_wakes_a_hibernated_child_with_its_provider_session_id() {
    let h = Hangar::new();
    let parent = h.new_pane();
    let mcp = Mcp::launch(&h, &parent);
    let child = mcp.ok("create_agent", json!({"prompt": "hello"}));
    let child = child["id"].as_str().unwrap().to_owned();
    mcp.ok(
        "wait_agents",
        json!({"sessions": [child], "timeout_ms": 30000}),
    );
    wait_fakes(&h, 2);
    let hib = mcp.ok("hibernate_agent", json!({"session": child}));
    assert_eq!(hib["status"], "hibernated");
    wait_fakes(&h, 1);
    let listed = mcp.ok("list_agents", json!({}));
    let row = agent(&listed, &child);
    assert_eq!(row["status"], "hibernated");
    let psid = row["provider_session_id"].as_str().unwrap().to_owned();

    let sent = mcp.ok("send_prompt", json!({"session": child, "prompt": "again"}));
    assert_eq!(sent["woke"], true);
    assert_eq!(sent["started"], "resumed");
    wait_fakes(&h, 2);
    assert_eq!(h.processes_with_flag("--resume", &psid).len(), 1);
    let waited = mcp.ok(
        "wait_agents",
        json!({"sessions": [child], "timeout_ms": 30000}),
    );
    assert_eq!(agent(&waited, &child)["output"], "answer: again");
}

#[test]
fn self_close_another_parents_child_and_a_cascading_close_are_refused_with_distinct_codes() {
    let h = Hangar::new();
    let p1 = h.new_pane();
    let p2 = h.new_pane();
    let m1 = Mcp::launch(&h, &p1);
    let m2 = Mcp::launch(&h, &p2);

    assert_eq!(
        m1.refused("close_agent", json!({"session": p1})),
        "self_close"
    );

    let theirs = m2.ok("create_agent", json!({}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        m1.refused("close_agent", json!({"session": theirs})),
        "not_your_agent"
    );
    assert_eq!(
        m1.refused("close_agent", json!({"session": p2})),
        "not_your_agent"
    );
    assert_eq!(
        m1.refused("send_prompt", json!({"session": theirs, "prompt": "x"})),
        "not_your_agent"
    );

    // A child with a child of its own: closing only the child would cascade.
    let child = m1.ok("create_agent", json!({"prompt": "hi"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mc = Mcp::launch(&h, &child);
    let grandchild = mc.ok("create_agent", json!({}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = fake_count(&h);
    match m1.call("close_agent", json!({"session": child})) {
        Err((code, text)) => {
            assert_eq!(code, "cascade_refused");
            assert!(text.contains(&grandchild), "{text}");
        }
        Ok(v) => panic!("a cascading close went through: {v}"),
    }
    assert_eq!(fake_count(&h), before, "a refused close stops nothing");
    assert_eq!(h.state_of(&child), "live");
    // The grandchild is p1's descendant too: naming it first is allowed.
    assert_eq!(
        mc.refused("close_agent", json!({"session": child})),
        "self_close"
    );
    m1.ok("close_agent", json!({"session": grandchild}));
    m1.ok("close_agent", json!({"session": child}));
    wait_fakes(&h, 2);

    // Another project tab is invisible, even for a known id.
    h.ok(&["tab", "new", "elsewhere"]);
    let far = h.new_pane();
    assert_eq!(
        m1.refused("close_agent", json!({"session": far})),
        "not_your_agent"
    );
    assert_eq!(
        m1.refused("close_agent", json!({"session": "nope"})),
        "not_found"
    );

    let journal = std::fs::read_to_string(h.home.join("journal.jsonl")).unwrap();
    assert!(journal.contains(r#""event":"agent-action""#), "{journal}");
    assert!(journal.contains(r#""code":"cascade_refused""#));
    assert!(
        !journal.contains(&token_of(&h, &p1)),
        "the journal never holds a token"
    );
}

#[test]
fn closing_the_parent_reaps_its_children_and_list_agents_reports_tombstones() {
    let h = Hangar::new();
    let root = h.new_pane();
    let mr = Mcp::launch(&h, &root);
    let parent = mr.ok("create_agent", json!({"prompt": "hi", "run": "top"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mp = Mcp::launch(&h, &parent);
    let kids: Vec<String> = (0..2)
        .map(|i| {
            mp.ok(
                "create_agent",
                json!({"prompt": format!("kid {i}"), "run": "kids"}),
            )["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    wait_fakes(&h, 4);
    let pids: Vec<i32> = kids.iter().map(|k| h.pid_of(k)).collect();

    h.ok(&["close", &parent, "--yes"]);
    wait_fakes(&h, 1);
    for pid in pids {
        assert!(!support::is_running(pid), "child {pid} was reaped");
    }
    let check = |m: &Mcp| {
        let listed = m.ok("list_agents", json!({}));
        for id in kids.iter().chain([&parent]) {
            assert_eq!(agent(&listed, id)["status"], "closed", "{listed}");
        }
        assert_eq!(
            m.ok("list_agents", json!({"run": "kids"}))["agents"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    };
    check(&mr);
    drop(mr);
    drop(mp);

    // Tombstones survive a daemon restart (the root gets a fresh token).
    h.shutdown();
    h.start_daemon();
    h.wait_state(&root, "live");
    let mr = Mcp::launch(&h, &root);
    check(&mr);
    // A closed child's transcript can still be read.
    let read = mr.ok("read_agent", json!({"session": kids[0]}));
    assert_eq!(read["status"], "closed");
    assert_eq!(read["messages"][1]["text"], "answer: kid 0");
}

#[test]
fn the_first_prompt_is_delivered_exactly_once_across_a_daemon_restart() {
    let h = Hangar::new();
    let root = h.new_pane();
    let m = Mcp::launch(&h, &root);
    let child = m.ok("create_agent", json!({"prompt": "only-once"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    m.ok(
        "wait_agents",
        json!({"sessions": [child], "timeout_ms": 30000}),
    );
    let psid = agent(&m.ok("list_agents", json!({})), &child)["provider_session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let transcript = h.claude_transcript(&h.work, &psid);
    assert_eq!(user_entries(&transcript, "only-once"), 1);
    let ledger = std::fs::read_to_string(h.home.join("orchestration.json")).unwrap();
    assert!(
        !ledger.contains("only-once"),
        "a delivered prompt's text is dropped"
    );
    drop(m);

    h.shutdown();
    assert_eq!(fake_count(&h), 0);
    h.start_daemon();
    h.wait_state(&root, "live");
    wait_fakes(&h, 1);
    let m = Mcp::launch(&h, &root);
    let sent = m.ok(
        "send_prompt",
        json!({"session": child, "prompt": "after-restart"}),
    );
    assert_eq!(sent["first_prompt_delivered"], false);
    assert_eq!(sent["started"], "resumed");
    let waited = m.ok(
        "wait_agents",
        json!({"sessions": [child], "timeout_ms": 30000}),
    );
    assert_eq!(agent(&waited, &child)["output"], "answer: after-restart");
    assert_eq!(user_entries(&transcript, "only-once"), 1);
    assert_eq!(user_entries(&transcript, "after-restart"), 1);
}

#[test]
fn hibernating_a_parent_hibernates_its_idle_children_but_never_a_busy_one() {
    let h = Hangar::new();
    let root = h.new_pane();
    let m = Mcp::launch(&h, &root);
    let idle = m.ok("create_agent", json!({"prompt": "quick"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    m.ok(
        "wait_agents",
        json!({"sessions": [idle], "timeout_ms": 30000}),
    );
    let busy = m.ok("create_agent", json!({"prompt": "slow 60000 long job"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    h.wait_until("the busy child is working", DEADLINE, || {
        agent(&m.ok("list_agents", json!({})), &busy)["status"] == "working"
    });
    wait_fakes(&h, 3);
    drop(m);

    let out = h.json(&["hibernate", &root]);
    assert_eq!(out["also_hibernated"], json!([idle]));
    wait_fakes(&h, 1);
    assert_eq!(h.state_of(&idle), "hibernated");
    assert_eq!(h.state_of(&busy), "live");
}

/// The value of `name` in a process's environment.
fn env_value(pid: i32, name: &str) -> Option<String> {
    let prefix = format!("{name}=");
    support::environ(pid)
        .into_iter()
        .find_map(|e| e.strip_prefix(&prefix).map(str::to_owned))
}

/// The value of a codex `-c key=value` override on a command line.
fn codex_override(args: &[String], key: &str) -> Option<String> {
    let prefix = format!("{key}=");
    args.windows(2)
        .filter(|w| w[0] == "-c")
        .find_map(|w| w[1].strip_prefix(&prefix).map(str::to_owned))
}

#[test]
fn codex_gets_hangar_mcp_by_config_overrides_and_no_agent_shows_its_token_on_its_command_line() {
    let h = Hangar::new();
    let codex = h.new_agent(&["--provider", "codex"]);
    let claude = h.new_pane();
    wait_fakes(&h, 2);
    let pid = h.pid_of(&codex);
    let args = support::cmdline(pid);

    // Regression: the token used to ride on codex's command line
    // (`-c mcp_servers.hangar.env={HANGAR_MCP_TOKEN = ...}`), readable by
    // every local user in /proc/PID/cmdline.
    for (id, agent_pid) in [(&codex, pid), (&claude, h.pid_of(&claude))] {
        let token = token_of(&h, id);
        let line = support::cmdline(agent_pid).join(" ");
        assert!(
            !line.contains(&token),
            "{id}'s token is on its command line: {line}"
        );
        assert!(!line.contains("HANGAR_MCP_TOKEN ="), "{line}");
    }

    // What codex needs to start the server, the way its config reads it.
    let value = |key: &str| -> toml::Value {
        let raw = codex_override(&args, key).unwrap_or_else(|| panic!("no -c {key} in {args:?}"));
        toml::from_str::<toml::Table>(&format!("v = {raw}")).unwrap()["v"].clone()
    };
    let command = value("mcp_servers.hangar.command");
    assert!(command.as_str().unwrap().ends_with("hangar"), "{command}");
    let server_args: Vec<String> = value("mcp_servers.hangar.args")
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(server_args, vec!["mcp", "--session", codex.as_str()]);
    let forwarded: Vec<String> = value("mcp_servers.hangar.env_vars")
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert!(
        forwarded.contains(&"HANGAR_MCP_TOKEN".to_owned()),
        "{forwarded:?}"
    );
    assert!(codex_override(&args, "mcp_servers.hangar.env").is_none());

    // Codex's own environment holds the token (readable by its owner only),
    // and a server started the way codex starts it, with the forwarded
    // variables, is let in.
    let token = env_value(pid, "HANGAR_MCP_TOKEN").expect("codex's environment has the token");
    assert_eq!(token, token_of(&h, &codex));
    let mut cmd = std::process::Command::new(command.as_str().unwrap());
    cmd.args(&server_args).env_clear();
    for name in ["PATH", "HOME"]
        .iter()
        .copied()
        .chain(forwarded.iter().map(String::as_str))
    {
        if let Some(v) = env_value(pid, name) {
            cmd.env(name, v);
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let m = Mcp {
        client: Some(rt.block_on(async {
            let transport = TokioChildProcess::new(tokio::process::Command::from(cmd)).unwrap();
            ().serve(transport).await.expect("MCP handshake")
        })),
        rt,
    };
    let list = m.ok("list_agents", json!({}));
    assert!(ids_of(&list["agents"]).is_empty(), "{list}");
}

#[test]
fn opencode_gets_hangar_mcp_in_its_config_variable_and_a_server_started_from_it_is_let_in() {
    let h = Hangar::new();
    let opencode = h.new_agent(&["--provider", "opencode"]);
    wait_fakes(&h, 1);
    let pid = h.pid_of(&opencode);
    let token = token_of(&h, &opencode);
    let line = support::cmdline(pid).join(" ");
    assert!(
        !line.contains(&token),
        "the token is on its command line: {line}"
    );
    // OpenCode 1.18.33 merges the document in OPENCODE_CONFIG_CONTENT over
    // its config files; a local MCP server there is its `McpLocalConfig`.
    let content = env_value(pid, "OPENCODE_CONFIG_CONTENT").expect("OPENCODE_CONFIG_CONTENT");
    let doc: Value = serde_json::from_str(&content).unwrap();
    let server = &doc["mcp"]["hangar"];
    assert_eq!(server["type"], "local", "{doc}");
    assert_eq!(server["enabled"], true, "{doc}");
    let command: Vec<String> = server["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert!(command[0].ends_with("hangar"), "{command:?}");
    assert_eq!(command[1..], ["mcp", "--session", opencode.as_str()]);
    assert_eq!(server["environment"]["HANGAR_MCP_TOKEN"], token.as_str());
    // A server started the way OpenCode starts it (the command, with its
    // `environment` over OpenCode's own) is let in.
    let mut cmd = std::process::Command::new(&command[0]);
    cmd.args(&command[1..]).env_clear();
    for name in ["PATH", "HOME"] {
        if let Some(v) = env_value(pid, name) {
            cmd.env(name, v);
        }
    }
    for (k, v) in server["environment"].as_object().unwrap() {
        cmd.env(k, v.as_str().unwrap());
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let m = Mcp {
        client: Some(rt.block_on(async {
            let transport = TokioChildProcess::new(tokio::process::Command::from(cmd)).unwrap();
            ().serve(transport).await.expect("MCP handshake")
        })),
        rt,
    };
    let list = m.ok("list_agents", json!({}));
    assert!(ids_of(&list["agents"]).is_empty(), "{list}");
}

#[test]
fn with_mcp_disabled_in_config_agents_get_no_mcp_server_and_no_token() {
    let h = Hangar::new();
    std::fs::create_dir_all(&h.home).unwrap();
    std::fs::write(h.home.join("config.toml"), "[mcp]\nenabled = false\n").unwrap();
    let claude = h.new_pane();
    let codex = h.new_agent(&["--provider", "codex"]);
    wait_fakes(&h, 2);
    for id in [&claude, &codex] {
        let pid = h.pid_of(id);
        let line = support::cmdline(pid).join(" ");
        assert!(!line.contains("--mcp-config"), "{line}");
        assert!(!line.contains("mcp_servers"), "{line}");
        assert_eq!(env_value(pid, "HANGAR_MCP_TOKEN"), None);
        assert!(!h.home.join("mcp").join(format!("{id}.json")).exists());
    }
    // With no token minted, no token opens the server.
    let m = Mcp::launch_with_token(&h, &claude, "any-guess");
    assert_eq!(m.refused("list_agents", json!({})), "unauthorized");
}

#[test]
fn invalid_and_oversize_tool_inputs_are_refused_with_a_clear_error_and_the_daemon_stays_up() {
    let h = Hangar::new();
    let parent = h.new_pane();
    wait_fakes(&h, 1);
    let daemon = h.daemon_pid();
    let m = Mcp::launch(&h, &parent);
    let refused = |name: &'static str, args: Value, says: &str| match m.call(name, args.clone()) {
        Ok(v) => panic!("{name}({args}) should have been refused, got {v}"),
        Err((code, text)) => {
            assert_eq!(code, "invalid", "{name}: {text}");
            assert!(text.contains(says), "{name}: {text:?} should say {says:?}");
        }
    };
    let big = "x".repeat(64 * 1024 + 1);
    refused("create_agent", json!({"prompt": big}), "limit is 65536");
    refused(
        "create_agent",
        json!({"title": "t".repeat(201)}),
        "title is longer than 200",
    );
    refused(
        "create_agent",
        json!({"role": "r\u{7}"}),
        "control characters",
    );
    refused(
        "create_agent",
        json!({"title": "fix\u{202e}gnp.exe"}),
        "bidi controls",
    );
    refused("create_agent", json!({"run": "no spaces allowed"}), "run ");
    refused(
        "send_prompt",
        json!({"session": "", "prompt": "hi"}),
        "session id",
    );
    refused(
        "send_prompt",
        json!({"session": "s".repeat(129), "prompt": "hi"}),
        "session id",
    );

    // A wrong type is refused before it reaches the daemon (see
    // a_tool_argument_of_the_wrong_type_is_refused_naming_the_tool_and_the_field).
    let client = m.client.as_ref().unwrap();
    let params = CallToolRequestParams::new("send_prompt").with_arguments(
        json!({"session": parent, "prompt": 42})
            .as_object()
            .cloned()
            .unwrap(),
    );
    match m.rt.block_on(client.call_tool(params)) {
        Err(e) => assert!(e.to_string().contains("expected a string"), "{e}"),
        Ok(r) => {
            assert_eq!(r.is_error, Some(true), "{r:?}");
            assert!(
                format!("{:?}", r.content).contains("expected a string"),
                "{r:?}"
            );
        }
    }

    // A prompt of several megabytes: refused, and nothing else breaks.
    let huge = "y".repeat(8 * 1024 * 1024);
    match m.call("create_agent", json!({"prompt": huge})) {
        Ok(v) => panic!("an 8 MiB prompt was accepted: {v}"),
        Err((code, text)) => {
            assert_eq!(code, "too_large", "{text}");
            assert!(text.contains("exceeds the limit"), "{text}");
        }
    }

    // Nothing was created, the same daemon answers, and this server still works.
    assert_eq!(h.daemon_pid(), daemon);
    assert!(ids_of(&m.ok("list_agents", json!({}))["agents"]).is_empty());
    assert_eq!(fake_count(&h), 1);
    assert_eq!(h.ls().len(), 1);
}

#[test]
fn a_tool_argument_of_the_wrong_type_is_refused_naming_the_tool_and_the_field() {
    let h = Hangar::new();
    let parent = h.new_pane();
    wait_fakes(&h, 1);
    let daemon = h.daemon_pid();
    let m = Mcp::launch(&h, &parent);
    let client = m.client.as_ref().unwrap();
    // The refusal, whether it comes as a protocol error or a tool error.
    let refusal = |name: &'static str, args: Value| -> String {
        let params = CallToolRequestParams::new(name)
            .with_arguments(args.as_object().cloned().unwrap_or_default());
        match m.rt.block_on(client.call_tool(params)) {
            Err(e) => e.to_string(),
            Ok(r) => {
                assert_eq!(r.is_error, Some(true), "{name}({args}) was accepted: {r:?}");
                format!("{:?}", r.content)
            }
        }
    };
    let cases = [
        (
            "send_prompt",
            json!({"session": parent, "prompt": 42}),
            "send_prompt: argument prompt: invalid type: integer `42`, expected a string",
        ),
        (
            "create_agent",
            json!({"title": ["a list"]}),
            "create_agent: argument title: invalid type: sequence, expected a string",
        ),
        (
            "wait_agents",
            json!({"sessions": [parent, 7]}),
            "wait_agents: argument sessions[1]: invalid type: integer `7`, expected a string",
        ),
        (
            "read_agent",
            json!({"session": parent, "max_messages": "ten"}),
            "read_agent: argument max_messages: invalid type: string \"ten\"",
        ),
        (
            "close_agent",
            json!({"id": parent}),
            "close_agent: missing field `session`",
        ),
    ];
    for (name, args, says) in cases {
        let text = refusal(name, args.clone());
        assert!(
            text.contains(says),
            "{name}({args}): {text:?} should say {says:?}"
        );
    }
    // Nothing reached the daemon: no agent was created or closed, and the
    // same daemon and server still answer.
    assert_eq!(h.daemon_pid(), daemon);
    assert!(ids_of(&m.ok("list_agents", json!({}))["agents"]).is_empty());
    assert_eq!(fake_count(&h), 1);
    assert_eq!(h.ls().len(), 1);
}
