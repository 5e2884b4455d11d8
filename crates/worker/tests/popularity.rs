//! Popularity (F40) against a stand-in of Hatena Bookmark's bulk count endpoint on 127.0.0.1,
//! on SQLite and PostgreSQL: calls carry at most 50 links and are spaced, a cycle makes at most
//! its calls, failures (500, 429 with Retry-After, an answer that is not JSON) back off
//! exponentially and change no count, counts are fetched again after 24 h, and a link the
//! source does not list is counted 0 while an item never asked stays unknown.

use tidings_testkit::on_both_engines;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{TestServer, fetcher_with, user, wait_until};
use axum::Router;
use axum::extract::RawQuery;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tidings_fetch::{ClientConfig, GuardedClient};
use tidings_store::{NewItem, Store};
use tidings_testkit::follow;
use tidings_worker::popularity::configured_job;
use tidings_worker::{
    CountError, CountSource, Fetcher, HatenaBookmarks, PopularityConfig, PopularitySource,
    drain_enrichment, run_enrichment,
};
use url::Url;

/// What the stand-in answers to its next call.
#[derive(Debug, Clone)]
enum Reply {
    /// The counts it knows, as Hatena does.
    Counts,
    /// An error status, with a `Retry-After` when given.
    Status(StatusCode, Option<&'static str>),
    /// A 200 whose body is not JSON.
    Garbage,
}

/// A call the stand-in received: when, and the links it asked about.
type Call = (Instant, Vec<String>);

/// A stand-in of Hatena Bookmark's `/count/entries`, recording each call's time and links.
#[derive(Clone, Default)]
struct Hatena {
    calls: Arc<Mutex<Vec<Call>>>,
    script: Arc<Mutex<VecDeque<Reply>>>,
    counts: Arc<Mutex<HashMap<String, i64>>>,
}

impl Hatena {
    async fn start(&self) -> TestServer {
        let hatena = self.clone();
        let router = Router::new().route(
            "/count/entries",
            get(move |RawQuery(query): RawQuery| {
                let hatena = hatena.clone();
                async move { hatena.answer(query.unwrap_or_default()) }
            }),
        );
        TestServer::start(router).await
    }

    fn answer(&self, query: String) -> Response {
        let links: Vec<String> = url::form_urlencoded::parse(query.as_bytes())
            .filter(|(key, _)| key == "url")
            .map(|(_, value)| value.into_owned())
            .collect();
        self.calls
            .lock()
            .unwrap()
            .push((Instant::now(), links.clone()));
        let reply = self
            .script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Reply::Counts);
        match reply {
            Reply::Counts => {
                let counts = self.counts.lock().unwrap();
                // Like Hatena, links without bookmarks are left out.
                let answer: serde_json::Map<String, serde_json::Value> = links
                    .iter()
                    .filter_map(|link| counts.get(link).map(|n| (link.clone(), (*n).into())))
                    .collect();
                axum::Json(answer).into_response()
            }
            Reply::Status(status, retry_after) => match retry_after {
                Some(wait) => (status, [(header::RETRY_AFTER, wait)], "slow down").into_response(),
                None => (status, "failed").into_response(),
            },
            Reply::Garbage => (
                [(header::CONTENT_TYPE, "application/json")],
                "<html>maintenance</html>",
            )
                .into_response(),
        }
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
}

/// A fetcher whose client keeps the default guard (no private networks): the stand-in on
/// 127.0.0.1 is reached only because it is the configured base.
fn popularity_fetcher(
    store: &Store,
    base: &str,
    change: impl FnOnce(&mut PopularityConfig),
) -> Fetcher {
    let client = GuardedClient::new(ClientConfig {
        timeout: Duration::from_secs(5),
        ..ClientConfig::default()
    })
    .unwrap();
    fetcher_with(store, client, |config| {
        config.popularity.source = Some(PopularitySource::Hatena {
            base_url: Url::parse(base).unwrap(),
        });
        change(&mut config.popularity);
    })
}

/// `count` items in a feed ann follows, published over the last hours, linking to
/// `https://site.example/N`; answers their ids by N.
async fn items(store: &Store, count: usize) -> Vec<i64> {
    let ann = user(store, "ann").await;
    let (_, feed) = follow(store, ann, "https://site.example/feed").await;
    let now = chrono::Utc::now().timestamp();
    let new: Vec<NewItem> = (0..count)
        .map(|n| NewItem {
            guid: Some(format!("g{n}")),
            url: Some(link(n)),
            title: Some(format!("Item {n}")),
            published: Some(now - 60 * (n as i64 + 1)),
            ..NewItem::default()
        })
        .collect();
    store.upsert_items(feed, &new, now).await.unwrap();
    // Read the ids back by link: the insert order is not the ids' order.
    let mut ids = vec![0; count];
    for id in store.feed_item_ids(feed).await.unwrap() {
        let item = store.item(ann, id).await.unwrap();
        let n = number(item.url.as_deref().unwrap());
        ids[n] = id;
    }
    ids
}

fn link(n: usize) -> String {
    match n {
        // Links that need escaping in a query survive the round trip.
        1 => "https://site.example/1?a=b&c=d".to_owned(),
        2 => "https://site.example/2/日本語".to_owned(),
        _ => format!("https://site.example/{n}"),
    }
}

fn number(link: &str) -> usize {
    let rest = link.strip_prefix("https://site.example/").unwrap();
    rest.split(['?', '/']).next().unwrap().parse().unwrap()
}

on_both_engines!(calls_are_batched_spaced_and_capped_per_cycle, |db| {
    let store = db.migrated().await;
    let ids = items(&store, 120).await;
    let hatena = Hatena::default();
    {
        let mut counts = hatena.counts.lock().unwrap();
        for n in (0..120).filter(|n| n % 3 == 0 || *n < 3) {
            counts.insert(link(n), n as i64 + 10);
        }
    }
    let server = hatena.start().await;
    let fetcher = popularity_fetcher(&store, &server.url("/"), |config| {
        config.spacing = Duration::from_millis(300);
        config.max_calls_per_cycle = 2;
        config.cycle = Duration::from_secs(4);
    });
    let job = Arc::new(configured_job(&fetcher).expect("popularity is on"));
    let cycle_started = Instant::now();

    // Two calls of 50 links, then the cycle is used up although 20 items are due.
    assert_eq!(drain_enrichment(Arc::clone(&job), 1).await.unwrap(), 2);
    assert_eq!(drain_enrichment(Arc::clone(&job), 1).await.unwrap(), 0);
    let calls = hatena.calls();
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|(_, links)| links.len() == 50));
    // The pace is kept in whole milliseconds, and the server notes each call a moment after
    // it left (299.46 ms was seen under load): a few ms of slack, far from no spacing at all.
    assert!(
        calls[1].0 - calls[0].0 >= Duration::from_millis(290),
        "calls 300 ms apart, not {:?}",
        calls[1].0 - calls[0].0
    );
    let known = store.popularity_of(&ids[..100]).await.unwrap();
    let unknown = store.popularity_of(&ids[100..]).await.unwrap();
    assert_eq!(known.len(), 100);
    assert!(unknown.is_empty(), "not asked yet: unknown, not 0");

    // The next cycle asks for the rest.
    tokio::time::sleep(Duration::from_secs(4).saturating_sub(cycle_started.elapsed())).await;
    assert_eq!(drain_enrichment(Arc::clone(&job), 1).await.unwrap(), 1);
    let calls = hatena.calls();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[2].1.len(), 20);
    // Every link was asked once.
    let mut asked: Vec<usize> = calls
        .iter()
        .flat_map(|(_, l)| l.iter().map(|l| number(l)))
        .collect();
    asked.sort();
    assert_eq!(asked, (0..120).collect::<Vec<_>>());

    let counts = store.popularity_of(&ids[..]).await.unwrap();
    assert_eq!(counts.len(), 120);
    assert_eq!(counts[&ids[1]].count, 11, "a link with & came back whole");
    assert_eq!(
        counts[&ids[2]].count, 12,
        "a link with Japanese came back whole"
    );
    assert_eq!(counts[&ids[99]].count, 109);
    assert_eq!(
        counts[&ids[100]].count, 0,
        "not listed by the source: no bookmarks"
    );
    let now = chrono::Utc::now().timestamp();
    assert!((now - counts[&ids[0]].fetched_at).abs() < 30);
    let metrics = fetcher.metrics().snapshot();
    assert_eq!(
        (metrics.popularity_calls_ok, metrics.popularity_calls_failed),
        (3, 0)
    );
});

on_both_engines!(failures_back_off_exponentially_and_keep_no_count, |db| {
    let store = db.migrated().await;
    let ids = items(&store, 3).await;
    let hatena = Hatena::default();
    hatena.counts.lock().unwrap().insert(link(0), 5);
    hatena.script.lock().unwrap().extend([
        Reply::Status(StatusCode::INTERNAL_SERVER_ERROR, None),
        Reply::Status(StatusCode::TOO_MANY_REQUESTS, Some("2")),
        Reply::Garbage,
        Reply::Counts,
    ]);
    let server = hatena.start().await;
    let fetcher = popularity_fetcher(&store, &server.url(""), |config| {
        config.spacing = Duration::from_millis(150);
    });
    let job = Arc::new(configured_job(&fetcher).expect("popularity is on"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let runner = tokio::spawn(run_enrichment(job, 1, Duration::from_millis(50), async {
        let _ = stopped.await;
    }));

    wait_until(Duration::from_secs(10), "the first failure", || async {
        store
            .popularity_source_state("hatena")
            .await
            .unwrap()
            .is_some_and(|state| state.failures == 1)
    })
    .await;
    assert!(
        store.popularity_of(&ids).await.unwrap().is_empty(),
        "a failure stores nothing"
    );
    let state = store
        .popularity_source_state("hatena")
        .await
        .unwrap()
        .unwrap();
    assert!(state.last_error.unwrap().contains("500"));

    wait_until(
        Duration::from_secs(20),
        "the counts after three failures",
        || async { store.popularity_of(&ids).await.unwrap().len() == 3 },
    )
    .await;
    let _ = stop.send(());
    runner.await.unwrap();
    let calls = hatena.calls();
    assert_eq!(calls.len(), 4, "one call per attempt: {calls:?}");
    let gaps: Vec<Duration> = calls.windows(2).map(|w| w[1].0 - w[0].0).collect();
    // After one failure: twice the spacing; after the 429: its Retry-After (2 s) rather than
    // four times the spacing; after the third: eight times the spacing.
    assert!(gaps[0] >= Duration::from_millis(300), "gaps {gaps:?}");
    assert!(gaps[1] >= Duration::from_millis(2000), "gaps {gaps:?}");
    assert!(gaps[2] >= Duration::from_millis(1200), "gaps {gaps:?}");
    let state = store
        .popularity_source_state("hatena")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((state.failures, state.last_error), (0, None));
    let counts = store.popularity_of(&ids).await.unwrap();
    assert_eq!(counts[&ids[0]].count, 5);
    assert_eq!(counts[&ids[1]].count, 0);
    let metrics = fetcher.metrics().snapshot();
    assert_eq!(
        (metrics.popularity_calls_ok, metrics.popularity_calls_failed),
        (1, 3)
    );
});

on_both_engines!(counts_are_fetched_again_after_a_day, |db| {
    let store = db.migrated().await;
    let ids = items(&store, 3).await;
    let now = chrono::Utc::now().timestamp();
    // Item 0 was counted 25 h ago, item 1 an hour ago; item 2 never.
    store
        .save_popularity("hatena", "earlier", &[(ids[0], 1)], now - 25 * 3600, 0)
        .await
        .unwrap();
    store
        .save_popularity("hatena", "earlier", &[(ids[1], 2)], now - 3600, 0)
        .await
        .unwrap();
    let hatena = Hatena::default();
    hatena.counts.lock().unwrap().insert(link(0), 30);
    hatena.counts.lock().unwrap().insert(link(1), 40);
    let server = hatena.start().await;
    let fetcher = popularity_fetcher(&store, &server.url("/"), |config| {
        config.spacing = Duration::from_millis(100);
    });
    let job = Arc::new(configured_job(&fetcher).unwrap());
    assert_eq!(drain_enrichment(job, 1).await.unwrap(), 1);
    let calls = hatena.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].1,
        [link(2), link(0)],
        "the unknown one first, then the stale one"
    );
    let counts = store.popularity_of(&ids).await.unwrap();
    assert_eq!(counts[&ids[0]].count, 30);
    assert!(counts[&ids[0]].fetched_at >= now);
    assert_eq!(counts[&ids[1]].count, 2, "an hour-old count is kept");
    assert_eq!(counts[&ids[2]].count, 0);
});

#[tokio::test]
async fn popularity_is_off_by_default_and_the_guard_still_refuses_other_local_hosts() {
    let db = tidings_testkit::TestDb::sqlite();
    let store = db.migrated().await;
    let fetcher = crate::support::fetcher(&store);
    assert!(configured_job(&fetcher).is_none(), "no source configured");

    let hatena = Hatena::default();
    let server = hatena.start().await;
    // The base is allowed by its address; a local name is still refused.
    let by_name = Url::parse(&format!("http://localhost:{}/", server.addr.port())).unwrap();
    let source = HatenaBookmarks::new(&by_name, &ClientConfig::default()).unwrap();
    let refused = source.counts(&[link(0)]).await;
    assert!(matches!(refused, Err(CountError::Fetch(_))), "{refused:?}");
    assert!(hatena.calls().is_empty());
    let by_address = Url::parse(&server.url("/")).unwrap();
    let source = HatenaBookmarks::new(&by_address, &ClientConfig::default()).unwrap();
    assert_eq!(source.max_urls(), 50);
    assert!(source.counts(&[link(0)]).await.unwrap().is_empty());
    assert_eq!(hatena.calls().len(), 1);
}
