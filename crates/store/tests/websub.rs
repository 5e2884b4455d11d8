//! WebSub rows (F18) on both engines: discovery keeps a feed's row and its callback across
//! fetches and makes it due when the hub or topic changes; the subscriber's claims are leased
//! and take feeds nobody follows at once; a request is recorded before it goes out; only a
//! pending request is verified; denial, pushes, and the fetcher's view of an active lease.

use tidings_store::{Store, WebSubMode, WebSubRequest, WebSubState};
use tidings_testkit::{add_user as user, follow, on_both_engines};

const T: i64 = 1_700_000_000;

on_both_engines!(discovery_claims_verification_and_the_end, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (subscription, feed) = follow(&store, ann, "https://blog.example/feed").await;
    assert!(store.websub_subscription(feed).await.unwrap().is_none());
    // A feed that names no hub gets no row.
    store
        .record_websub_discovery(feed, None, "t0", "s0", T)
        .await
        .unwrap();
    assert!(store.websub_subscription(feed).await.unwrap().is_none());

    let found = Some(("https://hub.example/", "https://blog.example/feed?self"));
    store
        .record_websub_discovery(feed, found, "token-1", "secret-1", T)
        .await
        .unwrap();
    let row = store.websub_subscription(feed).await.unwrap().unwrap();
    assert_eq!(row.hub_url.as_deref(), Some("https://hub.example/"));
    assert_eq!(
        row.topic_url.as_deref(),
        Some("https://blog.example/feed?self")
    );
    assert_eq!(row.callback_token, "token-1");
    assert_eq!(row.state, WebSubState::Inactive);
    assert!(row.has_subscribers);
    assert_eq!(row.next_action_at, T);

    // Claims are leased: a second claimer gets nothing until the lease ends.
    let claimed = store.claim_websub_due("w1", T, 10, 60).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert!(
        store
            .claim_websub_due("w2", T, 10, 60)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .claim_websub_due("w2", T + 61, 10, 60)
            .await
            .unwrap()
            .len(),
        1
    );
    let request = WebSubRequest {
        mode: WebSubMode::Subscribe,
        hub_url: "https://hub.example/",
        topic_url: "https://blog.example/feed?self",
        callback_token: "token-1",
        secret: "secret-1",
    };
    assert!(
        !store
            .websub_request_sent(feed, "w1", &request, T)
            .await
            .unwrap(),
        "w1 lost its claim to w2"
    );
    assert!(
        store
            .websub_request_sent(feed, "w2", &request, T)
            .await
            .unwrap()
    );
    let row = store.websub_by_token("token-1").await.unwrap().unwrap();
    assert_eq!(row.pending_mode, Some(WebSubMode::Subscribe));
    assert_eq!(row.sub_hub_url.as_deref(), Some("https://hub.example/"));

    // Only the pending mode is verified, once.
    assert!(
        !store
            .websub_verified("token-1", WebSubMode::Unsubscribe, 0, T, T)
            .await
            .unwrap()
    );
    assert!(
        !store
            .websub_verified("nope", WebSubMode::Subscribe, 100, T, T)
            .await
            .unwrap()
    );
    assert!(
        store
            .websub_verified("token-1", WebSubMode::Subscribe, 100, T, T + 80)
            .await
            .unwrap()
    );
    assert!(
        !store
            .websub_verified("token-1", WebSubMode::Subscribe, 100, T, T + 80)
            .await
            .unwrap(),
        "no longer pending"
    );
    // The hub may verify before it answers: its answer keeps the renewal time.
    store
        .websub_request_accepted(feed, "w2", T + 900)
        .await
        .unwrap();
    let row = store.websub_subscription(feed).await.unwrap().unwrap();
    assert_eq!(row.state, WebSubState::Active);
    assert_eq!(row.active_until, Some(T + 100));
    assert_eq!(row.next_action_at, T + 80);
    assert!(row.is_active(T + 99) && !row.is_active(T + 100));

    // The fetcher sees the lease, to poll slowly.
    let due = store
        .claim_feed(feed, "fetcher", T, 60)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(due.push_until, Some(T + 100));

    phase_rediscovery_pushes_and_the_end(&store, ann, subscription, feed, found, request).await;
});

/// The same hub again keeps the row, a new hub makes it due; pushes are counted; the last
/// subscriber leaving makes the row due at once; failures back off and denials rest the row;
/// a feed without a hub forgets it.
async fn phase_rediscovery_pushes_and_the_end(
    store: &Store,
    ann: i64,
    subscription: i64,
    feed: i64,
    found: Option<(&str, &str)>,
    request: WebSubRequest<'_>,
) {
    // The same hub again keeps the row's callback and schedule; a new hub makes it due.
    store
        .record_websub_discovery(feed, found, "token-2", "secret-2", T + 5)
        .await
        .unwrap();
    let row = store.websub_subscription(feed).await.unwrap().unwrap();
    assert_eq!(
        (row.callback_token.as_str(), row.next_action_at),
        ("token-1", T + 80)
    );
    let moved = Some(("https://hub2.example/", "https://blog.example/feed?self"));
    store
        .record_websub_discovery(feed, moved, "token-3", "secret-3", T + 6)
        .await
        .unwrap();
    let row = store.websub_subscription(feed).await.unwrap().unwrap();
    assert_eq!(row.next_action_at, T + 6);
    assert_eq!(row.hub_url.as_deref(), Some("https://hub2.example/"));
    assert_eq!(row.sub_hub_url.as_deref(), Some("https://hub.example/"));
    store.websub_release(feed, "nobody", T + 500).await.unwrap();
    assert_eq!(
        store
            .websub_subscription(feed)
            .await
            .unwrap()
            .unwrap()
            .next_action_at,
        T + 6,
        "only the claim's owner releases"
    );

    // Pushes are counted by outcome.
    store
        .record_websub_push("token-1", true, T + 7)
        .await
        .unwrap();
    store
        .record_websub_push("token-1", false, T + 8)
        .await
        .unwrap();
    let row = store.websub_subscription(feed).await.unwrap().unwrap();
    assert_eq!(
        (row.pushes, row.rejected_pushes, row.last_push_at),
        (1, 1, Some(T + 7))
    );

    // The last subscriber leaves: the active row is due at once, whatever its schedule.
    let claimed = store.claim_websub_due("w3", T + 10, 10, 60).await.unwrap();
    assert_eq!(claimed.len(), 1, "due since the new hub");
    store.websub_release(feed, "w3", T + 5000).await.unwrap();
    assert!(
        store
            .claim_websub_due("w3", T + 11, 10, 60)
            .await
            .unwrap()
            .is_empty()
    );
    store.unsubscribe(ann, subscription).await.unwrap();
    let claimed = store.claim_websub_due("w3", T + 12, 10, 60).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert!(!claimed[0].has_subscribers);

    // A failed request clears its pending mark and backs off; a denial rests the row.
    store
        .websub_request_sent(
            feed,
            "w3",
            &WebSubRequest {
                mode: WebSubMode::Unsubscribe,
                ..request
            },
            T + 12,
        )
        .await
        .unwrap();
    store
        .websub_request_failed(feed, "w3", WebSubMode::Unsubscribe, "HTTP 500\u{0}", T + 72)
        .await
        .unwrap();
    let row = store.websub_subscription(feed).await.unwrap().unwrap();
    assert_eq!(row.pending_mode, None);
    assert_eq!((row.failures, row.next_action_at), (1, T + 72));
    assert_eq!(row.last_error.as_deref(), Some("HTTP 500"));
    assert!(
        store
            .claim_websub_due("w3", T + 13, 10, 60)
            .await
            .unwrap()
            .is_empty(),
        "the back-off holds for a feed nobody follows too"
    );
    store.websub_retry_now(feed, T + 14).await.unwrap();
    assert_eq!(
        store
            .claim_websub_due("w3", T + 14, 10, 60)
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(
        store
            .websub_denied("token-1", Some("no\u{7} thanks"), T + 999)
            .await
            .unwrap()
    );
    let row = store.websub_subscription(feed).await.unwrap().unwrap();
    assert_eq!(row.state, WebSubState::Denied);
    assert_eq!(row.denied_reason.as_deref(), Some("no thanks"));
    assert!(!store.websub_denied("unknown", None, T).await.unwrap());
    let counts = store.websub_counts(T + 20).await.unwrap();
    assert_eq!(counts, [("denied".to_owned(), 1)]);

    // The feed stops advertising a hub: its row forgets the hub.
    store
        .record_websub_discovery(feed, None, "x", "y", T + 30)
        .await
        .unwrap();
    let row = store.websub_subscription(feed).await.unwrap().unwrap();
    assert_eq!(row.hub_url, None);
    assert_eq!(row.sub_hub_url.as_deref(), Some("https://hub.example/"));
}
