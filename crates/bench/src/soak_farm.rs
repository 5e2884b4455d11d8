//! The feed server of `tidings-bench soak`: N feeds on 127.0.0.1 that each publish a new item
//! every few minutes, and its own record of what it published and served, against which the
//! soak checks that no item was lost or stored twice.
//!
//! Feed `i` has published `INITIAL_ITEMS + ⌊(t + phase_i) / period⌋` items at `t` seconds into
//! the run (the phases spread the changes evenly over the period, so the workers see a steady
//! stream rather than all feeds changing at once). It shows its newest [`WINDOW`] items with
//! an ETag, answering 304 when nothing changed. [`Farm::freeze`] stops publishing at the end,
//! so that what was published is fixed before the check.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Items every feed has published when the run starts.
pub const INITIAL_ITEMS: u64 = 3;
/// Items a feed document shows, newest first: an item leaves the document only after this
/// many changes, far longer than a fetch takes to come round.
pub const WINDOW: u64 = 20;

/// The feeds and their record.
pub struct Farm {
    feeds: usize,
    period_ms: u64,
    started: Instant,
    /// Milliseconds into the run at which publishing stopped; `u64::MAX` while it goes on.
    frozen_at_ms: AtomicU64,
    /// Per feed, the most items a document served with 200 held: what readers could have seen.
    served: Vec<AtomicU64>,
    /// Per feed, items that left the window before any 200 served them (published, never seen).
    unseen: Vec<AtomicU64>,
    /// Answers given: 200 and 304.
    pub answered_200: AtomicU64,
    /// See [`Farm::answered_200`].
    pub answered_304: AtomicU64,
    /// The base URL, `http://127.0.0.1:PORT`.
    base: String,
}

impl Farm {
    /// A farm of `feeds` feeds that change every `period_ms` milliseconds, served at `base`.
    pub fn new(feeds: usize, period_ms: u64, base: String) -> Farm {
        Farm {
            feeds,
            period_ms: period_ms.max(1000),
            started: Instant::now(),
            frozen_at_ms: AtomicU64::new(u64::MAX),
            served: (0..feeds).map(|_| AtomicU64::new(0)).collect(),
            unseen: (0..feeds).map(|_| AtomicU64::new(0)).collect(),
            answered_200: AtomicU64::new(0),
            answered_304: AtomicU64::new(0),
            base,
        }
    }

    /// The number of feeds.
    pub fn len(&self) -> usize {
        self.feeds
    }

    /// The URL of feed `i`.
    pub fn url(&self, i: usize) -> String {
        format!("{}/f/{i}", self.base)
    }

    /// The feed index of a URL of this farm.
    pub fn index_of(&self, url: &str) -> Option<usize> {
        url.strip_prefix(&self.base)?
            .strip_prefix("/f/")?
            .parse()
            .ok()
            .filter(|i| *i < self.feeds)
    }

    /// The GUID of item `k` of feed `i`.
    pub fn guid(i: usize, k: u64) -> String {
        format!("soak-{i}-{k}")
    }

    /// Milliseconds into the run, stopped at the freeze.
    fn now_ms(&self) -> u64 {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        now.min(self.frozen_at_ms.load(Ordering::SeqCst))
    }

    fn phase_ms(&self, i: usize) -> u64 {
        (i as u64).saturating_mul(self.period_ms) / self.feeds.max(1) as u64
    }

    /// Items feed `i` has published by now.
    pub fn published(&self, i: usize) -> u64 {
        INITIAL_ITEMS + (self.now_ms() + self.phase_ms(i)) / self.period_ms
    }

    /// The most items a 200 answer of feed `i` showed.
    pub fn served(&self, i: usize) -> u64 {
        self.served[i].load(Ordering::SeqCst)
    }

    /// Items published by all feeds.
    pub fn published_total(&self) -> u64 {
        (0..self.feeds).map(|i| self.published(i)).sum()
    }

    /// Items that left a feed's window before any answer showed them.
    pub fn unseen_total(&self) -> u64 {
        self.unseen.iter().map(|n| n.load(Ordering::SeqCst)).sum()
    }

    /// Stops publishing: from now on every feed shows the same items.
    pub fn freeze(&self) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.frozen_at_ms.fetch_min(now, Ordering::SeqCst);
    }

    /// The Unix time item `k` of feed `i` was published (seconds), for its pubDate.
    fn published_at(&self, i: usize, k: u64, run_start_unix: i64) -> i64 {
        let offset_ms =
            (k as i64 - INITIAL_ITEMS as i64) * self.period_ms as i64 - self.phase_ms(i) as i64;
        run_start_unix + offset_ms.div_euclid(1000)
    }

    /// Feed `i`'s document now: its ETag and RSS body, after recording what it shows.
    fn document(&self, i: usize, run_start_unix: i64) -> (String, String) {
        let count = self.published(i);
        let low = count.saturating_sub(WINDOW);
        let before = self.served[i].fetch_max(count, Ordering::SeqCst);
        if low > before {
            self.unseen[i].fetch_add(low - before, Ordering::SeqCst);
        }
        let items: String = (low..count)
            .rev()
            .map(|k| {
                let date =
                    chrono::DateTime::from_timestamp(self.published_at(i, k, run_start_unix), 0)
                        .unwrap_or_default()
                        .to_rfc2822();
                format!(
                    "<item><title>Feed {i}, item {k}</title>\
                     <link>{base}/a/{i}/{k}</link>\
                     <guid isPermaLink=\"false\">{guid}</guid><pubDate>{date}</pubDate>\
                     <description>&lt;p&gt;Item {k} of feed {i}, published by the soak's \
                     feed server.&lt;/p&gt;</description></item>",
                    base = self.base,
                    guid = Farm::guid(i, k),
                )
            })
            .collect();
        let body = format!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<rss version=\"2.0\"><channel>\
             <title>Soak feed {i}</title><link>{base}/</link>\
             <description>A feed that changes every few minutes</description>{items}\
             </channel></rss>",
            base = self.base
        );
        (format!("\"{i}-{count}\""), body)
    }

    /// The farm's routes: `/f/{i}` and a favicon.
    pub fn router(self: &Arc<Self>) -> axum::Router {
        let run_start_unix = tidings_store::unix_now();
        axum::Router::new()
            .route("/f/{id}", axum::routing::get(serve_feed))
            .route(
                "/favicon.ico",
                axum::routing::get(|| async { crate::documents::icon_response() }),
            )
            .with_state((Arc::clone(self), run_start_unix))
    }
}

async fn serve_feed(
    State((farm, run_start_unix)): State<(Arc<Farm>, i64)>,
    Path(id): Path<usize>,
    headers: HeaderMap,
) -> Response {
    if id >= farm.feeds {
        return StatusCode::NOT_FOUND.into_response();
    }
    let etag = format!("\"{id}-{}\"", farm.published(id));
    let unchanged = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim() == etag);
    // A 304 shows nothing new: the client already has this document's items.
    if unchanged {
        farm.answered_304.fetch_add(1, Ordering::Relaxed);
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
    }
    let (etag, body) = farm.document(id, run_start_unix);
    farm.answered_200.fetch_add(1, Ordering::Relaxed);
    (
        [
            (
                header::CONTENT_TYPE,
                "application/rss+xml; charset=utf-8".to_owned(),
            ),
            (header::ETAG, etag),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feeds_publish_on_their_phase_and_stop_at_the_freeze() {
        let farm = Farm::new(4, 60_000, "http://127.0.0.1:1".into());
        // At the start, every feed has its initial items; the phases are spread over the period.
        assert_eq!(farm.published(0), INITIAL_ITEMS);
        assert_eq!(farm.phase_ms(2), 30_000);
        assert_eq!(farm.published_total(), 4 * INITIAL_ITEMS);
        farm.freeze();
        let frozen = farm.published_total();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(farm.published_total(), frozen);
        assert_eq!(farm.index_of("http://127.0.0.1:1/f/3"), Some(3));
        assert_eq!(farm.index_of("http://127.0.0.1:1/f/4"), None);
        assert_eq!(farm.index_of("http://elsewhere/f/1"), None);
    }

    #[test]
    fn a_document_shows_the_window_and_is_recorded() {
        let farm = Farm::new(1, 1000, "http://127.0.0.1:1".into());
        assert_eq!(farm.served(0), 0);
        let (etag, body) = farm.document(0, 1_700_000_000);
        assert_eq!(etag, format!("\"0-{INITIAL_ITEMS}\""));
        for k in 0..INITIAL_ITEMS {
            assert!(body.contains(&format!(">{}<", Farm::guid(0, k))), "{body}");
        }
        assert_eq!(farm.served(0), INITIAL_ITEMS);
        assert_eq!(farm.unseen_total(), 0);
        // Newest first, dated a period apart.
        let first = body.find("soak-0-2").unwrap();
        let last = body.find("soak-0-0").unwrap();
        assert!(first < last);
    }
}
