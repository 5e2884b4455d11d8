//! A stand-in OpenID provider on 127.0.0.1 for the HTTP-level tests: it serves a discovery
//! document and a key set, and answers the token endpoint with whatever ID token the test
//! minted for a code (signed with a key made for the test, ES256), so that every way a token
//! can be wrong can be tried. It checks what a real provider checks of the client: the PKCE
//! verifier against the challenge, and the client's credentials.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

/// The client id the tests register.
pub const CLIENT_ID: &str = "tidings-test";
/// Its secret.
pub const CLIENT_SECRET: &str = "stand-in secret";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A P-256 signing key made for one test run.
#[derive(Clone)]
pub struct TestKey {
    /// The key id.
    pub kid: String,
    pkcs8: Vec<u8>,
    public: Vec<u8>,
}

impl TestKey {
    /// A new random key named `kid`.
    pub fn new(kid: &str) -> TestKey {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .unwrap()
            .as_ref()
            .to_vec();
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &rng).unwrap();
        TestKey {
            kid: kid.into(),
            public: pair.public_key().as_ref().to_vec(),
            pkcs8,
        }
    }

    /// The public key as a JWK.
    pub fn jwk(&self) -> Value {
        // An uncompressed point: 0x04, then x and y of 32 bytes each.
        json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": self.kid,
            "x": b64(&self.public[1..33]), "y": b64(&self.public[33..65]),
        })
    }

    /// Signs `claims` as an ES256 JWT whose header names `kid`.
    pub fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some(kid.into());
        jsonwebtoken::encode(
            &header,
            claims,
            &jsonwebtoken::EncodingKey::from_ec_der(&self.pkcs8),
        )
        .unwrap()
    }

    /// Signs `claims` with this key under its own id.
    pub fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }
}

#[derive(Default)]
struct Inner {
    issuer: String,
    keys: Vec<Value>,
    /// code → (the challenge the authorization request carried, the token to answer).
    codes: HashMap<String, (String, String)>,
    jwks_hits: usize,
    token_hits: usize,
    refusals: Vec<String>,
}

/// The running stand-in.
#[derive(Clone)]
pub struct StandIn {
    /// Its issuer: `http://127.0.0.1:PORT`.
    pub issuer: String,
    inner: Arc<Mutex<Inner>>,
}

async fn discovery(State(inner): State<Arc<Mutex<Inner>>>) -> impl IntoResponse {
    let issuer = inner.lock().unwrap().issuer.clone();
    axum::Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["ES256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
    }))
}

async fn jwks(State(inner): State<Arc<Mutex<Inner>>>) -> impl IntoResponse {
    let mut inner = inner.lock().unwrap();
    inner.jwks_hits += 1;
    axum::Json(json!({ "keys": inner.keys }))
}

async fn token(
    State(inner): State<Arc<Mutex<Inner>>>,
    headers: HeaderMap,
    body: String,
) -> axum::response::Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let mut inner = inner.lock().unwrap();
    inner.token_hits += 1;
    let expected_auth = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!(
            "{CLIENT_ID}:{}",
            url::form_urlencoded::byte_serialize(CLIENT_SECRET.as_bytes()).collect::<String>()
        ))
    );
    let refuse = |inner: &mut Inner, why: &str| {
        inner.refusals.push(why.to_string());
        (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant", "error_description": why})),
        )
            .into_response()
    };
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(expected_auth.as_str()) {
        return refuse(&mut inner, "bad client credentials");
    }
    if form.get("grant_type").map(String::as_str) != Some("authorization_code") {
        return refuse(&mut inner, "bad grant type");
    }
    let code = form.get("code").cloned().unwrap_or_default();
    // A code works once, as at a real provider.
    let Some((challenge, id_token)) = inner.codes.remove(&code) else {
        return refuse(&mut inner, "unknown code");
    };
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    if tidings_server::oidc::pkce_challenge(&verifier) != challenge {
        return refuse(&mut inner, "PKCE verifier does not match");
    }
    axum::Json(json!({"access_token": "at", "token_type": "Bearer", "id_token": id_token}))
        .into_response()
}

impl StandIn {
    /// Starts the stand-in publishing `keys`.
    pub async fn start(keys: &[&TestKey]) -> StandIn {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let inner = Arc::new(Mutex::new(Inner {
            issuer: issuer.clone(),
            keys: keys.iter().map(|k| k.jwk()).collect(),
            ..Inner::default()
        }));
        let app = axum::Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .route("/token", post(token))
            .with_state(inner.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        StandIn { issuer, inner }
    }

    /// Publishes these keys from now on.
    pub fn publish(&self, keys: &[&TestKey]) {
        self.inner.lock().unwrap().keys = keys.iter().map(|k| k.jwk()).collect();
    }

    /// Makes `code` answer with `id_token`, for a request that carried `challenge`.
    pub fn issue(&self, code: &str, challenge: &str, id_token: String) {
        self.inner
            .lock()
            .unwrap()
            .codes
            .insert(code.into(), (challenge.into(), id_token));
    }

    /// How often the key set was fetched.
    pub fn jwks_hits(&self) -> usize {
        self.inner.lock().unwrap().jwks_hits
    }

    /// How often the token endpoint was called.
    pub fn token_hits(&self) -> usize {
        self.inner.lock().unwrap().token_hits
    }

    /// Why the token endpoint refused requests.
    pub fn refusals(&self) -> Vec<String> {
        self.inner.lock().unwrap().refusals.clone()
    }

    /// Claims of a good ID token for `subject` with `nonce`, issued now.
    pub fn claims(&self, subject: &str, nonce: &str) -> Value {
        let now = chrono::Utc::now().timestamp();
        json!({
            "iss": self.issuer, "sub": subject, "aud": CLIENT_ID, "exp": now + 300, "iat": now,
            "nonce": nonce, "email": format!("{subject}@example.com"),
            "preferred_username": subject,
        })
    }
}
