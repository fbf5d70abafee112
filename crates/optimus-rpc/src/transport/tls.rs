//! TLS settings for the TCP transport (rustls on the `ring` provider).
//!
//! A server has a certificate chain and its key, and optionally the CA whose certificates it
//! requires from clients (mutual TLS). A client has the roots it trusts for servers, and
//! optionally its own certificate and key. The server name a client checks is the host part of
//! the address it connects to (an IP address or a DNS name) unless
//! [`TlsClient::server_name`] sets another. TLS 1.3 and 1.2 are offered, rustls' safe
//! defaults.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};

use crate::RpcError;

/// The `ring` provider: pure Rust and assembly, no cmake or C build as aws-lc-rs needs.
/// rustls 0.23.48 deprecates it for lacking post-quantum key exchange (X25519MLKEM768);
/// until a peer needs that, the lighter build wins.
#[allow(deprecated)]
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn tls_err(what: &str, e: impl std::fmt::Display) -> RpcError {
    RpcError::Config(format!("TLS {what}: {e}"))
}

/// Certificates from a PEM file (every `CERTIFICATE` block, in order).
///
/// # Errors
/// The file cannot be read or holds no certificate.
pub fn certs_from_pem(path: &Path) -> Result<Vec<CertificateDer<'static>>, RpcError> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| tls_err(&format!("certificates in {}", path.display()), e))?;
    if certs.is_empty() {
        return Err(tls_err(
            &format!("certificates in {}", path.display()),
            "no CERTIFICATE block",
        ));
    }
    Ok(certs)
}

/// The first private key (PKCS#8, PKCS#1 or SEC1) in a PEM file.
///
/// # Errors
/// The file cannot be read or holds no key.
pub fn key_from_pem(path: &Path) -> Result<PrivateKeyDer<'static>, RpcError> {
    PrivateKeyDer::from_pem_file(path)
        .map_err(|e| tls_err(&format!("private key in {}", path.display()), e))
}

fn roots(certs: Vec<CertificateDer<'static>>) -> Result<RootCertStore, RpcError> {
    let mut r = RootCertStore::empty();
    for c in certs {
        r.add(c).map_err(|e| tls_err("CA certificate", e))?;
    }
    Ok(r)
}

/// A server's TLS settings. Cheap to clone.
#[derive(Clone)]
pub struct TlsServer {
    pub(crate) config: Arc<ServerConfig>,
}

impl std::fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsServer(..)")
    }
}

impl TlsServer {
    /// A server presenting `chain` (its certificate first) with `key`; with `client_ca`, it
    /// accepts only clients whose certificate that CA signed.
    ///
    /// # Errors
    /// The key does not match the certificate or is of an unsupported kind, or a CA
    /// certificate does not parse.
    pub fn new(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        client_ca: Option<Vec<CertificateDer<'static>>>,
    ) -> Result<Self, RpcError> {
        let b = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_err("protocol versions", e))?;
        let b = match client_ca {
            None => b.with_no_client_auth(),
            Some(ca) => {
                let v =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots(ca)?), provider())
                        .build()
                        .map_err(|e| tls_err("client verifier", e))?;
                b.with_client_cert_verifier(v)
            }
        };
        let config = b
            .with_single_cert(chain, key)
            .map_err(|e| tls_err("server certificate", e))?;
        Ok(Self {
            config: Arc::new(config),
        })
    }

    /// The rustls configuration, for a server driven by other code (tests, tools).
    pub fn rustls_config(&self) -> Arc<ServerConfig> {
        self.config.clone()
    }

    /// [`new`](Self::new) from PEM files.
    ///
    /// # Errors
    /// As [`new`](Self::new), and a file that cannot be read or holds nothing usable.
    pub fn from_pem_files(
        cert: &Path,
        key: &Path,
        client_ca: Option<&Path>,
    ) -> Result<Self, RpcError> {
        let ca = client_ca.map(certs_from_pem).transpose()?;
        Self::new(certs_from_pem(cert)?, key_from_pem(key)?, ca)
    }
}

/// A client's TLS settings. Cheap to clone.
#[derive(Clone)]
pub struct TlsClient {
    pub(crate) config: Arc<ClientConfig>,
    pub(crate) server_name: Option<ServerName<'static>>,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsClient(..)")
    }
}

impl TlsClient {
    /// A client trusting servers whose certificate one of `roots` signed; with `identity`
    /// (chain and key), it presents that certificate to servers that ask.
    ///
    /// # Errors
    /// A root does not parse, or the client key is unusable.
    pub fn new(
        roots_der: Vec<CertificateDer<'static>>,
        identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
    ) -> Result<Self, RpcError> {
        let b = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_err("protocol versions", e))?
            .with_root_certificates(roots(roots_der)?);
        let config = match identity {
            None => b.with_no_client_auth(),
            Some((chain, key)) => b
                .with_client_auth_cert(chain, key)
                .map_err(|e| tls_err("client certificate", e))?,
        };
        Ok(Self {
            config: Arc::new(config),
            server_name: None,
        })
    }

    /// [`new`](Self::new) from PEM files: the CA, and optionally the client's certificate
    /// chain and key.
    ///
    /// # Errors
    /// As [`new`](Self::new), and a file that cannot be read or holds nothing usable.
    pub fn from_pem_files(ca: &Path, identity: Option<(&Path, &Path)>) -> Result<Self, RpcError> {
        let id = match identity {
            Some((c, k)) => Some((certs_from_pem(c)?, key_from_pem(k)?)),
            None => None,
        };
        Self::new(certs_from_pem(ca)?, id)
    }

    /// Checks servers' certificates against `name` (a DNS name or IP address) instead of the
    /// host part of the address connected to.
    ///
    /// # Errors
    /// `name` is neither.
    pub fn server_name(mut self, name: &str) -> Result<Self, RpcError> {
        let n = ServerName::try_from(name.to_string())
            .map_err(|e| tls_err(&format!("server name {name:?}"), e))?;
        self.server_name = Some(n);
        Ok(self)
    }

    /// The name to check for a connection to `addr` (`host:port`).
    pub(crate) fn name_for(&self, addr: &str) -> std::io::Result<ServerName<'static>> {
        if let Some(n) = &self.server_name {
            return Ok(n.clone());
        }
        let host = match addr.rsplit_once(':') {
            Some((h, _)) => h.trim_start_matches('[').trim_end_matches(']'),
            None => addr,
        };
        ServerName::try_from(host.to_string()).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("TLS server name {host:?}: {e}"),
            )
        })
    }
}
