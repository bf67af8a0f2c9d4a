//! Whether stopping a session's process now would cut work it is still
//! doing (issue 46 part 3): a turn that runs (Claude mid-answer, a Codex
//! turn still streaming), or a command the agent started that outlives its
//! turn (Claude Code's background Bash tasks, its subagents' commands). The
//! governor and eviction never stop such a session; `hangar hibernate`
//! refuses, saying what runs, unless `--force`.
//!
//! A command an agent runs is a shell under its process: Claude Code runs
//! each Bash call as `bash -c ...` (its background ones too, which go on
//! after the turn ends), Codex as `bash -lc ...`. The agent's own helpers
//! (its MCP servers, hangar's `hangar mcp` among them) are not shells, and
//! a shell running hangar's own hook (`sh -c '.../hangar hook stop ...'`,
//! which Claude Code runs at each turn's end) is hangar's, not work.

/// One process under a session's process, as `/proc` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeProcess {
    pub pid: u32,
    pub parent: Option<u32>,
    /// Its command line, `argv[0]` first.
    pub argv: Vec<String>,
}

/// Work a session's process is doing now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InFlight {
    /// Its turn runs.
    Turn,
    /// A command it started runs: the shell `pid`, and `command`, what
    /// runs in it (the program under the shell, else the shell's own
    /// command line), shortened.
    Command { pid: u32, command: String },
}

impl InFlight {
    /// Why a stop is refused, for a person.
    pub fn reason(&self) -> String {
        match self {
            InFlight::Turn => "its turn is running".to_owned(),
            InFlight::Command { pid, command } => {
                format!("a command it started is still running: {command} (its shell is pid {pid})")
            }
        }
    }
}

/// The shells agents run their commands in.
const SHELLS: &[&str] = &["bash", "sh", "dash", "zsh", "fish", "ksh"];

/// How much of a command line a reason shows.
const SHOWN_CHARS: usize = 80;

/// What `turn_running` and the processes under the session's own
/// (`descendants`, the session's process itself left out) say is in
/// flight; `None`: nothing, the process may be stopped.
pub fn in_flight(turn_running: bool, descendants: &[TreeProcess]) -> Option<InFlight> {
    if turn_running {
        return Some(InFlight::Turn);
    }
    descendants
        .iter()
        .filter(|p| is_shell(&p.argv))
        .map(|shell| (shell, program_under(shell, descendants).unwrap_or(shell)))
        .find(|(shell, program)| !is_hangars_hook(&shell.argv) && !is_hangars_hook(&program.argv))
        .map(|(shell, program)| InFlight::Command {
            pid: shell.pid,
            command: shown(&program.argv),
        })
}

/// What `shell` runs: the first program under it that is not a shell
/// itself (Claude Code's `bash -c 'source snapshot && eval ...'` runs the
/// command as its child).
fn program_under<'a>(
    shell: &TreeProcess,
    descendants: &'a [TreeProcess],
) -> Option<&'a TreeProcess> {
    let mut below = vec![shell.pid];
    while !below.is_empty() {
        let children: Vec<&TreeProcess> = descendants
            .iter()
            .filter(|p| p.parent.is_some_and(|parent| below.contains(&parent)))
            .collect();
        if let Some(program) = children.iter().find(|p| !is_shell(&p.argv)) {
            return Some(program);
        }
        below = children.iter().map(|p| p.pid).collect();
    }
    None
}

/// hangar's own hook, or a shell running it (`sh -c "HANGAR_HOME='..'
/// '/path/hangar' hook stop --session '..'"`, as the hook settings write
/// it). The command is read as the shell reads it: its words are quoted.
fn is_hangars_hook(argv: &[String]) -> bool {
    match argv {
        [program, next, ..] if calls_hangar_hook(program, next) => true,
        _ => argv.iter().skip(1).any(|arg| runs_hangars_hook(arg, 2)),
    }
}

/// Whether shell text `command` runs `hangar hook`, looking `depth` levels
/// into words that are commands themselves (`eval '...'`).
fn runs_hangars_hook(command: &str, depth: u8) -> bool {
    let words = shlex::split(command).unwrap_or_default();
    words.windows(2).any(|w| calls_hangar_hook(&w[0], &w[1]))
        || (depth > 0
            && words
                .iter()
                .any(|w| w.contains(char::is_whitespace) && runs_hangars_hook(w, depth - 1)))
}

fn calls_hangar_hook(program: &str, next: &str) -> bool {
    program.rsplit('/').next() == Some("hangar") && next == "hook"
}

fn is_shell(argv: &[String]) -> bool {
    argv.first()
        .map(|a| a.rsplit('/').next().unwrap_or(a).trim_start_matches('-'))
        .is_some_and(|name| SHELLS.contains(&name))
}

/// The command line as one line, control characters out (it is the
/// agent's text: DESIGN rule 11), cut to `SHOWN_CHARS`.
fn shown(argv: &[String]) -> String {
    let line: String = argv
        .join(" ")
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match line.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(pid: u32, argv: &[&str]) -> TreeProcess {
        child(pid, 1, argv)
    }

    fn child(pid: u32, parent: u32, argv: &[&str]) -> TreeProcess {
        TreeProcess {
            pid,
            parent: Some(parent),
            argv: argv.iter().map(|a| a.to_string()).collect(),
        }
    }

    #[test]
    fn a_running_turn_is_in_flight_whatever_runs_under_it() {
        assert_eq!(in_flight(true, &[]), Some(InFlight::Turn));
    }

    #[test]
    fn a_shell_under_an_idle_agent_is_a_command_it_started_and_its_helpers_are_not() {
        let helpers = [
            process(11, &["/usr/bin/hangar", "mcp"]),
            process(12, &["node", "/opt/mcp/server.js"]),
        ];
        assert_eq!(in_flight(false, &helpers), None);
        let mut tree = helpers.to_vec();
        tree.push(process(
            13,
            &[
                "/bin/bash",
                "-c",
                "-l",
                "source snapshot && eval 'sleep 300'\n",
            ],
        ));
        tree.push(child(14, 13, &["sleep", "300"]));
        let found = in_flight(false, &tree).unwrap();
        assert_eq!(
            found,
            InFlight::Command {
                pid: 13,
                command: "sleep 300".into()
            }
        );
        assert!(found.reason().contains("sleep 300"), "{}", found.reason());
        assert!(found.reason().contains("pid 13"), "{}", found.reason());
        // A shell running a builtin (nothing under it) is named by its line.
        let InFlight::Command { command, .. } = in_flight(false, &tree[..3]).unwrap() else {
            panic!("a command")
        };
        assert_eq!(
            command,
            "/bin/bash -c -l source snapshot && eval 'sleep 300' "
        );
        assert!(is_shell(&["-bash".to_owned()]), "a login shell's argv[0]");
    }

    #[test]
    fn hangars_own_hook_under_the_agent_is_not_its_work() {
        // Claude Code 2.1.197 runs its Stop hook through a shell as the
        // turn ends (seen in CI: "a command it started is still running:
        // .../hangar hook stop --session ...").
        let tree = [
            process(
                20,
                &[
                    "/bin/sh",
                    "-c",
                    "HANGAR_HOME='/home/a/.hangar' '/usr/local/bin/hangar' hook stop --session '8b9d'",
                ],
            ),
            child(
                21,
                20,
                &["/usr/local/bin/hangar", "hook", "stop", "--session", "8b9d"],
            ),
        ];
        assert_eq!(in_flight(false, &tree), None);
        assert_eq!(
            in_flight(false, &tree[..1]),
            None,
            "before the shell runs it"
        );
        let evaluated = process(
            24,
            &[
                "bash",
                "-c",
                r"source snapshot && eval 'HANGAR_HOME='\''/h'\'' '\''/bin/hangar'\'' hook stop'",
            ],
        );
        assert_eq!(
            in_flight(false, &[evaluated]),
            None,
            "evaluated by the shell"
        );
        let mut with_job = tree.to_vec();
        with_job.push(process(22, &["bash", "-c", "make test"]));
        with_job.push(child(23, 22, &["make", "test"]));
        let InFlight::Command { pid, command } = in_flight(false, &with_job).unwrap() else {
            panic!("a command")
        };
        assert_eq!((pid, command.as_str()), (22, "make test"));
    }

    #[test]
    fn a_long_command_line_is_cut_for_the_reason() {
        let long = "x".repeat(500);
        let found = in_flight(false, &[process(5, &["sh", "-c", &long])]).unwrap();
        let InFlight::Command { command, .. } = found else {
            panic!("a command")
        };
        assert_eq!(command.chars().count(), SHOWN_CHARS + 1);
    }
}
