//! OpenID Connect in real headless Chromium against a real OpenID provider: the npm package
//! `oidc-provider` (a certified implementation), started by the test from
//! `tests/oidc_provider/provider.mjs` on 127.0.0.1. A person signs in with a password, links
//! an identity from the account page, signs out, signs in with "Sign in with …", unlinks the
//! identity, and is then refused by the provider's sign-in. Then the refusals: the provider's
//! test-only switch spoils the ID token its token endpoint answers (meant for another client,
//! expired, or a signature that does not verify), and each sign-in ends on tidings' 403 page
//! saying why, with no session; with the switch off the same sign-in works, and the callback
//! it came back with, replayed after signing out (also with its state cookie put back), ends
//! on the 400 page of a used sign-in. The provider signs ID tokens with RS256 on SQLite and
//! ES256 on PostgreSQL, so both verify against a real JWKS.
//!
//! Needs `node` and the provider's packages: `.ci/run` installs them with `npm ci` into a cache
//! folder named by `TIDINGS_TEST_OIDC_PROVIDER` (or run `npm ci` in tests/oidc_provider/).
//! Without them the tests print `SKIPPED …` (and fail under `CI=true`).

use tidings_testkit::on_both_engines;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::browser::{Browser, skip_without_browser};
use crate::support::PASSWORD;
use serde_json::Value;
use tidings_server::oidc::OidcConfig;
use tidings_server::{AppState, ServerConfig};

/// The provider's script, copied next to its installed packages for each run.
const PROVIDER_SCRIPT: &str = include_str!("oidc_provider/provider.mjs");
/// The client secret both of the provider's clients have.
const CLIENT_SECRET: &str = "browser test secret";

/// The folder holding the provider's `node_modules`: `TIDINGS_TEST_OIDC_PROVIDER`, or
/// `tests/oidc_provider/` after a local `npm ci` there.
fn provider_packages() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("TIDINGS_TEST_OIDC_PROVIDER").map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/oidc_provider")),
    ];
    candidates.into_iter().flatten().find(|dir| {
        dir.join("node_modules/oidc-provider/package.json")
            .is_file()
    })
}

/// Answers true (after reporting the skip) when the provider cannot run here.
fn skip_without_provider(test: &str) -> bool {
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !node {
        tidings_testkit::skip::skip(test, "node is not installed (apt-get install nodejs)");
        return true;
    }
    if provider_packages().is_none() {
        tidings_testkit::skip::skip(
            test,
            "the oidc-provider package is not installed: set TIDINGS_TEST_OIDC_PROVIDER to a \
             folder where `npm ci` ran on tests/oidc_provider/package.json (.ci/run does)",
        );
        return true;
    }
    skip_without_browser(test)
}

/// A folder for the provider's script whose `node_modules` is the installed one, so that the
/// committed script is the one that runs.
fn provider_folder() -> tempfile::TempDir {
    let packages = provider_packages().expect("provider packages");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("provider.mjs"), PROVIDER_SCRIPT).unwrap();
    std::os::unix::fs::symlink(
        packages.join("node_modules"),
        dir.path().join("node_modules"),
    )
    .unwrap();
    std::fs::write(dir.path().join("package.json"), "{\"type\": \"module\"}").unwrap();
    dir
}

/// What a running process is doing, from `/proc`: its state and the kernel function it waits
/// in, for the message of a provider that stays silent.
fn process_state(pid: u32) -> String {
    let read =
        |name: &str| std::fs::read_to_string(format!("/proc/{pid}/{name}")).unwrap_or_default();
    let state = read("status")
        .lines()
        .find(|line| line.starts_with("State:"))
        .map(|line| line.trim_start_matches("State:").trim().to_string())
        .unwrap_or_else(|| "state unknown".into());
    format!("running ({state}, waiting in {:?})", read("wchan"))
}

/// A running `oidc-provider`; stopped (its standard input closed, then killed) on drop.
struct NodeProvider {
    child: Child,
    issuer: String,
    _dir: tempfile::TempDir,
}

impl NodeProvider {
    /// Starts the provider and waits for its issuer line. A start that stays silent is tried
    /// again: twice in loaded CI runs one of two providers started together had printed
    /// nothing after 30 s and 120 s while its twin was up in a second, so one silent process is
    /// replaced rather than waited for, and what it was doing is kept for the message.
    fn start(redirect_uri: &str) -> NodeProvider {
        let dir = provider_folder();
        let mut silent = Vec::new();
        for attempt in 1..=3 {
            match Self::try_start(&dir, redirect_uri, attempt) {
                Ok((child, issuer)) => {
                    if !silent.is_empty() {
                        eprintln!(
                            "oidc provider up on attempt {attempt}: {}",
                            silent.join("; ")
                        );
                    }
                    return NodeProvider {
                        child,
                        issuer,
                        _dir: dir,
                    };
                }
                Err(report) => silent.push(report),
            }
        }
        panic!(
            "the provider did not announce its issuer: {}",
            silent.join("; ")
        );
    }

    /// One start: the child and its issuer, or what was seen of a start that failed (its exit
    /// status or state, and its standard error).
    fn try_start(
        dir: &tempfile::TempDir,
        redirect_uri: &str,
        attempt: u32,
    ) -> Result<(Child, String), String> {
        let log_path = dir.path().join(format!("provider-{attempt}.log"));
        let log = std::fs::File::create(&log_path).expect("the provider's log file");
        let mut child = Command::new("node")
            .arg("provider.mjs")
            .current_dir(dir.path())
            .env("REDIRECT_URI", redirect_uri)
            .env("CLIENT_SECRET", CLIENT_SECRET)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("start node");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(value) = serde_json::from_str::<Value>(&line)
                    && let Some(issuer) = value["issuer"].as_str()
                {
                    let _ = tx.send(issuer.to_string());
                }
            }
        });
        // Half a second on a quiet machine.
        match rx.recv_timeout(Duration::from_secs(40)) {
            Ok(issuer) => Ok((child, issuer)),
            Err(error) => {
                let state = match child.try_wait() {
                    Ok(Some(status)) => format!("exited {status}"),
                    _ => process_state(child.id()),
                };
                let _ = child.kill();
                let _ = child.wait();
                let stderr = std::fs::read_to_string(&log_path).unwrap_or_default();
                let tail: String = stderr.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
                Err(format!(
                    "attempt {attempt}: {error}, {state}, stderr: {tail:?}"
                ))
            }
        }
    }

    /// Sets the provider's tampering switch (`none`, `audience`, `expired` or `signature`):
    /// the ID tokens its token endpoint answers from now on.
    async fn tamper(&self, mode: &str) {
        let response = reqwest::Client::new()
            .post(format!("{}/__test/tamper", self.issuer))
            .json(&serde_json::json!({ "mode": mode }))
            .send()
            .await
            .expect("the provider's tampering switch");
        assert!(
            response.status().is_success(),
            "tamper {mode}: {response:?}"
        );
    }

    /// The last redirect to tidings' callback the provider sent a browser, code and state
    /// included.
    async fn last_callback(&self) -> Option<String> {
        let answer: Value = reqwest::get(format!("{}/__test/last-callback", self.issuer))
            .await
            .expect("the provider's last callback")
            .json()
            .await
            .expect("a JSON answer");
        answer["url"].as_str().map(str::to_string)
    }
}

impl Drop for NodeProvider {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.child.stdin.take() {
            let _ = stdin.flush();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Clicks `selector`, which leaves for the provider, and signs in there as `login` if it asks
/// (it remembers its session, and then sends the browser straight back) and consents, until
/// the browser is back on a page of `base`.
async fn through_the_provider(
    b: &Browser,
    provider: &NodeProvider,
    base: &str,
    selector: &str,
    login: &str,
) {
    // A mark on the current page: gone once the browser has navigated away.
    let left = "window.__stay === undefined && document.readyState === 'complete'";
    b.eval("(window.__stay = true)").await;
    b.click(selector).await;
    for _ in 0..5 {
        b.wait_for("the next page", left).await;
        let here = b.eval("location.href").await;
        let here = here.as_str().unwrap_or_default();
        if here.starts_with(base) {
            return;
        }
        assert!(here.starts_with(&provider.issuer), "left for {here}");
        if b.eval("document.querySelector('input[name=login]') !== null")
            .await
            == Value::Bool(true)
        {
            b.type_into("input[name=login]", login).await;
            b.type_into("input[name=password]", "any password").await;
        }
        b.eval("(window.__stay = true)").await;
        b.click("button[type=submit]").await;
    }
    panic!("the provider did not send the browser back");
}

/// Signs in from the sign-in page with "Sign in with Test provider", as ann-at-idp there,
/// asking to go on to `next`; answers once the browser is back at tidings.
async fn sign_in_with_provider(b: &Browser, provider: &NodeProvider, base: &str, next: &str) {
    let next: String = url::form_urlencoded::byte_serialize(next.as_bytes()).collect();
    b.goto(&format!("{base}/login?next={next}")).await;
    through_the_provider(b, provider, base, "#oidc-sign-in", "ann-at-idp").await;
}

/// Signs out with the account page's button, brought out from under the sticky header, and
/// waits for the sign-in page.
async fn sign_out(b: &Browser) {
    b.wait_for(
        "the sign-out button",
        "document.querySelector('#sign-out') !== null",
    )
    .await;
    b.eval("document.querySelector('#sign-out').scrollIntoView({block: 'center'})")
        .await;
    b.click("#sign-out").await;
    b.wait_for("the sign-in page", "location.pathname === '/login'")
        .await;
}

/// The HTTP status of the page the browser shows (the last answer of its navigation).
async fn page_status(b: &Browser) -> Value {
    b.eval("performance.getEntriesByType('navigation')[0].responseStatus")
        .await
}

/// Waits for tidings' sign-in failure page titled `title`, and answers its explanation.
async fn failure_page(b: &Browser, title: &str) -> String {
    let expected = serde_json::to_string(title).unwrap();
    b.wait_for(
        title,
        &format!("document.querySelector('#oidc-failure h1')?.textContent === {expected}"),
    )
    .await;
    let text = b
        .eval("document.querySelector('#oidc-failure p').textContent")
        .await;
    text.as_str().unwrap_or_default().to_string()
}

async fn signed_in_as(b: &Browser) -> Value {
    b.js_async(
        "const done = arguments[arguments.length - 1];
         fetch('/api/v1/me').then(r => r.ok ? r.json() : {}).then(j => done(j.user ? j.user.username : null));",
    )
    .await
    .unwrap()
}

/// tidings on a free port with the provider as its single sign-on ("Sign in with Test
/// provider"), and ann, who has a password.
struct Tidings {
    store: tidings_store::Store,
    base: String,
    provider: NodeProvider,
    /// The provider's client tidings is: `tidings-rs` (RS256) on SQLite, `tidings-es`
    /// (ES256) on PostgreSQL, so both algorithms verify against a real JWKS.
    client_id: &'static str,
    algorithm: &'static str,
    /// ann's user id.
    ann: i64,
}

impl Tidings {
    /// Starts it all for `test`; `None` (after reporting the skip) when the provider or the
    /// browser cannot run here.
    async fn start(db: &tidings_testkit::TestDb, test: &str) -> Option<Tidings> {
        if skip_without_provider(test) {
            return None;
        }
        let (client_id, algorithm) = match db {
            tidings_testkit::TestDb::Sqlite(_) => ("tidings-rs", "RS256"),
            tidings_testkit::TestDb::Postgres { .. } => ("tidings-es", "ES256"),
        };
        let store = db.migrated().await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let provider = NodeProvider::start(&format!("{base}/auth/oidc/callback"));
        let mut config = ServerConfig::new(base.parse().unwrap());
        let mut oidc = OidcConfig::new(provider.issuer.parse().unwrap(), client_id);
        oidc.client_secret = Some(CLIENT_SECRET.into());
        oidc.display_name = "Test provider".into();
        config.oidc = Some(oidc);
        let state = AppState::new(
            store.clone(),
            config,
            crate::support::test_fetcher(store.clone(), true),
        );
        tokio::spawn(tidings_server::serve(
            listener,
            state,
            std::future::pending(),
        ));
        let hash = tidings_server::password::hash_password(PASSWORD).unwrap();
        let ann = store
            .create_user(&tidings_store::NewUser {
                username: "ann".into(),
                password_hash: Some(hash),
                is_admin: false,
            })
            .await
            .unwrap()
            .id;
        Some(Tidings {
            store,
            base,
            provider,
            client_id,
            algorithm,
            ann,
        })
    }
}

on_both_engines!(sign_in_link_and_unlink_in_chromium, |db| {
    let test = "oidc_browser::sign_in_link_and_unlink_in_chromium";
    let Some(Tidings {
        store,
        base,
        provider,
        algorithm,
        ..
    }) = Tidings::start(db, test).await
    else {
        return;
    };

    let b = Browser::start(1200, 900).await;
    // The sign-in page offers the provider beside the password.
    b.goto(&format!("{base}/login")).await;
    b.wait_for(
        "the single sign-on button",
        "document.querySelector('#oidc-sign-in')?.textContent === 'Sign in with Test provider'",
    )
    .await;
    b.type_into("#username", "ann").await;
    b.type_into("#password", PASSWORD).await;
    b.click("#sign-in-form button[type=submit]").await;
    b.wait_for("the reader", "document.querySelector('nav#feeds') !== null")
        .await;

    // Link an identity from the account page.
    b.goto(&format!("{base}/account")).await;
    through_the_provider(&b, &provider, &base, "#link-identity", "ann-at-idp").await;
    b.wait_for(
        "the linked identity",
        "document.querySelector('#identities')?.textContent.includes('ann-at-idp@example.com')",
    )
    .await;
    assert_eq!(b.eval("location.pathname").await, "/account");
    let linked = store
        .list_identities(store.user_credentials("ann").await.unwrap().unwrap().0.id)
        .await
        .unwrap();
    assert_eq!(linked.len(), 1, "{algorithm}");
    assert_eq!(linked[0].subject, "ann-at-idp");
    assert_eq!(linked[0].issuer, provider.issuer);

    // Sign out, then sign in with the provider: back to the page asked for.
    sign_out(&b).await;
    sign_in_with_provider(&b, &provider, &base, "/settings").await;
    b.wait_for("the settings page", "location.pathname === '/settings'")
        .await;
    assert_eq!(
        signed_in_as(&b).await,
        "ann",
        "signed in through {algorithm}"
    );

    // Unlink it (ann has a password, so it is not her last way in).
    b.goto(&format!("{base}/account")).await;
    b.click("#identities button").await;
    b.click("dialog[open] .button.danger").await;
    b.wait_for(
        "no identity left",
        "document.querySelector('#identities')?.textContent.includes('No linked identities')",
    )
    .await;

    // The provider's sign-in no longer reaches the account.
    sign_out(&b).await;
    sign_in_with_provider(&b, &provider, &base, "/").await;
    failure_page(&b, "No account is linked to this identity").await;
    assert_eq!(signed_in_as(&b).await, Value::Null);
    b.quit().await;
});

on_both_engines!(refused_tokens_and_a_replayed_state_in_chromium, |db| {
    let test = "oidc_browser::refused_tokens_and_a_replayed_state_in_chromium";
    let Some(Tidings {
        store,
        base,
        provider,
        client_id,
        algorithm,
        ann,
    }) = Tidings::start(db, test).await
    else {
        return;
    };
    // ann's identity is linked, so a tampered token that got through would sign her in.
    store
        .link_identity(
            ann,
            &provider.issuer,
            "ann-at-idp",
            Some("ann-at-idp@example.com"),
        )
        .await
        .unwrap();
    let other_client = if client_id == "tidings-rs" {
        "tidings-es"
    } else {
        "tidings-rs"
    };

    let b = Browser::start(1200, 900).await;
    // Each spoilt token: the real provider answers it from its token endpoint, tidings
    // refuses it with 403 and says why, and nobody is signed in.
    let refusals = [
        (
            "audience",
            format!("The ID token is meant for another client (audience \"{other_client}\")"),
        ),
        ("expired", "The ID token has expired".to_string()),
        (
            "signature",
            "The ID token's signature does not verify".to_string(),
        ),
    ];
    for (mode, reason) in &refusals {
        provider.tamper(mode).await;
        sign_in_with_provider(&b, &provider, &base, "/").await;
        let text = failure_page(&b, "Sign-in failed").await;
        assert!(
            text.starts_with(&format!("{reason}. Nothing was changed")),
            "{mode} ({algorithm}): {text}"
        );
        assert_eq!(page_status(&b).await, 403, "{mode} ({algorithm})");
        assert_eq!(signed_in_as(&b).await, Value::Null, "{mode} ({algorithm})");
    }

    // With the switch off, the same sign-in works: the refusals were the tokens'.
    provider.tamper("none").await;
    let refused_callback = provider.last_callback().await;
    sign_in_with_provider(&b, &provider, &base, "/").await;
    b.wait_for("the reader", "document.querySelector('nav#feeds') !== null")
        .await;
    assert_eq!(
        signed_in_as(&b).await,
        "ann",
        "signed in through {algorithm}"
    );

    // The answer the browser brought back from that sign-in, replayed after signing out.
    let callback = provider.last_callback().await.expect("a callback was sent");
    assert_ne!(Some(&callback), refused_callback.as_ref(), "a new callback");
    assert!(
        callback.starts_with(&format!("{base}/auth/oidc/callback?")),
        "{callback}"
    );
    let request_state = url::Url::parse(&callback)
        .unwrap()
        .query_pairs()
        .find(|(name, _)| name == "state")
        .map(|(_, value)| value.into_owned())
        .expect("the callback has a state");
    b.goto(&format!("{base}/account")).await;
    sign_out(&b).await;
    // First as it was; then whole, with the state cookie it came with put back (as someone
    // who copied both would): the stored request was used up by the first answer.
    for with_cookie in [false, true] {
        if with_cookie {
            b.add_cookie(serde_json::json!({
                "name": "tidings_oidc",
                "value": request_state,
                "path": "/auth/oidc/",
                "httpOnly": true,
                "sameSite": "Lax",
            }))
            .await
            .expect("put the state cookie back");
            assert!(
                b.cookie("tidings_oidc").await.is_some(),
                "the callback page is sent the state cookie"
            );
        }
        b.goto(&callback).await;
        failure_page(&b, "This sign-in has expired or was already used").await;
        assert_eq!(page_status(&b).await, 400, "with the cookie: {with_cookie}");
        assert_eq!(signed_in_as(&b).await, Value::Null);
    }
    b.quit().await;
});
