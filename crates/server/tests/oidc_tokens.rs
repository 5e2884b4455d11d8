//! OpenID Connect at the HTTP level (F22), against a stand-in provider whose ID tokens the
//! test mints: a good token signs in, and every kind of wrong token, a replayed or foreign
//! state and a wrong PKCE verifier are refused. Then linking and unlinking identities, sign-up,
//! and the switch that turns password sign-in off without touching API keys. Both engines.

use tidings_testkit::on_both_engines;

use crate::oidc_standin::{CLIENT_ID, CLIENT_SECRET, StandIn, TestKey};
use crate::support::{TestApp, assert_error, call};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use tidings_server::oidc::OidcConfig;

async fn app_with(db: &tidings_testkit::TestDb, provider: &StandIn, signup: bool) -> TestApp {
    let issuer: url::Url = provider.issuer.parse().unwrap();
    TestApp::start_with(db, true, move |config| {
        let mut oidc = OidcConfig::new(issuer, CLIENT_ID);
        oidc.client_secret = Some(CLIENT_SECRET.into());
        oidc.display_name = "Stand-in".into();
        oidc.signup = signup;
        config.oidc = Some(oidc);
    })
    .await
}

/// A browser that does not follow redirects, so each step can be looked at.
fn browser(app: &TestApp) -> Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::ORIGIN, app.base.parse().unwrap());
    Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .default_headers(headers)
        .build()
        .unwrap()
}

/// What the provider got from the redirect to its authorization endpoint.
struct Started {
    state: String,
    nonce: String,
    challenge: String,
}

fn parse_authorization(location: &str, app: &TestApp, provider: &StandIn) -> Started {
    let url = url::Url::parse(location).unwrap();
    assert!(
        location.starts_with(&format!("{}/authorize?", provider.issuer)),
        "{location}"
    );
    let pairs: std::collections::HashMap<String, String> = url.query_pairs().into_owned().collect();
    assert_eq!(pairs["response_type"], "code");
    assert_eq!(pairs["client_id"], CLIENT_ID);
    assert_eq!(
        pairs["redirect_uri"],
        format!("{}/auth/oidc/callback", app.base)
    );
    assert_eq!(pairs["scope"], "openid email profile");
    assert_eq!(pairs["code_challenge_method"], "S256");
    Started {
        state: pairs["state"].clone(),
        nonce: pairs["nonce"].clone(),
        challenge: pairs["code_challenge"].clone(),
    }
}

/// Starts a sign-in in `client`: the server answers with a redirect to the provider.
async fn start(client: &Client, app: &TestApp, provider: &StandIn, next: &str) -> Started {
    let response = client
        .get(format!("{}/auth/oidc/start?next={next}", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let location = response.headers()["location"].to_str().unwrap().to_string();
    parse_authorization(&location, app, provider)
}

/// Comes back from the provider with `code` for `state`; returns the status, the Location
/// (if any) and the body.
async fn callback(
    client: &Client,
    app: &TestApp,
    code: &str,
    state: &str,
) -> (StatusCode, Option<String>, String) {
    let mut url = url::Url::parse(&format!("{}/auth/oidc/callback", app.base)).unwrap();
    url.query_pairs_mut()
        .append_pair("code", code)
        .append_pair("state", state);
    let response = client.get(url).send().await.unwrap();
    let status = response.status();
    let location = response
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_string());
    (status, location, response.text().await.unwrap())
}

async fn me(client: &Client, app: &TestApp) -> (StatusCode, Value) {
    let (status, _, body) = call(client, Method::GET, &app.url("/me"), None).await;
    (status, body)
}

on_both_engines!(a_good_id_token_signs_in_and_wrong_ones_are_refused, |db| {
    let key = TestKey::new("k1");
    let provider = StandIn::start(&[&key]).await;
    let app = app_with(db, &provider, false).await;
    let ann = app.user("ann", false).await;
    app.store
        .link_identity(ann, &provider.issuer, "ann-sub", None)
        .await
        .unwrap();

    phase_each_wrong_token_is_refused_saying_why(&app, &provider, &key).await;
    phase_a_shared_secret_algorithm_is_refused(&app, &provider).await;
    phase_the_good_token_signs_in_once(&app, &provider, &key).await;
    phase_foreign_states_bad_verifiers_and_provider_refusals(&app, &provider, &key).await;
});

/// Each wrong token (audience, expiry, issuer, nonce, signature) is refused with what must be
/// said about it, and signs nobody in.
async fn phase_each_wrong_token_is_refused_saying_why(
    app: &TestApp,
    provider: &StandIn,
    key: &TestKey,
) {
    // Each wrong token, with what must be said about it.
    let other_key = TestKey::new("k1");
    let now = chrono::Utc::now().timestamp();
    type Spoil = Box<dyn Fn(&mut Value, &Started) -> Option<String>>;
    let cases: Vec<(&str, Spoil, &str)> = vec![
        (
            "wrong audience",
            Box::new(|c, _| {
                c["aud"] = json!("someone-else");
                None
            }),
            "meant for another client",
        ),
        (
            "several audiences, another party",
            Box::new(|c, _| {
                c["aud"] = json!([CLIENT_ID, "other"]);
                c["azp"] = json!("other");
                None
            }),
            "meant for another client",
        ),
        (
            "several audiences, no party",
            Box::new(|c, _| {
                c["aud"] = json!([CLIENT_ID, "other"]);
                None
            }),
            "meant for another client",
        ),
        (
            "expired",
            Box::new(move |c, _| {
                c["exp"] = json!(now - 600);
                c["iat"] = json!(now - 900);
                None
            }),
            "expired",
        ),
        (
            "issued in the future",
            Box::new(move |c, _| {
                c["iat"] = json!(now + 600);
                c["exp"] = json!(now + 900);
                None
            }),
            "not valid yet",
        ),
        (
            "wrong issuer",
            Box::new(|c, _| {
                c["iss"] = json!("https://evil.example");
                None
            }),
            "issued by",
        ),
        (
            "wrong nonce",
            Box::new(|c, _| {
                c["nonce"] = json!("not-the-nonce");
                None
            }),
            "nonce",
        ),
        (
            "no nonce",
            Box::new(|c, _| {
                c.as_object_mut().unwrap().remove("nonce");
                None
            }),
            "nonce",
        ),
        (
            "bad signature",
            Box::new(|_, _| Some("other key".into())),
            "signature does not verify",
        ),
    ];
    for (name, spoil, said) in &cases {
        let client = browser(app);
        let started = start(&client, app, provider, "/").await;
        let mut claims = provider.claims("ann-sub", &started.nonce);
        let token = match spoil(&mut claims, &started) {
            // Signed by another key under the published key's id.
            Some(_) => other_key.sign(&claims),
            None => key.sign(&claims),
        };
        let code = format!("code-{name}");
        provider.issue(&code, &started.challenge, token);
        let (status, location, body) = callback(&client, app, &code, &started.state).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}: {body}");
        assert!(location.is_none(), "{name}");
        assert!(
            body.contains("Sign-in failed") && body.contains(said),
            "{name}: {body}"
        );
        assert_eq!(me(&client, app).await.0, StatusCode::UNAUTHORIZED, "{name}");
    }
}

/// An algorithm that is not public-key (HS256 keyed with the client secret) is refused.
async fn phase_a_shared_secret_algorithm_is_refused(app: &TestApp, provider: &StandIn) {
    // An algorithm that is not public-key (HS256 keyed with the client secret) is refused.
    let client = browser(app);
    let started = start(&client, app, provider, "/").await;
    let token = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &provider.claims("ann-sub", &started.nonce),
        &jsonwebtoken::EncodingKey::from_secret(CLIENT_SECRET.as_bytes()),
    )
    .unwrap();
    provider.issue("code-hs", &started.challenge, token);
    let (status, _, body) = callback(&client, app, "code-hs", &started.state).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("not accepted"), "{body}");
}

/// The good token signs in and returns to where the sign-in started; the same answer again (a
/// replayed state) is refused, even with a fresh code and from the browser that started it.
async fn phase_the_good_token_signs_in_once(app: &TestApp, provider: &StandIn, key: &TestKey) {
    // The good token signs in and returns to where the sign-in started.
    let client = browser(app);
    let started = start(&client, app, provider, "/feeds/7").await;
    let token = key.sign(&provider.claims("ann-sub", &started.nonce));
    provider.issue("good", &started.challenge, token.clone());
    let (status, location, body) = callback(&client, app, "good", &started.state).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    assert_eq!(location.as_deref(), Some("/feeds/7"));
    let (status, body) = me(&client, app).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["user"]["username"], "ann");

    // The same answer again (a replayed state) is refused, even with a fresh code.
    provider.issue("again", &started.challenge, token.clone());
    let replay = browser(app);
    let (status, _, body) = callback(&replay, app, "again", &started.state).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("expired or was already used"), "{body}");
    // Also from the browser that started it.
    let (status, _, body) = callback(&client, app, "again", &started.state).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}

/// A state started in one browser is refused in another; a token endpoint that refuses the
/// PKCE verifier is a 502 saying so; the provider's own refusal is shown.
async fn phase_foreign_states_bad_verifiers_and_provider_refusals(
    app: &TestApp,
    provider: &StandIn,
    key: &TestKey,
) {
    // A state started in one browser is refused in another (no cookie), and stays usable by
    // its own browser only until used.
    let first = browser(app);
    let started = start(&first, app, provider, "/").await;
    provider.issue(
        "foreign",
        &started.challenge,
        key.sign(&provider.claims("ann-sub", &started.nonce)),
    );
    let other = browser(app);
    let (status, _, _) = callback(&other, app, "foreign", &started.state).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(me(&other, app).await.0, StatusCode::UNAUTHORIZED);

    // A token endpoint that refuses the PKCE verifier (the challenge was not this request's).
    let client = browser(app);
    let started = start(&client, app, provider, "/").await;
    provider.issue(
        "pkce",
        "another-challenge",
        key.sign(&provider.claims("ann-sub", &started.nonce)),
    );
    let (status, _, body) = callback(&client, app, "pkce", &started.state).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert!(body.contains("PKCE verifier does not match"), "{body}");
    assert!(
        provider
            .refusals()
            .iter()
            .all(|r| r == "PKCE verifier does not match"),
        "{:?}",
        provider.refusals()
    );

    // The provider's own refusal is shown.
    let (status, _, body) = {
        let response = client
            .get(format!("{}/auth/oidc/callback?error=access_denied&error_description=The+user+said+no&state=x", app.base))
            .send()
            .await
            .unwrap();
        (response.status(), (), response.text().await.unwrap())
    };
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(body.contains("The user said no"), "{body}");
}

on_both_engines!(a_rotated_key_is_fetched_once_on_an_unknown_key_id, |db| {
    let old = TestKey::new("old");
    let provider = StandIn::start(&[&old]).await;
    let app = app_with(db, &provider, false).await;
    let ann = app.user("ann", false).await;
    app.store
        .link_identity(ann, &provider.issuer, "ann-sub", None)
        .await
        .unwrap();
    let client = browser(&app);
    let started = start(&client, &app, &provider, "/").await;
    provider.issue(
        "c1",
        &started.challenge,
        old.sign(&provider.claims("ann-sub", &started.nonce)),
    );
    assert_eq!(
        callback(&client, &app, "c1", &started.state).await.0,
        StatusCode::SEE_OTHER
    );
    assert_eq!(provider.jwks_hits(), 1);

    // The provider rotates: a token under the new key id makes the server fetch the keys again.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let new = TestKey::new("new");
    provider.publish(&[&new]);
    let client = browser(&app);
    let started = start(&client, &app, &provider, "/").await;
    provider.issue(
        "c2",
        &started.challenge,
        new.sign(&provider.claims("ann-sub", &started.nonce)),
    );
    let (status, _, body) = callback(&client, &app, "c2", &started.state).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    assert_eq!(provider.jwks_hits(), 2);
    // A key id the provider still does not publish is refused after that one fetch.
    let client = browser(&app);
    let started = start(&client, &app, &provider, "/").await;
    provider.issue(
        "c3",
        &started.challenge,
        new.sign_as("unknown", &provider.claims("ann-sub", &started.nonce)),
    );
    let (status, _, body) = callback(&client, &app, "c3", &started.state).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("does not publish"), "{body}");
});

on_both_engines!(an_unknown_identity_is_refused_unless_sign_up_is_on, |db| {
    let key = TestKey::new("k");
    let provider = StandIn::start(&[&key]).await;
    let app = app_with(db, &provider, false).await;
    let client = browser(&app);
    let started = start(&client, &app, &provider, "/").await;
    provider.issue(
        "c",
        &started.challenge,
        key.sign(&provider.claims("newcomer", &started.nonce)),
    );
    let (status, _, body) = callback(&client, &app, "c", &started.state).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        body.contains("No account is linked to this identity"),
        "{body}"
    );
    assert!(body.contains("newcomer@example.com"), "{body}");
    assert_eq!(app.store.count_users().await.unwrap().0, 0);

    // With sign-up on, the same identity gets an account named after it; a second person
    // with the same name gets another name.
    drop(app);
    let app = app_with(db, &provider, true).await;
    app.user("newcomer", false).await;
    let client = browser(&app);
    let started = start(&client, &app, &provider, "/").await;
    provider.issue(
        "c",
        &started.challenge,
        key.sign(&provider.claims("newcomer", &started.nonce)),
    );
    let (status, location, body) = callback(&client, &app, "c", &started.state).await;
    assert_eq!(
        (status, location.as_deref()),
        (StatusCode::SEE_OTHER, Some("/")),
        "{body}"
    );
    let (status, body) = me(&client, &app).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["user"]["username"], "newcomer-2");
    let (_, _, identities) = call(&client, Method::GET, &app.url("/me/identities"), None).await;
    assert_eq!(identities["identities"][0]["subject"], "newcomer");
    assert_eq!(identities["identities"][0]["email"], "newcomer@example.com");
    assert_eq!(identities["has_password"], false);
    // Its only identity cannot be unlinked.
    let id = identities["identities"][0]["id"].as_i64().unwrap();
    let (status, _, body) = call(
        &client,
        Method::DELETE,
        &app.url(&format!("/me/identities/{id}")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_error(&body, "conflict", "validation");
});

/// What the phases of the identities test share: the app, the stand-in provider and its key,
/// and the administrator's browser.
struct Linking<'a> {
    app: &'a TestApp,
    provider: &'a StandIn,
    key: &'a TestKey,
    admin: &'a Client,
}

on_both_engines!(
    identities_link_unlink_and_passwords_can_be_turned_off,
    |db| {
        let key = TestKey::new("k");
        let provider = StandIn::start(&[&key]).await;
        let app = app_with(db, &provider, false).await;
        app.user("root", true).await;
        let admin = {
            let client = browser(&app);
            let (status, _, _) = call(
                &client,
                Method::POST,
                &app.url("/session"),
                Some(json!({"username": "root", "password": crate::support::PASSWORD})),
            )
            .await;
            assert_eq!(status, StatusCode::OK);
            client
        };
        let (status, _, methods) = call(
            &browser(&app),
            Method::GET,
            &app.url("/sign-in-methods"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            methods,
            json!({"password": true, "oidc": {"name": "Stand-in", "start_url": "/auth/oidc/start"}})
        );

        // Passwords cannot be turned off before the administrator has an identity.
        let (status, _, body) = call(
            &admin,
            Method::PUT,
            &app.url("/admin/sign-in"),
            Some(json!({"password_sign_in": false})),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");

        let t = Linking {
            app: &app,
            provider: &provider,
            key: &key,
            admin: &admin,
        };
        let id = phase_link_an_identity_and_list_it(&t).await;
        let (bob, keyed, api_key) = phase_neither_another_user_nor_an_api_key_can_link(&t).await;
        phase_passwords_off_the_identity_and_api_keys_still_work(&t, &keyed, &api_key).await;
        phase_the_last_way_in_stays_and_only_administrators_switch(&t, id, &bob).await;
        phase_passwords_back_on_the_identity_unlinks(&t, id).await;
    }
);

/// Link: the API gives the provider's URL, the callback links and returns to the account, and
/// the identity is listed. Returns its id.
async fn phase_link_an_identity_and_list_it(t: &Linking<'_>) -> i64 {
    let Linking {
        app,
        provider,
        key,
        admin,
    } = *t;
    // Link: the API gives the provider's URL, the callback links and returns to the account.
    let (status, _, body) = call(admin, Method::POST, &app.url("/me/identities"), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let started = parse_authorization(body["authorization_url"].as_str().unwrap(), app, provider);
    provider.issue(
        "link",
        &started.challenge,
        key.sign(&provider.claims("root-sub", &started.nonce)),
    );
    let (status, location, body) = callback(admin, app, "link", &started.state).await;
    assert_eq!(
        (status, location.as_deref()),
        (StatusCode::SEE_OTHER, Some("/account")),
        "{body}"
    );
    let (_, _, listed) = call(admin, Method::GET, &app.url("/me/identities"), None).await;
    assert_eq!(listed["identities"].as_array().unwrap().len(), 1);
    assert_eq!(listed["identities"][0]["subject"], "root-sub");
    assert_eq!(listed["has_password"], true);

    listed["identities"][0]["id"].as_i64().unwrap()
}

/// Another user cannot link the same identity, and an API key cannot start a link. Returns
/// bob's browser, a client for the API key and the key.
async fn phase_neither_another_user_nor_an_api_key_can_link(
    t: &Linking<'_>,
) -> (Client, Client, String) {
    let Linking {
        app,
        provider,
        key,
        admin,
    } = *t;
    // Another user cannot link the same identity.
    app.user("bob", false).await;
    let bob = browser(app);
    call(
        &bob,
        Method::POST,
        &app.url("/session"),
        Some(json!({"username": "bob", "password": crate::support::PASSWORD})),
    )
    .await;
    let (_, _, body) = call(&bob, Method::POST, &app.url("/me/identities"), None).await;
    let started = parse_authorization(body["authorization_url"].as_str().unwrap(), app, provider);
    provider.issue(
        "steal",
        &started.challenge,
        key.sign(&provider.claims("root-sub", &started.nonce)),
    );
    let (status, _, body) = callback(&bob, app, "steal", &started.state).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(body.contains("belongs to another account"), "{body}");
    // An API key cannot start a link.
    let (_, _, created) = call(
        admin,
        Method::POST,
        &app.url("/api-keys"),
        Some(json!({"name": "sync", "scope": "read_write"})),
    )
    .await;
    let api_key = created["key"].as_str().unwrap().to_string();
    let keyed = Client::new();
    let response = keyed
        .post(app.url("/me/identities"))
        .bearer_auth(&api_key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);

    (bob, keyed, api_key)
}

/// Passwords turned off: password sign-in is refused and no longer offered, API keys keep
/// working (the sync APIs too).
async fn phase_passwords_off_the_identity_and_api_keys_still_work(
    t: &Linking<'_>,
    keyed: &Client,
    api_key: &str,
) {
    let Linking { app, admin, .. } = *t;
    // Now passwords can be turned off: password sign-in is refused, the identity signs in,
    // API keys keep working (the sync APIs too).
    let (status, _, body) = call(
        admin,
        Method::PUT,
        &app.url("/admin/sign-in"),
        Some(json!({"password_sign_in": false})),
    )
    .await;
    assert_eq!(
        (status, body.clone()),
        (StatusCode::OK, json!({"password_sign_in": false}))
    );
    let (status, _, body) = call(
        &browser(app),
        Method::POST,
        &app.url("/session"),
        Some(json!({"username": "bob", "password": crate::support::PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_error(&body, "password_sign_in_disabled", "auth");
    let (_, _, methods) = call(
        &browser(app),
        Method::GET,
        &app.url("/sign-in-methods"),
        None,
    )
    .await;
    assert_eq!(methods["password"], false);
    let response = keyed
        .get(app.url("/me"))
        .bearer_auth(api_key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let response = keyed
        .post(format!("{}/accounts/ClientLogin", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("Email=root&Passwd={api_key}"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "{}",
        response.text().await.unwrap()
    );
}

/// With passwords off, the administrator's only identity is their last way in: it cannot be
/// unlinked, and it signs in; only administrators change the setting.
async fn phase_the_last_way_in_stays_and_only_administrators_switch(
    t: &Linking<'_>,
    id: i64,
    bob: &Client,
) {
    let Linking {
        app,
        provider,
        key,
        admin,
    } = *t;
    // With passwords off, the administrator's only identity is their last way in.
    let (status, _, body) = call(
        admin,
        Method::DELETE,
        &app.url(&format!("/me/identities/{id}")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let client = browser(app);
    let started = start(&client, app, provider, "/").await;
    provider.issue(
        "in",
        &started.challenge,
        key.sign(&provider.claims("root-sub", &started.nonce)),
    );
    assert_eq!(
        callback(&client, app, "in", &started.state).await.0,
        StatusCode::SEE_OTHER
    );
    assert_eq!(me(&client, app).await.1["user"]["username"], "root");
    // Only administrators change the setting.
    let (status, _, _) = call(
        bob,
        Method::PUT,
        &app.url("/admin/sign-in"),
        Some(json!({"password_sign_in": true})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

/// Passwords back on: the password counts again, so the identity may be unlinked, and then it
/// no longer signs in.
async fn phase_passwords_back_on_the_identity_unlinks(t: &Linking<'_>, id: i64) {
    let Linking {
        app,
        provider,
        key,
        admin,
    } = *t;
    // Passwords back on: the password counts again, so the identity may be unlinked.
    let (status, _, _) = call(
        admin,
        Method::PUT,
        &app.url("/admin/sign-in"),
        Some(json!({"password_sign_in": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, body) = call(
        admin,
        Method::DELETE,
        &app.url(&format!("/me/identities/{id}")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (_, _, listed) = call(admin, Method::GET, &app.url("/me/identities"), None).await;
    assert_eq!(listed["identities"], json!([]));
    // Unlinked: the identity no longer signs in.
    let client = browser(app);
    let started = start(&client, app, provider, "/").await;
    provider.issue(
        "gone",
        &started.challenge,
        key.sign(&provider.claims("root-sub", &started.nonce)),
    );
    let (status, _, body) = callback(&client, app, "gone", &started.state).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(body.contains("No account is linked"), "{body}");
}

on_both_engines!(without_a_provider_the_routes_say_so, |db| {
    let app = TestApp::start(db).await;
    let client = browser(&app);
    let response = client
        .get(format!("{}/auth/oidc/start", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("TIDINGS_OIDC_ISSUER")
    );
    let (_, _, methods) = call(&client, Method::GET, &app.url("/sign-in-methods"), None).await;
    assert_eq!(methods, json!({"password": true, "oidc": null}));
    app.user("root", true).await;
    let admin = app.signed_in("root").await;
    let (status, _, body) = call(
        &admin,
        Method::PUT,
        &app.url("/admin/sign-in"),
        Some(json!({"password_sign_in": false})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, _, body) = call(&admin, Method::POST, &app.url("/me/identities"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "oidc_not_configured", "validation");
});

on_both_engines!(an_unreachable_provider_is_a_clear_failure, |db| {
    // A port nothing listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let issuer: url::Url = format!("http://{}", listener.local_addr().unwrap())
        .parse()
        .unwrap();
    drop(listener);
    let app = TestApp::start_with(db, true, move |config| {
        config.oidc = Some(OidcConfig::new(issuer, CLIENT_ID));
    })
    .await;
    let response = browser(&app)
        .get(format!("{}/auth/oidc/start", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    let body = response.text().await.unwrap();
    assert!(
        body.contains("could not be used") && body.contains(".well-known/openid-configuration"),
        "{body}"
    );
});

/// Signs `subject` in through the provider in a new browser (signing up when sign-up is on).
async fn through_provider(
    app: &TestApp,
    provider: &StandIn,
    key: &TestKey,
    subject: &str,
) -> Client {
    let client = browser(app);
    let started = start(&client, app, provider, "/").await;
    let code = format!("code-{subject}-{}", started.nonce);
    provider.issue(
        &code,
        &started.challenge,
        key.sign(&provider.claims(subject, &started.nonce)),
    );
    let (status, _, body) = callback(&client, app, &code, &started.state).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    client
}

on_both_engines!(
    an_account_made_by_single_sign_on_sets_a_password_and_deletes_itself_from_a_fresh_sign_in,
    |db| {
        let key = TestKey::new("k");
        let provider = StandIn::start(&[&key]).await;
        let app = app_with(db, &provider, true).await;
        const PASSWORD: &str = "a sturdy passphrase for later";

        // A signed-up account has no password, and says so.
        let reader = through_provider(&app, &provider, &key, "reader").await;
        let (status, me_body) = me(&reader, &app).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(me_body["user"]["has_password"], false, "{me_body}");
        let reader_id = me_body["user"]["id"].as_i64().unwrap();

        // Fresh from the provider, it sets a password without a current one...
        let (status, _, body) = call(
            &reader,
            Method::PUT,
            &app.url("/me/password"),
            Some(json!({"new_password": PASSWORD, "keep_api_keys": true})),
        )
        .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
        let (_, me_body) = me(&reader, &app).await;
        assert_eq!(me_body["user"]["has_password"], true);
        // ...which then signs in, and is asked for from now on.
        let (status, _, body) = call(
            &app.browser(),
            Method::POST,
            &app.url("/session"),
            Some(json!({"username": "reader", "password": PASSWORD})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (status, _, body) = call(
            &reader,
            Method::PUT,
            &app.url("/me/password"),
            Some(json!({"new_password": "another sturdy passphrase"})),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("current_password")
        );
        let (status, _, body) = call(
            &reader,
            Method::DELETE,
            &app.url("/me"),
            Some(json!({"confirm_username": "reader"})),
        )
        .await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "a password account types its password: {body}"
        );
        let (status, _, _) = call(
            &reader,
            Method::DELETE,
            &app.url("/me"),
            Some(json!({"password": "not the passphrase at all"})),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(app.store.user(reader_id).await.is_ok(), "still there");

        // A sign-in older than 10 minutes cannot do either: it signs in again first.
        let leaver = through_provider(&app, &provider, &key, "leaver").await;
        let (_, me_body) = me(&leaver, &app).await;
        let leaver_id = me_body["user"]["id"].as_i64().unwrap();
        app.store
            .execute_raw(&format!(
                "UPDATE sessions SET created_at = created_at - 660 WHERE user_id = {leaver_id}"
            ))
            .await
            .unwrap();
        let (status, _, body) = call(
            &leaver,
            Method::PUT,
            &app.url("/me/password"),
            Some(json!({"new_password": PASSWORD})),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_error(&body, "sign_in_again", "auth");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("11 minutes old"),
            "{body}"
        );
        let (status, _, body) = call(
            &leaver,
            Method::DELETE,
            &app.url("/me"),
            Some(json!({"confirm_username": "LEAVER"})),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_error(&body, "sign_in_again", "auth");
        let (_, me_body) = me(&leaver, &app).await;
        assert_eq!(me_body["user"]["has_password"], false, "nothing was set");

        // Signed in again: deletion needs the user name typed, then happens.
        let again = through_provider(&app, &provider, &key, "leaver").await;
        for wrong in [json!({}), json!({"confirm_username": "reader"})] {
            let (status, _, body) =
                call(&again, Method::DELETE, &app.url("/me"), Some(wrong)).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
            assert!(
                body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("leaver"),
                "{body}"
            );
        }
        let (status, _, body) = call(
            &again,
            Method::DELETE,
            &app.url("/me"),
            Some(json!({"confirm_username": " Leaver "})),
        )
        .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
        assert!(app.store.user(leaver_id).await.is_err(), "deleted");
        assert!(app.store.user(reader_id).await.is_ok());
    }
);
