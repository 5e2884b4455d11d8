//! Signatures of generic webhooks (issue 31): each generic channel has a secret of its own,
//! generated when it is created and shown once, and every message carries
//! `X-Tidings-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, so that the
//! receiver can tell tidings' messages from forgeries and refuse old ones replayed (the
//! timestamp is inside the signed text). The scheme is Stripe's, which receivers know.

use hmac::{KeyInit, Mac};

/// The header that carries the signature.
pub const SIGNATURE_HEADER: &str = "X-Tidings-Signature";
/// The prefix of every secret, so that one found in a file says what it is.
const SECRET_PREFIX: &str = "whsec_";

/// A channel's signing secret. Its `Debug` hides the value, so that a channel printed in a
/// log does not carry it.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningSecret(String);

impl std::fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningSecret(***)")
    }
}

impl SigningSecret {
    /// A new random secret: `whsec_` and 64 hex digits (256 bits).
    pub fn generate() -> SigningSecret {
        SigningSecret(format!(
            "{SECRET_PREFIX}{}",
            hex::encode(rand::random::<[u8; 32]>())
        ))
    }

    /// A secret as stored.
    pub fn from_stored(text: String) -> SigningSecret {
        SigningSecret(text)
    }

    /// The secret's text: to store it, and to show it once to the channel's owner.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The value of [`SIGNATURE_HEADER`] for `body` sent at `timestamp` (Unix seconds):
    /// `t=<timestamp>,v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`.
    pub fn signature(&self, timestamp: i64, body: &[u8]) -> String {
        // HMAC takes a key of any length: this never fails.
        let mut mac = <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(self.0.as_bytes())
            .expect("HMAC takes a key of any length");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        format!(
            "t={timestamp},v1={}",
            hex::encode(mac.finalize().into_bytes())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_match_an_independent_computation() {
        let secret = SigningSecret::from_stored("whsec_test".into());
        // echo -n '1700000000.{"a":1}' | openssl dgst -sha256 -hmac whsec_test
        assert_eq!(
            secret.signature(1_700_000_000, br#"{"a":1}"#),
            "t=1700000000,v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789"
        );
    }

    #[test]
    fn secrets_are_random_and_hidden_from_debug() {
        let (a, b) = (SigningSecret::generate(), SigningSecret::generate());
        assert_ne!(a, b);
        assert!(a.expose().starts_with("whsec_") && a.expose().len() == 70);
        assert_eq!(format!("{a:?}"), "SigningSecret(***)");
    }
}
