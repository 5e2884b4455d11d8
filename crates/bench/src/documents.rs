//! The documents the bench farms serve: feeds in RSS 2.0, Atom and JSON Feed whose items are
//! dated in whole days (so every request of a run gets the same document), and a favicon.

use axum::http::header;
use axum::response::{IntoResponse, Response};

/// A tiny PNG: the smallest valid PNG header is enough for the favicon's type check.
pub fn icon_response() -> Response {
    (
        [(header::CONTENT_TYPE, "image/png")],
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89".to_vec(),
    )
        .into_response()
}

/// Feed `id` of a bench farm with `items` items, in RSS 2.0, Atom or JSON Feed by id, with its
/// content type. `tag` goes into the ids, so that farms differ.
pub fn feed_document(id: usize, site: &str, items: usize, tag: &str) -> (&'static str, String) {
    match id % 3 {
        0 => ("application/rss+xml", rss_document(id, site, items, tag)),
        1 => ("application/atom+xml", atom(id, site, items, tag)),
        _ => ("application/feed+json", json(id, site, items, tag)),
    }
}

fn paragraph(id: usize, item: usize) -> String {
    format!(
        "<p>Item {item} of feed {id}: <b>tidings</b> fetches feeds once however many users \
         follow them, as rarely as their servers allow. <a href=\"/post/{item}\">More</a> and an \
         <img src=\"https://img.example/{id}/{item}.png\" alt=\"picture\"> with some text to make \
         the body a realistic length for a blog post summary.</p>"
    )
}

/// Feed `id` as RSS 2.0 with `items` items.
pub fn rss_document(id: usize, site: &str, items: usize, tag: &str) -> String {
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><rss version=\"2.0\"><channel>\
         <title>Bench feed {id}</title><link>{site}</link><description>RSS {id}</description>"
    );
    for item in 0..items {
        out.push_str(&format!(
            "<item><title>Post {item} of {id}</title><link>{site}/{tag}/post/{id}/{item}</link>\
             <guid>{site}/{tag}/post/{id}/{item}</guid><pubDate>{}</pubDate>\
             <description><![CDATA[{}]]></description></item>",
            published(item).to_rfc2822(),
            paragraph(id, item)
        ));
    }
    out.push_str("</channel></rss>");
    out
}

fn atom(id: usize, site: &str, items: usize, tag: &str) -> String {
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><feed xmlns=\"http://www.w3.org/2005/Atom\">\
         <title>Bench feed {id}</title><link href=\"{site}\"/><id>urn:{tag}:{id}</id>\
         <updated>2025-06-01T10:00:00Z</updated>"
    );
    for item in 0..items {
        out.push_str(&format!(
            "<entry><title>Entry {item} of {id}</title><link href=\"{site}/{tag}/entry/{id}/{item}\"/>\
             <id>urn:{tag}:{id}:{item}</id><updated>{}</updated>\
             <content type=\"html\">{}</content></entry>",
            published(item).to_rfc3339(),
            quick_escape(&paragraph(id, item))
        ));
    }
    out.push_str("</feed>");
    out
}

fn json(id: usize, site: &str, items: usize, tag: &str) -> String {
    let items: Vec<serde_json::Value> = (0..items)
        .map(|item| {
            serde_json::json!({
                "id": format!("{site}/{tag}/note/{id}/{item}"),
                "url": format!("{site}/{tag}/note/{id}/{item}"),
                "title": format!("Note {item} of {id}"),
                "content_html": paragraph(id, item),
                "date_published": published(item).to_rfc3339(),
            })
        })
        .collect();
    serde_json::json!({
        "version": "https://jsonfeed.org/version/1.1",
        "title": format!("Bench feed {id}"),
        "home_page_url": site,
        "items": items,
    })
    .to_string()
}

/// An item's date: recent, in whole days so that every
/// request of a run serves the same document.
fn published(item: usize) -> chrono::DateTime<chrono::Utc> {
    let today = chrono::Utc::now().date_naive();
    (today - chrono::Days::new(item as u64 + 1))
        .and_hms_opt(10, 0, 0)
        .unwrap_or_default()
        .and_utc()
}

fn quick_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
