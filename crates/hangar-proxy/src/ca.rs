//! hangar's own certificate authority, made once per `HANGAR_HOME`, and the
//! per-host certificates the proxy presents for allow-listed hosts.
//!
//! Files, in `$HANGAR_HOME/proxy/`: `ca.pem` (public, given to agents),
//! `ca.key` (mode 0600, never leaves the home), and `ca-bundle.pem`, the
//! system trust plus `ca.pem`, for TLS stacks that take one bundle file
//! (`SSL_CERT_FILE`) instead of adding a certificate to the system trust.
//! The bundle is remade whenever the system's bundle changes (a CA update),
//! and never made without one: a bundle of hangar's CA alone would break
//! every other TLS client (git, pip, curl) of the agent given it.
//!
//! It must never replace an existing key (agents already trust its
//! certificate) and never write the key with a looser mode than 0600.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use hangar_protocol::paths;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SerialNumber,
};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// What can go wrong with the CA; each variant names the file involved.
#[derive(Debug, thiserror::Error)]
pub enum CaError {
    #[error("cannot read the proxy CA {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the proxy CA {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the proxy CA key {path} is not a usable key ({reason}); remove {dir} to make a new CA (agents must then trust the new one)"
    )]
    BadKey {
        path: PathBuf,
        dir: PathBuf,
        reason: String,
    },
    #[error("cannot make a certificate: {0}")]
    Mint(String),
}

/// Where the CA's files live.
#[derive(Clone, Debug)]
pub struct CaFiles {
    pub dir: PathBuf,
}

impl CaFiles {
    pub fn new(dir: PathBuf) -> CaFiles {
        CaFiles { dir }
    }
    pub fn cert(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }
    pub fn key(&self) -> PathBuf {
        self.dir.join("ca.key")
    }
    pub fn bundle(&self) -> PathBuf {
        self.dir.join("ca-bundle.pem")
    }
}

/// The loaded CA: signs per-host certificates, caches a TLS server config
/// per host.
pub struct Authority {
    issuer: Issuer<'static, KeyPair>,
    ca_der: CertificateDer<'static>,
    pub files: CaFiles,
    by_host: Mutex<HashMap<String, Arc<ServerConfig>>>,
    /// One bundle writer at a time: two codex starts at once share one
    /// temporary file.
    bundle_writer: Mutex<()>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

/// The CA's subject, rebuilt from its key so a loaded CA signs with exactly
/// the name its certificate carries (no certificate parser needed).
fn ca_params(key: &KeyPair) -> CertificateParams {
    let mut params = CertificateParams::default();
    let kid = params.key_identifier(key);
    let tag: String = kid.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "hangar");
    // The key id keeps two homes' CAs apart in a trust store.
    dn.push(DnType::CommonName, format!("hangar proxy CA {tag}"));
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = rcgen::date_time_ymd(2024, 1, 1);
    params.not_after = rcgen::date_time_ymd(2044, 1, 1);
    params
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    paths::write_private(path, text.as_bytes())
}

fn write_public(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

impl Authority {
    /// Load the CA of this home, making it on first use.
    pub fn load_or_create(files: CaFiles) -> Result<Authority, CaError> {
        paths::ensure_private_dir(&files.dir).map_err(|source| CaError::Write {
            path: files.dir.clone(),
            source,
        })?;
        let key_path = files.key();
        let key = match std::fs::read_to_string(&key_path) {
            Ok(pem) => {
                // A key copied in by hand keeps working, but never stays readable by others.
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o600))
                    .map_err(|source| CaError::Write {
                        path: key_path.clone(),
                        source,
                    })?;
                KeyPair::from_pem(&pem).map_err(|e| CaError::BadKey {
                    path: key_path.clone(),
                    dir: files.dir.clone(),
                    reason: e.to_string(),
                })?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = KeyPair::generate().map_err(|e| CaError::Mint(e.to_string()))?;
                write_private(&key_path, &key.serialize_pem()).map_err(|source| {
                    CaError::Write {
                        path: key_path.clone(),
                        source,
                    }
                })?;
                // A new key invalidates any old certificate and bundle.
                let _ = std::fs::remove_file(files.cert());
                let _ = std::fs::remove_file(files.bundle());
                key
            }
            Err(source) => {
                return Err(CaError::Read {
                    path: key_path,
                    source,
                });
            }
        };
        let params = ca_params(&key);
        let cert_path = files.cert();
        let ca_der = match std::fs::read(&cert_path) {
            Ok(pem) => first_certificate(&pem).ok_or_else(|| CaError::Read {
                path: cert_path.clone(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "no certificate in the file",
                ),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let cert = params
                    .self_signed(&key)
                    .map_err(|e| CaError::Mint(e.to_string()))?;
                write_public(&cert_path, &cert.pem()).map_err(|source| CaError::Write {
                    path: cert_path.clone(),
                    source,
                })?;
                cert.der().clone()
            }
            Err(source) => {
                return Err(CaError::Read {
                    path: cert_path,
                    source,
                });
            }
        };
        Ok(Authority {
            issuer: Issuer::new(params, key),
            ca_der,
            files,
            by_host: Mutex::new(HashMap::new()),
            bundle_writer: Mutex::new(()),
        })
    }

    /// `ca-bundle.pem`: the `system` bundle followed by hangar's CA, or
    /// `None` when there is no system bundle to start from. Remade when
    /// missing, or older than the system bundle or `ca.pem`; otherwise kept
    /// as is.
    pub fn ensure_bundle_from(&self, system: Option<&Path>) -> Result<Option<PathBuf>, CaError> {
        let path = self.files.bundle();
        let Some(system) = system else {
            return Ok(None);
        };
        let _writer = self.bundle_writer.lock().unwrap_or_else(|p| p.into_inner());
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        if let Some(made) = modified(&path) {
            let newer = |p: &Path| modified(p).is_some_and(|t| t > made);
            if !newer(system) && !newer(&self.files.cert()) {
                return Ok(Some(path));
            }
        }
        let mut text = std::fs::read_to_string(system).map_err(|source| CaError::Read {
            path: system.to_path_buf(),
            source,
        })?;
        if !text.ends_with('\n') && !text.is_empty() {
            text.push('\n');
        }
        let ca = std::fs::read_to_string(self.files.cert()).map_err(|source| CaError::Read {
            path: self.files.cert(),
            source,
        })?;
        text.push_str("# hangar proxy CA\n");
        text.push_str(&ca);
        write_public(&path, &text).map_err(|source| CaError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(Some(path))
    }

    /// The TLS server config presenting a certificate for `host`, signed by
    /// this CA; made once per host and cached.
    pub fn server_config(&self, host: &str) -> Result<Arc<ServerConfig>, CaError> {
        let mut cache = self.by_host.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cache.get(host) {
            return Ok(c.clone());
        }
        let config = Arc::new(self.mint(host)?);
        cache.insert(host.to_owned(), config.clone());
        Ok(config)
    }

    fn mint(&self, host: &str) -> Result<ServerConfig, CaError> {
        let mint_err = |e: rcgen::Error| CaError::Mint(format!("{host}: {e}"));
        let key = KeyPair::generate().map_err(mint_err)?;
        let mut params = CertificateParams::new(vec![host.to_owned()]).map_err(mint_err)?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, host);
        params.distinguished_name = dn;
        params.is_ca = IsCa::NoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        params.serial_number = Some(SerialNumber::from_slice(
            &uuid::Uuid::new_v4().as_bytes()[..15],
        ));
        let (y, m, d) = civil_today();
        params.not_before = rcgen::date_time_ymd(y - 1, m, d.min(28));
        params.not_after = rcgen::date_time_ymd(y + 1, m, d.min(28));
        let cert = params.signed_by(&key, &self.issuer).map_err(mint_err)?;
        let chain = vec![cert.der().clone(), self.ca_der.clone()];
        let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut config =
            ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|e| CaError::Mint(e.to_string()))?
                .with_no_client_auth()
                .with_single_cert(chain, key_der)
                .map_err(|e| CaError::Mint(e.to_string()))?;
        // HTTP/1.1 only: the proxy reads each exchange as one request.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}

/// The first certificate in a PEM text.
pub fn first_certificate(pem: &[u8]) -> Option<CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(pem).find_map(Result::ok)
}

/// Every certificate in a PEM file.
pub fn certificates_in(path: &Path) -> std::io::Result<Vec<CertificateDer<'static>>> {
    use rustls::pki_types::pem::PemObject;
    let bytes = std::fs::read(path)?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&bytes)
        .filter_map(Result::ok)
        .collect();
    if certs.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("no certificate in {}", path.display()),
        ));
    }
    Ok(certs)
}

/// The system's CA bundle file: `SSL_CERT_FILE` if set, else the usual
/// places on Debian/Ubuntu, Fedora/RHEL, Alpine/macOS, openSUSE.
pub fn system_bundle() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SSL_CERT_FILE").map(PathBuf::from)
        && p.is_file()
    {
        return Some(p);
    }
    [
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/pki/tls/certs/ca-bundle.crt",
        "/etc/ssl/cert.pem",
        "/etc/ssl/ca-bundle.pem",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
}

/// Today's date (UTC) as year, month, day.
fn civil_today() -> (i32, u8, u8) {
    utc_date(hangar_clock::now_ms())
}

/// The UTC date (year, month, day) of a time in ms since the Unix epoch.
pub(crate) fn utc_date(ms: u64) -> (i32, u8, u8) {
    let at = time::OffsetDateTime::UNIX_EPOCH
        .checked_add(time::Duration::milliseconds(
            i64::try_from(ms).unwrap_or(i64::MAX),
        ))
        .unwrap_or(time::PrimitiveDateTime::MAX.assume_utc());
    (at.year(), at.month() as u8, at.day())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_ca_is_made_once_per_home_with_a_private_key() {
        let dir = tempfile::tempdir().unwrap();
        let files = CaFiles::new(dir.path().join("proxy"));
        let first = Authority::load_or_create(files.clone()).unwrap();
        let mode = std::fs::metadata(files.key()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let pem = std::fs::read(files.cert()).unwrap();
        drop(first);
        let again = Authority::load_or_create(files.clone()).unwrap();
        assert_eq!(std::fs::read(files.cert()).unwrap(), pem);
        assert_eq!(again.ca_der, first_certificate(&pem).unwrap());
    }

    #[test]
    fn a_loose_key_file_is_tightened_to_0600() {
        let dir = tempfile::tempdir().unwrap();
        let files = CaFiles::new(dir.path().join("proxy"));
        Authority::load_or_create(files.clone()).unwrap();
        std::fs::set_permissions(files.key(), std::fs::Permissions::from_mode(0o644)).unwrap();
        Authority::load_or_create(files.clone()).unwrap();
        let mode = std::fs::metadata(files.key()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn an_unreadable_key_is_a_clear_error_not_a_new_ca() {
        let dir = tempfile::tempdir().unwrap();
        let files = CaFiles::new(dir.path().join("proxy"));
        Authority::load_or_create(files.clone()).unwrap();
        std::fs::write(files.key(), "garbage").unwrap();
        let e = Authority::load_or_create(files.clone()).unwrap_err();
        assert!(e.to_string().contains("ca.key"), "{e}");
        assert_eq!(std::fs::read_to_string(files.key()).unwrap(), "garbage");
    }

    #[test]
    fn host_certificates_chain_to_the_ca_and_are_cached() {
        let dir = tempfile::tempdir().unwrap();
        let ca = Authority::load_or_create(CaFiles::new(dir.path().join("p"))).unwrap();
        let a = ca.server_config("api.example.com").unwrap();
        let b = ca.server_config("api.example.com").unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        // Verification against the CA is exercised end to end in mod.rs tests.
    }

    #[test]
    fn the_bundle_holds_the_system_roots_and_the_ca() {
        let dir = tempfile::tempdir().unwrap();
        let ca = Authority::load_or_create(CaFiles::new(dir.path().join("p"))).unwrap();
        let system = dir.path().join("system.pem");
        std::fs::write(&system, "SYSTEM ROOTS v1").unwrap();
        let bundle = ca.ensure_bundle_from(Some(&system)).unwrap().unwrap();
        let text = std::fs::read_to_string(bundle).unwrap();
        let ca_pem = std::fs::read_to_string(ca.files.cert()).unwrap();
        assert!(text.starts_with("SYSTEM ROOTS v1\n"), "{text}");
        assert!(text.ends_with(&ca_pem));
    }

    fn set_modified(path: &Path, at: std::time::SystemTime) {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(at)
            .unwrap();
    }

    #[test]
    fn the_bundle_is_remade_when_the_system_bundle_is_newer_and_kept_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let ca = Authority::load_or_create(CaFiles::new(dir.path().join("p"))).unwrap();
        let system = dir.path().join("system.pem");
        std::fs::write(&system, "SYSTEM ROOTS v1\n").unwrap();
        let bundle = ca.ensure_bundle_from(Some(&system)).unwrap().unwrap();
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let day_ago = hour_ago - std::time::Duration::from_secs(23 * 3600);
        set_modified(&ca.files.cert(), day_ago);

        // The system bundle is older than ours: ours is kept untouched.
        set_modified(&system, day_ago);
        set_modified(&bundle, hour_ago);
        ca.ensure_bundle_from(Some(&system)).unwrap();
        assert!(
            std::fs::read_to_string(&bundle)
                .unwrap()
                .starts_with("SYSTEM ROOTS v1")
        );

        // A CA update on the system (newer file): the bundle follows it.
        std::fs::write(&system, "SYSTEM ROOTS v2\n").unwrap();
        ca.ensure_bundle_from(Some(&system)).unwrap();
        let text = std::fs::read_to_string(&bundle).unwrap();
        assert!(text.starts_with("SYSTEM ROOTS v2\n"), "{text}");
        assert!(text.ends_with(&std::fs::read_to_string(ca.files.cert()).unwrap()));
        assert!(!text.contains("SYSTEM ROOTS v1"), "{text}");
    }

    #[test]
    fn without_a_system_bundle_no_bundle_of_hangars_ca_alone_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let ca = Authority::load_or_create(CaFiles::new(dir.path().join("p"))).unwrap();
        assert_eq!(ca.ensure_bundle_from(None).unwrap(), None);
        assert!(!ca.files.bundle().exists());
    }

    #[test]
    fn civil_dates_are_right() {
        let day = 86_400_000;
        assert_eq!(utc_date(0), (1970, 1, 1));
        assert_eq!(utc_date(19_723 * day), (2024, 1, 1));
        assert_eq!(utc_date(11_016 * day + day - 1), (2000, 2, 29));
    }
}
