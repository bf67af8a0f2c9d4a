//! One section of the daemon's settings, for a subsystem that reads it while
//! it runs (not on behalf of one request): each `get` is the section of the
//! settings in use then, so a reload takes effect at the next use.
//!
//! Generic on purpose: it never names the whole `Config`, so an owner can
//! define its section type beside its code and hold a `Section` of it while
//! `config.rs`, which assembles every owner's section, stays the root of the
//! crate's imports (nothing imports it but lib.rs, the handlers and reload).

use std::sync::Arc;

pub struct Section<T: 'static> {
    read: Arc<dyn Fn() -> &'static T + Send + Sync>,
}

impl<T: 'static> Clone for Section<T> {
    fn clone(&self) -> Self {
        Section {
            read: self.read.clone(),
        }
    }
}

impl<T: 'static> Section<T> {
    /// The section `read` returns each time it is asked (config.rs's
    /// `LiveConfig::section` picks it out of the settings in use).
    pub fn new(read: impl Fn() -> &'static T + Send + Sync + 'static) -> Section<T> {
        Section {
            read: Arc::new(read),
        }
    }

    /// The section as it is now.
    pub fn get(&self) -> &'static T {
        (self.read)()
    }
}
