//! The Fever API over HTTP against a real server, on both engines: the key digest, auth 0 with
//! HTTP 200, both paths, GET and POST, groups, feeds, favicons, items with since_id / max_id /
//! with_ids, unread and saved ids, every mark; the answers' shapes against real Fever servers'
//! (`src/sync/testdata/fever`); and a real Fever client from PyPI (`freshrss-api`).

use tidings_testkit::on_both_engines;

use crate::support::TestApp;
use crate::sync_clients::{
    BASE, add_items, api_key, assert_same_shape, python_lines, python_with, testdata_pairs,
    two_feeds,
};
use reqwest::{Client, StatusCode};
use serde_json::Value;
use tidings_server::sync::fever::key_digest;

struct Setup {
    app: TestApp,
    digest: String,
    feed_a: i64,
    feed_b: i64,
    group_b: i64,
    key: String,
    user_id: i64,
}

/// ann with feed A (60 items) in the default group and feed B (3 items) in "Tech".
async fn setup(db: &tidings_testkit::TestDb) -> Setup {
    let two = two_feeds(TestApp::start(db).await, 0..60, 100..103).await;
    Setup {
        digest: key_digest("ann", &two.key),
        app: two.app,
        feed_a: two.feed_a,
        feed_b: two.feed_b,
        group_b: two.group_b,
        key: two.key,
        user_id: two.user_id,
    }
}

/// POSTs `api_key` (and `form`) to `path?query`; the answer must be HTTP 200 JSON.
async fn fever(s: &Setup, path: &str, query: &str, form: &[(&str, &str)]) -> Value {
    fever_with(&s.app.base, &s.digest, path, query, form).await
}

async fn fever_with(
    base: &str,
    digest: &str,
    path: &str,
    query: &str,
    form: &[(&str, &str)],
) -> Value {
    let mut fields = vec![("api_key", digest)];
    fields.extend_from_slice(form);
    let response = Client::new()
        .post(format!("{base}{path}?{query}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&fields))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    response.json().await.unwrap()
}

fn form_body(fields: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish()
}

fn ids(text: &Value) -> Vec<i64> {
    text.as_str()
        .unwrap_or_else(|| panic!("not an id list: {text}"))
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect()
}

fn item_ids(answer: &Value) -> Vec<i64> {
    answer["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items: {answer}"))
        .iter()
        .map(|i| i["id"].as_i64().unwrap())
        .collect()
}

on_both_engines!(
    the_key_is_md5_of_username_and_api_key_and_failures_are_auth_0,
    |db| {
        let s = setup(db).await;
        for path in ["/fever/", "/api/fever.php"] {
            let answer = fever(&s, path, "api", &[]).await;
            assert_eq!(answer["auth"], 1, "{path}: {answer}");
            assert_eq!(answer["api_version"], 3);
            assert!(answer["last_refreshed_on_time"].is_i64());
        }
        // GET with the key in the query string works too.
        let answer: Value = Client::new()
            .get(format!("{}/fever/?api&api_key={}", s.app.base, s.digest))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(answer["auth"], 1);
        // The account password, another name, no key: auth 0 with HTTP 200.
        for wrong in [
            key_digest("ann", crate::support::PASSWORD),
            key_digest("bob", &s.key),
            String::new(),
        ] {
            let response = Client::new()
                .post(format!("{}/api/fever.php?api&items", s.app.base))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form_body(&[("api_key", wrong.as_str())]))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            let answer: Value = response.json().await.unwrap();
            assert_eq!(answer["auth"], 0, "{answer}");
            assert!(answer.get("items").is_none());
        }
        // A read-only key reads but cannot mark.
        let browser = s.app.signed_in("ann").await;
        let read_only = key_digest("ann", &api_key(&s.app, &browser, "read").await);
        let base = s.app.base.as_str();
        assert_eq!(
            fever_with(base, &read_only, "/fever/", "api&groups", &[]).await["auth"],
            1
        );
        let refused = fever_with(
            base,
            &read_only,
            "/fever/",
            "api",
            &[("mark", "group"), ("as", "read"), ("id", "0")],
        )
        .await;
        assert_eq!(refused["auth"], 0, "{refused}");
        let unread = fever_with(base, &read_only, "/fever/", "api&unread_item_ids", &[]).await;
        assert_eq!(ids(&unread["unread_item_ids"]).len(), 63);
    }
);

on_both_engines!(groups_feeds_items_and_marks, |db| {
    let s = setup(db).await;
    let answer = fever(&s, "/fever/", "api&groups&feeds&favicons&links", &[]).await;
    let groups = answer["groups"].as_array().unwrap();
    assert!(
        groups
            .iter()
            .any(|g| g["id"] == s.group_b && g["title"] == "Tech")
    );
    let feeds = answer["feeds"].as_array().unwrap();
    assert_eq!(feeds.len(), 2);
    let tech = answer["feeds_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group_id"] == s.group_b)
        .unwrap();
    assert_eq!(ids(&tech["feed_ids"]), vec![s.feed_b]);
    assert_eq!(answer["links"], serde_json::json!([]));
    assert!(answer["favicons"].is_array());

    // Paging by id: since_id upwards 50 at a time, max_id downwards, with_ids.
    let first = fever(&s, "/fever/", "api&items&since_id=0", &[]).await;
    assert_eq!(first["total_items"], 63);
    let mut seen = item_ids(&first);
    assert_eq!(seen.len(), 50);
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
    let rest = fever(
        &s,
        "/fever/",
        &format!("api&items&since_id={}", seen[49]),
        &[],
    )
    .await;
    seen.extend(item_ids(&rest));
    assert_eq!(seen.len(), 63);
    let done = fever(
        &s,
        "/fever/",
        &format!("api&items&since_id={}", seen[62]),
        &[],
    )
    .await;
    assert!(item_ids(&done).is_empty());
    let newest = fever(&s, "/fever/", "api&items&max_id=0", &[]).await;
    assert_eq!(item_ids(&newest)[0], seen[62]);
    let older = fever(
        &s,
        "/fever/",
        &format!("api&items&max_id={}", seen[10]),
        &[],
    )
    .await;
    let expected: Vec<i64> = seen[..10].iter().rev().copied().collect();
    assert_eq!(item_ids(&older), expected);
    let named = fever(
        &s,
        "/fever/",
        &format!("api&items&with_ids={},{}", seen[3], seen[7]),
        &[],
    )
    .await;
    assert_eq!(item_ids(&named), vec![seen[3], seen[7]]);
    let one = &named["items"][0];
    assert_eq!(one["is_read"], 0);
    assert!(one["html"].as_str().unwrap().starts_with("<p>"));

    // Marks, with the lists clients update from.
    let marked = fever(
        &s,
        "/fever/",
        "api",
        &[
            ("mark", "item"),
            ("as", "read"),
            ("id", &seen[0].to_string()),
        ],
    )
    .await;
    assert_eq!(ids(&marked["unread_item_ids"]).len(), 62);
    let marked = fever(
        &s,
        "/fever/",
        "api",
        &[
            ("mark", "item"),
            ("as", "saved"),
            ("id", &seen[1].to_string()),
        ],
    )
    .await;
    assert_eq!(ids(&marked["saved_item_ids"]), vec![seen[1]]);
    fever(
        &s,
        "/fever/",
        "api",
        &[
            ("mark", "item"),
            ("as", "unsaved"),
            ("id", &seen[1].to_string()),
        ],
    )
    .await;
    assert_eq!(
        fever(&s, "/fever/", "api&saved_item_ids", &[]).await["saved_item_ids"],
        ""
    );
    fever(
        &s,
        "/fever/",
        "api",
        &[
            ("mark", "item"),
            ("as", "unread"),
            ("id", &seen[0].to_string()),
        ],
    )
    .await;
    assert_eq!(
        ids(&fever(&s, "/fever/", "api&unread_item_ids", &[]).await["unread_item_ids"]).len(),
        63
    );

    phase_before_times_and_group_zero(&s, &seen).await;
});

/// Marking a feed before a time marks only items that reached the user before it, whatever
/// their publication dates; group 0 is everything; a bad mark is refused.
async fn phase_before_times_and_group_zero(s: &Setup, seen: &[i64]) {
    // A feed before a time: only items that reached the user before it (the time of the
    // client's last items request), whatever their publication dates. These arrived now.
    let before = (BASE + 10 * 60).to_string();
    fever(
        s,
        "/fever/",
        "api",
        &[
            ("mark", "feed"),
            ("as", "read"),
            ("id", &s.feed_a.to_string()),
            ("before", &before),
        ],
    )
    .await;
    assert_eq!(
        ids(&fever(s, "/fever/", "api&unread_item_ids", &[]).await["unread_item_ids"]).len(),
        63,
        "nothing had arrived before the time"
    );
    let after_arrival = (tidings_store::unix_now() + 1).to_string();
    fever(
        s,
        "/fever/",
        "api",
        &[
            ("mark", "feed"),
            ("as", "read"),
            ("id", &s.feed_a.to_string()),
            ("before", &after_arrival),
        ],
    )
    .await;
    assert_eq!(
        ids(&fever(s, "/fever/", "api&unread_item_ids", &[]).await["unread_item_ids"]).len(),
        3,
        "feed B's three are left"
    );
    fever(
        s,
        "/fever/",
        "api",
        &[
            ("mark", "group"),
            ("as", "read"),
            ("id", &s.group_b.to_string()),
        ],
    )
    .await;
    assert_eq!(
        fever(s, "/fever/", "api&unread_item_ids", &[]).await["unread_item_ids"],
        ""
    );
    fever(
        s,
        "/fever/",
        "api",
        &[
            ("mark", "item"),
            ("as", "unread"),
            ("id", &seen[0].to_string()),
        ],
    )
    .await;
    // Group 0 is everything.
    let all = fever(
        s,
        "/api/fever.php",
        "api",
        &[("mark", "group"), ("as", "read"), ("id", "0")],
    )
    .await;
    assert_eq!(all["unread_item_ids"], "");
    let read = fever(
        s,
        "/fever/",
        &format!("api&items&with_ids={}", seen[62]),
        &[],
    )
    .await;
    assert_eq!(read["items"][0]["is_read"], 1);
    let bad = fever(
        s,
        "/fever/",
        "api",
        &[("mark", "item"), ("as", "eaten"), ("id", "1")],
    )
    .await;
    assert!(bad["error"].as_str().unwrap().contains("eaten"), "{bad}");
}

/// Replays the real Fever answers of `src/sync/testdata/fever`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_have_the_shape_of_real_fever_servers() {
    tidings_testkit::run_on(tidings_testkit::TestDb::sqlite(), async |db| {
        let s = setup(db).await;
        let mut replayed = 0;
        for (path, pair) in testdata_pairs("fever") {
            let key = pair["request"]["api_key"].as_str().unwrap_or(&s.digest);
            let query = pair["request"]["query"].as_str().unwrap();
            let ours = fever_with(&s.app.base, key, "/api/fever.php", query, &[]).await;
            assert_same_shape(&pair["response"]["body"], &ours, &path);
            replayed += 1;
        }
        assert!(replayed >= 5);
    })
    .await;
}

/// A Fever client from PyPI (`freshrss-api`): sign in, list, read, save, mark all read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_freshrss_api_fever_client_signs_in_lists_reads_and_saves() {
    let Some(python) = python_with("sync_fever::the_freshrss_api_fever_client", "freshrss_api")
    else {
        return;
    };
    tidings_testkit::run_on(tidings_testkit::TestDb::sqlite(), async |db| {
        let s = setup(db).await;
        let script = r#"
import sys
from freshrss_api import FreshRSSAPI
base, key = sys.argv[1], sys.argv[2]
client = FreshRSSAPI(host=base, username="ann", password=key)
print("feeds", len(client.get_feeds()["feeds"]))
print("groups", len(client.get_groups()["groups"]))
unread = client.get_unreads()
print("unread", len(unread))
client.set_mark(as_="read", id=unread[0].id)
client.set_mark(as_="saved", id=unread[1].id)
print("saved", [i.id for i in client.get_saved()] == [unread[1].id])
print("unread_after", len(client.get_unreads()))
client._call(mark="group", as_="read", id=0)
print("unread_end", len(client.get_unreads()))
try:
    FreshRSSAPI(host=base, username="ann", password="wrong")
    print("wrong key accepted")
except Exception as e:
    print("wrong key refused")
"#;
        let lines = python_lines(python, script, &[&s.app.base, &s.key]).await;
        assert_eq!(
            lines,
            [
                "feeds 2",
                "groups 2",
                "unread 63",
                "saved True",
                "unread_after 62",
                "unread_end 0",
                "wrong key refused"
            ],
            "{lines:?}"
        );
    })
    .await;
}

/// Every item, paged upwards with `since_id` as clients do.
async fn every_item(s: &Setup) -> Vec<Value> {
    let mut items: Vec<Value> = Vec::new();
    loop {
        let since = items.last().map_or(0, |i| i["id"].as_i64().unwrap());
        let answer = fever(s, "/fever/", &format!("api&items&since_id={since}"), &[]).await;
        let page = answer["items"].as_array().unwrap().clone();
        if page.is_empty() {
            return items;
        }
        items.extend(page);
    }
}

// Titles with `&` and `<` as FreshRSS's fever.php writes them (full-width `＆`, `＜`, `＞`), so
// that apps reading titles as HTML and apps reading them as text both show them whole: item
// titles and authors, feed titles.
on_both_engines!(titles_show_whole_as_text_and_as_html, |db| {
    let s = setup(db).await;
    let user_id = s
        .app
        .store
        .user_credentials("ann")
        .await
        .unwrap()
        .unwrap()
        .0
        .id;
    crate::sync_clients::add_awkward_titles(&s.app.store, user_id, s.feed_b).await;
    let item = every_item(&s)
        .await
        .into_iter()
        .find(|i| i["title"] == crate::sync_clients::AWKWARD_TITLE_SENT)
        .expect("the item, titled as FreshRSS writes it");
    let answer = fever(&s, "/fever/", "api&feeds", &[]).await;
    assert_eq!(item["author"], "Ann ＆ ＜Bob＞", "{item}");
    let feed = answer["feeds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == s.feed_b)
        .cloned()
        .unwrap();
    assert_eq!(feed["title"], "News ＆ ＜Views＞", "{feed}");
});

// A server address typed with a trailing slash makes apps ask for `//fever/`,
// `//api/fever.php` or `/fever//`: served as the path with one slash.
on_both_engines!(a_typed_trailing_slash_still_reaches_the_api, |db| {
    let s = setup(db).await;
    for path in [
        "//fever/",
        "//api/fever.php",
        "/fever//",
        "/api/fever.php//",
    ] {
        let answer = fever(&s, path, "api&groups", &[]).await;
        assert_eq!(answer["auth"], 1, "{path}: {answer}");
        assert!(answer["groups"].is_array(), "{path}: {answer}");
    }
});

/// POSTs `api_key` to `/fever/?query`; answers the status, the content type and the body.
async fn fever_raw(s: &Setup, query: &str, key: &str) -> (StatusCode, String, String) {
    let response = Client::new()
        .post(format!("{}/fever/?{query}", s.app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&[("api_key", key)]))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    (status, content_type, response.text().await.unwrap())
}

// `api=xml` answers the Fever spec's XML form: a `response` element with one element per
// member, arrays as elements of the singular name (`items` of `item`), text escaped.
on_both_engines!(api_xml_answers_xml, |db| {
    let s = setup(db).await;
    let (status, content_type, body) =
        fever_raw(&s, "api=xml&groups&items&since_id=0", &s.digest).await;
    assert_eq!(status, StatusCode::OK);
    assert!(content_type.starts_with("text/xml"), "{content_type}");
    assert!(
        body.starts_with("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<response>"),
        "{body}"
    );
    assert!(body.ends_with("</response>"), "{body}");
    for part in [
        "<api_version>3</api_version><auth>1</auth>",
        &format!("<group><id>{}</id><title>Tech</title></group>", s.group_b),
        "<feeds_groups><feeds_group><feed_ids>1</feed_ids><group_id>",
        "<total_items>63</total_items>",
        "<title>Item a-0</title>",
        "<html>&lt;p&gt;Full text of a-0&lt;/p&gt;</html>",
        "<is_saved>0</is_saved>",
    ] {
        assert!(body.contains(part), "{part} is not in {body}");
    }
    assert_eq!(body.matches("<item>").count(), 50, "{body}");
    let (status, content_type, body) = fever_raw(&s, "api=xml", "0123").await;
    assert_eq!(status, StatusCode::OK);
    assert!(content_type.starts_with("text/xml"), "{content_type}");
    assert!(body.contains("<auth>0</auth>"), "{body}");
    // Without it, JSON as before.
    let (_, content_type, _) = fever_raw(&s, "api", &s.digest).await;
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
});

// `unread_recently_read=1` (the spec's "mark recently read items as unread") undoes the latest
// marking: the items marked read within 15 s of the most recent read mark are unread again
// (as The Arsse reads it); an item read before that stays read. The answer carries the
// unread ids, as after a mark; a read-only key cannot do it.
on_both_engines!(unread_recently_read_undoes_the_latest_reads, |db| {
    let s = setup(db).await;
    let first = fever(&s, "/fever/", "api&items&since_id=0", &[]).await;
    let ids: Vec<String> = item_ids(&first)[..3]
        .iter()
        .map(|id| id.to_string())
        .collect();
    fn mark(id: &str) -> [(&str, &str); 3] {
        [("mark", "item"), ("as", "read"), ("id", id)]
    }
    fever(&s, "/fever/", "api", &mark(&ids[0])).await;
    // Read an hour ago. (Fever ids are the user's arrival numbers; states are by item.)
    let (_, first_item) = s
        .app
        .store
        .items_of_sync_ids(s.user_id, &[ids[0].parse().unwrap()])
        .await
        .unwrap()[0];
    s.app
        .store
        .execute_raw(&format!(
            "UPDATE item_states SET updated_at = updated_at - 3600 WHERE item_id = {first_item}"
        ))
        .await
        .unwrap();
    fever(&s, "/fever/", "api", &mark(&ids[1])).await;
    fever(&s, "/fever/", "api", &mark(&ids[2])).await;
    let unread = |answer: &Value| -> Vec<String> {
        self::ids(&answer["unread_item_ids"])
            .iter()
            .map(|id| id.to_string())
            .collect()
    };
    let before = fever(&s, "/fever/", "api&unread_item_ids", &[]).await;
    assert_eq!(unread(&before).len(), 60);

    // A read-only key is refused.
    let browser = s.app.signed_in("ann").await;
    let read_only = key_digest("ann", &api_key(&s.app, &browser, "read").await);
    let refused = fever_with(
        &s.app.base,
        &read_only,
        "/fever/",
        "api",
        &[("unread_recently_read", "1")],
    )
    .await;
    assert_eq!(refused["auth"], 0, "{refused}");

    let answer = fever(&s, "/fever/", "api", &[("unread_recently_read", "1")]).await;
    let now_unread = unread(&answer);
    assert_eq!(now_unread.len(), 62, "{answer}");
    assert!(now_unread.contains(&ids[1]) && now_unread.contains(&ids[2]));
    assert!(
        !now_unread.contains(&ids[0]),
        "read an hour ago, stays read"
    );
    let after = fever(&s, "/fever/", "api&unread_item_ids", &[]).await;
    assert_eq!(unread(&after), now_unread);
});

/// Pages `items` upwards from `since` as Fever clients do, until a call answers no item;
/// returns the ids seen in order.
async fn page_up(base: &str, digest: &str, since: &str) -> Vec<i64> {
    let mut seen = Vec::new();
    let mut since = since.to_string();
    for _ in 0..100 {
        let answer = fever_with(
            base,
            digest,
            "/fever/",
            &format!("api&items&since_id={since}"),
            &[],
        )
        .await;
        let page: Vec<i64> = answer["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_i64().unwrap())
            .collect();
        let Some(last) = page.last() else {
            return seen;
        };
        assert!(page.windows(2).all(|w| w[0] < w[1]), "upwards: {page:?}");
        since = last.to_string();
        seen.extend(page);
    }
    panic!("paging up never ended");
}

// Read You's first Fever sync asks `items&since_id=` with an empty value and pages up from
// the last id it gets (app/src/main/java/me/ash/reader/infrastructure/rss/provider/fever/
// FeverAPI.kt and domain/service/FeverRssService.kt in github.com/Ashinch/ReadYou).
on_both_engines!(
    an_empty_since_id_starts_at_the_oldest_and_every_item_arrives,
    |db| {
        let s = setup(db).await;
        let first = page_up(&s.app.base, &s.digest, "").await;
        assert_eq!(first.len(), 63, "every item, from the oldest up");
        let unique: std::collections::HashSet<i64> = first.iter().copied().collect();
        assert_eq!(unique.len(), 63);
        // The first page is the oldest arrivals: feed A's, oldest published first.
        let page = fever(&s, "/fever/", "api&items&since_id=", &[]).await;
        assert_eq!(page["items"][0]["title"], "Item a-0");
        let mark = *first.last().unwrap();

        // Fetched after that sync but published before it: above the mark all the same.
        add_items(&s.app.store, s.feed_a, "late", -5..-4).await;
        let later = page_up(&s.app.base, &s.digest, &mark.to_string()).await;
        assert_eq!(later.len(), 1);
        let late = fever(
            &s,
            "/fever/",
            &format!("api&items&with_ids={}", later[0]),
            &[],
        )
        .await;
        assert_eq!(late["items"][0]["title"], "Item late--5");
        // Ids stay what they were.
        assert_eq!(page_up(&s.app.base, &s.digest, "0").await[..63], first[..]);
    }
);

// A second user follows a feed the first already has: its backlog comes above the ids the
// second user's app already holds.
on_both_engines!(a_shared_feeds_backlog_reaches_a_new_subscribers_app, |db| {
    let s = setup(db).await;
    let bob = s.app.user("bob", false).await;
    let browser = s.app.signed_in("bob").await;
    let key = api_key(&s.app, &browser, "read_write").await;
    let digest = key_digest("bob", &key);
    let (_, feed_c) = tidings_testkit::follow(&s.app.store, bob, "https://c.example/feed").await;
    add_items(&s.app.store, feed_c, "c", 0..3).await;
    let had = page_up(&s.app.base, &digest, "").await;
    assert_eq!(had.len(), 3);
    tidings_testkit::follow(&s.app.store, bob, "https://a.example/feed").await;
    let backlog = page_up(&s.app.base, &digest, &had.last().unwrap().to_string()).await;
    assert_eq!(backlog.len(), 60, "feed A's sixty items");
    let unread = fever_with(&s.app.base, &digest, "/fever/", "api&unread_item_ids", &[]).await;
    assert_eq!(ids(&unread["unread_item_ids"]).len(), 63);
    // Marks by those ids reach the right items, for bob alone.
    let one = backlog[0].to_string();
    let marked = fever_with(
        &s.app.base,
        &digest,
        "/fever/",
        "api",
        &[("mark", "item"), ("as", "read"), ("id", &one)],
    )
    .await;
    assert_eq!(ids(&marked["unread_item_ids"]).len(), 62);
    let ann_unread = fever(&s, "/fever/", "api&unread_item_ids", &[]).await;
    assert_eq!(
        ids(&ann_unread["unread_item_ids"]).len(),
        63,
        "ann's states are hers"
    );
});

// Fever apps take `unread_item_ids` as the whole truth: Read You marks read every item it
// holds that the list leaves out (FeverRssService.sync, step 4). The list held at most
// 100,000 ids, the oldest, so an app of a user with more unread read the newer ones for them.
on_both_engines!(
    unread_ids_and_mark_before_reach_every_unread_item_past_a_hundred_thousand,
    |db| {
        let s = setup(db).await;
        const MORE: i64 = 100_001;
        let columns = "feed_id, identity_key, guid, url, title, author, content, summary,
                   published_at, is_date_estimated, fetched_at, changed_at, content_hash";
        let values = format!(
            "{feed}, 'bulk:' || k, 'bulk-' || k, NULL, 'Bulk ' || k, NULL, NULL, NULL,
         {BASE} + 100000 + k, FALSE, {BASE}, {BASE}, 'h' || k",
            feed = s.feed_b
        );
        let insert = if db.url().starts_with("sqlite:") {
            format!(
                "WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < {MORE})
             INSERT INTO items ({columns}) SELECT {values} FROM n"
            )
        } else {
            format!(
                "INSERT INTO items ({columns}) SELECT {values} FROM generate_series(1, {MORE}) AS k"
            )
        };
        s.app.store.execute_raw(&insert).await.unwrap();
        let answer = fever(&s, "/fever/", "api&unread_item_ids", &[]).await;
        let unread = ids(&answer["unread_item_ids"]);
        assert_eq!(unread.len() as i64, 63 + MORE);
        assert!(
            unread.windows(2).all(|w| w[0] < w[1]),
            "lowest first, each once"
        );
        // The newest arrival is there, and a mark by its id takes it out of the list it answers.
        let newest = unread.last().unwrap().to_string();
        let marked = fever(
            &s,
            "/fever/",
            "api",
            &[("mark", "item"), ("as", "read"), ("id", &newest)],
        )
        .await;
        let after = ids(&marked["unread_item_ids"]);
        assert_eq!(after.len(), unread.len() - 1);
        assert!(!after.contains(unread.last().unwrap()));
        // "Mark all read before T" (group 0) reads every one of them, not the 100,000 oldest
        // (one page of ids) as it did.
        let before = (tidings_store::unix_now() + 2).to_string();
        let marked = fever(
            &s,
            "/fever/",
            "api",
            &[
                ("mark", "group"),
                ("as", "read"),
                ("id", "0"),
                ("before", &before),
            ],
        )
        .await;
        assert_eq!(
            ids(&marked["unread_item_ids"]),
            Vec::<i64>::new(),
            "nothing is left unread"
        );
    }
);
