//! Full text on saved article pages (a news site, a blog, a Japanese page in Shift_JIS) with
//! their navigation, sidebars, footers and comments, served from a real HTTP server on loopback
//! and fetched through the guarded client, as the worker fetches them: pages written for the
//! tests, and saved real-world pages from Mozilla readability's test suite (a Herald Sun
//! column, a blog post on ebb.org, a Japanese children's-story page converted to Shift_JIS;
//! `testdata/README.md` says where each comes from and what was changed).

use std::net::SocketAddr;

use axum::Router;
use axum::http::header;
use axum::routing::get;
use tidings_extract::{Article, ExtractError, coverage, extract, text_chars};
use tidings_feed::Sanitizer;
use tidings_fetch::{AddressPolicy, ClientConfig, FetchRequest, GuardedClient};
use url::Url;

const NEWS: &[u8] = include_bytes!("../testdata/news.html");
const BLOG: &[u8] = include_bytes!("../testdata/blog.html");
const JAPANESE_SJIS: &[u8] = include_bytes!("../testdata/japanese-sjis.html");
const HERALD_SUN: &[u8] = include_bytes!("../testdata/herald-sun/source.html");
const EBB_ORG: &[u8] = include_bytes!("../testdata/ebb-org/source.html");
const HUKUMUSUME_SJIS: &[u8] = include_bytes!("../testdata/hukumusume-sjis/source.html");

/// Where the saved real pages are served, as on their sites.
const HERALD_SUN_PATH: &str =
    "/news/opinion/angry-media-wont-buckle-over-new-surveillance-laws/story-fni0fha6-1227261886014";
const EBB_ORG_PATH: &str = "/bkuhn/blog/2019/10/15/fsf-rms.html";
const HUKUMUSUME_PATH: &str = "/douwa/pc/aesop/01/01.htm";

/// Serves the saved pages as their sites would: the news page and the blog with a charset in
/// `Content-Type`, the Japanese page with none (its `<meta>` names Shift_JIS), and one page
/// that is no article.
async fn serve_pages() -> SocketAddr {
    let html = |body: &'static [u8], content_type: &'static str| {
        get(move || async move { ([(header::CONTENT_TYPE, content_type)], body) })
    };
    let router = Router::new()
        .route(
            "/news/uk/tidal-mill",
            html(NEWS, "text/html; charset=utf-8"),
        )
        .route(
            "/2025/02/sqlite-growth/",
            html(BLOG, "text/html; charset=UTF-8"),
        )
        .route(
            "/news/20250310_toshokan.html",
            html(JAPANESE_SJIS, "text/html"),
        )
        .route(
            HERALD_SUN_PATH,
            html(HERALD_SUN, "text/html; charset=utf-8"),
        )
        .route(EBB_ORG_PATH, html(EBB_ORG, "text/html; charset=utf-8"))
        // As the Japanese page's server did: no charset in the header, Shift_JIS in the page.
        .route(HUKUMUSUME_PATH, html(HUKUMUSUME_SJIS, "text/html"))
        .route(
            "/login",
            html(
                b"<html><head><title>Sign in</title></head><body><form><input name=u>\
                  <input type=password name=p><button>Sign in</button></form></body></html>",
                "text/html",
            ),
        );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, router).await.expect("serve") });
    addr
}

/// Fetches `path` from the page server through the guarded client (loopback allowed, as with
/// `TIDINGS_ALLOW_PRIVATE_NETWORKS`) and extracts its article.
async fn fetch_and_extract(addr: SocketAddr, path: &str) -> Result<Article, ExtractError> {
    let client = GuardedClient::new(ClientConfig {
        address_policy: AddressPolicy {
            allow_private_networks: true,
            ..AddressPolicy::default()
        },
        ..ClientConfig::default()
    })
    .expect("client");
    let url = Url::parse(&format!("http://{addr}{path}")).expect("url");
    let response = client
        .fetch(&FetchRequest::new(url))
        .await
        .expect("the page is served");
    assert_eq!(response.status, 200);
    extract(
        &response.body,
        &response.url,
        response.charset.as_deref(),
        &Sanitizer::default(),
    )
}

fn assert_has_all(article: &Article, wanted: &[&str]) {
    for text in wanted {
        assert!(
            article.text.contains(text),
            "missing {text:?}:\n{}",
            article.text
        );
    }
}

fn assert_has_none(article: &Article, unwanted: &[&str]) {
    for text in unwanted {
        assert!(
            !article.text.contains(text),
            "the article holds {text:?}, which is not part of it:\n{}",
            article.text
        );
    }
}

#[tokio::test]
async fn news_page_gives_the_story_without_navigation_sidebar_comments_or_footer() {
    let addr = serve_pages().await;
    let article = fetch_and_extract(addr, "/news/uk/tidal-mill")
        .await
        .expect("an article");
    // Its first and last paragraphs, a quote and a subheading.
    assert_has_all(
        &article,
        &[
            "The tidal mill at Porthcarrow last turned in the winter of 1935",
            "The moon does not send an invoice.",
            "Objections over the mill pond",
            "will be the mill's 240th birthday",
        ],
    );
    assert_has_none(
        &article,
        &[
            "Crossword and Puzzles",          // section navigation
            "Ferry strike called off",        // the breaking-news ticker
            "We use cookies",                 // the cookie banner
            "Seal pup rescued",               // the most-read sidebar
            "Morning Tide newsletter",        // the newsletter box
            "My grandfather worked the last", // a reader's comment
            "Complaints and corrections",     // the footer's links
            "Registered in England and Wales",
        ],
    );
    assert_eq!(
        article.title.as_deref(),
        Some("Harbour town votes to restore its tidal mill after 90 years")
    );
    assert!(article.text_chars > 3000, "{}", article.text_chars);
    assert_eq!(article.text_chars, text_chars(&article.html));
    // Sanitized like feed content: no scripts, and the relative image made absolute on the
    // page's own origin (http here, so dropped, as the sanitizer drops http images by default).
    assert!(!article.html.contains("<script"), "{}", article.html);
    assert!(!article.html.contains("dataLayer"), "{}", article.html);
    assert!(!article.html.contains("src=\"/images"), "{}", article.html);
    assert!(article.html.contains("<blockquote>"), "{}", article.html);
}

#[tokio::test]
async fn blog_post_keeps_its_code_and_leaves_the_widgets_and_comments() {
    let addr = serve_pages().await;
    let article = fetch_and_extract(addr, "/2025/02/sqlite-growth/")
        .await
        .expect("an article");
    assert_has_all(
        &article,
        &[
            "For three years the little database behind my bike-maintenance log",
            "PRAGMA freelist_count;",
            "Free pages are not lost pages",
            "Next time: the bottom bracket, which turned out to be a loose pedal.",
        ],
    );
    assert_has_none(
        &article,
        &[
            "Databases, bicycles and other things that squeak", // site description
            "About me",                                         // the menu
            "Measuring chain wear with a ruler",                // post navigation, widgets
            "PostgreSQL on a Raspberry Pi",                     // recent posts widget
            "Great write-up!",                                  // comments
            "I came here for the bottom bracket",
            "Leave a Reply",
            "Proudly powered by WordPress", // footer
        ],
    );
    // The code block keeps its shape: a <pre> with its line breaks.
    assert!(article.html.contains("<pre>"), "{}", article.html);
    assert!(
        article.html.contains("PRAGMA page_count;\n256"),
        "{}",
        article.html
    );
}

#[tokio::test]
async fn shift_jis_page_without_a_charset_header_decodes_from_its_meta() {
    let addr = serve_pages().await;
    let article = fetch_and_extract(addr, "/news/20250310_toshokan.html")
        .await
        .expect("an article");
    assert_eq!(article.encoding, "Shift_JIS");
    assert_has_all(
        &article,
        &[
            "瀬戸内海に浮かぶ人口およそ三百人の大浜島で",
            "岡田真理子さん（五十八）",
            "島に新しい人の流れを作るきっかけにしたい",
        ],
    );
    assert!(
        !article.text.contains('\u{FFFD}'),
        "undecoded bytes:\n{}",
        article.text
    );
    assert_has_none(
        &article,
        &[
            "購読のお申し込み",   // the global navigation
            "アクセスランキング", // the sidebar's ranking
            "レモンの収穫",       // a ranked story
            "個人情報の取り扱い", // the footer
            "無断転載を禁じます",
        ],
    );
    // Japanese counts in characters: seven paragraphs of several dozen characters each.
    assert!(article.text_chars > 700, "{}", article.text_chars);
    assert!(
        article.text_chars < article.text.len(),
        "characters, not bytes"
    );
}

/// The text of a saved real page's `expected.html` (readability.js's own output for it, the
/// article as Mozilla's test suite has it).
fn expected_text(html: &str) -> String {
    tidings_feed::text::html_to_text(html).expect("expected.html has text")
}

/// Each saved page's article text (`NAME.article.txt`: the text of its article body, or the
/// text of a real page's `expected.html`), against which the extraction is measured in
/// tokens: nearly all of the article, nearly none of the rest of the page.
/// `tidings-bench extract crates/extract/testdata` prints the same figures.
#[tokio::test]
async fn the_extraction_keeps_the_article_and_leaves_the_rest_of_the_page() {
    let addr = serve_pages().await;
    let pages: [(&str, &[u8], String); 6] = [
        (
            "/news/uk/tidal-mill",
            NEWS,
            include_str!("../testdata/news.article.txt").to_owned(),
        ),
        (
            "/2025/02/sqlite-growth/",
            BLOG,
            include_str!("../testdata/blog.article.txt").to_owned(),
        ),
        (
            "/news/20250310_toshokan.html",
            JAPANESE_SJIS,
            include_str!("../testdata/japanese-sjis.article.txt").to_owned(),
        ),
        (
            HERALD_SUN_PATH,
            HERALD_SUN,
            expected_text(include_str!("../testdata/herald-sun/expected.html")),
        ),
        (
            EBB_ORG_PATH,
            EBB_ORG,
            expected_text(include_str!("../testdata/ebb-org/expected.html")),
        ),
        (
            HUKUMUSUME_PATH,
            HUKUMUSUME_SJIS,
            expected_text(include_str!("../testdata/hukumusume-sjis/expected.html")),
        ),
    ];
    for (path, page, expected) in pages {
        let article = fetch_and_extract(addr, path).await.expect("an article");
        let page_text = coverage::page_text(page, None, &Sanitizer::default());
        let measured = coverage::coverage(&article.text, &expected, &page_text);
        assert!(
            measured.article_share() >= 0.98,
            "{path}: only {:.1} % of the article kept: {measured:?}\n{}",
            measured.article_share() * 100.0,
            article.text
        );
        // At most a tenth of the rest of the page came along, and at most 2 % of what was
        // kept is not the article's. (The Japanese real page's reference keeps its sidebar, so
        // its rest is the header row alone, 13 tokens, where a few bigrams across element
        // boundaries weigh more than a tenth.)
        assert!(
            measured.other_tokens < 100 || measured.other_share() <= 0.10,
            "{path}: {:.1} % of the page's other text came along: {measured:?}\n{}",
            measured.other_share() * 100.0,
            article.text
        );
        assert!(
            measured.other_kept * 50 <= measured.extracted_tokens,
            "{path}: {measured:?}\n{}",
            article.text
        );
        // The measure itself sees the difference: the whole page's text scores as all of it.
        let everything = coverage::coverage(&page_text, &expected, &page_text);
        assert_eq!(everything.other_share(), 1.0, "{path}");
        assert!(everything.other_tokens > 10, "{path}: {everything:?}");
    }
}

#[tokio::test]
async fn saved_herald_sun_column_gives_the_column_without_menus_logins_or_other_stories() {
    let addr = serve_pages().await;
    let article = fetch_and_extract(addr, HERALD_SUN_PATH)
        .await
        .expect("an article");
    assert_eq!(article.encoding, "UTF-8");
    assert_eq!(
        article.title.as_deref(),
        Some("Angry media won’t buckle over new surveillance laws")
    );
    // Its standfirst, a paragraph from the middle (behind the page's "Read more"), its last
    // paragraph and its sign-off, as in readability.js's expected output.
    assert_has_all(
        &article,
        &[
            "A HIGH-powered federal government team has been doing the rounds of media \
             organisations",
            "The Press Council is concerned the laws would crush investigative journalism.",
            "Memories of the grief Conroy brought down on his head would undoubtedly make \
             Abbott sit up and take notice.",
            "LAURIE OAKES IS THE NINE NETWORK POLITICAL EDITOR",
        ],
    );
    assert_has_none(
        &article,
        &[
            "Barefoot Investor",                            // the section menu
            "Horoscopes",                                   // the section menu
            "Login with Facebook",                          // the login box, twice on the page
            "Forgot your password?",                        // the login box
            "Doctor knows best, not Starbeam Fantapants",   // other opinion columns
            "Wife’s fury at hubby’s million dollar gamble", // most popular stories
            "Relevant Ads Opt-out",                         // the footer's links
            "Copyright Herald and Weekly Times",            // the footer
            "Read more",                                    // the page's own button
        ],
    );
    assert!(article.text_chars > 5000, "{}", article.text_chars);
}

#[tokio::test]
async fn saved_blog_post_gives_the_post_without_its_tag_cloud_menu_or_licence_footer() {
    let addr = serve_pages().await;
    let article = fetch_and_extract(addr, EBB_ORG_PATH)
        .await
        .expect("an article");
    // Its first and last paragraphs, a sentence from the middle and its date line, as in
    // readability.js's expected output (which also keeps the page's disclaimer below it).
    assert_has_all(
        &article,
        &[
            "The last 33 days have been unprecedentedly difficult for the software freedom \
             community",
            "#MeToo is not a “frenzy”",
            "we must find a way to stand firm for software freedom while also making a safe \
             environment for victims",
            "Posted on Tuesday 15 October 2019 at 09:11 by Bradley M. Kuhn.",
        ],
    );
    assert_has_none(
        &article,
        &[
            "Pump.io Social Network",       // the menu
            "Interviews / Articles",        // the menu
            "gpl-compatibility",            // the tag cloud
            "np-complete",                  // the tag cloud
            "A Very Old Fork of Jekyll",    // "Powered by"
            "Chasing Quick Fixes",          // the previous post's link
            "Creative Commons Attribution", // the licence footer
        ],
    );
    // Links stay links, made absolute on the page's own origin.
    assert!(
        article
            .html
            .contains("href=\"https://www.fsf.org/news/richard-m-stallman-resigns\""),
        "{}",
        article.html
    );
}

#[tokio::test]
async fn saved_japanese_page_in_shift_jis_gives_the_story_without_the_ads() {
    let addr = serve_pages().await;
    let article = fetch_and_extract(addr, HUKUMUSUME_PATH)
        .await
        .expect("an article");
    // No charset in the header: the page's <meta> names Shift_JIS.
    assert_eq!(article.encoding, "Shift_JIS");
    assert!(
        !article.text.contains('\u{FFFD}'),
        "undecoded bytes:\n{}",
        article.text
    );
    assert_eq!(
        article.title.as_deref(),
        Some("欲張りなイヌ ＜福娘童話集 きょうのイソップ童話＞")
    );
    // The fable from its first sentence to its moral, as in readability.js's expected output.
    assert_has_all(
        &article,
        &[
            "肉をくわえたイヌが、橋を渡っていました。",
            "「ウゥー、ワン！！」",
            "さっきの川の中のイヌは、水にうつった自分の顔だったのです。",
            "欲張るとけっきょく損をするというお話しです。",
            "おしまい",
        ],
    );
    // The left column's ads and their scripts are gone. (Its right-hand column of daily
    // links, a table cell beside the story, is kept, as readability.js keeps it: this old
    // table layout gives the cell no mark that it is not content.)
    assert_has_none(
        &article,
        &["google_ad_client", "ca-pub-2746615155806331", "show_ads.js"],
    );
    assert!(!article.html.contains("<script"), "{}", article.html);
    assert!(
        article.text_chars < article.text.len(),
        "characters, not bytes"
    );
}

#[tokio::test]
async fn a_page_without_an_article_says_so() {
    let addr = serve_pages().await;
    let error = fetch_and_extract(addr, "/login")
        .await
        .expect_err("no article");
    assert_eq!(error, ExtractError::NoArticle, "{error}");
}

#[test]
fn garbage_is_refused_or_read_never_a_panic() {
    let url = Url::parse("https://example.com/a").unwrap();
    let sanitizer = Sanitizer::default();
    // Nested far past any article: before flattening, this overflowed the stack.
    let deep = "<div>".repeat(20_000);
    let inputs: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"\xff\xfe\x00<\x00p".to_vec(),
        vec![0u8; 4096],
        b"<html><body><p>".repeat(500),
        deep.into_bytes(),
        b"<p>"
            .iter()
            .copied()
            .chain((0..=255u8).cycle().take(100_000))
            .collect(),
        b"<script>".repeat(1000),
        "<table><tr><td>".repeat(3000).into_bytes(),
    ];
    for input in inputs {
        match extract(&input, &url, None, &sanitizer) {
            Ok(article) => {
                assert!(!article.text.is_empty());
                assert!(!article.html.contains("<script"));
            }
            Err(ExtractError::NoArticle | ExtractError::TooLarge(_) | ExtractError::Failed(_)) => {}
            Err(other) => panic!("unexpected error {other}"),
        }
    }
}

#[test]
fn too_many_elements_are_refused_with_the_limit() {
    let url = Url::parse("https://example.com/a").unwrap();
    let page = format!(
        "<body>{}</body>",
        "<p>x</p>".repeat(tidings_extract::MAX_ELEMENTS + 10)
    );
    let error = extract(page.as_bytes(), &url, None, &Sanitizer::default()).unwrap_err();
    assert_eq!(error, ExtractError::TooLarge(tidings_extract::MAX_ELEMENTS));
}
