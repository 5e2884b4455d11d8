//! The farm of `tidings-bench fetch --mix`: feeds that behave as the world's do, every one of
//! them on one host (127.0.0.1), as a user's hundred YouTube channels or Substack newsletters
//! share theirs.
//!
//! Of every 500 feeds, 413 answer well (5 to 500 items, log-uniform, RSS, Atom and JSON Feed in
//! turn, with an ETag and 304s) and 87 misbehave: 25 answer 404 and 2 answer 410, 10 answer 429
//! with `Retry-After`, 10 answer 500, 502 or 503, 5 redirect in a loop, 5 moved permanently
//! (301 to a good feed), 10 answer after 10 s, 10 trickle their body (half finish after about
//! 6 s, half would take half a minute), 5 send 20 MB (half announce it, half stream it), and 5 are an
//! HTML page. The kinds are shuffled over the ids with a fixed seed, so every run serves the
//! same farm. Every request is counted.
//!
//! Every item's link is an article page of its site (`/site/{id}/…`): a news page with its
//! menu, sidebar and footer around an article of about 3,000 characters, so that full text
//! finds an article longer than the item's teaser. Article requests are counted apart.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// What one feed of the farm does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Answers its feed of this many items, 304 when the client sends its ETag back.
    WellBehaved(usize),
    /// 301 to a well-behaved feed of 20 items.
    Moved,
    /// 404.
    NotFound,
    /// 410.
    Gone,
    /// 429 with `Retry-After: 3600`.
    TooManyRequests,
    /// 500, 502 or 503.
    ServerError(u16),
    /// 302 to a page that redirects back, for ever.
    RedirectLoop,
    /// Answers a 20-item feed after 10 s.
    Slow,
    /// Answers at once, then sends its body 100 bytes at a time, every 200 ms; `true`: a small
    /// feed that is complete after about 6 s, `false`: one that would take half a minute.
    Trickle(bool),
    /// 20 MB of body; `true`: with `Content-Length`, `false`: streamed without.
    Huge(bool),
    /// An HTML page.
    NotAFeed,
}

impl Behaviour {
    /// A short name, for the bench's report.
    pub fn name(&self) -> &'static str {
        match self {
            Behaviour::WellBehaved(_) => "well-behaved",
            Behaviour::Moved => "moved (301)",
            Behaviour::NotFound => "404",
            Behaviour::Gone => "410",
            Behaviour::TooManyRequests => "429 + Retry-After",
            Behaviour::ServerError(_) => "5xx",
            Behaviour::RedirectLoop => "redirect loop",
            Behaviour::Slow => "slow (10 s)",
            Behaviour::Trickle(_) => "trickling body",
            Behaviour::Huge(_) => "20 MB body",
            Behaviour::NotAFeed => "HTML page",
        }
    }
}

/// How many of every 500 feeds misbehave in each way (the rest are well-behaved).
/// A kind of misbehaviour: how many of every 500 feeds, and the behaviour of the i-th of them.
type Misbehaviour = (usize, fn(usize) -> Behaviour);

const MISBEHAVIOUR_PER_500: [Misbehaviour; 10] = [
    (25, |_| Behaviour::NotFound),
    (2, |_| Behaviour::Gone),
    (10, |_| Behaviour::TooManyRequests),
    (10, |i| Behaviour::ServerError([500, 502, 503][i % 3])),
    (5, |_| Behaviour::RedirectLoop),
    (5, |_| Behaviour::Moved),
    (10, |_| Behaviour::Slow),
    (10, |i| Behaviour::Trickle(i % 2 == 0)),
    (5, |i| Behaviour::Huge(i % 2 == 0)),
    (5, |_| Behaviour::NotAFeed),
];
/// Smallest and largest well-behaved feed, in items.
const ITEMS_RANGE: (f64, f64) = (5.0, 500.0);
/// How long a slow server takes to answer.
const SLOW_ANSWER: Duration = Duration::from_secs(10);
/// A trickling body's pace.
const TRICKLE_CHUNK: usize = 100;
const TRICKLE_EVERY: Duration = Duration::from_millis(200);
/// The size of a huge body.
const HUGE_BYTES: usize = 20 * 1024 * 1024;
/// One ETag and date for every good feed: the farm never changes.
const LAST_MODIFIED: &str = "Mon, 02 Jun 2025 10:00:00 GMT";

/// The farm: what each feed does, and the requests it received.
#[derive(Debug)]
pub struct Farm {
    behaviours: Vec<Behaviour>,
    port: u16,
    /// Requests for feeds (redirect hops included).
    pub feed_requests: AtomicU64,
    /// Requests for site pages and icons (favicon lookups).
    pub other_requests: AtomicU64,
    /// Requests for items' article pages (full text).
    pub article_requests: AtomicU64,
}

impl Farm {
    /// A farm of `feeds` feeds served on `port`.
    pub fn new(feeds: usize, port: u16) -> Farm {
        let mut random = XorShift(0x7469_6469_6e67_7321);
        let mut behaviours: Vec<Behaviour> = Vec::with_capacity(feeds);
        for (per_500, make) in MISBEHAVIOUR_PER_500 {
            let count = (per_500 * feeds + 250) / 500;
            for i in 0..count {
                if behaviours.len() < feeds {
                    behaviours.push(make(i));
                }
            }
        }
        let (low, high) = ITEMS_RANGE;
        while behaviours.len() < feeds {
            let items = (low * (high / low).powf(random.unit())).round() as usize;
            behaviours.push(Behaviour::WellBehaved(items.clamp(5, 500)));
        }
        // Fisher-Yates with a fixed seed: misbehaving feeds spread over the ids.
        for i in (1..behaviours.len()).rev() {
            let j = (random.next() % (i as u64 + 1)) as usize;
            behaviours.swap(i, j);
        }
        Farm {
            behaviours,
            port,
            feed_requests: AtomicU64::new(0),
            other_requests: AtomicU64::new(0),
            article_requests: AtomicU64::new(0),
        }
    }

    /// What each feed does, by id.
    pub fn behaviours(&self) -> &[Behaviour] {
        &self.behaviours
    }

    /// The URL of feed `id`.
    pub fn feed_url(&self, id: usize) -> String {
        format!("http://127.0.0.1:{}/m/{id}", self.port)
    }

    /// The farm's routes.
    pub fn router(self: Arc<Farm>) -> axum::Router {
        axum::Router::new()
            .route("/m/{id}", axum::routing::get(serve_mixed))
            .route("/m/{id}/moved", axum::routing::get(serve_moved))
            .route("/loop/{id}", axum::routing::get(serve_loop))
            .route("/site/{id}", axum::routing::get(serve_site))
            .route("/site/{id}/{*article}", axum::routing::get(serve_article))
            .route("/", axum::routing::get(serve_site_root))
            .route("/icon.png", axum::routing::get(serve_icon))
            .route("/favicon.ico", axum::routing::get(serve_icon))
            .with_state(self)
    }
}

/// A small deterministic generator (xorshift64*), so the farm is the same on every run (and
/// `tidings-bench soak --seed` repeats its choices). The seed must not be 0.
pub struct XorShift(pub u64);

impl XorShift {
    /// The next number.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

async fn serve_mixed(
    State(farm): State<Arc<Farm>>,
    Path(id): Path<usize>,
    headers: HeaderMap,
) -> Response {
    farm.feed_requests.fetch_add(1, Ordering::Relaxed);
    let Some(&behaviour) = farm.behaviours.get(id) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    match behaviour {
        Behaviour::WellBehaved(items) => good_feed(&farm, id, items, &headers),
        Behaviour::Moved => (
            StatusCode::MOVED_PERMANENTLY,
            [(header::LOCATION, format!("/m/{id}/moved"))],
        )
            .into_response(),
        Behaviour::NotFound => StatusCode::NOT_FOUND.into_response(),
        Behaviour::Gone => StatusCode::GONE.into_response(),
        Behaviour::TooManyRequests => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "3600")],
        )
            .into_response(),
        Behaviour::ServerError(status) => StatusCode::from_u16(status)
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            .into_response(),
        Behaviour::RedirectLoop => (
            StatusCode::FOUND,
            [(header::LOCATION, format!("/loop/{id}"))],
        )
            .into_response(),
        Behaviour::Slow => {
            tokio::time::sleep(SLOW_ANSWER).await;
            good_feed(&farm, id, 20, &headers)
        }
        Behaviour::Trickle(completes) => {
            let items = if completes { 5 } else { 25 };
            let document =
                crate::documents::rss_document(id, &site_url(farm.port, id), items, "mix");
            let chunks: Vec<Bytes> = document
                .into_bytes()
                .chunks(TRICKLE_CHUNK)
                .map(Bytes::copy_from_slice)
                .collect();
            let stream = futures_util::stream::unfold(chunks.into_iter(), |mut chunks| async {
                tokio::time::sleep(TRICKLE_EVERY).await;
                let chunk = chunks.next()?;
                Some((Ok::<_, std::io::Error>(chunk), chunks))
            });
            (
                [(header::CONTENT_TYPE, "application/rss+xml")],
                Body::from_stream(stream),
            )
                .into_response()
        }
        Behaviour::Huge(announced) => {
            const CHUNK: usize = 64 * 1024;
            let filler = Bytes::from(vec![b' '; CHUNK]);
            let stream = futures_util::stream::unfold(0usize, move |sent| {
                let filler = filler.clone();
                async move {
                    (sent < HUGE_BYTES).then(|| (Ok::<_, std::io::Error>(filler), sent + CHUNK))
                }
            });
            let mut response = (
                [(header::CONTENT_TYPE, "application/rss+xml")],
                Body::from_stream(stream),
            )
                .into_response();
            if announced && let Ok(length) = HUGE_BYTES.to_string().parse() {
                response
                    .headers_mut()
                    .insert(header::CONTENT_LENGTH, length);
            }
            response
        }
        Behaviour::NotAFeed => (
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            format!(
                "<!doctype html><html><head><title>Page {id}</title></head>\
                 <body><p>A page, not a feed.</p></body></html>"
            ),
        )
            .into_response(),
    }
}

async fn serve_moved(
    State(farm): State<Arc<Farm>>,
    Path(id): Path<usize>,
    headers: HeaderMap,
) -> Response {
    farm.feed_requests.fetch_add(1, Ordering::Relaxed);
    good_feed(&farm, id, 20, &headers)
}

async fn serve_loop(State(farm): State<Arc<Farm>>, Path(id): Path<usize>) -> Response {
    farm.feed_requests.fetch_add(1, Ordering::Relaxed);
    (StatusCode::FOUND, [(header::LOCATION, format!("/m/{id}"))]).into_response()
}

async fn serve_site(State(farm): State<Arc<Farm>>, Path(id): Path<usize>) -> Response {
    farm.other_requests.fetch_add(1, Ordering::Relaxed);
    site_page(id)
}

async fn serve_article(
    State(farm): State<Arc<Farm>>,
    Path((id, article)): Path<(usize, String)>,
) -> Response {
    farm.article_requests.fetch_add(1, Ordering::Relaxed);
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        article_page(id, &article),
    )
        .into_response()
}

/// An item's article page: a site's menu, sidebar and footer around an article of about
/// 3,000 characters (longer than every item's teaser in the farm's feeds).
fn article_page(id: usize, article: &str) -> String {
    let paragraph = format!(
        "<p>This is the article {article} of site {id}. A reader that keeps feeds for many \
         people fetches each feed once however many follow it, and it fetches an article's \
         page only when someone will read it, since a page costs its site a request and the \
         reader's server the time to find the article in it.</p>"
    );
    format!(
        "<!doctype html><html><head><title>Article {article} of site {id}</title></head><body>\
         <nav><ul><li><a href=\"/\">Home</a></li><li><a href=\"/world\">World</a></li>\
         <li><a href=\"/sport\">Sport</a></li></ul></nav>\
         <main><article><h1>Article {article}</h1>{}</article></main>\
         <aside><h2>Most read</h2><ul><li><a href=\"/a\">Another story</a></li>\
         <li><a href=\"/b\">A third story</a></li></ul></aside>\
         <footer><p>Site {id}. All rights reserved.</p></footer></body></html>",
        paragraph.repeat(10)
    )
}

async fn serve_site_root(State(farm): State<Arc<Farm>>) -> Response {
    farm.other_requests.fetch_add(1, Ordering::Relaxed);
    site_page(0)
}

fn site_page(id: usize) -> Response {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        format!(
            "<!doctype html><html><head><title>Site {id}</title>\
             <link rel=\"icon\" href=\"/icon.png\"></head><body>Site {id}</body></html>"
        ),
    )
        .into_response()
}

async fn serve_icon(State(farm): State<Arc<Farm>>) -> Response {
    farm.other_requests.fetch_add(1, Ordering::Relaxed);
    crate::documents::icon_response()
}

fn site_url(port: u16, id: usize) -> String {
    format!("http://127.0.0.1:{port}/site/{id}")
}

/// A well-behaved feed: its format by id, an ETag and a date, 304 for a client that has it.
fn good_feed(farm: &Farm, id: usize, items: usize, headers: &HeaderMap) -> Response {
    let etag = format!("\"mix-{id}-{items}\"");
    if headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|value| value.as_bytes() == etag.as_bytes())
    {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
    }
    let (content_type, body) =
        crate::documents::feed_document(id, &site_url(farm.port, id), items, "mix");
    (
        [
            (header::CONTENT_TYPE, content_type.to_owned()),
            (header::ETAG, etag),
            (header::LAST_MODIFIED, LAST_MODIFIED.to_owned()),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_farm_of_500_has_413_well_behaved_feeds_and_the_same_order_every_time() {
        let farm = Farm::new(500, 1);
        let good = farm
            .behaviours()
            .iter()
            .filter(|b| matches!(b, Behaviour::WellBehaved(_)))
            .count();
        assert_eq!(good, 413);
        assert_eq!(farm.behaviours(), Farm::new(500, 1).behaviours());
        let sizes: Vec<usize> = farm
            .behaviours()
            .iter()
            .filter_map(|b| match b {
                Behaviour::WellBehaved(items) => Some(*items),
                _ => None,
            })
            .collect();
        assert!(sizes.iter().all(|items| (5..=500).contains(items)));
        assert!(sizes.iter().any(|items| *items < 10) && sizes.iter().any(|items| *items > 300));
        // Spread, not bunched at the start: the first 100 ids hold some misbehaving feeds.
        assert!(farm.behaviours()[..100].contains(&Behaviour::NotFound));
    }

    #[test]
    fn a_small_farm_still_has_every_feed() {
        assert_eq!(Farm::new(3, 1).behaviours().len(), 3);
        assert_eq!(Farm::new(0, 1).behaviours().len(), 0);
    }
}
