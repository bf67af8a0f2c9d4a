//! hangar-proxy, the recording proxy: one HTTPS intercepting proxy inside
//! the daemon, shared by every session, instead of one proxy process per
//! agent.
//!
//! It starts lazily, with the first session that uses it, on 127.0.0.1 only.
//! Each claude or codex session with capture on is given its own proxy
//! credentials and hangar's CA (see `agent_env`); the proxy records the
//! exchanges with allow-listed hosts and tunnels everything else untouched.
//! A fault (port taken, CA unreadable) never stops an agent from starting
//! unless `[proxy] required = true`: the session starts without capture and
//! a notice says why (the daemon's `proxy_observer.rs` decides that).
//!
//! This crate must never depend on the daemon: what it sees (exchanges,
//! provider session ids) it reports through `ProxyObserver`, which the
//! daemon implements.
//!
//! Modules: `attribution` (credentials), `ca` (the CA and per-host
//! certificates), `capture` (the capture files), `config` (`[proxy]`),
//! `in_flight` (a recorded request and its stop reason), `observer` (what
//! the proxy reports), `relay` (one connection), `usage` (tokens and errors
//! from the traffic), `usage_replay` (usage rebuilt from the capture files
//! at start).

#![forbid(unsafe_code)]

pub mod attribution;
pub mod ca;
pub mod capture;
pub mod config;
pub mod confine;
pub mod in_flight;
pub mod observer;
pub mod prompt_texts;
pub mod relay;
pub mod usage;
pub mod usage_replay;

#[cfg(test)]
mod end_to_end;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use hangar_core::SessionId;
use hangar_protocol::view::{ProxyView, UsageView};

use attribution::Credential;
pub use config::ProxyConfig;
pub use confine::{Confinement, Secret};
pub use observer::{ExchangeReport, ProxyObserver};
use relay::Shared;
use usage::Usage;

/// Why the proxy could not serve a session.
#[derive(Debug, thiserror::Error)]
pub enum ProxyFault {
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Listen { port: u16, source: std::io::Error },
    #[error(transparent)]
    Ca(#[from] ca::CaError),
    #[error("cannot read [proxy] extra_ca_file {path}: {source}")]
    ExtraCa {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start the capture writer: {0}")]
    Capture(std::io::Error),
    #[error(
        "no system CA bundle found ([proxy] system_ca_bundle, else SSL_CERT_FILE and the usual /etc/ssl paths); codex trusts hangar's CA only through SSL_CERT_FILE, which replaces the system trust, so it runs without capture rather than with a bundle that breaks its other TLS clients"
    )]
    NoSystemBundle,
}

/// Per-session figures from the traffic.
#[derive(Debug, Default)]
pub struct Stats {
    by_session: Mutex<HashMap<String, SessionStats>>,
}

#[derive(Clone, Debug, Default)]
pub struct SessionStats {
    pub usage: Usage,
    pub last_error: Option<String>,
    /// When `last_error` happened (ms since the epoch): the fleet's latest
    /// error is the one `hangar status` shows.
    pub last_error_at: u64,
    pub provider_id: Option<String>,
}

impl Stats {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, SessionStats>> {
        self.by_session.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn turn(&self, session: &str, usage: &Usage) {
        self.table()
            .entry(session.to_owned())
            .or_default()
            .usage
            .add(usage);
    }

    pub fn error(&self, session: &str, message: String) {
        tracing::warn!("proxy, session {session}: {message}");
        let mut t = self.table();
        let s = t.entry(session.to_owned()).or_default();
        s.last_error = Some(message);
        s.last_error_at = hangar_clock::now_ms();
    }

    /// Add what earlier daemons recorded (rebuilt from the capture files).
    pub fn seed(&self, replayed: HashMap<String, usage_replay::Replayed>) {
        let mut t = self.table();
        for (session, r) in replayed {
            let s = t.entry(session).or_default();
            s.usage.add(&r.usage);
            if let Some((at, message)) = r.last_error
                && (s.last_error.is_none() || at > s.last_error_at)
            {
                s.last_error = Some(message);
                s.last_error_at = at;
            }
        }
    }

    /// Totals over every session, and the latest error with its session.
    pub fn fleet(&self) -> (Usage, Option<(String, String)>) {
        let t = self.table();
        let mut total = Usage::default();
        let mut latest: Option<(u64, &str, &str)> = None;
        for (session, s) in t.iter() {
            total.add(&s.usage);
            if let Some(e) = &s.last_error
                && latest.is_none_or(|(at, _, _)| s.last_error_at >= at)
            {
                latest = Some((s.last_error_at, session, e));
            }
        }
        let latest = latest.map(|(_, session, e)| (session.to_owned(), e.to_owned()));
        (total, latest)
    }

    /// Pass a provider session id on to the observer when it is new.
    pub fn observe_provider_id(&self, session: &str, id: &str, to: &dyn ProxyObserver) {
        let new = {
            let mut t = self.table();
            let s = t.entry(session.to_owned()).or_default();
            let new = s.provider_id.as_deref() != Some(id);
            if new {
                s.provider_id = Some(id.to_owned());
            }
            new
        };
        // Told outside the table's lock: the observer is the daemon's code.
        if new {
            to.provider_session_id_seen(session, id);
        }
    }

    pub fn get(&self, session: &str) -> Option<SessionStats> {
        self.table().get(session).cloned()
    }
}

struct Running {
    port: u16,
    shared: Arc<Shared>,
}

/// The daemon's handle on the proxy.
pub struct Proxy {
    config: ProxyConfig,
    home: PathBuf,
    running: tokio::sync::Mutex<Option<Arc<Running>>>,
    /// Set once running, for synchronous readers (`ls`, `status`).
    snapshot: Mutex<Option<Arc<Running>>>,
    last_fault: Mutex<Option<String>>,
    /// Usage per session: outlives a proxy start, and is seeded from the
    /// capture files so a daemon restart does not reset it.
    stats: Arc<Stats>,
}

/// Credentials handed to one process; dropping it revokes them.
pub struct Lease {
    shared: Arc<Shared>,
    credential: Credential,
}

impl Lease {
    /// Confine this grant's session: a sandboxed process (issue 32).
    pub fn confine(&self, confinement: Confinement) {
        self.shared.grants.confine(&self.credential, confinement);
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.shared.grants.revoke(&self.credential);
        self.shared.sink.close(&self.credential.session);
    }
}

/// What a session's process is given to use the proxy.
pub struct Grant {
    pub env: Vec<(String, String)>,
    pub lease: Lease,
    /// The hosts the proxy captures (`allow_hosts`): the agent's
    /// `NO_PROXY` must not send them around it, loopback names included.
    pub captured_hosts: Vec<String>,
    /// The proxy's port on 127.0.0.1 (a sandbox relays to it).
    pub port: u16,
}

impl Proxy {
    pub fn new(config: ProxyConfig, home: PathBuf) -> Proxy {
        let stats = Arc::new(Stats::default());
        let started_ms = hangar_clock::now_ms();
        let (root, seeded) = (home.join("capture"), stats.clone());
        // Reading every capture file can take a while in a big home: never
        // hold the daemon's start up for it. Turns of this daemon are
        // counted live, so only earlier ones are read back.
        let replay = std::thread::Builder::new()
            .name("hangar-usage-replay".into())
            .spawn(move || seeded.seed(usage_replay::replay(&root, started_ms)));
        if let Err(e) = replay {
            tracing::warn!("cannot read past usage from the capture files: {e}");
        }
        Proxy {
            config,
            home,
            running: tokio::sync::Mutex::new(None),
            snapshot: Mutex::new(None),
            last_fault: Mutex::new(None),
            stats,
        }
    }

    pub fn config(&self) -> &ProxyConfig {
        &self.config
    }

    pub fn ca_files(&self) -> ca::CaFiles {
        ca::CaFiles::new(self.home.join("proxy"))
    }

    pub fn capture_root(&self) -> PathBuf {
        self.home.join("capture")
    }

    /// Start the proxy if it is not running, reporting to the observer
    /// `observer` makes (asked only for a start). A failed start is not
    /// cached: the next session tries again (the port may have been freed).
    async fn ensure_started<O: ProxyObserver>(
        &self,
        observer: impl FnOnce() -> O,
    ) -> Result<Arc<Running>, ProxyFault> {
        let mut running = self.running.lock().await;
        if let Some(r) = running.as_ref() {
            return Ok(r.clone());
        }
        let result = self.start(Arc::new(observer())).await;
        match &result {
            Ok(r) => {
                *running = Some(r.clone());
                *self.snapshot.lock().unwrap_or_else(|p| p.into_inner()) = Some(r.clone());
                *self.last_fault.lock().unwrap_or_else(|p| p.into_inner()) = None;
                tracing::info!("recording proxy listening on 127.0.0.1:{}", r.port);
            }
            Err(e) => {
                *self.last_fault.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
            }
        }
        result
    }

    async fn start(&self, observer: Arc<dyn ProxyObserver>) -> Result<Arc<Running>, ProxyFault> {
        let authority = ca::Authority::load_or_create(self.ca_files())?;
        let upstream_tls = Arc::new(self.upstream_tls()?);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", self.config.port))
            .await
            .map_err(|source| ProxyFault::Listen {
                port: self.config.port,
                source,
            })?;
        let port = listener
            .local_addr()
            .map_err(|source| ProxyFault::Listen {
                port: self.config.port,
                source,
            })?
            .port();
        let limits = capture::Limits {
            max_file_bytes: self.config.max_capture_bytes.max(1024),
            max_files: self.config.max_files.max(1),
            max_body_bytes: self.config.max_body_bytes,
        };
        let sink =
            capture::Sink::start(self.capture_root(), limits).map_err(ProxyFault::Capture)?;
        let shared = Arc::new(Shared {
            grants: Default::default(),
            ca: authority,
            sink,
            allow_hosts: self
                .config
                .allow_hosts
                .iter()
                .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
                .collect(),
            upstream_tls,
            stats: self.stats.clone(),
            exchanges: AtomicU64::new(0),
            observer,
        });
        let accepting = shared.clone();
        tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((tcp, _)) => {
                        tokio::spawn(relay::serve_client(accepting.clone(), tcp));
                    }
                    Err(e) => {
                        // Out of fds, most likely: back off instead of spinning.
                        tracing::warn!("proxy accept failed: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    }
                }
            }
        });
        Ok(Arc::new(Running { port, shared }))
    }

    /// The system's roots plus `extra_ca_file`.
    fn upstream_tls(&self) -> Result<rustls::ClientConfig, ProxyFault> {
        let mut roots = rustls::RootCertStore::empty();
        let native = rustls_native_certs::load_native_certs();
        for cert in native.certs {
            let _ = roots.add(cert);
        }
        if let Some(path) = &self.config.extra_ca_file {
            let certs = ca::certificates_in(path).map_err(|source| ProxyFault::ExtraCa {
                path: path.clone(),
                source,
            })?;
            for cert in certs {
                roots.add(cert).map_err(|e| ProxyFault::ExtraCa {
                    path: path.clone(),
                    source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
                })?;
            }
        }
        let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| ProxyFault::Capture(std::io::Error::other(e)))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }

    /// Credentials and trust for one process of `session`, whose CLI
    /// trusts hangar's CA the `trust` way (its adapter's). `observer` is
    /// asked for the proxy's observer when this grant is what starts it.
    pub async fn grant(
        &self,
        session: &SessionId,
        trust: CaTrust,
        observer: impl FnOnce() -> Arc<dyn ProxyObserver>,
    ) -> Result<Grant, ProxyFault> {
        let running = self.ensure_started(observer).await?;
        let files = running.shared.ca.files.clone();
        // Checked at every such start (codex's): a system CA update since
        // the last one remakes the bundle.
        let bundle = match trust {
            CaTrust::Bundle => {
                let system = match &self.config.system_ca_bundle {
                    Some(p) => Some(p.clone()),
                    None => ca::system_bundle(),
                }
                // Never a bundle of itself (a daemon started inside codex).
                .filter(|p| p.is_file() && *p != files.bundle());
                Some(
                    running
                        .shared
                        .ca
                        .ensure_bundle_from(system.as_deref())?
                        .ok_or(ProxyFault::NoSystemBundle)?,
                )
            }
            CaTrust::Added => None,
        };
        let credential = running.shared.grants.grant(session.as_str());
        Ok(Grant {
            port: running.port,
            captured_hosts: self.config.allow_hosts.clone(),
            env: agent_env(
                &credential.proxy_url(running.port),
                &files,
                bundle.as_deref(),
            ),
            lease: Lease {
                shared: running.shared.clone(),
                credential,
            },
        })
    }

    /// Whether a session with this capture flag, of a CLI whose requests
    /// go through the proxy (`proxied`, its adapter's), uses the proxy.
    pub fn wanted(&self, proxied: bool, capture: bool) -> bool {
        self.config.enabled && capture && proxied
    }

    fn running_now(&self) -> Option<Arc<Running>> {
        self.snapshot
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// `usage` of `hangar ls`: null until the session's traffic was seen.
    pub fn usage_view(&self, session: &str) -> Option<UsageView> {
        let s = self.stats.get(session)?;
        Some(UsageView {
            input_tokens: s.usage.input_tokens,
            output_tokens: s.usage.output_tokens,
            requests: s.usage.requests,
            errors: s.usage.errors,
            last_error: s.last_error,
        })
    }

    /// `proxy` of `hangar status`.
    pub fn view(&self) -> ProxyView {
        let running = self.running_now();
        let (total, latest) = self.stats.fleet();
        let (last_error_session, last_error) = latest.unzip();
        ProxyView {
            usage: UsageView {
                input_tokens: total.input_tokens,
                output_tokens: total.output_tokens,
                requests: total.requests,
                errors: total.errors,
                last_error,
            },
            last_error_session,
            enabled: self.config.enabled,
            running: running.is_some(),
            port: running.as_ref().map(|r| r.port),
            sessions: running.as_ref().map_or(0, |r| r.shared.grants.len()),
            allow_hosts: self.config.allow_hosts.clone(),
            ca_file: self.ca_files().cert().display().to_string(),
            capture_dir: self.capture_root().display().to_string(),
            fault: self
                .last_fault
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }
}

/// How a CLI trusts hangar's CA (its adapter says which: hangar-providers'
/// `Adapter::ca_trust`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaTrust {
    /// Added to its built-in roots (`NODE_EXTRA_CA_CERTS`: Node's CLIs).
    Added,
    /// A bundle that replaces its trust store (`SSL_CERT_FILE`: codex's
    /// rustls or native-tls), so the system's roots plus hangar's CA.
    Bundle,
}

/// The environment a session's process gets to use the proxy.
///
/// Every agent: `HTTPS_PROXY`/`HTTP_PROXY` (and lowercase) with its own
/// credentials. Claude (Node): `NODE_EXTRA_CA_CERTS`, which adds hangar's CA
/// to Node's built-in roots without replacing them. Codex (Rust, reqwest
/// with rustls-native-certs or native-tls): `SSL_CERT_FILE` pointing at
/// `ca-bundle.pem`, the system bundle plus hangar's CA, because that
/// variable replaces the trust store rather than adding to it (`bundle`,
/// given for codex only); it also gets `NODE_EXTRA_CA_CERTS` for its Node
/// launcher.
pub fn agent_env(
    proxy_url: &str,
    files: &ca::CaFiles,
    bundle: Option<&std::path::Path>,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"]
        .iter()
        .map(|k| ((*k).to_owned(), proxy_url.to_owned()))
        .collect();
    env.push((
        "NODE_EXTRA_CA_CERTS".into(),
        files.cert().display().to_string(),
    ));
    if let Some(bundle) = bundle {
        env.push(("SSL_CERT_FILE".into(), bundle.display().to_string()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_gets_node_extra_ca_certs_and_codex_a_full_bundle() {
        let files = ca::CaFiles::new(PathBuf::from("/h/proxy"));
        let claude = agent_env("http://s:t@127.0.0.1:1", &files, None);
        let get = |env: &[(String, String)], k: &str| {
            env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        };
        for k in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"] {
            assert_eq!(get(&claude, k).as_deref(), Some("http://s:t@127.0.0.1:1"));
        }
        assert_eq!(
            get(&claude, "NODE_EXTRA_CA_CERTS").as_deref(),
            Some("/h/proxy/ca.pem")
        );
        assert_eq!(
            get(&claude, "SSL_CERT_FILE"),
            None,
            "claude keeps the system trust"
        );
        let codex = agent_env("http://s:t@127.0.0.1:1", &files, Some(&files.bundle()));
        assert_eq!(
            get(&codex, "SSL_CERT_FILE").as_deref(),
            Some("/h/proxy/ca-bundle.pem")
        );
    }

    #[test]
    fn fleet_totals_add_every_session_and_name_the_latest_error() {
        let stats = Stats::default();
        let turn = |i, o| Usage {
            input_tokens: i,
            output_tokens: o,
            requests: 1,
            errors: 0,
        };
        stats.seed(HashMap::from([
            (
                "old".to_owned(),
                usage_replay::Replayed {
                    usage: turn(10, 1),
                    last_error: Some((5, "from the capture files".to_owned())),
                },
            ),
            (
                "live".to_owned(),
                usage_replay::Replayed {
                    usage: turn(3, 3),
                    last_error: None,
                },
            ),
        ]));
        stats.turn("live", &turn(2, 2));
        let (total, latest) = stats.fleet();
        assert_eq!(
            (total.input_tokens, total.output_tokens, total.requests),
            (15, 6, 3)
        );
        assert_eq!(
            latest,
            Some(("old".to_owned(), "from the capture files".to_owned()))
        );
        // An error seen now is later than anything read back.
        stats.error("live", "upstream failed".to_owned());
        assert_eq!(
            stats.fleet().1,
            Some(("live".to_owned(), "upstream failed".to_owned()))
        );
        assert_eq!(
            stats.get("old").unwrap().last_error.as_deref(),
            Some("from the capture files")
        );
    }

    #[test]
    fn only_proxied_clis_sessions_with_capture_use_the_proxy() {
        let p = Proxy::new(ProxyConfig::default(), PathBuf::from("/h"));
        assert!(p.wanted(true, true));
        assert!(!p.wanted(true, false));
        assert!(!p.wanted(false, true));
        let off = Proxy::new(
            ProxyConfig {
                enabled: false,
                ..Default::default()
            },
            PathBuf::from("/h"),
        );
        assert!(!off.wanted(true, true));
    }
}
