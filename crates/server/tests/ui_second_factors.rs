//! Two-step sign-in in real headless Chromium (issue 19), on both engines: setting up
//! one-time codes from the account page (the key read off the page, as a person types it
//! into an app), signing in with a code and with a recovery code; registering a passkey with
//! Chromium's virtual authenticator (WebDriver's WebAuthn extension), then signing in with it
//! alone ("Sign in with a passkey") and as the second step after the password.
//!
//! Without Chromium the test prints `SKIPPED … : chromium not installed` and passes.

use tidings_testkit::on_both_engines;

use std::sync::Arc;
use std::time::Duration;

use crate::browser::{Browser, skip_without_browser};
use crate::support::PASSWORD;
use serde_json::Value;
use tidings_server::mfa::totp;
use tidings_server::ratelimit::{RateLimiter, RateLimits};
use tidings_server::{AppState, ServerConfig};
use tidings_store::Store;

/// A server reached as `http://localhost:PORT`: passkeys need a domain for their RP ID (an IP
/// address is none), and localhost is a secure context without https. Sign-in limits are
/// raised: the test signs in more often in a minute than the default allows one address.
async fn start_server(store: Store) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://localhost:{}", listener.local_addr().unwrap().port());
    let config = ServerConfig::new(base.parse().unwrap());
    let fetcher = crate::support::test_fetcher(store.clone(), true);
    let mut state = AppState::new(store, config, fetcher);
    let minute = Duration::from_secs(60);
    state.limits = Arc::new(RateLimits {
        per_user: RateLimiter::new(100_000, minute),
        login_per_ip: RateLimiter::new(1_000, minute),
        login_per_account: RateLimiter::new(1_000, minute),
        ..RateLimits::standard()
    });
    tokio::spawn(tidings_server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    base
}

fn code(secret: &[u8], offset: i64) -> String {
    totp::code(secret, totp::step_at(tidings_store::unix_now()) + offset)
}

/// Waits until the current 30-second step has at least 8 seconds left.
async fn away_from_a_step_edge() {
    while tidings_store::unix_now().rem_euclid(30) > 22 {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn signed_in_as(b: &Browser) -> Value {
    b.wait_for("the reader", "document.querySelector('nav#feeds') !== null")
        .await;
    b.js_async(
        "const done = arguments[arguments.length - 1]; \
         fetch('/api/v1/me').then(r => r.json()).then(j => done(j.user.username), e => done(String(e)));",
    )
    .await
    .expect("fetch /me")
}

/// Signs out through the API from the page and opens the sign-in page.
async fn sign_out(b: &Browser, base: &str) {
    b.js_async(
        "const done = arguments[arguments.length - 1]; \
         fetch('/api/v1/session', {method: 'DELETE'}).then(r => done(r.status), e => done(String(e)));",
    )
    .await
    .expect("sign out");
    b.goto(&format!("{base}/login")).await;
    b.wait_for(
        "the sign-in form",
        "document.querySelector('#sign-in-form') !== null",
    )
    .await;
}

/// Types the password on the sign-in page and waits for the second step.
async fn password_first(b: &Browser) {
    b.type_into("#username", "kai").await;
    b.type_into("#password", PASSWORD).await;
    b.click("#sign-in-form button[type=submit]").await;
    b.wait_for(
        "the second step",
        "document.querySelector('#second-factor-form') !== null",
    )
    .await;
}

on_both_engines!(two_step_sign_in_in_chromium, |db| {
    if skip_without_browser("two_step_sign_in_in_chromium") {
        return;
    }
    let store = db.migrated().await;
    let hash = tidings_server::password::hash_password(PASSWORD).unwrap();
    let user = store
        .create_user(&tidings_store::NewUser {
            username: "kai".into(),
            password_hash: Some(hash),
            is_admin: false,
        })
        .await
        .unwrap()
        .id;
    let base = start_server(store.clone()).await;
    let b = Browser::start(1200, 900).await;
    let authenticator = b
        .add_virtual_authenticator()
        .await
        .expect("a virtual authenticator");

    // The password alone signs in while no second factor is on.
    b.goto(&format!("{base}/login")).await;
    b.type_into("#username", "kai").await;
    b.type_into("#password", PASSWORD).await;
    b.click("#sign-in-form button[type=submit]").await;
    assert_eq!(signed_in_as(&b).await, "kai");

    let (secret, codes) = phase_codes_set_up_from_the_account_page(&b, &base, &store, user).await;
    phase_a_passkey_registered_and_renamed(&b, &store, user, &authenticator).await;
    phase_a_code_then_its_replay_refused_then_a_recovery_code(&b, &base, &secret, &codes).await;
    phase_a_passkey_alone_and_as_the_second_step(&b, &base, &store, user).await;
    phase_removing_both_leaves_the_password_alone(&b, &base).await;
    b.quit().await;
});

/// One-time codes from the account page: the key read off the page is the stored secret, the
/// QR code is drawn, a code from the key turns codes on and recovery codes are shown once.
/// Returns the key and the recovery codes.
async fn phase_codes_set_up_from_the_account_page(
    b: &Browser,
    base: &str,
    store: &Store,
    user: i64,
) -> (Vec<u8>, Vec<String>) {
    // One-time codes: the key from the page, a code from it, recovery codes shown once.
    b.goto(&format!("{base}/account")).await;
    b.wait_for(
        "the two-step section",
        "document.querySelector('#totp-setup') !== null",
    )
    .await;
    b.click("#totp-setup").await;
    let shown = b
        .wait_for(
            "the key to type into an app",
            "document.querySelector('#totp-secret')?.textContent",
        )
        .await;
    let secret = totp::base32_decode(shown.as_str().unwrap()).unwrap();
    assert_eq!(secret.len(), 20);
    assert_eq!(
        store.totp_secret(user).await.unwrap().unwrap().secret,
        secret,
        "the key on the page is the stored secret"
    );
    assert_eq!(
        b.eval("document.querySelector('#totp-enrol img.qr').naturalWidth > 0")
            .await,
        true,
        "the QR code is drawn"
    );
    away_from_a_step_edge().await;
    b.type_into("#totp-confirm-code", &code(&secret, -1)).await;
    b.click("#totp-enrol button[type=submit]").await;
    b.wait_for(
        "recovery codes",
        "document.querySelectorAll('#recovery-codes li').length > 0",
    )
    .await;
    let codes = b
        .eval("[...document.querySelectorAll('#recovery-codes li')].map(li => li.textContent)")
        .await;
    let codes: Vec<String> = codes
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    assert_eq!(codes.len(), 10);
    b.wait_for(
        "the status to say codes are on",
        "document.querySelector('#two-step-status').textContent.includes('is on')",
    )
    .await;

    (secret, codes)
}

/// A passkey from the virtual authenticator, discoverable and stored; renamed in place, the
/// new name trimmed in the list and the store.
async fn phase_a_passkey_registered_and_renamed(
    b: &Browser,
    store: &Store,
    user: i64,
    authenticator: &str,
) {
    // A passkey, from the virtual authenticator.
    b.type_into("#passkey-name", "laptop").await;
    b.click("#passkey-add button[type=submit]").await;
    b.wait_for(
        "the passkey in the list",
        "document.querySelector('#passkey-list')?.textContent.includes('laptop')",
    )
    .await;
    let held = b.virtual_credentials(authenticator).await.unwrap();
    assert_eq!(held.as_array().map(Vec::len), Some(1), "{held}");
    assert_eq!(
        held[0]["isResidentCredential"], true,
        "a discoverable credential"
    );
    assert_eq!(store.passkeys(user).await.unwrap().len(), 1);
    // Renamed in place: the new name, trimmed, in the list and the store.
    b.click("#passkey-list li button[data-action=rename]").await;
    b.type_into("#passkey-rename", "  work laptop ").await;
    b.click("#passkey-rename-form button[type=submit]").await;
    b.wait_for(
        "the new name in the list",
        "document.querySelector('#passkey-list')?.textContent.includes('work laptop') \
         && !document.querySelector('#passkey-rename-form')",
    )
    .await;
    assert_eq!(store.passkeys(user).await.unwrap()[0].name, "work laptop");
}

/// Password, then a one-time code signs in; the same code again is refused with the reason
/// shown, and a recovery code signs in instead.
async fn phase_a_code_then_its_replay_refused_then_a_recovery_code(
    b: &Browser,
    base: &str,
    secret: &[u8],
    codes: &[String],
) {
    // Password, then a one-time code (the next step's: the current one may be used).
    sign_out(b, base).await;
    password_first(b).await;
    away_from_a_step_edge().await;
    b.type_into("#second-factor-code", &code(secret, 1)).await;
    b.click("#second-factor-form button[type=submit]").await;
    assert_eq!(signed_in_as(b).await, "kai");

    // The same code again is refused, with the reason shown.
    sign_out(b, base).await;
    password_first(b).await;
    b.type_into("#second-factor-code", &code(secret, 1)).await;
    b.click("#second-factor-form button[type=submit]").await;
    b.wait_for(
        "the refusal",
        "document.querySelector('#second-factor-form .inline-error')?.textContent.includes('used already')",
    )
    .await;
    // A recovery code instead.
    b.js(
        "document.querySelector('#second-factor-code').value = '';",
        vec![],
    )
    .await
    .unwrap();
    b.type_into("#second-factor-code", &codes[0]).await;
    b.click("#second-factor-form button[type=submit]").await;
    assert_eq!(signed_in_as(b).await, "kai");
}

/// "Sign in with a passkey" without a name, its use recorded; then the passkey as the second
/// step after the password.
async fn phase_a_passkey_alone_and_as_the_second_step(
    b: &Browser,
    base: &str,
    store: &Store,
    user: i64,
) {
    // Password-less: "Sign in with a passkey", no name typed.
    sign_out(b, base).await;
    b.click("#passkey-sign-in").await;
    assert_eq!(signed_in_as(b).await, "kai");
    let used = store.passkeys(user).await.unwrap();
    assert!(used[0].last_used_at.is_some());
    assert!(
        used[0].sign_count > 0,
        "Chromium's authenticator counts its uses"
    );

    // The passkey as the second step after the password.
    sign_out(b, base).await;
    password_first(b).await;
    b.click("#use-passkey").await;
    assert_eq!(signed_in_as(b).await, "kai");
}

/// Removing the passkey and turning codes off leaves the password alone again.
async fn phase_removing_both_leaves_the_password_alone(b: &Browser, base: &str) {
    // Removing the passkey and turning codes off leaves the password alone again.
    b.goto(&format!("{base}/account")).await;
    b.wait_for(
        "the passkey list",
        "document.querySelector('#passkey-list li button.danger') !== null",
    )
    .await;
    b.click("#passkey-list li button.danger").await;
    b.click("dialog .dialog-buttons button.danger").await;
    b.wait_for(
        "the list to be empty",
        "document.querySelector('#passkey-list')?.children.length === 0",
    )
    .await;
    b.type_into("#two-step-proof", PASSWORD).await;
    b.click("#totp-off").await;
    b.wait_for(
        "the status to say two-step is off",
        "document.querySelector('#two-step-status')?.textContent.includes('is off')",
    )
    .await;
    sign_out(b, base).await;
    b.type_into("#username", "kai").await;
    b.type_into("#password", PASSWORD).await;
    b.click("#sign-in-form button[type=submit]").await;
    assert_eq!(signed_in_as(b).await, "kai");
}
