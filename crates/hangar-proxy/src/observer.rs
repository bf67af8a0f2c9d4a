//! What the proxy tells whoever runs it: a recorded exchange began or ended,
//! and a provider session id showed up in a request's headers.
//!
//! The proxy never reaches into the daemon; the daemon implements this trait
//! (hangar-daemon's `proxy_observer.rs`) and hands it over when the proxy
//! first starts. Every method is called on the relay's own task, so an
//! implementation must return at once: anything slow (a store write) goes
//! to a task of its own.

/// Told about every recorded exchange of a session.
pub trait ProxyObserver: Send + Sync + 'static {
    /// A recorded request of `session` was received and is about to go
    /// upstream: the agent is working. `prompts` are the fingerprints of
    /// the texts in its trailing user messages
    /// (`prompt_texts::trailing_user_prints`).
    fn exchange_started(&self, session: &str, prompts: Vec<String>);

    /// That request's response ended (or was cut off, or never came).
    /// `stop_reason` is the provider's own word for how the turn stopped
    /// (`end_turn`, `tool_use`, `stop`, `tool_calls`...), `None` when the
    /// response carried none.
    fn exchange_finished(&self, session: &str, stop_reason: Option<String>);

    /// A provider session id `id` was seen in a request of `session`, for
    /// the first time or changed since. Provisional: a header, never proof.
    fn provider_session_id_seen(&self, session: &str, id: &str);

    /// A recorded exchange ended, with what the usage ledger needs (issue
    /// 29): tokens, the rate-limit headers, the account. Observers that keep
    /// no ledger ignore it.
    fn exchange_metered(&self, _session: &str, _report: ExchangeReport) {}
}

/// One recorded exchange, metered (`ProxyObserver::exchange_metered`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExchangeReport {
    /// The proxy's own number of the exchange (unique in this daemon run).
    pub exchange: u64,
    /// The request path (`/v1/messages?beta=true`), query redacted.
    pub path: String,
    pub status: u16,
    /// The response headers whose names a ledger reads (rate limits,
    /// `retry-after`, `request-id`), lower-cased.
    pub headers: Vec<(String, String)>,
    /// `sha256:` and 16 hex digits of the credential the request carried
    /// (`x-api-key` or `authorization`): the account, never the credential.
    pub account: Option<String>,
    /// Milliseconds since the epoch when the request was sent.
    pub at_ms: i64,
    pub usage: crate::usage::Usage,
    pub detail: crate::usage::MeterDetail,
    /// The response was cut off or failed upstream.
    pub error: Option<String>,
}

/// Whether a response header is one the ledger reads.
pub fn ledger_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with("anthropic-ratelimit-")
        || n.starts_with("x-codex-")
        || n == "retry-after"
        || n == "request-id"
        || n == "x-request-id"
}

/// A channel that hears of provider session ids only (exchanges are not
/// reported): what a caller needs that only records ids.
impl ProxyObserver for tokio::sync::mpsc::UnboundedSender<(String, String)> {
    fn exchange_started(&self, _session: &str, _prompts: Vec<String>) {}

    fn exchange_finished(&self, _session: &str, _stop_reason: Option<String>) {}

    fn provider_session_id_seen(&self, session: &str, id: &str) {
        // A closed receiver means its owner has shut down: nobody is left
        // to record the id.
        if self.send((session.to_owned(), id.to_owned())).is_err() {
            tracing::debug!("provider id {id} of session {session} not recorded: receiver gone");
        }
    }
}

impl<T: ProxyObserver + ?Sized> ProxyObserver for std::sync::Arc<T> {
    fn exchange_started(&self, session: &str, prompts: Vec<String>) {
        (**self).exchange_started(session, prompts)
    }

    fn exchange_finished(&self, session: &str, stop_reason: Option<String>) {
        (**self).exchange_finished(session, stop_reason)
    }

    fn provider_session_id_seen(&self, session: &str, id: &str) {
        (**self).provider_session_id_seen(session, id)
    }

    fn exchange_metered(&self, session: &str, report: ExchangeReport) {
        (**self).exchange_metered(session, report)
    }
}
