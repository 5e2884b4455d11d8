//! Second factors over the REST API end to end (issue 19), on both engines: TOTP enrolment,
//! signing in with a code, replay refused, recovery codes single-use, wrong codes and their
//! limit, turning codes off; passkeys with a software authenticator (registration,
//! password-less sign-in, second factor, a counter that goes backwards); and the sync APIs
//! for apps (Fever, Google Reader, Miniflux) and API keys untouched by any of it.

use tidings_testkit::on_both_engines;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::{Client, Method, StatusCode};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;

use crate::support::{PASSWORD, TestApp, assert_error, call};
use tidings_server::mfa::totp;
use tidings_server::ratelimit::{RateLimiter, RateLimits};
use tidings_server::{AppState, ServerConfig};

/// A server like [`TestApp::start`] with these limits and 127.0.0.1 as a trusted proxy, so
/// that each [`device`] can come from its own address.
async fn start_with_limits(db: &tidings_testkit::TestDb, limits: RateLimits) -> TestApp {
    let store = db.migrated().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut config = ServerConfig::new(base.parse().unwrap());
    config.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
    let fetcher = crate::support::test_fetcher(store.clone(), true);
    let mut state = AppState::new(store.clone(), config, fetcher);
    state.limits = Arc::new(limits);
    tokio::spawn(tidings_server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    TestApp { base, store }
}

/// Limits high enough that a test's many sign-ins from one address never meet them.
fn generous() -> RateLimits {
    let minute = Duration::from_secs(60);
    RateLimits {
        login_per_ip: RateLimiter::new(1_000, minute),
        login_per_account: RateLimiter::new(1_000, minute),
        ..RateLimits::standard()
    }
}

/// A browser (own cookies, this server's Origin) at its own address `192.0.2.n`.
fn device(app: &TestApp, n: u8) -> Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::ORIGIN, app.base.parse().unwrap());
    headers.insert("x-forwarded-for", format!("192.0.2.{n}").parse().unwrap());
    Client::builder()
        .cookie_store(true)
        .default_headers(headers)
        .build()
        .unwrap()
}

fn now() -> i64 {
    tidings_store::unix_now()
}

/// Waits until the current 30-second step has at least 10 seconds left, so that a code
/// computed now is still inside the window when the server checks it, even on a loaded
/// machine where a debug build hashes a password for seconds.
async fn away_from_a_step_edge() {
    while now().rem_euclid(30) > 20 {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// The code an app shows `offset` steps from now.
fn code(secret: &[u8], offset: i64) -> String {
    totp::code(secret, totp::step_at(now()) + offset)
}

/// Asserts that a code already spent at `used_step` was refused. While that step is inside the
/// server's window (one step either side of now) the refusal must say `code_used`; on a machine
/// so slow that the step has left the window by the time of the answer, the code is simply
/// wrong, which is a refusal too.
fn assert_replay_refused(used_step: i64, status: StatusCode, body: &Value) {
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    if totp::step_at(now()) - used_step <= 1 {
        assert_error(body, "code_used", "auth");
    } else {
        assert!(
            body["error"]["code"] == "code_used" || body["error"]["code"] == "invalid_code",
            "{body}"
        );
    }
}

/// Signs `name` in with the password; answers the status and body (202 when a second factor
/// is awaited).
async fn password_step(app: &TestApp, client: &Client, name: &str) -> (StatusCode, Value) {
    let (status, _, body) = call(
        client,
        Method::POST,
        &app.url("/session"),
        Some(json!({"username": name, "password": PASSWORD})),
    )
    .await;
    (status, body)
}

/// Turns on TOTP for the signed-in `client` and answers the secret and the recovery codes.
async fn enrol_totp(app: &TestApp, client: &Client) -> (Vec<u8>, Vec<String>, i64) {
    let (status, _, body) = call(client, Method::POST, &app.url("/me/totp"), None).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let secret = totp::base32_decode(body["secret"].as_str().unwrap()).unwrap();
    assert_eq!(secret.len(), 20);
    let uri = body["otpauth_uri"].as_str().unwrap();
    assert!(
        uri.starts_with("otpauth://totp/")
            && uri.contains(&format!("secret={}", body["secret"].as_str().unwrap())),
        "{uri}"
    );
    assert!(
        body["qr_svg"].as_str().unwrap().contains("<svg"),
        "a QR code as SVG"
    );

    // Not on until confirmed: the password alone still signs in.
    let (status, _, factors) =
        call(client, Method::GET, &app.url("/me/second-factors"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (factors["totp"].clone(), factors["totp_pending"].clone()),
        (json!(false), json!(true))
    );

    let (status, _, body) = call(
        client,
        Method::POST,
        &app.url("/me/totp/confirm"),
        Some(json!({"code": "000000"})),
    )
    .await;
    // One chance in a million that 000000 is the right code; the window makes it three.
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_error(&body, "invalid_code", "auth");

    away_from_a_step_edge().await;
    // The previous step's code, so that the current one is still unused for the test.
    let confirmed_step = totp::step_at(now()) - 1;
    let (status, _, body) = call(
        client,
        Method::POST,
        &app.url("/me/totp/confirm"),
        Some(json!({"code": totp::code(&secret, confirmed_step)})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let codes: Vec<String> = body["recovery_codes"]
        .as_array()
        .expect("recovery codes shown once")
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    assert_eq!(codes.len(), 10);
    (secret, codes, confirmed_step)
}

on_both_engines!(totp_sign_in_replay_and_recovery_codes, |db| {
    let app = start_with_limits(db, generous()).await;
    let user = app.user("ada", false).await;
    let ada = app.signed_in("ada").await;
    let (secret, recovery, confirmed_step) = enrol_totp(&app, &ada).await;
    // A second enrolment is refused while codes are on.
    let (status, _, body) = call(&ada, Method::POST, &app.url("/me/totp"), None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");

    let current =
        phase_the_password_alone_is_pending_until_a_code(&app, user, &secret, confirmed_step).await;
    phase_replay_is_refused_and_a_recovery_code_works_once(&app, &ada, current, &recovery).await;
    phase_new_recovery_codes_need_the_password(&app, &ada, user, &recovery).await;
    phase_turning_codes_off_needs_a_code(&app, &ada, &secret).await;
});

/// The password alone is a pending sign-in, not a session; neither or both fields are a 400, a
/// wrong code and the code used for confirming (at `confirmed_step`) are refused, and the
/// current code signs in. Returns that code and its step.
async fn phase_the_password_alone_is_pending_until_a_code(
    app: &TestApp,
    user: i64,
    secret: &[u8],
    confirmed_step: i64,
) -> (String, i64) {
    // The password alone is now a pending sign-in, not a session.
    let phone = app.browser();
    let (status, body) = password_step(app, &phone, "ada").await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(
        body["second_factor"]["methods"],
        json!(["totp", "recovery_code"])
    );
    let (status, _, _) = call(&phone, Method::GET, &app.url("/me"), None).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "the pending cookie is not a session"
    );

    // Neither or both fields: a clear 400.
    let (status, _, body) = call(
        &phone,
        Method::POST,
        &app.url("/session/second-factor"),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    // A wrong code.
    let (status, _, body) = call(
        &phone,
        Method::POST,
        &app.url("/session/second-factor"),
        Some(json!({"code": "12345x"})),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_error(&body, "invalid_code", "auth");
    // The code used for confirming cannot be used again.
    let (status, _, body) = call(
        &phone,
        Method::POST,
        &app.url("/session/second-factor"),
        Some(json!({"code": totp::code(secret, confirmed_step)})),
    )
    .await;
    assert_replay_refused(confirmed_step, status, &body);
    // The current code signs in (typed as an app shows it, with a space).
    away_from_a_step_edge().await;
    let current_step = totp::step_at(now());
    let current = totp::code(secret, current_step);
    let (status, headers, body) = call(
        &phone,
        Method::POST,
        &app.url("/session/second-factor"),
        Some(json!({"code": format!("{} {}", &current[..3], &current[3..])})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["id"], user);
    let cookies: Vec<&str> = headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert!(
        cookies.iter().any(|c| c.starts_with("tidings_session=")),
        "{cookies:?}"
    );
    assert!(
        cookies
            .iter()
            .any(|c| c.starts_with("tidings_second_factor=;") && c.contains("Max-Age=0")),
        "the pending cookie is dropped: {cookies:?}"
    );
    let (status, _, _) = call(&phone, Method::GET, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::OK);
    (current, current_step)
}

/// Replay: the code that signed in is refused on another sign-in; a recovery code works once,
/// however it is typed.
async fn phase_replay_is_refused_and_a_recovery_code_works_once(
    app: &TestApp,
    ada: &Client,
    (current, current_step): (String, i64),
    recovery: &[String],
) {
    // Replay: the same code on another sign-in is refused.
    let thief = app.browser();
    assert_eq!(
        password_step(app, &thief, "ada").await.0,
        StatusCode::ACCEPTED
    );
    let (status, _, body) = call(
        &thief,
        Method::POST,
        &app.url("/session/second-factor"),
        Some(json!({"code": current})),
    )
    .await;
    assert_replay_refused(current_step, status, &body);

    // A recovery code works once, however it is typed.
    let (status, _, body) = call(
        &thief,
        Method::POST,
        &app.url("/session/second-factor"),
        Some(json!({"recovery_code": recovery[0].to_uppercase().replace('-', " ")})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let again = app.browser();
    assert_eq!(
        password_step(app, &again, "ada").await.0,
        StatusCode::ACCEPTED
    );
    let (status, _, body) = call(
        &again,
        Method::POST,
        &app.url("/session/second-factor"),
        Some(json!({"recovery_code": recovery[0]})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "a used recovery code: {body}"
    );
    assert_error(&body, "invalid_code", "auth");
    let (_, _, factors) = call(ada, Method::GET, &app.url("/me/second-factors"), None).await;
    assert_eq!(factors["recovery_codes_left"], 9);
}

/// New recovery codes need the password; the old ones stop working.
async fn phase_new_recovery_codes_need_the_password(
    app: &TestApp,
    ada: &Client,
    user: i64,
    recovery: &[String],
) {
    // New recovery codes need the password (or a code); the old ones stop working.
    let (status, _, body) = call(
        ada,
        Method::POST,
        &app.url("/me/recovery-codes"),
        Some(json!({"password": "wrong password entirely"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _, body) = call(
        ada,
        Method::POST,
        &app.url("/me/recovery-codes"),
        Some(json!({"password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let fresh = body["recovery_codes"].as_array().unwrap().clone();
    assert_eq!(fresh.len(), 10);
    let old_hash = tidings_server::mfa::recovery_code_hash(&recovery[2]);
    assert!(
        !app.store.use_recovery_code(user, &old_hash).await.unwrap(),
        "old codes are gone"
    );
}

/// Turning codes off needs a current code or the password, and takes the recovery codes with
/// it; then the password alone signs in again.
async fn phase_turning_codes_off_needs_a_code(app: &TestApp, ada: &Client, secret: &[u8]) {
    // Turning codes off needs a current code or the password: a wrong code is refused.
    let (status, _, body) = call(
        ada,
        Method::DELETE,
        &app.url("/me/totp"),
        Some(json!({"code": "000001"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _, body) = call(ada, Method::DELETE, &app.url("/me/totp"), Some(json!({}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _, body) = call(
        ada,
        Method::DELETE,
        &app.url("/me/totp"),
        Some(json!({"code": code(secret, 1)})),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (_, _, factors) = call(ada, Method::GET, &app.url("/me/second-factors"), None).await;
    assert_eq!(factors["totp"], false);
    assert_eq!(
        factors["recovery_codes_left"], 0,
        "recovery codes go with the last factor"
    );
    assert_eq!(
        password_step(app, &app.browser(), "ada").await.0,
        StatusCode::OK
    );
}

on_both_engines!(second_factor_attempts_are_limited, |db| {
    let app = start_with_limits(db, RateLimits::standard()).await;
    app.user("eve", false).await;
    let eve = app.signed_in("eve").await;
    // Enrolment's wrong and right code count against the account's 10 a minute: 2.
    let (_, recovery, _) = enrol_totp(&app, &eve).await;

    // Five wrong answers end a pending sign-in: even a right recovery code is then refused.
    let first = device(&app, 1);
    assert_eq!(
        password_step(&app, &first, "eve").await.0,
        StatusCode::ACCEPTED
    );
    for attempt in 1..=5 {
        let (status, _, body) = call(
            &first,
            Method::POST,
            &app.url("/session/second-factor"),
            Some(json!({"code": "00000x"})),
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        let expected = if attempt < 5 {
            "invalid_code"
        } else {
            "second_factor_expired"
        };
        assert_error(&body, expected, "auth");
    }
    let (status, _, body) = call(
        &first,
        Method::POST,
        &app.url("/session/second-factor"),
        Some(json!({"recovery_code": recovery[0]})),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_error(&body, "second_factor_expired", "auth");

    // New password sign-ins from new addresses do not buy new guesses: 7 were spent, so the
    // fourth guess from here on meets the account's limit.
    let mut answers = Vec::new();
    for n in 2..8 {
        let guesser = device(&app, n);
        let (status, body) = password_step(&app, &guesser, "eve").await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        let (status, headers, body) = call(
            &guesser,
            Method::POST,
            &app.url("/session/second-factor"),
            Some(json!({"code": "00000x"})),
        )
        .await;
        answers.push(status);
        if status == StatusCode::TOO_MANY_REQUESTS {
            assert_error(&body, "rate_limited", "limit");
            assert!(headers.contains_key("retry-after"));
            break;
        }
    }
    assert_eq!(
        answers,
        [
            StatusCode::UNAUTHORIZED,
            StatusCode::UNAUTHORIZED,
            StatusCode::UNAUTHORIZED,
            StatusCode::TOO_MANY_REQUESTS
        ]
    );
});

on_both_engines!(api_keys_and_sync_apps_never_meet_the_second_factor, |db| {
    let app = start_with_limits(db, generous()).await;
    app.user("bob", false).await;
    let bob = app.signed_in("bob").await;
    let (status, _, body) = call(
        &bob,
        Method::POST,
        &app.url("/api-keys"),
        Some(json!({"name": "reader app", "scope": "read_write"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let key = body["key"].as_str().unwrap().to_string();
    enrol_totp(&app, &bob).await;
    assert_eq!(
        password_step(&app, &app.browser(), "bob").await.0,
        StatusCode::ACCEPTED
    );

    let plain = Client::new();
    // The REST API with the key.
    let response = plain
        .get(app.url("/me"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    // …but a key cannot turn codes off or read the factors: that needs a session.
    let response = plain
        .delete(app.url("/me/totp"))
        .bearer_auth(&key)
        .json(&json!({"password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    // Fever: api_key = md5(username:key).
    let digest = tidings_server::sync::fever::key_digest("bob", &key);
    let fever: Value = plain
        .post(format!("{}/fever/?api", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("api_key={digest}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(fever["auth"], 1, "{fever}");
    // Google Reader: ClientLogin with the key as Passwd.
    let response = plain
        .post(format!("{}/accounts/ClientLogin", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("Email=bob&Passwd={key}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let text = response.text().await.unwrap();
    let token = text
        .lines()
        .find_map(|l| l.strip_prefix("Auth="))
        .expect("an Auth token")
        .to_string();
    let response = plain
        .get(format!(
            "{}/reader/api/0/subscription/list?output=json",
            app.base
        ))
        .header("Authorization", format!("GoogleLogin auth={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    // Miniflux: X-Auth-Token.
    let response = plain
        .get(format!("{}/v1/me", app.base))
        .header("X-Auth-Token", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
});

/// A software passkey: a P-256 key pair, its credential id and its counter, answering the
/// server's options as a browser with a platform authenticator would.
struct SoftPasskey {
    key: EcdsaKeyPair,
    id: Vec<u8>,
    count: u32,
    user_handle: Vec<u8>,
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn cbor(value: &ciborium::Value) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::into_writer(value, &mut out).unwrap();
    out
}

impl SoftPasskey {
    fn new() -> SoftPasskey {
        let rng = SystemRandom::new();
        let doc =
            EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        SoftPasskey {
            key: EcdsaKeyPair::from_pkcs8(
                &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
                doc.as_ref(),
                &rng,
            )
            .unwrap(),
            id: rand::random::<[u8; 16]>().to_vec(),
            count: 0,
            user_handle: Vec::new(),
        }
    }

    fn client_data(kind: &str, options: &Value, origin: &str) -> Vec<u8> {
        json!({"type": kind, "challenge": options["public_key"]["challenge"], "origin": origin})
            .to_string()
            .into_bytes()
    }

    fn auth_data(rp_id: &str, count: u32) -> Vec<u8> {
        let mut data = Sha256::digest(rp_id.as_bytes()).to_vec();
        data.push(0x01 | 0x04);
        data.extend_from_slice(&count.to_be_bytes());
        data
    }

    /// The answer to registration options.
    fn register(&mut self, options: &Value, origin: &str) -> Value {
        use ciborium::Value as C;
        let o = &options["public_key"];
        self.user_handle = URL_SAFE_NO_PAD
            .decode(o["user"]["id"].as_str().unwrap())
            .unwrap();
        let point = self.key.public_key().as_ref();
        let cose = C::Map(vec![
            (C::Integer(1.into()), C::Integer(2.into())),
            (C::Integer(3.into()), C::Integer((-7).into())),
            (C::Integer((-1).into()), C::Integer(1.into())),
            (C::Integer((-2).into()), C::Bytes(point[1..33].to_vec())),
            (C::Integer((-3).into()), C::Bytes(point[33..].to_vec())),
        ]);
        let mut data = Self::auth_data(o["rp"]["id"].as_str().unwrap(), self.count);
        data[32] |= 0x40;
        data.extend_from_slice(&[0; 16]);
        data.extend_from_slice(&(self.id.len() as u16).to_be_bytes());
        data.extend_from_slice(&self.id);
        data.extend_from_slice(&cbor(&cose));
        let object = C::Map(vec![
            (C::Text("fmt".into()), C::Text("none".into())),
            (C::Text("attStmt".into()), C::Map(vec![])),
            (C::Text("authData".into()), C::Bytes(data)),
        ]);
        json!({"id": b64(&self.id), "response": {
            "clientDataJSON": b64(&Self::client_data("webauthn.create", options, origin)),
            "attestationObject": b64(&cbor(&object)),
        }})
    }

    /// The answer to sign-in options.
    fn sign(&mut self, options: &Value, origin: &str) -> Value {
        self.count += 1;
        let client = Self::client_data("webauthn.get", options, origin);
        let data = Self::auth_data(options["public_key"]["rpId"].as_str().unwrap(), self.count);
        let mut signed = data.clone();
        signed.extend_from_slice(&Sha256::digest(&client));
        let signature = self.key.sign(&SystemRandom::new(), &signed).unwrap();
        json!({"credential": {"id": b64(&self.id), "response": {
            "clientDataJSON": b64(&client),
            "authenticatorData": b64(&data),
            "signature": b64(signature.as_ref()),
            "userHandle": b64(&self.user_handle),
        }}})
    }
}

/// Asks for sign-in options as `client` and answers them with `passkey`: the status and body.
async fn passkey_attempt(
    app: &TestApp,
    client: &Client,
    passkey: &mut SoftPasskey,
    origin: &str,
) -> (StatusCode, Value) {
    let (status, _, options) = call(
        client,
        Method::POST,
        &app.url("/session/passkey/options"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{options}");
    let answer = passkey.sign(&options, origin);
    let (status, _, body) = call(
        client,
        Method::POST,
        &app.url("/session/passkey"),
        Some(answer),
    )
    .await;
    (status, body)
}

on_both_engines!(passkeys_register_sign_in_alone_and_as_second_factor, |db| {
    let app = start_with_limits(db, generous()).await;
    let user = app.user("cy", false).await;
    app.user("dee", false).await;
    let cy = app.signed_in("cy").await;
    let origin = app.base.clone();

    let (mut laptop, mut key, factors) = phase_register_two_passkeys(&app, &cy, &origin).await;
    let stranger = app.browser();
    phase_password_less_sign_in_refuses_replays_forgeries_and_clones(
        &app,
        &stranger,
        &mut laptop,
        &origin,
        user,
    )
    .await;
    phase_as_second_factor_the_same_accounts_passkey_only(&app, &mut key, &origin).await;
    phase_removing_the_passkeys_turns_the_step_off(
        &app,
        &cy,
        &factors,
        &stranger,
        &mut laptop,
        &origin,
    )
    .await;
});

/// Cy registers a laptop passkey (an answer made on another site refused, the challenge
/// single-use, recovery codes made with the first) and a security key, listed with it.
/// Returns both passkeys and the second factors listed.
async fn phase_register_two_passkeys(
    app: &TestApp,
    cy: &Client,
    origin: &str,
) -> (SoftPasskey, SoftPasskey, Value) {
    let (status, _, options) = call(cy, Method::POST, &app.url("/me/passkeys/options"), None).await;
    assert_eq!(status, StatusCode::OK, "{options}");
    assert_eq!(options["public_key"]["rp"]["id"], "127.0.0.1");
    assert_eq!(
        options["public_key"]["authenticatorSelection"]["residentKey"],
        "required"
    );
    let mut laptop = SoftPasskey::new();
    // An answer made on another site is refused.
    let phished = laptop.register(&options, "https://evil.example");
    let (status, _, body) = call(
        cy,
        Method::POST,
        &app.url("/me/passkeys"),
        Some(json!({"name": "laptop", "credential": phished})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "passkey_refused", "validation");
    // The challenge was spent by that attempt; a new one registers.
    let (_, _, options) = call(cy, Method::POST, &app.url("/me/passkeys/options"), None).await;
    let answer = laptop.register(&options, origin);
    let (status, _, body) = call(
        cy,
        Method::POST,
        &app.url("/me/passkeys"),
        Some(json!({"name": "laptop", "credential": answer.clone()})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["passkey"]["name"], "laptop");
    assert_eq!(body["recovery_codes"].as_array().map(Vec::len), Some(10));
    // The same answer again: the challenge is single-use.
    let (status, _, _) = call(
        cy,
        Method::POST,
        &app.url("/me/passkeys"),
        Some(json!({"name": "again", "credential": answer})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // A second passkey, listed with the first.
    let mut key = SoftPasskey::new();
    let (_, _, options) = call(cy, Method::POST, &app.url("/me/passkeys/options"), None).await;
    assert_eq!(
        options["public_key"]["excludeCredentials"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let answer = key.register(&options, origin);
    let (status, _, body) = call(
        cy,
        Method::POST,
        &app.url("/me/passkeys"),
        Some(json!({"name": "security key", "credential": answer})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert!(body["recovery_codes"].is_null(), "codes are made once");
    let (_, _, factors) = call(cy, Method::GET, &app.url("/me/second-factors"), None).await;
    let names: Vec<&str> = factors["passkeys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["laptop", "security key"]);

    (laptop, key, factors)
}

/// Password-less sign-in: no cookie, no name, only the passkey; a replayed answer, a tampered
/// signature and a counter that goes backwards (a cloned authenticator) are refused.
async fn phase_password_less_sign_in_refuses_replays_forgeries_and_clones(
    app: &TestApp,
    stranger: &Client,
    laptop: &mut SoftPasskey,
    origin: &str,
    user: i64,
) {
    // Password-less: no cookie, no name, only the passkey.
    let (status, _, options) = call(
        stranger,
        Method::POST,
        &app.url("/session/passkey/options"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(options["public_key"]["allowCredentials"], json!([]));
    assert_eq!(options["public_key"]["userVerification"], "required");
    let signed = laptop.sign(&options, origin);
    let (status, _, body) = call(
        stranger,
        Method::POST,
        &app.url("/session/passkey"),
        Some(signed.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["id"], user);
    // The same answer replayed: the challenge is gone.
    let (status, _, body) = call(
        &app.browser(),
        Method::POST,
        &app.url("/session/passkey"),
        Some(signed),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_error(&body, "passkey_refused", "auth");

    // A tampered signature.
    let (_, _, options) = call(
        stranger,
        Method::POST,
        &app.url("/session/passkey/options"),
        None,
    )
    .await;
    let mut forged = laptop.sign(&options, origin);
    forged["credential"]["response"]["signature"] = json!(b64(b"not a signature"));
    let (status, _, body) = call(
        stranger,
        Method::POST,
        &app.url("/session/passkey"),
        Some(forged),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");

    // A counter that goes backwards (a cloned authenticator) is refused.
    let (_, _, options) = call(
        stranger,
        Method::POST,
        &app.url("/session/passkey/options"),
        None,
    )
    .await;
    laptop.count = 0;
    let cloned = laptop.sign(&options, origin);
    let (status, _, body) = call(
        stranger,
        Method::POST,
        &app.url("/session/passkey"),
        Some(cloned),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    laptop.count = 10;
}

/// As the second factor: the password, then a passkey of the same account only; another
/// account's passkey cannot finish cy's password sign-in.
async fn phase_as_second_factor_the_same_accounts_passkey_only(
    app: &TestApp,
    key: &mut SoftPasskey,
    origin: &str,
) {
    // As the second factor: the password, then the passkey of the same account only.
    let browser = app.browser();
    let (status, body) = password_step(app, &browser, "cy").await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(
        body["second_factor"]["methods"],
        json!(["passkey", "recovery_code"])
    );
    let (_, _, options) = call(
        &browser,
        Method::POST,
        &app.url("/session/passkey/options"),
        None,
    )
    .await;
    assert_eq!(
        options["public_key"]["allowCredentials"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let (status, _, _) = call(&browser, Method::GET, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, body) = call(
        &browser,
        Method::POST,
        &app.url("/session/passkey"),
        Some(key.sign(&options, origin)),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _, _) = call(&browser, Method::GET, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::OK);
    // Another account's passkey cannot finish cy's password sign-in.
    let dee = app.signed_in("dee").await;
    let mut dees = SoftPasskey::new();
    let (_, _, options) = call(&dee, Method::POST, &app.url("/me/passkeys/options"), None).await;
    let answer = dees.register(&options, origin);
    let (status, _, _) = call(
        &dee,
        Method::POST,
        &app.url("/me/passkeys"),
        Some(json!({"name": "dee's phone", "credential": answer})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let browser = app.browser();
    assert_eq!(
        password_step(app, &browser, "cy").await.0,
        StatusCode::ACCEPTED
    );
    let (status, body) = passkey_attempt(app, &browser, &mut dees, origin).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_error(&body, "passkey_refused", "auth");
    let (status, _, _) = call(&browser, Method::GET, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

/// Removing the passkeys turns the second step off and drops the recovery codes; a removed
/// passkey no longer signs in.
async fn phase_removing_the_passkeys_turns_the_step_off(
    app: &TestApp,
    cy: &Client,
    factors: &Value,
    stranger: &Client,
    laptop: &mut SoftPasskey,
    origin: &str,
) {
    // Removing the passkeys turns the second step off and drops the recovery codes.
    for passkey in factors["passkeys"].as_array().unwrap() {
        let (status, _, _) = call(
            cy,
            Method::DELETE,
            &app.url(&format!("/me/passkeys/{}", passkey["id"])),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NO_CONTENT);
    }
    let (status, _, body) = call(cy, Method::DELETE, &app.url("/me/passkeys/999999"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (_, _, factors) = call(cy, Method::GET, &app.url("/me/second-factors"), None).await;
    assert_eq!(
        (
            factors["passkeys"].clone(),
            factors["recovery_codes_left"].clone()
        ),
        (json!([]), json!(0))
    );
    let (status, body) = passkey_attempt(app, stranger, laptop, origin).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "a removed passkey: {body}"
    );
}

on_both_engines!(a_passkey_is_renamed_with_a_checked_name, |db| {
    let app = start_with_limits(db, generous()).await;
    app.user("eve", false).await;
    let eve = app.signed_in("eve").await;
    let (_, _, options) = call(&eve, Method::POST, &app.url("/me/passkeys/options"), None).await;
    let answer = SoftPasskey::new().register(&options, &app.base);
    let (status, _, body) = call(
        &eve,
        Method::POST,
        &app.url("/me/passkeys"),
        Some(json!({"name": "  phone  ", "credential": answer})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["passkey"]["name"], "phone", "the name is trimmed");
    let id = body["passkey"]["id"].as_i64().unwrap();
    let url = app.url(&format!("/me/passkeys/{id}"));

    // Renamed: trimmed, 64 characters at most (counted as characters, not bytes).
    let long_ok = "é".repeat(64);
    for (sent, stored) in [
        ("  Work laptop  ", "Work laptop"),
        (long_ok.as_str(), long_ok.as_str()),
    ] {
        let (status, _, body) =
            call(&eve, Method::PATCH, &url, Some(json!({ "name": sent }))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["passkey"]["name"], stored);
        assert_eq!(body["passkey"]["id"], id);
    }
    let (_, _, factors) = call(&eve, Method::GET, &app.url("/me/second-factors"), None).await;
    assert_eq!(factors["passkeys"][0]["name"], long_ok.as_str());

    // Refused with a message naming the rule; the name stays.
    for bad in ["", "   ", &"x".repeat(65)] {
        let (status, _, body) = call(&eve, Method::PATCH, &url, Some(json!({ "name": bad }))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad:?}: {body}");
        assert_error(&body, "invalid_request", "validation");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("1 to 64 characters"), "{message}");
    }
    let (_, _, factors) = call(&eve, Method::GET, &app.url("/me/second-factors"), None).await;
    assert_eq!(factors["passkeys"][0]["name"], long_ok.as_str());

    // No such passkey: 404; with an API key: 403 (account settings need a session).
    let (status, _, _) = call(
        &eve,
        Method::PATCH,
        &app.url(&format!("/me/passkeys/{}", id + 1000)),
        Some(json!({"name": "ghost"})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, _, key) = call(
        &eve,
        Method::POST,
        &app.url("/api-keys"),
        Some(json!({"name": "script", "scope": "read_write"})),
    )
    .await;
    let script = reqwest::Client::new();
    let response = script
        .patch(&url)
        .bearer_auth(key["key"].as_str().unwrap())
        .json(&json!({"name": "by script"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
});
