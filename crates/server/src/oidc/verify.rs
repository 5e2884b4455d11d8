//! Verifying an ID token: its signature against the provider's published keys (JWKS), then
//! its claims (issuer, audience and authorized party, expiry and issue time, nonce).

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

/// How far the provider's clock may be from ours, for `exp`, `nbf` and `iat`.
pub const LEEWAY_SECONDS: u64 = 60;

/// The signature algorithms accepted: public-key ones only. `none` and the HMAC algorithms
/// (keyed with the client secret, which this server holds too) are refused.
const ACCEPTED: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The claims tidings reads from an ID token.
#[derive(Debug, Clone, Deserialize)]
pub struct IdClaims {
    /// The issuer.
    pub iss: String,
    /// The user at the issuer.
    pub sub: String,
    /// The audience: one client id, or several.
    pub aud: serde_json::Value,
    /// The party the token was issued to, when there are several audiences.
    #[serde(default)]
    pub azp: Option<String>,
    /// Expiry (Unix seconds).
    pub exp: i64,
    /// Issue time (Unix seconds).
    pub iat: i64,
    /// The nonce of the authorization request.
    #[serde(default)]
    pub nonce: Option<String>,
    /// The e-mail address, when the `email` scope was granted.
    #[serde(default)]
    pub email: Option<String>,
    /// The name the user goes by at the provider.
    #[serde(default)]
    pub preferred_username: Option<String>,
}

/// Why an ID token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not a JWT, or its claims do not parse.
    #[error("the ID token is malformed: {0}")]
    Malformed(String),
    /// Signed with an algorithm that is not accepted.
    #[error("the ID token is signed with {0}, which is not accepted (public-key algorithms only)")]
    Algorithm(String),
    /// No published key matches the token's key id.
    #[error("the ID token is signed with a key the provider does not publish ({0})")]
    UnknownKey(String),
    /// The signature does not verify.
    #[error("the ID token's signature does not verify")]
    BadSignature,
    /// `iss` is not the provider's issuer.
    #[error("the ID token was issued by {0}, not by the configured provider")]
    WrongIssuer(String),
    /// `aud` does not name this client, or `azp` names another one.
    #[error("the ID token is meant for another client (audience {0})")]
    WrongAudience(String),
    /// Past `exp` (beyond the leeway).
    #[error("the ID token has expired")]
    Expired,
    /// `iat` or `nbf` in the future (beyond the leeway).
    #[error("the ID token is not valid yet (issued in the future)")]
    NotYetValid,
    /// `nonce` is not the one sent.
    #[error("the ID token's nonce is not the one of this sign-in")]
    WrongNonce,
}

/// What the token must say.
#[derive(Debug, Clone)]
pub struct Expected<'a> {
    /// The issuer, as the discovery document states it.
    pub issuer: &'a str,
    /// This client's id.
    pub client_id: &'a str,
    /// The nonce sent with the authorization request.
    pub nonce: &'a str,
    /// The current time (Unix seconds).
    pub now: i64,
}

/// The key id of a token's header, so the caller can refresh the key set when it is unknown.
pub fn key_id(token: &str) -> Result<Option<String>, TokenError> {
    jsonwebtoken::decode_header(token)
        .map(|header| header.kid)
        .map_err(|e| TokenError::Malformed(e.to_string()))
}

fn family_matches(algorithm: Algorithm, key: &Jwk) -> bool {
    let by_type = match &key.algorithm {
        AlgorithmParameters::RSA(_) => matches!(
            algorithm,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
        ),
        AlgorithmParameters::EllipticCurve(_) => {
            matches!(algorithm, Algorithm::ES256 | Algorithm::ES384)
        }
        AlgorithmParameters::OctetKeyPair(_) => algorithm == Algorithm::EdDSA,
        AlgorithmParameters::OctetKey(_) => false,
    };
    let for_signing = !matches!(
        key.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    );
    // A key that names its algorithm is used for that one only.
    let same_algorithm = key
        .common
        .key_algorithm
        .is_none_or(|named| key_algorithm_name(named) == format!("{algorithm:?}"));
    by_type && for_signing && same_algorithm
}

fn key_algorithm_name(algorithm: KeyAlgorithm) -> String {
    format!("{algorithm:?}")
}

/// Verifies `token` against `keys` and `expected`, and returns its claims.
pub fn verify(token: &str, keys: &JwkSet, expected: &Expected<'_>) -> Result<IdClaims, TokenError> {
    let header =
        jsonwebtoken::decode_header(token).map_err(|e| TokenError::Malformed(e.to_string()))?;
    if !ACCEPTED.contains(&header.alg) {
        return Err(TokenError::Algorithm(format!("{:?}", header.alg)));
    }
    let key = match &header.kid {
        Some(kid) => keys
            .keys
            .iter()
            .find(|k| k.common.key_id.as_deref() == Some(kid.as_str()))
            .filter(|k| family_matches(header.alg, k))
            .ok_or_else(|| TokenError::UnknownKey(format!("key id {kid}")))?,
        // Without a key id, the provider must publish one key that fits.
        None => {
            let mut fitting = keys.keys.iter().filter(|k| family_matches(header.alg, k));
            match (fitting.next(), fitting.next()) {
                (Some(key), None) => key,
                _ => {
                    return Err(TokenError::UnknownKey(
                        "no key id, and not exactly one published key fits".into(),
                    ));
                }
            }
        }
    };
    let decoding = DecodingKey::from_jwk(key).map_err(|e| TokenError::Malformed(e.to_string()))?;
    let mut validation = Validation::new(header.alg);
    validation.leeway = LEEWAY_SECONDS;
    validation.validate_nbf = true;
    validation.set_audience(&[expected.client_id]);
    validation.set_issuer(&[expected.issuer]);
    validation.set_required_spec_claims(&["exp", "iat", "iss", "aud", "sub"]);
    let data = jsonwebtoken::decode::<IdClaims>(token, &decoding, &validation).map_err(|e| {
        use jsonwebtoken::errors::ErrorKind;
        match e.kind() {
            ErrorKind::InvalidSignature => TokenError::BadSignature,
            ErrorKind::ExpiredSignature => TokenError::Expired,
            ErrorKind::ImmatureSignature => TokenError::NotYetValid,
            ErrorKind::InvalidIssuer => TokenError::WrongIssuer(claim_of(token, "iss")),
            ErrorKind::InvalidAudience => TokenError::WrongAudience(claim_of(token, "aud")),
            _ => TokenError::Malformed(e.to_string()),
        }
    })?;
    let claims = data.claims;
    // jsonwebtoken checks `exp` against the system clock; the caller's clock is checked too,
    // so that the rule is the one stated here whatever the library does.
    let leeway = LEEWAY_SECONDS as i64;
    if claims.exp + leeway < expected.now {
        return Err(TokenError::Expired);
    }
    if claims.iat - leeway > expected.now {
        return Err(TokenError::NotYetValid);
    }
    // With several audiences, the token must have been issued to this client (OIDC Core
    // 3.1.3.7, steps 4 and 5).
    let several = claims.aud.as_array().is_some_and(|a| a.len() > 1);
    match claims.azp.as_deref() {
        Some(azp) if azp != expected.client_id => {
            return Err(TokenError::WrongAudience(format!("authorized party {azp}")));
        }
        None if several => {
            return Err(TokenError::WrongAudience(format!(
                "{} without an authorized party",
                claims.aud
            )));
        }
        _ => {}
    }
    if claims.nonce.as_deref() != Some(expected.nonce) {
        return Err(TokenError::WrongNonce);
    }
    Ok(claims)
}

/// A claim of a token whose signature verified, for an error message.
fn claim_of(token: &str, name: &str) -> String {
    use base64::Engine;
    token
        .split('.')
        .nth(1)
        .and_then(|payload| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(payload)
                .ok()
        })
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .map(|claims| claims[name].to_string())
        .unwrap_or_else(|| "unknown".into())
}
