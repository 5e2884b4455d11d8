//! User names over HTTP, on both engines (issue 11): one account whatever the case, width or
//! composition a name is typed in (sign-in, the Miniflux and Fever APIs), names that mix
//! scripts refused with a 400 naming the field, and the name shown as it was typed.

use tidings_testkit::on_both_engines;

use crate::support::{PASSWORD, TestApp, assert_error, call};
use crate::sync_clients::api_key;
use reqwest::{Client, Method, StatusCode};
use serde_json::json;
use tidings_server::sync::fever::key_digest;

/// "José" with the precomposed é (U+00E9), as the account is made.
const JOSE: &str = "Jos\u{e9}";

/// The same name as apps and people may send it.
const SPELLINGS: [&str; 5] = [
    "Jos\u{e9}",
    "jose\u{301}",                    // decomposed: e + combining acute accent
    "\u{ff4a}\u{ff4f}\u{ff53}\u{e9}", // full-width ｊｏｓ + é
    "JOS\u{c9}",                      // upper case
    "JOSE\u{301}",                    // upper case, decomposed
];

/// An administrator's request to create the user `name`: its status and body.
async fn create_user(app: &TestApp, admin: &Client, name: &str) -> (StatusCode, serde_json::Value) {
    let (status, _, body) = call(
        admin,
        Method::POST,
        &app.url("/users"),
        Some(json!({"username": name, "password": PASSWORD})),
    )
    .await;
    (status, body)
}

on_both_engines!(every_spelling_of_a_name_signs_in_to_one_account, |db| {
    // Each sign-in comes "through a proxy" from an address of its own, so that the limit of 5
    // sign-ins a minute per address does not end the test (the per-account limit still counts
    // every spelling against the one account).
    let app = TestApp::start_with(db, true, |config| {
        config.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
    })
    .await;
    app.user("root", true).await;
    let root = app.signed_in("root").await;
    let (status, body) = create_user(&app, &root, JOSE).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["user"]["username"], JOSE, "shown as typed");
    let jose = body["user"]["id"].as_i64().unwrap();

    for (n, typed) in SPELLINGS.into_iter().enumerate() {
        let browser = app.browser();
        let response = browser
            .post(app.url("/session"))
            .header("x-forwarded-for", format!("192.0.2.{}", n + 1))
            .json(&json!({"username": typed, "password": PASSWORD}))
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(status, StatusCode::OK, "{typed:?}: {body}");
        let (_, _, me) = call(&browser, Method::GET, &app.url("/me"), None).await;
        assert_eq!(me["user"]["id"], jose, "{typed:?}");
        assert_eq!(me["user"]["username"], JOSE);
        // No second account under another spelling.
        let (status, body) = create_user(&app, &root, typed).await;
        assert_eq!(status, StatusCode::CONFLICT, "{typed:?}: {body}");
    }

    // The sync APIs find the account under every spelling too.
    let browser = app.signed_in(JOSE).await;
    let key = api_key(&app, &browser, "read").await;
    for typed in SPELLINGS {
        let response = Client::new()
            .get(format!("{}/v1/me", app.base))
            .basic_auth(typed, Some(&key))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "Miniflux {typed:?}");
    }
    // Fever clients send md5(name:key) of the name typed: as stored, or in its folded form.
    for typed in [JOSE, "jos\u{e9}"] {
        let answer: serde_json::Value = Client::new()
            .post(format!("{}/fever/?api", app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("api_key={}", key_digest(typed, &key)))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(answer["auth"], 1, "Fever {typed:?}: {answer}");
    }
});

on_both_engines!(names_mixing_scripts_are_refused_with_a_400, |db| {
    let app = TestApp::start(db).await;
    app.user("root", true).await;
    let root = app.signed_in("root").await;
    // "pаypal" with a Cyrillic а (U+0430), and a Latin o among Greek letters.
    for name in ["p\u{430}ypal", "\u{3b1}\u{3bb}o\u{3c6}\u{3b1}"] {
        let (status, body) = create_user(&app, &root, name).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name:?}: {body}");
        assert_error(&body, "invalid_username", "validation");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("username") && message.contains("mixes scripts"),
            "{message}"
        );
        assert!(
            body["error"]["action"]
                .as_str()
                .unwrap()
                .contains("one script"),
            "{body}"
        );
    }
    // Wholly Cyrillic, wholly Japanese, and Latin with digits and punctuation are fine.
    for name in [
        "\u{438}\u{432}\u{430}\u{43d}",
        "\u{3084}\u{307e}\u{3060}\u{592a}\u{90ce}",
        "j.doe-99_x",
    ] {
        let (status, body) = create_user(&app, &root, name).await;
        assert_eq!(status, StatusCode::CREATED, "{name:?}: {body}");
    }
});

on_both_engines!(the_first_administrator_name_follows_the_same_rules, |db| {
    let app = TestApp::start(db).await;
    let token = tidings_server::setup::issue_setup_token(&app.store)
        .await
        .unwrap()
        .expect("a setup token while no user exists");
    let (status, _, body) = call(
        &app.browser(),
        Method::POST,
        &app.url("/setup"),
        Some(json!({"token": token, "username": "p\u{430}ypal", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "invalid_username", "validation");
});
