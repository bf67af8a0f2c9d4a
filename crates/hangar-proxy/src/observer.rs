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
    /// upstream: the agent is working.
    fn exchange_started(&self, session: &str);

    /// That request's response ended (or was cut off, or never came).
    /// `stop_reason` is the provider's own word for how the turn stopped
    /// (`end_turn`, `tool_use`, `stop`, `tool_calls`...), `None` when the
    /// response carried none.
    fn exchange_finished(&self, session: &str, stop_reason: Option<String>);

    /// A provider session id `id` was seen in a request of `session`, for
    /// the first time or changed since. Provisional: a header, never proof.
    fn provider_session_id_seen(&self, session: &str, id: &str);
}

/// A channel that hears of provider session ids only (exchanges are not
/// reported): what a caller needs that only records ids.
impl ProxyObserver for tokio::sync::mpsc::UnboundedSender<(String, String)> {
    fn exchange_started(&self, _session: &str) {}

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
    fn exchange_started(&self, session: &str) {
        (**self).exchange_started(session)
    }

    fn exchange_finished(&self, session: &str, stop_reason: Option<String>) {
        (**self).exchange_finished(session, stop_reason)
    }

    fn provider_session_id_seen(&self, session: &str, id: &str) {
        (**self).provider_session_id_seen(session, id)
    }
}
