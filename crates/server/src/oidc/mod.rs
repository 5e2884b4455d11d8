//! Signing in through an OpenID Connect provider (F22): discovery, the Authorization Code
//! flow with PKCE (S256), `state` and `nonce`, and the ID token verified against the
//! provider's keys. The browser routes (`/auth/oidc/start`, `/auth/oidc/callback`) are in
//! [`routes`]; the API for linked identities is `api::oidc`.
//!
//! The provider is reached through its own small HTTP client, not the SSRF-guarded one of
//! feeds: its address comes from the operator's configuration (and the discovery document
//! it serves), not from users, and operators run Authelia or Keycloak on their LAN. It still
//! has time-outs and bounded answers.

pub mod login;
pub mod routes;
pub mod verify;

use std::time::{Duration, Instant};

use base64::Engine;
use jsonwebtoken::jwk::JwkSet;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

pub use verify::{IdClaims, TokenError};

/// The scopes asked for by default.
pub const DEFAULT_SCOPES: &str = "openid email profile";

/// How long a sign-in may take at the provider before its `state` is refused.
pub const LOGIN_LIFETIME: Duration = Duration::from_secs(600);

/// How long one request to the provider may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest answer read from the provider (discovery, keys, tokens).
const MAX_ANSWER_BYTES: usize = 512 * 1024;

/// How long the discovery document is kept before it is fetched again.
const METADATA_LIFETIME: Duration = Duration::from_secs(3600);

/// How long the key set is kept; a token signed with an unknown key fetches it sooner.
const KEYS_LIFETIME: Duration = Duration::from_secs(3600);

/// The shortest time between two fetches of the key set for unknown keys.
const KEYS_REFETCH_AFTER: Duration = Duration::from_secs(1);

/// The operator's OpenID Connect settings.
#[derive(Debug, Clone)]
pub struct OidcConfig {
    /// The issuer URL (`TIDINGS_OIDC_ISSUER`); its discovery document is at
    /// `{issuer}/.well-known/openid-configuration`.
    pub issuer: url::Url,
    /// The client id registered at the provider.
    pub client_id: String,
    /// The client secret; `None` for a public client (PKCE alone).
    pub client_secret: Option<String>,
    /// The scopes asked for; `openid` is always among them.
    pub scopes: Vec<String>,
    /// The provider's name on the sign-in button ("Sign in with …").
    pub display_name: String,
    /// Whether a first sign-in with an identity no account has creates an account.
    pub signup: bool,
}

impl OidcConfig {
    /// Settings for `issuer` and `client_id` with the default scopes, no secret, a name taken
    /// from the issuer's host, and sign-up off.
    pub fn new(issuer: url::Url, client_id: impl Into<String>) -> OidcConfig {
        let display_name = issuer.host_str().unwrap_or("your provider").to_string();
        OidcConfig {
            issuer,
            client_id: client_id.into(),
            client_secret: None,
            scopes: parse_scopes(DEFAULT_SCOPES),
            display_name,
            signup: false,
        }
    }
}

/// Splits a space- or comma-separated scope list, adding `openid` when it is missing.
pub fn parse_scopes(text: &str) -> Vec<String> {
    let mut scopes: Vec<String> = Vec::new();
    for scope in text
        .split([' ', ','])
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        if !scopes.iter().any(|s| s == scope) {
            scopes.push(scope.to_string());
        }
    }
    if !scopes.iter().any(|s| s == "openid") {
        scopes.insert(0, "openid".into());
    }
    scopes
}

/// Why talking to the provider failed.
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    /// The provider could not be reached or answered badly.
    #[error("the sign-in provider could not be used: {0}")]
    Provider(String),
    /// The provider refused the authorization code.
    #[error("the sign-in provider refused to complete the sign-in: {0}")]
    Refused(String),
    /// The ID token was refused.
    #[error("{0}")]
    Token(#[from] TokenError),
}

/// The parts of the discovery document tidings uses.
#[derive(Debug, Clone, Deserialize)]
pub struct Metadata {
    /// The issuer, exactly as ID tokens carry it.
    pub issuer: String,
    /// Where the browser is sent to sign in.
    pub authorization_endpoint: String,
    /// Where the code is exchanged for tokens.
    pub token_endpoint: String,
    /// The provider's public keys.
    pub jwks_uri: String,
    /// How the client may authenticate at the token endpoint.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
}

/// One configured provider, with its discovery document and keys cached.
pub struct Provider {
    config: OidcConfig,
    http: reqwest::Client,
    metadata: Mutex<Option<(Metadata, Instant)>>,
    keys: Mutex<Option<(JwkSet, Instant)>>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("issuer", &self.config.issuer.as_str())
            .field("client_id", &self.config.client_id)
            .finish_non_exhaustive()
    }
}

/// A new random URL-safe secret of 32 bytes (43 characters): states, nonces, PKCE verifiers.
pub fn random_token() -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

/// The PKCE S256 challenge of a verifier (RFC 7636, 4.2).
pub fn pkce_challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Two issuer URLs name the same issuer: equal but for a trailing slash.
fn same_issuer(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

impl Provider {
    /// A provider for `config`; nothing is fetched until the first sign-in.
    pub fn new(config: OidcConfig) -> Result<Provider, OidcError> {
        // Err only means a provider is already installed, which is what we want.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            // Proxies from the environment would be fine, but a LAN provider behind a proxy
            // for the internet is the common case where they are wrong.
            .no_proxy()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::limited(3))
            .user_agent(tidings_fetch::client::default_user_agent())
            .build()
            .map_err(|e| OidcError::Provider(e.to_string()))?;
        Ok(Provider {
            config,
            http,
            metadata: Mutex::new(None),
            keys: Mutex::new(None),
        })
    }

    /// The settings.
    pub fn config(&self) -> &OidcConfig {
        &self.config
    }

    /// GETs a JSON document from the provider, bounded in time and size.
    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &url::Url,
    ) -> Result<T, OidcError> {
        let response = self
            .http
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| OidcError::Provider(format!("{url}: {}", error_chain(&e))))?;
        let status = response.status();
        let body = read_bounded(response).await?;
        if !status.is_success() {
            return Err(OidcError::Provider(format!("{url} answered HTTP {status}")));
        }
        serde_json::from_slice(&body).map_err(|e| {
            OidcError::Provider(format!("{url} did not answer the expected JSON: {e}"))
        })
    }

    /// The discovery document, fetched once an hour.
    pub async fn metadata(&self) -> Result<Metadata, OidcError> {
        let mut cached = self.metadata.lock().await;
        if let Some((metadata, at)) = cached.as_ref()
            && at.elapsed() < METADATA_LIFETIME
        {
            return Ok(metadata.clone());
        }
        let url = discovery_url(&self.config.issuer);
        let metadata: Metadata = self.get_json(&url).await?;
        if !same_issuer(&metadata.issuer, self.config.issuer.as_str()) {
            return Err(OidcError::Provider(format!(
                "the discovery document at {url} names the issuer {}, not {} \
                 (TIDINGS_OIDC_ISSUER must be the issuer exactly)",
                metadata.issuer, self.config.issuer
            )));
        }
        *cached = Some((metadata.clone(), Instant::now()));
        Ok(metadata)
    }

    /// The URL to send the browser to, for a request with these secrets.
    pub async fn authorization_url(
        &self,
        redirect_uri: &str,
        state: &str,
        nonce: &str,
        verifier: &str,
    ) -> Result<url::Url, OidcError> {
        let metadata = self.metadata().await?;
        let mut url = endpoint(&metadata.authorization_endpoint)?;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.config.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("scope", &self.config.scopes.join(" "))
            .append_pair("state", state)
            .append_pair("nonce", nonce)
            .append_pair("code_challenge", &pkce_challenge(verifier))
            .append_pair("code_challenge_method", "S256");
        Ok(url)
    }

    /// Exchanges an authorization code for the ID token (the raw JWT).
    pub async fn exchange(
        &self,
        code: &str,
        verifier: &str,
        redirect_uri: &str,
    ) -> Result<String, OidcError> {
        let metadata = self.metadata().await?;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ];
        let mut request = self.http.post(endpoint(&metadata.token_endpoint)?);
        let methods = metadata.token_endpoint_auth_methods_supported.as_deref();
        let basic = methods.is_none_or(|m| m.iter().any(|m| m == "client_secret_basic"));
        match &self.config.client_secret {
            // RFC 6749 2.3.1: both parts form-encoded before the Basic encoding.
            Some(secret) if basic => {
                let encode = |s: &str| {
                    url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>()
                };
                let credentials = base64::engine::general_purpose::STANDARD.encode(format!(
                    "{}:{}",
                    encode(&self.config.client_id),
                    encode(secret)
                ));
                request = request.header(
                    reqwest::header::AUTHORIZATION,
                    format!("Basic {credentials}"),
                );
            }
            Some(secret) => {
                form.push(("client_id", &self.config.client_id));
                form.push(("client_secret", secret));
            }
            None => form.push(("client_id", &self.config.client_id)),
        }
        let body = form
            .iter()
            .fold(
                url::form_urlencoded::Serializer::new(String::new()),
                |mut s, (k, v)| {
                    s.append_pair(k, v);
                    s
                },
            )
            .finish();
        let response = request
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| {
                OidcError::Provider(format!("{}: {}", metadata.token_endpoint, error_chain(&e)))
            })?;
        let status = response.status();
        let body = read_bounded(response).await?;
        let answer: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        if !status.is_success() {
            let reason = answer["error_description"]
                .as_str()
                .or(answer["error"].as_str())
                .unwrap_or("no reason given");
            return Err(OidcError::Refused(format!("HTTP {status}: {reason}")));
        }
        answer["id_token"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| OidcError::Refused("the token answer has no id_token".into()))
    }

    /// The key set, fetched when missing or old, or (`refresh`) when a token names a key it
    /// lacks and it was not fetched within the last second.
    async fn keys(&self, jwks_uri: &url::Url, refresh: bool) -> Result<JwkSet, OidcError> {
        let mut cached = self.keys.lock().await;
        if let Some((keys, at)) = cached.as_ref() {
            let fresh = at.elapsed() < KEYS_LIFETIME;
            let just_fetched = at.elapsed() < KEYS_REFETCH_AFTER;
            if fresh && (!refresh || just_fetched) {
                return Ok(keys.clone());
            }
        }
        let keys: JwkSet = self.get_json(jwks_uri).await?;
        *cached = Some((keys.clone(), Instant::now()));
        Ok(keys)
    }

    /// Verifies an ID token for this client and `nonce`, fetching the provider's keys again
    /// once when the token names a key the cached set lacks (the provider rotated its keys).
    pub async fn verify(&self, id_token: &str, nonce: &str) -> Result<IdClaims, OidcError> {
        let metadata = self.metadata().await?;
        let expected = verify::Expected {
            issuer: &metadata.issuer,
            client_id: &self.config.client_id,
            nonce,
            now: tidings_store::unix_now(),
        };
        let jwks_uri = endpoint(&metadata.jwks_uri)?;
        let keys = self.keys(&jwks_uri, false).await?;
        match verify::verify(id_token, &keys, &expected) {
            Err(TokenError::UnknownKey(_)) => {
                let keys = self.keys(&jwks_uri, true).await?;
                Ok(verify::verify(id_token, &keys, &expected)?)
            }
            other => Ok(other?),
        }
    }
}

/// An endpoint of the discovery document, which must be an http(s) URL.
fn endpoint(text: &str) -> Result<url::Url, OidcError> {
    url::Url::parse(text)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https"))
        .ok_or_else(|| {
            OidcError::Provider(format!(
                "the discovery document names {text:?}, which is not an http(s) URL"
            ))
        })
}

/// `{issuer}/.well-known/openid-configuration` (OIDC Discovery 4), the issuer's path kept.
pub fn discovery_url(issuer: &url::Url) -> url::Url {
    let mut url = issuer.clone();
    let path = format!(
        "{}/.well-known/openid-configuration",
        issuer.path().trim_end_matches('/')
    );
    url.set_path(&path);
    url.set_query(None);
    url
}

/// Reads a response body, refusing one larger than [`MAX_ANSWER_BYTES`].
async fn read_bounded(mut response: reqwest::Response) -> Result<Vec<u8>, OidcError> {
    let url = response.url().clone();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| OidcError::Provider(format!("{url}: {}", error_chain(&e))))?
    {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(OidcError::Provider(format!(
                "{url} answered more than {} KB",
                MAX_ANSWER_BYTES / 1024
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// An error with its causes, for messages (reqwest's top level says little).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pkce_challenge_is_rfc_7636s() {
        // RFC 7636, appendix B.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn scopes_always_include_openid_once() {
        assert_eq!(
            parse_scopes("email profile"),
            ["openid", "email", "profile"]
        );
        assert_eq!(parse_scopes("openid,email openid"), ["openid", "email"]);
        assert_eq!(parse_scopes(""), ["openid"]);
    }

    #[test]
    fn discovery_keeps_the_issuers_path() {
        let at = |issuer: &str| discovery_url(&issuer.parse().unwrap()).to_string();
        assert_eq!(
            at("https://auth.example.com/application/o/tidings/"),
            "https://auth.example.com/application/o/tidings/.well-known/openid-configuration"
        );
        assert_eq!(
            at("https://kc.example.com/realms/home"),
            "https://kc.example.com/realms/home/.well-known/openid-configuration"
        );
        assert_eq!(
            at("https://accounts.google.com"),
            "https://accounts.google.com/.well-known/openid-configuration"
        );
    }
}
