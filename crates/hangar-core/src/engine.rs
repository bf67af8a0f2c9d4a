//! Sessions on a container engine (issue 32): the rules over plain data.
//!
//! A session started with `hangar new --engine NAME` keeps an
//! [`EngineBinding`] in its metadata for its whole life: every start runs it
//! on that engine and never outside it (DESIGN.md rule 14). Everything
//! hangar makes on an engine is named from the session's id and labelled
//! with the session and a hash of the hangar home that made it, so a
//! restart finds its own leftovers and never touches another home's.

use serde::{Deserialize, Serialize};

/// The label naming the session a container (or pod, or volume) belongs to.
pub const SESSION_LABEL: &str = "hangar.session";
/// The label naming the hangar home (as [`home_hash`]) that made it.
pub const HOME_LABEL: &str = "hangar.home";

/// Which engine a session runs on, as `hangar new --engine NAME [--image I]`
/// asked; kept in the session's metadata.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EngineBinding {
    /// The `[engines.NAME]` section of config.toml.
    pub name: String,
    /// The image asked for with `--image`; `None` takes the engine's own
    /// `image` setting at each start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

impl EngineBinding {
    /// The image this session runs: its own, else the engine's.
    pub fn image<'a>(&'a self, engine_default: Option<&'a str>) -> Option<&'a str> {
        self.image.as_deref().or(engine_default)
    }
}

/// The container (or pod) name of session `session_id`: one per session,
/// the same across hibernate and wake.
pub fn container_name(session_id: &str) -> String {
    format!("hangar-{}", sanitize(session_id))
}

/// The volume (or volume claim) that keeps the agent CLI's own state (its
/// home folder inside the container) across hibernate and wake.
pub fn volume_name(session_id: &str) -> String {
    format!("hangar-{}-home", sanitize(session_id))
}

/// Container and volume names take `[a-zA-Z0-9_.-]`; Kubernetes names are
/// lower case. A session id is a uuid, so this only guards odd imports.
fn sanitize(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// A short stable hash of the hangar home's path (FNV-1a, 64 bits, as 16
/// hex digits): the `hangar.home` label. Stable across releases, since a
/// label written by one version is read by the next.
pub fn home_hash(home: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in home.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The labels on everything hangar makes for a session.
pub fn labels(session_id: &str, home_hash: &str) -> Vec<(String, String)> {
    vec![
        (SESSION_LABEL.to_owned(), session_id.to_owned()),
        (HOME_LABEL.to_owned(), home_hash.to_owned()),
    ]
}

/// What a start of hangar does with a container it finds on an engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leftover {
    /// Not made by this home (another home's, or not hangar's): untouched.
    NotOurs,
    /// This home's, of a session it still has: kept (its volume and the
    /// CLI's state with it), stopped when running, since no agent of this
    /// daemon runs in it yet.
    Adopt { running: bool },
    /// This home's, of a session it no longer has: removed.
    Remove,
}

/// Decide about one container found on an engine. `labels` are its labels,
/// `known` says whether this home still has a session of that id.
pub fn leftover(
    labels: &[(String, String)],
    own_home_hash: &str,
    running: bool,
    known: impl Fn(&str) -> bool,
) -> Leftover {
    let label = |k: &str| {
        labels
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    match (label(HOME_LABEL), label(SESSION_LABEL)) {
        (Some(home), Some(session)) if home == own_home_hash => {
            if known(session) {
                Leftover::Adopt { running }
            } else {
                Leftover::Remove
            }
        }
        _ => Leftover::NotOurs,
    }
}

/// A folder or file of this machine mounted into a session's container (or
/// pod) at `inside`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    pub outside: String,
    pub inside: String,
    pub read_only: bool,
}

impl Mount {
    /// The Docker Engine API's `HostConfig.Binds` entry.
    pub fn bind(&self) -> String {
        if self.read_only {
            format!("{}:{}:ro", self.outside, self.inside)
        } else {
            format!("{}:{}", self.outside, self.inside)
        }
    }
}

/// The walls an agent in a container gets, the same as in hangar's own
/// sandbox (`crate::sandbox`): hangar's binary (its relay, hooks and MCP
/// server), the session's run folder (the proxy's socket and its own socket
/// back to the daemon), the CLI's state folders, the files hangar made for
/// it, and a worktree's git folder.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Walls {
    /// hangar's binary on this machine, mounted at
    /// [`crate::sandbox::INSIDE_HANGAR`].
    pub hangar: String,
    /// The session's run folder outside, and where it is inside: the
    /// control socket's folder (`HANGAR_HOME/run`), so the session's own
    /// socket is where `hangar hook` and `hangar mcp` look.
    pub run: (String, String),
    /// The CLI's state folders (its transcripts), read-write.
    pub state: Vec<crate::sandbox::StateBind>,
    /// Files under `HANGAR_HOME` made for the agent (the proxy's CA, hook
    /// settings, MCP config): read-only at their own path.
    pub files: Vec<String>,
    /// Other writable folders at their own path (a worktree's git folder).
    pub writable: Vec<String>,
}

/// The mounts of `walls`, in the order they must be made: a state folder
/// lies inside the home volume, so it comes after it (engines sort mounts
/// by depth; Kubernetes keeps the order).
pub fn wall_mounts(walls: &Walls) -> Vec<Mount> {
    let mount = |outside: &str, inside: &str, read_only| Mount {
        outside: outside.to_owned(),
        inside: inside.to_owned(),
        read_only,
    };
    let mut out = vec![
        mount(&walls.hangar, crate::sandbox::INSIDE_HANGAR, true),
        mount(&walls.run.0, &walls.run.1, false),
    ];
    out.extend(
        walls
            .state
            .iter()
            .map(|s| mount(&s.outside, &s.inside, false)),
    );
    out.extend(walls.files.iter().map(|f| mount(f, f, true)));
    out.extend(walls.writable.iter().map(|w| mount(w, w, false)));
    out
}

/// An engine's answer to "inspect this image" means "there is no such
/// image": a 404, or (Podman's compatible API) a "no such image" text in
/// another status.
pub fn image_missing(status: u16, message: &str) -> bool {
    status == 404 || message.to_ascii_lowercase().contains("no such image")
}

/// What a container's state word (`State.Status` of an inspect, `State`
/// of a listing) says, as hangar acts on it. Read as a plain word, never
/// through a closed list: Podman 4.3 answers Docker's API with words
/// Docker never uses (`stopped` and `stopping` while a container stops,
/// `initialized`, `unknown`; podman's `libpod/define/containerstate.go`),
/// and an engine may add more.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContainerState {
    /// Its processes run (`running`, Docker's `restarting`).
    Running,
    /// Its processes are frozen (`paused`): there, but no agent can run.
    Paused,
    /// On its way down (Podman's `stopping`, `removing`): a start now is
    /// refused until the stop ends.
    Stopping,
    /// Nothing runs in it (`created`, `configured`, `initialized`,
    /// `stopped`, `exited`, `dead`).
    NotRunning,
    /// A word no engine documents (Podman's own `unknown` among them):
    /// taken as not running, and the caller says so in the log.
    Unknown(String),
}

impl ContainerState {
    /// Read a state word; `running` is the inspect's `State.Running`, used
    /// only when there is no word (an engine older than the `Status` field).
    pub fn read(word: Option<&str>, running: Option<bool>) -> ContainerState {
        let Some(word) = word.map(str::trim).filter(|w| !w.is_empty()) else {
            return match running {
                Some(true) => ContainerState::Running,
                Some(false) => ContainerState::NotRunning,
                None => ContainerState::Unknown(String::new()),
            };
        };
        match word.to_ascii_lowercase().as_str() {
            "running" | "restarting" => ContainerState::Running,
            "paused" => ContainerState::Paused,
            "stopping" | "removing" => ContainerState::Stopping,
            "created" | "configured" | "initialized" | "stopped" | "exited" | "dead" => {
                ContainerState::NotRunning
            }
            _ => ContainerState::Unknown(word.to_owned()),
        }
    }

    /// Whether an agent's processes may be in it (a leftover of a killed
    /// daemon that must be stopped): running or frozen.
    pub fn holds_processes(&self) -> bool {
        matches!(self, ContainerState::Running | ContainerState::Paused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn names_follow_the_session_id_and_stay_valid() {
        assert_eq!(container_name("AB12-cd"), "hangar-ab12-cd");
        assert_eq!(volume_name("ab12"), "hangar-ab12-home");
        assert_eq!(container_name("a/b c"), "hangar-a-b-c");
    }

    #[test]
    fn the_home_hash_is_stable_and_tells_homes_apart() {
        // FNV-1a of the empty string is its offset basis.
        assert_eq!(home_hash(""), "cbf29ce484222325");
        assert_eq!(home_hash("/home/a/.hangar"), home_hash("/home/a/.hangar"));
        assert_ne!(home_hash("/home/a/.hangar"), home_hash("/home/b/.hangar"));
        assert_eq!(home_hash("/x").len(), 16);
    }

    #[test]
    fn a_leftover_of_another_home_is_never_ours() {
        let other = l(&[(HOME_LABEL, "other"), (SESSION_LABEL, "s1")]);
        assert_eq!(leftover(&other, "mine", true, |_| true), Leftover::NotOurs);
        let unlabelled = l(&[("app", "x")]);
        assert_eq!(
            leftover(&unlabelled, "mine", true, |_| true),
            Leftover::NotOurs
        );
        let no_session = l(&[(HOME_LABEL, "mine")]);
        assert_eq!(
            leftover(&no_session, "mine", true, |_| false),
            Leftover::NotOurs
        );
    }

    #[test]
    fn own_leftovers_are_adopted_when_known_and_removed_when_not() {
        let mine = l(&[(HOME_LABEL, "mine"), (SESSION_LABEL, "s1")]);
        assert_eq!(
            leftover(&mine, "mine", true, |s| s == "s1"),
            Leftover::Adopt { running: true }
        );
        assert_eq!(
            leftover(&mine, "mine", false, |s| s == "s1"),
            Leftover::Adopt { running: false }
        );
        assert_eq!(leftover(&mine, "mine", true, |_| false), Leftover::Remove);
    }

    #[test]
    fn a_container_gets_the_sandbox_walls_hangar_read_only_state_writable() {
        let walls = Walls {
            hangar: "/opt/hangar".into(),
            run: ("/h/sandbox/s1/run".into(), "/h/run".into()),
            state: crate::sandbox::state_binds(
                &[crate::sandbox::StateFolder {
                    name: "claude",
                    inside: ".claude",
                    var: "CLAUDE_CONFIG_DIR",
                    value: ".claude",
                }],
                "/h/sandbox/s1",
                "/root",
            ),
            files: vec!["/h/proxy/ca.pem".into()],
            writable: vec![],
        };
        let binds: Vec<String> = wall_mounts(&walls).iter().map(Mount::bind).collect();
        assert_eq!(
            binds,
            [
                "/opt/hangar:/run/hangar/hangar:ro",
                "/h/sandbox/s1/run:/h/run",
                "/h/sandbox/s1/claude:/root/.claude",
                "/h/proxy/ca.pem:/h/proxy/ca.pem:ro",
            ]
        );
    }

    #[test]
    fn a_podman_no_such_image_text_counts_as_missing() {
        assert!(image_missing(404, ""));
        // Podman 4.3's compatible API, read on this machine.
        assert!(image_missing(
            500,
            "failed to find image nosuch: docker.io/library/nosuch: No such image"
        ));
        assert!(!image_missing(500, "connection refused"));
    }

    #[test]
    fn the_session_image_wins_over_the_engine_default() {
        let own = EngineBinding {
            name: "p".into(),
            image: Some("local/a".into()),
        };
        assert_eq!(own.image(Some("local/b")), Some("local/a"));
        let default = EngineBinding {
            name: "p".into(),
            image: None,
        };
        assert_eq!(default.image(Some("local/b")), Some("local/b"));
        assert_eq!(default.image(None), None);
    }

    #[test]
    fn every_state_word_docker_and_podman_use_is_read_as_what_it_means() {
        use ContainerState as S;
        let read = |w: &str| ContainerState::read(Some(w), None);
        assert_eq!(read("running"), S::Running);
        assert_eq!(read("restarting"), S::Running);
        assert_eq!(read("paused"), S::Paused);
        // Podman 4.3 while a container stops: never an error.
        assert_eq!(read("stopping"), S::Stopping);
        assert_eq!(read("stopped"), S::NotRunning);
        assert_eq!(read("removing"), S::Stopping);
        for word in [
            "created",
            "configured",
            "initialized",
            "exited",
            "dead",
            "Exited",
        ] {
            assert_eq!(read(word), S::NotRunning, "{word}");
        }
        assert_eq!(read("unknown"), S::Unknown("unknown".into()));
        assert_eq!(read("hibernating"), S::Unknown("hibernating".into()));
        assert!(!read("hibernating").holds_processes());
        assert!(read("running").holds_processes() && read("paused").holds_processes());
        assert!(!read("stopping").holds_processes() && !read("stopped").holds_processes());
        // No word: the Running flag decides.
        assert_eq!(ContainerState::read(None, Some(true)), S::Running);
        assert_eq!(ContainerState::read(Some(""), Some(false)), S::NotRunning);
        assert_eq!(ContainerState::read(None, None), S::Unknown(String::new()));
    }
}
