//! The bridge between a session's PTY and its agent in a container: what
//! the daemon runs in the PTY, in place of the agent, for a session on a
//! Docker, Podman or Kubernetes engine (`hangar engine-exec`, not for
//! people).
//!
//! It `exec`s the agent into the session's running container with a TTY
//! (the Docker Engine API's exec, or the Kubernetes API server's exec
//! WebSocket through kube-rs, `kube_exec.rs`), then copies bytes both ways
//! between its
//! own terminal (the daemon's PTY, put in raw mode so nothing is echoed or
//! translated twice) and the exec's stream, resizes the exec's TTY on every
//! SIGWINCH (the daemon resizes the PTY with the pane), and exits with the
//! agent's exit code. So the daemon's terminal, screen, history, attach,
//! exit watch and process-group stop work for it exactly as for a PTY
//! agent. On SIGTERM or SIGHUP (a hibernate, a close, a shutdown, or the
//! daemon gone) it asks the engine to stop the container, which ends the
//! agent gracefully, and exits when the agent's stream ends.

use std::time::Duration;

use bollard::Docker;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bollard::query_parameters::{ResizeExecOptionsBuilder, StopContainerOptionsBuilder};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::signal::unix::{SignalKind, signal};

/// The environment variable the daemon hands the bridge its [`ExecSpec`] in
/// (not the command line: the agent's environment holds its proxy
/// credentials, and a command line is readable by every user).
pub const SPEC_VAR: &str = "HANGAR_ENGINE_EXEC";

/// Where the agent runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Target {
    /// A Docker or Podman container, through the engine's API socket.
    Docker {
        socket: String,
        container: String,
        /// The engine is Podman: when its API is gone (the service hangar
        /// runs ends with a killed daemon, at the same moment as this
        /// bridge's hangup), `podman stop` stops the container instead.
        #[serde(default)]
        podman: bool,
    },
    /// A container of a pod, through the API server.
    Kubernetes {
        access: super::kubernetes::Access,
        namespace: String,
        pod: String,
        container: String,
    },
}

/// What the bridge runs where.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExecSpec {
    pub engine: String,
    pub target: Target,
    pub cmd: Vec<String>,
    /// `KEY=VALUE` each.
    pub env: Vec<String>,
    pub working_dir: String,
    pub stop_timeout_secs: u32,
}

/// The bridge's own terminal (the daemon's PTY), as the binary that runs
/// the bridge reaches it: this crate has no unsafe code of its own.
pub struct Terminal {
    /// Rows and columns of the terminal, `None` when it cannot tell.
    pub size: fn() -> Option<(u16, u16)>,
}

/// `hangar engine-exec`: run the bridge (the caller has put its terminal in
/// raw mode, so nothing is echoed or translated twice); the process's exit
/// code.
pub fn main(terminal: Terminal) -> i32 {
    let spec = match std::env::var(SPEC_VAR)
        .map_err(|e| e.to_string())
        .and_then(|s| serde_json::from_str::<ExecSpec>(&s).map_err(|e| e.to_string()))
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "hangar engine-exec: no valid {SPEC_VAR} ({e}); this command is run by the hangar daemon"
            );
            return 2;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("hangar engine-exec: cannot start: {e}");
            return 1;
        }
    };
    let code = runtime.block_on(async {
        match run(&spec, &terminal).await {
            Ok(code) => code,
            Err(e) => {
                // On the session's screen: the daemon's failed-start reason
                // quotes its last line.
                print!("\r\nhangar: engine {}: {e}\r\n", spec.engine);
                let _ = std::io::Write::flush(&mut std::io::stdout());
                1
            }
        }
    });
    // The stdin reader may still sit in a blocking read: do not wait for it.
    runtime.shutdown_background();
    code
}

async fn run(spec: &ExecSpec, terminal: &Terminal) -> Result<i32, String> {
    match &spec.target {
        Target::Docker {
            socket,
            container,
            podman,
        } => run_docker(spec, socket, container, *podman, terminal).await,
        Target::Kubernetes {
            access,
            namespace,
            pod,
            container,
        } => {
            super::kube_exec::run(
                super::kube_exec::PodTarget {
                    access,
                    namespace,
                    pod,
                    container,
                    cmd: &spec.cmd,
                    env: &spec.env,
                    stop_timeout_secs: spec.stop_timeout_secs,
                },
                terminal.size,
            )
            .await
        }
    }
}

async fn run_docker(
    spec: &ExecSpec,
    socket: &str,
    container: &str,
    podman: bool,
    terminal: &Terminal,
) -> Result<i32, String> {
    let docker = Docker::connect_with_unix(socket, 3600, bollard::API_DEFAULT_VERSION)
        .map_err(|e| format!("cannot connect to {socket}: {e}"))?;
    let exec = docker
        .create_exec(
            container,
            CreateExecOptions {
                attach_stdin: Some(true),
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                tty: Some(true),
                env: Some(spec.env.clone()),
                cmd: Some(spec.cmd.clone()),
                working_dir: Some(spec.working_dir.clone()),
                ..Default::default()
            },
        )
        .await
        .map_err(|e| super::docker::message(&e))?
        .id;
    let started = docker
        .start_exec(
            &exec,
            Some(StartExecOptions {
                tty: true,
                ..Default::default()
            }),
        )
        .await
        .map_err(|e| super::docker::message(&e))?;
    let StartExecResults::Attached {
        mut output,
        mut input,
    } = started
    else {
        return Err("the engine started the agent detached".to_owned());
    };
    let size = terminal.size;
    let resize = |docker: Docker, exec: String| async move {
        if let Some((rows, cols)) = size() {
            let options = ResizeExecOptionsBuilder::new()
                .h(i32::from(rows))
                .w(i32::from(cols))
                .build();
            if let Err(e) = docker.resize_exec(&exec, options).await {
                tracing::debug!("exec resize: {e}");
            }
        }
    };
    resize(docker.clone(), exec.clone()).await;

    let mut winch = signal(SignalKind::window_change()).map_err(|e| e.to_string())?;
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut hup = signal(SignalKind::hangup()).map_err(|e| e.to_string())?;
    let mut stdin = tokio::io::stdin();
    let mut stdout = tokio::io::stdout();
    let mut buf = vec![0u8; 4096];
    let mut stdin_open = true;
    let mut stopping: Option<tokio::task::JoinHandle<()>> = None;
    let stop = StopOrder {
        docker: &docker,
        container,
        timeout_secs: spec.stop_timeout_secs,
        podman,
    };
    loop {
        tokio::select! {
            chunk = output.next() => match chunk {
                Some(Ok(out)) => {
                    // The daemon gone (a hangup) leaves nowhere to write: the
                    // stop asked for below still ends the agent.
                    if stdout.write_all(&out.into_bytes()).await.is_err()
                        || stdout.flush().await.is_err()
                    {
                        stop.ask(&mut stopping);
                    }
                }
                Some(Err(e)) => {
                    tracing::debug!("exec stream: {e}");
                    break;
                }
                None => break,
            },
            n = stdin.read(&mut buf), if stdin_open => match n {
                Ok(0) | Err(_) => stdin_open = false,
                Ok(n) => {
                    if input.write_all(&buf[..n]).await.is_err() || input.flush().await.is_err() {
                        stdin_open = false;
                    }
                }
            },
            _ = winch.recv() => resize(docker.clone(), exec.clone()).await,
            _ = term.recv() => stop.ask(&mut stopping),
            _ = hup.recv() => stop.ask(&mut stopping),
        }
    }
    let code = exit_code(&docker, &exec).await;
    // The exec's stream also ends when the engine's API goes away (hangar's
    // own Podman service dies with a killed daemon, at the moment this
    // bridge gets its hangup, and the stream's end may be seen first): an
    // agent whose end the engine cannot confirm is stopped, and a stop asked
    // for is carried out before the bridge exits, or the agent would run on
    // with nobody watching it.
    if code.is_none() {
        stop.ask(&mut stopping);
    }
    if let Some(asked) = stopping {
        let bound = Duration::from_secs(u64::from(spec.stop_timeout_secs) + 15);
        if tokio::time::timeout(bound, asked).await.is_err() {
            tracing::debug!("stop {container}: not done within {} s", bound.as_secs());
        }
    }
    Ok(code.unwrap_or(128 + libc::SIGTERM))
}

/// How the bridge stops its container.
struct StopOrder<'a> {
    docker: &'a Docker,
    container: &'a str,
    timeout_secs: u32,
    podman: bool,
}

impl StopOrder<'_> {
    /// Ask the engine (once) to stop the container: its keep-alive asks the
    /// agent to end, then the container stops. A Podman whose API is gone is
    /// asked through its own program.
    fn ask(&self, stopping: &mut Option<tokio::task::JoinHandle<()>>) {
        if stopping.is_some() {
            return;
        }
        let docker = self.docker.clone();
        let name = self.container.to_owned();
        let secs = self.timeout_secs;
        let podman = self.podman;
        *stopping = Some(tokio::spawn(async move {
            let t = i32::try_from(secs).unwrap_or(i32::MAX);
            let options = StopContainerOptionsBuilder::new().t(t).build();
            let Err(e) = docker.stop_container(&name, Some(options)).await else {
                return;
            };
            tracing::debug!("stop {name}: {e}");
            if !podman {
                return;
            }
            let ran = tokio::process::Command::new("podman")
                .args(["stop", "--time", &secs.to_string(), &name])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .await;
            if let Err(e) = ran {
                tracing::debug!("podman stop {name}: {e}");
            }
        }));
    }
}

/// The agent's exit code as the engine recorded it (it may take a moment
/// to record it after the stream ends); `None` when the engine cannot say
/// (its API is gone, the exec was removed with its container, or it still
/// says running).
async fn exit_code(docker: &Docker, exec: &str) -> Option<i32> {
    for _ in 0..40 {
        match docker.inspect_exec(exec).await {
            Ok(r) if r.running != Some(true) => {
                return Some(r.exit_code.and_then(|c| i32::try_from(c).ok()).unwrap_or(0));
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(e) => {
                tracing::debug!("exec {exec}: {e}");
                return None;
            }
        }
    }
    None
}
