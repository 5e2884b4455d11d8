//! The logs of `tidings serve` (F62), read from the real binary's standard error: with
//! `TIDINGS_LOG_FORMAT=json` every line is a JSON object; every request has a line with its
//! id, user, method, route template, status and duration; every fetch a line with the feed,
//! its URL, status, duration and error kind; and no password, session cookie, API key or
//! ClientLogin `Passwd` sent in requests ever appears, even at the debug level.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_tidings");
const PASSWORD: &str = "logged nowhere horse battery";
/// A private feed's token, in its URL's query.
const FEED_TOKEN: &str = "feed-token-never-logged-77";
/// A webhook's token, in its URL's path.
const HOOK_TOKEN: &str = "hook-token-never-logged-88";

/// `tidings serve` with JSON logs at the debug level, its standard error collected.
struct LoggedServer {
    child: Child,
    address: SocketAddr,
    lines: Arc<Mutex<Vec<String>>>,
}

impl LoggedServer {
    fn start(dir: &Path) -> LoggedServer {
        let mut command = Command::new(BIN);
        for (key, _) in std::env::vars() {
            if key.starts_with("TIDINGS_") {
                command.env_remove(key);
            }
        }
        let mut child = command
            .current_dir(dir)
            .arg("serve")
            .env("TIDINGS_LISTEN", "127.0.0.1:0")
            .env("TIDINGS_LOG_FORMAT", "json")
            .env("TIDINGS_LOG_LEVEL", "debug")
            .env("TIDINGS_WORKER", "false")
            .env("TIDINGS_ALLOW_PRIVATE_NETWORKS", "true")
            .env("TIDINGS_ADMIN_USERNAME", "olga")
            .env("TIDINGS_ADMIN_PASSWORD", PASSWORD)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tidings serve");
        let stderr = child.stderr.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (found, address) = std::sync::mpsc::channel();
        let collected = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("listening on ").nth(1) {
                    let _ = found.send(rest.split(';').next().unwrap_or("").to_owned());
                }
                collected.lock().unwrap().push(line);
            }
        });
        let address = address
            .recv_timeout(Duration::from_secs(30))
            .expect("a 'listening on' line")
            .parse()
            .expect("an address");
        LoggedServer {
            child,
            address,
            lines,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// Stops the server (SIGTERM) and returns every line it logged.
    fn stop(mut self) -> Vec<String> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        // The reader thread ends with the pipe; give it a moment to push the last lines.
        std::thread::sleep(Duration::from_millis(200));
        self.lines.lock().unwrap().clone()
    }
}

impl Drop for LoggedServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A feed server on 127.0.0.1 whose one feed answers with `status`.
async fn feed_server(status: Arc<AtomicU16>) -> String {
    let app = axum::Router::new().route(
        "/feed.xml",
        axum::routing::get(move || {
            let status = status.load(Ordering::SeqCst);
            async move {
                let body = "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Logged</title>\
                    <link>http://127.0.0.1/</link><item><title>One</title><guid>one</guid></item>\
                    </channel></rss>";
                (
                    axum::http::StatusCode::from_u16(status).unwrap(),
                    [("content-type", "application/rss+xml")],
                    body,
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_name_requests_and_fetches_and_never_secrets() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let server = LoggedServer::start(dir.path());
    let client = reqwest::Client::new();
    let origin = server.url("");

    // Sign in with the password: the answer sets the session cookie.
    let response = client
        .post(server.url("/api/v1/session"))
        .header("origin", &origin)
        .header("content-type", "application/json")
        .body(json!({"username": "olga", "password": PASSWORD}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let cookie = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let session_secret = cookie.split_once('=').unwrap().1.to_owned();
    assert!(session_secret.len() >= 32, "{cookie}");

    // An API key, then calls with it, through the REST API and the sync APIs.
    let response = client
        .post(server.url("/api/v1/api-keys"))
        .header("origin", &origin)
        .header("cookie", &cookie)
        .header("content-type", "application/json")
        .body(json!({"name": "logs", "scope": "read_write"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let created: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    let api_key = created["key"].as_str().unwrap().to_owned();

    let feed_status = Arc::new(AtomicU16::new(200));
    let feeds = feed_server(Arc::clone(&feed_status)).await;
    // A private feed's token in its query, which the logs must not carry (issue 31).
    let feed_url = format!("{feeds}/feed.xml?token={FEED_TOKEN}");
    let response = client
        .post(server.url("/api/v1/subscriptions"))
        .bearer_auth(&api_key)
        .header("content-type", "application/json")
        .body(json!({"url": feed_url}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let subscribed: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    let subscription = subscribed["subscription"]["id"].as_i64().unwrap();
    feed_status.store(404, Ordering::SeqCst);
    let response = client
        .post(server.url(&format!("/api/v1/subscriptions/{subscription}/refresh")))
        .bearer_auth(&api_key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // ClientLogin with the key as Passwd, in the query string and in a form.
    let login = format!("/accounts/ClientLogin?Email=olga&Passwd={api_key}");
    let response = client.get(server.url(&login)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let response = client
        .post(server.url("/accounts/ClientLogin"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("Email=olga&Passwd={api_key}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // The sync APIs name their user too: Google Reader with the key as its token, Miniflux
    // with the key in X-Auth-Token.
    let response = client
        .get(server.url("/reader/api/0/user-info"))
        .header("authorization", format!("GoogleLogin auth={api_key}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let response = client
        .get(server.url("/v1/me"))
        .header("x-auth-token", &api_key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // A wrong password is logged as a refusal, not with the password.
    let response = client
        .post(server.url("/api/v1/session"))
        .header("origin", &origin)
        .header("content-type", "application/json")
        .body(json!({"username": "olga", "password": "wrong-but-secret-guess-42"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);

    // A generic webhook whose path carries its token, and its "send test" (logged at debug).
    let response = client
        .post(server.url("/api/v1/webhooks"))
        .bearer_auth(&api_key)
        .header("content-type", "application/json")
        .body(json!({"kind": "generic", "url": format!("{feeds}/hooks/{HOOK_TOKEN}")}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let hook: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    let hook_id = hook["webhook"]["id"].as_i64().unwrap();
    let response = client
        .post(server.url(&format!("/api/v1/webhooks/{hook_id}/test")))
        .bearer_auth(&api_key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    let lines = server.stop();
    phase_check_the_lines(&lines, &session_secret, &api_key, &feed_url);
}

/// The log lines: JSON each, no secret in any, requests named with their route, user and id,
/// and fetches with their feed, status and error.
fn phase_check_the_lines(lines: &[String], session_secret: &str, api_key: &str, feed_url: &str) {
    let events: Vec<Value> = lines
        .iter()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|_| panic!("not a JSON line: {line}"))
        })
        .collect();
    let all = lines.join("\n");
    for secret in [
        PASSWORD,
        "wrong-but-secret-guess-42",
        session_secret,
        api_key,
        // Past the key's public prefix, which the API shows and may log.
        &api_key[12..],
        FEED_TOKEN,
        HOOK_TOKEN,
    ] {
        assert!(!all.contains(secret), "a secret was logged:\n{all}");
    }

    let requests: Vec<&Value> = events
        .iter()
        .filter(|event| event["target"] == "tidings::request")
        .collect();
    let refresh = requests
        .iter()
        .find(|event| event["route"] == "/api/v1/subscriptions/{id}/refresh")
        .unwrap_or_else(|| panic!("no refresh request line in\n{all}"));
    assert_eq!(refresh["method"], "POST");
    assert_eq!(refresh["status"], 200);
    assert!(refresh["user_id"].as_i64().is_some(), "{refresh}");
    assert!(refresh["duration_ms"].as_f64().is_some(), "{refresh}");
    assert_eq!(
        refresh["request_id"].as_str().unwrap().len(),
        16,
        "{refresh}"
    );
    for sync_route in ["/reader/api/0/{*endpoint}", "/v1/me"] {
        let line = requests
            .iter()
            .find(|event| event["route"] == sync_route)
            .unwrap_or_else(|| panic!("no {sync_route} line in\n{all}"));
        assert_eq!(line["user_id"], refresh["user_id"], "{line}");
    }
    let sign_in = requests
        .iter()
        .find(|event| event["route"] == "/api/v1/session" && event["status"] == 401)
        .unwrap_or_else(|| panic!("no refused sign-in line in\n{all}"));
    assert!(sign_in["user_id"].is_null(), "{sign_in}");
    assert!(
        requests
            .iter()
            .all(|event| event["request_id"].is_string() && event["route"].is_string()),
        "{all}"
    );

    let fetches: Vec<&Value> = events
        .iter()
        .filter(|event| event["target"] == "tidings::fetch")
        .collect();
    let failed = fetches
        .iter()
        .find(|event| event["http_status"] == 404)
        .unwrap_or_else(|| panic!("no fetch line for the 404 in\n{all}"));
    assert_eq!(
        failed["url"],
        feed_url.replace(FEED_TOKEN, "***"),
        "the URL, its token hidden"
    );
    assert_eq!(failed["error_kind"], "http_status");
    assert!(failed["feed_id"].as_i64().is_some(), "{failed}");
    assert!(failed["duration_ms"].as_u64().is_some(), "{failed}");
    assert!(
        fetches.iter().any(|event| event["http_status"] == 200),
        "no fetch line for the 200 in\n{all}"
    );
}
