//! What the worker's tests share besides testkit's server and waiting: fetchers that may reach
//! the local servers, and the feed most tests fetch.

use std::time::Duration;

use tidings_fetch::{AddressPolicy, ClientConfig, GuardedClient};
use tidings_store::Store;
use tidings_testkit::feeds::{Item, Rss, escape};
use tidings_worker::{Fetcher, WorkerConfig};

/// A client that may reach loopback (the tests' servers) with a short timeout.
pub fn local_client(timeout: Duration) -> GuardedClient {
    GuardedClient::new(ClientConfig {
        timeout,
        address_policy: AddressPolicy {
            allow_private_networks: true,
            ..AddressPolicy::default()
        },
        ..ClientConfig::default()
    })
    .unwrap()
}

/// A fetcher on `store` reaching loopback, favicons off unless the test wants them.
pub fn fetcher(store: &Store) -> Fetcher {
    fetcher_with(store, local_client(Duration::from_secs(5)), |_| {})
}

/// A fetcher with a given client and config changes.
pub fn fetcher_with(
    store: &Store,
    client: GuardedClient,
    change: impl FnOnce(&mut WorkerConfig),
) -> Fetcher {
    let mut config = WorkerConfig {
        favicons: false,
        ..WorkerConfig::default()
    };
    change(&mut config);
    Fetcher::new(store.clone(), client, config)
}

// `user` (a user named `name`; returns the id) is testkit's `add_user`.
pub use tidings_testkit::add_user as user;
pub use tidings_testkit::{TestServer, wait_until};

/// Subscribes `user_id` to `url`; returns the feed id.
pub async fn follow(store: &Store, user_id: i64, url: &str) -> i64 {
    tidings_testkit::follow(store, user_id, url).await.1
}

/// An RSS 2.0 document with `items` items, an hour apart up to now, whose guids carry `tag`
/// and whose descriptions hold a script for the sanitizer to remove.
pub fn rss(tag: &str, items: usize) -> String {
    let now = chrono::Utc::now();
    let mut feed = Rss::new(&format!("Feed {tag}")).link("https://site.example/");
    for i in 0..items {
        feed = feed.item(Item {
            title: format!("Item {i} {tag}"),
            link: Some(format!("https://site.example/{tag}/{i}")),
            guid: format!("{tag}-{i}"),
            published: Some(now - chrono::Duration::hours(i as i64 + 1)),
            description: Some(escape(&format!("<p>Body {i}</p><script>alert(1)</script>"))),
        });
    }
    feed.build()
}
