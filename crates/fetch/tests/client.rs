//! The guarded client against real HTTP servers on 127.0.0.1 (private networks allowed, as
//! for a LAN feed): conditional GET, compression, limits, timeouts, redirects, charsets.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::support::{lan_client, lan_config};
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tidings_fetch::policy::{FeedStatus, NextCheck};
use tidings_fetch::{
    FailureCounts, FetchError, FetchRequest, GuardedClient, ParseResult, PolicyConfig, decide,
};
use tidings_testkit::TestServer;

const FEED: &str =
    "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>t</title></channel></rss>";

fn request(url: &str) -> FetchRequest {
    FetchRequest::parse(url).unwrap()
}

#[tokio::test]
async fn etag_round_trip_gives_304() {
    let router = Router::new().route(
        "/feed",
        get(|headers: HeaderMap| async move {
            if headers.get(header::IF_NONE_MATCH).map(|v| v.as_bytes()) == Some(b"\"v1\"") {
                return (StatusCode::NOT_MODIFIED, [(header::ETAG, "\"v1\"")]).into_response();
            }
            ([(header::ETAG, "\"v1\"")], FEED).into_response()
        }),
    );
    let server = TestServer::start(router).await;
    let client = lan_client();

    let first = client.fetch(&request(&server.url("/feed"))).await.unwrap();
    assert_eq!(first.status, 200);
    assert_eq!(first.body.as_ref(), FEED.as_bytes());
    assert_eq!(first.etag.as_deref(), Some("\"v1\""));
    assert!(!first.is_not_modified());

    let again = request(&server.url("/feed")).with_validators(first.etag.clone(), None);
    let second = client.fetch(&again).await.unwrap();
    assert_eq!(second.status, 304);
    assert!(second.is_not_modified());
    assert!(second.body.is_empty());
    assert_eq!(
        server.last_headers()[header::IF_NONE_MATCH],
        "\"v1\"",
        "the stored ETag went out as If-None-Match"
    );
    assert_eq!(server.total_hits(), 2);
}

#[tokio::test]
async fn last_modified_round_trip_gives_304() {
    const STAMP: &str = "Sat, 21 Nov 2026 10:00:00 GMT";
    let router = Router::new().route(
        "/feed",
        get(|headers: HeaderMap| async move {
            if headers.get(header::IF_MODIFIED_SINCE).map(|v| v.as_bytes())
                == Some(STAMP.as_bytes())
            {
                return StatusCode::NOT_MODIFIED.into_response();
            }
            ([(header::LAST_MODIFIED, STAMP)], FEED).into_response()
        }),
    );
    let server = TestServer::start(router).await;
    let client = lan_client();
    let first = client.fetch(&request(&server.url("/feed"))).await.unwrap();
    assert_eq!(first.status, 200);
    assert_eq!(first.last_modified.as_deref(), Some(STAMP));
    let again = request(&server.url("/feed")).with_validators(None, first.last_modified.clone());
    let second = client.fetch(&again).await.unwrap();
    assert_eq!(second.status, 304);
    assert!(second.body.is_empty());
}

#[tokio::test]
async fn sends_user_agent_accept_and_accept_encoding() {
    let server = TestServer::start(Router::new().route("/", get(|| async { FEED }))).await;
    lan_client()
        .fetch(&request(&server.url("/")))
        .await
        .unwrap();
    let headers = server.last_headers();
    let agent = headers[header::USER_AGENT].to_str().unwrap();
    assert_eq!(agent, tidings_fetch::client::default_user_agent());
    assert!(agent.starts_with("tidings/"), "{agent}");
    let accept = headers[header::ACCEPT].to_str().unwrap();
    assert!(accept.contains("application/atom+xml"), "{accept}");
    let encodings = headers[header::ACCEPT_ENCODING].to_str().unwrap();
    for encoding in ["gzip", "br", "deflate"] {
        assert!(encodings.contains(encoding), "{encodings}");
    }
    assert!(!headers.contains_key(header::IF_NONE_MATCH));
    assert!(!headers.contains_key(header::IF_MODIFIED_SINCE));
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

fn brotli(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut encoder = brotli::CompressorWriter::new(&mut out, 4096, 1, 22);
        encoder.write_all(data).unwrap();
    }
    out
}

fn encoded(encoding: &'static str, body: Vec<u8>) -> Response {
    (
        [
            (header::CONTENT_ENCODING, encoding),
            (header::CONTENT_TYPE, "application/rss+xml"),
        ],
        body,
    )
        .into_response()
}

#[tokio::test]
async fn gzip_brotli_and_deflate_bodies_are_decoded() {
    let long_feed = FEED.repeat(200);
    let (a, b, c) = (long_feed.clone(), long_feed.clone(), long_feed.clone());
    let router = Router::new()
        .route(
            "/gzip",
            get(move || async move { encoded("gzip", gzip(a.as_bytes())) }),
        )
        .route(
            "/br",
            get(move || async move { encoded("br", brotli(b.as_bytes())) }),
        )
        .route(
            "/deflate",
            get(move || async move { encoded("deflate", zlib(c.as_bytes())) }),
        );
    let server = TestServer::start(router).await;
    let client = lan_client();
    for path in ["/gzip", "/br", "/deflate"] {
        let response = client.fetch(&request(&server.url(path))).await.unwrap();
        assert_eq!(response.status, 200, "{path}");
        assert_eq!(response.body.as_ref(), long_feed.as_bytes(), "{path}");
        assert_eq!(
            response.content_type.as_deref(),
            Some("application/rss+xml")
        );
    }
}

/// Serves `total` bytes in 1 MB chunks, produced lazily, counting the chunks produced.
fn streamed_body(total_mb: usize, produced: Arc<AtomicUsize>) -> Body {
    let chunks = futures_util::stream::iter(0..total_mb).map(move |_| {
        produced.fetch_add(1, Ordering::SeqCst);
        Ok::<_, std::io::Error>(vec![b'x'; 1024 * 1024])
    });
    Body::from_stream(chunks)
}

use futures_util::StreamExt;

#[tokio::test]
async fn a_20_mb_body_is_cut_off_at_5_mb_while_streaming() {
    let produced = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&produced);
    let router = Router::new()
        // Chunked, 64 MB (more than the 20 MB of the requirement, so that socket buffers
        // cannot blur the result): only counting while reading can stop it.
        .route(
            "/chunked",
            get(move || {
                let counter = Arc::clone(&counter);
                async move { streamed_body(64, counter) }
            }),
        )
        // Announced: refused from the Content-Length before reading.
        .route("/announced", get(|| async { vec![b'x'; 20 * 1024 * 1024] }))
        // Exactly at the limit is fine.
        .route("/limit", get(|| async { vec![b'x'; 5 * 1024 * 1024] }));
    let server = TestServer::start(router).await;
    let client = lan_client();

    let error = client
        .fetch(&request(&server.url("/chunked")))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        FetchError::BodyTooLarge {
            limit: 5 * 1024 * 1024
        }
    );
    assert_eq!(error.to_string(), "refused: body larger than 5 MB");
    // Give the server a moment to notice the closed connection, then check it was not
    // drained: 5 MB read plus what socket buffers hold, far from the 64 MB the server would
    // produce for a reader that takes everything.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = produced.load(Ordering::SeqCst);
    eprintln!("the server produced {sent} MB before the client hung up");
    assert!(
        sent < 48,
        "the server produced {sent} MB; the body was read far past the limit"
    );

    let error = client
        .fetch(&request(&server.url("/announced")))
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "refused: body larger than 5 MB");

    let at_limit = client.fetch(&request(&server.url("/limit"))).await.unwrap();
    assert_eq!(at_limit.body.len(), 5 * 1024 * 1024);

    // A request may lower the limit (favicons).
    let error = client
        .fetch(&request(&server.url("/limit")).with_max_body_bytes(256 * 1024))
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "refused: body larger than 256 KB");
}

/// A body of `mb` MB without a length, 1 MB at a time; with `pause`, the last MB comes that
/// much later.
fn paced_body(mb: usize, pause: Duration) -> Body {
    let chunks = futures_util::stream::iter(0..mb).then(move |i| async move {
        if i + 1 == mb {
            tokio::time::sleep(pause).await;
        }
        Ok::<_, std::io::Error>(vec![b'x'; 1024 * 1024])
    });
    Body::from_stream(chunks)
}

#[tokio::test]
async fn large_bodies_are_read_one_at_a_time() {
    let router = Router::new()
        .route(
            "/slow",
            get(|| async { paced_body(3, Duration::from_millis(800)) }),
        )
        .route("/fast", get(|| async { paced_body(3, Duration::ZERO) }))
        .route("/small", get(|| async { paced_body(1, Duration::ZERO) }));
    let server = TestServer::start(router).await;
    let client = lan_client();
    let started = Instant::now();
    let slow = {
        let (client, url) = (client.clone(), server.url("/slow"));
        tokio::spawn(async move {
            let response = client.fetch(&request(&url)).await;
            (response, started.elapsed())
        })
    };
    // The slow body is past its first MB by now, and waits for its last one.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let small = client.fetch(&request(&server.url("/small"))).await.unwrap();
    let small_done = started.elapsed();
    let fast = client.fetch(&request(&server.url("/fast"))).await.unwrap();
    let fast_done = started.elapsed();
    let (slow, slow_done) = slow.await.unwrap();
    assert_eq!(slow.unwrap().body.len(), 3 * 1024 * 1024);
    assert_eq!(fast.body.len(), 3 * 1024 * 1024);
    assert_eq!(small.body.len(), 1024 * 1024);
    // A body of at most LARGE_BODY_BYTES does not wait; a larger one waits for its turn.
    assert!(small_done < slow_done, "{small_done:?} {slow_done:?}");
    assert!(
        fast_done >= slow_done,
        "the second large body was read while the first was ({fast_done:?} < {slow_done:?})"
    );
}

#[tokio::test]
async fn a_trickling_large_body_holds_up_the_others_only_briefly() {
    let router = Router::new()
        .route(
            "/trickle",
            get(|| async { paced_body(3, Duration::from_secs(6)) }),
        )
        .route("/fast", get(|| async { paced_body(3, Duration::ZERO) }));
    let server = TestServer::start(router).await;
    let client = lan_client();
    let trickle = {
        let (client, url) = (client.clone(), server.url("/trickle"));
        tokio::spawn(async move { client.fetch(&request(&url)).await })
    };
    // The trickling body holds the turn by now, and its last MB is seconds away.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let fast = client.fetch(&request(&server.url("/fast"))).await.unwrap();
    let waited = started.elapsed();
    assert_eq!(fast.body.len(), 3 * 1024 * 1024);
    assert!(
        waited >= Duration::from_millis(1500),
        "it waited for its turn first: {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(5),
        "a slow server's body held up another feed's for {waited:?}"
    );
    assert!(!trickle.is_finished(), "the trickling body is still coming");
    assert_eq!(trickle.await.unwrap().unwrap().body.len(), 3 * 1024 * 1024);
}

#[tokio::test]
async fn a_compression_bomb_is_cut_off_on_decoded_bytes() {
    let zeros = vec![0u8; 12 * 1024 * 1024];
    let gzip_bomb = gzip(&zeros);
    let brotli_bomb = brotli(&zeros);
    assert!(gzip_bomb.len() < 100 * 1024, "{}", gzip_bomb.len());
    assert!(brotli_bomb.len() < 100 * 1024, "{}", brotli_bomb.len());
    let router = Router::new()
        .route(
            "/gzip",
            get(move || async move { encoded("gzip", gzip_bomb) }),
        )
        .route(
            "/br",
            get(move || async move { encoded("br", brotli_bomb) }),
        );
    let server = TestServer::start(router).await;
    let client = lan_client();
    for path in ["/gzip", "/br"] {
        let error = client.fetch(&request(&server.url(path))).await.unwrap_err();
        assert_eq!(
            error,
            FetchError::BodyTooLarge {
                limit: 5 * 1024 * 1024
            },
            "{path}"
        );
    }
}

#[tokio::test]
async fn a_stalling_server_times_out() {
    let router = Router::new()
        // Never answers in time.
        .route(
            "/silent",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                FEED
            }),
        )
        // Sends headers and a first chunk, then stalls in the middle of the body.
        .route(
            "/trickle",
            get(|| async {
                let parts = futures_util::stream::iter(0..2).then(|n| async move {
                    if n == 1 {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                    }
                    Ok::<_, std::io::Error>(b"<rss>".to_vec())
                });
                Body::from_stream(parts)
            }),
        );
    let server = TestServer::start(router).await;
    let client = GuardedClient::new(tidings_fetch::ClientConfig {
        timeout: Duration::from_millis(400),
        ..lan_config()
    })
    .unwrap();
    for path in ["/silent", "/trickle"] {
        let started = Instant::now();
        let error = client.fetch(&request(&server.url(path))).await.unwrap_err();
        assert_eq!(
            error,
            FetchError::Timeout(Duration::from_millis(400)),
            "{path}"
        );
        assert_eq!(error.kind(), tidings_fetch::FailureKind::Timeout);
        assert!(started.elapsed() < Duration::from_secs(3), "{path}");
    }
}

#[tokio::test]
async fn the_first_byte_has_a_shorter_time_out_than_the_body() {
    let router = Router::new()
        // Headers only after 1.5 s.
        .route(
            "/late",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(1500)).await;
                FEED
            }),
        )
        // Headers at once, then a body trickling in over about 1 s.
        .route(
            "/trickle",
            get(|| async {
                let parts = futures_util::stream::iter(0..5).then(|n| async move {
                    if n > 0 {
                        tokio::time::sleep(Duration::from_millis(250)).await;
                    }
                    Ok::<_, std::io::Error>(if n == 4 {
                        b"</x>".to_vec()
                    } else {
                        b"<x>".to_vec()
                    })
                });
                Body::from_stream(parts)
            }),
        );
    let server = TestServer::start(router).await;
    let client = GuardedClient::new(tidings_fetch::ClientConfig {
        timeout: Duration::from_secs(5),
        first_byte_timeout: Duration::from_millis(300),
        ..lan_config()
    })
    .unwrap();
    let started = Instant::now();
    let error = client
        .fetch(&request(&server.url("/late")))
        .await
        .unwrap_err();
    assert_eq!(error, FetchError::NoResponse(Duration::from_millis(300)));
    assert_eq!(error.to_string(), "no response within 0.3 s");
    assert_eq!(error.kind(), tidings_fetch::FailureKind::Timeout);
    assert!(
        started.elapsed() < Duration::from_millis(1200),
        "gave up early"
    );
    // The body may take longer than the first-byte time-out, within the total.
    let trickled = client
        .fetch(&request(&server.url("/trickle")))
        .await
        .unwrap();
    assert_eq!(trickled.body.as_ref(), b"<x><x><x><x></x>");
}

fn redirect(status: StatusCode, to: &str) -> Response {
    (status, [(header::LOCATION, to.to_owned())]).into_response()
}

#[tokio::test]
async fn redirect_chains_are_followed_and_permanent_moves_reported() {
    let router = Router::new()
        .route("/feed", get(|| async { FEED }))
        .route("/t1", get(|| async { redirect(StatusCode::FOUND, "/t2") }))
        .route(
            "/t2",
            get(|| async { redirect(StatusCode::SEE_OTHER, "t3") }),
        )
        .route(
            "/t3",
            get(|| async { redirect(StatusCode::TEMPORARY_REDIRECT, "/feed") }),
        )
        .route(
            "/p1",
            get(|| async { redirect(StatusCode::MOVED_PERMANENTLY, "/p2") }),
        )
        .route(
            "/p2",
            get(|| async { redirect(StatusCode::PERMANENT_REDIRECT, "/feed") }),
        )
        .route(
            "/mixed",
            get(|| async { redirect(StatusCode::MOVED_PERMANENTLY, "/t3") }),
        )
        .route(
            "/temp-then-perm",
            get(|| async { redirect(StatusCode::FOUND, "/p2") }),
        )
        .route(
            "/loop",
            get(|| async { redirect(StatusCode::FOUND, "/loop") }),
        )
        .route(
            "/utf8",
            get(|| async {
                let location = axum::http::HeaderValue::from_bytes("/feed?q=日本".as_bytes());
                (StatusCode::FOUND, [(header::LOCATION, location.unwrap())])
            }),
        )
        .route("/nowhere", get(|| async { StatusCode::MOVED_PERMANENTLY }))
        .route(
            "/bad",
            get(|| async { redirect(StatusCode::FOUND, "http://[::1") }),
        )
        .route(
            "/r/{n}",
            get(
                |axum::extract::Path(n): axum::extract::Path<u32>| async move {
                    if n == 0 {
                        FEED.into_response()
                    } else {
                        redirect(StatusCode::FOUND, &format!("/r/{}", n - 1))
                    }
                },
            ),
        );
    let server = TestServer::start(router).await;
    let client = lan_client();
    let fetch = |path: &str| {
        let (client, request) = (client.clone(), request(&server.url(path)));
        async move { client.fetch(&request).await }
    };

    let temporary = fetch("/t1").await.unwrap();
    assert_eq!(temporary.status, 200);
    assert_eq!(temporary.body.as_ref(), FEED.as_bytes());
    assert_eq!(temporary.redirects, 3);
    assert_eq!(temporary.url.as_str(), server.url("/feed"));
    assert_eq!(temporary.permanent_redirect, None);

    let permanent = fetch("/p1").await.unwrap();
    assert_eq!(permanent.redirects, 2);
    assert_eq!(
        permanent.permanent_redirect.as_ref().map(|u| u.as_str()),
        Some(server.url("/feed").as_str())
    );

    // 301 then 307: the feed moved for good to /t3, which redirects only for now.
    let mixed = fetch("/mixed").await.unwrap();
    assert_eq!(
        mixed.permanent_redirect.as_ref().map(|u| u.as_str()),
        Some(server.url("/t3").as_str())
    );
    assert_eq!(mixed.url.as_str(), server.url("/feed"));

    // 302 then 308: the feed's own URL only redirects for now; nothing to update.
    let temp_then_perm = fetch("/temp-then-perm").await.unwrap();
    assert_eq!(temp_then_perm.permanent_redirect, None);

    // A raw UTF-8 Location is percent-encoded, not refused.
    let utf8 = fetch("/utf8").await.unwrap();
    assert_eq!(utf8.url.query(), Some("q=%E6%97%A5%E6%9C%AC"));
    assert_eq!(utf8.body.as_ref(), FEED.as_bytes());

    // Five redirects are allowed, six are not.
    let five = fetch("/r/5").await.unwrap();
    assert_eq!(five.redirects, 5);
    let before = server.total_hits();
    let six = fetch("/r/6").await.unwrap_err();
    assert_eq!(six, FetchError::TooManyRedirects { limit: 5 });
    assert_eq!(
        server.total_hits() - before,
        6,
        "the sixth Location is never requested"
    );

    let before = server.total_hits();
    let looped = fetch("/loop").await.unwrap_err();
    assert_eq!(looped, FetchError::TooManyRedirects { limit: 5 });
    assert_eq!(looped.to_string(), "too many redirects (more than 5)");
    assert_eq!(server.total_hits() - before, 6);

    assert_eq!(
        fetch("/nowhere").await.unwrap_err(),
        FetchError::BadRedirect { status: 301 }
    );
    assert_eq!(
        fetch("/bad").await.unwrap_err(),
        FetchError::BadRedirect { status: 302 }
    );
}

#[tokio::test]
async fn shift_jis_bodies_pass_through_with_their_charset() {
    // "日本語のフィード" in Shift_JIS, inside an RSS title.
    let mut body = b"<?xml version=\"1.0\" encoding=\"Shift_JIS\"?><rss><channel><title>".to_vec();
    body.extend_from_slice(&[
        0x93, 0xfa, 0x96, 0x7b, 0x8c, 0xea, 0x82, 0xcc, 0x83, 0x74, 0x83, 0x42, 0x81, 0x5b, 0x83,
        0x68,
    ]);
    body.extend_from_slice(b"</title></channel></rss>");
    let served = body.clone();
    let router = Router::new().route(
        "/sjis",
        get(move || async move {
            (
                [(
                    header::CONTENT_TYPE,
                    "application/rss+xml; charset=Shift_JIS",
                )],
                served,
            )
        }),
    );
    let server = TestServer::start(router).await;
    let response = lan_client()
        .fetch(&request(&server.url("/sjis")))
        .await
        .unwrap();
    assert_eq!(
        response.body.as_ref(),
        body.as_slice(),
        "bytes are not re-encoded"
    );
    assert_eq!(
        response.content_type.as_deref(),
        Some("application/rss+xml")
    );
    assert_eq!(response.charset.as_deref(), Some("Shift_JIS"));
}

#[tokio::test]
async fn scheduling_headers_are_exposed_and_drive_the_policy() {
    let router = Router::new()
        .route(
            "/cached",
            get(|| async {
                (
                    [
                        (header::CACHE_CONTROL, "public, max-age=7200"),
                        (header::EXPIRES, "Sat, 21 Nov 2026 20:00:00 GMT"),
                    ],
                    FEED,
                )
            }),
        )
        .route(
            "/busy",
            get(|| async {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(header::RETRY_AFTER, "10800")],
                    "try later",
                )
            }),
        )
        .route(
            "/limited",
            get(|| async {
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    [(header::RETRY_AFTER, "120")],
                )
            }),
        )
        .route("/gone", get(|| async { StatusCode::GONE }))
        .route("/missing", get(|| async { StatusCode::NOT_FOUND }))
        .route("/private", get(|| async { StatusCode::UNAUTHORIZED }))
        .route("/forbidden", get(|| async { StatusCode::FORBIDDEN }))
        .route(
            "/broken",
            get(|| async { StatusCode::INTERNAL_SERVER_ERROR }),
        );
    let server = TestServer::start(router).await;
    let client = lan_client();
    let config = PolicyConfig::default();
    let now = chrono::DateTime::parse_from_rfc3339("2026-11-21T12:00:00Z")
        .unwrap()
        .to_utc();
    let hourly = Some(Duration::from_secs(3600));
    let hours_after = |decision: &tidings_fetch::Decision| match decision.next_check {
        NextCheck::At(at) => (at - now).num_minutes() as f64 / 60.0,
        other => panic!("{other:?}"),
    };

    let cached = client
        .fetch(&request(&server.url("/cached")))
        .await
        .unwrap();
    assert_eq!(
        cached.cache_hints.cache_control.as_deref(),
        Some("public, max-age=7200")
    );
    assert_eq!(
        cached.cache_hints.expires.as_deref(),
        Some("Sat, 21 Nov 2026 20:00:00 GMT")
    );
    assert!(cached.cache_hints.date.is_some(), "axum sends Date");
    let decision = decide(
        &config,
        now,
        &cached.outcome(ParseResult::Parsed),
        FailureCounts::default(),
        hourly,
    );
    assert_eq!(decision.status, FeedStatus::Active);
    assert_eq!(hours_after(&decision), 2.0);

    let busy = client.fetch(&request(&server.url("/busy"))).await.unwrap();
    assert_eq!(busy.status, 503);
    assert!(busy.body.is_empty(), "error bodies are not read");
    assert_eq!(busy.cache_hints.retry_after.as_deref(), Some("10800"));
    let decision = decide(
        &config,
        now,
        &busy.outcome(ParseResult::Skipped),
        FailureCounts::default(),
        hourly,
    );
    assert_eq!(decision.status, FeedStatus::Backoff);
    assert_eq!(hours_after(&decision), 3.0);
    assert_eq!(decision.http_status, Some(503));

    // 429 and 500 back off with growing intervals.
    let mut counts = FailureCounts::default();
    let mut delays = Vec::new();
    for path in ["/limited", "/broken", "/broken", "/broken"] {
        let response = client.fetch(&request(&server.url(path))).await.unwrap();
        let decision = decide(
            &config,
            now,
            &response.outcome(ParseResult::Skipped),
            counts,
            Some(Duration::from_secs(1800)),
        );
        assert_eq!(decision.status, FeedStatus::Backoff);
        delays.push(hours_after(&decision));
        counts = decision.counts;
    }
    assert_eq!(delays, vec![0.5, 1.0, 2.0, 4.0]);

    for path in ["/gone", "/missing", "/private", "/forbidden"] {
        let response = client.fetch(&request(&server.url(path))).await.unwrap();
        let decision = decide(
            &config,
            now,
            &response.outcome(ParseResult::Skipped),
            FailureCounts::default(),
            hourly,
        );
        assert_eq!(decision.status, FeedStatus::Stopped, "{path}");
        assert_eq!(decision.next_check, NextCheck::WhenResumed);
    }
}

#[tokio::test]
async fn connection_failures_are_connect_errors() {
    // Bind and release a port so nothing listens there.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let error = lan_client()
        .fetch(&request(&format!("http://{addr}/feed")))
        .await
        .unwrap_err();
    assert!(matches!(error, FetchError::Connect(_)), "{error:?}");
    assert_eq!(error.kind(), tidings_fetch::FailureKind::Connect);
    let decision = decide(
        &PolicyConfig::default(),
        chrono::Utc::now(),
        &error.outcome(),
        FailureCounts::default(),
        Some(Duration::from_secs(3600)),
    );
    assert_eq!(decision.status, FeedStatus::Backoff);
    assert!(decision.reason.unwrap().starts_with("could not connect"));
}

#[tokio::test]
async fn an_http_proxy_receives_the_request_for_the_target() {
    // A stand-in proxy: it answers any absolute-form request itself and records the URI.
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let record = Arc::clone(&seen);
    let proxy = TestServer::start(Router::new().fallback(move |uri: axum::http::Uri| {
        let record = Arc::clone(&record);
        async move {
            record.lock().unwrap().push(uri.to_string());
            FEED
        }
    }))
    .await;
    let client = lan_client();
    let proxied = request("http://feeds.example.com/rss.xml")
        .with_proxy(Some(url::Url::parse(&proxy.url("")).unwrap()));
    let response = client.fetch(&proxied).await.unwrap();
    assert_eq!(response.body.as_ref(), FEED.as_bytes());
    assert_eq!(response.remote_addr, Some(proxy.addr));
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        ["http://feeds.example.com/rss.xml"]
    );

    // The proxy setting is validated.
    let bad = request("http://feeds.example.com/")
        .with_proxy(Some(url::Url::parse("ftp://proxy.example.com").unwrap()));
    let error = client.fetch(&bad).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "refused: proxy scheme ftp is not http, https, socks5 or socks5h"
    );
}

#[tokio::test]
async fn post_json_sends_the_body_reads_error_answers_and_follows_no_redirect() {
    use axum::routing::post;
    let received: Arc<std::sync::Mutex<Vec<(String, String)>>> = Arc::default();
    let log = Arc::clone(&received);
    let router = Router::new()
        .route(
            "/hook",
            post(move |headers: HeaderMap, body: String| {
                let log = Arc::clone(&log);
                async move {
                    let kind = headers[header::CONTENT_TYPE].to_str().unwrap().to_owned();
                    log.lock().unwrap().push((kind, body));
                    StatusCode::NO_CONTENT
                }
            }),
        )
        .route(
            "/limited",
            post(|| async {
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    [
                        (header::RETRY_AFTER, "3"),
                        (
                            header::HeaderName::from_static("x-ratelimit-reset-after"),
                            "2.5",
                        ),
                    ],
                    r#"{"retry_after": 2.5}"#,
                )
            }),
        )
        .route(
            "/moved",
            post(|| async {
                (
                    StatusCode::TEMPORARY_REDIRECT,
                    [(header::LOCATION, "/hook")],
                )
            }),
        );
    let server = TestServer::start(router).await;
    let client = lan_client();
    let url = |path: &str| url::Url::parse(&server.url(path)).unwrap();

    let sent = client
        .post_json(&url("/hook"), bytes::Bytes::from_static(b"{\"a\":1}"), 1024)
        .await
        .unwrap();
    assert_eq!(sent.status, 204);
    assert!(sent.is_success());
    assert_eq!(
        received.lock().unwrap().as_slice(),
        [("application/json".to_owned(), "{\"a\":1}".to_owned())]
    );

    let limited = client
        .post_json(&url("/limited"), bytes::Bytes::new(), 8)
        .await
        .unwrap();
    assert_eq!(limited.status, 429);
    assert_eq!(limited.retry_after.as_deref(), Some("3"));
    assert_eq!(limited.rate_limit_reset_after.as_deref(), Some("2.5"));
    // The error answer's body is read, cut at the caller's limit.
    assert_eq!(limited.body.as_ref(), b"{\"retry_");

    let moved = client
        .post_json(&url("/moved"), bytes::Bytes::new(), 1024)
        .await
        .unwrap();
    assert_eq!(moved.status, 307);
    assert_eq!(
        received.lock().unwrap().len(),
        1,
        "the redirect was not followed"
    );

    // The guard holds for POSTs too: loopback is refused without the operator's say-so.
    let guarded = GuardedClient::new(tidings_fetch::ClientConfig::default()).unwrap();
    let refused = guarded
        .post_json(&url("/hook"), bytes::Bytes::new(), 1024)
        .await;
    assert!(
        matches!(refused, Err(FetchError::Refused(_))),
        "{refused:?}"
    );
    assert_eq!(received.lock().unwrap().len(), 1);
}

/// WebSub (F18): a feed's `Link` headers reach the fetcher (several joined), and a hub's
/// subscription request is a form POST that follows 307/308 with its body (websub.rocks 203,
/// 204) but never turns into a GET on 302; the guard applies to the POST too.
#[tokio::test]
async fn link_headers_and_form_posts_for_websub() {
    use axum::routing::post;
    let seen: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let log = Arc::clone(&seen);
    let log_new = Arc::clone(&seen);
    let router = Router::new()
        .route(
            "/feed",
            get(|| async {
                let mut headers = HeaderMap::new();
                headers.append(
                    header::LINK,
                    "<https://hub.example/>; rel=\"hub\"".parse().unwrap(),
                );
                headers.append(header::LINK, "</feed>; rel=\"self\"".parse().unwrap());
                (headers, FEED)
            }),
        )
        .route(
            "/old-hub",
            post(|| async {
                (
                    StatusCode::TEMPORARY_REDIRECT,
                    [(header::LOCATION, "/moved-hub")],
                )
            }),
        )
        .route(
            "/moved-hub",
            post(|| async { (StatusCode::PERMANENT_REDIRECT, [(header::LOCATION, "/hub")]) }),
        )
        .route(
            "/hub",
            post(move |headers: HeaderMap, body: String| async move {
                let kind = headers[header::CONTENT_TYPE].to_str().unwrap().to_owned();
                log.lock().unwrap().push(format!("{kind} {body}"));
                (StatusCode::ACCEPTED, "ok")
            }),
        )
        .route(
            "/found",
            post(|| async { (StatusCode::FOUND, [(header::LOCATION, "/hub")]) }),
        )
        .route(
            "/refuses",
            post(move || async move {
                log_new.lock().unwrap().push("refuses".into());
                (StatusCode::BAD_REQUEST, "the topic is not allowed here")
            }),
        );
    let server = TestServer::start(router).await;
    let client = lan_client();
    let feed = client.fetch(&request(&server.url("/feed"))).await.unwrap();
    assert_eq!(
        feed.link.as_deref(),
        Some("<https://hub.example/>; rel=\"hub\", </feed>; rel=\"self\"")
    );

    let form = [
        ("hub.mode", "subscribe"),
        ("hub.topic", "https://b.example/f?a=1&b"),
    ];
    let answer = client
        .post_form(
            &url::Url::parse(&server.url("/old-hub")).unwrap(),
            &form,
            1024,
        )
        .await
        .unwrap();
    assert_eq!(answer.status, 202);
    assert_eq!(
        answer.body.as_ref(),
        b"ok",
        "answered by /hub after the 307 and the 308"
    );
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        [
            "application/x-www-form-urlencoded hub.mode=subscribe&hub.topic=https%3A%2F%2Fb.example%2Ff%3Fa%3D1%26b"
        ]
    );

    let found = client
        .post_form(
            &url::Url::parse(&server.url("/found")).unwrap(),
            &form,
            1024,
        )
        .await
        .unwrap();
    assert_eq!(found.status, 302, "a 302 is the hub's answer, not followed");
    assert_eq!(seen.lock().unwrap().len(), 1);

    let refused = client
        .post_form(&url::Url::parse(&server.url("/refuses")).unwrap(), &form, 8)
        .await
        .unwrap();
    assert_eq!(refused.status, 400);
    assert_eq!(refused.body.as_ref(), b"the topi", "cut at the limit");

    // The default policy refuses loopback for POSTs as for fetches.
    let guarded = GuardedClient::new(tidings_fetch::ClientConfig::default()).unwrap();
    let error = guarded
        .post_form(&url::Url::parse(&server.url("/hub")).unwrap(), &form, 1024)
        .await
        .unwrap_err();
    assert!(matches!(error, FetchError::Refused(_)), "{error}");
    assert_eq!(
        seen.lock().unwrap().len(),
        2,
        "only /refuses was reached since"
    );
}
