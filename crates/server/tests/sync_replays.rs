//! Replays of six apps' sync code against a real server, on both engines (issue 29): for each
//! app, the requests its published sync code sends (sign-in, first and later syncs, marks, the
//! subscription edits it offers), built the way the app builds them (which parameters it
//! percent-encodes and which it pastes in raw), and the checks its decoder makes on every
//! answer (which fields it requires, with which JSON types). Each module names the files of the
//! app it follows; the facts are restated here in our own words and code.
//!
//! The feeds are real-looking documents served on 127.0.0.1 and fetched by the worker: a news
//! site with more items than one Fever page, a WordPress blog at a URL ending `/feed/`, a
//! Japanese feed, a podcast with audio and image enclosures, titles with `&` and `<`, an item
//! without a link, feed URLs with `&`, `+` and `%23` (`#`), an item that arrives late (fetched
//! after the app's last sync, published before it), and a feed another user already follows
//! when the app's user subscribes to it. The pass condition: every app ends up with every item
//! of every subscription, titles and enclosures intact, after first and later syncs, and its
//! marks round-trip.

use tidings_testkit::on_both_engines;

use std::collections::{BTreeMap, BTreeSet};

use crate::support::{TestApp, TestServer, call};
use crate::sync_clients::api_key;
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Feeds
// ---------------------------------------------------------------------------------------------

/// One item of a test feed.
#[derive(Clone)]
struct Entry {
    guid: String,
    title: String,
    /// Whether the item has a `<link>`.
    link: bool,
    /// When it was published (Unix seconds).
    published: i64,
    /// An enclosure: path on the feed server, MIME type, length.
    enclosure: Option<(String, &'static str, u64)>,
}

/// A test feed: its address on the feed server (path and query) and its items.
#[derive(Clone)]
struct Feed {
    address: &'static str,
    title: &'static str,
    /// Written the way WordPress writes feeds (`content:encoded`, `dc:creator`).
    wordpress: bool,
    entries: Vec<Entry>,
}

impl Feed {
    /// A feed of `n` items titled `{stem} {i}`, published an hour apart before `t0`.
    fn new(address: &'static str, title: &'static str, stem: &str, n: usize, t0: i64) -> Feed {
        let mut feed = Feed {
            address,
            title,
            wordpress: false,
            entries: Vec::new(),
        };
        for i in 0..n {
            feed.add(&format!("{stem} {i}"), t0 - 3600 * (i as i64 + 1));
        }
        feed
    }

    /// Adds an item published at `published` (Unix seconds).
    fn add(&mut self, title: &str, published: i64) -> &mut Entry {
        let guid = format!("{}-{}", self.address, self.entries.len());
        self.entries.push(Entry {
            guid,
            title: title.to_string(),
            link: true,
            published,
            enclosure: None,
        });
        self.entries.last_mut().unwrap()
    }

    fn titles(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.title.clone()).collect()
    }

    /// The path the feed server routes (the address without its query).
    fn route(&self) -> &'static str {
        self.address.split('?').next().unwrap()
    }

    /// The RSS 2.0 document, newest item first.
    fn xml(&self, site: &str) -> String {
        let mut entries: Vec<&Entry> = self.entries.iter().collect();
        entries.sort_by_key(|e| -e.published);
        let items: String = entries
            .iter()
            .map(|e| {
                let published = chrono::DateTime::from_timestamp(e.published, 0)
                    .unwrap()
                    .to_rfc2822();
                let link = if e.link {
                    format!("<link>{site}/posts/{}</link>", escape_xml(&e.guid))
                } else {
                    String::new()
                };
                let enclosure = e
                    .enclosure
                    .as_ref()
                    .map_or(String::new(), |(path, kind, len)| {
                        format!(
                            "<enclosure url=\"{site}{path}\" type=\"{kind}\" length=\"{len}\"/>"
                        )
                    });
                let body = if self.wordpress {
                    format!(
                        "<dc:creator><![CDATA[gardener]]></dc:creator>\
                         <description><![CDATA[Short {0}]]></description>\
                         <content:encoded><![CDATA[<p>Long text of {0}</p>]]></content:encoded>",
                        escape_xml(&e.title)
                    )
                } else {
                    format!(
                        "<description>&lt;p&gt;About {}&lt;/p&gt;</description>",
                        escape_xml(&escape_xml(&e.title))
                    )
                };
                format!(
                    "<item><title>{}</title>{link}<guid isPermaLink=\"false\">{}</guid>\
                     <pubDate>{published}</pubDate>{body}{enclosure}</item>",
                    escape_xml(&e.title),
                    escape_xml(&e.guid),
                )
            })
            .collect();
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
             <rss version=\"2.0\" xmlns:content=\"http://purl.org/rss/1.0/modules/content/\" \
             xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><channel><title>{}</title>\
             <link>{site}/</link><description>d</description>{items}</channel></rss>",
            escape_xml(self.title)
        )
    }
}

fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A news site with more items than one Fever page (50).
fn news_feed(t0: i64, n: usize) -> Feed {
    Feed::new("/news/rss.xml", "Daily News", "News", n, t0)
}

/// A WordPress blog: its feed URL ends with `/feed/`.
fn blog_feed(t0: i64, address: &'static str) -> Feed {
    let mut feed = Feed::new(address, "Notes from the Garden", "Garden note", 5, t0);
    feed.wordpress = true;
    feed
}

fn japanese_feed(t0: i64) -> Feed {
    Feed::new("/ja/rss.xml", "日本のニュース", "東京で桜が開花", 4, t0)
}

/// A podcast: audio enclosures, and one episode with an image enclosure.
fn podcast_feed(t0: i64) -> Feed {
    let mut feed = Feed::new("/podcast.xml", "The Replay Podcast", "Episode", 0, t0);
    for i in 0..4 {
        feed.add(&format!("Episode {i}"), t0 - 86_400 * (i + 1))
            .enclosure = Some((
            format!("/audio/ep{i}.mp3"),
            "audio/mpeg",
            24_000_000 + i as u64,
        ));
    }
    feed.add("Cover art", t0 - 86_400 * 5).enclosure =
        Some(("/images/cover.jpg".into(), "image/jpeg", 52_000));
    feed
}

// ---------------------------------------------------------------------------------------------
// The world: a server, a feed server, the app's user
// ---------------------------------------------------------------------------------------------

/// A running server with the feed server, and ann, whose apps are replayed.
struct World {
    app: TestApp,
    site: TestServer,
    fetcher: tidings_worker::Fetcher,
    /// When the world began (Unix seconds): the feeds' items are published before it.
    t0: i64,
    /// ann's id, read-write API key and signed-in browser (the web app, another device).
    user_id: i64,
    key: String,
    browser: Client,
}

impl World {
    async fn new(db: &tidings_testkit::TestDb) -> World {
        let app = TestApp::start(db).await;
        let site = TestServer::start_empty().await;
        let user_id = app.user("ann", false).await;
        let browser = app.signed_in("ann").await;
        let key = api_key(&app, &browser, "read_write").await;
        let fetcher = crate::support::test_fetcher(app.store.clone(), true);
        World {
            app,
            site,
            fetcher,
            t0: chrono::Utc::now().timestamp(),
            user_id,
            key,
            browser,
        }
    }

    /// The feed's URL.
    fn url(&self, feed: &Feed) -> String {
        self.site.url(feed.address)
    }

    /// Serves the feed's current document.
    fn put(&self, feed: &Feed) {
        self.site.serve(
            feed.route(),
            200,
            "application/rss+xml; charset=utf-8",
            feed.xml(&self.site.base),
        );
    }

    /// Subscribes `user_id` in the store (not through an app) and fetches the feed.
    async fn follow(&self, user_id: i64, feed: &Feed) {
        self.put(feed);
        let (_, feed_id) = tidings_testkit::follow(&self.app.store, user_id, &self.url(feed)).await;
        self.fetcher.refresh_feed(feed_id).await.expect("fetch");
    }

    /// Serves the feed's current document and has the worker fetch it.
    async fn refresh(&self, feed: &Feed) {
        self.put(feed);
        let url = tidings_feed::normalize_feed_url_text(&self.url(feed));
        let feed_id = self
            .app
            .store
            .feed_id_by_url(&url)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("no feed {url}"));
        self.fetcher.refresh_feed(feed_id).await.expect("fetch");
    }

    /// Subscribes ann through the REST API (the web app), as a user of an app without a
    /// subscribe call does.
    async fn web_subscribe(&self, url: &str) {
        let (status, _, body) = call(
            &self.browser,
            Method::POST,
            &self.app.url("/subscriptions"),
            Some(json!({"url": url})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "web subscribe {url}: {body}");
    }

    /// Sets an item's state through the REST API (another device), found by its title.
    async fn web_mark(&self, title: &str, state: Value) {
        let (status, _, page) = call(
            &self.browser,
            Method::GET,
            &self.app.url("/items?filter=all&limit=200"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let id = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["title"] == title)
            .unwrap_or_else(|| panic!("no item {title:?} in {page}"))["id"]
            .as_i64()
            .unwrap();
        let (status, _, body) = call(
            &self.browser,
            Method::PUT,
            &self.app.url(&format!("/items/{id}/state")),
            Some(state),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    /// ann's subscription to a URL, and its group's name.
    async fn subscription(&self, url: &str) -> Option<(tidings_store::Subscription, String)> {
        let url = tidings_feed::normalize_feed_url_text(url);
        let store = &self.app.store;
        let found = store
            .list_subscriptions(self.user_id)
            .await
            .unwrap()
            .into_iter()
            .find(|s| s.feed_url == url)?;
        let group = store
            .list_groups(self.user_id)
            .await
            .unwrap()
            .into_iter()
            .find(|g| g.id == found.group_id)
            .map_or(String::new(), |g| g.name);
        Some((found, group))
    }

    /// Whether ann has a group of that name.
    async fn has_group(&self, name: &str) -> bool {
        let groups = self.app.store.list_groups(self.user_id).await.unwrap();
        groups.iter().any(|g| g.name == name)
    }

    /// The Google Reader base URL apps are given (FreshRSS's form).
    fn greader_base(&self) -> String {
        format!("{}/api/greader.php", self.app.base)
    }

    /// The Fever endpoint apps are given.
    fn fever_endpoint(&self) -> String {
        format!("{}/fever/", self.app.base)
    }

    /// The Fever `api_key`: md5 of `username:API key`.
    fn fever_key(&self) -> String {
        tidings_server::sync::fever::key_digest("ann", &self.key)
    }
}

// ---------------------------------------------------------------------------------------------
// The wire: requests built byte for byte as an app builds them
// ---------------------------------------------------------------------------------------------

/// An HTTP answer as an app sees it.
struct Answer {
    status: u16,
    /// The `Date` header (NetNewsWire keeps it as its next `ot`).
    date: Option<String>,
    /// The `ETag` and `Last-Modified` headers (NetNewsWire's conditional GETs).
    etag: Option<String>,
    last_modified: Option<String>,
    text: String,
}

impl Answer {
    fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as JSON, or the failure the app would report.
    fn json(&self, what: &str) -> Result<Value, String> {
        if !self.ok() {
            return Err(format!("{what}: HTTP {}: {}", self.status, self.text));
        }
        serde_json::from_str(&self.text)
            .map_err(|e| format!("{what}: not JSON ({e}): {}", self.text))
    }
}

/// Sends a request whose URL and body are given exactly as the app writes them.
async fn send(method: &str, url: &str, headers: &[(&str, String)], body: Option<String>) -> Answer {
    let mut request = Client::new().request(Method::from_bytes(method.as_bytes()).unwrap(), url);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    if let Some(body) = body {
        request = request.body(body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|d| d.to_str().ok())
            .map(str::to_string)
    };
    let (date, etag, last_modified) = (header("date"), header("etag"), header("last-modified"));
    Answer {
        status,
        date,
        etag,
        last_modified,
        text: response.text().await.unwrap(),
    }
}

/// `application/x-www-form-urlencoded`, every reserved character escaped: OkHttp's `FormBody`,
/// Retrofit's `@Field` and `@Query`, the browser's `URLSearchParams`.
fn form(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// Percent-encodes every byte `keep` refuses.
fn escape(text: &str, keep: impl Fn(u8) -> bool) -> String {
    text.bytes()
        .map(|b| {
            if keep(b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Text as NetNewsWire's `encodeForURLPath` escapes it: Foundation's host-allowed set without
/// `+` and `&` (so `/`, `?`, `#`, `%` are escaped, `=` and `:` are not).
fn nnw_path(text: &str) -> String {
    escape(text, |b| {
        b.is_ascii_alphanumeric() || b"-._~!$'()*,;=:[]".contains(&b)
    })
}

/// A query as Foundation's `URLComponents` writes `URLQueryItem`s: `&`, `=` and `#` escaped,
/// `+`, `/`, `:` and `?` left as they are.
fn nnw_query(pairs: &[(&str, &str)]) -> String {
    let keep = |b: u8| b.is_ascii_alphanumeric() || b"-._~!$'()*+,;:@/?".contains(&b);
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", escape(k, keep), escape(v, keep)))
        .collect::<Vec<_>>()
        .join("&")
}

// ---------------------------------------------------------------------------------------------
// Decoders: what an app requires of an answer
// ---------------------------------------------------------------------------------------------

/// The JSON type a decoder maps a field to.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// A string.
    Str,
    /// A string holding a decimal integer.
    DecimalStr,
    /// An integer.
    Int,
    /// A number.
    Num,
    /// A string or a number (Gson and Moshi turn either into the other).
    Text,
    /// An array.
    Arr,
    /// An object.
    Obj,
}

/// A decoder's demand: the path of a field (`a.b`, `list[].field`, `list[0].field`), the
/// type, and whether it must be present and not null. A missing or null parent skips its
/// children (the parent's own line says whether it may be missing).
type Spec = &'static [(&'static str, Kind, bool)];

/// Whether `value` satisfies every line of `spec`; the first failure as the app's error.
fn conform(value: &Value, spec: Spec, what: &str) -> Result<(), String> {
    for (path, kind, required) in spec {
        let segments: Vec<&str> = path.split('.').collect();
        visit(value, &segments, *kind, *required).map_err(|e| format!("{what}: {path}: {e}"))?;
    }
    Ok(())
}

fn visit(value: &Value, segments: &[&str], kind: Kind, required: bool) -> Result<(), String> {
    let (first, rest) = segments.split_first().unwrap();
    let (name, index) = match first.split_once('[') {
        Some((name, index)) => (name, Some(index.trim_end_matches(']'))),
        None => (*first, None),
    };
    let child = value.get(name).filter(|v| !v.is_null());
    let leaf = rest.is_empty();
    match (child, index) {
        (None, _) if leaf && index.is_none() => {
            if required {
                Err(format!("missing or null in {value}"))
            } else {
                Ok(())
            }
        }
        (None, _) => Ok(()),
        (Some(child), None) if leaf => of_kind(child, kind),
        (Some(child), None) => visit(child, rest, kind, required),
        (Some(child), Some(index)) => {
            let Some(list) = child.as_array() else {
                return Err(format!("not an array: {child}"));
            };
            let chosen: Vec<&Value> = match index {
                "" => list.iter().collect(),
                n => {
                    let n: usize = n.parse().unwrap();
                    match list.get(n) {
                        Some(v) => vec![v],
                        None => return Err(format!("no element {n} in {child}")),
                    }
                }
            };
            for element in chosen {
                if leaf {
                    if element.is_null() && required {
                        return Err("a null element".into());
                    }
                    if !element.is_null() {
                        of_kind(element, kind)?;
                    }
                } else {
                    // An element's fields: the element itself stands in for its parent.
                    visit(
                        &json!({"e": element}),
                        &[&["e"], rest].concat(),
                        kind,
                        required,
                    )?;
                }
            }
            Ok(())
        }
    }
}

fn of_kind(value: &Value, kind: Kind) -> Result<(), String> {
    let fits = match kind {
        Kind::Str => value.is_string(),
        Kind::DecimalStr => value.as_str().is_some_and(|s| s.parse::<i64>().is_ok()),
        Kind::Int => value.is_i64() || value.is_u64(),
        Kind::Num => value.is_number(),
        Kind::Text => value.is_string() || value.is_number(),
        Kind::Arr => value.is_array(),
        Kind::Obj => value.is_object(),
    };
    if fits {
        Ok(())
    } else {
        Err(format!("{value} is not {kind:?}"))
    }
}

// ---------------------------------------------------------------------------------------------
// Apps
// ---------------------------------------------------------------------------------------------

/// An item as an app holds it.
#[derive(Clone, Debug, Default)]
struct Article {
    /// The app's reference to its feed.
    feed: String,
    /// The title as the app shows it.
    title: String,
    /// The link the app opens.
    link: Option<String>,
    /// The enclosures the app keeps (their URLs).
    enclosures: Vec<String>,
    read: bool,
    starred: bool,
}

/// What the app's user does to an item.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mark {
    Read,
    Unread,
    Star,
    Unstar,
}

/// One app's sync code, replayed.
trait App: Sized {
    /// The app in messages.
    const NAME: &'static str;

    /// Whether the app downloads only unread and starred items (Capy Reader): an item read
    /// elsewhere before its first sync is never in it.
    const UNREAD_AND_STARRED_ONLY: bool = false;

    /// Signs in as the app does. A second call is a second device.
    async fn connect(w: &World) -> Result<Self, String>;

    /// One sync as the app runs it. An error is what makes the app's sync stop.
    async fn sync(&mut self) -> Result<(), String>;

    /// The items the app holds, by its own id.
    fn articles(&self) -> &BTreeMap<String, Article>;

    /// Marks an item (by the app's id) as the app does when its user does.
    async fn mark(&mut self, id: &str, mark: Mark) -> Result<(), String>;

    /// Subscribes with the app's own call; `Ok(false)` when the app has none.
    async fn subscribe(&mut self, w: &World, feed: &Feed) -> Result<bool, String>;

    /// Every per-feed call the app offers, on the subscription to `feed` (refresh one feed,
    /// rename, move, mark as read, unsubscribe, rename and delete its folder), each checked
    /// against the server; the calls that failed.
    async fn feed_calls(&mut self, w: &World, feed: &Feed) -> Vec<String>;
}

/// The titles an app holds, with the full-width `＆ ＜ ＞` FreshRSS (and tidings) send in
/// titles read as `& < >`: apps show those whole whether they read titles as text or as HTML.
fn shown_titles<A: App>(app: &A) -> BTreeSet<String> {
    app.articles()
        .values()
        .map(|a| {
            a.title
                .replace('＆', "&")
                .replace('＜', "<")
                .replace('＞', ">")
        })
        .collect()
}

/// The app holds every item of `feeds`, titles intact.
fn assert_has_all<A: App>(app: &A, feeds: &[&Feed], when: &str) {
    let shown = shown_titles(app);
    let missing: Vec<String> = feeds
        .iter()
        .flat_map(|f| f.titles())
        .filter(|t| !shown.contains(t))
        .collect();
    assert!(
        missing.is_empty(),
        "{}, {when}: {} items missing: {missing:?}\n(it holds {} items: {shown:?})",
        A::NAME,
        missing.len(),
        shown.len()
    );
}

/// The app's id of the item titled `title`.
fn id_of<A: App>(app: &A, title: &str) -> String {
    app.articles()
        .iter()
        .find(|(_, a)| a.title == title)
        .unwrap_or_else(|| panic!("{}: no item {title:?}", A::NAME))
        .0
        .clone()
}

fn article<'a, A: App>(app: &'a A, title: &str) -> &'a Article {
    &app.articles()[&id_of(app, title)]
}

/// Text as Android's `Html.fromHtml` (legacy mode) turns it into a string, which Read You
/// shows titles through: tags dropped, entities decoded, runs of white space made one.
fn android_html_text(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let tag_like = after
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '!' || c == '?');
        match (tag_like, after.find('>')) {
            (true, Some(end)) => rest = &after[end + 1..],
            (true, None) => rest = "",
            (false, _) => {
                out.push('<');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    let decoded = decode_entities(&out);
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Decodes HTML character references (named ones of XML, and numeric ones).
fn decode_entities(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let reference = after
            .find(';')
            .map(|end| (&after[..end], &after[end + 1..]));
        let decoded = reference.and_then(|(name, tail)| {
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" | "#39" => Some('\''),
                n if n.starts_with("#x") || n.starts_with("#X") => u32::from_str_radix(&n[2..], 16)
                    .ok()
                    .and_then(char::from_u32),
                n if n.starts_with('#') => n[1..].parse().ok().and_then(char::from_u32),
                _ => None,
            }?;
            Some((c, tail))
        });
        match decoded {
            Some((c, tail)) => {
                out.push(c);
                rest = tail;
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The Google Reader long item id.
fn long_id(id: i64) -> String {
    format!("tag:google.com,2005:reader/item/{:016x}", id as u64)
}

/// The number in a long item id's hex tail.
fn long_id_value(id: &str) -> Option<i64> {
    let hex = id.rsplit('/').next()?;
    u64::from_str_radix(hex, 16).ok().map(|v| v as i64)
}

/// ann's subscription to a feed as the server has it, with its group's name.
type Found<'a> = Option<&'a (tidings_store::Subscription, String)>;

/// A check on the server's view after a call: what is wrong, if anything.
type FeedCheck = Box<dyn Fn(Found<'_>) -> Option<String>>;

/// A per-feed call's outcome and the server's view of ann's subscription after it, checked:
/// the failures, each naming the feed and the call.
async fn checked(
    w: &World,
    url: &str,
    call: &str,
    result: Result<(), String>,
    check: impl Fn(Found<'_>) -> Option<String>,
) -> Vec<String> {
    let mut failures: Vec<String> = result.err().into_iter().collect();
    let found = w.subscription(url).await;
    failures.extend(check(found.as_ref()));
    failures
        .into_iter()
        .map(|f| format!("{url}: {call}: {f}"))
        .collect()
}

/// Checks after a rename: the subscription has the title.
fn titled(title: &'static str) -> impl Fn(Found<'_>) -> Option<String> {
    move |found| match found {
        None => Some("the subscription is gone".into()),
        Some((s, _)) if s.custom_title.as_deref() == Some(title) => None,
        Some((s, _)) => Some(format!("its title is {:?}", s.custom_title)),
    }
}

/// Checks after a move: the subscription is in the group.
fn in_group(group: &'static str) -> impl Fn(Found<'_>) -> Option<String> {
    move |found| match found {
        None => Some("the subscription is gone".into()),
        Some((_, g)) if g == group => None,
        Some((_, g)) => Some(format!("it is in group {g:?}, not {group:?}")),
    }
}

/// Checks after unsubscribing: no subscription.
fn gone(found: Found<'_>) -> Option<String> {
    found.map(|_| "still subscribed".to_string())
}

/// Checks after marking a feed read: no unread item.
fn all_read(found: Found<'_>) -> Option<String> {
    match found {
        None => Some("the subscription is gone".into()),
        Some((s, _)) if s.unread_count == 0 => None,
        Some((s, _)) => Some(format!("{} items still unread", s.unread_count)),
    }
}

// ---------------------------------------------------------------------------------------------
// The checks, the same for every app
// ---------------------------------------------------------------------------------------------

/// Every check runs one app through a story and looks at what it holds.
mod check {
    use super::*;

    async fn connect<A: App>(w: &World) -> A {
        A::connect(w)
            .await
            .unwrap_or_else(|e| panic!("{} cannot sign in: {e}", A::NAME))
    }

    async fn sync<A: App>(app: &mut A, when: &str) {
        app.sync()
            .await
            .unwrap_or_else(|e| panic!("{}'s {when} fails: {e}", A::NAME));
    }

    /// Lets the clock pass a second: crawl times and `ot` are in seconds.
    async fn tick() {
        tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    }

    fn now() -> i64 {
        chrono::Utc::now().timestamp()
    }

    /// First sync of a news site with more than a Fever page of items, a WordPress blog, a
    /// Japanese feed and a podcast; then new items and a later sync.
    pub async fn every_item<A: App>(db: &tidings_testkit::TestDb) {
        let w = World::new(db).await;
        let mut news = news_feed(w.t0, 70);
        let (blog, ja, cast) = (
            blog_feed(w.t0, "/blog/feed/"),
            japanese_feed(w.t0),
            podcast_feed(w.t0),
        );
        for feed in [&news, &blog, &ja, &cast] {
            w.follow(w.user_id, feed).await;
        }
        let mut app = connect::<A>(&w).await;
        sync(&mut app, "first sync").await;
        assert_has_all(&app, &[&news, &blog, &ja, &cast], "after its first sync");
        tick().await;
        for i in 0..3 {
            news.add(&format!("Breaking {i}"), now());
        }
        w.refresh(&news).await;
        sync(&mut app, "second sync").await;
        assert_has_all(&app, &[&news, &blog, &ja, &cast], "after a later sync");
        // Another device's first sync, with everything already there.
        let mut second = connect::<A>(&w).await;
        sync(&mut second, "first sync on a second device").await;
        assert_has_all(&second, &[&news, &blog, &ja, &cast], "on a second device");
    }

    /// An item fetched after the app's last sync but published before it.
    pub async fn late_arrival<A: App>(db: &tidings_testkit::TestDb) {
        let w = World::new(db).await;
        let news = news_feed(w.t0, 10);
        let mut blog = blog_feed(w.t0, "/blog/feed/");
        w.follow(w.user_id, &news).await;
        w.follow(w.user_id, &blog).await;
        let mut app = connect::<A>(&w).await;
        sync(&mut app, "first sync").await;
        tick().await;
        // Published a minute before the world began, so before the sync; fetched now.
        blog.add("Late garden note", w.t0 - 60);
        w.refresh(&blog).await;
        sync(&mut app, "sync after the late arrival").await;
        assert_has_all(
            &app,
            &[&news, &blog],
            "after the sync that follows a late arrival",
        );
        tick().await;
        sync(&mut app, "next sync").await;
        assert_has_all(&app, &[&news, &blog], "after one more sync");
    }

    /// A late arrival read on another device before the app's next sync: it must still
    /// reach the app, as read.
    pub async fn late_arrival_read_elsewhere<A: App>(db: &tidings_testkit::TestDb) {
        let w = World::new(db).await;
        let news = news_feed(w.t0, 10);
        let mut blog = blog_feed(w.t0, "/blog/feed/");
        w.follow(w.user_id, &news).await;
        w.follow(w.user_id, &blog).await;
        let mut app = connect::<A>(&w).await;
        sync(&mut app, "first sync").await;
        tick().await;
        blog.add("Late garden note", w.t0 - 60);
        w.refresh(&blog).await;
        w.web_mark("Late garden note", json!({"is_read": true}))
            .await;
        sync(&mut app, "sync after the late arrival").await;
        assert_has_all(&app, &[&news, &blog], "after a late arrival read elsewhere");
        assert!(
            article(&app, "Late garden note").read,
            "{}: shown unread",
            A::NAME
        );
    }

    /// ann subscribes to a feed zed has followed for a while: its backlog must reach ann's app.
    pub async fn shared_feed_backlog<A: App>(db: &tidings_testkit::TestDb) {
        shared_backlog::<A>(db, false).await;
    }

    /// The same, with one backlog item read on the web before the app's next sync.
    pub async fn shared_feed_backlog_read_elsewhere<A: App>(db: &tidings_testkit::TestDb) {
        shared_backlog::<A>(db, true).await;
    }

    async fn shared_backlog<A: App>(db: &tidings_testkit::TestDb, read_one: bool) {
        let w = World::new(db).await;
        let zed = w.app.user("zed", false).await;
        let shared = Feed::new("/shared/rss.xml", "Shared Stories", "Shared story", 6, w.t0);
        w.follow(zed, &shared).await;
        tick().await;
        let news = news_feed(w.t0, 10);
        w.follow(w.user_id, &news).await;
        let mut app = connect::<A>(&w).await;
        sync(&mut app, "first sync").await;
        tick().await;
        let subscribed = app
            .subscribe(&w, &shared)
            .await
            .unwrap_or_else(|e| panic!("{} cannot subscribe: {e}", A::NAME));
        if !subscribed {
            w.web_subscribe(&w.url(&shared)).await;
        }
        if read_one {
            w.web_mark("Shared story 4", json!({"is_read": true})).await;
        }
        sync(&mut app, "sync after subscribing").await;
        assert_has_all(
            &app,
            &[&news, &shared],
            "after subscribing to a followed feed",
        );
        if read_one {
            assert!(
                article(&app, "Shared story 4").read,
                "{}: shown unread",
                A::NAME
            );
        }
    }

    /// ann subscribes on the web to a new feed while the app is in use.
    pub async fn subscribed_elsewhere<A: App>(db: &tidings_testkit::TestDb) {
        let w = World::new(db).await;
        let news = news_feed(w.t0, 10);
        let blog = blog_feed(w.t0, "/blog/feed/");
        w.follow(w.user_id, &news).await;
        let mut app = connect::<A>(&w).await;
        sync(&mut app, "first sync").await;
        sync(&mut app, "second sync").await;
        w.put(&blog);
        w.web_subscribe(&w.url(&blog)).await;
        sync(&mut app, "sync after subscribing on the web").await;
        assert_has_all(&app, &[&news, &blog], "after a subscription on the web");
    }

    /// Titles with `&` and `<` show whole.
    pub async fn titles<A: App>(db: &tidings_testkit::TestDb) {
        let w = World::new(db).await;
        let mut feed = Feed::new("/special.xml", "Specials", "Plain title", 1, w.t0);
        for (n, title) in ["Item & <friends>", "Tom & Jerry", "a < b > c"]
            .into_iter()
            .enumerate()
        {
            feed.add(title, w.t0 - 7200 - n as i64 * 60);
        }
        w.follow(w.user_id, &feed).await;
        let mut app = connect::<A>(&w).await;
        sync(&mut app, "first sync").await;
        assert_has_all(&app, &[&feed], "titles with & and <");
    }

    /// An item without a link among others.
    pub async fn item_without_link<A: App>(db: &tidings_testkit::TestDb) {
        let w = World::new(db).await;
        let mut feed = Feed::new("/notes.xml", "Linkless Notes", "Note", 3, w.t0);
        feed.add("A note without a link", w.t0 - 90).link = false;
        let news = news_feed(w.t0, 3);
        w.follow(w.user_id, &feed).await;
        w.follow(w.user_id, &news).await;
        let mut app = connect::<A>(&w).await;
        sync(&mut app, "first sync").await;
        assert_has_all(&app, &[&feed, &news], "with an item without a link");
        assert!(
            article(&app, "Note 0")
                .link
                .as_deref()
                .is_some_and(|l| l.contains("/posts/"))
        );
    }

    /// A podcast's enclosures reach the app (for apps that read them).
    pub async fn enclosures<A: App>(db: &tidings_testkit::TestDb) {
        let w = World::new(db).await;
        let cast = podcast_feed(w.t0);
        w.follow(w.user_id, &cast).await;
        let mut app = connect::<A>(&w).await;
        sync(&mut app, "first sync").await;
        assert_has_all(&app, &[&cast], "podcast");
        for entry in &cast.entries {
            let (path, _, _) = entry.enclosure.as_ref().unwrap();
            let want = w.site.url(path);
            let got = &article(&app, &entry.title).enclosures;
            assert!(
                got.contains(&want),
                "{}: {:?} has enclosures {got:?}, not {want}",
                A::NAME,
                entry.title
            );
        }
    }

    /// The app's marks reach the server (a second device of the same app sees them) and
    /// marks made elsewhere reach the app.
    pub async fn marks<A: App>(db: &tidings_testkit::TestDb) {
        let w = World::new(db).await;
        let news = news_feed(w.t0, 6);
        w.follow(w.user_id, &news).await;
        let mut app = connect::<A>(&w).await;
        sync(&mut app, "first sync").await;
        let ids: Vec<String> = (0..6).map(|i| id_of(&app, &format!("News {i}"))).collect();
        let marks = [
            (0, Mark::Read),
            (1, Mark::Star),
            (2, Mark::Read),
            (2, Mark::Unread),
            (5, Mark::Star),
            (5, Mark::Unstar),
        ];
        for (n, mark) in marks {
            app.mark(&ids[n], mark)
                .await
                .unwrap_or_else(|e| panic!("{}: {mark:?}: {e}", A::NAME));
        }
        sync(&mut app, "sync after marking").await;
        let mut second = connect::<A>(&w).await;
        sync(&mut second, "first sync on a second device").await;
        let state = |app: &A, title: &str| match app.articles().values().find(|a| a.title == title)
        {
            Some(a) => (a.read, a.starred),
            // Such an app never downloads an item read before it first synced.
            None if A::UNREAD_AND_STARRED_ONLY => (true, false),
            None => panic!("{}: no item {title:?}", A::NAME),
        };
        let seen: Vec<(bool, bool)> = (0..6)
            .map(|i| state(&second, &format!("News {i}")))
            .collect();
        let want = [
            (true, false),
            (false, true),
            (false, false),
            (false, false),
            (false, false),
            (false, false),
        ];
        assert_eq!(
            seen,
            want,
            "{}: a second device sees the first's marks",
            A::NAME
        );
        // Marks made on the web reach the app at its next sync.
        w.web_mark("News 3", json!({"is_read": true})).await;
        w.web_mark("News 4", json!({"is_starred": true})).await;
        sync(&mut app, "sync after marks on the web").await;
        assert_eq!(
            state(&app, "News 3"),
            (true, false),
            "{}: read on the web",
            A::NAME
        );
        assert_eq!(
            state(&app, "News 4"),
            (false, true),
            "{}: starred on the web",
            A::NAME
        );
    }

    /// Feeds whose URLs end with `/feed/` or hold `&`, `+` or `%23`: the app subscribes to
    /// them (its own call, else the web), gets their items, and every per-feed call it offers
    /// works on them.
    pub async fn feed_urls<A: App>(db: &tidings_testkit::TestDb) {
        let w = World::new(db).await;
        let feeds = [
            blog_feed(w.t0, "/wp/feed/"),
            Feed::new(
                "/index.php?format=feed&type=rss",
                "Joomla News",
                "Joomla story",
                3,
                w.t0,
            ),
            Feed::new("/c++/feed.xml", "C++ Weekly", "C++ tip", 3, w.t0),
            Feed::new("/tags/c%23/rss", "Tagged C#", "C# story", 3, w.t0),
        ];
        let mut app = connect::<A>(&w).await;
        let mut failures = Vec::new();
        for feed in &feeds {
            w.put(feed);
            match app.subscribe(&w, feed).await {
                Ok(true) => {}
                Ok(false) => w.web_subscribe(&w.url(feed)).await,
                Err(e) => {
                    failures.push(format!("{}: subscribe: {e}", w.url(feed)));
                    if w.subscription(&w.url(feed)).await.is_none() {
                        w.web_subscribe(&w.url(feed)).await;
                    }
                }
            }
        }
        sync(&mut app, "sync after subscribing").await;
        let all: Vec<&Feed> = feeds.iter().collect();
        assert_has_all(&app, &all, "feeds with /feed/, &, + and # in their URLs");
        for feed in &feeds {
            failures.extend(app.feed_calls(&w, feed).await);
        }
        assert!(failures.is_empty(), "{}: {failures:#?}", A::NAME);
    }
}

/// The checks of one app, each on both engines.
macro_rules! checks {
    ($app:ty: $($check:ident),* $(,)?) => {
        $(
            on_both_engines!($check, |db| {
                check::$check::<$app>(db).await;
            });
        )*
    };
}

const READING_LIST: &str = "user/-/state/com.google/reading-list";
const READ: &str = "user/-/state/com.google/read";
const STARRED: &str = "user/-/state/com.google/starred";

/// A time `days` before now, in Unix seconds.
fn days_ago(days: i64) -> i64 {
    chrono::Utc::now().timestamp() - days * 86_400
}

/// The server's spelling of a feed URL, to find a subscription by it.
fn same_url(a: &str, b: &str) -> bool {
    tidings_feed::normalize_feed_url_text(a) == tidings_feed::normalize_feed_url_text(b)
}

/// A JSON string or number as text (Gson and Moshi read either into a `String`).
fn text_of(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_string)
}

/// The app's key of the feed at `url`, in its map of feed URLs by key.
fn key_of_url(feeds: &BTreeMap<String, String>, url: &str) -> Option<String> {
    feeds
        .iter()
        .find(|(_, u)| same_url(u, url))
        .map(|(key, _)| key.clone())
}

/// A `subscription/edit` as NetNewsWire writes it (the form body without `T`), and what the
/// server must show after it.
struct FeedEdit {
    call: &'static str,
    body: String,
    check: FeedCheck,
}

/// NetNewsWire's Reader API account, from Ranchero-Software/NetNewsWire,
/// Modules/Account/Sources/Account/ReaderAPI/: ReaderAPICaller.swift (every request),
/// ReaderAPIAccountDelegate.swift (the order of a sync: refreshAll, refreshMissingArticles,
/// createFeed, renameFeed, moveFeed, removeFeed, renameFolder, removeFolder),
/// URLRequest+ReaderAPI.swift (the `GoogleLogin auth=` header), and its Swift `Codable`
/// decoders ReaderAPIEntry.swift, ReaderAPISubscription.swift, ReaderAPITag.swift and
/// ReaderAPIUnreadEntry.swift, where a `String` must be a JSON string and an `Int` an integer.
mod netnewswire {
    use super::*;

    /// `tag/list`.
    const TAGS: Spec = &[
        ("tags", Kind::Arr, true),
        ("tags[].id", Kind::Str, true),
        ("tags[].type", Kind::Str, false),
    ];
    /// `subscription/list`: `categories` is required, each with a string `id` and `label`.
    const SUBSCRIPTIONS: Spec = &[
        ("subscriptions", Kind::Arr, true),
        ("subscriptions[].id", Kind::Str, true),
        ("subscriptions[].title", Kind::Str, false),
        ("subscriptions[].categories", Kind::Arr, true),
        ("subscriptions[].categories[].id", Kind::Str, true),
        ("subscriptions[].categories[].label", Kind::Str, true),
        ("subscriptions[].url", Kind::Str, false),
        ("subscriptions[].htmlUrl", Kind::Str, false),
        ("subscriptions[].iconUrl", Kind::Str, false),
    ];
    /// `stream/items/ids`: the ids must be decimal (the app writes them back as 16 hex digits).
    const ITEM_IDS: Spec = &[
        ("itemRefs", Kind::Arr, false),
        ("itemRefs[].id", Kind::DecimalStr, false),
        ("continuation", Kind::Str, false),
    ];
    /// `stream/items/contents`: the envelope's `id` and integer `updated` are required; each
    /// item needs a string `id`, `summary` and `origin` objects and a `categories` array.
    const CONTENTS: Spec = &[
        ("id", Kind::Str, true),
        ("updated", Kind::Int, true),
        ("items", Kind::Arr, true),
        ("items[].id", Kind::Str, true),
        ("items[].title", Kind::Str, false),
        ("items[].author", Kind::Str, false),
        ("items[].published", Kind::Num, false),
        ("items[].crawlTimeMsec", Kind::Str, false),
        ("items[].timestampUsec", Kind::Str, false),
        ("items[].summary", Kind::Obj, true),
        ("items[].summary.content", Kind::Str, false),
        ("items[].alternate", Kind::Arr, false),
        ("items[].alternate[].href", Kind::Str, false),
        ("items[].categories", Kind::Arr, true),
        ("items[].categories[]", Kind::Str, true),
        ("items[].origin", Kind::Obj, true),
        ("items[].origin.streamId", Kind::Str, false),
        ("items[].origin.title", Kind::Str, false),
    ];
    /// `subscription/quickadd`.
    const QUICKADD: Spec = &[
        ("numResults", Kind::Int, true),
        ("error", Kind::Str, false),
        ("streamId", Kind::Str, false),
    ];

    pub struct NetNewsWire {
        base: String,
        auth: String,
        token: Option<String>,
        /// `lastArticleFetchStartTime`: the `Date` of the last full listing's first page.
        last_fetch: Option<i64>,
        /// Subscriptions by id (`feedID`, also its `externalID`): URL and first folder.
        feeds: BTreeMap<String, (String, Option<String>)>,
        /// Statuses (read, starred) by article id, kept apart from the articles as the app does.
        statuses: BTreeMap<String, (bool, bool)>,
        articles: BTreeMap<String, Article>,
        /// Marks not sent yet: the app sends them at the start of its next sync.
        pending: Vec<(String, Mark)>,
        /// `ETag` and `Last-Modified` of the last `tag/list` and `subscription/list`, sent
        /// back as `If-None-Match` and `If-Modified-Since` (HTTPConditionalGetInfo.swift in
        /// Modules/RSWeb): a `304` leaves the folders or the subscriptions as they were.
        conditional: BTreeMap<&'static str, (Option<String>, Option<String>)>,
    }

    impl NetNewsWire {
        fn headers(&self) -> Vec<(&'static str, String)> {
            vec![("authorization", format!("GoogleLogin auth={}", self.auth))]
        }

        async fn get(
            &self,
            endpoint: &str,
            query: &[(&str, &str)],
            spec: Spec,
        ) -> Result<(Value, Option<String>), String> {
            let url = format!("{}{endpoint}?{}", self.base, nnw_query(query));
            let answer = send("GET", &url, &self.headers(), None).await;
            let value = answer.json(&url)?;
            conform(&value, spec, endpoint)?;
            Ok((value, answer.date))
        }

        /// A conditional GET of a list with `?output=json`; `None` when it is unchanged.
        async fn get_if_changed(
            &mut self,
            endpoint: &'static str,
            spec: Spec,
        ) -> Result<Option<Value>, String> {
            let url = format!("{}{endpoint}?output=json", self.base);
            let mut headers = self.headers();
            if let Some((etag, modified)) = self.conditional.get(endpoint) {
                headers.extend(modified.clone().map(|m| ("if-modified-since", m)));
                headers.extend(etag.clone().map(|e| ("if-none-match", e)));
            }
            let answer = send("GET", &url, &headers, None).await;
            if answer.status == 304 {
                return Ok(None);
            }
            let value = answer.json(&url)?;
            conform(&value, spec, endpoint)?;
            if answer.etag.is_some() || answer.last_modified.is_some() {
                self.conditional
                    .insert(endpoint, (answer.etag, answer.last_modified));
            }
            Ok(Some(value))
        }

        /// The `T` token, asked for once and kept.
        async fn token(&mut self) -> Result<String, String> {
            if let Some(token) = &self.token {
                return Ok(token.clone());
            }
            let url = format!("{}/reader/api/0/token", self.base);
            let answer = send("GET", &url, &self.headers(), None).await;
            if !answer.ok() {
                return Err(format!("token: HTTP {}", answer.status));
            }
            let token = answer
                .text
                .strip_suffix('\n')
                .unwrap_or(&answer.text)
                .to_string();
            self.token = Some(token.clone());
            Ok(token)
        }

        /// A form POST whose body the app writes by hand: `T=<token>&` then `fields` as given.
        async fn post(&mut self, endpoint: &str, fields: &str) -> Result<Answer, String> {
            let token = self.token().await?;
            let mut headers = self.headers();
            headers.push(("content-type", "application/x-www-form-urlencoded".into()));
            let url = format!("{}{endpoint}", self.base);
            let answer = send("POST", &url, &headers, Some(format!("T={token}&{fields}"))).await;
            if answer.ok() {
                Ok(answer)
            } else {
                Err(format!(
                    "{endpoint} {fields}: HTTP {}: {}",
                    answer.status, answer.text
                ))
            }
        }

        /// `retrieveItemIDs`: 1,000 ids a page, following `c`; with the first page's `Date`
        /// once the listing is complete. An empty first page ends it at once.
        async fn item_ids(
            &self,
            query: &[(&str, &str)],
        ) -> Result<(Vec<String>, Option<String>), String> {
            let mut ids = Vec::new();
            let mut date = None;
            let mut continuation: Option<String> = None;
            loop {
                let mut q: Vec<(&str, &str)> = query.to_vec();
                if let Some(c) = &continuation {
                    q.push(("c", c));
                }
                let (page, d) = self
                    .get("/reader/api/0/stream/items/ids", &q, ITEM_IDS)
                    .await?;
                let refs = page["itemRefs"].as_array().cloned().unwrap_or_default();
                if continuation.is_none() {
                    if refs.is_empty() {
                        return Ok((ids, None));
                    }
                    date = d;
                }
                ids.extend(
                    refs.iter()
                        .filter_map(|r| r["id"].as_str().map(str::to_string)),
                );
                match page["continuation"].as_str() {
                    Some(c) => continuation = Some(c.to_string()),
                    None => return Ok((ids, date)),
                }
            }
        }

        fn set_status(&mut self, id: &str, read: Option<bool>, starred: Option<bool>) {
            let status = self
                .statuses
                .entry(id.to_string())
                .or_insert((false, false));
            status.0 = read.unwrap_or(status.0);
            status.1 = starred.unwrap_or(status.1);
            let (r, s) = *status;
            if let Some(article) = self.articles.get_mut(id) {
                article.read = r;
                article.starred = s;
            }
        }

        /// `refreshMissingArticles`: statuses without an article, 150 a request.
        async fn fetch_missing(&mut self) -> Result<(), String> {
            let missing: Vec<String> = self
                .statuses
                .keys()
                .filter(|id| !self.articles.contains_key(*id))
                .cloned()
                .collect();
            for chunk in missing.chunks(150) {
                let ids: Vec<String> = chunk
                    .iter()
                    .filter_map(|id| id.parse::<i64>().ok())
                    .map(|id| format!("i={}", long_id(id)))
                    .collect();
                let answer = self
                    .post(
                        "/reader/api/0/stream/items/contents",
                        &format!("output=json&{}", ids.join("&")),
                    )
                    .await?;
                let value = answer.json("stream/items/contents")?;
                conform(&value, CONTENTS, "stream/items/contents")?;
                for item in value["items"].as_array().unwrap() {
                    // An entry without a stream, or of a feed the account lacks, is dropped.
                    let Some(stream) = item["origin"]["streamId"].as_str() else {
                        continue;
                    };
                    if !self.feeds.contains_key(stream) {
                        continue;
                    }
                    let id_text = item["id"].as_str().unwrap();
                    let id = long_id_value(id_text).map_or(id_text.to_string(), |v| v.to_string());
                    let (read, starred) = self.statuses.get(&id).copied().unwrap_or((true, false));
                    self.articles.insert(
                        id,
                        Article {
                            feed: stream.to_string(),
                            title: decode_entities(item["title"].as_str().unwrap_or("")),
                            link: item["alternate"][0]["href"].as_str().map(str::to_string),
                            enclosures: Vec::new(),
                            read,
                            starred,
                        },
                    );
                }
            }
            Ok(())
        }

        /// `sendArticleStatus`: the last mark of each kind per article, one `edit-tag` per kind.
        async fn send_statuses(&mut self) -> Result<(), String> {
            let mut last: BTreeMap<(String, bool), Mark> = BTreeMap::new();
            for (id, mark) in std::mem::take(&mut self.pending) {
                let is_star = matches!(mark, Mark::Star | Mark::Unstar);
                last.insert((id, is_star), mark);
            }
            for (kind, tag, action) in [
                (Mark::Unread, READ, "r"),
                (Mark::Read, READ, "a"),
                (Mark::Star, STARRED, "a"),
                (Mark::Unstar, STARRED, "r"),
            ] {
                let ids: Vec<String> = last
                    .iter()
                    .filter(|(_, m)| **m == kind)
                    .filter_map(|((id, _), _)| id.parse::<i64>().ok())
                    .map(|id| format!("i={}", long_id(id)))
                    .collect();
                for chunk in ids.chunks(1000) {
                    self.post(
                        "/reader/api/0/edit-tag",
                        &format!("{}&{action}={tag}", chunk.join("&")),
                    )
                    .await?;
                }
            }
            Ok(())
        }

        /// `refreshAccount`: folders, then subscriptions, each skipped when unchanged.
        async fn refresh_feeds(&mut self) -> Result<(), String> {
            self.get_if_changed("/reader/api/0/tag/list", TAGS).await?;
            let list = self
                .get_if_changed("/reader/api/0/subscription/list", SUBSCRIPTIONS)
                .await?;
            let Some(list) = list else { return Ok(()) };
            self.feeds = list["subscriptions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    let url = s["url"].as_str().unwrap_or("").to_string();
                    let folder = s["categories"][0]["label"].as_str().map(str::to_string);
                    (s["id"].as_str().unwrap().to_string(), (url, folder))
                })
                .collect();
            Ok(())
        }

        /// The subscription id of a feed URL.
        fn feed_id(&self, url: &str) -> Option<String> {
            self.feeds
                .iter()
                .find(|(_, (u, _))| same_url(u, url))
                .map(|(id, _)| id.clone())
        }
    }

    impl App for NetNewsWire {
        const NAME: &'static str = "NetNewsWire";

        async fn connect(w: &World) -> Result<Self, String> {
            // ClientLogin: a form POST of Email and Passwd; the answer's lines are split at
            // `=` and only lines with exactly two parts are kept.
            let base = w.greader_base();
            let body = form(&[("Email", "ann"), ("Passwd", &w.key)]);
            let headers = [(
                "content-type",
                "application/x-www-form-urlencoded".to_string(),
            )];
            let answer = send(
                "POST",
                &format!("{base}/accounts/ClientLogin"),
                &headers,
                Some(body),
            )
            .await;
            if !answer.ok() {
                return Err(format!("ClientLogin: HTTP {}", answer.status));
            }
            let auth = answer
                .text
                .lines()
                .filter_map(|l| {
                    let parts: Vec<&str> = l.split('=').collect();
                    (parts.len() == 2 && parts[0] == "Auth").then(|| parts[1].to_string())
                })
                .next()
                .ok_or_else(|| format!("no usable Auth line in {:?}", answer.text))?;
            Ok(NetNewsWire {
                base,
                auth,
                token: None,
                last_fetch: None,
                feeds: BTreeMap::new(),
                statuses: BTreeMap::new(),
                articles: BTreeMap::new(),
                pending: Vec::new(),
                conditional: BTreeMap::new(),
            })
        }

        /// `refreshAll`.
        async fn sync(&mut self) -> Result<(), String> {
            self.refresh_feeds().await?;
            // A failed status send does not stop the sync.
            let _ = self.send_statuses().await;
            // Every id since the last listing began (three months back the first time).
            let since = self.last_fetch.unwrap_or_else(|| days_ago(90)).to_string();
            let (all, date) = self
                .item_ids(&[
                    ("n", "1000"),
                    ("output", "json"),
                    ("ot", &since),
                    ("s", READING_LIST),
                ])
                .await?;
            if let Some(date) = date.and_then(|d| chrono::DateTime::parse_from_rfc2822(&d).ok()) {
                self.last_fetch = Some(date.timestamp());
            }
            // They are marked read, then the unread and starred lists correct that.
            for id in &all {
                self.set_status(id, Some(true), None);
            }
            let unread = self
                .item_ids(&[
                    ("n", "1000"),
                    ("output", "json"),
                    ("s", READING_LIST),
                    ("xt", READ),
                ])
                .await;
            if let Ok((unread, _)) = unread {
                let unread: BTreeSet<String> = unread.into_iter().collect();
                let known: Vec<String> = self.statuses.keys().cloned().collect();
                for id in known.iter().chain(unread.iter()) {
                    self.set_status(id, Some(!unread.contains(id)), None);
                }
            }
            let starred = self
                .item_ids(&[("n", "1000"), ("output", "json"), ("s", STARRED)])
                .await;
            if let Ok((starred, _)) = starred {
                let starred: BTreeSet<String> = starred.into_iter().collect();
                let known: Vec<String> = self.statuses.keys().cloned().collect();
                for id in known.iter().chain(starred.iter()) {
                    self.set_status(id, None, Some(starred.contains(id)));
                }
            }
            self.fetch_missing().await
        }

        fn articles(&self) -> &BTreeMap<String, Article> {
            &self.articles
        }

        async fn mark(&mut self, id: &str, mark: Mark) -> Result<(), String> {
            match mark {
                Mark::Read | Mark::Unread => self.set_status(id, Some(mark == Mark::Read), None),
                Mark::Star | Mark::Unstar => self.set_status(id, None, Some(mark == Mark::Star)),
            }
            self.pending.push((id.to_string(), mark));
            Ok(())
        }

        /// `createFeed`: quickadd, then the subscription list to find it, then its first
        /// download (the feed's ids of three months, then the missing articles).
        async fn subscribe(&mut self, w: &World, feed: &Feed) -> Result<bool, String> {
            let url = w.url(feed);
            let answer = self
                .post(
                    "/reader/api/0/subscription/quickadd",
                    &format!("quickadd={}", nnw_path(&url)),
                )
                .await?;
            let value = answer.json("quickadd")?;
            conform(&value, QUICKADD, "quickadd")?;
            if value["numResults"] == 0 {
                return Err(format!("quickadd found nothing: {value}"));
            }
            let stream = value["streamId"].as_str().unwrap_or("").to_string();
            self.refresh_feeds().await?;
            if !self.feeds.contains_key(&stream) {
                return Err(format!("{stream} is not in subscription/list"));
            }
            let since = days_ago(90).to_string();
            let (ids, _) = self
                .item_ids(&[
                    ("n", "1000"),
                    ("output", "json"),
                    ("ot", &since),
                    ("s", &stream),
                ])
                .await
                .map_err(|e| format!("the feed's first download: {e}"))?;
            for id in ids {
                self.statuses.entry(id).or_insert((false, false));
            }
            self.fetch_missing().await?;
            Ok(true)
        }

        async fn feed_calls(&mut self, w: &World, feed: &Feed) -> Vec<String> {
            let url = w.url(feed);
            let Some(id) = self.feed_id(&url) else {
                return vec![format!("{url}: not in the app's subscription list")];
            };
            // The subscription id goes into the body as it is; names through encodeForURLPath.
            let label = |name: &str| format!("user/-/label/{}", nnw_path(name));
            let edits = [
                FeedEdit {
                    call: "renameFeed",
                    body: format!("s={id}&ac=edit&t={}", nnw_path("Renamed & kept")),
                    check: Box::new(titled("Renamed & kept")),
                },
                FeedEdit {
                    call: "addFeed to a folder",
                    body: format!("s={id}&ac=edit&a={}", label("Reading")),
                    check: Box::new(in_group("Reading")),
                },
                FeedEdit {
                    call: "moveFeed",
                    body: format!("s={id}&ac=edit&r={}&a={}", label("Reading"), label("Later")),
                    check: Box::new(in_group("Later")),
                },
            ];
            let mut failures = Vec::new();
            for edit in edits {
                let result = self
                    .post("/reader/api/0/subscription/edit", &edit.body)
                    .await;
                failures.extend(checked(w, &url, edit.call, result.map(drop), &*edit.check).await);
            }
            // renameFolder, then removeFeed, then removeFolder.
            let rename = format!("s={}&dest={}", label("Later"), label("Someday"));
            failures.extend(
                checked(
                    w,
                    &url,
                    "renameFolder",
                    self.post("/reader/api/0/rename-tag", &rename)
                        .await
                        .map(drop),
                    in_group("Someday"),
                )
                .await,
            );
            let unsubscribe = format!("s={id}&ac=unsubscribe");
            let result = self
                .post("/reader/api/0/subscription/edit", &unsubscribe)
                .await;
            failures.extend(checked(w, &url, "removeFeed", result.map(drop), gone).await);
            if let Err(e) = self
                .post("/reader/api/0/disable-tag", "s=user/-/label/Someday")
                .await
            {
                failures.push(format!("{url}: removeFolder: {e}"));
            }
            if w.has_group("Someday").await {
                failures.push(format!("{url}: removeFolder: the folder is still there"));
            }
            // `importOPML`: the file as it is, `Content-Type: text/xml`, 200 expected.
            let opml = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><opml version=\"1.1\"><head>\
                 <title>Subscriptions</title></head><body><outline text=\"{0}\" \
                 title=\"{0}\" type=\"rss\" xmlUrl=\"{1}\"/></body></opml>",
                escape_xml(feed.title),
                escape_xml(&url)
            );
            let mut headers = self.headers();
            headers.push(("content-type", "text/xml".into()));
            let import = format!("{}/reader/api/0/subscription/import", self.base);
            let answer = send("POST", &import, &headers, Some(opml)).await;
            let result = match answer.status {
                200 => Ok(()),
                status => Err(format!("HTTP {status}: {}", answer.text)),
            };
            let back = |found: Found<'_>| found.is_none().then(|| "not subscribed".to_string());
            failures.extend(checked(w, &url, "importOPML", result, back).await);
            failures
        }
    }

    checks!(NetNewsWire: every_item, subscribed_elsewhere, late_arrival,
        late_arrival_read_elsewhere, shared_feed_backlog, shared_feed_backlog_read_elsewhere,
        titles, item_without_link, marks, feed_urls);
}

/// Read You's Google Reader account, from Ashinch/ReadYou, app/src/main/java/me/ash/reader/:
/// infrastructure/rss/provider/greader/GoogleReaderAPI.kt (requests: GETs paste their
/// parameters into the URL unescaped; POSTs send an OkHttp form with `T` last),
/// GoogleReaderDTO.kt (Gson decoders: lenient, a number passes for a string and back, only
/// what the code dereferences with `!!` must be there), and
/// domain/service/GoogleReaderRssService.kt (a sync, a one-feed sync, subscribe, rename, move,
/// unsubscribe, folders). Titles are shown through Android's `Html.fromHtml`.
mod read_you_greader {
    use super::*;

    const SUBSCRIPTIONS: Spec = &[
        ("subscriptions", Kind::Arr, true),
        ("subscriptions[].id", Kind::Text, true),
        ("subscriptions[].categories", Kind::Arr, false),
    ];
    const ITEM_IDS: Spec = &[
        ("itemRefs", Kind::Arr, false),
        ("itemRefs[].id", Kind::Text, false),
    ];
    /// Each item's long id is read as hex, and `origin.streamId` is dereferenced.
    const CONTENTS: Spec = &[
        ("items", Kind::Arr, false),
        ("items[].id", Kind::Str, true),
        ("items[].published", Kind::Num, false),
        ("items[].origin", Kind::Obj, true),
        ("items[].origin.streamId", Kind::Text, true),
        ("items[].canonical", Kind::Arr, false),
        ("items[].alternate", Kind::Arr, false),
    ];
    const QUICKADD: Spec = &[("streamId", Kind::Text, true)];

    struct Source {
        url: String,
        icon: Option<String>,
    }

    pub struct ReadYou {
        /// The server URL the user typed, with its trailing slash.
        server: String,
        auth: String,
        action_token: String,
        /// Feeds by the app's id: the stream id with every `feed/` cut out.
        feeds: BTreeMap<String, Source>,
        articles: BTreeMap<String, Article>,
    }

    /// One `subscription/edit` with `ac=edit`, and what the server must show after it.
    struct Step {
        call: &'static str,
        fields: &'static [(&'static str, &'static str)],
        check: FeedCheck,
    }

    /// The stream id with every `feed/` removed (`ofFeedStreamIdToId`).
    fn feed_key(stream: &str) -> String {
        stream.replace("feed/", "")
    }

    /// `shortId`: a long id's hex tail as a decimal; a short id as it is.
    fn short_id(id: &str) -> String {
        match id.strip_prefix("tag:google.com,2005:reader/item/") {
            Some(_) => long_id_value(id).map_or(id.to_string(), |v| v.to_string()),
            None => id.to_string(),
        }
    }

    impl ReadYou {
        fn auth_header(&self) -> (&'static str, String) {
            ("authorization", format!("GoogleLogin auth={}", self.auth))
        }

        /// `getRequest`: `?output=json` then each parameter as `&name=value`, unescaped.
        async fn get(&self, endpoint: &str, params: &[(&str, &str)]) -> Answer {
            let tail: String = params.iter().map(|(k, v)| format!("&{k}={v}")).collect();
            let url = format!("{}{endpoint}?output=json{tail}", self.server);
            send("GET", &url, &[self.auth_header()], None).await
        }

        /// `postRequest`: parameters pasted into the URL, a form body with `T` last.
        async fn post(
            &self,
            endpoint: &str,
            params: &[(&str, &str)],
            fields: &[(&str, &str)],
        ) -> Result<Answer, String> {
            let tail: String = params.iter().map(|(k, v)| format!("&{k}={v}")).collect();
            let url = format!("{}{endpoint}?output=json{tail}", self.server);
            let mut fields = fields.to_vec();
            fields.push(("T", &self.action_token));
            let headers = [
                self.auth_header(),
                (
                    "content-type",
                    "application/x-www-form-urlencoded".to_string(),
                ),
            ];
            let answer = send("POST", &url, &headers, Some(form(&fields))).await;
            if answer.ok() {
                Ok(answer)
            } else {
                Err(format!(
                    "{endpoint} {fields:?}: HTTP {}: {}",
                    answer.status, answer.text
                ))
            }
        }

        /// `fetchItemIdsAndContinue` over one listing; a failed request ends it (`getOrNull`).
        async fn ids(&self, params: &[(&str, &str)]) -> Result<Vec<String>, String> {
            let mut ids = Vec::new();
            let mut continuation: Option<String> = None;
            loop {
                let mut p = params.to_vec();
                if let Some(c) = &continuation {
                    p.push(("c", c));
                }
                let answer = self.get("reader/api/0/stream/items/ids", &p).await;
                let Ok(page) = answer.json("stream/items/ids") else {
                    return Ok(ids);
                };
                conform(&page, ITEM_IDS, "stream/items/ids")?;
                for r in page["itemRefs"].as_array().into_iter().flatten() {
                    if let Some(id) = r["id"]
                        .as_str()
                        .map(str::to_string)
                        .or_else(|| r["id"].as_i64().map(|i| i.to_string()))
                    {
                        ids.push(short_id(&id));
                    }
                }
                match page["continuation"].as_str() {
                    Some(c) => continuation = Some(c.to_string()),
                    None => return Ok(ids),
                }
            }
        }

        /// `fetchItemsContentsDeferred`: 100 ids a request.
        async fn contents(
            &mut self,
            ids: &[String],
            unread: &BTreeSet<String>,
            starred: &BTreeSet<String>,
        ) -> Result<(), String> {
            for chunk in ids.chunks(100) {
                let fields: Vec<(&str, &str)> = chunk.iter().map(|id| ("i", id.as_str())).collect();
                let answer = self
                    .post("reader/api/0/stream/items/contents", &[], &fields)
                    .await?;
                let value = answer.json("stream/items/contents")?;
                conform(&value, CONTENTS, "stream/items/contents")?;
                for item in value["items"].as_array().into_iter().flatten() {
                    let id = short_id(item["id"].as_str().unwrap());
                    let feed = feed_key(&text_of(&item["origin"]["streamId"]));
                    // The article's feed must be one of the account's (a foreign key).
                    if !self.feeds.contains_key(&feed) {
                        return Err(format!("an item of an unknown feed {feed:?}"));
                    }
                    let link = item["canonical"][0]["href"]
                        .as_str()
                        .or(item["alternate"][0]["href"].as_str())
                        .or(item["origin"]["htmlUrl"].as_str())
                        .unwrap_or("");
                    self.articles.insert(
                        id.clone(),
                        Article {
                            feed,
                            title: android_html_text(item["title"].as_str().unwrap_or("")),
                            link: Some(link.to_string()),
                            enclosures: Vec::new(),
                            read: !unread.contains(&id),
                            starred: starred.contains(&id),
                        },
                    );
                }
            }
            Ok(())
        }

        fn feed_of(&self, url: &str) -> Option<String> {
            self.feeds
                .iter()
                .find(|(_, f)| same_url(&f.url, url))
                .map(|(id, _)| id.clone())
        }

        /// `subscriptionEdit`: `ac` first, then `s` as `feed/` + the app's feed id.
        async fn edit(
            &self,
            feed_id: &str,
            fields: &[(&str, &str)],
            action: &str,
        ) -> Result<Answer, String> {
            let stream = format!("feed/{feed_id}");
            let mut all = vec![("ac", action), ("s", stream.as_str())];
            all.extend_from_slice(fields);
            self.post("reader/api/0/subscription/edit", &[], &all).await
        }
    }

    impl App for ReadYou {
        const NAME: &'static str = "Read You (Google Reader)";

        /// `reAuthenticate`: ClientLogin with output=json and the client's fields, the JSON
        /// `Auth` or else the `Auth=` line; then the action token, kept as sent.
        async fn connect(w: &World) -> Result<Self, String> {
            let server = format!("{}/", w.greader_base());
            let body = form(&[
                ("output", "json"),
                ("Email", "ann"),
                ("Passwd", &w.key),
                ("client", "ReadYou"),
                ("accountType", "HOSTED_OR_GOOGLE"),
                ("service", "reader"),
            ]);
            let headers = [(
                "content-type",
                "application/x-www-form-urlencoded".to_string(),
            )];
            let answer = send(
                "POST",
                &format!("{server}accounts/ClientLogin"),
                &headers,
                Some(body),
            )
            .await;
            if !answer.ok() {
                return Err(format!("ClientLogin: HTTP {}", answer.status));
            }
            let auth = serde_json::from_str::<Value>(&answer.text)
                .ok()
                .and_then(|v| v["Auth"].as_str().map(str::to_string))
                .or_else(|| {
                    answer
                        .text
                        .lines()
                        .find_map(|l| l.strip_prefix("Auth=").map(str::to_string))
                })
                .ok_or_else(|| format!("no Auth in {:?}", answer.text))?;
            let token = send(
                "GET",
                &format!("{server}reader/api/0/token"),
                &[("authorization", format!("GoogleLogin auth={auth}"))],
                None,
            )
            .await;
            let app = ReadYou {
                server,
                auth,
                action_token: token.text,
                feeds: BTreeMap::new(),
                articles: BTreeMap::new(),
            };
            app.get("reader/api/0/user-info", &[])
                .await
                .json("user-info")?;
            Ok(app)
        }

        async fn sync(&mut self) -> Result<(), String> {
            let month_ago = days_ago(30).to_string();
            let unread: BTreeSet<String> = self
                .ids(&[("s", READING_LIST), ("xt", READ), ("n", "10000")])
                .await?
                .into_iter()
                .collect();
            let starred: BTreeSet<String> = self
                .ids(&[("s", STARRED), ("n", "10000")])
                .await?
                .into_iter()
                .collect();
            let read: BTreeSet<String> = self
                .ids(&[("s", READ), ("ot", &month_ago), ("n", "10000")])
                .await?
                .into_iter()
                .collect();
            // Local stars and reads the server lacks go up.
            let local_starred: Vec<String> = self
                .articles
                .iter()
                .filter(|(id, a)| a.starred && !starred.contains(*id))
                .map(|(id, _)| id.clone())
                .collect();
            if !local_starred.is_empty() {
                let mut fields: Vec<(&str, &str)> =
                    local_starred.iter().map(|i| ("i", i.as_str())).collect();
                fields.push(("a", STARRED));
                self.post("reader/api/0/edit-tag", &[], &fields).await?;
            }
            let local_read: Vec<String> = self
                .articles
                .iter()
                .filter(|(id, a)| a.read && unread.contains(*id))
                .map(|(id, _)| id.clone())
                .collect();
            if !local_read.is_empty() {
                let mut fields: Vec<(&str, &str)> =
                    local_read.iter().map(|i| ("i", i.as_str())).collect();
                fields.push(("a", READ));
                self.post("reader/api/0/edit-tag", &[], &fields).await?;
            }
            for (id, a) in self.articles.iter_mut() {
                if starred.contains(id) {
                    a.starred = true;
                }
                if read.contains(id) {
                    a.read = true;
                }
            }
            let list = self
                .get("reader/api/0/subscription/list", &[])
                .await
                .json("subscription/list")
                .map_err(|e| format!("subscriptionList is null: {e}"))?;
            conform(&list, SUBSCRIPTIONS, "subscription/list")?;
            let mut feeds = BTreeMap::new();
            for s in list["subscriptions"].as_array().unwrap() {
                let url = s["url"]
                    .as_str()
                    .or(s["htmlUrl"].as_str())
                    .ok_or("feed url is null")?;
                feeds.insert(
                    feed_key(&text_of(&s["id"])),
                    Source {
                        url: url.to_string(),
                        icon: s["iconUrl"].as_str().map(str::to_string),
                    },
                );
            }
            self.feeds = feeds;
            let wanted: Vec<String> = unread
                .iter()
                .chain(&starred)
                .chain(&read)
                .filter(|id| !self.articles.contains_key(*id))
                .cloned()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            self.contents(&wanted, &unread, &starred).await?;
            // Articles of feeds no longer listed go.
            let feeds: BTreeSet<String> = self.feeds.keys().cloned().collect();
            self.articles.retain(|_, a| feeds.contains(&a.feed));
            Ok(())
        }

        fn articles(&self) -> &BTreeMap<String, Article> {
            &self.articles
        }

        /// `markAsRead` and `markAsStarred`: an `edit-tag` at once.
        async fn mark(&mut self, id: &str, mark: Mark) -> Result<(), String> {
            let (key, tag) = match mark {
                Mark::Read => ("a", READ),
                Mark::Unread => ("r", READ),
                Mark::Star => ("a", STARRED),
                Mark::Unstar => ("r", STARRED),
            };
            if let Some(a) = self.articles.get_mut(id) {
                match mark {
                    Mark::Read | Mark::Unread => a.read = mark == Mark::Read,
                    Mark::Star | Mark::Unstar => a.starred = mark == Mark::Star,
                }
            }
            self.post("reader/api/0/edit-tag", &[], &[("i", id), (key, tag)])
                .await?;
            Ok(())
        }

        /// `subscribe`: quickadd (the URL both pasted into the query and in the form), then
        /// an edit that names the folder and the title the app read from the feed itself.
        async fn subscribe(&mut self, w: &World, feed: &Feed) -> Result<bool, String> {
            let url = w.url(feed);
            let answer = self
                .post(
                    "reader/api/0/subscription/quickadd",
                    &[("quickadd", &url)],
                    &[("quickadd", &url)],
                )
                .await?;
            let value = answer.json("quickadd")?;
            conform(&value, QUICKADD, "quickadd")?;
            let feed_id = feed_key(&text_of(&value["streamId"]));
            let folder = "user/-/label/News";
            self.edit(&feed_id, &[("a", folder), ("t", feed.title)], "edit")
                .await?;
            Ok(true)
        }

        async fn feed_calls(&mut self, w: &World, feed: &Feed) -> Vec<String> {
            let url = w.url(feed);
            let Some(id) = self.feed_of(&url) else {
                return vec![format!("{url}: not in the app's feeds")];
            };
            let mut failures = Vec::new();
            // `syncFeed`: the feed's unread ids and all its ids, by its stream id.
            let stream = format!("feed/{id}");
            let one = self
                .get(
                    "reader/api/0/stream/items/ids",
                    &[("s", &stream), ("n", "10000")],
                )
                .await;
            let count = one
                .json("stream/items/ids")
                .map(|v| v["itemRefs"].as_array().map_or(0, Vec::len))
                .unwrap_or(0);
            if count != feed.entries.len() {
                failures.push(format!(
                    "{url}: syncFeed: {count} ids for {stream}, not {} (HTTP {})",
                    feed.entries.len(),
                    one.status
                ));
            }
            // `subscriptionEdit` with `ac=edit`: renameFeed, addGroup, moveFeed.
            let steps = [
                Step {
                    call: "renameFeed",
                    fields: &[("t", "Renamed & kept")],
                    check: Box::new(titled("Renamed & kept")),
                },
                Step {
                    call: "addGroup",
                    fields: &[("a", "user/-/label/Reading")],
                    check: Box::new(in_group("Reading")),
                },
                Step {
                    call: "moveFeed",
                    fields: &[("a", "user/-/label/Later"), ("r", "user/-/label/Reading")],
                    check: Box::new(in_group("Later")),
                },
            ];
            for Step {
                call,
                fields,
                check,
            } in steps
            {
                let result = self.edit(&id, fields, "edit").await.map(drop);
                failures.extend(checked(w, &url, call, result, &*check).await);
            }
            let rename = [
                ("s", "user/-/label/Later"),
                ("dest", "user/-/label/Someday"),
            ];
            failures.extend(
                checked(
                    w,
                    &url,
                    "renameGroup",
                    self.post("reader/api/0/rename-tag", &[], &rename)
                        .await
                        .map(drop),
                    in_group("Someday"),
                )
                .await,
            );
            failures.extend(
                checked(
                    w,
                    &url,
                    "deleteFeed",
                    self.edit(&id, &[], "unsubscribe").await.map(drop),
                    gone,
                )
                .await,
            );
            if let Err(e) = self
                .post(
                    "reader/api/0/disable-tag",
                    &[],
                    &[("s", "user/-/label/Someday")],
                )
                .await
            {
                failures.push(format!("{url}: deleteGroup: {e}"));
            }
            failures
        }
    }

    /// Read You looks a feed's icon up itself only when `iconUrl` is missing or null: an
    /// empty string switches that off and the feed has no icon.
    pub async fn icon_lookup(db: &tidings_testkit::TestDb) {
        let w = World::new(db).await;
        let news = news_feed(w.t0, 3);
        w.follow(w.user_id, &news).await;
        let mut app = ReadYou::connect(&w).await.unwrap();
        app.sync().await.unwrap();
        for (id, feed) in &app.feeds {
            assert!(
                feed.icon.as_deref().is_none_or(|i| !i.is_empty()),
                "{id}: iconUrl is empty: Read You shows no icon"
            );
        }
    }

    checks!(ReadYou: every_item, subscribed_elsewhere, late_arrival, late_arrival_read_elsewhere,
        shared_feed_backlog, shared_feed_backlog_read_elsewhere, titles, item_without_link, marks,
        feed_urls);
    on_both_engines!(icon_lookup_stays_on, |db| {
        icon_lookup(db).await;
    });
}

/// Fluent Reader's Google Reader service, from yang991178/fluent-reader:
/// src/scripts/models/services/greader.ts (every request, and the fields its code reads from
/// the answers: plain JavaScript, so a missing field only fails where it is dereferenced, as
/// `canonical[0].href` is), src/scripts/models/service.ts (a sync: sign-in check, sources,
/// unread and starred ids, then items) and src/components/settings/services/greader.tsx (its
/// defaults: 250 items a sync, ids read as signed 64-bit decimals).
mod fluent_greader {
    use super::*;

    const SUBSCRIPTIONS: Spec = &[
        ("subscriptions", Kind::Arr, true),
        ("subscriptions[].id", Kind::Str, true),
    ];
    /// `stream/contents`, for each item of a known feed: its long id is cut at `/`; the
    /// summary's content is parsed, `canonical[0].href` read, `categories` walked.
    const CONTENTS: Spec = &[
        ("items", Kind::Arr, true),
        ("items[].id", Kind::Str, true),
        ("items[].origin", Kind::Obj, true),
        ("items[].origin.streamId", Kind::Str, true),
        ("items[].summary", Kind::Obj, true),
        ("items[].canonical", Kind::Arr, true),
        ("items[].canonical[0].href", Kind::Str, true),
        ("items[].published", Kind::Num, true),
        ("items[].crawlTimeMsec", Kind::DecimalStr, true),
        ("items[].categories", Kind::Arr, true),
        ("items[].categories[]", Kind::Str, true),
    ];

    pub struct FluentReader {
        endpoint: String,
        /// The whole header value, `GoogleLogin auth=…`.
        auth: String,
        fetch_limit: usize,
        /// Seconds: the crawl time of the newest item of the last fetch.
        last_fetched: Option<i64>,
        /// The newest item of the last fetch: the next fetch stops there.
        last_id: Option<String>,
        /// Sources by `serviceRef` (the subscription id): the feed URL.
        sources: BTreeMap<String, String>,
        articles: BTreeMap<String, Article>,
    }

    /// `compactId` with 64-bit ids: the long id's hex tail as a signed decimal.
    fn compact_id(id: &str) -> String {
        long_id_value(id).map_or(id.to_string(), |v| v.to_string())
    }

    impl FluentReader {
        async fn fetch(&self, path: &str, method: &str, body: Option<String>) -> Answer {
            let mut headers = vec![("authorization", self.auth.clone())];
            if body.is_some() {
                headers.push((
                    "content-type",
                    "application/x-www-form-urlencoded;charset=UTF-8".into(),
                ));
            }
            send(method, &format!("{}{path}", self.endpoint), &headers, body).await
        }

        /// `fetchAll`: pages while a continuation comes with a full page of 1,000.
        async fn fetch_all(&self, params: &str) -> Result<BTreeSet<String>, String> {
            let mut ids = BTreeSet::new();
            let mut continuation: Option<String> = None;
            loop {
                let mut p = params.to_string();
                if let Some(c) = &continuation {
                    p.push_str(&format!("&c={c}"));
                }
                let page = self.fetch(&p, "GET", None).await.json(&p)?;
                let refs = page["itemRefs"].as_array().cloned();
                for r in refs.iter().flatten() {
                    ids.insert(
                        r["id"]
                            .as_str()
                            .map_or_else(|| r["id"].to_string(), str::to_string),
                    );
                }
                continuation = page["continuation"].as_str().map(str::to_string);
                if continuation.is_none() || refs.is_none_or(|r| r.len() < 1000) {
                    return Ok(ids);
                }
            }
        }

        /// `editTag`: a body of `i=…&a=…` (or `r=`), no `T`.
        async fn edit_tag(&self, id: &str, tag: &str, add: bool) -> Result<(), String> {
            let body = form(&[("i", id), (if add { "a" } else { "r" }, tag)]);
            let answer = self
                .fetch("/reader/api/0/edit-tag", "POST", Some(body))
                .await;
            if answer.ok() {
                Ok(())
            } else {
                Err(format!("edit-tag: HTTP {}: {}", answer.status, answer.text))
            }
        }
    }

    impl App for FluentReader {
        const NAME: &'static str = "Fluent Reader (Google Reader)";

        /// `reauthenticate`: ClientLogin with `Email` and `Passwd`; `Auth=` up to white space.
        async fn connect(w: &World) -> Result<Self, String> {
            let endpoint = w.greader_base();
            let body = form(&[("Email", "ann"), ("Passwd", &w.key)]);
            let headers = [(
                "content-type",
                "application/x-www-form-urlencoded;charset=UTF-8".to_string(),
            )];
            let answer = send(
                "POST",
                &format!("{endpoint}/accounts/ClientLogin"),
                &headers,
                Some(body),
            )
            .await;
            if answer.status != 200 {
                return Err(format!("ClientLogin: HTTP {}", answer.status));
            }
            let auth = answer
                .text
                .split("Auth=")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .ok_or_else(|| format!("no Auth= in {:?}", answer.text))?;
            Ok(FluentReader {
                endpoint,
                auth: format!("GoogleLogin auth={auth}"),
                fetch_limit: 250,
                last_fetched: None,
                last_id: None,
                sources: BTreeMap::new(),
                articles: BTreeMap::new(),
            })
        }

        async fn sync(&mut self) -> Result<(), String> {
            let check = self.fetch("/reader/api/0/user-info", "GET", None).await;
            if check.status != 200 {
                return Err(format!("user-info: HTTP {}", check.status));
            }
            // updateSources
            let list = self
                .fetch("/reader/api/0/subscription/list?output=json", "GET", None)
                .await
                .json("subscription/list")?;
            conform(&list, SUBSCRIPTIONS, "subscription/list")?;
            self.sources = list["subscriptions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    let url = s["url"].as_str().or(s["htmlUrl"].as_str()).unwrap_or("");
                    (s["id"].as_str().unwrap().to_string(), url.to_string())
                })
                .collect();
            // syncItems
            let unread = self
                .fetch_all(&format!(
                    "/reader/api/0/stream/items/ids?output=json&s={READING_LIST}&xt={READ}&n=1000"
                ))
                .await?;
            let starred = self
                .fetch_all(&format!(
                    "/reader/api/0/stream/items/ids?output=json&s={STARRED}&n=1000"
                ))
                .await?;
            for (id, a) in self.articles.iter_mut() {
                a.read = !unread.contains(id);
                a.starred = starred.contains(id);
            }
            // fetchItems: newest first, from the last crawl time on, until the last item seen.
            let mut items: Vec<Value> = Vec::new();
            let mut continuation: Option<String> = None;
            loop {
                let limit = (self.fetch_limit - items.len()).min(1000);
                let mut params = format!("/reader/api/0/stream/contents?output=json&n={limit}");
                if let Some(t) = self.last_fetched {
                    params.push_str(&format!("&ot={t}"));
                }
                if let Some(c) = &continuation {
                    params.push_str(&format!("&c={c}"));
                }
                // A failed page ends the fetch quietly (the app's try/catch).
                let Ok(page) = self.fetch(&params, "GET", None).await.json(&params) else {
                    break;
                };
                let Some(fetched) = page["items"].as_array() else {
                    break;
                };
                for item in fetched {
                    let id = compact_id(item["id"].as_str().unwrap_or(""));
                    if Some(&id) == self.last_id.as_ref() || items.len() >= self.fetch_limit {
                        break;
                    }
                    items.push(item.clone());
                }
                continuation = page["continuation"].as_str().map(str::to_string);
                if continuation.is_none() || items.len() >= self.fetch_limit {
                    break;
                }
            }
            let Some(first) = items.first() else {
                return Ok(());
            };
            self.last_id = Some(compact_id(first["id"].as_str().unwrap()));
            let mut newest_crawl = None;
            for item in &items {
                let Some(stream) = item["origin"]["streamId"].as_str() else {
                    return Err("origin.streamId of undefined".into());
                };
                if !self.sources.contains_key(stream) {
                    continue;
                }
                conform(&json!({"items": [item]}), CONTENTS, "stream/contents")?;
                let crawl: i64 = item["crawlTimeMsec"].as_str().unwrap().parse().unwrap();
                newest_crawl.get_or_insert(crawl);
                let categories: Vec<&str> = item["categories"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                self.articles.insert(
                    compact_id(item["id"].as_str().unwrap()),
                    Article {
                        feed: stream.to_string(),
                        title: item["title"].as_str().unwrap_or("").to_string(),
                        link: item["canonical"][0]["href"].as_str().map(str::to_string),
                        enclosures: Vec::new(),
                        read: categories
                            .iter()
                            .any(|c| c.ends_with("/state/com.google/read")),
                        starred: categories
                            .iter()
                            .any(|c| c.ends_with("/state/com.google/starred")),
                    },
                );
            }
            if let Some(crawl) = newest_crawl {
                // Math.round of milliseconds over 1000.
                self.last_fetched = Some((crawl + 500) / 1000);
            }
            Ok(())
        }

        fn articles(&self) -> &BTreeMap<String, Article> {
            &self.articles
        }

        async fn mark(&mut self, id: &str, mark: Mark) -> Result<(), String> {
            let (tag, add) = match mark {
                Mark::Read => (READ, true),
                Mark::Unread => (READ, false),
                Mark::Star => (STARRED, true),
                Mark::Unstar => (STARRED, false),
            };
            self.edit_tag(id, tag, add).await
        }

        async fn subscribe(&mut self, _: &World, _: &Feed) -> Result<bool, String> {
            Ok(false)
        }

        /// `markAllRead` of one source without a date: `mark-all-as-read` with `s`.
        async fn feed_calls(&mut self, w: &World, feed: &Feed) -> Vec<String> {
            let url = w.url(feed);
            let Some(id) = key_of_url(&self.sources, &url) else {
                return vec![format!("{url}: not among the app's sources")];
            };
            let answer = self
                .fetch(
                    "/reader/api/0/mark-all-as-read",
                    "POST",
                    Some(form(&[("s", &id)])),
                )
                .await;
            let result = match answer.ok() {
                true => Ok(()),
                false => Err(format!("HTTP {}: {}", answer.status, answer.text)),
            };
            checked(w, &url, "markAllRead", result, all_read).await
        }
    }

    checks!(FluentReader: every_item, subscribed_elsewhere, late_arrival,
        late_arrival_read_elsewhere, shared_feed_backlog, shared_feed_backlog_read_elsewhere,
        titles, item_without_link, marks, feed_urls);
}

/// Fluent Reader's Fever service, from yang991178/fluent-reader:
/// src/scripts/models/services/fever.ts (requests: a POST to the endpoint plus `?api` and the
/// parameters, the body `api_key=…` and the rest; the fields its code reads),
/// src/scripts/models/service.ts (a sync's order) and
/// src/components/settings/services/fever.tsx (250 items a sync).
mod fluent_fever {
    use super::*;

    /// `feeds`, read with the groups on a first sync: every `feed_ids` is split at commas.
    const FEEDS: Spec = &[
        ("feeds", Kind::Arr, true),
        ("feeds[].id", Kind::Num, true),
        ("feeds[].url", Kind::Str, true),
        ("feeds_groups", Kind::Arr, true),
        ("feeds_groups[].feed_ids", Kind::Str, true),
        ("feeds_groups[].group_id", Kind::Num, true),
    ];
    const GROUPS: Spec = &[
        ("groups", Kind::Arr, true),
        ("groups[].id", Kind::Num, true),
        ("groups[].title", Kind::Str, true),
    ];
    /// Items: ids compared as numbers, the link cut at `/`, `feed_id` looked up as text.
    const ITEMS: Spec = &[
        ("items", Kind::Arr, true),
        ("items[].id", Kind::Num, true),
        ("items[].feed_id", Kind::Num, true),
        ("items[].url", Kind::Str, true),
        ("items[].title", Kind::Str, true),
        ("items[].html", Kind::Str, true),
        ("items[].created_on_time", Kind::Num, true),
    ];

    pub struct FluentFever {
        endpoint: String,
        key: String,
        fetch_limit: usize,
        last_id: i64,
        use_int32: bool,
        import_groups: bool,
        /// Sources by `serviceRef` (the feed id as text): the feed URL.
        sources: BTreeMap<String, String>,
        articles: BTreeMap<String, Article>,
    }

    impl FluentFever {
        /// `fetchAPI`: POST `endpoint?api<params>`, body `api_key=<key><post>`.
        async fn api(&self, params: &str, post: &str) -> Result<Value, String> {
            let headers = [(
                "content-type",
                "application/x-www-form-urlencoded".to_string(),
            )];
            let url = format!("{}?api{params}", self.endpoint);
            send(
                "POST",
                &url,
                &headers,
                Some(format!("api_key={}{post}", self.key)),
            )
            .await
            .json(&url)
        }

        async fn mark_item(&self, id: &str, r#as: &str) -> Result<(), String> {
            self.api("", &format!("&mark=item&as={as}&id={id}", as = r#as))
                .await
                .map(|_| ())
        }
    }

    impl App for FluentFever {
        const NAME: &'static str = "Fluent Reader (Fever)";

        async fn connect(w: &World) -> Result<Self, String> {
            let app = FluentFever {
                endpoint: w.fever_endpoint(),
                key: w.fever_key(),
                fetch_limit: 250,
                last_id: 0,
                use_int32: false,
                import_groups: true,
                sources: BTreeMap::new(),
                articles: BTreeMap::new(),
            };
            let auth = app.api("", "").await?;
            if auth["auth"].as_i64().unwrap_or(0) == 0 {
                return Err(format!("not authenticated: {auth}"));
            }
            Ok(app)
        }

        async fn sync(&mut self) -> Result<(), String> {
            // updateSources
            let feeds = self.api("&feeds", "").await?;
            conform(&feeds, FEEDS, "feeds")?;
            if self.import_groups {
                let groups = self.api("&groups", "").await?;
                conform(&groups, GROUPS, "groups")?;
                self.import_groups = false;
            }
            self.sources = feeds["feeds"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| (text_of(&f["id"]), f["url"].as_str().unwrap().to_string()))
                .collect();
            // syncItems: both lists must be strings.
            let unread = self.api("&unread_item_ids", "").await?;
            let saved = self.api("&saved_item_ids", "").await?;
            let (Some(unread), Some(saved)) = (
                unread["unread_item_ids"].as_str(),
                saved["saved_item_ids"].as_str(),
            ) else {
                return Err("unread_item_ids or saved_item_ids is not a string".into());
            };
            let unread: BTreeSet<&str> = unread.split(',').collect();
            let saved: BTreeSet<&str> = saved.split(',').collect();
            for (id, a) in self.articles.iter_mut() {
                a.read = !unread.contains(id.as_str());
                a.starred = saved.contains(id.as_str());
            }
            // fetchItems: down from the largest id, keeping those above the last one seen.
            let mut items: Vec<Value> = Vec::new();
            let mut min: i64 = if self.use_int32 {
                2_147_483_647
            } else {
                9_007_199_254_740_991
            };
            loop {
                let page = self.api(&format!("&items&max_id={min}"), "").await?;
                conform(&page, ITEMS, "items")?;
                let list = page["items"].as_array().unwrap();
                items.extend(
                    list.iter()
                        .filter(|i| i["id"].as_i64().unwrap() > self.last_id)
                        .cloned(),
                );
                let full = list.len() >= 50;
                if list.is_empty() && min == 9_007_199_254_740_991 {
                    self.use_int32 = true;
                    min = 2_147_483_647;
                } else {
                    min = list
                        .iter()
                        .map(|i| i["id"].as_i64().unwrap())
                        .fold(min, i64::min);
                    if !(min > self.last_id && full && items.len() < self.fetch_limit) {
                        break;
                    }
                }
            }
            self.last_id = items
                .iter()
                .map(|i| i["id"].as_i64().unwrap())
                .fold(self.last_id, i64::max);
            for item in items {
                let feed = text_of(&item["feed_id"]);
                if !self.sources.contains_key(&feed) {
                    return Err(format!("source of feed {feed} is undefined"));
                }
                self.articles.insert(
                    text_of(&item["id"]),
                    Article {
                        feed,
                        title: item["title"].as_str().unwrap().to_string(),
                        link: item["url"].as_str().map(str::to_string),
                        enclosures: Vec::new(),
                        read: item["is_read"].as_i64().unwrap_or(0) != 0,
                        starred: item["is_saved"].as_i64().unwrap_or(0) != 0,
                    },
                );
            }
            Ok(())
        }

        fn articles(&self) -> &BTreeMap<String, Article> {
            &self.articles
        }

        async fn mark(&mut self, id: &str, mark: Mark) -> Result<(), String> {
            let r#as = match mark {
                Mark::Read => "read",
                Mark::Unread => "unread",
                Mark::Star => "saved",
                Mark::Unstar => "unsaved",
            };
            self.mark_item(id, r#as).await
        }

        async fn subscribe(&mut self, _: &World, _: &Feed) -> Result<bool, String> {
            Ok(false)
        }

        /// `markAllRead` of one source without a date: `mark=feed` up to now plus a second.
        async fn feed_calls(&mut self, w: &World, feed: &Feed) -> Vec<String> {
            let url = w.url(feed);
            let Some(id) = key_of_url(&self.sources, &url) else {
                return vec![format!("{url}: not among the app's sources")];
            };
            let before = chrono::Utc::now().timestamp() + 1;
            let mark = format!("&mark=feed&as=read&id={id}&before={before}");
            let result = self.api("", &mark).await.map(drop);
            checked(w, &url, "markAllRead", result, all_read).await
        }
    }

    checks!(FluentFever: every_item, subscribed_elsewhere, late_arrival,
        late_arrival_read_elsewhere, shared_feed_backlog, shared_feed_backlog_read_elsewhere,
        titles, item_without_link, marks, feed_urls);
}

/// Read You's Fever account, from Ashinch/ReadYou, app/src/main/java/me/ash/reader/:
/// infrastructure/rss/provider/fever/FeverAPI.kt (a POST to the server URL plus `?api=&` and
/// the query, an OkHttp form with `api_key`), FeverDTO.kt (Gson decoders: lenient types) and
/// domain/service/FeverRssService.kt (a sync: groups, feeds, favicons, items from the last id
/// seen on, 50 a call, then the unread and saved ids; marks). Titles go through
/// Android's `Html.fromHtml`.
mod read_you_fever {
    use super::*;

    /// Every answer: `auth` must be an integer above 0.
    const AUTH: Spec = &[("auth", Kind::Int, true)];
    /// `groups`: ids dereferenced.
    const GROUPS: Spec = &[
        ("groups", Kind::Arr, false),
        ("groups[].id", Kind::Text, true),
        ("feeds_groups", Kind::Arr, false),
        ("feeds_groups[].feed_ids", Kind::Text, false),
    ];
    /// `feeds`: id and url dereferenced (and every feed must be in a group: checked in sync).
    const FEEDS: Spec = &[
        ("feeds", Kind::Arr, false),
        ("feeds[].id", Kind::Text, true),
        ("feeds[].url", Kind::Str, true),
        ("feeds_groups", Kind::Arr, false),
    ];
    /// `favicons`: a non-null integer id.
    const FAVICONS: Spec = &[
        ("favicons", Kind::Arr, false),
        ("favicons[].id", Kind::Text, true),
    ];
    const ITEMS: Spec = &[
        ("items", Kind::Arr, false),
        ("items[].id", Kind::Text, true),
        ("items[].feed_id", Kind::Text, true),
    ];

    pub struct ReadYouFever {
        server: String,
        key: String,
        /// `lastArticleId`: where the next sync's `since_id` starts.
        last_article_id: Option<String>,
        /// Feeds by id: URL.
        feeds: BTreeMap<String, String>,
        articles: BTreeMap<String, Article>,
    }

    impl ReadYouFever {
        /// `postRequest`: POST `<server>?api=&<query>` with the form `api_key=…`.
        async fn api(&self, query: &str, spec: Spec) -> Result<Value, String> {
            let url = format!("{}?api=&{query}", self.server);
            let headers = [(
                "content-type",
                "application/x-www-form-urlencoded".to_string(),
            )];
            let answer = send(
                "POST",
                &url,
                &headers,
                Some(form(&[("api_key", &self.key)])),
            )
            .await;
            let value = answer.json(&url)?;
            conform(&value, AUTH, query)?;
            if value["auth"].as_i64().unwrap_or(0) <= 0 {
                return Err(format!("{query}: Unauthorized"));
            }
            conform(&value, spec, query)?;
            Ok(value)
        }
    }

    impl App for ReadYouFever {
        const NAME: &'static str = "Read You (Fever)";

        async fn connect(w: &World) -> Result<Self, String> {
            let app = ReadYouFever {
                server: w.fever_endpoint(),
                key: w.fever_key(),
                last_article_id: None,
                feeds: BTreeMap::new(),
                articles: BTreeMap::new(),
            };
            app.api("", &[]).await?;
            Ok(app)
        }

        async fn sync(&mut self) -> Result<(), String> {
            let groups = self.api("groups", GROUPS).await?;
            let feeds = self.api("feeds", FEEDS).await?;
            // Every feed's group, from both answers' feeds_groups.
            let mut group_of: BTreeMap<String, String> = BTreeMap::new();
            for answer in [&groups, &feeds] {
                for fg in answer["feeds_groups"].as_array().into_iter().flatten() {
                    for feed in text_of(&fg["feed_ids"]).split(',') {
                        group_of.insert(feed.to_string(), text_of(&fg["group_id"]));
                    }
                }
            }
            self.api("favicons", FAVICONS).await?;
            let mut listed = BTreeMap::new();
            for f in feeds["feeds"].as_array().into_iter().flatten() {
                let id = text_of(&f["id"]);
                if !group_of.contains_key(&id) {
                    return Err(format!("feed {id} is in no group (feedsGroupsMap[id]!!)"));
                }
                listed.insert(id, f["url"].as_str().unwrap().to_string());
            }
            self.feeds = listed;
            // Items from the last id seen: 50 a call, until a short or empty page.
            let mut last_seen = self.last_article_id.clone().unwrap_or_default();
            loop {
                let page = self
                    .api(&format!("items&since_id={last_seen}"), ITEMS)
                    .await?;
                let items = page["items"].as_array().cloned().unwrap_or_default();
                if items.is_empty() {
                    break;
                }
                for item in &items {
                    self.articles.insert(
                        text_of(&item["id"]),
                        Article {
                            feed: text_of(&item["feed_id"]),
                            title: android_html_text(item["title"].as_str().unwrap_or("")),
                            link: item["url"].as_str().map(str::to_string),
                            enclosures: Vec::new(),
                            read: item["is_read"].as_i64().unwrap_or(0) > 0,
                            starred: item["is_saved"].as_i64().unwrap_or(0) > 0,
                        },
                    );
                }
                last_seen = text_of(&items.last().unwrap()["id"]);
                if items.len() < 50 {
                    break;
                }
            }
            if !last_seen.is_empty() {
                self.last_article_id = Some(last_seen);
            }
            let unread = self.api("unread_item_ids", &[]).await?;
            let saved = self.api("saved_item_ids", &[]).await?;
            let unread: BTreeSet<String> = text_of(&unread["unread_item_ids"])
                .split(',')
                .map(str::to_string)
                .collect();
            let saved: BTreeSet<String> = text_of(&saved["saved_item_ids"])
                .split(',')
                .map(str::to_string)
                .collect();
            for (id, a) in self.articles.iter_mut() {
                a.read = !unread.contains(id);
                a.starred = saved.contains(id);
            }
            Ok(())
        }

        fn articles(&self) -> &BTreeMap<String, Article> {
            &self.articles
        }

        /// `markItem`: `mark=item&as=…&id=…` in the query.
        async fn mark(&mut self, id: &str, mark: Mark) -> Result<(), String> {
            let r#as = match mark {
                Mark::Read => "read",
                Mark::Unread => "unread",
                Mark::Star => "saved",
                Mark::Unstar => "unsaved",
            };
            self.api(&format!("mark=item&as={as}&id={id}", as = r#as), &[])
                .await
                .map(|_| ())
        }

        async fn subscribe(&mut self, _: &World, _: &Feed) -> Result<bool, String> {
            Ok(false)
        }

        /// `markFeed` without a date: `before` is the largest Java time in seconds.
        async fn feed_calls(&mut self, w: &World, feed: &Feed) -> Vec<String> {
            let url = w.url(feed);
            let Some(id) = key_of_url(&self.feeds, &url) else {
                return vec![format!("{url}: not among the app's feeds")];
            };
            let mut failures = Vec::new();
            let query = format!("mark=feed&as=read&id={id}&before={}", i64::MAX / 1000);
            failures.extend(
                checked(
                    w,
                    &url,
                    "markFeed",
                    self.api(&query, &[]).await.map(drop),
                    all_read,
                )
                .await,
            );
            failures
        }
    }

    checks!(ReadYouFever: every_item, subscribed_elsewhere, late_arrival,
        late_arrival_read_elsewhere, shared_feed_backlog, shared_feed_backlog_read_elsewhere,
        titles, item_without_link, marks, feed_urls);
}

/// Capy Reader's Reader API account, from jocmp/capyreader: readerclient/src/main/java/com/
/// jocmp/readerclient/GoogleReader.kt (Retrofit: every parameter escaped, `output=json` in the
/// query), Item.kt, ItemRef.kt, Subscription.kt, Category.kt, Tag.kt,
/// StreamItemIDsResult.kt, StreamItemsContentsResult.kt, SubscriptionQuickAddResult.kt (Moshi
/// decoders: a non-null Kotlin field must be present and not null; an enum only takes its
/// values), and capy/src/main/java/com/jocmp/capy/accounts/reader/ReaderAccountDelegate.kt,
/// ReaderEnclosureParsing.kt and ReaderCredentials.kt (sign-in, a refresh of all articles,
/// one feed's refresh, marks, add, edit and remove feeds and folders).
mod capy {
    use super::*;

    const SUBSCRIPTIONS: Spec = &[
        ("subscriptions", Kind::Arr, true),
        ("subscriptions[].id", Kind::Text, true),
        ("subscriptions[].title", Kind::Text, true),
        ("subscriptions[].categories", Kind::Arr, true),
        ("subscriptions[].categories[].id", Kind::Text, true),
        ("subscriptions[].categories[].label", Kind::Text, false),
        ("subscriptions[].url", Kind::Text, false),
        ("subscriptions[].htmlUrl", Kind::Text, true),
        ("subscriptions[].iconUrl", Kind::Text, false),
    ];
    const TAGS: Spec = &[("tags", Kind::Arr, true), ("tags[].id", Kind::Text, true)];
    /// Ids are read as decimal longs and written back as 16 hex digits.
    const ITEM_IDS: Spec = &[
        ("itemRefs", Kind::Arr, true),
        ("itemRefs[].id", Kind::DecimalStr, true),
        ("continuation", Kind::Text, false),
    ];
    const CONTENTS: Spec = &[
        ("items", Kind::Arr, true),
        ("items[].id", Kind::Text, true),
        ("items[].published", Kind::Num, true),
        ("items[].title", Kind::Text, true),
        ("items[].canonical", Kind::Arr, true),
        ("items[].canonical[].href", Kind::Text, true),
        ("items[].summary", Kind::Obj, true),
        ("items[].summary.content", Kind::Text, false),
        ("items[].origin", Kind::Obj, true),
        ("items[].origin.streamId", Kind::Text, true),
        ("items[].origin.htmlUrl", Kind::Text, true),
        ("items[].origin.title", Kind::Text, true),
        ("items[].content.content", Kind::Text, true),
        ("items[].author", Kind::Text, false),
        ("items[].enclosure", Kind::Arr, false),
        ("items[].enclosure[].href", Kind::Text, false),
        ("items[].enclosure[].type", Kind::Text, false),
        ("items[].categories", Kind::Arr, false),
        ("items[].categories[]", Kind::Text, true),
    ];
    const QUICKADD: Spec = &[
        ("numResults", Kind::Int, false),
        ("query", Kind::Text, false),
        ("streamId", Kind::Text, false),
        ("streamName", Kind::Text, false),
        ("error", Kind::Text, false),
    ];

    pub struct Capy {
        /// Retrofit's base URL, ending with `/`.
        base: String,
        auth: String,
        post_token: Option<String>,
        /// Feeds by id (the subscription id): URL.
        feeds: BTreeMap<String, String>,
        /// Statuses by hex id (read, starred); articles by hex id.
        statuses: BTreeMap<String, (bool, bool)>,
        articles: BTreeMap<String, Article>,
    }

    /// `parseToHexID`: a decimal id as 16 hex digits.
    fn hex_id(decimal: &str) -> String {
        format!("{:016x}", decimal.parse::<i64>().unwrap_or(0))
    }

    impl Capy {
        fn headers(&self) -> Vec<(&'static str, String)> {
            vec![("authorization", format!("GoogleLogin auth={}", self.auth))]
        }

        async fn get(
            &self,
            path: &str,
            query: &[(&str, &str)],
            spec: Spec,
        ) -> Result<Value, String> {
            let url = format!("{}{path}?{}", self.base, form(query));
            let answer = send("GET", &url, &self.headers(), None).await;
            let value = answer.json(&url)?;
            conform(&value, spec, path)?;
            Ok(value)
        }

        /// `withPostToken`: the token fetched once, then a form POST with `output=json` in the
        /// query where the interface has it.
        async fn post(
            &mut self,
            path: &str,
            output: bool,
            fields: &[(&str, &str)],
        ) -> Result<Answer, String> {
            if self.post_token.is_none() {
                let url = format!("{}reader/api/0/token", self.base);
                self.post_token = Some(send("GET", &url, &self.headers(), None).await.text);
            }
            let token = self.post_token.clone().unwrap();
            let mut fields = fields.to_vec();
            fields.push(("T", &token));
            let query = if output { "?output=json" } else { "" };
            let mut headers = self.headers();
            headers.push(("content-type", "application/x-www-form-urlencoded".into()));
            let answer = send(
                "POST",
                &format!("{}{path}{query}", self.base),
                &headers,
                Some(form(&fields)),
            )
            .await;
            if answer.ok() {
                Ok(answer)
            } else {
                Err(format!(
                    "{path} {fields:?}: HTTP {}: {}",
                    answer.status, answer.text
                ))
            }
        }

        /// `fetchAllItemIDs`: 10,000 a page while a continuation comes.
        async fn ids(&self, stream: &str, excluded: Option<&str>) -> Result<Vec<String>, String> {
            let mut all = Vec::new();
            let mut continuation: Option<String> = None;
            loop {
                let mut query = vec![("s", stream)];
                if let Some(c) = &continuation {
                    query.push(("c", c));
                }
                query.push(("n", "10000"));
                if let Some(x) = excluded {
                    query.push(("xt", x));
                }
                query.push(("output", "json"));
                let page = self
                    .get("reader/api/0/stream/items/ids", &query, ITEM_IDS)
                    .await?;
                all.extend(
                    page["itemRefs"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|r| hex_id(r["id"].as_str().unwrap())),
                );
                match page["continuation"].as_str() {
                    Some(c) => continuation = Some(c.to_string()),
                    None => return Ok(all),
                }
            }
        }

        async fn refresh_feeds(&mut self) -> Result<(), String> {
            let list = self
                .get(
                    "reader/api/0/subscription/list",
                    &[("output", "json")],
                    SUBSCRIPTIONS,
                )
                .await?;
            self.feeds = list["subscriptions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    let url = s["url"].as_str().map(str::to_string);
                    let id = text_of(&s["id"]);
                    let url = url.unwrap_or_else(|| id.trim_start_matches("feed/").to_string());
                    (id, url)
                })
                .collect();
            Ok(())
        }

        /// `refreshArticleState`: starred ids, then unread ids; every other item is read.
        async fn refresh_state(&mut self) -> Result<(), String> {
            let starred: BTreeSet<String> = self.ids(STARRED, None).await?.into_iter().collect();
            let unread: BTreeSet<String> = self
                .ids(READING_LIST, Some(READ))
                .await?
                .into_iter()
                .collect();
            for id in starred.iter().chain(&unread) {
                self.statuses.entry(id.clone()).or_insert((true, false));
            }
            for (id, status) in self.statuses.iter_mut() {
                *status = (!unread.contains(id), starred.contains(id));
            }
            for (id, a) in self.articles.iter_mut() {
                (a.read, a.starred) = self.statuses.get(id).copied().unwrap_or((true, false));
            }
            Ok(())
        }

        /// `fetchMissingArticles`: 250 long ids a request.
        async fn fetch_missing(&mut self) -> Result<(), String> {
            let missing: Vec<String> = self
                .statuses
                .keys()
                .filter(|id| !self.articles.contains_key(*id))
                .cloned()
                .collect();
            for chunk in missing.chunks(250) {
                let ids: Vec<String> = chunk
                    .iter()
                    .map(|h| format!("tag:google.com,2005:reader/item/{h}"))
                    .collect();
                let fields: Vec<(&str, &str)> = ids.iter().map(|i| ("i", i.as_str())).collect();
                let answer = self
                    .post("reader/api/0/stream/items/contents", true, &fields)
                    .await?;
                let value = answer.json("stream/items/contents")?;
                conform(&value, CONTENTS, "stream/items/contents")?;
                for item in value["items"].as_array().unwrap() {
                    let id = text_of(&item["id"]).rsplit('/').next().unwrap().to_string();
                    let categories: Vec<String> = item["categories"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(text_of)
                        .collect();
                    // `validEnclosures`: a type and an http(s) href.
                    let enclosures = item["enclosure"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|e| e["type"].is_string())
                        .filter_map(|e| e["href"].as_str())
                        .filter(|h| url::Url::parse(h).is_ok())
                        .map(str::to_string)
                        .collect();
                    self.articles.insert(
                        id,
                        Article {
                            feed: text_of(&item["origin"]["streamId"]),
                            title: text_of(&item["title"]),
                            link: item["canonical"][0]["href"].as_str().map(str::to_string),
                            enclosures,
                            read: categories
                                .iter()
                                .any(|c| c.ends_with("state/com.google/read")),
                            starred: categories
                                .iter()
                                .any(|c| c.ends_with("state/com.google/starred")),
                        },
                    );
                }
            }
            Ok(())
        }

        async fn edit_tag(&mut self, id: &str, key: &str, tag: &str) -> Result<(), String> {
            let long = format!("tag:google.com,2005:reader/item/{id}");
            self.post("reader/api/0/edit-tag", true, &[("i", &long), (key, tag)])
                .await
                .map(|_| ())
        }
    }

    impl App for Capy {
        const NAME: &'static str = "Capy Reader";
        const UNREAD_AND_STARRED_ONLY: bool = true;

        /// `ReaderCredentials.verify`: ClientLogin; the answer's lines split at `=` into a map.
        async fn connect(w: &World) -> Result<Self, String> {
            let base = format!("{}/", w.greader_base());
            let headers = [(
                "content-type",
                "application/x-www-form-urlencoded".to_string(),
            )];
            let body = form(&[("Email", "ann"), ("Passwd", &w.key)]);
            let answer = send(
                "POST",
                &format!("{base}accounts/ClientLogin"),
                &headers,
                Some(body),
            )
            .await;
            if !answer.ok() || answer.text.contains("Unauthorized") {
                return Err(format!(
                    "ClientLogin: HTTP {}: {}",
                    answer.status, answer.text
                ));
            }
            let auth = answer
                .text
                .split('\n')
                .map(|l| l.split('=').collect::<Vec<_>>())
                .find(|parts| parts[0] == "Auth")
                .map(|parts| parts[parts.len() - 1].to_string())
                .ok_or("Failed to parse auth")?;
            Ok(Capy {
                base,
                auth,
                post_token: None,
                feeds: BTreeMap::new(),
                statuses: BTreeMap::new(),
                articles: BTreeMap::new(),
            })
        }

        /// `refreshTopLevelArticles`: feeds, labels, states, then the missing articles.
        async fn sync(&mut self) -> Result<(), String> {
            self.refresh_feeds().await?;
            self.get("reader/api/0/tag/list", &[("output", "json")], TAGS)
                .await?;
            self.refresh_state().await?;
            self.fetch_missing().await
        }

        fn articles(&self) -> &BTreeMap<String, Article> {
            &self.articles
        }

        async fn mark(&mut self, id: &str, mark: Mark) -> Result<(), String> {
            match mark {
                Mark::Read => self.edit_tag(id, "a", READ).await,
                Mark::Unread => self.edit_tag(id, "r", READ).await,
                Mark::Star => self.edit_tag(id, "a", STARRED).await,
                Mark::Unstar => self.edit_tag(id, "r", STARRED).await,
            }
        }

        /// `addFeed`: quickadd, the feed list, then that feed's refresh.
        async fn subscribe(&mut self, w: &World, feed: &Feed) -> Result<bool, String> {
            let url = w.url(feed);
            let answer = self
                .post(
                    "reader/api/0/subscription/quickadd",
                    true,
                    &[("quickadd", &url)],
                )
                .await?;
            let value = answer.json("quickadd")?;
            conform(&value, QUICKADD, "quickadd")?;
            let (Some(stream), Some(_)) = (value["streamId"].as_str(), value["query"].as_str())
            else {
                return Err(format!("feed not found: {value}"));
            };
            self.refresh_feeds().await?;
            if !self.feeds.contains_key(stream) {
                return Err(format!("{stream} is not in subscription/list"));
            }
            self.refresh_feed(stream).await?;
            Ok(true)
        }

        async fn feed_calls(&mut self, w: &World, feed: &Feed) -> Vec<String> {
            let url = w.url(feed);
            let Some(id) = key_of_url(&self.feeds, &url) else {
                return vec![format!("{url}: not among the app's feeds")];
            };
            let mut failures = Vec::new();
            let before = self.articles.len();
            self.articles.retain(|_, a| a.feed != id);
            if let Err(e) = self.refresh_feed(&id).await {
                failures.push(format!("{url}: refresh of the feed: {e}"));
            }
            if self.articles.len() != before {
                failures.push(format!(
                    "{url}: refresh of the feed: {} items, not {before}",
                    self.articles.len()
                ));
            }
            // `updateFeed`: a title and one folder.
            let edit = [
                ("s", id.as_str()),
                ("ac", "edit"),
                ("a", "user/-/label/Reading"),
                ("t", "Renamed & kept"),
            ];
            failures.extend(
                checked(
                    w,
                    &url,
                    "updateFeed",
                    self.post("reader/api/0/subscription/edit", false, &edit)
                        .await
                        .map(drop),
                    titled("Renamed & kept"),
                )
                .await,
            );
            failures.extend(checked(w, &url, "updateFeed", Ok(()), in_group("Reading")).await);
            let rename = [
                ("s", "user/-/label/Reading"),
                ("dest", "user/-/label/Someday"),
            ];
            failures.extend(
                checked(
                    w,
                    &url,
                    "updateFolder",
                    self.post("reader/api/0/rename-tag", false, &rename)
                        .await
                        .map(drop),
                    in_group("Someday"),
                )
                .await,
            );
            failures.extend(
                checked(
                    w,
                    &url,
                    "removeFeed",
                    self.post(
                        "reader/api/0/subscription/edit",
                        false,
                        &[("s", &id), ("ac", "unsubscribe")],
                    )
                    .await
                    .map(drop),
                    gone,
                )
                .await,
            );
            if let Err(e) = self
                .post(
                    "reader/api/0/disable-tag",
                    false,
                    &[("s", "user/-/label/Someday")],
                )
                .await
            {
                failures.push(format!("{url}: removeFolder: {e}"));
            }
            failures
        }
    }

    impl Capy {
        /// `refreshArticles` of one feed: states, the feed's ids, then the missing articles.
        async fn refresh_feed(&mut self, stream: &str) -> Result<(), String> {
            self.refresh_state().await?;
            for id in self.ids(stream, None).await? {
                self.statuses.entry(id).or_insert((false, false));
            }
            self.fetch_missing().await
        }
    }

    // It downloads only unread and starred items: the checks of items read elsewhere before it
    // first sees them do not apply.
    checks!(Capy: every_item, subscribed_elsewhere, late_arrival, shared_feed_backlog, titles,
        item_without_link, enclosures, marks, feed_urls);
}
