//! The HTTPS side: a CA made at start (its certificate written as PEM for
//! the test to hand to whoever must trust it) and one server certificate
//! for the loopback names, signed by it.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// Makes the CA, writes its certificate to `ca_file`, and returns a server
/// config whose certificate covers `names` (DNS names or IP addresses).
pub fn server_config(
    ca_file: &Path,
    names: &[String],
) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let ca_key = KeyPair::generate().context("CA key")?;
    let mut ca_params = CertificateParams::default();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "hangar fake model API test CA");
    let ca_cert = ca_params.self_signed(&ca_key).context("CA certificate")?;
    write_atomically(ca_file, ca_cert.pem().as_bytes())?;
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().context("server key")?;
    let mut params = CertificateParams::new(names.to_vec()).context("server names")?;
    params
        .distinguished_name
        .push(DnType::CommonName, "hangar fake model API");
    let leaf = params
        .signed_by(&key, &issuer)
        .context("server certificate")?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .context("TLS versions")?
    .with_no_client_auth()
    .with_single_cert(
        vec![leaf.der().clone(), ca_cert.der().clone()],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    )
    .context("TLS server config")?;
    Ok(Arc::new(config))
}

/// Writes `bytes` to `path` through a temporary file and a rename, so a
/// reader polling for the file never sees half of it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).with_context(|| format!("write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("rename to {}", path.display()))?;
    Ok(())
}
