//! Who may use `hangar web`: the pairing token, the browsers paired with it,
//! failed-login limits and revocation.
//!
//! The web view exposes every shell hangar runs, so the rules are strict:
//! - One pairing token per `hangar web` run, made here from the OS's random
//!   source and kept only in this process's memory (never on a command line,
//!   never in a log). A script presents it as `Authorization: Bearer`; a
//!   browser opens the printed URL once and gets its own cookie secret in
//!   exchange.
//! - Every credential of a run dies when the revocation epoch in
//!   `$HANGAR_HOME/web/revoked` changes (`hangar web --revoke` writes a new
//!   one), so a lost phone is cut off from a running server without
//!   restarting it.
//! - Wrong credentials count against the client's address; past
//!   [`FAILURES_ALLOWED`] in [`FAILURE_WINDOW`] it is refused outright.
//!
//! This module never logs a secret and never compares one in a way whose
//! time depends on where it differs.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::Read;
use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed logins an address may make within [`FAILURE_WINDOW`].
pub const FAILURES_ALLOWED: usize = 5;
pub const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered by the limiter; beyond this the quietest is forgotten
/// first, so a flood of spoofed sources cannot grow memory without bound.
const TRACKED_ADDRESSES: usize = 4096;
/// Browsers one run will pair; more is an attack, not a person.
const MAX_BROWSERS: usize = 256;

/// The cookie a paired browser carries.
pub const COOKIE: &str = "hangar_web";

/// What a credential lets its holder do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Look, type and act.
    Full,
    /// Look only: typing and actions are refused (403).
    ReadOnly,
}

/// A secret: 32 random bytes as hex. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Secret(String);

impl Secret {
    pub fn random() -> std::io::Result<Secret> {
        let mut bytes = [0u8; 32];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        Ok(Secret(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Equal to `presented`, in time that does not depend on where they differ.
    pub fn matches(&self, presented: &str) -> bool {
        constant_time_eq(self.0.as_bytes(), presented.as_bytes())
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// How a request identified itself.
#[derive(Debug, PartialEq, Eq)]
pub enum Presented<'a> {
    Nothing,
    Bearer(&'a str),
    Cookie(&'a str),
}

/// The verdict on a request's credential.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed {
        access: Access,
        /// Proven by a cookie (a browser), so cross-site forgery is possible
        /// and the Origin must be checked.
        by_cookie: bool,
    },
    /// No credential at all: 401, not counted as a failed login.
    Missing,
    /// A wrong credential: 401, counted.
    Wrong,
    /// This run's credentials were revoked: 401.
    Revoked,
    /// Too many failed logins from this address: 429.
    Limited,
}

/// The revocation epoch file: its content changes on every `--revoke`.
#[derive(Debug, Clone)]
pub struct Revocation {
    file: PathBuf,
}

impl Revocation {
    pub fn new(home: &Path) -> Revocation {
        Revocation {
            file: home.join("web").join("revoked"),
        }
    }

    /// The current epoch, creating the file on first use.
    pub fn current(&self) -> std::io::Result<String> {
        match std::fs::read_to_string(&self.file) {
            Ok(s) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
            Ok(_) => self.renew(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.renew(),
            Err(e) => Err(e),
        }
    }

    /// Write a new epoch: every credential issued under the old one stops
    /// working, in every running `hangar web` of this home.
    pub fn renew(&self) -> std::io::Result<String> {
        let dir = self.file.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        let epoch = Secret::random()?.0;
        // Written whole and renamed: a server reading mid-write would
        // otherwise see an empty epoch.
        hangar_protocol::paths::write_private(&self.file, epoch.as_bytes())?;
        Ok(epoch)
    }
}

/// Failed logins per address, over a sliding window. Pure: the caller passes
/// the time.
#[derive(Debug, Default)]
pub struct FailureLimiter {
    by_address: HashMap<IpAddr, VecDeque<Instant>>,
}

impl FailureLimiter {
    fn forget_old(&mut self, ip: IpAddr, now: Instant) {
        if let Some(times) = self.by_address.get_mut(&ip) {
            while times
                .front()
                .is_some_and(|t| now.duration_since(*t) >= FAILURE_WINDOW)
            {
                times.pop_front();
            }
            if times.is_empty() {
                self.by_address.remove(&ip);
            }
        }
    }

    /// Whether `ip` has used up its failed logins.
    pub fn is_limited(&mut self, ip: IpAddr, now: Instant) -> bool {
        self.forget_old(ip, now);
        self.by_address
            .get(&ip)
            .is_some_and(|t| t.len() >= FAILURES_ALLOWED)
    }

    pub fn record_failure(&mut self, ip: IpAddr, now: Instant) {
        self.forget_old(ip, now);
        if !self.by_address.contains_key(&ip) && self.by_address.len() >= TRACKED_ADDRESSES {
            let quietest = self
                .by_address
                .iter()
                .min_by_key(|(_, t)| t.back().copied())
                .map(|(ip, _)| *ip);
            if let Some(q) = quietest {
                self.by_address.remove(&q);
            }
        }
        self.by_address.entry(ip).or_default().push_back(now);
    }
}

/// Everything one `hangar web` run knows about who may use it.
#[derive(Debug)]
pub struct Gate {
    pairing: Secret,
    access: Access,
    revocation: Revocation,
    epoch: String,
    browsers: Mutex<HashSet<Secret>>,
    failures: Mutex<FailureLimiter>,
}

impl Gate {
    pub fn new(home: &Path, access: Access) -> std::io::Result<Gate> {
        let revocation = Revocation::new(home);
        let epoch = revocation.current()?;
        Ok(Gate {
            pairing: Secret::random()?,
            access,
            revocation,
            epoch,
            browsers: Mutex::new(HashSet::new()),
            failures: Mutex::new(FailureLimiter::default()),
        })
    }

    pub fn pairing_token(&self) -> &Secret {
        &self.pairing
    }

    pub fn access(&self) -> Access {
        self.access
    }

    /// Whether `hangar web --revoke` ran since this server started. An
    /// unreadable epoch file counts as revoked: fail closed.
    pub fn revoked(&self) -> bool {
        match std::fs::read_to_string(&self.revocation.file) {
            Ok(s) => s.trim() != self.epoch,
            Err(_) => true,
        }
    }

    /// Judge a request's credential from `ip`.
    pub fn check(&self, ip: IpAddr, presented: Presented<'_>, now: Instant) -> Verdict {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if failures.is_limited(ip, now) {
            return Verdict::Limited;
        }
        let ok = match presented {
            Presented::Nothing => return Verdict::Missing,
            Presented::Bearer(t) => self.pairing.matches(t).then_some(false),
            Presented::Cookie(c) => self
                .browsers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .any(|b| b.matches(c))
                .then_some(true),
        };
        if self.revoked() {
            return Verdict::Revoked;
        }
        match ok {
            Some(by_cookie) => Verdict::Allowed {
                access: self.access,
                by_cookie,
            },
            None => {
                failures.record_failure(ip, now);
                Verdict::Wrong
            }
        }
    }

    /// Exchange the pairing token (from the printed URL) for a browser's own
    /// cookie secret. `None`: wrong token, revoked, or limited (the verdict
    /// says which).
    pub fn pair(&self, ip: IpAddr, token: &str, now: Instant) -> Result<Secret, Verdict> {
        match self.check(ip, Presented::Bearer(token), now) {
            Verdict::Allowed { .. } => {}
            other => return Err(other),
        }
        let mut browsers = self.browsers.lock().unwrap_or_else(|p| p.into_inner());
        if browsers.len() >= MAX_BROWSERS {
            return Err(Verdict::Limited);
        }
        let secret = Secret::random().map_err(|_| Verdict::Wrong)?;
        browsers.insert(secret.clone());
        Ok(secret)
    }
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie_value<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    fn gate(access: Access) -> (tempfile::TempDir, Gate) {
        let home = tempfile::tempdir().unwrap();
        let g = Gate::new(home.path(), access).unwrap();
        (home, g)
    }

    #[test]
    fn the_pairing_token_is_accepted_as_bearer_and_a_wrong_one_is_counted() {
        let (_h, g) = gate(Access::Full);
        let now = Instant::now();
        let token = g.pairing_token().expose().to_owned();
        assert_eq!(token.len(), 64);
        assert_eq!(
            g.check(ip(1), Presented::Bearer(&token), now),
            Verdict::Allowed {
                access: Access::Full,
                by_cookie: false
            }
        );
        assert_eq!(
            g.check(ip(1), Presented::Bearer("nope"), now),
            Verdict::Wrong
        );
        assert_eq!(g.check(ip(1), Presented::Nothing, now), Verdict::Missing);
    }

    #[test]
    fn a_paired_browser_gets_its_own_cookie_secret_not_the_token() {
        let (_h, g) = gate(Access::ReadOnly);
        let now = Instant::now();
        let token = g.pairing_token().expose().to_owned();
        let cookie = g.pair(ip(2), &token, now).unwrap();
        assert_ne!(cookie.expose(), token);
        assert_eq!(
            g.check(ip(2), Presented::Cookie(cookie.expose()), now),
            Verdict::Allowed {
                access: Access::ReadOnly,
                by_cookie: true
            }
        );
        // The token itself is no cookie.
        assert_eq!(
            g.check(ip(2), Presented::Cookie(&token), now),
            Verdict::Wrong
        );
        assert!(matches!(g.pair(ip(2), "bad", now), Err(Verdict::Wrong)));
    }

    #[test]
    fn failed_logins_past_the_limit_lock_that_address_out_until_the_window_passes() {
        let (_h, g) = gate(Access::Full);
        let now = Instant::now();
        let token = g.pairing_token().expose().to_owned();
        for _ in 0..FAILURES_ALLOWED {
            assert_eq!(g.check(ip(3), Presented::Bearer("x"), now), Verdict::Wrong);
        }
        // Even the right token is refused now, from that address only.
        assert_eq!(
            g.check(ip(3), Presented::Bearer(&token), now),
            Verdict::Limited
        );
        assert!(matches!(
            g.check(ip(4), Presented::Bearer(&token), now),
            Verdict::Allowed { .. }
        ));
        let later = now + FAILURE_WINDOW;
        assert!(matches!(
            g.check(ip(3), Presented::Bearer(&token), later),
            Verdict::Allowed { .. }
        ));
    }

    #[test]
    fn revoking_ends_the_token_and_every_paired_browser() {
        let home = tempfile::tempdir().unwrap();
        let g = Gate::new(home.path(), Access::Full).unwrap();
        let now = Instant::now();
        let token = g.pairing_token().expose().to_owned();
        let cookie = g.pair(ip(5), &token, now).unwrap();
        Revocation::new(home.path()).renew().unwrap();
        assert!(g.revoked());
        assert_eq!(
            g.check(ip(5), Presented::Cookie(cookie.expose()), now),
            Verdict::Revoked
        );
        assert_eq!(
            g.check(ip(5), Presented::Bearer(&token), now),
            Verdict::Revoked
        );
        let file = home.path().join("web").join("revoked");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A server started after the revocation works again.
        let g2 = Gate::new(home.path(), Access::Full).unwrap();
        assert!(!g2.revoked());
    }

    #[test]
    fn the_limiter_forgets_the_quietest_address_when_full() {
        let mut l = FailureLimiter::default();
        let now = Instant::now();
        for i in 0..TRACKED_ADDRESSES as u32 {
            l.record_failure(IpAddr::from(i.to_be_bytes()), now);
        }
        l.record_failure(ip(9), now + Duration::from_secs(1));
        assert_eq!(l.by_address.len(), TRACKED_ADDRESSES);
    }

    #[test]
    fn cookies_are_found_by_name_only() {
        assert_eq!(
            cookie_value("a=1; hangar_web=xyz; b=2", COOKIE),
            Some("xyz")
        );
        assert_eq!(cookie_value("hangar_web_old=1", COOKIE), None);
        assert!(!format!("{:?}", Secret::random().unwrap()).contains('0'));
    }
}
