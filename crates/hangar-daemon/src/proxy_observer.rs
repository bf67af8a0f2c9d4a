//! The daemon's side of the recording proxy (hangar-proxy): the observer
//! that turns what the proxy sees into activity signals and provider ids,
//! and the glue that gives a session about to start its proxy grant.
//!
//! The proxy itself never sees the daemon; everything it needs from the
//! daemon's state is read here, and nothing here holds the state lock
//! across an await.

use std::sync::Arc;

use hangar_core::SessionId;
use hangar_proxy::{Grant, Proxy, ProxyObserver};

use crate::activity::sources::proxy::Signal;
use crate::identity::Identity;
use crate::journal::FailureKind;
use crate::sessions::Sessions;
use crate::spawn_failure::SpawnFailure;

/// What the daemon does with what the proxy sees.
struct DaemonProxyObserver {
    /// Recorded requests in flight mean working; their stop reason ends the
    /// turn (issue 11).
    activity: Arc<crate::activity::Hub>,
    /// Provider session ids seen in headers, recorded by a task of their
    /// own (the relay must never wait on the store).
    provider_ids: tokio::sync::mpsc::UnboundedSender<(String, String)>,
    /// Metered exchanges, for the usage ledger (issue 29).
    usage: tokio::sync::mpsc::UnboundedSender<(String, hangar_proxy::ExchangeReport)>,
}

impl ProxyObserver for DaemonProxyObserver {
    fn exchange_started(&self, session: &str, prompts: Vec<String>) {
        self.activity
            .proxy_signal(session, Signal::RequestStarted { prompts });
    }

    fn exchange_finished(&self, session: &str, stop_reason: Option<String>) {
        self.activity
            .proxy_signal(session, Signal::RequestFinished { stop_reason });
    }

    fn provider_session_id_seen(&self, session: &str, id: &str) {
        self.provider_ids.provider_session_id_seen(session, id);
    }

    fn exchange_metered(&self, session: &str, report: hangar_proxy::ExchangeReport) {
        // A closed receiver means the daemon is shutting down.
        if self.usage.send((session.to_owned(), report)).is_err() {
            tracing::debug!("usage of session {session} not recorded: ledger gone");
        }
    }
}

/// Proxy grants for sessions about to start, and the observer the proxy
/// reports to.
pub struct ProxyGrants {
    sessions: Arc<Sessions>,
    /// The recording proxy shared by every session; started lazily.
    proxy: Arc<Proxy>,
    activity: Arc<crate::activity::Hub>,
    /// Records the provider session ids the proxy sees.
    identity: Arc<Identity>,
    /// Takes every metered exchange (the usage ledger).
    usage: tokio::sync::mpsc::UnboundedSender<(String, hangar_proxy::ExchangeReport)>,
}

impl ProxyGrants {
    pub fn new(
        sessions: Arc<Sessions>,
        proxy: Arc<Proxy>,
        activity: Arc<crate::activity::Hub>,
        identity: Arc<Identity>,
        usage: tokio::sync::mpsc::UnboundedSender<(String, hangar_proxy::ExchangeReport)>,
    ) -> ProxyGrants {
        ProxyGrants {
            sessions,
            proxy,
            activity,
            identity,
            usage,
        }
    }

    /// The proxy environment for a session about to start, or `None` when it
    /// runs without capture. A proxy fault is a per-session notice, or a
    /// failed start when `[proxy] required = true`.
    pub(crate) async fn proxy_grant(
        self: &Arc<Self>,
        id: &SessionId,
    ) -> Result<Option<Grant>, SpawnFailure> {
        let Some((provider, capture, sandboxed)) = self
            .sessions
            .meta(id)
            .map(|m| (m.provider, m.capture, m.sandbox.is_some()))
        else {
            return Ok(None);
        };
        // A sandboxed agent's only way out is the proxy (issue 32): without
        // it the agent would start and reach nothing, so its start fails
        // (fail closed) with the reason, whatever `[proxy] required` says.
        let sandbox_needs_it = sandboxed && capture && provider.is_agent();
        if sandbox_needs_it && !self.proxy.config().enabled {
            return Err(SpawnFailure::new(
                FailureKind::Other,
                format!(
                    "cannot start {} in its sandbox: its only way to its model is hangar's proxy, \
                     which is off ([proxy] enabled = false in config.toml); turn the proxy on, or \
                     start the session with --no-capture to run it with no network at all",
                    id.short()
                ),
            ));
        }
        let adapter = hangar_providers::adapter(&provider);
        if !self.proxy.wanted(adapter.proxied(), capture) && !sandbox_needs_it {
            return Ok(None);
        }
        let daemon = self.clone();
        let observer = move || daemon.proxy_observer();
        let trust = if adapter.replaces_trust_store() {
            hangar_proxy::CaTrust::Bundle
        } else {
            hangar_proxy::CaTrust::Added
        };
        match self.proxy.grant(id, trust, observer).await {
            Ok(g) => Ok(Some(g)),
            Err(fault) if sandbox_needs_it => Err(SpawnFailure::new(
                FailureKind::Other,
                format!(
                    "cannot start {} in its sandbox: hangar's proxy, its only way to its model, \
                     is down: {fault}",
                    id.short()
                ),
            )),
            Err(fault) if self.proxy.config().required => Err(SpawnFailure::new(
                FailureKind::Other,
                format!(
                    "cannot start {} with capture: {fault}; capture is required by [proxy] required = true in config.toml",
                    id.short()
                ),
            )),
            Err(fault) => {
                let notice = format!("session {} started without capture: {fault}", id.short());
                tracing::warn!("{notice}");
                self.sessions.notice_once(notice);
                Ok(None)
            }
        }
    }

    /// Keep `grant`'s credentials valid until the process exits.
    pub(crate) fn hold_grant_until_exit(
        &self,
        grant: Grant,
        mut exit: tokio::sync::watch::Receiver<Option<crate::pty::ExitCode>>,
    ) {
        tokio::spawn(async move {
            let _ = exit.wait_for(|e| e.is_some()).await;
            drop(grant.lease);
        });
    }

    /// The proxy's observer, made when the proxy starts.
    fn proxy_observer(self: &Arc<Self>) -> Arc<dyn ProxyObserver> {
        Arc::new(DaemonProxyObserver {
            activity: self.activity.clone(),
            provider_ids: self.provider_ids_from_proxy(),
            usage: self.usage.clone(),
        })
    }

    /// A channel whose receiver records provider session ids seen in request
    /// headers (source `proxy-header`: provisional, never resumed).
    fn provider_ids_from_proxy(
        self: &Arc<Self>,
    ) -> tokio::sync::mpsc::UnboundedSender<(String, String)> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, String)>();
        let daemon = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some((session, id)) = rx.recv().await {
                let Some(daemon) = daemon.upgrade() else {
                    return;
                };
                let session = SessionId::from(session.as_str());
                let Some(cwd) = daemon.sessions.meta(&session).map(|m| m.cwd) else {
                    continue;
                };
                let observed = hangar_core::ledger::Observation {
                    id,
                    source: hangar_core::IdSource::ProxyHeader,
                    cwd: None,
                };
                daemon
                    .identity
                    .record_provider_id(&session, &observed, &cwd);
            }
        });
        tx
    }
}
