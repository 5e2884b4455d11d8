//! Several workers over 1,000 due feeds, on SQLite and PostgreSQL: every feed is fetched
//! exactly once per due time, as counted by the server that serves them.

use tidings_testkit::on_both_engines;

use std::time::Duration;

use crate::support::{TestServer, fetcher_with, local_client, rss, user, wait_until};
use axum::Router;
use axum::extract::Path;
use axum::routing::get;
use tidings_store::{NewSubscription, Store};
use tidings_worker::Worker;

const FEEDS: usize = 1000;

/// Runs `count` workers until every feed has been checked at or after `since`, then stops
/// them.
async fn run_workers(store: &Store, count: usize, since: i64) {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut running = Vec::new();
    for _ in 0..count {
        let worker = Worker::new(fetcher_with(
            store,
            local_client(Duration::from_secs(10)),
            |config| config.poll_interval = Duration::from_millis(200),
        ));
        let mut stopped = stopped.clone();
        running.push(tokio::spawn(async move {
            worker
                .run(async move {
                    let _ = stopped.wait_for(|s| *s).await;
                })
                .await;
        }));
    }
    wait_until(Duration::from_secs(240), "every feed fetched", || async {
        let feeds = store.list_feeds().await.unwrap();
        let mut done = 0;
        for feed in &feeds {
            let state = store.feed_fetch_state(feed.id).await.unwrap();
            if state.last_checked_at.is_some_and(|at| at >= since) && state.lease_until.is_none() {
                done += 1;
            }
        }
        done == FEEDS
    })
    .await;
    stop.send(true).unwrap();
    for task in running {
        task.await.unwrap();
    }
}

on_both_engines!(
    two_then_eight_workers_fetch_each_due_feed_exactly_once,
    |db| {
        let store = db.migrated().await;
        let alice = user(&store, "alice").await;
        let server = TestServer::start(Router::new().route(
            "/feed/{id}",
            get(|Path(id): Path<usize>| async move { rss(&id.to_string(), 2) }),
        ))
        .await;
        for id in 0..FEEDS {
            store
                .subscribe(
                    alice,
                    &NewSubscription {
                        feed_url: server.url(&format!("/feed/{id}")),
                        ..Default::default()
                    },
                )
                .await
                .unwrap();
        }
        for (round, workers) in [(1, 2), (2, 8)] {
            let since = chrono::Utc::now().timestamp();
            if round > 1 {
                store
                    .execute_raw("UPDATE feed_fetch_state SET next_check_at = 0")
                    .await
                    .unwrap();
            }
            run_workers(&store, workers, since).await;
            let hits = server.hits_by_path();
            assert_eq!(hits.len(), FEEDS, "round {round}");
            let wrong: Vec<(&String, &usize)> = hits.iter().filter(|(_, n)| **n != round).collect();
            assert!(
                wrong.is_empty(),
                "round {round} with {workers} workers: {wrong:?}"
            );
        }
    }
);
