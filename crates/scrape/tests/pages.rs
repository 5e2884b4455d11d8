//! The saved pages of `testdata/`, one per kind, read with realistic configurations; and the
//! errors that name what matched nothing.

use chrono::{DateTime, Utc};
use tidings_feed::{Sanitizer, sanitize_items};
use tidings_scrape::{ScrapeConfig, ScrapeError, ScrapeKind, ScrapeOptions, scrape};
use url::Url;

fn page(name: &str) -> Vec<u8> {
    let path = format!("{}/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn options(url: &str) -> ScrapeOptions {
    ScrapeOptions {
        page_url: Some(Url::parse(url).unwrap()),
        ..ScrapeOptions::default()
    }
}

/// An item's title, link and date.
type Row<'a> = (Option<&'a str>, Option<&'a str>, Option<DateTime<Utc>>);

fn rows(items: &[tidings_feed::Item]) -> Vec<Row<'_>> {
    items
        .iter()
        .map(|i| (i.title.as_deref(), i.url.as_deref(), i.published))
        .collect()
}

fn at(text: &str) -> Option<DateTime<Utc>> {
    Some(
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc),
    )
}

fn webflow() -> ScrapeConfig {
    ScrapeConfig {
        kind: ScrapeKind::Html,
        item_selector: Some(".blog-grid .w-dyn-item".into()),
        title_selector: Some("h3.blog-title".into()),
        url_selector: Some("a.blog-card".into()),
        date_selector: Some(".blog-date".into()),
        date_format: Some("%B %d, %Y".into()),
        summary_selector: Some("p.blog-summary".into()),
        ..ScrapeConfig::default()
    }
}

fn nextjs() -> ScrapeConfig {
    ScrapeConfig {
        kind: ScrapeKind::Nextjs,
        data_key: Some("props.pageProps.posts".into()),
        url_selector: Some("slug".into()),
        url_prefix: Some("https://lumen.example/blog/".into()),
        ..ScrapeConfig::default()
    }
}

fn remix() -> ScrapeConfig {
    ScrapeConfig {
        kind: ScrapeKind::Remix,
        context_key: Some("routes/blog._index".into()),
        data_key: Some("posts".into()),
        url_selector: Some("slug".into()),
        url_prefix: Some("https://harbor.example/blog/".into()),
        ..ScrapeConfig::default()
    }
}

#[test]
fn a_webflow_collection_list_gives_its_posts() {
    let scraped = scrape(
        &page("webflow-blog.html"),
        &options("https://www.northwind-labs.example/blog"),
        &webflow(),
    )
    .expect("scrapes");
    assert_eq!(scraped.title.as_deref(), Some("Blog | Northwind Labs"));
    let got = rows(&scraped.items);
    assert_eq!(
        got,
        vec![
            (
                Some("How we cut cold starts by 80%"),
                Some("https://www.northwind-labs.example/blog/how-we-cut-cold-starts-by-80"),
                at("2024-03-12T00:00:00Z")
            ),
            (
                Some("Introducing shared workspaces"),
                Some("https://www.northwind-labs.example/blog/introducing-shared-workspaces"),
                at("2024-02-27T00:00:00Z")
            ),
            (
                Some("PostgreSQL partitioning in practice"),
                Some("https://www.northwind-labs.example/blog/postgres-partitioning-in-practice"),
                at("2024-02-08T00:00:00Z")
            ),
            (
                Some("We're hiring in Lisbon & Berlin"),
                Some("https://jobs.northwind-labs.example/open-roles"),
                at("2024-01-15T00:00:00Z")
            ),
        ]
    );
    // Summaries are the element's HTML, sanitized like feed content: the script goes, the
    // relative link inside is made absolute against the page.
    let mut items = scraped.items.clone();
    assert!(items[1].summary.as_deref().unwrap().contains("<script>"));
    sanitize_items(&mut items, &Sanitizer::default());
    assert_eq!(
        items[1].summary.as_deref(),
        Some("Invite your whole team, share dashboards and keep one source of truth.")
    );
    assert!(
        items[2]
            .summary
            .as_deref()
            .unwrap()
            .contains("href=\"https://www.northwind-labs.example/docs/events\""),
        "{:?}",
        items[2].summary
    );
}

#[test]
fn an_html_source_needs_only_the_item_selector() {
    // Without field selectors the link is the item's first link and the title its text.
    let config = ScrapeConfig {
        kind: ScrapeKind::Html,
        item_selector: Some("ul.Blog_list__k3L4m > li".into()),
        date_selector: Some("time".into()),
        ..ScrapeConfig::default()
    };
    let scraped = scrape(
        &page("nextjs-blog.html"),
        &options("https://lumen.example/blog"),
        &config,
    )
    .expect("scrapes");
    let first = &scraped.items[0];
    assert_eq!(
        first.title.as_deref(),
        Some("Zero-downtime schema migrations")
    );
    assert_eq!(
        first.url.as_deref(),
        Some("https://lumen.example/blog/zero-downtime-schema-migrations")
    );
    // The `datetime` attribute wins over the text.
    assert_eq!(first.published, at("2024-04-02T08:00:00Z"));
    assert_eq!(scraped.items.len(), 3);
}

#[test]
fn a_nextjs_page_gives_the_posts_of_its_next_data() {
    let scraped = scrape(
        &page("nextjs-blog.html"),
        &options("https://lumen.example/blog"),
        &nextjs(),
    )
    .expect("scrapes");
    assert_eq!(scraped.title.as_deref(), Some("Engineering Blog — Lumen"));
    let got = rows(&scraped.items);
    assert_eq!(
        got,
        vec![
            (
                Some("Zero-downtime schema migrations"),
                Some("https://lumen.example/blog/zero-downtime-schema-migrations"),
                at("2024-04-02T08:00:00Z")
            ),
            (
                Some("Why we moved our ingest path to Rust"),
                Some("https://lumen.example/blog/why-we-moved-to-rust"),
                at("2024-03-18T08:00:00Z")
            ),
            (
                Some("Tracing 2 billion spans a day"),
                Some("https://lumen.example/blog/tracing-at-scale"),
                at("2024-02-29T08:00:00Z")
            ),
        ]
    );
    // The excerpt (a default key) is plain text: escaped, so its `<` stays a character.
    assert_eq!(
        scraped.items[1].summary.as_deref(),
        Some(
            "p99 latency went from 480 ms to 35 ms &lt; and memory from 6 GB to 900 MB &gt; what it cost us."
        )
    );
}

#[test]
fn a_remix_page_gives_the_posts_of_its_route() {
    let scraped = scrape(
        &page("remix-blog.html"),
        &options("https://harbor.example/blog"),
        &remix(),
    )
    .expect("scrapes");
    assert_eq!(scraped.title.as_deref(), Some("Blog · Harbor"));
    let got = rows(&scraped.items);
    assert_eq!(
        got,
        vec![
            (
                Some("Harbor 2.0: deploy previews for every branch"),
                Some("https://harbor.example/blog/harbor-2-0"),
                at("2024-05-14T00:00:00Z")
            ),
            (
                Some("Edge caching, explained"),
                Some("https://harbor.example/blog/edge-caching-explained"),
                at("2024-04-30T00:00:00Z")
            ),
            (
                Some("Inside our incident process"),
                Some("https://harbor.example/blog/our-incident-process"),
                at("2024-04-09T00:00:00Z")
            ),
        ]
    );
    // A summary with a blank line keeps its paragraphs.
    assert_eq!(
        scraped.items[1].summary.as_deref(),
        Some(
            "<p>How a request finds its nearest copy, and what happens on a miss.</p><p>With diagrams.</p>"
        )
    );
}

#[test]
fn relative_slugs_resolve_against_the_page_without_a_prefix() {
    let config = ScrapeConfig {
        url_prefix: None,
        ..remix()
    };
    let scraped = scrape(
        &page("remix-blog.html"),
        &options("https://harbor.example/blog/"),
        &config,
    )
    .expect("scrapes");
    assert_eq!(
        scraped.items[0].url.as_deref(),
        Some("https://harbor.example/blog/harbor-2-0")
    );
}

#[test]
fn identities_follow_the_feed_rule_and_stay_stable() {
    let first = scrape(
        &page("webflow-blog.html"),
        &options("https://www.northwind-labs.example/blog"),
        &webflow(),
    )
    .unwrap();
    let again = scrape(
        &page("webflow-blog.html"),
        &options("https://www.northwind-labs.example/blog"),
        &webflow(),
    )
    .unwrap();
    let keys = |p: &tidings_scrape::ScrapedPage| -> Vec<String> {
        p.items.iter().map(|i| i.identity().key.clone()).collect()
    };
    assert_eq!(keys(&first), keys(&again));
    // No guid: the link is the identity, as for a feed item with only a link.
    let expected = tidings_feed::item_identity(
        None,
        first.items[0].url.as_deref(),
        first.items[0].title.as_deref(),
        first.items[0].published,
        None,
    );
    assert_eq!(first.items[0].identity().key, expected.key);
}

fn error_of(name: &str, config: &ScrapeConfig) -> String {
    match scrape(&page(name), &options("https://site.example/blog"), config) {
        Ok(scraped) => panic!("expected an error, got {} items", scraped.items.len()),
        Err(error) => error.to_string(),
    }
}

#[test]
fn an_item_selector_that_matches_nothing_is_named() {
    let config = ScrapeConfig {
        item_selector: Some(".post-card".into()),
        ..webflow()
    };
    assert_eq!(
        error_of("webflow-blog.html", &config),
        "item_selector `.post-card` matched nothing on the page"
    );
}

#[test]
fn a_field_selector_that_matches_in_no_item_is_named() {
    let config = ScrapeConfig {
        date_selector: Some("time.published".into()),
        ..webflow()
    };
    assert_eq!(
        error_of("webflow-blog.html", &config),
        "date_selector `time.published` matched nothing in any of the 4 items that \
         item_selector `.blog-grid .w-dyn-item` found"
    );
    let config = ScrapeConfig {
        title_selector: Some("h2".into()),
        ..webflow()
    };
    assert!(
        error_of("webflow-blog.html", &config).starts_with("title_selector `h2` matched nothing")
    );
}

#[test]
fn dates_that_do_not_fit_the_format_are_reported() {
    let config = ScrapeConfig {
        date_format: Some("%d/%m/%Y".into()),
        ..webflow()
    };
    assert_eq!(
        error_of("webflow-blog.html", &config),
        "date_selector found dates such as `March 12, 2024`, but none could be read with \
         date_format `%d/%m/%Y`"
    );
}

#[test]
fn a_json_path_that_leads_nowhere_names_the_missing_key() {
    let config = ScrapeConfig {
        data_key: Some("props.pageProps.articles".into()),
        ..nextjs()
    };
    assert_eq!(
        error_of("nextjs-blog.html", &config),
        "data_key `props.pageProps.articles` matched nothing in __NEXT_DATA__: \
         `props.pageProps` has no `articles`; it is an object with the keys `navigation`, \
         `pagination`, `posts`"
    );
    let config = ScrapeConfig {
        data_key: Some("props.pageProps.pagination".into()),
        ..nextjs()
    };
    assert_eq!(
        error_of("nextjs-blog.html", &config),
        "data_key `props.pageProps.pagination` leads to an object with the keys `page`, \
         `totalPages`, not a list of items"
    );
    let config = ScrapeConfig {
        title_selector: Some("headline".into()),
        ..nextjs()
    };
    let error = error_of("nextjs-blog.html", &config);
    assert!(
        error.starts_with(
            "title_selector `headline` matched nothing in any of the 3 items in __NEXT_DATA__; \
             the first item has the keys `author`, `excerpt`, `publishedAt`"
        ),
        "{error}"
    );
}

#[test]
fn a_remix_route_that_is_not_there_lists_the_routes() {
    let config = ScrapeConfig {
        context_key: Some("routes/blog".into()),
        ..remix()
    };
    assert_eq!(
        error_of("remix-blog.html", &config),
        "context_key `routes/blog` matched nothing in __remixContext.state.loaderData \
         (its routes: `root`, `routes/blog._index`)"
    );
}

#[test]
fn a_page_of_the_wrong_kind_says_what_is_missing() {
    let error = error_of("webflow-blog.html", &nextjs());
    assert!(
        error.contains("no <script id=\"__NEXT_DATA__\">"),
        "{error}"
    );
    let error = error_of("nextjs-blog.html", &remix());
    assert!(error.contains("no window.__remixContext"), "{error}");
}

#[test]
fn bad_configurations_are_refused_with_the_field() {
    let check = |config: ScrapeConfig| match config.validate() {
        Ok(()) => panic!("accepted {config:?}"),
        Err(ScrapeError::InvalidConfig { field, .. }) => field,
        Err(other) => panic!("unexpected {other}"),
    };
    assert_eq!(
        check(ScrapeConfig {
            kind: ScrapeKind::Html,
            ..ScrapeConfig::default()
        }),
        "item_selector"
    );
    assert_eq!(
        check(ScrapeConfig {
            item_selector: Some("div[".into()),
            ..webflow()
        }),
        "item_selector"
    );
    assert_eq!(
        check(ScrapeConfig {
            date_format: Some("%Q".into()),
            ..webflow()
        }),
        "date_format"
    );
    assert_eq!(
        check(ScrapeConfig {
            url_prefix: Some("/blog/".into()),
            ..nextjs()
        }),
        "url_prefix"
    );
    assert_eq!(
        check(ScrapeConfig {
            url_prefix: Some("javascript:alert(1)//".into()),
            ..nextjs()
        }),
        "url_prefix"
    );
    assert_eq!(
        check(ScrapeConfig {
            data_key: None,
            ..nextjs()
        }),
        "data_key"
    );
    assert_eq!(
        check(ScrapeConfig {
            item_selector: Some("li".into()),
            ..nextjs()
        }),
        "item_selector"
    );
    assert_eq!(
        check(ScrapeConfig {
            context_key: Some("x".into()),
            ..webflow()
        }),
        "context_key"
    );
    assert_eq!(
        check(ScrapeConfig {
            data_key: Some("props..posts".into()),
            ..nextjs()
        }),
        "data_key"
    );
    assert_eq!(
        check(ScrapeConfig {
            title_selector: Some("h".repeat(501)),
            ..webflow()
        }),
        "title_selector"
    );
    // Blank fields count as absent.
    assert!(
        ScrapeConfig {
            summary_selector: Some("  ".into()),
            ..webflow()
        }
        .validate()
        .is_ok()
    );
}

#[test]
fn the_configuration_reads_the_seeds_field_names() {
    let config: ScrapeConfig = serde_json::from_str(
        r#"{"kind":"html","item_selector":".w-dyn-item","title_selector":"h3",
            "url_selector":"a","date_selector":".date","date_format":"%B %d, %Y",
            "url_prefix":"https://example.com"}"#,
    )
    .expect("reads");
    assert_eq!(config.item_selector.as_deref(), Some(".w-dyn-item"));
    assert!(config.validate().is_ok());
    let unknown = serde_json::from_str::<ScrapeConfig>(r#"{"kind":"html","selector":"x"}"#);
    assert!(unknown.is_err());
    let kind = serde_json::from_str::<ScrapeConfig>(r#"{"kind":"angular"}"#);
    assert!(kind.is_err());
}

#[test]
fn hostile_input_gives_errors_not_panics() {
    let html = ScrapeConfig {
        kind: ScrapeKind::Html,
        item_selector: Some("li".into()),
        ..ScrapeConfig::default()
    };
    for bytes in [
        &b""[..],
        b"\xff\xfe\x00<",
        b"<script id=\"__NEXT_DATA__\">{\"props\":",
        b"<script>window.__remixContext = {\"state\":",
        b"<script>window.__remixContext == 1; __remixContext = </script>",
    ] {
        for config in [html.clone(), nextjs(), remix()] {
            assert!(scrape(bytes, &ScrapeOptions::default(), &config).is_err());
        }
    }
    let big = vec![b' '; 100];
    let limited = ScrapeOptions {
        max_input_bytes: 10,
        ..ScrapeOptions::default()
    };
    assert!(matches!(
        scrape(&big, &limited, &html),
        Err(ScrapeError::TooLarge {
            size: 100,
            limit: 10
        })
    ));
    // Thousands of items are cut at MAX_ITEMS.
    let many: String = (0..2000)
        .map(|i| format!("<li><a href=\"/p/{i}\">Post {i}</a></li>"))
        .collect();
    let scraped = scrape(
        format!("<ul>{many}</ul>").as_bytes(),
        &options("https://site.example/"),
        &html,
    )
    .expect("scrapes");
    assert_eq!(scraped.items.len(), tidings_scrape::MAX_ITEMS);
}

#[test]
fn a_page_in_shift_jis_is_decoded_by_its_meta_charset() {
    let (bytes, _, _) = encoding_rs::SHIFT_JIS.encode(
        "<html><head><meta charset=\"Shift_JIS\"><title>お知らせ</title></head><body>\
         <ul><li><a href=\"/news/1\">新製品のお知らせ</a><span>2024年3月5日</span></li></ul></body></html>",
    );
    let config = ScrapeConfig {
        kind: ScrapeKind::Html,
        item_selector: Some("li".into()),
        date_selector: Some("span".into()),
        ..ScrapeConfig::default()
    };
    let scraped = scrape(&bytes, &options("https://site.example/"), &config).expect("scrapes");
    assert_eq!(scraped.title.as_deref(), Some("お知らせ"));
    assert_eq!(scraped.items[0].title.as_deref(), Some("新製品のお知らせ"));
    assert_eq!(scraped.items[0].published, at("2024-03-05T00:00:00Z"));
}
