//! Newsletters by email (issue 36): the settings, and the addresses' rules. Mail arrives by
//! the SMTP listener ([`smtp`]) or by HTTP from a mail service ([`inbound`]); both hand the
//! raw message to [`deliver`], which reads it with `tidings-mail` and stores it as an item of
//! the user's feed of its sender.

pub mod deliver;
pub mod inbound;
pub mod smtp;
pub mod tls;

use std::time::Duration;

/// The largest message taken by default (`TIDINGS_SMTP_MAX_BYTES`): 10 MB.
pub const DEFAULT_MAX_BYTES: usize = 10 * 1024 * 1024;

/// The settings of mail delivery; everything is off until a domain is set.
#[derive(Clone)]
pub struct MailSettings {
    /// The domain users' addresses are at (`TIDINGS_MAIL_DOMAIN`), lower-cased; `None`: no
    /// addresses, no delivery.
    pub domain: Option<String>,
    /// The secret `POST /inbound/mail` requires as `Authorization: Bearer`
    /// (`TIDINGS_MAIL_INBOUND_SECRET`); `None`: the endpoint is off.
    pub inbound_secret: Option<String>,
    /// The largest message taken, in bytes (`TIDINGS_SMTP_MAX_BYTES`).
    pub max_bytes: usize,
    /// The SMTP listener's limits.
    pub smtp: SmtpLimits,
    /// The SMTP listener's certificate for STARTTLS (`TIDINGS_SMTP_TLS_CERT` and `_KEY`);
    /// `None`: STARTTLS is not offered.
    pub tls: Option<tls::SmtpTls>,
}

impl std::fmt::Debug for MailSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailSettings")
            .field("domain", &self.domain)
            .field("inbound_secret", &self.inbound_secret.as_ref().map(|_| "…"))
            .field("max_bytes", &self.max_bytes)
            .field("smtp", &self.smtp)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Default for MailSettings {
    fn default() -> Self {
        MailSettings {
            domain: None,
            inbound_secret: None,
            max_bytes: DEFAULT_MAX_BYTES,
            smtp: SmtpLimits::default(),
            tls: None,
        }
    }
}

/// The SMTP listener's limits against floods and slow clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmtpLimits {
    /// Connections open at once from one IP address.
    pub connections_per_ip: usize,
    /// Messages one IP address may send a minute.
    pub messages_per_minute_per_ip: u32,
    /// Messages one sender (the `MAIL FROM` address) may send a minute.
    pub messages_per_minute_per_sender: u32,
    /// Messages one connection may send.
    pub messages_per_connection: u32,
    /// Recipients of one message.
    pub recipients_per_message: usize,
    /// Commands one connection may send (a client that talks without sending is cut off).
    pub commands_per_connection: u32,
    /// How long the listener waits for a command or a part of the message.
    pub idle_timeout: Duration,
}

impl Default for SmtpLimits {
    fn default() -> Self {
        SmtpLimits {
            connections_per_ip: 10,
            messages_per_minute_per_ip: 60,
            messages_per_minute_per_sender: 20,
            messages_per_connection: 100,
            recipients_per_message: 20,
            commands_per_connection: 1_000,
            idle_timeout: Duration::from_secs(60),
        }
    }
}

impl MailSettings {
    /// The token of an address at this installation's domain (`<token>@domain` or
    /// `<token>+<label>@domain`, any case, `<>` around it allowed), lower-cased; `None` for
    /// an address elsewhere (relaying is never done) or not an address.
    pub fn token_of(&self, address: &str) -> Option<String> {
        let domain = self.domain.as_deref()?;
        let address = address.trim().trim_start_matches('<').trim_end_matches('>');
        let (local, at) = address.rsplit_once('@')?;
        if !at.trim_end_matches('.').eq_ignore_ascii_case(domain) {
            return None;
        }
        let token = local.split('+').next()?.to_ascii_lowercase();
        let valid = !token.is_empty()
            && token.len() <= 64
            && token.bytes().all(|b| b.is_ascii_alphanumeric());
        valid.then_some(token)
    }
}

/// Draws an address's random token: 12 characters of `a-z` and `2-9` without the look-alikes
/// (`l`, `o`, `0`, `1`), about 60 bits: not guessable, and short enough to read out.
pub fn new_token() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyz23456789";
    let mut rng = rand::rng();
    (0..12)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_of_addresses_here_and_elsewhere() {
        let settings = MailSettings {
            domain: Some("news.example".into()),
            ..MailSettings::default()
        };
        let token = |a: &str| settings.token_of(a);
        assert_eq!(token("K3x9@News.Example").as_deref(), Some("k3x9"));
        assert_eq!(token("<k3x9+shop@news.example>").as_deref(), Some("k3x9"));
        assert_eq!(token("k3x9@news.example.").as_deref(), Some("k3x9"));
        for elsewhere in [
            "k3x9@other.example",
            "k3x9@sub.news.example",
            "x",
            "",
            "@news.example",
        ] {
            assert_eq!(token(elsewhere), None, "{elsewhere}");
        }
        assert_eq!(token("a.b@news.example"), None);
        assert_eq!(MailSettings::default().token_of("k3x9@news.example"), None);
    }

    #[test]
    fn new_tokens_differ_and_read_well() {
        let a = new_token();
        assert_eq!(a.len(), 12);
        assert!(
            a.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        );
        assert_ne!(a, new_token());
    }
}
