//! A small WebDriver client for the UI tests: starts `chromedriver` on a free loopback port,
//! opens headless Chromium with a fresh profile, and speaks the W3C WebDriver protocol over
//! the HTTP client the tests already use (reqwest), so no WebDriver crate is needed.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The key WebDriver uses for element references.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The Chromium flags of every session: headless, and nothing that reaches the network on
/// its own (background updates, sync, QUIC probes).
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--force-color-profile=srgb",
    "--lang=en-US",
    // Every name but the loopback fails to resolve: a page that tries to load something from
    // the internet (a video thumbnail, an embed) cannot reach it from a test. `localhost`
    // too is the loopback: passkeys need a domain for their RP ID, and an IP address is none.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
];

fn find_binary(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in names {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

/// Chromium and chromedriver, when both are installed.
pub fn browser_binaries() -> Option<(PathBuf, PathBuf)> {
    let chromium = find_binary(&["chromium", "chromium-browser", "google-chrome"])?;
    let driver = find_binary(&["chromedriver"])?;
    Some((chromium, driver))
}

/// Answers true, with the skip reported by the shared rule (a failure under `CI=true`), when
/// Chromium or its WebDriver is missing; the reason names which one.
pub fn skip_without_browser(test: &str) -> bool {
    let chromium = find_binary(&["chromium", "chromium-browser", "google-chrome"]);
    let driver = find_binary(&["chromedriver"]);
    let missing = match (chromium, driver) {
        (Some(_), Some(_)) => return false,
        (None, None) => "chromium and chromedriver are not installed",
        (None, Some(_)) => "chromium is not installed",
        (Some(_), None) => "chromedriver is not installed",
    };
    tidings_testkit::skip::skip(
        test,
        &format!("{missing} (apt-get install chromium chromium-driver)"),
    );
    true
}

/// Starts chromedriver on a free port and answers it with that port. A chromedriver that
/// exits before it says its port (seen once in CI while both cores were busy) is started
/// again, up to three times; the last failure names what it printed on stderr.
fn spawn_driver(driver_path: &Path) -> (Child, String) {
    let mut failures = Vec::new();
    for _ in 0..3 {
        let mut driver = Command::new(driver_path)
            .arg("--port=0")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromedriver");
        let stdout = driver.stdout.take().expect("chromedriver stdout");
        // chromedriver picks a free port with --port=0 and says which on its first lines.
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if !sent && let Some(rest) = line.split("successfully on port ").nth(1) {
                    let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    let _ = port_tx.send(port);
                    sent = true;
                }
            }
        });
        match port_rx.recv_timeout(Duration::from_secs(20)) {
            Ok(port) => {
                // Its stderr is read (and dropped) so that a chatty driver never blocks.
                if let Some(stderr) = driver.stderr.take() {
                    std::thread::spawn(move || {
                        for _ in BufReader::new(stderr).lines().map_while(Result::ok) {}
                    });
                }
                return (driver, port);
            }
            Err(error) => {
                let _ = driver.kill();
                let mut said = String::new();
                if let Some(mut stderr) = driver.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut stderr, &mut said);
                }
                let _ = driver.wait();
                failures.push(format!("{error} ({})", said.trim()));
            }
        }
    }
    panic!("chromedriver never announced its port: {failures:?}");
}

/// A running chromedriver with one browser session.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
    profile: tempfile::TempDir,
}

/// A WebDriver error answer or a transport failure.
#[derive(Debug)]
pub struct WebDriverError(pub String);

impl std::fmt::Display for WebDriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A result of a WebDriver command.
pub type WdResult<T> = Result<T, WebDriverError>;

impl Browser {
    /// Starts chromedriver and a headless Chromium of `width`×`height` CSS pixels, in
    /// American English.
    pub async fn start(width: u32, height: u32) -> Browser {
        Browser::start_in(width, height, "en-US").await
    }

    /// Starts chromedriver and a headless Chromium of `width`×`height` CSS pixels whose
    /// language is `language` (a BCP 47 tag such as `zh-CN`): its `--lang` and the languages
    /// it asks for (`navigator.languages`, Accept-Language).
    pub async fn start_in(width: u32, height: u32, language: &str) -> Browser {
        let (chromium, driver_path) = browser_binaries().expect("chromium and chromedriver");
        let (driver, port) = spawn_driver(&driver_path);
        let base = format!("http://127.0.0.1:{port}");
        let profile = tempfile::tempdir().expect("profile directory");
        let mut args: Vec<String> = CHROMIUM_FLAGS
            .iter()
            .map(|s| match s.strip_prefix("--lang=") {
                Some(_) => format!("--lang={language}"),
                None => s.to_string(),
            })
            .collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        args.push(format!("--window-size={width},{height}"));
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let capabilities = json!({
            "capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "pageLoadStrategy": "normal",
                "goog:chromeOptions": {
                    "binary": chromium.to_string_lossy(),
                    "args": args,
                    "prefs": {"intl.accept_languages": language},
                },
            }}
        });
        let mut last_error;
        let started = Instant::now();
        let session = loop {
            match http
                .post(format!("{base}/session"))
                .json(&capabilities)
                .send()
                .await
            {
                Ok(response) => {
                    let body: Value = response.json().await.expect("session answer");
                    match body["value"]["sessionId"].as_str() {
                        Some(id) => break id.to_string(),
                        None => last_error = body.to_string(),
                    }
                }
                Err(error) => last_error = error.to_string(),
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no browser session: {last_error}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        Browser {
            driver,
            base,
            session,
            http,
            profile,
        }
    }

    async fn command(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> WdResult<Value> {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut request = self.http.request(method, url);
        request = request.json(&body.unwrap_or_else(|| json!({})));
        let response = request
            .send()
            .await
            .map_err(|e| WebDriverError(e.to_string()))?;
        let body: Value = response
            .json()
            .await
            .map_err(|e| WebDriverError(e.to_string()))?;
        if let Some(error) = body["value"]["error"].as_str() {
            return Err(WebDriverError(format!(
                "{error}: {}",
                body["value"]["message"].as_str().unwrap_or("")
            )));
        }
        Ok(body["value"].clone())
    }

    async fn post(&self, path: &str, body: Value) -> WdResult<Value> {
        self.command(reqwest::Method::POST, path, Some(body)).await
    }

    /// Adds a virtual WebAuthn authenticator (WebDriver's extension): a platform
    /// authenticator (internal transport, CTAP2) that keeps discoverable credentials and
    /// verifies its user, so passkeys can be registered and used without a person. Answers
    /// its id.
    pub async fn add_virtual_authenticator(&self) -> WdResult<String> {
        let value = self
            .post(
                "/webauthn/authenticator",
                json!({
                    "protocol": "ctap2",
                    "transport": "internal",
                    "hasResidentKey": true,
                    "hasUserVerification": true,
                    "isUserConsenting": true,
                    "isUserVerified": true,
                }),
            )
            .await?;
        Ok(value.as_str().unwrap_or_default().to_string())
    }

    /// The credentials the virtual authenticator `id` holds (WebDriver's extension).
    pub async fn virtual_credentials(&self, id: &str) -> WdResult<Value> {
        self.command(
            reqwest::Method::GET,
            &format!("/webauthn/authenticator/{id}/credentials"),
            None,
        )
        .await
    }

    /// Signs in as `username` (with the test password) through the sign-in page of the server
    /// at `base`, and waits for the reader.
    pub async fn sign_in(&self, base: &str, username: &str) {
        self.goto(&format!("{base}/login")).await;
        self.type_into("#username", username).await;
        self.type_into("#password", crate::support::PASSWORD).await;
        self.click("#sign-in-form button[type=submit]").await;
        self.wait_for("the reader", "document.querySelector('nav#feeds') !== null")
            .await;
    }

    /// Navigates and waits for the page load.
    pub async fn goto(&self, url: &str) {
        self.post("/url", json!({"url": url}))
            .await
            .expect("navigate");
    }

    /// Runs `script` (a function body; `arguments` holds `args`) and answers its return value.
    pub async fn js(&self, script: &str, args: Vec<Value>) -> WdResult<Value> {
        self.post("/execute/sync", json!({"script": script, "args": args}))
            .await
    }

    /// Runs an expression and answers its value, panicking on a script error.
    pub async fn eval(&self, expression: &str) -> Value {
        self.js(&format!("return ({expression});"), vec![])
            .await
            .unwrap_or_else(|e| panic!("{expression}: {e}"))
    }

    /// Runs an async script: it calls `arguments[arguments.length - 1]` with the result.
    pub async fn js_async(&self, script: &str) -> WdResult<Value> {
        self.js_async_with(script, vec![]).await
    }

    /// [`Browser::js_async`] with arguments before the callback.
    pub async fn js_async_with(&self, script: &str, args: Vec<Value>) -> WdResult<Value> {
        self.post("/execute/async", json!({"script": script, "args": args}))
            .await
    }

    /// Waits until `expression` is truthy in the page; panics with `what` after `timeout`.
    pub async fn wait_for(&self, what: &str, expression: &str) -> Value {
        self.wait_for_within(what, expression, Duration::from_secs(15))
            .await
    }

    /// [`Browser::wait_for`] with an explicit timeout.
    pub async fn wait_for_within(&self, what: &str, expression: &str, timeout: Duration) -> Value {
        let started = Instant::now();
        let mut last;
        loop {
            match self.js(&format!("return ({expression});"), vec![]).await {
                Ok(value) if truthy(&value) => return value,
                Ok(value) => last = value,
                Err(error) => last = Value::String(error.0),
            }
            if started.elapsed() > timeout {
                let url = self.eval("location.href").await;
                let body = self
                    .eval("document.body ? document.body.innerText.slice(0, 1500) : ''")
                    .await;
                panic!(
                    "timed out waiting for {what} ({expression}); last: {last}; at {url}; page: {body}"
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The element matching a CSS selector.
    pub async fn find(&self, css: &str) -> WdResult<String> {
        let value = self
            .post("/element", json!({"using": "css selector", "value": css}))
            .await?;
        value[ELEMENT_KEY]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| WebDriverError(format!("no element id for {css}")))
    }

    /// Waits until an element matches `css` (and, with `visible`, has a box), and answers it.
    async fn element(&self, css: &str, visible: bool) -> String {
        let selector = serde_json::to_string(css).unwrap();
        let test = if visible {
            "e && e.getClientRects().length > 0"
        } else {
            "e !== null"
        };
        self.wait_for(
            &format!("{css} (visible: {visible})"),
            &format!(
                "(() => {{ const e = document.querySelector({selector}); return {test}; }})()"
            ),
        )
        .await;
        self.find(css)
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"))
    }

    /// Waits for an element, then clicks it like a person (scrolled into view, real events).
    pub async fn click(&self, css: &str) {
        let element = self.element(css, true).await;
        self.post(&format!("/element/{element}/click"), json!({}))
            .await
            .unwrap_or_else(|e| panic!("click {css}: {e}"));
    }

    /// Clicks the element matching `css` by script, at once: for an element the list's sticky
    /// header may cover where it is, which a person would scroll to first.
    pub async fn click_by_script(&self, css: &str) {
        let clicked = self
            .eval(&format!(
                "(() => {{ const e = document.querySelector({css:?}); if (e) e.click(); return !!e; }})()"
            ))
            .await;
        assert_eq!(clicked, Value::Bool(true), "no element {css}");
    }

    /// Types into the element matching `css` (after clearing it).
    pub async fn type_into(&self, css: &str, text: &str) {
        let element = self.element(css, false).await;
        for (command, body) in [("clear", json!({})), ("value", json!({"text": text}))] {
            self.post(&format!("/element/{element}/{command}"), body)
                .await
                .unwrap_or_else(|e| panic!("{command} {css}: {e}"));
        }
    }

    /// Presses keys on whatever has the focus, as real key events. Each entry is one key:
    /// a character, or a WebDriver key code such as `"\u{E007}"` (Enter); `"A"` is typed
    /// with Shift.
    pub async fn press(&self, keys: &[&str]) {
        let mut actions = Vec::new();
        for key in keys {
            let shifted = key.chars().count() == 1 && key.chars().all(|c| c.is_ascii_uppercase());
            if shifted {
                actions.push(json!({"type": "keyDown", "value": "\u{E008}"}));
            }
            actions.push(json!({"type": "keyDown", "value": key}));
            actions.push(json!({"type": "keyUp", "value": key}));
            if shifted {
                actions.push(json!({"type": "keyUp", "value": "\u{E008}"}));
            }
        }
        self.post(
            "/actions",
            json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]}),
        )
        .await
        .expect("key actions");
        let _ = self
            .command(reqwest::Method::DELETE, "/actions", None)
            .await;
    }

    /// Presses `key` (a WebDriver key code, e.g. `"\u{E004}"` for Tab) with Shift held.
    pub async fn press_shifted(&self, key: &str) {
        let actions = json!([
            {"type": "keyDown", "value": "\u{E008}"},
            {"type": "keyDown", "value": key},
            {"type": "keyUp", "value": key},
            {"type": "keyUp", "value": "\u{E008}"},
        ]);
        self.post(
            "/actions",
            json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]}),
        )
        .await
        .expect("key actions");
        let _ = self
            .command(reqwest::Method::DELETE, "/actions", None)
            .await;
    }

    /// Sends a Chrome DevTools Protocol command through chromedriver's extension (e.g.
    /// `Network.setBlockedURLs`, to make a file fail to load) and answers its result.
    pub async fn cdp(&self, command: &str, params: Value) -> WdResult<Value> {
        self.post(
            "/goog/cdp/execute",
            json!({"cmd": command, "params": params}),
        )
        .await
    }

    /// Puts a cookie into the browser's jar for the current page's host (WebDriver may set
    /// `HttpOnly` cookies, which a page's script cannot).
    pub async fn add_cookie(&self, cookie: Value) -> WdResult<Value> {
        self.post("/cookie", json!({"cookie": cookie})).await
    }

    /// The cookie `name` that the current page would be sent, if there is one.
    pub async fn cookie(&self, name: &str) -> Option<Value> {
        self.command(reqwest::Method::GET, &format!("/cookie/{name}"), None)
            .await
            .ok()
    }

    /// Resizes the window (the viewport, in headless mode).
    pub async fn resize(&self, width: u32, height: u32) {
        self.post("/window/rect", json!({"width": width, "height": height}))
            .await
            .expect("resize");
    }

    /// Saves a PNG screenshot of the viewport.
    pub async fn screenshot(&self, path: &Path) {
        let value = self
            .command(reqwest::Method::GET, "/screenshot", None)
            .await
            .expect("screenshot");
        let bytes = decode_base64(value.as_str().expect("base64 screenshot"));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("screenshot directory");
        }
        std::fs::write(path, bytes).expect("write screenshot");
    }

    /// Ends the session and the driver.
    pub async fn quit(mut self) {
        let _ = self
            .http
            .delete(format!("{}/session/{}", self.base, self.session))
            .send()
            .await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        kill_browsers_of(self.profile.path());
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // A failed test must not leave a chromedriver (and its Chromium) behind.
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        kill_browsers_of(self.profile.path());
    }
}

/// Kills every process started with this session's profile directory. Killing chromedriver
/// does not end the Chromium it started: that browser (and its helpers) is handed to init
/// and kept running, which CI saw after passing runs when a session's end did not reach the
/// browser. The profile directory is this session's own, so its name finds exactly them.
fn kill_browsers_of(profile: &Path) {
    for pid in processes_of(profile) {
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
    }
}

/// The ids of the running processes whose arguments name `profile` as their user data
/// directory (an exited process's arguments read as empty).
fn processes_of(profile: &Path) -> Vec<String> {
    let marker = format!("--user-data-dir={}", profile.display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.to_string();
            if !pid.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let ours = cmdline
                .split(|&b| b == 0)
                .any(|arg| arg == marker.as_bytes());
            ours.then_some(pid)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_ends_leaves_no_chromium() {
    if skip_without_browser("browser::a_session_that_ends_leaves_no_chromium") {
        return;
    }
    // Dropped, as a failing test drops it: its driver is killed, and its browser with it.
    let browser = Browser::start(800, 600).await;
    let profile = browser.profile.path().to_path_buf();
    assert!(!processes_of(&profile).is_empty(), "the browser runs");
    drop(browser);
    let started = Instant::now();
    while !processes_of(&profile).is_empty() && started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(processes_of(&profile), Vec::<String>::new(), "left running");
}

fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// Standard base64 (the screenshot encoding), decoded without a crate for it.
fn decode_base64(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut buffer = 0u32;
    let mut bits = 0;
    for byte in text.bytes() {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => continue,
        };
        buffer = (buffer << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    out
}
