//! NewsFlash (the GNOME feed reader) against a real server, on both engines, through its own
//! protocol clients from crates.io: `greader_api` (its FreshRSS account), `fever_api` and
//! `miniflux_api`. Each module drives a full sync the way NewsFlash's backend for that protocol
//! does (news-flash 4.0.1: `src/feed_api_impls/{freshrss,fever,miniflux}/mod.rs` and
//! `src/util/greader/mod.rs`): sign-in, the feed and category lists, unread and starred ids,
//! contents in batches, marks from the app and marks made on the server. The app's local state
//! is modelled here (an article per id with its read and starred flags) and compared with the
//! server's after every step: every item the user can see is in the app, once, with the
//! server's flags.
//!
//! Real feeds: a local feed server, subscriptions through the REST API (its first fetch), a
//! late item through a refresh, and a second user subscribing to a feed the first already has.

mod fever;
mod greader;
mod miniflux;

use std::collections::BTreeMap;

use crate::support::{TestApp, TestServer, call, rss_dated};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};

/// Items of feed Alpha at the start: more than one batch of every protocol's paging.
pub const ALPHA_ITEMS: usize = 120;
/// Items of feed Beta.
pub const BETA_ITEMS: usize = 5;

/// One article as the app keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Article {
    /// Its link: how the test finds the same item on the server.
    pub url: String,
    /// Whether the app shows it read.
    pub read: bool,
    /// Whether the app shows it starred.
    pub starred: bool,
}

/// What a NewsFlash account holds after syncing: articles by the protocol's item id, feeds by
/// title with their category, and when it last synced.
#[derive(Debug, Default)]
pub struct Local {
    /// Articles by the protocol's item id (as NewsFlash stores it: a decimal string).
    pub articles: BTreeMap<String, Article>,
    /// Feed titles and their category's name, if any.
    pub feeds: BTreeMap<String, Option<String>>,
    /// When the last sync started (NewsFlash takes the time before it asks anything).
    pub last_sync: Option<chrono::DateTime<chrono::Utc>>,
}

impl Local {
    /// Adds an article the server sent, or takes the server's flags for one the app has.
    pub fn take(&mut self, id: String, url: String, read: bool, starred: bool) {
        let article = self
            .articles
            .entry(id)
            .or_insert(Article { url, read, starred });
        article.read = read;
        article.starred = starred;
    }

    /// Ids of the articles the app shows unread.
    pub fn unread_ids(&self) -> std::collections::BTreeSet<String> {
        self.ids_where(|a| !a.read)
    }

    /// Ids of the articles the app shows starred.
    pub fn starred_ids(&self) -> std::collections::BTreeSet<String> {
        self.ids_where(|a| a.starred)
    }

    fn ids_where(&self, keep: impl Fn(&Article) -> bool) -> std::collections::BTreeSet<String> {
        self.articles
            .iter()
            .filter(|(_, a)| keep(a))
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The app's id of the article linking to `url`.
    pub fn id_of(&self, url: &str) -> String {
        self.articles
            .iter()
            .find(|(_, a)| a.url == url)
            .map(|(id, _)| id.clone())
            .unwrap_or_else(|| panic!("the app has no article {url}"))
    }

    /// Sets an article's read flag, as the app does when the user reads it.
    pub fn set_read(&mut self, id: &str, read: bool) {
        if let Some(article) = self.articles.get_mut(id) {
            article.read = read;
        }
    }

    /// Sets an article's starred flag.
    pub fn set_starred(&mut self, id: &str, starred: bool) {
        if let Some(article) = self.articles.get_mut(id) {
            article.starred = starred;
        }
    }
}

/// An item as the REST API shows it to its user.
#[derive(Clone, Debug)]
pub struct ServerItem {
    /// Its REST id.
    pub id: i64,
    /// Read for this user.
    pub read: bool,
    /// Starred by this user.
    pub starred: bool,
}

/// A user with a signed-in browser (the REST API) and a read-write API key (the app's).
pub struct User {
    /// The username.
    pub name: &'static str,
    /// The REST API client.
    pub browser: Client,
    /// The API key the app signs in with.
    pub key: String,
}

/// The server, its feeds and two users: ann follows Alpha and Beta (Beta in "Tech"); bob
/// follows nothing yet.
pub struct World {
    /// The running server.
    pub app: TestApp,
    /// The feeds' server.
    pub site: TestServer,
    /// Publication times count back from here.
    pub t0: i64,
    /// ann.
    pub ann: User,
    /// bob.
    pub bob: User,
    /// ann's subscription to Alpha, for refreshes.
    pub ann_alpha: i64,
}

impl World {
    /// Starts the server and the feed server; ann subscribes to Alpha and Beta.
    pub async fn start(db: &tidings_testkit::TestDb) -> World {
        let app = TestApp::start(db).await;
        let site = TestServer::start_empty().await;
        let t0 = chrono::Utc::now().timestamp();
        site.serve(
            "/alpha.xml",
            200,
            "application/rss+xml",
            rss_dated(&site.base, "Alpha", &numbered(t0, ALPHA_ITEMS)),
        );
        site.serve(
            "/beta.xml",
            200,
            "application/rss+xml",
            rss_dated(&site.base, "Beta", &numbered(t0, BETA_ITEMS)),
        );
        let ann = user(&app, "ann").await;
        let bob = user(&app, "bob").await;
        let (status, _, group) = call(
            &ann.browser,
            Method::POST,
            &app.url("/groups"),
            Some(json!({"name": "Tech"})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{group}");
        let tech = group["group"]["id"]
            .as_i64()
            .unwrap_or_else(|| panic!("{group}"));
        let world = World {
            ann_alpha: 0,
            app,
            site,
            t0,
            ann,
            bob,
        };
        let ann_alpha = world.subscribe(&world.ann, "/alpha.xml", None).await;
        world.subscribe(&world.ann, "/beta.xml", Some(tech)).await;
        World { ann_alpha, ..world }
    }

    /// Subscribes `who` to the feed at `path` through the REST API (which fetches a new feed
    /// at once); returns the subscription's id.
    pub async fn subscribe(&self, who: &User, path: &str, group: Option<i64>) -> i64 {
        let mut body = json!({"url": self.site.url(path)});
        if let Some(group) = group {
            body["group_id"] = json!(group);
        }
        let (status, _, sub) = call(
            &who.browser,
            Method::POST,
            &self.app.url("/subscriptions"),
            Some(body),
        )
        .await;
        assert_eq!(
            status,
            StatusCode::CREATED,
            "{} subscribes to {path}: {sub}",
            who.name
        );
        sub["subscription"]["id"].as_i64().unwrap()
    }

    /// Every item `who` can see, by link, through the REST API.
    pub async fn server_items(&self, who: &User) -> BTreeMap<String, ServerItem> {
        let mut items = BTreeMap::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut path = "/items?filter=all&limit=200".to_string();
            if let Some(cursor) = &cursor {
                path.push_str(&format!("&cursor={cursor}"));
            }
            let (status, _, page) =
                call(&who.browser, Method::GET, &self.app.url(&path), None).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            for item in page["items"].as_array().unwrap() {
                items.insert(
                    item["url"].as_str().unwrap().to_string(),
                    ServerItem {
                        id: item["id"].as_i64().unwrap(),
                        read: item["is_read"].as_bool().unwrap(),
                        starred: item["is_starred"].as_bool().unwrap(),
                    },
                );
            }
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_string()),
                None => return items,
            }
        }
    }

    /// Changes an item's flags for `who` on the server (the web UI's call), by its link.
    pub async fn set_on_server(&self, who: &User, url: &str, state: Value) {
        let items = self.server_items(who).await;
        let id = items[url].id;
        let (status, _, body) = call(
            &who.browser,
            Method::PUT,
            &self.app.url(&format!("/items/{id}/state")),
            Some(state),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    /// A new item reaches Alpha after the apps synced, published before that (a late arrival:
    /// feeds are polled at different times, and some backdate): the feed is served with it and
    /// ann's subscription refreshed. Returns its link.
    pub async fn late_item(&self) -> String {
        let mut items = numbered(self.t0, ALPHA_ITEMS);
        // Published two and a half hours before t0, between Alpha's second and third item.
        items.push(("late".to_string(), self.t0 - 150 * 60));
        self.site.serve(
            "/alpha.xml",
            200,
            "application/rss+xml",
            rss_dated(&self.site.base, "Alpha", &items),
        );
        // A manual refresh is allowed once a minute per feed; the subscription's was just now.
        self.app
            .store
            .execute_raw("UPDATE feed_fetch_state SET last_refresh_request = NULL")
            .await
            .unwrap();
        let (status, _, outcome) = call(
            &self.ann.browser,
            Method::POST,
            &self
                .app
                .url(&format!("/subscriptions/{}/refresh", self.ann_alpha)),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{outcome}");
        assert_eq!(outcome["items_inserted"], 1, "{outcome}");
        self.site.url("/Alpha/late")
    }

    /// The link of Alpha's or Beta's item `n`.
    pub fn link(&self, feed: &str, n: usize) -> String {
        self.site.url(&format!("/{feed}/{n}"))
    }

    /// Asserts that the app holds every item `who` can see, each once, with the server's
    /// flags, and nothing else.
    pub async fn assert_in_step(&self, who: &User, local: &Local, when: &str) {
        let server = self.server_items(who).await;
        let ours: BTreeMap<&str, (bool, bool)> = local
            .articles
            .values()
            .map(|a| (a.url.as_str(), (a.read, a.starred)))
            .collect();
        assert_eq!(
            ours.len(),
            local.articles.len(),
            "{when}: an item is in the app under two ids"
        );
        let missing: Vec<&String> = server
            .keys()
            .filter(|url| !ours.contains_key(url.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "{when}: {} of {} items never reached {}'s app: {missing:?}",
            missing.len(),
            server.len(),
            who.name
        );
        let theirs: BTreeMap<&str, (bool, bool)> = server
            .iter()
            .map(|(url, item)| (url.as_str(), (item.read, item.starred)))
            .collect();
        let differ: Vec<String> = ours
            .iter()
            .filter_map(|(url, flags)| {
                let server = theirs.get(url);
                (server != Some(flags)).then(|| format!("{url}: app {flags:?}, server {server:?}"))
            })
            .collect();
        assert!(
            differ.is_empty(),
            "{when}: (read, starred) in {}'s app differ: {differ:#?}",
            who.name
        );
    }
}

/// NewsFlash with one protocol's account: what the scenarios below ask of each.
pub(crate) trait NewsFlash: Sized {
    /// Signs in as `who` with their API key, as NewsFlash's login dialog does.
    async fn sign_in(world: &World, who: &User) -> Self;
    /// The account's first sync.
    async fn initial_sync(&mut self);
    /// A later sync.
    async fn sync(&mut self);
    /// The user marks articles read or unread.
    async fn set_read(&mut self, ids: &[String], read: bool);
    /// The user stars or unstars articles.
    async fn set_starred(&mut self, ids: &[String], starred: bool);
    /// What the app holds.
    fn local(&self) -> &Local;
}

/// ann's first sync brings both feeds and every item; her marks in the app reach the server,
/// marks made on the server reach the app on the next sync, and no article changes its id.
pub(crate) async fn marks_both_ways<A: NewsFlash>(db: &tidings_testkit::TestDb) {
    let world = World::start(db).await;
    let ann = &world.ann;
    let mut app = A::sign_in(&world, ann).await;
    app.initial_sync().await;
    let feeds = &app.local().feeds;
    assert_eq!(
        feeds.keys().collect::<Vec<_>>(),
        ["Alpha", "Beta"],
        "{feeds:?}"
    );
    assert_eq!(feeds["Beta"].as_deref(), Some("Tech"), "{feeds:?}");
    assert_eq!(app.local().articles.len(), ALPHA_ITEMS + BETA_ITEMS);
    world.assert_in_step(ann, app.local(), "first sync").await;
    let ids_at_first = app.local().articles.keys().cloned().collect::<Vec<_>>();

    let id = |app: &A, feed: &str, n: usize| app.local().id_of(&world.link(feed, n));
    let (a0, a1, a2, b0) = (
        id(&app, "Alpha", 0),
        id(&app, "Alpha", 1),
        id(&app, "Alpha", 2),
        id(&app, "Beta", 0),
    );
    app.set_read(&[a0, a1.clone(), a2.clone()], true).await;
    app.set_starred(&[a1, b0.clone()], true).await;
    app.set_read(&[a2], false).await;
    app.set_starred(&[b0], false).await;
    let server = world.server_items(ann).await;
    let flags = |feed: &str, n: usize| {
        let item = &server[&world.link(feed, n)];
        (item.read, item.starred)
    };
    assert_eq!(
        [
            flags("Alpha", 0),
            flags("Alpha", 1),
            flags("Alpha", 2),
            flags("Beta", 0)
        ],
        [(true, false), (true, true), (false, false), (false, false)]
    );
    world
        .assert_in_step(ann, app.local(), "after the app's marks")
        .await;

    // The web UI changes four items; the app's next sync shows it.
    world
        .set_on_server(ann, &world.link("Alpha", 5), json!({"is_read": true}))
        .await;
    world
        .set_on_server(ann, &world.link("Alpha", 6), json!({"is_starred": true}))
        .await;
    world
        .set_on_server(ann, &world.link("Alpha", 1), json!({"is_starred": false}))
        .await;
    world
        .set_on_server(ann, &world.link("Alpha", 0), json!({"is_read": false}))
        .await;
    app.sync().await;
    world
        .assert_in_step(ann, app.local(), "a sync after marks on the server")
        .await;
    assert_eq!(
        app.local().articles.keys().cloned().collect::<Vec<_>>(),
        ids_at_first,
        "the articles' ids changed between syncs"
    );
}

/// An item that arrives after ann's first sync, published before it (issue 29, point 2), is in
/// her app after the next sync.
pub(crate) async fn late_item<A: NewsFlash>(db: &tidings_testkit::TestDb) {
    let world = World::start(db).await;
    let mut ann = A::sign_in(&world, &world.ann).await;
    ann.initial_sync().await;
    world
        .assert_in_step(&world.ann, ann.local(), "ann's first sync")
        .await;
    let late = world.late_item().await;
    ann.sync().await;
    assert!(
        ann.local().articles.values().any(|a| a.url == late),
        "the late item never reached ann's app"
    );
    world
        .assert_in_step(&world.ann, ann.local(), "ann's sync after a late item")
        .await;
}

/// bob, who synced with one feed, gets the whole backlog of a feed ann already had once he
/// subscribes to it (issue 29, point 3).
pub(crate) async fn shared_feeds_backlog<A: NewsFlash>(db: &tidings_testkit::TestDb) {
    let world = World::start(db).await;
    world.subscribe(&world.bob, "/beta.xml", None).await;
    let mut bob = A::sign_in(&world, &world.bob).await;
    bob.initial_sync().await;
    assert_eq!(bob.local().articles.len(), BETA_ITEMS);
    world
        .assert_in_step(&world.bob, bob.local(), "bob's first sync")
        .await;
    // Alpha's items are stored already (ann's): bob's subscription fetches nothing new.
    world.subscribe(&world.bob, "/alpha.xml", None).await;
    bob.sync().await;
    assert_eq!(bob.local().articles.len(), ALPHA_ITEMS + BETA_ITEMS);
    world
        .assert_in_step(
            &world.bob,
            bob.local(),
            "bob's sync after subscribing to ann's feed",
        )
        .await;
}

/// A user with a signed-in browser and a read-write API key.
async fn user(app: &TestApp, name: &'static str) -> User {
    app.user(name, false).await;
    let browser = app.signed_in(name).await;
    let key = crate::sync_clients::api_key(app, &browser, "read_write").await;
    User { name, browser, key }
}

/// Items `0..n` as (name, publication time): item i published i + 1 hours before `t0`.
fn numbered(t0: i64, n: usize) -> Vec<(String, i64)> {
    (0..n)
        .map(|i| (i.to_string(), t0 - (i as i64 + 1) * 3600))
        .collect()
}
