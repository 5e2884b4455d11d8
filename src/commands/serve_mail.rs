//! The newsletter settings of `tidings serve` (issue 36): the addresses' domain, the SMTP
//! listener and the HTTP inbound endpoint's secret.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use tidings_server::mail::tls::SmtpTls;
use tidings_server::mail::{DEFAULT_MAX_BYTES, MailSettings};

use super::daemon::check_secret;
use crate::config::{self, ConfigError};

/// Newsletters by email: addresses at a domain of yours, received by SMTP or from a mail
/// service by HTTP (docs/newsletters.md).
#[derive(Debug, Args)]
pub struct MailArgs {
    /// The domain users' receiving addresses are at, e.g. news.example.com (its MX record
    /// points at this server, or a mail service receives for it). Unset: no addresses.
    #[arg(long, env = "TIDINGS_MAIL_DOMAIN")]
    pub mail_domain: Option<String>,

    /// Where the SMTP listener takes mail, e.g. 0.0.0.0:25 or 127.0.0.1:2525. Unset: no
    /// listener.
    #[arg(long, env = "TIDINGS_SMTP_LISTEN")]
    pub smtp_listen: Option<String>,

    /// The largest message taken, in bytes (SMTP and HTTP).
    #[arg(long, env = "TIDINGS_SMTP_MAX_BYTES", default_value_t = DEFAULT_MAX_BYTES.to_string())]
    pub smtp_max_bytes: String,

    /// The secret a mail service sends to POST /inbound/mail as `Authorization: Bearer`
    /// (at least 24 characters). Unset: the endpoint is off.
    #[arg(long, env = "TIDINGS_MAIL_INBOUND_SECRET", hide_env_values = true)]
    pub mail_inbound_secret: Option<String>,

    /// The SMTP listener's certificate chain for STARTTLS, PEM (e.g. a fullchain.pem).
    /// Unset: STARTTLS is not offered. Read at start: restart after renewing it.
    #[arg(long, env = "TIDINGS_SMTP_TLS_CERT")]
    pub smtp_tls_cert: Option<PathBuf>,

    /// The private key of TIDINGS_SMTP_TLS_CERT, PEM.
    #[arg(long, env = "TIDINGS_SMTP_TLS_KEY")]
    pub smtp_tls_key: Option<PathBuf>,
}

impl MailArgs {
    /// Checks the settings: the mail settings, and where the SMTP listener listens.
    pub fn check(&self) -> Result<(MailSettings, Option<SocketAddr>), ConfigError> {
        let domain = match self.mail_domain.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(domain) => Some(check_domain(domain)?),
        };
        let max_bytes = config::check_number(
            &self.smtp_max_bytes,
            1_024..=100 * 1024 * 1024,
            "TIDINGS_SMTP_MAX_BYTES",
            "--smtp-max-bytes",
        )?;
        let inbound_secret = check_secret(
            self.mail_inbound_secret.as_deref(),
            24,
            "TIDINGS_MAIL_INBOUND_SECRET",
            "--mail-inbound-secret",
        )?
        .filter(|s| !s.is_empty())
        .map(String::from);
        let listen = match self.smtp_listen.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(listen) => {
                let address =
                    config::check_listen_as(listen, "TIDINGS_SMTP_LISTEN", "--smtp-listen")?;
                if domain.is_none() {
                    return Err(ConfigError {
                        variable: "TIDINGS_MAIL_DOMAIN",
                        flag: "--mail-domain",
                        value: String::new(),
                        expected: "the domain addresses are at, because TIDINGS_SMTP_LISTEN \
                                   is set"
                            .into(),
                    });
                }
                Some(address)
            }
        };
        let settings = MailSettings {
            domain,
            inbound_secret,
            max_bytes,
            tls: self.check_tls()?,
            ..MailSettings::default()
        };
        Ok((settings, listen))
    }

    /// The STARTTLS certificate: both files or neither, and they must load.
    fn check_tls(&self) -> Result<Option<SmtpTls>, ConfigError> {
        let given = |path: &Option<PathBuf>| path.clone().filter(|p| !p.as_os_str().is_empty());
        match (given(&self.smtp_tls_cert), given(&self.smtp_tls_key)) {
            (None, None) => Ok(None),
            (Some(cert), Some(key)) => {
                SmtpTls::from_pem_files(&cert, &key)
                    .map(Some)
                    .map_err(|error| ConfigError {
                        variable: "TIDINGS_SMTP_TLS_CERT",
                        flag: "--smtp-tls-cert",
                        value: cert.display().to_string(),
                        expected: format!(
                            "a PEM certificate chain whose key is TIDINGS_SMTP_TLS_KEY ({error})"
                        ),
                    })
            }
            (Some(cert), None) => Err(ConfigError {
                variable: "TIDINGS_SMTP_TLS_KEY",
                flag: "--smtp-tls-key",
                value: String::new(),
                expected: format!("the private key of {}, PEM", cert.display()),
            }),
            (None, Some(key)) => Err(ConfigError {
                variable: "TIDINGS_SMTP_TLS_CERT",
                flag: "--smtp-tls-cert",
                value: String::new(),
                expected: format!(
                    "the certificate chain that goes with {}, PEM",
                    key.display()
                ),
            }),
        }
    }
}

/// A domain name as addresses use it: lower-cased, letters, digits, `-` and dots.
fn check_domain(domain: &str) -> Result<String, ConfigError> {
    let domain = domain.trim_end_matches('.').to_ascii_lowercase();
    let valid = domain.contains('.')
        && domain.len() <= 253
        && domain.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    if valid {
        Ok(domain)
    } else {
        Err(ConfigError {
            variable: "TIDINGS_MAIL_DOMAIN",
            flag: "--mail-domain",
            value: domain,
            expected: "a domain name such as news.example.com".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(domain: Option<&str>, listen: Option<&str>) -> MailArgs {
        MailArgs {
            mail_domain: domain.map(String::from),
            smtp_listen: listen.map(String::from),
            smtp_max_bytes: DEFAULT_MAX_BYTES.to_string(),
            mail_inbound_secret: None,
            smtp_tls_cert: None,
            smtp_tls_key: None,
        }
    }

    #[test]
    fn mail_settings_are_checked() {
        let (settings, listen) = args(Some("News.Example.COM."), Some("127.0.0.1:2525"))
            .check()
            .unwrap();
        assert_eq!(settings.domain.as_deref(), Some("news.example.com"));
        assert_eq!(listen, Some("127.0.0.1:2525".parse().unwrap()));
        assert_eq!(settings.max_bytes, 10 * 1024 * 1024);
        let (off, none) = args(None, None).check().unwrap();
        assert!(off.domain.is_none() && none.is_none());
        assert!(args(None, Some("127.0.0.1:2525")).check().is_err());
        assert!(args(Some("no spaces.example"), None).check().is_err());
        assert!(args(Some("localhost"), None).check().is_err());
        let mut short = args(Some("news.example.com"), None);
        short.mail_inbound_secret = Some("short".into());
        assert!(short.check().is_err());
        // A certificate without its key, and files that are not PEM, are refused at start.
        let mut half = args(Some("news.example.com"), None);
        half.smtp_tls_cert = Some("/nonexistent/cert.pem".into());
        let error = half.check().err().unwrap();
        assert_eq!(error.variable, "TIDINGS_SMTP_TLS_KEY");
        half.smtp_tls_key = Some("/nonexistent/key.pem".into());
        let error = half.check().err().unwrap();
        assert!(
            error.expected.contains("/nonexistent/cert.pem"),
            "{}",
            error.expected
        );
    }
}
