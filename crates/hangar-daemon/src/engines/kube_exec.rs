//! The bridge's Kubernetes half: the agent `exec`ed into its pod through the
//! API server's exec WebSocket (kube-rs speaks `v5.channel.k8s.io`: one
//! byte of channel before each binary message, 0 stdin, 1 stdout, 3 the
//! exit `Status`, 4 the terminal size as JSON `{"Width","Height"}`, 255 a
//! channel's close).
//!
//! The exec API carries no environment and no folder: the pod's
//! `workingDir` is the session's folder, and the agent's variables travel
//! as `env -- K=V... PROGRAM ARGS` (so they are in the exec request, which
//! an API server's audit log may record: the proxy's placeholder key, never
//! a real one, is what an agent on an engine gets).

use futures::SinkExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams, DeleteParams, TerminalSize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::signal::unix::{SignalKind, signal};

use super::kubernetes::Access;

/// The pod's container the agent runs in, and what runs there.
pub struct PodTarget<'a> {
    pub access: &'a Access,
    pub namespace: &'a str,
    pub pod: &'a str,
    pub container: &'a str,
    /// The agent's command line.
    pub cmd: &'a [String],
    /// Its variables, `KEY=VALUE` each.
    pub env: &'a [String],
    pub stop_timeout_secs: u32,
}

/// The exec's command: the agent's variables set by `env`.
pub fn command(env: &[String], cmd: &[String]) -> Vec<String> {
    let mut out = vec!["env".to_owned(), "--".to_owned()];
    out.extend(env.iter().cloned());
    out.extend(cmd.iter().cloned());
    out
}

/// The agent's exit code from the exec's last `Status` (kubelet's
/// `remotecommand/exec.go`: `Success`, or `NonZeroExitCode` with an
/// `ExitCode` cause whose message is the number).
pub fn exit_code(status: Option<&Status>) -> i32 {
    let Some(status) = status else {
        // The stream ended with no status: the pod went away.
        return 128 + libc::SIGTERM;
    };
    if status.status.as_deref() == Some("Success") {
        return 0;
    }
    status
        .details
        .as_ref()
        .and_then(|d| d.causes.as_ref())
        .and_then(|causes| {
            causes
                .iter()
                .find(|c| c.reason.as_deref() == Some("ExitCode"))
                .and_then(|c| c.message.as_deref()?.parse().ok())
        })
        .unwrap_or(1)
}

/// Run the exec; `size` reads the bridge's terminal's rows and columns.
pub async fn run(target: PodTarget<'_>, size: fn() -> Option<(u16, u16)>) -> Result<i32, String> {
    let client = target.access.client(true).await?;
    let pods: Api<Pod> = Api::namespaced(client, target.namespace);
    let params = AttachParams::interactive_tty().container(target.container);
    let mut attached = pods
        .exec(target.pod, command(target.env, target.cmd), &params)
        .await
        .map_err(|e| {
            format!(
                "cannot exec into pod {}: {}",
                target.pod,
                super::kubernetes::message(&e)
            )
        })?;
    let mut input = attached.stdin().ok_or("the exec has no stdin")?;
    let mut output = attached.stdout().ok_or("the exec has no stdout")?;
    let mut sizes = attached.terminal_size().ok_or("the exec has no terminal")?;
    let status = attached.take_status().ok_or("the exec has no status")?;
    let send_size = |sizes: &mut futures::channel::mpsc::Sender<TerminalSize>| {
        let next = size();
        let mut sizes = sizes.clone();
        async move {
            if let Some((rows, cols)) = next
                && let Err(e) = sizes
                    .send(TerminalSize {
                        width: cols,
                        height: rows,
                    })
                    .await
            {
                tracing::debug!("exec resize: {e}");
            }
        }
    };
    send_size(&mut sizes).await;

    let mut winch = signal(SignalKind::window_change()).map_err(|e| e.to_string())?;
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut hup = signal(SignalKind::hangup()).map_err(|e| e.to_string())?;
    let mut stdin = tokio::io::stdin();
    let mut stdout = tokio::io::stdout();
    let mut from_terminal = vec![0u8; 4096];
    let mut from_pod = vec![0u8; 8192];
    let mut stdin_open = true;
    let mut stopping = false;
    let stop = |stopping: &mut bool| {
        if std::mem::replace(stopping, true) {
            return;
        }
        // Deleting the pod is the stop: the kubelet's SIGTERM reaches the
        // keep-alive, which asks the agent to end; the claim is kept.
        let pods = pods.clone();
        let name = target.pod.to_owned();
        let grace = target.stop_timeout_secs;
        tokio::spawn(async move {
            let params = DeleteParams {
                grace_period_seconds: Some(grace),
                ..Default::default()
            };
            if let Err(e) = pods.delete(&name, &params).await {
                tracing::debug!("delete {name}: {e}");
            }
        });
    };
    loop {
        tokio::select! {
            n = output.read(&mut from_pod) => match n {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if stdout.write_all(&from_pod[..n]).await.is_err()
                        || stdout.flush().await.is_err()
                    {
                        stop(&mut stopping);
                    }
                }
            },
            n = stdin.read(&mut from_terminal), if stdin_open => match n {
                Ok(0) | Err(_) => stdin_open = false,
                Ok(n) => {
                    if input.write_all(&from_terminal[..n]).await.is_err() {
                        stdin_open = false;
                    }
                }
            },
            _ = winch.recv() => send_size(&mut sizes).await,
            _ = term.recv() => stop(&mut stopping),
            _ = hup.recv() => stop(&mut stopping),
        }
    }
    let status = tokio::time::timeout(std::time::Duration::from_secs(2), status)
        .await
        .ok()
        .flatten();
    Ok(exit_code(status.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exit_code_is_read_from_the_kubelets_status() {
        // The shape kubelet's remotecommand/exec.go writes on channel 3.
        let failed: Status = serde_json::from_value(serde_json::json!({
            "metadata": {}, "status": "Failure",
            "message": "command terminated with non-zero exit code: exit status 3",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}
        }))
        .unwrap();
        assert_eq!(exit_code(Some(&failed)), 3);
        let ok: Status =
            serde_json::from_value(serde_json::json!({"metadata": {}, "status": "Success"}))
                .unwrap();
        assert_eq!(exit_code(Some(&ok)), 0);
        assert_eq!(exit_code(None), 128 + libc::SIGTERM);
    }

    #[test]
    fn the_agents_variables_travel_through_env() {
        let v = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            command(
                &v(&["A=1", "B=two words"]),
                &v(&["claude", "--resume", "x"])
            ),
            ["env", "--", "A=1", "B=two words", "claude", "--resume", "x"]
        );
    }
}
