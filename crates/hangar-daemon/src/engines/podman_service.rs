//! The Podman API service hangar runs itself for a `kind = "podman"` engine
//! with no `socket`: `podman system service --time=0 unix://SOCKET`, its
//! socket in a private folder (0700) of its own under `HANGAR_HOME`
//! (`engines/NAME/podman.sock`), started the first time the engine is
//! needed and ended with the daemon.
//!
//! It must never outlive the daemon: `hangar shutdown` ends it
//! ([`Services::end_all`]), and a daemon that dies without a word (SIGKILL)
//! takes it along through `PR_SET_PDEATHSIG`. That signal follows the
//! *thread* that started the child, so each service is started, and waited
//! for, by a thread of its own that lives exactly as long as the service.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::EngineError;

/// How long a new service may take to put its socket up (a loaded machine
/// takes seconds; an idle one a fraction of one).
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an ended service may take to exit before it is killed.
const END_GRACE: Duration = Duration::from_secs(5);
/// The longest path a Unix socket takes (`sun_path`, less its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// One running service.
struct Running {
    socket: String,
    pid: i32,
    exited: Arc<AtomicBool>,
}

impl Running {
    fn alive(&self) -> bool {
        !self.exited.load(Ordering::SeqCst) && Path::new(&self.socket).exists()
    }
}

/// The services of one daemon, by engine name.
pub struct Services {
    home: PathBuf,
    running: tokio::sync::Mutex<BTreeMap<String, Running>>,
}

/// The folder of engine `engine`'s service under `home`.
pub fn service_dir(home: &Path, engine: &str) -> PathBuf {
    let safe: String = engine
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    home.join("engines").join(safe)
}

impl Services {
    pub fn new(home: PathBuf) -> Services {
        Services {
            home,
            running: tokio::sync::Mutex::new(BTreeMap::new()),
        }
    }

    /// The socket of engine `engine`'s service, started when not running.
    pub async fn socket(&self, engine: &str) -> Result<String, EngineError> {
        let mut running = self.running.lock().await;
        if let Some(r) = running.get(engine) {
            if r.alive() {
                return Ok(r.socket.clone());
            }
            tracing::warn!(
                "engine {engine}: the podman service hangar started (pid {}) is gone; starting it again",
                r.pid
            );
            end(r).await;
        }
        let started = self.start(engine).await?;
        let socket = started.socket.clone();
        running.insert(engine.to_owned(), started);
        Ok(socket)
    }

    async fn start(&self, engine: &str) -> Result<Running, EngineError> {
        let failed = |what: String| EngineError(format!("engine {engine}: {what}"));
        let dir = service_dir(&self.home, engine);
        for d in [self.home.join("engines"), dir.clone()] {
            hangar_protocol::paths::ensure_private_dir(&d)
                .map_err(|e| failed(format!("cannot create {}: {e}", d.display())))?;
        }
        let socket = dir.join("podman.sock").display().to_string();
        if socket.len() > MAX_SOCKET_PATH {
            return Err(failed(format!(
                "the socket hangar would start podman on, {socket}, is longer than a socket path may be; set socket = \"...\" in [engines.{engine}] and start `podman system service` there yourself"
            )));
        }
        // A predecessor's (killed with the daemon): its service is gone,
        // its socket file is not.
        match std::fs::remove_file(&socket) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(failed(format!("cannot remove the old {socket}: {e}"))),
        }
        let log_path = dir.join("service.log");
        let log = std::fs::File::create(&log_path)
            .map_err(|e| failed(format!("cannot create {}: {e}", log_path.display())))?;
        let exited = Arc::new(AtomicBool::new(false));
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let listen = format!("unix://{socket}");
        let exited_by_keeper = exited.clone();
        let name = engine.to_owned();
        std::thread::Builder::new()
            .name(format!("podman-service-{engine}"))
            .spawn(move || keep(&name, &listen, log, started_tx, &exited_by_keeper))
            .map_err(|e| failed(format!("cannot start a thread for the podman service: {e}")))?;
        let pid = started_rx
            .await
            .map_err(|_| failed("the podman service's thread ended at once".to_owned()))?
            .map_err(failed)?;
        let running = Running {
            socket: socket.clone(),
            pid,
            exited,
        };
        let until = tokio::time::Instant::now() + START_TIMEOUT;
        loop {
            if Path::new(&socket).exists() {
                tracing::info!(
                    "engine {engine}: started `podman system service` (pid {pid}) on {socket}"
                );
                return Ok(running);
            }
            let why = if running.exited.load(Ordering::SeqCst) {
                Some("it exited")
            } else if tokio::time::Instant::now() >= until {
                Some("it did not put its socket up in time")
            } else {
                None
            };
            if let Some(why) = why {
                end(&running).await;
                let said = std::fs::read_to_string(&log_path).unwrap_or_default();
                let tail: Vec<&str> = said.lines().rev().take(5).collect();
                return Err(failed(format!(
                    "`podman system service {}` did not start ({why}): {}",
                    running.socket,
                    tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// End every service (the daemon's shutdown, once its sessions' stops,
    /// which go through them, are done).
    pub async fn end_all(&self) {
        let mut running = self.running.lock().await;
        for (engine, r) in std::mem::take(&mut *running) {
            end(&r).await;
            tracing::info!("engine {engine}: ended the podman service (pid {})", r.pid);
        }
    }
}

/// Ask a service to end; kill it after a grace period.
async fn end(r: &Running) {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    if r.exited.load(Ordering::SeqCst) {
        return;
    }
    let pid = Pid::from_raw(r.pid);
    if let Err(e) = kill(pid, Signal::SIGTERM) {
        tracing::debug!("podman service {}: SIGTERM: {e}", r.pid);
    }
    let until = tokio::time::Instant::now() + END_GRACE;
    while !r.exited.load(Ordering::SeqCst) {
        if tokio::time::Instant::now() >= until {
            if let Err(e) = kill(pid, Signal::SIGKILL) {
                tracing::debug!("podman service {}: SIGKILL: {e}", r.pid);
            }
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The keeper thread: start the service (told to die with this thread),
/// say its pid, wait for it, and mark it exited.
fn keep(
    engine: &str,
    listen: &str,
    log: std::fs::File,
    started: tokio::sync::oneshot::Sender<Result<i32, String>>,
    exited: &AtomicBool,
) {
    let stderr = match log.try_clone() {
        Ok(f) => f,
        Err(e) => {
            let _ = started.send(Err(format!("cannot open the service's log: {e}")));
            exited.store(true, Ordering::SeqCst);
            return;
        }
    };
    let mut command = std::process::Command::new("podman");
    command
        .args(["system", "service", "--time=0", listen])
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(stderr);
    let child = die_with_this_thread(&mut command).spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            let why = if e.kind() == std::io::ErrorKind::NotFound {
                "podman is not installed (Debian: apt-get install podman runc)".to_owned()
            } else {
                format!("cannot run podman: {e}")
            };
            let _ = started.send(Err(why));
            exited.store(true, Ordering::SeqCst);
            return;
        }
    };
    let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
    let _ = started.send(Ok(pid));
    match child.wait() {
        Ok(status) => tracing::debug!("engine {engine}: podman service {pid} ended: {status}"),
        Err(e) => tracing::warn!("engine {engine}: cannot wait for podman service {pid}: {e}"),
    }
    exited.store(true, Ordering::SeqCst);
}

/// Make `command`'s child get SIGTERM when the thread that spawns it ends
/// (so with the daemon, a SIGKILL included), and not start at all when the
/// daemon is already gone by then.
#[allow(unsafe_code)]
fn die_with_this_thread(command: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs in the child between fork and exec; it makes
    // two plain system calls (prctl, getppid: async-signal-safe) and
    // allocates nothing (the error is a raw OS error), so it takes no lock
    // another thread of the daemon may have held at the fork.
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM)
                .map_err(std::io::Error::from)?;
            if nix::unistd::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engine_gets_a_folder_of_its_own_under_the_home() {
        let home = Path::new("/h");
        assert_eq!(service_dir(home, "pod"), Path::new("/h/engines/pod"));
        assert_eq!(service_dir(home, "a/../b"), Path::new("/h/engines/a____b"));
    }
}
