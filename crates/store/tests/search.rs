//! Full-text search (F35) on both engines: a table of queries over a fixed multilingual corpus
//! with the same hits on SQLite and PostgreSQL, filters and pagination, the index following
//! updates and deletions, items' full articles (F6), and the backfill of items and articles
//! that predate the index.

use tidings_testkit::{add_user, follow, follow_on_old_schema, on_both_engines};

use std::collections::BTreeSet;

use tidings_store::{
    Engine, FullTextOutcome, ItemFilter, ItemOrder, ItemQuery, ItemSearch, NewItem, Store,
};
use tidings_text::{SearchQuery, TermStatistics, index_tokens, rank};

const BASE: i64 = 1_700_000_000;

/// (guid, title, content HTML): Japanese, Chinese, Korean, English, German, French, mixed.
const CORPUS: &[(&str, &str, &str)] = &[
    (
        "ja-tokyo",
        "東京タワーの夜景",
        "<p>東京都の観光スポットを紹介します。</p>",
    ),
    ("ja-kyoto", "京都の紅葉", "<p>京都は秋が美しい。</p>"),
    (
        "ja-mixed",
        "Rustで書くWebサーバー",
        "<p>RustとTokioで高速なサーバーを作る。</p>",
    ),
    ("ja-halfwidth", "ｶﾀｶﾅのﾃﾞｰﾀﾍﾞｰｽ", "<p>半角カナの記事</p>"),
    (
        "ja-fullwidth",
        "ＲＵＳＴ　入門",
        "<p>全角の英字で書かれた記事</p>",
    ),
    ("zh", "北京的天气", "<p>我爱北京天安门。</p>"),
    ("ko", "서울 날씨", "<p>서울에서 비가 옵니다.</p>"),
    (
        "en-rust",
        "Rust 1.94 released",
        "<p>The Rust team announces async closures.</p>",
    ),
    (
        "en-python",
        "Python news",
        "<p>Big data tooling in Python and Java.</p>",
    ),
    (
        "de",
        "Grüße aus München",
        "<p>Die Straße ist schön. Müller sagt: Café!</p>",
    ),
    (
        "de-plain",
        "Strasse und Mueller",
        "<p>Ohne Umlaute geschrieben: Gruesse</p>",
    ),
    ("fr", "Le café crème", "<p>Une façade naïve.</p>"),
    (
        "markup",
        "Markup only",
        "<p><a href=\"https://example.com/tokyo\">link</a> text</p>",
    ),
];

/// (query, the guids it finds).
const TABLE: &[(&str, &[&str])] = &[
    ("東京", &["ja-tokyo"]),
    ("東京タワー", &["ja-tokyo"]),
    ("スポット", &["ja-tokyo"]),
    // Bigrams find substrings: 東京都 contains 京都.
    ("京都", &["ja-kyoto", "ja-tokyo"]),
    ("\"京都の紅葉\"", &["ja-kyoto"]),
    ("東", &["ja-tokyo"]),
    ("都", &["ja-tokyo", "ja-kyoto"]),
    ("カタカナ", &["ja-halfwidth"]),
    ("ｶﾀｶﾅ", &["ja-halfwidth"]),
    ("データベース", &["ja-halfwidth"]),
    ("rust", &["ja-mixed", "ja-fullwidth", "en-rust"]),
    ("ＲＵＳＴ", &["ja-mixed", "ja-fullwidth", "en-rust"]),
    ("RUST", &["ja-mixed", "ja-fullwidth", "en-rust"]),
    ("rust サーバー", &["ja-mixed"]),
    ("Rustで書く", &["ja-mixed"]),
    ("tokio", &["ja-mixed"]),
    ("\"rust team\"", &["en-rust"]),
    ("\"team rust\"", &[]),
    ("rust -tokio", &["ja-fullwidth", "en-rust"]),
    ("rust -入門 -\"rust team\"", &["ja-mixed"]),
    ("1.94", &["en-rust"]),
    ("北京", &["zh"]),
    ("天安门", &["zh"]),
    ("门", &["zh"]),
    ("서울", &["ko"]),
    ("날씨", &["ko"]),
    ("grusse", &["de"]),
    ("GRÜSSE", &["de"]),
    ("strasse", &["de", "de-plain"]),
    ("Straße", &["de", "de-plain"]),
    ("muller", &["de"]),
    ("münchen", &["de"]),
    ("munchen schon", &["de"]),
    ("cafe", &["de", "fr"]),
    ("café", &["de", "fr"]),
    ("naive facade", &["fr"]),
    ("python", &["en-python"]),
    ("python -\"big data\"", &[]),
    ("java", &["en-python"]),
    // Markup is not indexed: the link's address is not text.
    ("example", &[]),
    ("link text", &["markup"]),
    ("absent", &[]),
];

fn item(n: usize, (guid, title, content): (&str, &str, &str)) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        title: Some(title.into()),
        content: Some(content.into()),
        published: Some(BASE + n as i64 * 60),
        ..NewItem::default()
    }
}

fn search_of(query: &str, listing: ItemQuery) -> ItemSearch {
    ItemSearch {
        query: SearchQuery::parse(query).unwrap(),
        listing,
        by_relevance: false,
        offset: 0,
    }
}

fn all(limit: i64) -> ItemQuery {
    ItemQuery {
        filter: ItemFilter::All,
        limit,
        ..ItemQuery::default()
    }
}

/// The titles of every hit, over every page, in order.
async fn hit_titles(store: &Store, user: i64, mut search: ItemSearch) -> Vec<String> {
    let mut titles = Vec::new();
    loop {
        let page = store.search_items(user, &search).await.unwrap();
        titles.extend(
            page.hits
                .iter()
                .map(|h| h.item.title.clone().unwrap_or_default()),
        );
        match (page.next_cursor, page.next_offset) {
            (Some(cursor), _) => search.listing.cursor = Some(cursor),
            (None, Some(offset)) => search.offset = offset,
            (None, None) => return titles,
        }
    }
}

/// The guid of each corpus title, to name hits.
fn guid_of(title: &str) -> &'static str {
    CORPUS
        .iter()
        .find(|c| c.1 == title)
        .map(|c| c.0)
        .unwrap_or("?")
}

async fn corpus(store: &Store) -> (i64, i64) {
    let user = add_user(store, "ann").await;
    let (_, feed) = follow(store, user, "https://example.com/feed").await;
    let items: Vec<NewItem> = CORPUS
        .iter()
        .enumerate()
        .map(|(n, c)| item(n, *c))
        .collect();
    store.upsert_items(feed, &items, BASE).await.unwrap();
    (user, feed)
}

on_both_engines!(query_table, |db| {
    let store = db.migrated().await;
    let (user, _) = corpus(&store).await;
    for (query, expected) in TABLE {
        let titles = hit_titles(&store, user, search_of(query, all(50))).await;
        let found: BTreeSet<&str> = titles.iter().map(|t| guid_of(t)).collect();
        let expected: BTreeSet<&str> = expected.iter().copied().collect();
        assert_eq!(found, expected, "query {query:?} on {}", store.engine());
        // The reference matcher of tidings-text agrees with the index.
        let parsed = SearchQuery::parse(query).unwrap();
        let reference: BTreeSet<&str> = CORPUS
            .iter()
            .filter(|(_, title, content)| {
                let text = format!(
                    "{title}\n{}",
                    tidings_feed::text::plain_text(content).unwrap()
                );
                parsed.matches(&index_tokens(&text))
            })
            .map(|c| c.0)
            .collect();
        assert_eq!(found, reference, "reference matcher for {query:?}");
    }
});

/// (guid, title, content HTML) of items that match the same words more or less well.
const RANKED_CORPUS: &[(&str, &str, &str)] = &[
    (
        "long",
        "A long article",
        "<p>Rust is mentioned once here, among many other words about databases, \
         compilers, editors, operating systems, networks and the weather in Tokyo.</p>",
    ),
    ("short", "Rust", "<p>Rust async.</p>"),
    (
        "thrice",
        "Rust, Rust, Rust",
        "<p>Async Rust and open source.</p>",
    ),
    (
        "phrase",
        "Open source",
        "<p>Open source Rust: open source async runtimes and open source tools.</p>",
    ),
    ("tokyo", "東京の天気", "<p>東京は雨。東京都の予報。</p>"),
    (
        "tokyo-once",
        "東京タワー",
        "<p>夜景がきれいな展望台と周辺の観光案内。</p>",
    ),
    (
        "german",
        "Straße und Strasse",
        "<p>Die Straße in München, Rust auf der Strasse.</p>",
    ),
];

/// (query, the guids it finds, best first): the same order on both engines.
const RANKED: &[(&str, &[&str])] = &[
    ("rust", &["thrice", "short", "german", "phrase", "long"]),
    ("rust async", &["short", "thrice", "phrase"]),
    ("\"open source\"", &["phrase", "thrice"]),
    ("\"open source\" rust", &["phrase", "thrice"]),
    ("東京", &["tokyo", "tokyo-once"]),
    ("東", &["tokyo", "tokyo-once"]),
    ("strasse", &["german"]),
    ("rust -async", &["german", "long"]),
    ("absent", &[]),
];

on_both_engines!(relevance_table, |db| {
    let store = db.migrated().await;
    let user = add_user(&store, "ann").await;
    let (_, feed) = follow(&store, user, "https://example.com/feed").await;
    let items: Vec<NewItem> = RANKED_CORPUS
        .iter()
        .enumerate()
        .map(|(n, c)| item(n, *c))
        .collect();
    store.upsert_items(feed, &items, BASE).await.unwrap();
    let guid = |title: &str| -> &'static str {
        RANKED_CORPUS
            .iter()
            .find(|c| c.1 == title)
            .map(|c| c.0)
            .unwrap_or("?")
    };
    // The corpus as the index holds it, newest first (the candidates' order).
    let documents: Vec<(&str, Vec<String>)> = RANKED_CORPUS
        .iter()
        .rev()
        .map(|(guid, title, content)| {
            let text = tidings_feed::text::plain_text(content).unwrap();
            (*guid, index_tokens(&format!("{title}\n{text}")))
        })
        .collect();
    for (query, expected) in RANKED {
        // Pages of 2, so the offset is followed too.
        let mut search = search_of(query, all(2));
        search.by_relevance = true;
        let titles = hit_titles(&store, user, search).await;
        let found: Vec<&str> = titles.iter().map(|t| guid(t)).collect();
        assert_eq!(&found, expected, "query {query:?} on {}", store.engine());
        // The table is the reference ranking of tidings-text over the whole corpus (which is
        // smaller than the sample its statistics come from).
        let parsed = SearchQuery::parse(query).unwrap();
        let matching: Vec<&(&str, Vec<String>)> = documents
            .iter()
            .filter(|(_, tokens)| parsed.matches(tokens))
            .collect();
        let statistics = TermStatistics {
            documents: documents.len() as u64,
            containing: parsed
                .required()
                .map(|term| {
                    documents
                        .iter()
                        .filter(|(_, tokens)| term.occurrences(tokens) > 0)
                        .count() as u64
                })
                .collect(),
        };
        let tokens: Vec<Vec<String>> = matching.iter().map(|(_, t)| t.clone()).collect();
        let reference: Vec<&str> = rank(&parsed, &tokens, &statistics)
            .into_iter()
            .map(|k| matching[k].0)
            .collect();
        assert_eq!(&reference, expected, "reference ranking of {query:?}");
    }
});

on_both_engines!(filters_order_and_pages, |db| {
    let store = db.migrated().await;
    let user = add_user(&store, "ann").await;
    let (_, feed_a) = follow(&store, user, "https://a.example/feed").await;
    let (_, feed_b) = follow(&store, user, "https://b.example/feed").await;
    let other = add_user(&store, "bob").await;
    let (_, feed_c) = follow(&store, other, "https://c.example/feed").await;
    let mk = |guid: &str, n: i64, text: &str| NewItem {
        guid: Some(guid.into()),
        title: Some(format!("{guid} 東京")),
        content: Some(format!("<p>{text}</p>")),
        published: Some(BASE + n * 60),
        ..NewItem::default()
    };
    store
        .upsert_items(
            feed_a,
            &[
                mk("a1", 1, "rust"),
                mk("a2", 2, "rust rust rust rust"),
                mk("a3", 3, "go"),
            ],
            BASE,
        )
        .await
        .unwrap();
    store
        .upsert_items(feed_b, &[mk("b1", 4, "rust"), mk("b2", 5, "rust")], BASE)
        .await
        .unwrap();
    store
        .upsert_items(feed_c, &[mk("c1", 6, "rust")], BASE)
        .await
        .unwrap();
    let ids = |titles: Vec<String>| -> Vec<String> {
        titles
            .into_iter()
            .map(|t| t.split(' ').next().unwrap().to_string())
            .collect()
    };

    // Newest first across pages of 2, only the user's own feeds.
    let titles = hit_titles(&store, user, search_of("rust 東京", all(2))).await;
    assert_eq!(ids(titles), ["b2", "b1", "a2", "a1"]);
    // Oldest first.
    let mut listing = all(2);
    listing.order = ItemOrder::OldestFirst;
    assert_eq!(
        ids(hit_titles(&store, user, search_of("rust", listing)).await),
        ["a1", "a2", "b1", "b2"]
    );
    // One feed.
    let mut listing = all(50);
    listing.feed_id = Some(feed_a);
    assert_eq!(
        ids(hit_titles(&store, user, search_of("rust", listing)).await),
        ["a2", "a1"]
    );
    // Dates.
    let mut listing = all(50);
    listing.since = Some(BASE + 2 * 60);
    listing.until = Some(BASE + 5 * 60);
    assert_eq!(
        ids(hit_titles(&store, user, search_of("rust", listing)).await),
        ["b1", "a2"]
    );
    // Unread and starred.
    let page = store
        .search_items(user, &search_of("rust", all(50)))
        .await
        .unwrap();
    let b1 = page
        .hits
        .iter()
        .find(|h| h.item.title.as_deref() == Some("b1 東京"))
        .unwrap()
        .item
        .id;
    let a1 = page
        .hits
        .iter()
        .find(|h| h.item.title.as_deref() == Some("a1 東京"))
        .unwrap()
        .item
        .id;
    store
        .set_item_state(user, b1, Some(true), None)
        .await
        .unwrap();
    store
        .set_item_state(user, a1, None, Some(true))
        .await
        .unwrap();
    let mut listing = all(50);
    listing.filter = ItemFilter::Unread;
    assert_eq!(
        ids(hit_titles(&store, user, search_of("rust", listing)).await),
        ["b2", "a2", "a1"]
    );
    let mut listing = all(50);
    listing.filter = ItemFilter::Starred;
    assert_eq!(
        ids(hit_titles(&store, user, search_of("rust", listing)).await),
        ["a1"]
    );
    // Relevance: the item saying "rust" four times comes first; pages by offset.
    let mut search = search_of("rust", all(2));
    search.by_relevance = true;
    let titles = ids(hit_titles(&store, user, search).await);
    assert_eq!(titles.len(), 4);
    assert_eq!(titles[0], "a2", "{titles:?}");
    // The other user's feed is not searched; a feed of someone else is refused.
    let mut listing = all(50);
    listing.feed_id = Some(feed_c);
    assert!(
        store
            .search_items(user, &search_of("rust", listing))
            .await
            .is_err()
    );
    // Hits carry their content as text for snippets.
    let page = store
        .search_items(user, &search_of("go", all(50)))
        .await
        .unwrap();
    assert_eq!(page.hits.len(), 1);
    assert_eq!(page.hits[0].text, "go");
});

async fn found(store: &Store, user: i64, query: &str) -> Vec<String> {
    hit_titles(store, user, search_of(query, all(50))).await
}

on_both_engines!(index_follows_updates_and_deletions, |db| {
    let store = db.migrated().await;
    let (user, feed) = corpus(&store).await;
    // An update replaces the item's tokens.
    let changed = NewItem {
        content: Some("<p>Zürich instead</p>".into()),
        ..item(7, CORPUS[7])
    };
    let counts = store.upsert_items(feed, &[changed], BASE).await.unwrap();
    assert_eq!(counts.updated, 1);
    assert!(found(&store, user, "closures").await.is_empty());
    assert_eq!(found(&store, user, "zurich").await, ["Rust 1.94 released"]);
    // Changed back, then stored again unchanged: the index keeps its row.
    store
        .upsert_items(feed, &[item(7, CORPUS[7])], BASE)
        .await
        .unwrap();
    let counts = store
        .upsert_items(feed, &[item(7, CORPUS[7])], BASE)
        .await
        .unwrap();
    assert_eq!(counts.unchanged, 1);
    assert_eq!(
        found(&store, user, "closures").await,
        ["Rust 1.94 released"]
    );
    assert!(found(&store, user, "zurich").await.is_empty());

    // Retention deletes old items (here all but the newest, so the three oldest); their index
    // rows go with them.
    let keep = CORPUS.len() as i64 - 3;
    let deleted = store
        .delete_expired_items(BASE + 1, keep, BASE + 180)
        .await
        .unwrap();
    assert_eq!(deleted, 3);
    assert!(found(&store, user, "東京").await.is_empty());
    assert!(found(&store, user, "京都").await.is_empty());
    assert_eq!(found(&store, user, "rust").await.len(), 2);
    // Re-adding a deleted item, once its tombstone is gone (the feed stopped listing it for
    // more than a week), indexes it again under its new id.
    store
        .upsert_items(feed, &[], BASE + 8 * 86_400)
        .await
        .unwrap();
    store
        .upsert_items(feed, &[item(0, CORPUS[0])], BASE + 9 * 86_400)
        .await
        .unwrap();
    assert_eq!(found(&store, user, "東京").await, ["東京タワーの夜景"]);

    // A feed's removal cascades to its items and their index rows.
    let other = add_user(&store, "bob").await;
    let (_, feed_b) = follow(&store, other, "https://b.example/feed").await;
    store
        .upsert_items(feed_b, &[item(1, ("b", "Zürich", "<p>only b</p>"))], BASE)
        .await
        .unwrap();
    assert_eq!(found(&store, other, "zurich").await, ["Zürich"]);
    store
        .execute_raw(&format!("DELETE FROM feeds WHERE id = {feed_b}"))
        .await
        .unwrap();
    follow(&store, other, "https://b.example/feed").await;
    assert!(found(&store, other, "zurich").await.is_empty());
    // The index holds exactly the remaining items.
    assert_eq!(
        index_rows(&store).await,
        store.count_items(feed).await.unwrap()
    );
});

/// How many rows the search index has.
async fn index_rows(store: &Store) -> i64 {
    store.search_index_rows().await.unwrap()
}

/// Puts the database as migration 6 left one that had items: an empty index and the whole
/// id range still to do.
async fn as_before_the_index(store: &Store) {
    match store.engine() {
        Engine::Sqlite => store
            .execute_raw("INSERT INTO item_search (item_search) VALUES ('delete-all')")
            .await
            .unwrap(),
        Engine::Postgres => store.execute_raw("DELETE FROM item_search").await.unwrap(),
    }
    store
        .execute_raw(
            "UPDATE search_backfill SET next_item_id = (SELECT MIN(id) FROM items),
                                       last_item_id = (SELECT MAX(id) FROM items)",
        )
        .await
        .unwrap();
}

on_both_engines!(backfill_indexes_existing_items_in_batches, |db| {
    let store = db.migrated().await;
    let (user, _) = corpus(&store).await;
    as_before_the_index(&store).await;
    assert!(found(&store, user, "rust").await.is_empty());
    let mut steps = 0;
    let mut indexed = 0;
    loop {
        let step = store.backfill_search_index(5).await.unwrap();
        indexed += step.indexed;
        assert!(step.indexed <= 5);
        if step.is_done() {
            break;
        }
        steps += 1;
        // Search works on what is indexed so far.
        if steps == 1 {
            assert_eq!(found(&store, user, "東京").await, ["東京タワーの夜景"]);
            assert!(found(&store, user, "rust").await.len() < 3);
        }
    }
    assert_eq!(indexed, CORPUS.len() as u64);
    assert_eq!(found(&store, user, "rust").await.len(), 3);
    // Done stays done.
    let step = store.backfill_search_index(5).await.unwrap();
    assert!(step.is_done() && step.indexed == 0);
    assert_eq!(index_rows(&store).await, CORPUS.len() as i64);
});

/// A teaser item of the feed `feed` (guid `guid`), as a feed that needs full text gives it.
fn teaser(guid: &str, title: &str, summary: &str, n: i64) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        url: Some(format!("https://news.example/{guid}")),
        title: Some(title.into()),
        summary: Some(summary.into()),
        published: Some(BASE + 10_000 + n * 60),
        ..NewItem::default()
    }
}

/// An article extracted from an item's page.
fn article(html: &str) -> FullTextOutcome {
    FullTextOutcome::Extracted {
        content: html.into(),
        text_chars: html.len() as i64,
        source_url: "https://news.example/page".into(),
    }
}

/// The id of the item titled `title` (searched by its title's first word).
async fn id_of(store: &Store, user: i64, title: &str) -> i64 {
    let word = title.split(' ').next().unwrap();
    let page = store
        .search_items(user, &search_of(word, all(50)))
        .await
        .unwrap();
    page.hits
        .iter()
        .find(|h| h.item.title.as_deref() == Some(title))
        .unwrap_or_else(|| panic!("{title} not found"))
        .item
        .id
}

on_both_engines!(an_items_full_text_is_searched_with_it, |db| {
    let store = db.migrated().await;
    let (user, _) = corpus(&store).await;
    let (_, feed) = follow(&store, user, "https://news.example/feed").await;
    store
        .upsert_items(
            feed,
            &[
                teaser("mill", "Harbour mill", "<p>The town votes.</p>", 0),
                teaser("other", "Harbour ferry", "<p>A lighthouse is seen.</p>", 1),
            ],
            BASE,
        )
        .await
        .unwrap();
    let mill = id_of(&store, user, "Harbour mill").await;
    assert!(found(&store, user, "millwright").await.is_empty());
    assert!(found(&store, user, "潮力").await.is_empty());
    assert!(
        store
            .save_full_text(
                mill,
                &article(
                    "<article><p>The <b>millwright</b> restores the tidal wheel and the \
                     lighthouse.</p><p>港町の潮力水車が九十年ぶりに回る。</p></article>"
                ),
                BASE + 5,
            )
            .await
            .unwrap()
    );
    // Words that only the article holds find the item, in English and in Japanese (bigrams),
    // as words, phrases, prefixes and exclusions; the feed's own words still do.
    assert_eq!(found(&store, user, "millwright").await, ["Harbour mill"]);
    assert_eq!(found(&store, user, "MILLWRIGHT").await, ["Harbour mill"]);
    assert_eq!(
        found(&store, user, "\"tidal wheel\"").await,
        ["Harbour mill"]
    );
    assert_eq!(found(&store, user, "潮力水車").await, ["Harbour mill"]);
    assert_eq!(found(&store, user, "九十年").await, ["Harbour mill"]);
    assert_eq!(
        found(&store, user, "votes millwright").await,
        ["Harbour mill"]
    );
    assert_eq!(
        found(&store, user, "lighthouse").await,
        ["Harbour ferry", "Harbour mill"]
    );
    assert_eq!(
        found(&store, user, "lighthouse -millwright").await,
        ["Harbour ferry"]
    );
    assert!(found(&store, user, "\"wheel tidal\"").await.is_empty());
    // The hit carries the article's text (for its snippet and its rank), and ranking by
    // relevance finds it too.
    let page = store
        .search_items(user, &search_of("millwright", all(50)))
        .await
        .unwrap();
    assert!(
        page.hits[0].text.starts_with("The town votes."),
        "{}",
        page.hits[0].text
    );
    assert!(
        page.hits[0].text.contains("millwright restores"),
        "{}",
        page.hits[0].text
    );
    let mut by_relevance = search_of("millwright 潮力", all(50));
    by_relevance.by_relevance = true;
    let ranked = store.search_items(user, &by_relevance).await.unwrap();
    assert_eq!(ranked.hits.len(), 1);
    assert_eq!(ranked.hits[0].item.id, mill);
    // The article stays searchable when the feed changes the item, and the feed's new words
    // are found while its old ones are not.
    store
        .upsert_items(
            feed,
            &[teaser(
                "mill",
                "Harbour mill",
                "<p>The council agrees.</p>",
                0,
            )],
            BASE + 10,
        )
        .await
        .unwrap();
    assert_eq!(
        found(&store, user, "council millwright").await,
        ["Harbour mill"]
    );
    assert!(found(&store, user, "votes").await.is_empty());
    // A later outcome that kept no article takes its words out of the index.
    store
        .save_full_text(
            mill,
            &FullTextOutcome::Failed {
                error: "404".into(),
            },
            BASE + 20,
        )
        .await
        .unwrap();
    assert!(found(&store, user, "millwright").await.is_empty());
    assert_eq!(found(&store, user, "council").await, ["Harbour mill"]);
    // An article for an item deleted meanwhile is not saved, and indexes nothing.
    let rows = index_rows(&store).await;
    store
        .execute_raw(&format!("DELETE FROM items WHERE id = {mill}"))
        .await
        .unwrap();
    assert!(
        !store
            .save_full_text(mill, &article("<p>millwright</p>"), BASE + 30)
            .await
            .unwrap()
    );
    assert_eq!(index_rows(&store).await, rows - 1);
    assert!(found(&store, user, "millwright").await.is_empty());
});

on_both_engines!(the_backfill_indexes_full_texts_too, |db| {
    // Articles saved before they were searched (schema version 24), then the upgrade.
    let store = db.open().await;
    store.migrate_to(24).await.unwrap();
    let user = add_user(&store, "ann").await;
    let feed = follow_on_old_schema(&store, user, "https://news.example/feed").await;
    let teasers: Vec<NewItem> = (0..4)
        .map(|n| {
            teaser(
                &format!("t{n}"),
                &format!("Teaser {n}"),
                "<p>Read more.</p>",
                n,
            )
        })
        .collect();
    store.upsert_items(feed, &teasers, BASE).await.unwrap();
    // Found by title through the item itself: search's listing needs the newer schema.
    let mut ids = [0; 4];
    for id in store.feed_item_ids(feed).await.unwrap() {
        let title = store.item(user, id).await.unwrap().title.unwrap();
        let n: usize = title.trim_start_matches("Teaser ").parse().unwrap();
        ids[n] = id;
    }
    // Three articles and one page that failed, written as version 24 wrote them: without
    // touching the index.
    for (n, id) in ids.iter().enumerate() {
        let (content, outcome) = match n {
            2 => ("NULL".to_string(), "failed"),
            _ => (
                format!("'<p>Article {n}: the gazetteer 地名辞典 entry.</p>'"),
                "extracted",
            ),
        };
        store
            .execute_raw(&format!(
                "INSERT INTO item_full_texts (item_id, content, text_chars, outcome, fetched_at)
                 VALUES ({id}, {content}, 40, '{outcome}', {BASE})"
            ))
            .await
            .unwrap();
    }
    // 25 and every migration after it (later ones do not touch the index).
    let applied = store.migrate().await.unwrap();
    assert_eq!(applied.first(), Some(&25), "{applied:?}");
    assert!(found(&store, user, "gazetteer").await.is_empty());
    // One article per step, resuming where the last stopped; search finds what is done.
    let first = store.backfill_search_index(1).await.unwrap();
    assert_eq!(first.indexed, 1);
    assert!(!first.is_done());
    assert_eq!(found(&store, user, "gazetteer").await, ["Teaser 0"]);
    let mut indexed = first.indexed;
    loop {
        let step = store.backfill_search_index(1).await.unwrap();
        indexed += step.indexed;
        if step.is_done() {
            break;
        }
    }
    assert_eq!(indexed, 3);
    assert_eq!(
        found(&store, user, "gazetteer").await,
        ["Teaser 3", "Teaser 1", "Teaser 0"]
    );
    assert_eq!(
        found(&store, user, "地名辞典").await,
        ["Teaser 3", "Teaser 1", "Teaser 0"]
    );
    // The feed's text is still indexed with each article; done stays done.
    assert_eq!(
        found(&store, user, "\"read more\" gazetteer").await.len(),
        3
    );
    assert_eq!(found(&store, user, "read").await.len(), 4);
    let step = store.backfill_search_index(5).await.unwrap();
    assert!(step.is_done() && step.indexed == 0);
    // Items that predate the index itself (migration 6) are indexed with their articles.
    as_before_the_index(&store).await;
    assert!(found(&store, user, "gazetteer").await.is_empty());
    let step = store.backfill_search_index(100).await.unwrap();
    assert!(step.is_done());
    assert_eq!(step.indexed, 4);
    assert_eq!(found(&store, user, "gazetteer").await.len(), 3);
    assert_eq!(index_rows(&store).await, 4);
});

on_both_engines!(bookmarks_are_searched_by_their_snapshots, |db| {
    let store = db.migrated().await;
    let (user, _) = corpus(&store).await;
    let page = store
        .search_items(user, &search_of("京都", all(50)))
        .await
        .unwrap();
    for hit in &page.hits {
        store.create_bookmark(user, hit.item.id).await.unwrap();
    }
    let rust = store
        .search_items(user, &search_of("rust", all(50)))
        .await
        .unwrap();
    store
        .create_bookmark(user, rust.hits[0].item.id)
        .await
        .unwrap();
    let titles = |bookmarks: Vec<tidings_store::Bookmark>| -> BTreeSet<String> {
        bookmarks.into_iter().filter_map(|b| b.title).collect()
    };
    let q = SearchQuery::parse("紅葉").unwrap();
    assert_eq!(
        titles(store.search_bookmarks(user, &q).await.unwrap()),
        ["京都の紅葉".to_string()].into()
    );
    let q = SearchQuery::parse("京都 -紅葉").unwrap();
    assert_eq!(
        titles(store.search_bookmarks(user, &q).await.unwrap()),
        ["東京タワーの夜景".to_string()].into()
    );
    // The snapshot survives the item.
    store.execute_raw("DELETE FROM items").await.unwrap();
    let q = SearchQuery::parse("ＲＵＳＴ").unwrap();
    assert_eq!(store.search_bookmarks(user, &q).await.unwrap().len(), 1);
});

on_both_engines!(
    a_large_batch_is_stored_indexed_and_counted_in_multi_row_statements,
    |db| {
        let store = db.migrated().await;
        let user = add_user(&store, "bea").await;
        let (subscription, feed) = follow(&store, user, "https://batch.example/feed").await;
        // 150 items: two statements of 64, one of 16, one of 4 and two of one row.
        let mut items: Vec<NewItem> = (0..150)
            .map(|i| NewItem {
                guid: Some(format!("b-{i}")),
                title: Some(format!("Batch item w{i}x")),
                content: Some(format!("<p>Body of number z{i}q</p>")),
                published: Some(BASE - i),
                ..NewItem::default()
            })
            .collect();
        let counts = store.upsert_items(feed, &items, BASE).await.unwrap();
        assert_eq!(
            (counts.inserted, counts.updated, counts.unchanged),
            (150, 0, 0)
        );
        assert_eq!(store.count_items(feed).await.unwrap(), 150);
        let unread = store.subscription(user, subscription).await.unwrap();
        assert_eq!(
            unread.unread_count, 150,
            "the insert trigger counted each row"
        );
        // Every row of every statement is indexed: the first, one in the middle, the last.
        for n in [0, 77, 148, 149] {
            let titles = hit_titles(&store, user, search_of(&format!("z{n}q"), all(10))).await;
            assert_eq!(titles, vec![format!("Batch item w{n}x")]);
        }
        // Unchanged items cost nothing; changed ones are updated and indexed again.
        for n in [3, 100, 149] {
            items[n].content = Some(format!("<p>Rewritten y{n}k</p>"));
        }
        items.push(NewItem {
            guid: Some("b-new".into()),
            title: Some("Late arrival".into()),
            published: Some(BASE + 1),
            ..NewItem::default()
        });
        let counts = store.upsert_items(feed, &items, BASE + 60).await.unwrap();
        assert_eq!(
            (counts.inserted, counts.updated, counts.unchanged),
            (1, 3, 147)
        );
        for n in [3, 100, 149] {
            let titles = hit_titles(&store, user, search_of(&format!("y{n}k"), all(10))).await;
            assert_eq!(titles, vec![format!("Batch item w{n}x")]);
            let old = hit_titles(&store, user, search_of(&format!("z{n}q"), all(10))).await;
            assert!(old.is_empty(), "the old text of {n} is no longer indexed");
        }
        let unread = store.subscription(user, subscription).await.unwrap();
        assert_eq!(unread.unread_count, 151);
        let counts = store.upsert_items(feed, &items, BASE + 120).await.unwrap();
        assert_eq!(
            (counts.inserted, counts.updated, counts.unchanged),
            (0, 0, 151)
        );
    }
);
