//! Sandboxed sessions (issue 32): the daemon's side of the walls that
//! `hangar_core::sandbox` describes. It gathers the facts (is bwrap there,
//! may this machine make user namespaces, what exists on disk), makes the
//! session's sandbox folder and its proxy socket, and turns a launch's
//! `SpawnRequest` into one that runs `bwrap` around hangar's relay around
//! the agent. Anything that keeps the walls from going up fails the start
//! (DESIGN.md rule 14): a sandboxed session never runs without them.

pub mod callback;
mod forward;
pub mod relay;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hangar_core::sandbox::{self as rules, HostFacts, Plan};
use hangar_core::{SessionId, SessionMeta};
use hangar_protocol::view::SandboxView;
use serde::Deserialize;

use crate::journal::FailureKind;
use crate::pty::SpawnRequest;
use crate::section::Section;
use crate::spawn_failure::SpawnFailure;

pub use forward::Forwarder;

/// `[sandbox]` in config.toml.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Run every new session in the sandbox (as `hangar new --sandbox`).
    #[serde(default)]
    pub enabled: bool,
    /// Hosts a sandboxed agent may reach through the proxy on top of the
    /// provider's API (`[proxy] allow_hosts`): a package registry, a git
    /// host. Tunnelled, never decrypted; `*.example.com` for subdomains.
    #[serde(default)]
    pub allow_hosts: Vec<String>,
    /// Extra folders (or files) the agent may read, at their own path: a
    /// Node.js installed under the home folder, say.
    #[serde(default)]
    pub read_only: Vec<String>,
}

/// The sandbox's settings and what it learned about the machine.
pub struct Sandbox {
    home: PathBuf,
    config: Section<SandboxConfig>,
    /// A trial bwrap run succeeded once: the machine can sandbox.
    proven: tokio::sync::Mutex<bool>,
    /// Sandboxed sessions' own sockets back to the daemon.
    pub callbacks: callback::Callbacks,
}

/// The session's sandbox folder: its CLI's state, its proxy socket.
pub fn session_dir(home: &Path, id: &SessionId) -> PathBuf {
    home.join("sandbox").join(id.as_str())
}

/// A launch turned into a sandboxed one: the request, and what to keep
/// until the process exits (the proxy socket's forwarder, the session's
/// socket back to the daemon).
pub struct Wrapped {
    pub request: SpawnRequest,
    pub held: Held,
}

/// The sandbox's pieces that live as long as the session's process.
#[derive(Default)]
pub struct Held {
    forwarder: Option<Forwarder>,
    callback: Option<callback::CallbackSocket>,
}

impl Sandbox {
    pub fn new(home: PathBuf, config: Section<SandboxConfig>) -> Sandbox {
        Sandbox {
            home,
            config,
            proven: tokio::sync::Mutex::new(false),
            callbacks: callback::Callbacks::default(),
        }
    }

    /// Whether a new session is made sandboxed: asked for, or on for every
    /// session, or for every session of its provider.
    pub fn wanted(&self, asked: bool, provider_sandbox: bool) -> bool {
        asked || provider_sandbox || self.config.get().enabled
    }

    /// The folder a new sandboxed session's state goes in.
    pub fn folder_for(&self, id: &SessionId) -> String {
        session_dir(&self.home, id).display().to_string()
    }

    /// A folder beside the sessions' folders where a fork's state is
    /// copied before the fork exists (`hangar fork`); moved to the fork's
    /// own folder once it does.
    pub fn staging_folder(&self) -> PathBuf {
        self.home
            .join("sandbox")
            .join(format!(".fork-{}", uuid::Uuid::new_v4()))
    }

    /// `sandbox` of `hangar ls --json`.
    pub fn view(&self, meta: &SessionMeta) -> Option<SandboxView> {
        meta.sandbox.as_ref()?;
        let mut writable = vec![meta.cwd.clone()];
        writable.extend(git_dir_of(meta));
        writable.extend(
            rules::state_binds(
                hangar_providers::adapter(&meta.provider).sandbox_state(),
                meta.sandbox.as_deref().unwrap_or(""),
                "~",
            )
            .into_iter()
            .map(|b| b.outside),
        );
        Some(SandboxView {
            kind: "bubblewrap".into(),
            network: if meta.capture && meta.provider.is_agent() {
                "proxy".into()
            } else {
                "none".into()
            },
            writable,
            agent_sandbox: agent_sandbox(&meta.provider).map(str::to_owned),
        })
    }

    /// Whether this machine can sandbox; the reason it cannot, naming the
    /// package to install or the sysctl to change.
    async fn check_host(&self) -> Result<PathBuf, String> {
        let bwrap = find_on_path("bwrap");
        let facts = HostFacts {
            bwrap: bwrap.is_some(),
            max_user_namespaces: read_number("/proc/sys/user/max_user_namespaces"),
            unprivileged_userns_clone: read_number("/proc/sys/kernel/unprivileged_userns_clone"),
            apparmor_restrict: read_number(
                "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            ),
            // The daemon's own uid, from the owner of /proc/self.
            root: std::fs::metadata("/proc/self")
                .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
                .unwrap_or(false),
        };
        if let Some(reason) = rules::refusal(&facts) {
            return Err(reason);
        }
        let Some(bwrap) = bwrap else {
            return Err(rules::refusal(&HostFacts::default()).unwrap_or_default());
        };
        let mut proven = self.proven.lock().await;
        if !*proven {
            // One trial run per daemon: the namespaces the sandbox uses.
            let out = tokio::process::Command::new(&bwrap)
                .args([
                    "--unshare-user",
                    "--unshare-pid",
                    "--unshare-net",
                    "--die-with-parent",
                    "--ro-bind",
                    "/",
                    "/",
                    "--proc",
                    "/proc",
                    "--",
                    "/bin/true",
                ])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .kill_on_drop(true)
                .output()
                .await
                .map_err(|e| format!("cannot run {}: {e}", bwrap.display()))?;
            if !out.status.success() {
                return Err(rules::trial_failure(&String::from_utf8_lossy(&out.stderr)));
            }
            *proven = true;
        }
        Ok(bwrap)
    }

    /// Turn `request` into a sandboxed launch of `meta`'s session, or say
    /// why the walls cannot go up.
    pub async fn wrap(
        &self,
        meta: &SessionMeta,
        request: SpawnRequest,
        grant: Option<&hangar_proxy::Grant>,
    ) -> Result<Wrapped, SpawnFailure> {
        let fail = |why: String| {
            SpawnFailure::new(
                FailureKind::Other,
                format!(
                    "cannot start {} in its sandbox: {why}; hangar never runs a sandboxed session without its walls",
                    meta.id.short()
                ),
            )
        };
        let bwrap = self.check_host().await.map_err(fail)?;
        let home = inside_home();
        let walls = self
            .walls(
                meta,
                &request,
                grant,
                &Inside {
                    home: home.clone(),
                    kind: "bubblewrap",
                    host_env: true,
                    relay_proxy: true,
                },
            )
            .map_err(fail)?;

        let named = if request.program.is_absolute() {
            request.program.clone()
        } else {
            let name = request.program.display().to_string();
            find_on_path(&name).unwrap_or_else(|| request.program.clone())
        };
        let program = std::fs::canonicalize(&named).map_err(|e| {
            fail(format!(
                "cannot find its program {}: {e}",
                request.program.display()
            ))
        })?;
        let program = program.display().to_string();
        let mut read_only = Vec::new();
        if !rules::under_system(&program) {
            read_only.push(rules::program_binds(
                &program,
                &home,
                &self.home.display().to_string(),
            ));
        }
        read_only.extend(walls.files.iter().cloned());
        for extra in &self.config.get().read_only {
            if Path::new(extra).exists() {
                read_only.push(extra.clone());
            }
        }
        let system: Vec<String> = rules::SYSTEM_READ_ONLY
            .iter()
            .filter(|s| Path::new(s).exists())
            .map(|s| (*s).to_owned())
            .collect();
        let (uid, gid) = std::fs::metadata("/proc/self")
            .map(|m| {
                use std::os::unix::fs::MetadataExt;
                (m.uid(), m.gid())
            })
            .unwrap_or((0, 0));
        let plan = Plan {
            system,
            masked: masked_files(),
            home,
            cwd: request.cwd.display().to_string(),
            writable: walls.writable.clone(),
            read_only,
            state: walls.state.clone(),
            hangar: walls.hangar.clone(),
            proxy: walls.proxy.clone(),
            callback: walls.callback.clone(),
            program,
            args: request.args.clone(),
            uid,
            gid,
        };
        Ok(Wrapped {
            request: SpawnRequest {
                program: bwrap,
                args: rules::bwrap_args(&plan),
                env: walls.env,
                sandboxed: true,
                ..request
            },
            held: walls.held,
        })
    }

    /// The walls of `meta`'s session that hangar's sandbox and an engine's
    /// container share: its CLI's state folders (made, and seeded with the
    /// person's settings), the proxy's socket and the session's own socket
    /// back to the daemon (both listening in its run folder), the agent's
    /// environment without a credential (the proxy confined to put the
    /// real keys back), and the files hangar made for it.
    pub fn walls(
        &self,
        meta: &SessionMeta,
        request: &SpawnRequest,
        grant: Option<&hangar_proxy::Grant>,
        inside: &Inside<'_>,
    ) -> Result<Walls, String> {
        let Some(dir) = meta.sandbox.as_deref() else {
            return Err("the session has no state folder of its own".into());
        };
        let hangar =
            std::env::current_exe().map_err(|e| format!("cannot find hangar's own binary: {e}"))?;
        let folders = hangar_providers::adapter(&meta.provider).sandbox_state();
        let state = rules::state_binds(folders, dir, &inside.home);
        for s in &state {
            make_private_dir(Path::new(&s.outside))
                .map_err(|e| format!("cannot make {}: {e}", s.outside))?;
        }
        let run = Path::new(dir).join("run");
        make_private_dir(&run).map_err(|e| format!("cannot make {}: {e}", run.display()))?;

        // Files hangar made for the agent (the proxy's CA certificate, a
        // settings file) are bound read-only; nothing else of HANGAR_HOME.
        let home_prefix = format!("{}/", self.home.display());
        let named = request
            .args
            .iter()
            .chain(grant.iter().flat_map(|g| g.env.iter().map(|(_, v)| v)));
        let mut files: Vec<String> = Vec::new();
        for value in named {
            if value.starts_with(&home_prefix)
                && !value.ends_with("key.pem")
                && Path::new(value).is_file()
                && !files.contains(value)
            {
                files.push(value.clone());
            }
        }

        let proxy = match grant {
            Some(g) => {
                let socket = run.join("proxy.sock");
                let f = Forwarder::start(&socket, g.port)
                    .map_err(|e| format!("cannot open the proxy socket: {e}"))?;
                Some((f, socket.display().to_string(), g.port))
            }
            None => None,
        };

        // Its hooks and MCP server reach the daemon through a socket of
        // its own, confined to this session (`callback.rs`).
        let control = hangar_protocol::paths::Paths::new(self.home.clone()).socket();
        let callback = if meta.provider.is_agent() {
            let socket = run.join("hangar.sock");
            let held = self
                .callbacks
                .listen(&socket, meta.id.clone())
                .map_err(|e| format!("cannot open its socket back to hangar: {e}"))?;
            Some((
                held,
                (socket.display().to_string(), control.display().to_string()),
            ))
        } else {
            None
        };

        let mut overrides: Vec<(String, String)> = state
            .iter()
            .map(|s| (s.var.to_owned(), s.value.clone()))
            .collect();
        overrides.push(("HOME".into(), inside.home.clone()));
        overrides.push(("TMPDIR".into(), "/tmp".into()));
        overrides.push(("HANGAR_SANDBOX".into(), inside.kind.to_owned()));
        // A container's image has its own PATH, home and user: only what
        // means the same there comes from this machine's environment.
        let inherited: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| inside.host_env || !rules::host_only_var(k))
            .collect();
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        // The person's settings of this CLI, given to its state folders
        // (its adapter says which, `hangar_providers::sandboxed`).
        let cwd = request.cwd.display().to_string();
        let adapter = hangar_providers::adapter(&meta.provider);
        let from = hangar_providers::sandboxed::SeedFrom {
            state: &state,
            cwd: &cwd,
            var: &var,
        };
        let mut n = 0;
        let mut mint = || {
            n += 1;
            format!("hangar-sandbox-setting{n}-{nonce}")
        };
        let seeded = adapter.sandbox_settings(&from, &mut mint)?;
        write_seeded(&seeded.files)?;
        let env = rules::agent_env(
            &inherited,
            &request.env,
            &overrides,
            &nonce,
            &seeded.key_vars,
        );
        let trust = adapter.sandbox_trust(&from, &env.substitutions)?;
        write_seeded(&trust)?;
        if let Some(g) = grant {
            g.lease.confine(hangar_proxy::Confinement {
                extra_hosts: self
                    .config
                    .get()
                    .allow_hosts
                    .iter()
                    .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
                    .collect(),
                secrets: env
                    .substitutions
                    .iter()
                    .map(|s| hangar_proxy::Secret {
                        placeholder: s.placeholder.clone(),
                        real: s.real.clone(),
                    })
                    .chain(seeded.replaced.iter().map(|r| hangar_proxy::Secret {
                        placeholder: r.placeholder.clone(),
                        real: r.real.clone(),
                    }))
                    .collect(),
            });
        }
        Ok(Walls {
            hangar: hangar.display().to_string(),
            state,
            files,
            writable: git_dir_of(meta).into_iter().collect(),
            run: run.display().to_string(),
            control_run: hangar_protocol::paths::Paths::new(self.home.clone())
                .run_dir()
                .display()
                .to_string(),
            proxy: proxy
                .as_ref()
                .filter(|_| inside.relay_proxy)
                .map(|(_, s, p)| (s.clone(), *p)),
            callback: callback.as_ref().map(|(_, s)| s.clone()),
            env: env.env,
            held: Held {
                forwarder: proxy.map(|(f, _, _)| f),
                callback: callback.map(|(c, _)| c),
            },
        })
    }
}

/// What differs between the walls of hangar's own sandbox and those of an
/// engine's container.
pub struct Inside<'a> {
    /// `$HOME` inside (the CLI's state folders are under it).
    pub home: String,
    /// `HANGAR_SANDBOX` inside: `bubblewrap`, or the engine's kind.
    pub kind: &'a str,
    /// The agent starts from the daemon's whole environment (less its
    /// secrets): a sandbox runs on this machine; a container's image has
    /// its own `PATH` and home.
    pub host_env: bool,
    /// The relay carries the agent's loopback port to the proxy's socket;
    /// not when the agent shares this machine's network (an engine's
    /// `network = "host"`), where it reaches the proxy itself.
    pub relay_proxy: bool,
}

/// The walls a session's process gets, in paths of this machine.
pub struct Walls {
    /// hangar's own binary (the relay, `hangar hook`, `hangar mcp`).
    pub hangar: String,
    /// The CLI's state folders.
    pub state: Vec<rules::StateBind>,
    /// Files under `HANGAR_HOME` made for the agent, read-only.
    pub files: Vec<String>,
    /// Writable folders besides the session's own (a worktree's git folder).
    pub writable: Vec<String>,
    /// The session's run folder: the proxy's socket and its own socket
    /// back to the daemon.
    pub run: String,
    /// `HANGAR_HOME/run`, where the control socket is.
    pub control_run: String,
    /// The proxy's socket and port, when the relay carries it.
    pub proxy: Option<(String, u16)>,
    /// The session's own socket back to the daemon, and where the control
    /// socket is (where `hangar hook` and `hangar mcp` look).
    pub callback: Option<(String, String)>,
    /// The agent's environment: no credential, placeholders for the keys.
    pub env: Vec<(String, String)>,
    /// What lives as long as the session's process.
    pub held: Held,
}

/// A variable of the daemon's environment (the person's), `None` when unset
/// or empty: where the person's own settings of each CLI are.
fn var(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Write what an adapter seeded into a sandbox's state folders, each file
/// private (it may hold the person's settings).
fn write_seeded(files: &[(PathBuf, Vec<u8>)]) -> Result<(), String> {
    for (to, bytes) in files {
        crate::paths::write_private(to, bytes)
            .map_err(|e| format!("cannot write {}: {e}", to.display()))?;
    }
    Ok(())
}

/// `$HOME` inside a sandbox: the daemon's own home path (an empty tmpfs).
fn inside_home() -> String {
    std::env::var("HOME")
        .ok()
        .filter(|h| h.starts_with('/') && h != "/")
        .unwrap_or_else(|| "/root".to_owned())
}

/// Where a path of a sandboxed session's state folders (`outside`, under
/// `$HANGAR_HOME/sandbox/<id>/`) is seen from inside its sandbox: what the
/// kernel shows for its open files in `/proc/<pid>/fd` (paths of its own
/// mount namespace). `None` for a session that is not sandboxed, or a path
/// outside its state folders.
pub fn inside_path(meta: &SessionMeta, outside: &Path) -> Option<PathBuf> {
    let dir = meta.sandbox.as_deref()?;
    rules::state_binds(
        hangar_providers::adapter(&meta.provider).sandbox_state(),
        dir,
        &inside_home(),
    )
    .into_iter()
    .find_map(|b| {
        let bound = Path::new(&b.outside);
        let bound = std::fs::canonicalize(bound).unwrap_or_else(|_| bound.to_owned());
        let rest = outside.strip_prefix(&bound).ok()?;
        Some(Path::new(&b.inside).join(rest))
    })
}

/// A worktree's git folder: written by every commit made in the worktree.
fn git_dir_of(meta: &SessionMeta) -> Option<String> {
    let w = meta.worktree.as_ref()?;
    let git = Path::new(&w.repo_root).join(".git");
    git.is_dir().then(|| git.display().to_string())
}

/// Secrets of `/etc` replaced by an empty file inside.
fn masked_files() -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["/etc", "/etc/ssh"] {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if rules::masked_etc_file(&name) && e.path().is_file() {
                out.push(e.path().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// A fork's state folders (`hangar fork` of a sandboxed or engine
/// session): a copy of its parent's CLI state folders (`from`, the parent's
/// session folder) made in `to`, so the fork's CLI finds the parent's
/// conversation to fork from while the parent's own transcript is only
/// ever read. Only the CLI's state folders are copied, never the run
/// folder's sockets. Files of any other kind (a socket, a fifo) are left
/// out; a symlink is copied as a symlink.
pub fn copy_state(provider: &hangar_core::Provider, from: &Path, to: &Path) -> Result<(), String> {
    make_private_dir(to).map_err(|e| format!("cannot make {}: {e}", to.display()))?;
    for folder in hangar_providers::adapter(provider).sandbox_state() {
        let source = from.join(folder.name);
        if !source.exists() {
            continue;
        }
        copy_tree(&source, &to.join(folder.name))?;
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    make_private_dir(to).map_err(|e| format!("cannot make {}: {e}", to.display()))?;
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", from.display()))?;
        let source = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry
            .file_type()
            .map_err(|e| format!("cannot read {}: {e}", source.display()))?;
        if kind.is_dir() {
            copy_tree(&source, &target)?;
        } else if kind.is_symlink() {
            let link = std::fs::read_link(&source)
                .map_err(|e| format!("cannot read {}: {e}", source.display()))?;
            std::os::unix::fs::symlink(&link, &target)
                .map_err(|e| format!("cannot make {}: {e}", target.display()))?;
        } else if kind.is_file() {
            std::fs::copy(&source, &target).map_err(|e| {
                format!(
                    "cannot copy {} to {}: {e}",
                    source.display(),
                    target.display()
                )
            })?;
        }
    }
    Ok(())
}

fn make_private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}

fn read_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// `name` on the daemon's `PATH`.
fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Keep the sandbox's pieces for as long as the process runs.
pub fn hold_until_exit(
    held: Held,
    mut exit: tokio::sync::watch::Receiver<Option<crate::pty::ExitCode>>,
) {
    if held.forwarder.is_none() && held.callback.is_none() {
        return;
    }
    tokio::spawn(async move {
        let _ = exit.wait_for(|e| e.is_some()).await;
        drop(held);
    });
}

/// What `hangar ls` says of the CLI's own sandbox for its commands inside
/// hangar's: turned off at its launch (`hangar_providers::launch`), since
/// the walls around the whole agent hold its commands too and a nested one
/// cannot be relied on here (no capability to make one; a nested bwrap
/// cannot mount `/proc`).
pub fn agent_sandbox(provider: &hangar_core::Provider) -> Option<&'static str> {
    hangar_providers::adapter(provider).own_sandbox()
}

/// Shared by the daemon's parts.
pub type SharedSandbox = Arc<Sandbox>;

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_core::{Provider, SessionId};

    #[test]
    fn a_forks_state_is_a_copy_of_its_parents_cli_state_without_its_sockets() {
        let home = tempfile::tempdir().unwrap();
        let parent = home.path().join("p");
        let project = parent.join("claude/projects/-w");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("c1.jsonl"), "{\"turn\":1}\n").unwrap();
        std::os::unix::fs::symlink("c1.jsonl", project.join("latest")).unwrap();
        std::fs::create_dir_all(parent.join("run")).unwrap();
        let socket = parent.join("run/hangar.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let fork = home.path().join("f");
        copy_state(&Provider::Claude, &parent, &fork).unwrap();
        let copied = fork.join("claude/projects/-w/c1.jsonl");
        assert_eq!(std::fs::read_to_string(&copied).unwrap(), "{\"turn\":1}\n");
        assert_eq!(
            std::fs::read_link(fork.join("claude/projects/-w/latest")).unwrap(),
            Path::new("c1.jsonl")
        );
        assert!(
            !fork.join("run").exists(),
            "the parent's sockets stay its own"
        );
        // The copy is the fork's: writing it leaves the parent's as it was.
        std::fs::write(&copied, "changed").unwrap();
        assert_eq!(
            std::fs::read_to_string(project.join("c1.jsonl")).unwrap(),
            "{\"turn\":1}\n"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(fork.join("claude"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn a_sandboxed_sessions_state_paths_map_to_where_its_processes_see_them() {
        let mut meta = SessionMeta::new(SessionId::from("s1"), Provider::Codex, "/w");
        let rollout = Path::new("/h/sandbox/s1/codex/sessions/2026/12/03/r.jsonl");
        assert_eq!(inside_path(&meta, rollout), None, "not sandboxed");
        meta.sandbox = Some("/h/sandbox/s1".into());
        assert_eq!(
            inside_path(&meta, rollout),
            Some(Path::new(&inside_home()).join(".codex/sessions/2026/12/03/r.jsonl"))
        );
        assert_eq!(inside_path(&meta, Path::new("/h/sandbox/s2/codex")), None);
    }
}
