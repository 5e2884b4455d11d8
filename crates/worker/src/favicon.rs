//! Favicons (F3): the feed's own icon or logo, else the icon its site's page links to, else
//! `/favicon.ico`; images only, at most 256 KB, always through the guarded client. Looked up
//! in the background once per site ([`FaviconQueue`]), never in a feed's own round, and shared
//! with the site's other feeds and other processes through the store.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use tidings_fetch::{FetchRequest, GuardedClient, HostLimiter};
use tidings_store::Favicon;
use url::Url;

/// The largest favicon kept.
pub const MAX_FAVICON_BYTES: usize = 256 * 1024;
/// The most of a site's page read to find its icon links (they are in the `<head>`).
const MAX_PAGE_BYTES: usize = 1024 * 1024;
const IMAGE_ACCEPT: &str =
    "image/avif, image/webp, image/png, image/svg+xml, image/*;q=0.8, */*;q=0.5";
const PAGE_ACCEPT: &str = "text/html, application/xhtml+xml;q=0.9, */*;q=0.5";

/// An icon found and fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundIcon {
    /// Its `image/…` type.
    pub mime_type: String,
    /// The bytes.
    pub data: Vec<u8>,
    /// Where it was fetched from.
    pub source_url: String,
}

/// Looks for the feed's favicon in the order of F3 and returns the first image that loads.
/// `None` when nothing usable was found (the UI then shows none). `page_icons` are the icon
/// links of the site's page when the caller has just read that page (a scraped source is
/// one): they are used instead of fetching the page again.
pub async fn find_favicon(
    client: &GuardedClient,
    limiter: &HostLimiter,
    feed_icon: Option<&str>,
    site_url: Option<&str>,
    feed_url: &Url,
    page_icons: Option<&[Url]>,
) -> Option<FoundIcon> {
    if let Some(icon) = feed_icon.and_then(|icon| feed_url.join(icon).ok())
        && let Some(found) = fetch_image(client, limiter, &icon).await
    {
        return Some(found);
    }
    let site = site_url
        .and_then(|site| feed_url.join(site).ok())
        .filter(|site| matches!(site.scheme(), "http" | "https"))
        .unwrap_or_else(|| origin(feed_url));
    let icons = match page_icons {
        Some(icons) => icons.to_vec(),
        None => fetch_page(client, limiter, &site)
            .await
            .map(|(html, url)| icon_links(&html, &url))
            .unwrap_or_default(),
    };
    for icon in icons {
        if let Some(found) = fetch_image(client, limiter, &icon).await {
            return Some(found);
        }
    }
    let fallback = origin(&site).join("/favicon.ico").ok()?;
    fetch_image(client, limiter, &fallback).await
}

fn origin(url: &Url) -> Url {
    let mut origin = url.clone();
    origin.set_path("/");
    origin.set_query(None);
    origin.set_fragment(None);
    origin
}

async fn fetch_page(
    client: &GuardedClient,
    limiter: &HostLimiter,
    url: &Url,
) -> Option<(String, Url)> {
    let request = FetchRequest::new(url.clone())
        .with_accept(PAGE_ACCEPT)
        .with_max_body_bytes(MAX_PAGE_BYTES);
    let response = limiter
        .run(url.host_str().unwrap_or_default(), client.fetch(&request))
        .await
        .ok()?;
    if !response.is_success() {
        return None;
    }
    let text =
        tidings_feed::encoding::decode_document(&response.body, response.charset.as_deref()).text;
    Some((text.into_owned(), response.url))
}

async fn fetch_image(
    client: &GuardedClient,
    limiter: &HostLimiter,
    url: &Url,
) -> Option<FoundIcon> {
    let request = FetchRequest::new(url.clone())
        .with_accept(IMAGE_ACCEPT)
        .with_max_body_bytes(MAX_FAVICON_BYTES);
    let response = limiter
        .run(url.host_str().unwrap_or_default(), client.fetch(&request))
        .await;
    let response = match response {
        Ok(response) if response.is_success() && !response.body.is_empty() => response,
        Ok(response) => {
            tracing::debug!(url = %tidings_fetch::redact_url(url.as_str()), status = response.status, "no favicon here");
            return None;
        }
        Err(error) => {
            tracing::debug!(url = %tidings_fetch::redact_url(url.as_str()), %error, "favicon fetch failed");
            return None;
        }
    };
    let mime_type = image_type(response.content_type.as_deref(), &response.body)?;
    Some(FoundIcon {
        mime_type,
        data: response.body.to_vec(),
        source_url: response.url.to_string(),
    })
}

/// The image type of a response: its `Content-Type` when that is `image/…`, else (missing or
/// generic types, which icon servers often send) what the bytes say. Anything else is not an
/// image and is refused.
pub fn image_type(content_type: Option<&str>, body: &[u8]) -> Option<String> {
    match content_type {
        Some(kind) if kind.starts_with("image/") => Some(kind.to_owned()),
        None | Some("application/octet-stream" | "binary/octet-stream" | "text/plain") => {
            sniff_image(body).map(str::to_owned)
        }
        Some(_) => None,
    }
}

fn sniff_image(body: &[u8]) -> Option<&'static str> {
    let starts = |magic: &[u8]| body.starts_with(magic);
    if starts(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        Some("image/gif")
    } else if starts(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if starts(b"\x00\x00\x01\x00") {
        Some("image/x-icon")
    } else if body.len() >= 12 && starts(b"RIFF") && &body[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
        head.contains("<svg").then_some("image/svg+xml")
    }
}

/// The icon URLs a page's `<link>` elements name, best first: `rel="icon"` (and the old
/// `shortcut icon`), then `apple-touch-icon`. Relative URLs are resolved against the page's
/// `<base href>` or URL; only http(s) URLs are returned.
pub fn icon_links(html: &str, page_url: &Url) -> Vec<Url> {
    let lower = html.to_ascii_lowercase();
    // The head is where links live; a page's body can be large and is not looked at.
    let end = ["</head", "<body"]
        .iter()
        .filter_map(|marker| lower.find(marker))
        .min()
        .unwrap_or(lower.len());
    let mut base = page_url.clone();
    let mut icons: Vec<(u8, usize, Url)> = Vec::new();
    let mut position = 0;
    while let Some(offset) = lower[position..end].find('<') {
        let start = position + offset + 1;
        let name_end = lower[start..end]
            .find(|c: char| c.is_ascii_whitespace() || c == '>' || c == '/')
            .map_or(end, |i| start + i);
        let tag = &lower[start..name_end];
        let close = lower[name_end..end].find('>').map_or(end, |i| name_end + i);
        position = close.min(end);
        if tag != "link" && tag != "base" {
            if position <= start {
                position = start;
            }
            continue;
        }
        let attributes = parse_attributes(&html[name_end..close]);
        let get = |name: &str| {
            attributes
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.as_str())
        };
        let Some(href) = get("href").map(str::trim).filter(|h| !h.is_empty()) else {
            continue;
        };
        if tag == "base" {
            if let Ok(url) = page_url.join(href) {
                base = url;
            }
            continue;
        }
        let rel = get("rel").unwrap_or("").to_ascii_lowercase();
        let tokens: Vec<&str> = rel.split_ascii_whitespace().collect();
        let rank = if tokens.contains(&"icon") {
            0
        } else if tokens.contains(&"apple-touch-icon")
            || tokens.contains(&"apple-touch-icon-precomposed")
        {
            1
        } else {
            continue;
        };
        if let Ok(url) = base.join(href)
            && matches!(url.scheme(), "http" | "https")
            && !icons.iter().any(|(_, _, seen)| *seen == url)
        {
            let index = icons.len();
            icons.push((rank, index, url));
        }
    }
    icons.sort_by_key(|(rank, index, _)| (*rank, *index));
    icons.into_iter().map(|(_, _, url)| url).collect()
}

/// `name="value"`, `name='value'`, `name=value` and bare `name` attributes of one tag, names
/// lower-cased, the common character references in values undone.
fn parse_attributes(text: &str) -> Vec<(String, String)> {
    let mut attributes = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        while i < chars.len() && (chars[i].is_whitespace() || chars[i] == '/') {
            i += 1;
        }
        let name_start = i;
        while i < chars.len() && !chars[i].is_whitespace() && !matches!(chars[i], '=' | '/' | '>') {
            i += 1;
        }
        let name: String = chars[name_start..i]
            .iter()
            .collect::<String>()
            .to_ascii_lowercase();
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        let mut value = String::new();
        if i < chars.len() && chars[i] == '=' {
            i += 1;
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            if i < chars.len() && (chars[i] == '"' || chars[i] == '\'') {
                let quote = chars[i];
                i += 1;
                let value_start = i;
                while i < chars.len() && chars[i] != quote {
                    i += 1;
                }
                value = chars[value_start..i].iter().collect();
                i += 1;
            } else {
                let value_start = i;
                while i < chars.len() && !chars[i].is_whitespace() && chars[i] != '>' {
                    i += 1;
                }
                value = chars[value_start..i].iter().collect();
            }
        }
        if name.is_empty() {
            i += 1;
            continue;
        }
        let value = value
            .replace("&amp;", "&")
            .replace("&quot;", "\"")
            .replace("&#39;", "'");
        attributes.push((name, value));
    }
    attributes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn icon_links_are_found_ranked_and_resolved() {
        let html = r#"<!doctype html><html><head>
            <link rel="apple-touch-icon" href="/touch.png">
            <LINK REL='Shortcut Icon' HREF='/old.ico'>
            <link rel=stylesheet href=/style.css>
            <link href="icons/a.png?x=1&amp;y=2" rel="icon" sizes="32x32">
            <link rel="icon" href="javascript:alert(1)">
            </head><body><link rel="icon" href="/in-body.png"></body></html>"#;
        let icons = icon_links(html, &url("https://example.com/blog/"));
        assert_eq!(
            icons,
            vec![
                url("https://example.com/old.ico"),
                url("https://example.com/blog/icons/a.png?x=1&y=2"),
                url("https://example.com/touch.png"),
            ]
        );
    }

    #[test]
    fn a_base_element_changes_resolution() {
        let html = r#"<head><base href="https://cdn.example.net/assets/"><link rel="icon" href="i.png"></head>"#;
        assert_eq!(
            icon_links(html, &url("https://example.com/")),
            vec![url("https://cdn.example.net/assets/i.png")]
        );
    }

    #[test]
    fn broken_markup_does_not_panic() {
        for html in [
            "<",
            "<link",
            "<link rel=\"icon\" href=\"",
            "<<<>>>",
            "<link rel=icon href=/a.png",
        ] {
            let _ = icon_links(html, &url("https://example.com/"));
        }
    }

    #[test]
    fn only_images_are_accepted() {
        assert_eq!(
            image_type(Some("image/png"), b"x").as_deref(),
            Some("image/png")
        );
        assert_eq!(image_type(Some("text/html"), b"\x89PNG\r\n\x1a\n"), None);
        assert_eq!(
            image_type(None, b"\x00\x00\x01\x00rest").as_deref(),
            Some("image/x-icon")
        );
        assert_eq!(
            image_type(Some("application/octet-stream"), b"GIF89a..").as_deref(),
            Some("image/gif")
        );
        assert_eq!(image_type(None, b"<html>"), None);
    }
}

/// Sites looked up at once by one fetcher's favicon queue.
const SITES_AT_ONCE: usize = 4;
/// Most sites queued or being looked up; past this a feed's favicon waits for its next fetch.
const MAX_QUEUED_SITES: usize = 4096;
/// How long a site's lookup is reused for its other feeds without asking the store again.
const REUSE_FOR: Duration = Duration::from_secs(3600);
/// Most icon bytes kept for reuse; the table is emptied when it would grow past this.
const MAX_REUSE_BYTES: usize = 2 * 1024 * 1024;

/// What to look for: one lookup serves every feed with the same [`IconLookup::key`].
#[derive(Debug, Clone)]
pub struct IconLookup {
    /// The icon the feed names, if any.
    pub feed_icon: Option<String>,
    /// The feed's site.
    pub site_url: Option<String>,
    /// The feed's URL (after redirects).
    pub feed_url: Url,
    /// The icons the site's page links to, when that page was just read (a scraped source's
    /// page is its site): the lookup then does not fetch it again.
    pub page_icons: Option<Vec<Url>>,
}

impl IconLookup {
    /// The icon the feed names when it names one, else its site's origin: feeds with the same
    /// key get the same favicon.
    pub fn key(&self) -> String {
        if let Some(icon) = self
            .feed_icon
            .as_deref()
            .and_then(|icon| self.feed_url.join(icon).ok())
        {
            return format!("icon {icon}");
        }
        let site = self
            .site_url
            .as_deref()
            .and_then(|site| self.feed_url.join(site).ok())
            .filter(|site| matches!(site.scheme(), "http" | "https"))
            .unwrap_or_else(|| self.feed_url.clone());
        format!("site {}", site.origin().ascii_serialization())
    }
}

/// The record of a lookup's result (an icon, or none found) made at `fetched_at`.
pub fn favicon_record(found: Option<FoundIcon>, fetched_at: i64) -> Favicon {
    match found {
        Some(icon) => Favicon {
            mime_type: Some(icon.mime_type),
            data: Some(icon.data),
            source_url: Some(icon.source_url),
            fetched_at,
        },
        None => Favicon {
            mime_type: None,
            data: None,
            source_url: None,
            fetched_at,
        },
    }
}

/// What [`FaviconQueue::add`] decided.
#[derive(Debug)]
pub enum Queued {
    /// The site was looked up a moment ago: store this for the feed now, no request needed.
    Known(Favicon),
    /// The feed waits for its site's lookup (queued or running).
    Waiting,
    /// The queue is full; the feed's favicon stays stale until its next fetch.
    Full,
}

/// Favicons looked up in the background, once per site: a first fetch costs the feed's own
/// request only, and the feeds of one site share one lookup. Feeds found by a lookup that just
/// finished reuse its result for [`REUSE_FOR`]. The lookup itself is the caller's
/// ([`FaviconQueue::drain`]); the fetcher's shares each site's result with other processes
/// through the store.
#[derive(Debug)]
pub struct FaviconQueue {
    state: std::sync::Mutex<QueueState>,
    idle: tokio::sync::watch::Sender<bool>,
}

#[derive(Debug, Default)]
struct QueueState {
    /// Lookups queued or running, with the feeds waiting for each.
    sites: HashMap<String, (IconLookup, Vec<i64>)>,
    /// Keys not started yet, oldest first.
    waiting: VecDeque<String>,
    /// Results of recent lookups, and when this process learnt them.
    recent: HashMap<String, (Favicon, Instant)>,
    recent_bytes: usize,
    running: bool,
}

impl Default for FaviconQueue {
    fn default() -> FaviconQueue {
        FaviconQueue {
            state: std::sync::Mutex::default(),
            idle: tokio::sync::watch::Sender::new(true),
        }
    }
}

impl FaviconQueue {
    /// Queues `feed_id`'s favicon. Returns whether the caller should start the drain
    /// ([`FaviconQueue::drain`]) beside what it decided for the feed.
    pub fn add(&self, feed_id: i64, lookup: IconLookup) -> (Queued, bool) {
        let key = lookup.key();
        let mut state = self.lock();
        if let Some((icon, at)) = state.recent.get(&key)
            && at.elapsed() < REUSE_FOR
        {
            return (Queued::Known(icon.clone()), false);
        }
        if let Some((_, feeds)) = state.sites.get_mut(&key) {
            if !feeds.contains(&feed_id) {
                feeds.push(feed_id);
            }
            return (Queued::Waiting, false);
        }
        if state.sites.len() >= MAX_QUEUED_SITES {
            return (Queued::Full, false);
        }
        state.sites.insert(key.clone(), (lookup, vec![feed_id]));
        state.waiting.push_back(key);
        let start = !state.running;
        if start {
            state.running = true;
            self.idle.send_replace(false);
        }
        (Queued::Waiting, start)
    }

    /// Resolves the queued sites, [`SITES_AT_ONCE`] at a time, with `resolve` (given the
    /// site's key and lookup; `None` when nothing could be learnt now), handing each result
    /// and its feeds to `save`, until the queue is empty. Start it when [`FaviconQueue::add`]
    /// says so. Feeds whose site could not be resolved keep their favicon until their next
    /// fetch.
    pub async fn drain<R, RF, S, F>(&self, resolve: R, save: S)
    where
        R: Fn(String, IconLookup) -> RF,
        RF: std::future::Future<Output = Option<Favicon>> + Send + 'static,
        S: Fn(Favicon, Vec<i64>) -> F,
        F: std::future::Future<Output = ()>,
    {
        let mut running = tokio::task::JoinSet::new();
        loop {
            while running.len() < SITES_AT_ONCE {
                let next = {
                    let mut state = self.lock();
                    let key = state.waiting.pop_front();
                    key.and_then(|key| {
                        let lookup = state.sites.get(&key)?.0.clone();
                        Some((key, lookup))
                    })
                };
                let Some((key, lookup)) = next else { break };
                let resolved = resolve(key.clone(), lookup);
                running.spawn(async move { (key, resolved.await) });
            }
            let Some(done) = running.join_next().await else {
                let mut state = self.lock();
                if state.waiting.is_empty() {
                    state.running = false;
                    self.idle.send_replace(true);
                    return;
                }
                continue;
            };
            let Ok((key, found)) = done else { continue };
            let feeds = {
                let mut state = self.lock();
                let feeds = state.sites.remove(&key).map(|(_, feeds)| feeds);
                if let Some(found) = &found {
                    let size = found.data.as_ref().map_or(0, Vec::len);
                    if state.recent_bytes + size > MAX_REUSE_BYTES
                        || state.recent.len() >= MAX_QUEUED_SITES
                    {
                        state.recent.clear();
                        state.recent_bytes = 0;
                    }
                    state.recent_bytes += size;
                    state.recent.insert(key, (found.clone(), Instant::now()));
                }
                feeds.unwrap_or_default()
            };
            if let Some(found) = found {
                save(found, feeds).await;
            }
        }
    }

    /// Waits until no lookup is queued or running.
    pub async fn wait_idle(&self) {
        let mut idle = self.idle.subscribe();
        // An error means the sender is gone, and with it the queue.
        let _ = idle.wait_for(|idle| *idle).await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
