//! Newsletters by email (issue 36) against a real server on both engines: receiving addresses
//! over the REST API; messages delivered by `POST /inbound/mail` and by the SMTP listener,
//! sent with mail software nobody here wrote (Python's smtplib, Debian's swaks), becoming
//! items of a per-sender feed that search and the sync APIs see; refused recipients, relaying
//! attempts and floods refused.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use tidings_server::mail::tls::SmtpTls;
use tidings_server::mail::{MailSettings, SmtpLimits};
use tidings_server::{AppState, ServerConfig};
use tidings_testkit::{TestDb, on_both_engines};

use crate::support::{TestApp, assert_error, call, test_fetcher};

pub(crate) const DOMAIN: &str = "news.tidings.example";
pub(crate) const SECRET: &str = "inbound-secret-of-the-tests-0123456789";

/// A server with mail on, and its SMTP listener's address.
pub(crate) async fn start(db: &TestDb, smtp: SmtpLimits) -> (TestApp, SocketAddr) {
    start_with_tls(db, smtp, None).await
}

/// [`start`], the SMTP listener offering STARTTLS with `tls`.
async fn start_with_tls(
    db: &TestDb,
    smtp: SmtpLimits,
    tls: Option<SmtpTls>,
) -> (TestApp, SocketAddr) {
    let store = db.migrated().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut config = ServerConfig::new(base.parse().unwrap());
    config.mail = MailSettings {
        domain: Some(DOMAIN.into()),
        inbound_secret: Some(SECRET.into()),
        max_bytes: 1024 * 1024,
        smtp,
        tls,
    };
    let state = AppState::new(store.clone(), config, test_fetcher(store.clone(), true));
    tokio::spawn(tidings_server::serve(
        listener,
        state.clone(),
        std::future::pending(),
    ));
    let smtp_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let smtp_address = smtp_listener.local_addr().unwrap();
    tokio::spawn(tidings_server::mail::smtp::serve(
        smtp_listener,
        state,
        std::future::pending(),
    ));
    (TestApp { base, store }, smtp_address)
}

/// A test message of `crates/mail/testdata`, addressed to `to`.
pub(crate) fn message(name: &str, to: &str) -> Vec<u8> {
    let path = format!("{}/../mail/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    let raw = std::fs::read(&path).unwrap();
    String::from_utf8_lossy(&raw)
        .replace("k3x9q2@news.tidings.example", to)
        .replace("k3x9q2+shop@news.tidings.example", to)
        .into_bytes()
}

async fn new_address(client: &Client, app: &TestApp, body: Value) -> Value {
    let (status, _, address) = call(
        client,
        Method::POST,
        &app.url("/mail-addresses"),
        Some(body),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{address}");
    address
}

pub(crate) async fn inbound(
    app: &TestApp,
    secret: &str,
    to: Option<&str>,
    raw: Vec<u8>,
) -> (StatusCode, Value) {
    let mut url = format!("{}/inbound/mail", app.base);
    if let Some(to) = to {
        url.push_str(&format!("?to={to}"));
    }
    let response = Client::new()
        .post(url)
        .bearer_auth(secret)
        .header("content-type", "message/rfc822")
        .body(raw)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap())
}

async fn get(client: &Client, app: &TestApp, path: &str) -> Value {
    let (status, _, body) = call(client, Method::GET, &app.url(path), None).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body
}

on_both_engines!(mail_addresses_are_created_listed_and_revoked, |db| {
    let off = TestApp::start(db).await;
    off.user("ann", false).await;
    let ann = off.signed_in("ann").await;
    // Mail is off by default: the list says so (a settings page asking is no error), and
    // creating an address is refused with what to do.
    let listed = get(&ann, &off, "/mail-addresses").await;
    assert_eq!(listed, json!({"enabled": false, "addresses": []}));
    let (status, _, body) = call(
        &ann,
        Method::POST,
        &off.url("/mail-addresses"),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_error(&body, "mail_off", "validation");

    let (app, _) = start(db, SmtpLimits::default()).await;
    app.user("ann2", false).await;
    app.user("bob", false).await;
    let ann = app.signed_in("ann2").await;
    let bob = app.signed_in("bob").await;
    let plain = new_address(&ann, &app, json!({})).await;
    let address = plain["address"].as_str().unwrap();
    let (token, domain) = address.split_once('@').unwrap();
    assert_eq!(domain, DOMAIN);
    assert_eq!(token.len(), 12, "{address}");
    assert!(
        plain["created_at"].as_str().unwrap().ends_with('Z'),
        "{plain}"
    );
    let labelled = new_address(&ann, &app, json!({"label": "Shop"})).await;
    assert!(
        labelled["address"].as_str().unwrap().contains("+shop@"),
        "{labelled}"
    );
    let (status, _, body) = call(
        &ann,
        Method::POST,
        &app.url("/mail-addresses"),
        Some(json!({"label": "no spaces"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    let listed = get(&ann, &app, "/mail-addresses").await;
    assert_eq!(listed["enabled"], true, "{listed}");
    assert_eq!(listed["addresses"].as_array().unwrap().len(), 2, "{listed}");
    assert!(
        get(&bob, &app, "/mail-addresses").await["addresses"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let id = plain["id"].as_i64().unwrap();
    let path = app.url(&format!("/mail-addresses/{id}"));
    let (status, _, _) = call(&bob, Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another user's address");
    let (status, _, _) = call(&ann, Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _, _) = call(&ann, Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "revoked already");
    let listed = get(&ann, &app, "/mail-addresses").await;
    assert_eq!(listed["addresses"][0]["id"], labelled["id"], "{listed}");
    // Mail to the revoked address is refused.
    let (status, body) = inbound(
        &app,
        SECRET,
        Some(address),
        message("confirmation.eml", address),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
});

on_both_engines!(inbound_mail_becomes_an_item_of_the_senders_feed, |db| {
    let (app, _) = start(db, SmtpLimits::default()).await;
    let ann_id = app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let address = new_address(&ann, &app, json!({"label": "news"})).await;
    let address = address["address"].as_str().unwrap().to_string();
    let raw = message("multipart_alternative.eml", &address);

    let (status, body) = inbound(&app, "wrong-secret", None, raw.clone()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    // The recipient found in the message's own To header.
    let (status, body) = inbound(&app, SECRET, None, raw.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["new_items"], 1, "{body}");
    // The same message again is the same item.
    let (status, body) = inbound(&app, SECRET, Some(&address), raw).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["new_items"], 0, "{body}");

    let subscriptions = get(&ann, &app, "/subscriptions").await;
    let subscription = &subscriptions["subscriptions"][0];
    assert_eq!(subscription["title"], "Café Writer", "{subscriptions}");
    let feed_url = subscription["feed_url"].as_str().unwrap();
    assert!(
        feed_url.starts_with("mailto:writer@writer.example.com?list-id=cafe-notes."),
        "{feed_url}"
    );
    let groups = get(&ann, &app, "/groups").await;
    let newsletters = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "Newsletters")
        .unwrap_or_else(|| panic!("{groups}"));
    assert_eq!(subscription["group_id"], newsletters["id"]);

    let items = get(&ann, &app, "/items?filter=all&include=content").await;
    let item = &items["items"][0];
    assert_eq!(item["title"], "Café notes — issue 42", "{items}");
    assert_eq!(item["author"], "Café Writer");
    assert_eq!(item["published_at"], "2026-11-29T08:00:00Z");
    let content = item["content"].as_str().unwrap();
    assert!(content.contains("Thanks for reading"), "{content}");
    assert!(content.contains(">Unsubscribe</a>"), "{content}");
    for gone in ["<script", "onclick", "open.gif", "/e/o/"] {
        assert!(!content.contains(gone), "{gone} in {content}");
    }
    // Searchable like any item.
    let found = get(&ann, &app, "/items?filter=all&q=reading").await;
    assert_eq!(
        found["items"][0]["title"], "Café notes — issue 42",
        "{found}"
    );

    // The worker never claims a mail feed: there is nothing to fetch.
    let claimed = app
        .store
        .claim_due_feeds("test", tidings_store::unix_now() + 86_400, 10, 60)
        .await
        .unwrap();
    assert!(claimed.is_empty(), "{claimed:?}");
    let feed_id = subscription["feed_id"].as_i64().unwrap();
    let refreshed = app
        .store
        .claim_feed(feed_id, "test", tidings_store::unix_now(), 60)
        .await
        .unwrap();
    assert!(refreshed.is_none());

    syncable(&ann, &app).await;
    unreadable_and_unknown(&app, &address).await;
    subscribed_again(&ann, &app, &address, subscription["id"].as_i64().unwrap()).await;
    opml_leaves_mail_out(&ann, &app, ann_id).await;
});

/// After the user unsubscribes, the sender's next message subscribes them again, to the same
/// feed, in the group Newsletters.
async fn subscribed_again(browser: &Client, app: &TestApp, address: &str, id: i64) {
    let path = app.url(&format!("/subscriptions/{id}"));
    let (status, _, body) = call(browser, Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    assert!(
        get(browser, app, "/subscriptions").await["subscriptions"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let next = String::from_utf8(message("multipart_alternative.eml", address))
        .unwrap()
        .replace("20261129080000.abc123@", "20261206080000.def456@")
        .replace("Subject: =?UTF-8?B?", "Subject: Next =?UTF-8?B?");
    let (status, body) = inbound(app, SECRET, Some(address), next.into_bytes()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["new_items"], 1, "{body}");
    let subscriptions = get(browser, app, "/subscriptions").await;
    assert_eq!(
        subscriptions["subscriptions"][0]["title"], "Café Writer",
        "{subscriptions}"
    );
    let items = get(browser, app, "/items?filter=all").await;
    assert_eq!(
        items["items"][0]["title"], "Next Café notes — issue 42",
        "{items}"
    );
}

/// The OPML export (one function for the REST API, the sync APIs and the CLI) lists the web
/// feed but no mail feed: a `mailto:` feed cannot be subscribed to in another reader.
async fn opml_leaves_mail_out(browser: &Client, app: &TestApp, user: i64) {
    tidings_testkit::follow(&app.store, user, "https://blog.example/feed.xml").await;
    let opml = browser
        .get(app.url("/opml"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(opml.contains("https://blog.example/feed.xml"), "{opml}");
    for gone in ["mailto:", "Café Writer", "Newsletters"] {
        assert!(!opml.contains(gone), "{gone} in {opml}");
    }
}

/// The item reaches a sync API (Miniflux's) like any item.
async fn syncable(browser: &Client, app: &TestApp) {
    let (status, _, key) = call(
        browser,
        Method::POST,
        &app.url("/api-keys"),
        Some(json!({"name": "sync"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{key}");
    let entries: Value = Client::new()
        .get(format!("{}/v1/entries", app.base))
        .header("X-Auth-Token", key["key"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        entries["entries"][0]["title"], "Café notes — issue 42",
        "{entries}"
    );
}

/// What is not a message is a 422; mail to an address nobody has, a 404.
async fn unreadable_and_unknown(app: &TestApp, address: &str) {
    let (status, body) = inbound(
        app,
        SECRET,
        Some(address),
        message("no_sender.eml", address),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("no From address"),
        "{body}"
    );
    let nobody = format!("nosuchtoken@{DOMAIN}");
    let (status, body) = inbound(
        app,
        SECRET,
        Some(&nobody),
        message("confirmation.eml", &nobody),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}

/// Runs Python's smtplib against the listener: `script` gets `host`, `port` and `args`, and
/// prints one JSON document. `None` (reported skipped) when Python cannot run.
fn smtplib(test: &str, smtp: SocketAddr, script: &str, args: &[&str]) -> Option<Value> {
    let python = std::env::var("TIDINGS_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let output = Command::new(&python)
        .arg("-c")
        .arg(script)
        .arg(smtp.ip().to_string())
        .arg(smtp.port().to_string())
        .args(args)
        .output();
    let output = match output {
        Ok(output) => output,
        Err(error) => {
            tidings_testkit::skip::skip(test, &format!("{python} does not run: {error}"));
            return None;
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(serde_json::from_str(stdout.trim()).unwrap_or_else(|_| panic!("{stdout}")))
}

/// Sends each file of `argv[5:]` from `argv[3]` to `argv[4]` on one connection; prints the SMTP
/// code of each (250 sent, else the refusal's), and the SIZE the server announced.
const SEND: &str = r#"
import json, smtplib, sys
host, port, sender, rcpt = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
codes = []
with smtplib.SMTP(host, port, timeout=30) as s:
    s.ehlo("sender.example")
    size = s.esmtp_features.get("size")
    starttls = s.has_extn("starttls")
    for path in sys.argv[5:]:
        data = open(path, "rb").read()
        try:
            s.sendmail(sender, [rcpt], data)
            codes.append(250)
        except smtplib.SMTPRecipientsRefused as e:
            codes.append(list(e.recipients.values())[0][0])
        except smtplib.SMTPResponseException as e:
            codes.append(e.smtp_code)
print(json.dumps({"size": size, "starttls": starttls, "codes": codes}))
"#;

on_both_engines!(smtp_listener_takes_mail_from_smtplib_and_swaks, |db| {
    let test = "smtp_listener_takes_mail_from_smtplib_and_swaks";
    let limits = SmtpLimits {
        messages_per_minute_per_sender: 4,
        ..SmtpLimits::default()
    };
    let (app, smtp) = start(db, limits).await;
    app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let address = new_address(&ann, &app, json!({})).await;
    let address = address["address"].as_str().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, to: &str| {
        let path = dir.path().join(format!("{}-{name}", to.replace('@', "_")));
        std::fs::write(&path, message(name, to)).unwrap();
        path.to_str().unwrap().to_string()
    };
    let japanese = file("japanese_iso2022jp.eml", &address);
    let gallery = file("inline_images.eml", &address);
    let Some(sent) = tokio::task::block_in_place(|| {
        smtplib(
            test,
            smtp,
            SEND,
            &["magazine@news.example.jp", &address, &japanese, &gallery],
        )
    }) else {
        return;
    };
    assert_eq!(sent["codes"], json!([250, 250]), "{sent}");
    assert_eq!(sent["size"], "1048576", "{sent}");
    assert_eq!(
        sent["starttls"], false,
        "no certificate, no STARTTLS: {sent}"
    );
    let items = get(&ann, &app, "/items?filter=all").await;
    let titles: Vec<&str> = items["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["title"].as_str().unwrap())
        .collect();
    assert!(
        titles.contains(&"【週刊ニュース】第１２号のお知らせ"),
        "{items}"
    );
    assert!(titles.contains(&"This month's pictures"), "{items}");
    let feeds = get(&ann, &app, "/subscriptions").await;
    assert_eq!(
        feeds["subscriptions"].as_array().unwrap().len(),
        2,
        "one feed a sender: {feeds}"
    );

    refusals(test, smtp, &address, &dir).await;
    if swaks(test, smtp, &address, &file("shift_jis.eml", &address), &[]) {
        let found = get(&ann, &app, "/items?filter=all&q=セール情報").await;
        assert_eq!(found["items"][0]["title"], "本日のセール", "{found}");
    }
});

/// A relaying attempt, an unknown address and a flood are refused.
async fn refusals(test: &str, smtp: SocketAddr, address: &str, dir: &tempfile::TempDir) {
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let confirmation = path("c.eml");
    std::fs::write(&confirmation, message("confirmation.eml", address)).unwrap();
    let relay = tokio::task::block_in_place(|| {
        smtplib(
            test,
            smtp,
            SEND,
            &["a@b.example", "victim@elsewhere.example", &confirmation],
        )
    })
    .unwrap();
    assert_eq!(relay["codes"], json!([550]), "relaying: {relay}");
    let nobody = format!("nosuchtoken@{DOMAIN}");
    let unknown = tokio::task::block_in_place(|| {
        smtplib(test, smtp, SEND, &["a@b.example", &nobody, &confirmation])
    })
    .unwrap();
    assert_eq!(unknown["codes"], json!([550]), "unknown: {unknown}");
    // A flood from one sender: 4 a minute pass, then 450 (try again later).
    let flood: Vec<&str> = std::iter::repeat_n(confirmation.as_str(), 6).collect();
    let mut args = vec!["flood@digest.example.net", address];
    args.extend(flood);
    let flooded = tokio::task::block_in_place(|| smtplib(test, smtp, SEND, &args)).unwrap();
    assert_eq!(
        flooded["codes"],
        json!([250, 250, 250, 250, 450, 450]),
        "{flooded}"
    );
}

fn which(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok()
}

/// Sends `file` with Debian's swaks (and its `extra` arguments); `false` (reported skipped)
/// when it is not installed.
fn swaks(test: &str, smtp: SocketAddr, address: &str, file: &str, extra: &[&str]) -> bool {
    if !which("swaks") {
        tidings_testkit::skip::skip(test, "swaks is not installed (apt-get install swaks)");
        return false;
    }
    let output = Command::new("swaks")
        .args([
            "--server",
            &smtp.ip().to_string(),
            "--port",
            &smtp.port().to_string(),
        ])
        .args([
            "--from",
            "info@shop.example.jp",
            "--to",
            address,
            "--helo",
            "shop.example.jp",
        ])
        .args(["--data", &format!("@{file}")])
        .args(extra)
        .output()
        .unwrap();
    let transcript = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{transcript}");
    // swaks writes what it received over TLS with `<~`, in clear text with `<-`.
    let arrow = if extra.contains(&"--tls") { "<~" } else { "<-" };
    assert!(
        transcript.contains(&format!("{arrow}  250 2.0.0 Delivered")),
        "{transcript}"
    );
    true
}

/// A self-signed certificate for 127.0.0.1 and the mail domain, made in `dir` with the
/// openssl command; `None` (reported skipped) when it is not installed.
fn self_signed(test: &str, dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
        .args(["-subj", &format!("/CN={DOMAIN}")])
        .args([
            "-addext",
            &format!("subjectAltName=DNS:{DOMAIN},IP:127.0.0.1"),
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output();
    match made {
        Err(error) => {
            let reason = format!("openssl does not run ({error}): apt-get install openssl");
            tidings_testkit::skip::skip(test, &reason);
            None
        }
        Ok(output) => {
            let said = String::from_utf8_lossy(&output.stderr);
            assert!(output.status.success(), "{said}");
            Some((cert, key))
        }
    }
}

/// Over STARTTLS with smtplib (`argv[3]` the CA file, then sender, recipient, message): what
/// EHLO offered before and after, the TLS version, the answer to MAIL before the new EHLO and
/// to a second STARTTLS; then, on a raw socket, commands written after STARTTLS in the same
/// clear-text packet, and the answer to MAIL once encrypted (the injected EHLO must not count).
const STARTTLS: &str = r#"
import json, smtplib, socket, ssl, sys
host, port, cafile, sender, rcpt, path = sys.argv[1], int(sys.argv[2]), *sys.argv[3:7]
context = ssl.create_default_context(cafile=cafile)
out = {}
with smtplib.SMTP(host, port, timeout=30) as s:
    s.ehlo("sender.example")
    out["offered"] = s.has_extn("starttls")
    s.starttls(context=context)
    out["version"] = s.sock.version()
    out["mail_before_ehlo"] = s.docmd("MAIL", "FROM:<" + sender + ">")[0]
    s.ehlo("sender.example")
    out["offered_again"] = s.has_extn("starttls")
    out["starttls_again"] = s.docmd("STARTTLS")[0]
    s.sendmail(sender, [rcpt], open(path, "rb").read())
    out["sent"] = True
def reply(f):
    while True:
        line = f.readline()
        if line[3:4] != b"-":
            return int(line[:3])
raw = socket.create_connection((host, port), timeout=30)
plain = raw.makefile("rb")
reply(plain)
raw.sendall(b"EHLO sender.example\r\n")
reply(plain)
raw.sendall(b"STARTTLS\r\nEHLO injected.example\r\n")
out["starttls"] = reply(plain)
secure = context.wrap_socket(raw, server_hostname=host)
replies = secure.makefile("rb")
secure.sendall(b"MAIL FROM:<" + sender.encode() + b">\r\n")
out["injected"] = reply(replies)
secure.sendall(b"QUIT\r\n")
reply(replies)
print(json.dumps(out))
"#;

on_both_engines!(smtp_listener_offers_starttls_with_a_certificate, |db| {
    let test = "smtp_listener_offers_starttls_with_a_certificate";
    let dir = tempfile::tempdir().unwrap();
    let Some((cert, key)) = self_signed(test, dir.path()) else {
        return;
    };
    let tls = SmtpTls::from_pem_files(&cert, &key).unwrap();
    let (app, smtp) = start_with_tls(db, SmtpLimits::default(), Some(tls)).await;
    app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let address = new_address(&ann, &app, json!({})).await;
    let address = address["address"].as_str().unwrap().to_string();
    let letter = dir.path().join("letter.eml");
    std::fs::write(&letter, message("multipart_alternative.eml", &address)).unwrap();
    let cafile = cert.to_str().unwrap();
    let letter = letter.to_str().unwrap();
    let args = [cafile, "writer@writer.example.com", &address, letter];
    let Some(said) = tokio::task::block_in_place(|| smtplib(test, smtp, STARTTLS, &args)) else {
        return;
    };
    assert_eq!(
        said,
        json!({
            "offered": true, "version": "TLSv1.3", "mail_before_ehlo": 503,
            "offered_again": false, "starttls_again": 503, "sent": true,
            "starttls": 220, "injected": 503
        })
    );
    let items = get(&ann, &app, "/items?filter=all").await;
    assert_eq!(
        items["items"][0]["title"], "Café notes — issue 42",
        "{items}"
    );

    // swaks, insisting on TLS (--tls): another client's handshake and conversation.
    let japanese = dir.path().join("japanese.eml");
    std::fs::write(&japanese, message("japanese_iso2022jp.eml", &address)).unwrap();
    if swaks(test, smtp, &address, japanese.to_str().unwrap(), &["--tls"]) {
        let found = get(&ann, &app, "/items?filter=all").await;
        let titles = found["items"].to_string();
        assert!(titles.contains("第１２号のお知らせ"), "{found}");
    }
});

/// A form as SendGrid's Inbound Parse posts it with "POST the raw, full MIME message" on: the
/// header's `to`, `from`, the JSON `envelope` (when given), the raw message as `email`, and a
/// field tidings does not read.
fn sendgrid_form(raw: &[u8], envelope_to: Option<&str>, header_to: &str) -> (String, Vec<u8>) {
    let boundary = "xYzZYtidings";
    let envelope = envelope_to.map(|to| json!({"to": [to], "from": "bounce@shop.example.jp"}));
    let mut fields: Vec<(&str, Vec<u8>)> = vec![
        ("to", header_to.as_bytes().to_vec()),
        ("from", b"Shop <info@shop.example.jp>".to_vec()),
    ];
    if let Some(envelope) = envelope {
        fields.push(("envelope", envelope.to_string().into_bytes()));
    }
    fields.push(("email", raw.to_vec()));
    fields.push(("spam_score", b"0.1".to_vec()));
    let mut body = Vec::new();
    for (name, value) in fields {
        let head =
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n");
        body.extend_from_slice(head.as_bytes());
        body.extend_from_slice(&value);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Posts a SendGrid form to `/inbound/mail/sendgrid{query}`, with basic authentication when
/// `basic` gives the password.
async fn sendgrid(
    app: &TestApp,
    query: &str,
    basic: Option<&str>,
    (content_type, body): (String, Vec<u8>),
) -> (StatusCode, Value) {
    let mut request = Client::new()
        .post(format!("{}/inbound/mail/sendgrid{query}", app.base))
        .header("content-type", content_type)
        .body(body);
    if let Some(password) = basic {
        request = request.basic_auth("tidings", Some(password));
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap())
}

/// A message in Shift_JIS sent as 8-bit bytes (not encoded), which must reach the MIME parser
/// unchanged through the form: 本日のセール.
fn eight_bit_message(to: &str, id: &str) -> Vec<u8> {
    let mut raw = format!(
        "From: Shop <info@shop.example.jp>\r\nTo: {to}\r\nSubject: Sale {id}\r\n\
         Message-ID: <{id}@shop.example.jp>\r\nDate: Fri, 27 Nov 2026 12:00:00 +0900\r\n\
         Content-Type: text/plain; charset=Shift_JIS\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
    )
    .into_bytes();
    raw.extend_from_slice(b"\x96\x7b\x93\xfa\x82\xcc\x83\x5a\x81\x5b\x83\x8b\r\n");
    raw
}

on_both_engines!(
    sendgrid_inbound_parse_delivers_through_the_same_path,
    |db| {
        let (app, _) = start(db, SmtpLimits::default()).await;
        app.user("ann", false).await;
        let ann = app.signed_in("ann").await;
        let address = new_address(&ann, &app, json!({})).await;
        let address = address["address"].as_str().unwrap().to_string();
        let first = eight_bit_message(&address, "sale-1");
        let form = || sendgrid_form(&first, Some(&address), &address);
        let secret = format!("?secret={SECRET}");

        let (status, body) = sendgrid(&app, "", None, form()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "no secret: {body}");
        let (status, body) = sendgrid(&app, "?secret=wrong", Some("wrong"), form()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        // The envelope wins over the header: mail the envelope does not send here is refused.
        let nobody = format!("nosuchtoken@{DOMAIN}");
        let elsewhere = sendgrid_form(&first, Some(&nobody), &address);
        let (status, body) = sendgrid(&app, &secret, None, elsewhere).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

        let (status, body) = sendgrid(&app, &secret, None, form()).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["new_items"], 1, "{body}");
        // Basic authentication; no envelope, so the `to` field names the recipient.
        let second = eight_bit_message(&address, "sale-2");
        let named = sendgrid_form(&second, None, &format!("\"Me\" <{address}>"));
        let (status, body) = sendgrid(&app, "", Some(SECRET), named).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["new_items"], 1, "{body}");

        let items = get(&ann, &app, "/items?filter=all&include=content").await;
        assert_eq!(items["items"].as_array().unwrap().len(), 2, "{items}");
        let content = items["items"][0]["content"].as_str().unwrap();
        assert!(content.contains("本日のセール"), "{content}");
        let found = get(&ann, &app, "/items?filter=all&q=セール").await;
        assert_eq!(found["items"].as_array().unwrap().len(), 2, "{found}");

        // A form without the raw message (the parsed mode), and a body that is no form.
        let (_, parsed) = sendgrid_form(b"", None, &address);
        let parsed = String::from_utf8(parsed)
            .unwrap()
            .replace("name=\"email\"", "name=\"text\"");
        let content_type = "multipart/form-data; boundary=xYzZYtidings".to_string();
        let (status, body) =
            sendgrid(&app, &secret, None, (content_type, parsed.into_bytes())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(
            body["message"].as_str().unwrap().contains("raw, full MIME"),
            "{body}"
        );
        let json_body = ("application/json".to_string(), b"{}".to_vec());
        let (status, body) = sendgrid(&app, &secret, None, json_body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    }
);
