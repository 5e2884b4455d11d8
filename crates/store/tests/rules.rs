//! Rules (issue 33) on both engines: run on each new item for each subscriber in the fetch's
//! transaction (hide, keep only, read, star, label), honoured by listings, counts and the
//! arrival order the sync APIs read; previewed; applied once to existing items and undone.

use tidings_testkit::{add_user as user, follow, on_both_engines};

use tidings_store::{
    ItemFilter, ItemQuery, ItemTag, NewItem, RuleInput, RuleScope, RuleSpec, Store, StoreError,
    SubscriptionChanges, SyncIds, SyncOrder, SyncQuery, TaggedItem,
};

const BASE: i64 = 1_700_000_000;

fn item(guid: &str, title: &str, content: &str) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        title: Some(title.into()),
        content: Some(format!("<p>{content}</p>")),
        published: Some(BASE + guid.len() as i64 * 60),
        ..NewItem::default()
    }
}

fn rule(name: &str, scope: RuleScope, query: &str, actions: &[&str]) -> RuleInput {
    RuleInput {
        name: name.into(),
        enabled: true,
        position: None,
        spec: RuleSpec {
            scope,
            query: Some(query.into()),
            actions: actions.iter().map(|a| a.to_string()).collect(),
            ..RuleSpec::default()
        },
    }
}

/// Titles of the user's items in a listing, sorted.
async fn titles(store: &Store, user_id: i64, filter: ItemFilter) -> Vec<String> {
    tidings_testkit::listed_titles(store, user_id, filter).await
}

/// The sync ids of the user's arrival order (what the sync APIs list), oldest first.
async fn arrival_ids(store: &Store, user_id: i64) -> Vec<i64> {
    let query = SyncQuery {
        ids_are: SyncIds::Arrival,
        order: SyncOrder::IdAscending,
        limit: 1000,
        ..SyncQuery::default()
    };
    let refs = store.sync_item_ids(user_id, &query).await.unwrap();
    refs.iter().map(|r| r.id).collect()
}

/// How many items the user's arrival order (the sync APIs) holds.
async fn arrivals(store: &Store, user_id: i64) -> usize {
    arrival_ids(store, user_id).await.len()
}

async fn unread(store: &Store, user_id: i64) -> i64 {
    let counts = store.unread_counts(user_id).await.unwrap();
    counts.subscriptions.iter().map(|c| c.unread).sum()
}

on_both_engines!(rules_act_on_arriving_items_for_their_user_alone, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let (_, feed) = follow(&store, ann, "https://wire.example/feed").await;
    follow(&store, bob, "https://wire.example/feed").await;
    let all = RuleScope::default();
    store
        .create_rule(ann, &rule("ads", all, "sponsored", &["hide"]))
        .await
        .unwrap();
    store
        .create_rule(ann, &rule("rust", all, "rust", &["star", "label:Lang"]))
        .await
        .unwrap();
    store
        .create_rule(ann, &rule("sport", all, "title:football", &["read"]))
        .await
        .unwrap();
    store
        .create_rule(ann, &rule("tokyo", all, "東京", &["label:Tokyo"]))
        .await
        .unwrap();
    let items = [
        item("a", "Sponsored: a course", "buy now"),
        item("bb", "Rust 2.0", "the compiler"),
        item("ccc", "Football final", "a match"),
        item("dddd", "天気", "東京都の天気は晴れ"),
        item("eeeee", "Plain news", "nothing to see"),
    ];
    let written = store
        .store_fetch(feed, &items, BASE, &Default::default())
        .await
        .unwrap();
    assert_eq!(written.counts.inserted, 5);
    assert_eq!(written.rules_applied, 4);

    // Ann: the sponsored item is nowhere, the football one is read, the rust one starred.
    assert_eq!(
        titles(&store, ann, ItemFilter::All).await,
        ["Football final", "Plain news", "Rust 2.0", "天気"]
    );
    assert_eq!(
        titles(&store, ann, ItemFilter::Unread).await,
        ["Plain news", "Rust 2.0", "天気"]
    );
    assert_eq!(titles(&store, ann, ItemFilter::Starred).await, ["Rust 2.0"]);
    assert_eq!(unread(&store, ann).await, 3);
    assert_eq!(
        arrivals(&store, ann).await,
        4,
        "hidden items leave the sync APIs"
    );
    let ids: Vec<i64> = store
        .list_items(
            ann,
            &ItemQuery {
                filter: ItemFilter::All,
                limit: 200,
                ..ItemQuery::default()
            },
        )
        .await
        .unwrap()
        .items
        .iter()
        .map(|i| i.id)
        .collect();
    let mut labels: Vec<String> = store
        .item_labels(ann, &ids)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, l)| l)
        .collect();
    labels.sort();
    assert_eq!(labels, ["Lang", "Tokyo"]);

    // Bob, on the same shared feed, sees all five, unread and unstarred.
    assert_eq!(titles(&store, bob, ItemFilter::All).await.len(), 5);
    assert_eq!(unread(&store, bob).await, 5);
    assert_eq!(arrivals(&store, bob).await, 5);
    assert!(titles(&store, bob, ItemFilter::Starred).await.is_empty());
});

on_both_engines!(
    a_hidden_item_stays_out_of_the_arrival_order_on_every_path,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let (sub, feed) = follow(&store, ann, "https://wire.example/feed").await;
        store
            .create_rule(
                ann,
                &rule("ads", RuleScope::default(), "sponsored", &["hide"]),
            )
            .await
            .unwrap();
        let items = [item("a", "Sponsored", "x"), item("bb", "News", "y")];
        store.upsert_items(feed, &items, BASE).await.unwrap();
        assert_eq!(arrivals(&store, ann).await, 1);
        // Paused and resumed: the backlog that comes back leaves the hidden item out.
        for suspended in [true, false] {
            let changes = SubscriptionChanges {
                suspended: Some(suspended),
                ..SubscriptionChanges::default()
            };
            store.update_subscription(ann, sub, &changes).await.unwrap();
        }
        assert_eq!(arrivals(&store, ann).await, 1);
    }
);

on_both_engines!(keep_only_hides_the_rest_of_its_feed_only, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, wire) = follow(&store, ann, "https://wire.example/feed").await;
    let (_, blog) = follow(&store, ann, "https://blog.example/feed").await;
    let scope = RuleScope {
        feed_id: Some(wire),
        group_id: None,
    };
    store
        .create_rule(ann, &rule("only rust", scope, "rust", &["keep_only"]))
        .await
        .unwrap();
    store
        .upsert_items(
            wire,
            &[item("a", "Rust news", "x"), item("bb", "Go news", "y")],
            BASE,
        )
        .await
        .unwrap();
    store
        .upsert_items(blog, &[item("ccc", "Go on the blog", "z")], BASE)
        .await
        .unwrap();
    assert_eq!(
        titles(&store, ann, ItemFilter::All).await,
        ["Go on the blog", "Rust news"]
    );
});

on_both_engines!(a_preview_and_an_application_with_its_undo, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, feed) = follow(&store, ann, "https://wire.example/feed").await;
    let items = [
        item("a", "Sponsored: one", "x"),
        item("bb", "Sponsored: two", "y"),
        item("ccc", "News", "z"),
    ];
    store.upsert_items(feed, &items, BASE).await.unwrap();
    let ads = rule(
        "ads",
        RuleScope::default(),
        "sponsored",
        &["hide", "label:Ads"],
    );

    // A preview changes nothing and shows what the rule would catch.
    let preview = store.preview_rule(ann, &ads.spec).await.unwrap();
    assert_eq!((preview.matched, preview.looked_at), (2, 3));
    assert_eq!(preview.items.len(), 2);
    // Saving acts on items that arrive afterwards, not on these.
    let saved = store.create_rule(ann, &ads).await.unwrap();
    assert_eq!(titles(&store, ann, ItemFilter::All).await.len(), 3);

    // Applied once: both hidden (and read, and out of the arrival order).
    let applied = store.apply_rule(ann, saved.id).await.unwrap();
    assert_eq!(applied.changed, 2);
    assert_eq!(titles(&store, ann, ItemFilter::All).await, ["News"]);
    assert_eq!(unread(&store, ann).await, 1);
    assert_eq!(arrivals(&store, ann).await, 1);
    // Applying again finds nothing more to change.
    assert_eq!(store.apply_rule(ann, saved.id).await.unwrap().changed, 0);

    // Undone: everything as it was.
    let restored = store
        .undo_rule_application(ann, applied.undo_id)
        .await
        .unwrap();
    assert_eq!(restored, 2);
    assert_eq!(titles(&store, ann, ItemFilter::All).await.len(), 3);
    assert_eq!(unread(&store, ann).await, 3);
    assert_eq!(arrivals(&store, ann).await, 3);
    // An undo is used once.
    assert!(matches!(
        store.undo_rule_application(ann, applied.undo_id).await,
        Err(StoreError::NotFound(_))
    ));
});

on_both_engines!(rules_are_checked_and_private, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let (_, feed) = follow(&store, ann, "https://wire.example/feed").await;
    let all = RuleScope::default();
    let saved = store
        .create_rule(ann, &rule("ads", all, "sponsored", &["hide"]))
        .await
        .unwrap();
    // Bob cannot see, change, apply or delete it.
    assert!(matches!(
        store.get_rule(bob, saved.id).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.apply_rule(bob, saved.id).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.delete_rule(bob, saved.id).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(store.list_rules(bob).await.unwrap().is_empty());
    // A feed bob does not follow is not a scope for him.
    let scoped = rule(
        "x",
        RuleScope {
            feed_id: Some(feed),
            group_id: None,
        },
        "x",
        &["read"],
    );
    assert!(matches!(
        store.create_rule(bob, &scoped).await,
        Err(StoreError::NotFound(_))
    ));
    // Bad rules are refused with the reason.
    for (query, actions) in [("", vec!["read"]), ("x", vec![]), ("x", vec!["explode"])] {
        let bad = rule("bad", all, query, &actions);
        match store.create_rule(ann, &bad).await {
            Err(StoreError::Invalid(message)) => assert!(!message.is_empty()),
            other => panic!("{query:?} {actions:?}: {other:?}"),
        }
    }
    // Order and changes.
    let second = store
        .create_rule(ann, &rule("rust", all, "rust", &["star"]))
        .await
        .unwrap();
    assert!(second.position > saved.position);
    let mut change = rule("rust!", all, "rust -go", &["star", "read"]);
    change.enabled = false;
    let updated = store.update_rule(ann, second.id, &change).await.unwrap();
    assert_eq!(updated.name, "rust!");
    assert!(!updated.enabled);
    assert_eq!(updated.spec.actions, ["star", "read"]);
    let names: Vec<String> = store
        .list_rules(ann)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, ["ads", "rust!"]);
    // A disabled rule does nothing to arrivals.
    store
        .upsert_items(feed, &[item("a", "Rust", "x")], BASE)
        .await
        .unwrap();
    assert!(titles(&store, ann, ItemFilter::Starred).await.is_empty());
});

on_both_engines!(
    a_shared_feeds_backlog_meets_the_new_subscribers_rules,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let bob = user(&store, "bob").await;
        let (_, feed) = follow(&store, bob, "https://wire.example/feed").await;
        let items = [
            item("a", "Sponsored", "x"),
            item("bb", "Rust", "y"),
            item("ccc", "Other", "z"),
        ];
        store.upsert_items(feed, &items, BASE).await.unwrap();
        let all = RuleScope::default();
        store
            .create_rule(ann, &rule("ads", all, "sponsored", &["hide"]))
            .await
            .unwrap();
        store
            .create_rule(ann, &rule("rust", all, "rust", &["star"]))
            .await
            .unwrap();
        // Ann subscribes to the feed bob already follows: its backlog arrives for her now.
        follow(&store, ann, "https://wire.example/feed").await;
        assert_eq!(
            titles(&store, ann, ItemFilter::All).await,
            ["Other", "Rust"]
        );
        assert_eq!(titles(&store, ann, ItemFilter::Starred).await, ["Rust"]);
        assert_eq!(arrivals(&store, ann).await, 2);
        assert_eq!(unread(&store, ann).await, 2);
        assert_eq!(titles(&store, bob, ItemFilter::All).await.len(), 3);
    }
);

/// An item published `days` days before `now`.
fn aged(guid: &str, title: &str, now: i64, days: f64) -> NewItem {
    NewItem {
        published: Some(now - (days * 86_400.0) as i64),
        ..item(guid, title, "text")
    }
}

/// A rule in `scope` with only an age condition: items published more than `days` ago.
fn aged_rule(name: &str, scope: RuleScope, days: i64, actions: &[&str]) -> RuleInput {
    let mut input = rule(name, scope, "", actions);
    input.spec.query = None;
    input.spec.older_than_days = Some(days);
    input
}

/// The id of the user's item titled `title`.
async fn id_of(store: &Store, user_id: i64, title: &str) -> i64 {
    let query = ItemQuery {
        limit: 200,
        ..ItemQuery::default()
    };
    let page = store.list_items(user_id, &query).await.unwrap();
    page.items
        .into_iter()
        .find(|i| i.title.as_deref() == Some(title))
        .map(|i| i.id)
        .unwrap_or_else(|| panic!("no item {title}"))
}

/// Ann following the wire and a blog, Bob the wire alone: (ann, bob, wire, blog).
async fn ann_and_bob(store: &Store) -> (i64, i64, i64, i64) {
    let ann = user(store, "ann").await;
    let bob = user(store, "bob").await;
    let (_, wire) = follow(store, ann, "https://wire.example/feed").await;
    let (_, blog) = follow(store, ann, "https://blog.example/feed").await;
    follow(store, bob, "https://wire.example/feed").await;
    (ann, bob, wire, blog)
}

on_both_engines!(rules_with_an_age_act_as_items_reach_it, |db| {
    let store = db.migrated().await;
    let (ann, bob, wire, blog) = ann_and_bob(&store).await;
    let now = tidings_store::unix_now();
    let wire_items = [
        aged("a", "Ten days", now, 10.0),
        aged("bb", "Two days", now, 2.0),
        aged("ccc", "One day", now, 1.0),
        aged("dddd", "Half a day", now, 0.5),
        aged("eeeee", "Two days, starred", now, 2.0),
    ];
    store.upsert_items(wire, &wire_items, now).await.unwrap();
    store
        .upsert_items(blog, &[aged("ffffff", "Blog, two days", now, 2.0)], now)
        .await
        .unwrap();
    let starred = id_of(&store, ann, "Two days, starred").await;
    store
        .set_item_state(ann, starred, None, Some(true))
        .await
        .unwrap();
    let in_wire = RuleScope {
        feed_id: Some(wire),
        group_id: None,
    };
    let expire = aged_rule("expire", in_wire, 3, &["read"]);
    store.create_rule(ann, &expire).await.unwrap();
    let in_blog = RuleScope {
        feed_id: Some(blog),
        group_id: None,
    };
    let hide_old = aged_rule("hide old", in_blog, 3, &["hide"]);
    store.create_rule(ann, &hide_old).await.unwrap();
    let unread_titles = || titles(&store, ann, ItemFilter::Unread);
    let everything = [
        "Blog, two days",
        "Half a day",
        "One day",
        "Ten days",
        "Two days",
        "Two days, starred",
    ];

    // Saved now: what was old already is for "apply"; nothing has reached the age since.
    let report = store.run_age_rules(now).await.unwrap();
    assert_eq!((report.rules, report.changed), (2, 0));
    assert_eq!(unread_titles().await, everything);

    // Two days on: the items then older than three days are read (the starred one is left
    // alone), the blog's is hidden; the day-old item is exactly three days old, not more.
    let report = store.run_age_rules(now + 2 * 86_400).await.unwrap();
    assert_eq!(report.changed, 2, "{report:?}");
    assert_eq!(
        unread_titles().await,
        ["Half a day", "One day", "Ten days", "Two days, starred"]
    );
    assert!(
        !titles(&store, ann, ItemFilter::All)
            .await
            .contains(&"Blog, two days".to_string()),
        "hidden"
    );
    // The same pass again finds nothing new.
    let report = store.run_age_rules(now + 2 * 86_400).await.unwrap();
    assert_eq!(report.changed, 0);
    // Three days on, the day-old and half-day-old items have passed the age too.
    store.run_age_rules(now + 3 * 86_400).await.unwrap();
    assert_eq!(unread_titles().await, ["Ten days", "Two days, starred"]);
    // Bob, on the same feed, has no rules: everything of his stays unread.
    assert_eq!(titles(&store, bob, ItemFilter::Unread).await.len(), 5);

    // A keep-only rule with an age is no auto-expiry (it would show items again): skipped.
    let keep = aged_rule("keep", in_wire, 1, &["keep_only"]);
    store.create_rule(ann, &keep).await.unwrap();
    let report = store.run_age_rules(now + 4 * 86_400).await.unwrap();
    assert_eq!(report.rules, 2);
});

/// Ann, following the wire's feed, with one rule for everything: `query` doing `actions`.
/// Answers her id and the feed's.
async fn ann_with_rule(store: &Store, query: &str, actions: &[&str]) -> (i64, i64) {
    let ann = user(store, "ann").await;
    let (_, feed) = follow(store, ann, "https://wire.example/feed").await;
    let input = rule("rule", RuleScope::default(), query, actions);
    store.create_rule(ann, &input).await.unwrap();
    (ann, feed)
}

/// Tags found for the items titled so, saved as the tagging job saves them (every item with
/// a job is claimed; the ones not named are left to their lease).
async fn tag_items(store: &Store, tags: &[(&str, &[&str])]) -> u64 {
    let jobs = store
        .claim_tag_jobs("test", tidings_store::unix_now(), 100, 60)
        .await
        .unwrap();
    let tagged: Vec<TaggedItem> = jobs
        .iter()
        .filter_map(|job| {
            let (_, names) = tags
                .iter()
                .find(|(title, _)| job.title.as_deref() == Some(*title))?;
            Some(TaggedItem {
                item_id: job.item_id,
                version: job.version,
                tags: names
                    .iter()
                    .map(|name| ItemTag {
                        name: name.to_string(),
                        score: 0.5,
                    })
                    .collect(),
            })
        })
        .collect();
    store.save_item_tags(&tagged).await.unwrap()
}

on_both_engines!(rules_act_again_when_an_items_tags_are_found, |db| {
    let store = db.migrated().await;
    let (ann, bob, wire, blog) = ann_and_bob(&store).await;
    let all = RuleScope::default();
    let on_blog = RuleScope {
        feed_id: Some(blog),
        group_id: None,
    };
    for input in [
        rule("rust", all, "tag:rust", &["star", "label:Lang"]),
        rule("sport", all, "tag:football", &["hide"]),
        rule("blog", on_blog, "tag:databases", &["keep_only"]),
    ] {
        store.create_rule(ann, &input).await.unwrap();
    }
    // Rules saved before the items arrive; the fetch's clock is the real one.
    let now = tidings_store::unix_now() + 1;
    let wire_items = [
        item("a", "Compiler news", "a new release"),
        item("bb", "Match report", "the final"),
        item("ccc", "Weather", "sunny"),
    ];
    store
        .store_fetch(wire, &wire_items, now, &Default::default())
        .await
        .unwrap();
    let blog_items = [
        item("dddd", "Indexes explained", "b-trees"),
        item("eeeee", "My holiday", "beaches"),
    ];
    store
        .store_fetch(blog, &blog_items, now, &Default::default())
        .await
        .unwrap();
    // On arrival no tag is known: the keep-only rule hides both blog posts for now.
    assert_eq!(
        titles(&store, ann, ItemFilter::All).await,
        ["Compiler news", "Match report", "Weather"]
    );
    assert_eq!(arrivals(&store, ann).await, 3);
    let before = arrival_ids(&store, ann).await;

    let saved = tag_items(
        &store,
        &[
            ("Compiler news", &["rust", "compilers"]),
            ("Match report", &["football"]),
            ("Weather", &["weather"]),
            ("Indexes explained", &["databases"]),
            ("My holiday", &["travel"]),
        ],
    )
    .await;
    assert_eq!(saved, 5);
    // The tags decide now: the rust item starred and labelled, the football one hidden, the
    // blog post on databases kept (unread, and arriving in the sync order after the rest).
    assert_eq!(
        titles(&store, ann, ItemFilter::All).await,
        ["Compiler news", "Indexes explained", "Weather"]
    );
    assert_eq!(
        titles(&store, ann, ItemFilter::Starred).await,
        ["Compiler news"]
    );
    assert_eq!(
        titles(&store, ann, ItemFilter::Unread).await,
        ["Compiler news", "Indexes explained", "Weather"]
    );
    assert_eq!(unread(&store, ann).await, 3);
    let after = arrival_ids(&store, ann).await;
    assert_eq!(after.len(), 3);
    let newest = after.iter().max().unwrap();
    assert!(
        before.iter().all(|id| id < newest),
        "the kept post arrives after what the app has: {before:?} then {after:?}"
    );
    let rust = id_of(&store, ann, "Compiler news").await;
    let labels: Vec<String> = store
        .item_labels(ann, &[rust])
        .await
        .unwrap()
        .into_iter()
        .map(|(_, l)| l)
        .collect();
    assert_eq!(labels, ["Lang"]);
    // Bob has no rules: his copy of the shared feed is untouched.
    assert_eq!(titles(&store, bob, ItemFilter::Unread).await.len(), 3);
    assert!(titles(&store, bob, ItemFilter::Starred).await.is_empty());
    assert_eq!(arrivals(&store, bob).await, 3);
});

on_both_engines!(rules_act_once_when_an_items_popularity_is_counted, |db| {
    let store = db.migrated().await;
    let (ann, wire) = ann_with_rule(&store, "popularity:>=100", &["star"]).await;
    let now = tidings_store::unix_now() + 1;
    let items = [item("a", "Big story", "x"), item("bb", "Small story", "y")];
    store
        .store_fetch(wire, &items, now, &Default::default())
        .await
        .unwrap();
    let (big, small) = (
        id_of(&store, ann, "Big story").await,
        id_of(&store, ann, "Small story").await,
    );
    let count = |counts: Vec<(i64, i64)>| {
        let store = store.clone();
        async move {
            store
                .save_popularity("hatena", "w", &counts, now, 0)
                .await
                .unwrap()
        }
    };
    count(vec![(big, 40), (small, 3)]).await;
    assert!(titles(&store, ann, ItemFilter::Starred).await.is_empty());
    count(vec![(big, 150), (small, 5)]).await;
    assert_eq!(
        titles(&store, ann, ItemFilter::Starred).await,
        ["Big story"]
    );
    // The user takes the star away: a later count over the bar does not put it back.
    store
        .set_item_state(ann, big, None, Some(false))
        .await
        .unwrap();
    count(vec![(big, 300)]).await;
    assert!(titles(&store, ann, ItemFilter::Starred).await.is_empty());
});

on_both_engines!(a_rule_saved_after_an_item_arrived_leaves_it_alone, |db| {
    let store = db.migrated().await;
    let (ann, wire) = ann_with_rule(&store, "tag:rust", &["star"]).await;
    // The item's clock is a minute behind: it arrived before the rule was saved.
    let then = tidings_store::unix_now() - 60;
    store
        .store_fetch(
            wire,
            &[item("a", "Compiler news", "x")],
            then,
            &Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(tag_items(&store, &[("Compiler news", &["rust"])]).await, 1);
    assert!(
        titles(&store, ann, ItemFilter::Starred).await.is_empty(),
        "only apply acts on what was there"
    );
});
