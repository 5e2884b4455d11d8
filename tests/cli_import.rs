//! `tidings import` against a real FreshRSS (run with Debian's PHP by
//! `../shared/tools/freshrss/start.sh`): its subscriptions, folders, stars and read marks, set
//! through its own Google Reader API, arrive in tidings on both engines; a dry run and a
//! second run change nothing; a starred-items JSON whose feed is gone becomes bookmarks; the
//! read filters of a FreshRSS OPML export become rules.

use std::path::{Path, PathBuf};
use std::process::Command;

use axum::Router;
use axum::routing::get;
use serde_json::Value;

use crate::support::*;

/// The FreshRSS snapshot's start script, beside the repository (`../shared/tools/freshrss`).
const FRESHRSS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/tools/freshrss/start.sh"
);
const PASSWORD: &str = "tidings-ref-api";

/// The FreshRSS start script: `TIDINGS_TEST_FRESHRSS`, else [`FRESHRSS`].
fn freshrss_script() -> Option<PathBuf> {
    let path = std::env::var_os("TIDINGS_TEST_FRESHRSS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(FRESHRSS));
    path.is_file().then_some(path)
}

/// A free port on 127.0.0.1 (released at once: FreshRSS' `php -S` binds it next).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One Google Reader API call to FreshRSS with curl, as any client would make it.
fn greader(api: &str, auth: &str, path: &str, form: &[(&str, &str)]) -> String {
    let mut command = Command::new("curl");
    command.args([
        "-fsS",
        "-H",
        &format!("Authorization: GoogleLogin auth={auth}"),
    ]);
    for (key, value) in form {
        command.args(["--data-urlencode", &format!("{key}={value}")]);
    }
    let output = command.arg(format!("{api}{path}")).output().unwrap();
    assert!(output.status.success(), "{path}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// Stops the FreshRSS server when the test ends, passed or not.
struct FreshRss(PathBuf, PathBuf, u16);

impl Drop for FreshRss {
    fn drop(&mut self) {
        let _ = Command::new(&self.0)
            .args(["--stop", &self.1.display().to_string(), &self.2.to_string()])
            .output();
    }
}

/// Two feeds of three items on a local server, in FreshRSS with one folder.
fn start_freshrss(dir: &Path, feeds: &TestServer) -> Option<(FreshRss, String)> {
    let script = freshrss_script()?;
    if Command::new("php").arg("-v").output().is_err() {
        return None;
    }
    let opml = dir.join("fr.opml");
    std::fs::write(
        &opml,
        format!(
            "<opml version=\"2.0\"><head><title>t</title></head><body>\
             <outline text=\"News\"><outline text=\"Alpha\" type=\"rss\" xmlUrl=\"{}\"/></outline>\
             <outline text=\"Beta\" type=\"rss\" xmlUrl=\"{}\"/></body></opml>",
            feeds.url("/alpha.xml"),
            feeds.url("/beta.xml")
        ),
    )
    .unwrap();
    let port = free_port();
    let fr_dir = dir.join("freshrss");
    let output = Command::new(&script)
        .args(["--opml", &opml.display().to_string(), "--actualize"])
        .args([&fr_dir.display().to_string(), &port.to_string()])
        .output()
        .unwrap();
    let guard = FreshRss(script, fr_dir, port);
    assert!(
        output.status.success(),
        "FreshRSS did not start: {output:?}"
    );
    Some((guard, format!("http://127.0.0.1:{port}/api/greader.php")))
}

/// FreshRSS (SimplePie) takes no feed served as text/plain.
const RSS: [(&str, &str); 1] = [("content-type", "application/rss+xml")];

fn feed_server() -> Router {
    let site = "http://127.0.0.1";
    // Recent: FreshRSS keeps no items older than its retention of a new feed.
    let now = chrono::Utc::now().timestamp();
    let alpha = tidings_testkit::feeds::rss_dated(
        site,
        "alpha",
        &(0..3)
            .map(|n| (n.to_string(), now - (n + 1) * 3600))
            .collect::<Vec<_>>(),
    );
    let beta = tidings_testkit::feeds::rss_dated(
        site,
        "beta",
        &(0..3)
            .map(|n| (n.to_string(), now - (n + 1) * 3600))
            .collect::<Vec<_>>(),
    );
    Router::new()
        .route("/alpha.xml", get(move || async move { (RSS, alpha) }))
        .route("/beta.xml", get(move || async move { (RSS, beta) }))
}

/// Stars alpha 0 and beta 1, marks alpha 2 read, labels alpha 0 "later" through FreshRSS'
/// Google Reader API; answers the sign-in token.
fn set_up_history(api: &str) -> String {
    let login = greader(
        api,
        "",
        "/accounts/ClientLogin",
        &[("Email", "alice"), ("Passwd", PASSWORD)],
    );
    let auth = login
        .lines()
        .find_map(|line| line.strip_prefix("Auth="))
        .unwrap()
        .to_owned();
    let token = greader(api, &auth, "/reader/api/0/token", &[])
        .trim()
        .to_owned();
    let list: Value = serde_json::from_str(&greader(
        api,
        &auth,
        "/reader/api/0/stream/contents/user/-/state/com.google/reading-list?output=json&n=100",
        &[],
    ))
    .unwrap();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 6, "FreshRSS fetched both feeds: {list}");
    let id_of = |link: &str| {
        items
            .iter()
            .find(|item| item["alternate"][0]["href"] == link)
            .unwrap_or_else(|| panic!("no {link} in {list}"))["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    for (link, tag) in [
        (
            "http://127.0.0.1/alpha/0",
            "user/-/state/com.google/starred",
        ),
        ("http://127.0.0.1/beta/1", "user/-/state/com.google/starred"),
        ("http://127.0.0.1/alpha/2", "user/-/state/com.google/read"),
        ("http://127.0.0.1/alpha/0", "user/-/label/later"),
    ] {
        let id = id_of(link);
        let answer = greader(
            api,
            &auth,
            "/reader/api/0/edit-tag",
            &[("i", &id), ("a", tag), ("T", &token)],
        );
        assert_eq!(answer.trim(), "OK", "{link} {tag}");
    }
    auth
}

pub(crate) fn import(dir: &Path, url: &str, args: &[&str]) -> std::process::Output {
    let output = tidings(dir, url)
        .arg("import")
        .args(args)
        .env("TIDINGS_ALLOW_PRIVATE_NETWORKS", "true")
        .output()
        .unwrap();
    eprintln!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// (link, read, starred) of every item of the user's feeds, sorted.
pub(crate) async fn states(store: &tidings_store::Store, user: i64) -> Vec<(String, bool, bool)> {
    let mut states = Vec::new();
    for subscription in store.list_subscriptions(user).await.unwrap() {
        for id in store.feed_item_ids(subscription.feed_id).await.unwrap() {
            let item = store.item(user, id).await.unwrap();
            states.push((item.url.unwrap_or_default(), item.is_read, item.is_starred));
        }
    }
    states.sort();
    states
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn greader_import_from_freshrss_carries_subscriptions_stars_and_read_marks() {
    let test = "greader_import_from_freshrss";
    let dir = tempfile::tempdir().unwrap();
    let feeds = TestServer::start(feed_server()).await;
    let Some((_freshrss, api)) = start_freshrss(dir.path(), &feeds) else {
        skip::skip(
            test,
            "PHP or the FreshRSS snapshot is missing (apt-get install php-cli php-curl php-xml \
             php-mbstring php-intl php-zip php-gmp php-sqlite3; .ci/run does)",
        );
        return;
    };
    set_up_history(&api);
    let greader_args = [
        "greader",
        &api,
        "--user",
        "alice",
        "--login",
        "alice",
        "--password",
        PASSWORD,
    ];
    for (url, admin) in test_databases(dir.path(), test).await {
        let store = store_at(&url).await;
        let alice = add_user(&store, "alice").await;
        let mut dry = greader_args.to_vec();
        dry.push("--dry-run");
        let output = import(dir.path(), &url, &dry);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{stdout}");
        assert!(stdout.contains("subscriptions: 2 would add"), "{stdout}");
        assert!(stdout.contains("starred: 2 would add"), "{stdout}");
        assert!(stdout.contains("read marks: 1 would add"), "{stdout}");
        assert!(
            store.list_subscriptions(alice).await.unwrap().is_empty(),
            "dry run"
        );

        let output = import(dir.path(), &url, &greader_args);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{stdout}");
        assert!(stdout.contains("subscriptions: 2 added"), "{stdout}");
        assert!(stdout.contains("starred: 2 added"), "{stdout}");
        assert!(stdout.contains("labels: 1 added"), "{stdout}");
        let mut subscriptions: Vec<(String, String)> = Vec::new();
        let groups = store.list_groups(alice).await.unwrap();
        for subscription in store.list_subscriptions(alice).await.unwrap() {
            let group = groups
                .iter()
                .find(|g| g.id == subscription.group_id)
                .unwrap();
            subscriptions.push((subscription.feed_url, group.name.clone()));
        }
        subscriptions.sort();
        assert_eq!(
            subscriptions[0],
            (feeds.url("/alpha.xml"), "News".to_owned())
        );
        // Beta is in FreshRSS' default category, "Uncategorized": tidings' default group.
        assert_eq!(
            subscriptions[1],
            (feeds.url("/beta.xml"), "General".to_owned())
        );
        assert!(
            !groups.iter().any(|g| g.name == "Uncategorized"),
            "{groups:?}"
        );
        let expected: Vec<(String, bool, bool)> = [
            ("alpha/0", false, true),
            ("alpha/1", false, false),
            ("alpha/2", true, false),
            ("beta/0", false, false),
            ("beta/1", false, true),
            ("beta/2", false, false),
        ]
        .iter()
        .map(|(link, read, starred)| (format!("http://127.0.0.1/{link}"), *read, *starred))
        .collect();
        let after = states(&store, alice).await;
        assert_eq!(after, expected);
        assert_eq!(
            store.list_item_labels(alice).await.unwrap(),
            vec!["later".to_owned()]
        );

        let output = import(dir.path(), &url, &greader_args);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{stdout}");
        for kind in [
            "subscriptions",
            "folders",
            "starred",
            "read marks",
            "labels",
        ] {
            assert!(
                stdout.contains(&format!("{kind}: 0 added")),
                "{kind}: {stdout}"
            );
        }
        assert_eq!(
            states(&store, alice).await,
            expected,
            "the second run changed nothing"
        );
        assert_eq!(store.list_subscriptions(alice).await.unwrap().len(), 2);

        takeout_file(dir.path(), &url, &store, alice, &feeds).await;
        store.close().await;
        drop_postgres(admin).await;
    }
}

/// A Takeout starred.json: one item of alpha (starred already), one of a feed that is gone,
/// kept as a bookmark, once; its label is said not to be kept (a bookmark has none), which is
/// no failure.
async fn takeout_file(
    dir: &Path,
    url: &str,
    store: &tidings_store::Store,
    alice: i64,
    feeds: &TestServer,
) {
    let takeout = dir.join("starred.json");
    std::fs::write(
        &takeout,
        serde_json::json!({"items": [
            {"title": "alpha item 1", "alternate": [{"href": "http://127.0.0.1/alpha/1"}],
             "origin": {"streamId": format!("feed/{}", feeds.url("/alpha.xml"))}},
            {"title": "Old post", "published": 1_500_000_000,
             "alternate": [{"href": "https://gone.example/old"}],
             "content": {"content": "<p>kept</p>"},
             "categories": ["user/-/label/keep"],
             "origin": {"streamId": "feed/https://gone.example/feed", "title": "Gone"}}
        ]})
        .to_string(),
    )
    .unwrap();
    let file_args = ["file", takeout.to_str().unwrap(), "--user", "alice"];
    for round in 0..2 {
        let output = import(dir, url, &file_args);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{stdout}");
        assert!(
            stdout.contains("labels: 0 added, 0 already there, 1 not kept"),
            "{stdout}"
        );
        assert!(
            stdout.contains("not kept (labels): \"keep\" on \"Old post\""),
            "{stdout}"
        );
        let bookmarks = store.list_bookmarks(alice).await.unwrap();
        assert_eq!(bookmarks.len(), 1, "round {round}");
        assert_eq!(bookmarks[0].content.as_deref(), Some("<p>kept</p>"));
        assert_eq!(bookmarks[0].published_at, Some(1_500_000_000));
    }
    assert!(
        states(store, alice)
            .await
            .contains(&("http://127.0.0.1/alpha/1".into(), false, true))
    );
}

/// `tidings import file` of an OPML written by FreshRSS' export with read filters
/// (`crates/worker/testdata/freshrss`), on both engines: the dry run names each rule it would
/// add and says what does not map; the import adds them once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn freshrss_opml_read_filters_become_rules() {
    let test = "freshrss_opml_read_filters_become_rules";
    let dir = tempfile::tempdir().unwrap();
    let feeds = TestServer::start(feed_server()).await;
    let opml = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/worker/testdata/freshrss/filters.opml"
    ))
    .unwrap()
    .replace("{FEEDS}", &feeds.base);
    let path = dir.path().join("freshrss.opml");
    std::fs::write(&path, opml).unwrap();
    let args = ["file", path.to_str().unwrap(), "--user", "alice"];
    for (url, admin) in test_databases(dir.path(), test).await {
        let store = store_at(&url).await;
        let alice = add_user(&store, "alice").await;
        let mut dry = args.to_vec();
        dry.push("--dry-run");
        let output = import(dir.path(), &url, &dry);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{stdout}");
        for line in [
            "rules: 7 would add, 0 already there, 2 not kept",
            "would add (rules): FreshRSS, alpha: read intitle:sponsored",
            "would add (rules): FreshRSS, beta: read inurl:/promo/",
            "not kept (rules): FreshRSS, alpha: read date:P1W: `date:`",
        ] {
            assert!(stdout.contains(line), "{line}: {stdout}");
        }
        assert!(store.list_rules(alice).await.unwrap().is_empty());
        for (round, line) in [
            "rules: 7 added, 0 already there, 2 not kept",
            "rules: 0 added, 7 already there, 2 not kept",
        ]
        .into_iter()
        .enumerate()
        {
            let output = import(dir.path(), &url, &args);
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            assert!(output.status.success(), "round {round}: {stdout}");
            assert!(stdout.contains(line), "{line}: {stdout}");
        }
        assert_eq!(store.list_rules(alice).await.unwrap().len(), 7);
        store.close().await;
        drop_postgres(admin).await;
    }
}
