//! A made-up machine for unit tests: a clock that moves only when the test
//! advances it, processes the test declares, and a scripted terminal program
//! ([`FakeProgram`]) in place of every program the daemon starts. It records
//! every signal sent and every program started, so a test can say which
//! groups were ended and what was launched how.
//!
//! Never used by the running daemon.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream, WriteHalf};
use tokio::sync::{Notify, mpsc, watch};

use super::{Clock, FakeGit, Git, ProcessControl, ProcessMemory};
use crate::pty::{ExitCode, Pty, SpawnRequest, Spawned, TerminalInput};

/// A made-up process: its group, start time, parent, resident memory and
/// environment.
#[derive(Clone, Debug, Default)]
struct FakeProcess {
    pgid: u32,
    start_time: u64,
    parent: Option<u32>,
    memory: ProcessMemory,
    env: Vec<String>,
    argv: Vec<String>,
    open_files: Vec<PathBuf>,
}

/// What a started program does, scripted by the test. The default prints
/// `ready` and runs until a signal ends it.
#[derive(Clone, Debug)]
pub struct FakeProgram {
    /// What it prints as soon as it runs (or once released, when `held`).
    pub prints: Vec<u8>,
    /// It exits with this code right after printing.
    pub exits_with: Option<ExitCode>,
    /// It cannot be started at all: the spawn fails with this error.
    pub fails_to_start: Option<String>,
    /// It prints nothing until the test calls [`FakeOs::release`] (a slow
    /// boot), unless a signal ends it first.
    pub held: bool,
    /// It echoes what is typed into it, as a terminal with echo on does.
    pub echoes: bool,
    /// SIGTERM and SIGHUP do not end it; only SIGKILL does.
    pub ignores_term: bool,
    /// With `echoes`, it keeps what is typed on its last line as an
    /// agent's input box does, and an Enter takes the line (erases it),
    /// except the first this many Enters, which it loses as a freshly drawn
    /// claude sometimes does (docs/src/cli-facts.md). `None`: an Enter is
    /// echoed as any other byte.
    pub input_box_loses_enters: Option<usize>,
    /// With an input box: what it draws under the line for an Enter it
    /// takes, the line itself kept (the prompt echoed into the
    /// conversation, a question under it). Empty: the line is erased.
    pub input_box_answer: Vec<u8>,
}

impl Default for FakeProgram {
    fn default() -> Self {
        FakeProgram {
            prints: b"ready\r\n".to_vec(),
            exits_with: None,
            fails_to_start: None,
            held: false,
            echoes: false,
            ignores_term: false,
            input_box_loses_enters: None,
            input_box_answer: Vec::new(),
        }
    }
}

/// One program the daemon started on the fake machine.
#[derive(Clone, Debug)]
pub struct FakeSpawn {
    pub pid: u32,
    /// Its `HANGAR_SESSION_ID`.
    pub session: Option<String>,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
}

/// A program that runs: how to end it and how to let it print.
struct Running {
    exit: watch::Sender<Option<ExitCode>>,
    release: Arc<Notify>,
    ignores_term: bool,
    /// SIGTERM and SIGHUP, which the program takes in its own time (as a
    /// real one does: the signals after it still find its group).
    terminate: mpsc::UnboundedSender<i32>,
}

#[derive(Default)]
struct Machine {
    processes: HashMap<u32, FakeProcess>,
    signals: Vec<(u32, i32)>,
    programs: HashMap<String, FakeProgram>,
    default_program: FakeProgram,
    spawns: Vec<FakeSpawn>,
    running: HashMap<u32, Running>,
    /// Every byte typed into each started program.
    typed: HashMap<u32, Vec<u8>>,
    next_pid: u32,
    memory_reads: u64,
}

impl Machine {
    /// Signal group `pgid` (see [`ProcessControl::signal_group`]). SIGKILL
    /// ends every process of the group at once; SIGTERM and SIGHUP end a
    /// started program that does not ignore them, once it has run.
    fn signal_group(&mut self, pgid: u32, signal: i32) -> bool {
        if pgid <= 1 {
            return false;
        }
        let exists = self.processes.values().any(|p| p.pgid == pgid);
        if exists && signal != 0 {
            self.signals.push((pgid, signal));
            if signal == libc::SIGKILL {
                self.end_group(pgid, 128 + signal);
            } else if matches!(signal, libc::SIGTERM | libc::SIGHUP)
                && let Some(r) = self.running.get(&pgid).filter(|r| !r.ignores_term)
            {
                // A program whose task is gone has ended already.
                let _ = r.terminate.send(signal);
            }
        }
        exists
    }

    fn end_group(&mut self, pgid: u32, code: ExitCode) {
        self.processes.retain(|_, p| p.pgid != pgid);
        if let Some(r) = self.running.remove(&pgid) {
            r.exit.send_replace(Some(code));
        }
    }
}

/// The fake OS. Its clocks start at an arbitrary fixed instant.
pub struct FakeOs {
    now: AtomicU64,
    wall: AtomicU64,
    machine: Arc<Mutex<Machine>>,
    git: FakeGit,
}

impl std::fmt::Debug for FakeOs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeOs")
            .field("now", &self.now)
            .field("wall", &self.wall)
            .finish_non_exhaustive()
    }
}

/// 2026-01-01T00:00:00Z: far from zero, so an age subtracted from it never
/// saturates by accident.
const START_MS: u64 = 1_767_225_600_000;

/// Pids of started programs count up from here (clear of the small numbers
/// tests give the processes they declare).
const FIRST_PID: u32 = 40_000;

fn lock(machine: &Mutex<Machine>) -> MutexGuard<'_, Machine> {
    // Plain maps, consistent between statements: keep going after a panic.
    machine.lock().unwrap_or_else(|p| p.into_inner())
}

impl Default for FakeOs {
    fn default() -> Self {
        FakeOs {
            now: AtomicU64::new(START_MS),
            wall: AtomicU64::new(START_MS),
            machine: Arc::new(Mutex::new(Machine {
                next_pid: FIRST_PID,
                ..Machine::default()
            })),
            git: FakeGit::default(),
        }
    }
}

impl FakeOs {
    /// The scripted git every git command goes to: script its answers
    /// (`FakeGit::answer`), read back what was run (`FakeGit::calls`).
    pub fn git(&self) -> &FakeGit {
        &self.git
    }

    /// Move both clocks forward by `by`.
    pub fn advance(&self, by: Duration) {
        let ms = by.as_millis() as u64;
        self.now.fetch_add(ms, Ordering::SeqCst);
        self.wall.fetch_add(ms, Ordering::SeqCst);
    }

    /// Step only the wall clock (an NTP correction, a person changing the
    /// date): the daemon's clock does not follow.
    pub fn step_wall_clock(&self, to_ms: u64) {
        self.wall.store(to_ms, Ordering::SeqCst);
    }

    /// A process `pid` in group `pgid`, started at `start_time` ticks.
    pub fn spawn(&self, pid: u32, pgid: u32, start_time: u64) {
        self.machine().processes.insert(
            pid,
            FakeProcess {
                pgid,
                start_time,
                ..FakeProcess::default()
            },
        );
    }

    /// Process `pid`'s parent and memory, none of it shared (it must
    /// exist).
    pub fn set_process(&self, pid: u32, parent: Option<u32>, resident_bytes: u64) {
        if let Some(p) = self.machine().processes.get_mut(&pid) {
            p.parent = parent;
            p.memory = ProcessMemory {
                proportional: resident_bytes,
                resident: resident_bytes,
            };
        }
    }

    /// Process `pid` holds `proportional` bytes as its share and `resident`
    /// with every shared page counted whole (it must exist): a started
    /// program grows as its turn runs.
    pub fn set_memory(&self, pid: u32, proportional: u64, resident: u64) {
        if let Some(p) = self.machine().processes.get_mut(&pid) {
            p.memory = ProcessMemory {
                proportional,
                resident,
            };
        }
    }

    /// How many times a process's memory was read (the governor reads
    /// only every few seconds).
    pub fn memory_reads(&self) -> u64 {
        self.machine().memory_reads
    }

    /// Process `pid`'s environment (it must exist).
    /// Process `pid`'s command line (it must exist).
    pub fn set_cmdline(&self, pid: u32, argv: &[&str]) {
        if let Some(p) = self.machine().processes.get_mut(&pid) {
            p.argv = argv.iter().map(|s| s.to_string()).collect();
        }
    }

    pub fn set_environ(&self, pid: u32, env: &[&str]) {
        if let Some(p) = self.machine().processes.get_mut(&pid) {
            p.env = env.iter().map(|s| s.to_string()).collect();
        }
    }

    /// Process `pid` holds `files` open (it must exist).
    pub fn set_open_files(&self, pid: u32, files: &[&str]) {
        if let Some(p) = self.machine().processes.get_mut(&pid) {
            p.open_files = files.iter().map(PathBuf::from).collect();
        }
    }

    /// Every process of group `pgid` ends.
    pub fn end_group(&self, pgid: u32) {
        self.machine().end_group(pgid, 128 + libc::SIGKILL);
    }

    /// Every (group, signal) sent so far, in order; signal 0 (the existence
    /// probe) is not recorded.
    pub fn signals_sent(&self) -> Vec<(u32, i32)> {
        self.machine().signals.clone()
    }

    /// What the program started for session `session` does (the default
    /// program for every session not named here: [`FakeOs::script_default`]).
    pub fn script(&self, session: &str, program: FakeProgram) {
        self.machine().programs.insert(session.to_owned(), program);
    }

    /// What every program not scripted by session does.
    pub fn script_default(&self, program: FakeProgram) {
        self.machine().default_program = program;
    }

    /// Every program started so far, in order.
    pub fn spawned(&self) -> Vec<FakeSpawn> {
        self.machine().spawns.clone()
    }

    /// The started programs still running.
    pub fn running(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self.machine().running.keys().copied().collect();
        pids.sort();
        pids
    }

    /// Every byte typed into program `pid` so far.
    pub fn typed(&self, pid: u32) -> Vec<u8> {
        self.machine().typed.get(&pid).cloned().unwrap_or_default()
    }

    /// Let the held program `pid` print (see [`FakeProgram::held`]).
    pub fn release(&self, pid: u32) {
        if let Some(r) = self.machine().running.get(&pid) {
            r.release.notify_one();
        }
    }

    /// Program `pid` exits by itself with `code`.
    pub fn exit(&self, pid: u32, code: ExitCode) {
        self.machine().end_group(pid, code);
    }

    fn machine(&self) -> MutexGuard<'_, Machine> {
        lock(&self.machine)
    }
}

impl ProcessControl for FakeOs {
    fn signal_group(&self, pgid: u32, signal: i32) -> bool {
        self.machine().signal_group(pgid, signal)
    }

    fn start_time(&self, pid: u32) -> Option<u64> {
        self.machine().processes.get(&pid).map(|p| p.start_time)
    }

    fn process_tree(&self, pid: u32) -> Vec<u32> {
        let machine = self.machine();
        let procs = &machine.processes;
        if pid == 0 || !procs.contains_key(&pid) {
            return Vec::new();
        }
        let mut tree = vec![pid];
        let mut i = 0;
        while i < tree.len() {
            let parent = tree[i];
            let mut children: Vec<u32> = procs
                .iter()
                .filter(|(c, p)| p.parent == Some(parent) && !tree.contains(c))
                .map(|(c, _)| *c)
                .collect();
            children.sort();
            tree.extend(children);
            i += 1;
        }
        tree
    }

    fn memory(&self, pid: u32) -> Option<ProcessMemory> {
        let mut machine = self.machine();
        machine.memory_reads += 1;
        machine.processes.get(&pid).map(|p| p.memory)
    }

    fn signal_process(&self, pid: u32, signal: i32) -> bool {
        let mut machine = self.machine();
        let exists = machine.processes.contains_key(&pid);
        if exists && signal == libc::SIGKILL {
            machine.processes.remove(&pid);
        }
        exists
    }

    fn pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self.machine().processes.keys().copied().collect();
        pids.sort();
        pids
    }

    fn environ(&self, pid: u32) -> Vec<String> {
        self.machine()
            .processes
            .get(&pid)
            .map(|p| p.env.clone())
            .unwrap_or_default()
    }

    fn cmdline(&self, pid: u32) -> Vec<String> {
        self.machine()
            .processes
            .get(&pid)
            .map(|p| p.argv.clone())
            .unwrap_or_default()
    }

    fn parent_of(&self, pid: u32) -> Option<u32> {
        self.machine().processes.get(&pid)?.parent
    }

    fn group_of(&self, pid: u32) -> Option<u32> {
        self.machine().processes.get(&pid).map(|p| p.pgid)
    }

    fn open_files_under(&self, pid: u32, root: &std::path::Path) -> BTreeSet<PathBuf> {
        let tree = self.process_tree(pid);
        let machine = self.machine();
        tree.iter()
            .filter_map(|p| machine.processes.get(p))
            .flat_map(|p| p.open_files.iter())
            .filter(|f| f.starts_with(root))
            .cloned()
            .collect()
    }
}

impl Git for FakeOs {
    fn run_git(
        &self,
        dir: &std::path::Path,
        args: &[std::ffi::OsString],
        env: &[(&str, &std::ffi::OsStr)],
        stdin: Option<&[u8]>,
    ) -> std::io::Result<super::GitOutput> {
        self.git.run_git(dir, args, env, stdin)
    }
}

impl Clock for FakeOs {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
    fn wall_ms(&self) -> u64 {
        self.wall.load(Ordering::SeqCst)
    }
}

/// The daemon's side of a fake program's terminal: what is typed goes to the
/// program; a resize is only remembered.
struct FakeInput {
    to_program: WriteHalf<DuplexStream>,
}

impl AsyncWrite for FakeInput {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.to_program).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.to_program).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.to_program).poll_shutdown(cx)
    }
}

impl TerminalInput for FakeInput {
    fn resize(&self, _rows: u16, _cols: u16) -> std::io::Result<()> {
        Ok(())
    }
}

impl Pty for FakeOs {
    fn spawn_pty(&self, req: &SpawnRequest) -> std::io::Result<Spawned> {
        let session = req
            .env
            .iter()
            .find(|(k, _)| k == "HANGAR_SESSION_ID")
            .map(|(_, v)| v.clone());
        let (pid, program, exit_rx, release, terminated) = {
            let mut machine = self.machine();
            let program = session
                .as_ref()
                .and_then(|s| machine.programs.get(s))
                .unwrap_or(&machine.default_program)
                .clone();
            if let Some(e) = &program.fails_to_start {
                return Err(std::io::Error::other(e.clone()));
            }
            let pid = machine.next_pid;
            machine.next_pid += 1;
            machine.spawns.push(FakeSpawn {
                pid,
                session: session.clone(),
                program: req.program.clone(),
                args: req.args.clone(),
                cwd: req.cwd.clone(),
                env: req.env.clone(),
            });
            machine.processes.insert(
                pid,
                FakeProcess {
                    pgid: pid,
                    start_time: u64::from(pid),
                    env: req.env.iter().map(|(k, v)| format!("{k}={v}")).collect(),
                    ..FakeProcess::default()
                },
            );
            let (exit, exit_rx) = watch::channel(None);
            let release = Arc::new(Notify::new());
            let (terminate, terminated) = mpsc::unbounded_channel();
            machine.running.insert(
                pid,
                Running {
                    exit,
                    release: release.clone(),
                    ignores_term: program.ignores_term,
                    terminate,
                },
            );
            (pid, program, exit_rx, release, terminated)
        };
        let (daemon_end, program_end) = tokio::io::duplex(64 * 1024);
        let (output, to_program) = tokio::io::split(daemon_end);
        tokio::spawn(run_program(
            pid,
            program,
            program_end,
            exit_rx.clone(),
            release,
            terminated,
            self.machine.clone(),
        ));
        let machine = self.machine.clone();
        let mut exit_rx = exit_rx;
        Ok(Spawned {
            pid,
            output: Box::new(output),
            input: Box::new(FakeInput { to_program }),
            signal: Box::new(move |signal| lock(&machine).signal_group(pid, signal)),
            exit: Box::pin(async move {
                match exit_rx.wait_for(|e| e.is_some()).await {
                    Ok(code) => code.unwrap_or(-1),
                    Err(_) => -1,
                }
            }),
        })
    }
}

/// The scripted program: print, maybe exit, echo what is typed, until a
/// signal (or the test) ends it. Its end of the terminal is dropped when it
/// ends, so the daemon's reader sees the terminal close.
async fn run_program(
    pid: u32,
    program: FakeProgram,
    mut terminal: DuplexStream,
    mut exit: watch::Receiver<Option<ExitCode>>,
    release: Arc<Notify>,
    mut terminated: mpsc::UnboundedReceiver<i32>,
    machine: Arc<Mutex<Machine>>,
) {
    let end = |signal: Option<i32>| {
        if let Some(signal) = signal {
            lock(&machine).end_group(pid, 128 + signal);
        }
    };
    if program.held {
        tokio::select! {
            _ = release.notified() => {}
            _ = ended(&mut exit) => return,
            signal = terminated.recv() => return end(signal),
        }
    }
    // A daemon that stopped reading is the daemon's problem, not the
    // script's: a failed write only ends the program's output.
    if terminal.write_all(&program.prints).await.is_err() {
        return;
    }
    if let Some(code) = program.exits_with {
        lock(&machine).end_group(pid, code);
        return;
    }
    let mut buf = [0u8; 1024];
    let mut enters_to_lose = program.input_box_loses_enters;
    loop {
        tokio::select! {
            read = terminal.read(&mut buf) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    lock(&machine).typed.entry(pid).or_default().extend_from_slice(&buf[..n]);
                    let shown = match enters_to_lose.as_mut() {
                        Some(lose) => input_box_echo(&buf[..n], lose, &program.input_box_answer),
                        None => buf[..n].to_vec(),
                    };
                    if program.echoes && terminal.write_all(&shown).await.is_err() {
                        return;
                    }
                }
            },
            _ = ended(&mut exit) => return,
            signal = terminated.recv() => return end(signal),
        }
    }
}

/// What an input box shows for `typed`: the text itself, an Enter as the
/// line erased (or kept with `answer` drawn under it), save the `lose`
/// Enters still to be lost, which show nothing.
fn input_box_echo(typed: &[u8], lose: &mut usize, answer: &[u8]) -> Vec<u8> {
    let mut shown = Vec::with_capacity(typed.len());
    for &b in typed {
        match b {
            b'\r' if *lose > 0 => *lose -= 1,
            b'\r' if answer.is_empty() => shown.extend_from_slice(b"\r\x1b[2K"),
            b'\r' => {
                shown.extend_from_slice(b"\r\n");
                shown.extend_from_slice(answer);
            }
            b => shown.push(b),
        }
    }
    shown
}

/// Once the program has ended (or its end can no longer come).
async fn ended(exit: &mut watch::Receiver<Option<ExitCode>>) {
    // The guard `wait_for` returns is not Send: only whether it came is kept.
    let _ = exit.wait_for(|e| e.is_some()).await.is_ok();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_daemons_clock_does_not_follow_a_wall_clock_step() {
        let os = FakeOs::default();
        let before = os.now_ms();
        os.step_wall_clock(before - 86_400_000);
        os.advance(Duration::from_secs(5));
        assert_eq!(os.now_ms(), before + 5_000);
        assert_eq!(os.wall_ms(), before - 86_400_000 + 5_000);
    }

    #[test]
    fn a_killed_group_is_gone_and_the_kill_is_recorded() {
        let os = FakeOs::default();
        os.spawn(10, 10, 1);
        os.spawn(11, 10, 2);
        assert!(os.signal_group(10, libc::SIGKILL));
        assert_eq!(os.start_time(11), None);
        assert!(!os.signal_group(10, 0));
        assert_eq!(os.signals_sent(), vec![(10, libc::SIGKILL)]);
    }

    #[test]
    fn the_open_files_of_a_process_and_its_children_under_a_folder_are_found() {
        let os = FakeOs::default();
        os.spawn(10, 10, 1);
        os.spawn(11, 10, 2);
        os.set_process(11, Some(10), 0);
        os.set_open_files(10, &["/home/a/.codex/sessions/r1.jsonl", "/etc/hosts"]);
        os.set_open_files(11, &["/home/a/.codex/sessions/r2.jsonl"]);
        let open = os.open_files_under(10, std::path::Path::new("/home/a/.codex"));
        let want = [
            "/home/a/.codex/sessions/r1.jsonl",
            "/home/a/.codex/sessions/r2.jsonl",
        ];
        assert_eq!(open, want.iter().map(PathBuf::from).collect());
    }

    fn request(session: &str) -> SpawnRequest {
        SpawnRequest {
            program: PathBuf::from("/bin/agent"),
            args: vec!["--flag".into()],
            cwd: PathBuf::from("/work"),
            env: vec![("HANGAR_SESSION_ID".into(), session.into())],
            sandboxed: false,
            rows: 24,
            cols: 80,
            terminal: hangar_terminal::Config::default(),
            resume: None,
        }
    }

    #[tokio::test]
    async fn a_scripted_program_prints_echoes_and_ends_on_sigterm_unless_it_ignores_it() {
        let os = FakeOs::default();
        os.script(
            "s",
            FakeProgram {
                echoes: true,
                ..FakeProgram::default()
            },
        );
        let mut p = os.spawn_pty(&request("s")).unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 64];
        while !seen.ends_with(b"ready\r\n") {
            let n = p.output.read(&mut buf).await.unwrap();
            seen.extend_from_slice(&buf[..n]);
        }
        p.input.write_all(b"hi").await.unwrap();
        let n = p.output.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"hi");
        assert_eq!(os.typed(p.pid), b"hi");
        assert_eq!(os.environ(p.pid), vec!["HANGAR_SESSION_ID=s".to_owned()]);
        assert!((p.signal)(libc::SIGTERM));
        assert_eq!(p.exit.await, 128 + libc::SIGTERM);
        assert_eq!(
            p.output.read(&mut buf).await.unwrap(),
            0,
            "the terminal closed"
        );
        assert!(os.running().is_empty() && os.start_time(p.pid).is_none());

        os.script(
            "t",
            FakeProgram {
                ignores_term: true,
                ..FakeProgram::default()
            },
        );
        let p = os.spawn_pty(&request("t")).unwrap();
        assert!((p.signal)(libc::SIGTERM));
        assert_eq!(os.running(), vec![p.pid], "SIGTERM is ignored");
        assert!((p.signal)(libc::SIGKILL));
        assert_eq!(p.exit.await, 128 + libc::SIGKILL);
        let spawned = os.spawned();
        assert_eq!(spawned.len(), 2);
        assert_eq!(spawned[0].session.as_deref(), Some("s"));
        assert_eq!(spawned[0].args, vec!["--flag".to_owned()]);
    }

    #[tokio::test]
    async fn a_held_program_prints_only_once_released_and_a_failing_one_does_not_start() {
        let os = FakeOs::default();
        os.script(
            "held",
            FakeProgram {
                held: true,
                prints: b"up".to_vec(),
                exits_with: Some(3),
                ..FakeProgram::default()
            },
        );
        os.script(
            "broken",
            FakeProgram {
                fails_to_start: Some("no such file".into()),
                ..FakeProgram::default()
            },
        );
        let err = os.spawn_pty(&request("broken")).err().unwrap();
        assert!(err.to_string().contains("no such file"));
        let mut p = os.spawn_pty(&request("held")).unwrap();
        tokio::task::yield_now().await;
        assert_eq!(
            os.running(),
            vec![p.pid],
            "held: nothing printed, still running"
        );
        os.release(p.pid);
        let mut out = Vec::new();
        p.output.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, b"up");
        assert_eq!(p.exit.await, 3);
    }
}
