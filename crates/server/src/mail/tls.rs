//! STARTTLS for the SMTP listener (RFC 3207): the operator's certificate chain and private key,
//! read from PEM files at start (`TIDINGS_SMTP_TLS_CERT`, `TIDINGS_SMTP_TLS_KEY`). Sending
//! servers encrypt opportunistically: with a certificate configured the listener offers
//! STARTTLS in its EHLO answer, and without one it does not offer it at all.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// The listener's TLS set-up, built once (cheap to clone).
#[derive(Clone)]
pub struct SmtpTls {
    acceptor: TlsAcceptor,
}

impl std::fmt::Debug for SmtpTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SmtpTls")
    }
}

impl SmtpTls {
    /// Reads a certificate chain (the server's certificate first, as Let's Encrypt's
    /// `fullchain.pem`) and its private key (PKCS#8, PKCS#1 or SEC1), both PEM. The error
    /// says which file failed and why, for the operator.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<SmtpTls, String> {
        let chain = CertificateDer::pem_file_iter(cert)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| format!("{}: {e}", cert.display()))?;
        if chain.is_empty() {
            return Err(format!("{}: no certificate in it", cert.display()));
        }
        let key =
            PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
        Self::new(chain, key)
    }

    /// A set-up of a chain and key in memory.
    pub fn new(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<SmtpTls, String> {
        // The provider is named rather than taken from the process default, which tests and
        // embedders may not have installed.
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| format!("the key does not go with the certificate or is unusable: {e}"))?;
        Ok(SmtpTls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }

    /// What takes a connection through the TLS handshake.
    pub fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }
}
