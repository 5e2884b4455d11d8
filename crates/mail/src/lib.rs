//! Newsletters by email (issue 36): a raw RFC 5322 message read into what tidings stores of it.
//!
//! [`read_message`] decodes everything a sender may encode (quoted-printable and base64 bodies,
//! RFC 2047 headers, charsets such as ISO-2022-JP and Shift_JIS) and returns a [`MailMessage`]:
//! the sender's identity (its `List-Id`, else its From address), the subject, date and author,
//! the body as sanitized HTML (the HTML part, else the text part made into HTML), the
//! attachments listed (not kept) and the `List-Unsubscribe` links. Tracking pixels are removed
//! before the HTML goes through the same sanitizer as feed content.
//!
//! Pure: no I/O. Input that is not a message gives a [`MailError`], never a panic.

#![warn(missing_docs)]

mod form;
mod pixels;
mod text_html;

use chrono::{DateTime, Utc};
use mail_parser::{MessageParser, MimeHeaders, PartType};
use tidings_feed::Sanitizer;

pub use form::{FormError, FormField, form_fields};
pub use pixels::remove_tracking_pixels;
use text_html::push_escaped;
pub use text_html::text_to_html;

/// The largest body kept, in bytes of HTML before sanitizing: a newsletter is far smaller, and
/// the bound keeps a huge message from becoming a huge item. A longer body is cut (the
/// sanitizer closes what the cut left open) and says so at its end.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// Why a message could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MailError {
    /// Nothing was sent.
    #[error("the message is empty")]
    Empty,
    /// No header could be read: the input is not an RFC 5322 message.
    #[error("not an email message: no header could be read")]
    NotAMessage,
    /// Neither a `List-Id` nor a From address names the sender, so there is no feed to put the
    /// message in.
    #[error("the message names no sender: it has no From address and no List-Id")]
    NoSender,
}

/// Who sent a message: the feed it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sender {
    /// The sender's identity, lower-cased: the list's id (`news.example.com`) when the message
    /// has a `List-Id`, else the From address. One key is one feed.
    pub key: String,
    /// The From address, lower-cased, when there is one.
    pub address: Option<String>,
    /// The list's id, lower-cased, when the message has a `List-Id`.
    pub list_id: Option<String>,
    /// The name to title the feed with: From's display name, else the list's description,
    /// else the address.
    pub name: String,
}

/// An attachment a message carries: listed with the item, its bytes not kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// Its file name, when the message gives one.
    pub name: Option<String>,
    /// Its MIME type (`application/pdf`).
    pub mime_type: String,
    /// Its size in bytes, decoded.
    pub size: u64,
}

/// A message as tidings stores it: one item of its sender's feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailMessage {
    /// Who sent it.
    pub sender: Sender,
    /// The `Message-ID`, without its angle brackets: the item's guid.
    pub message_id: Option<String>,
    /// The subject, decoded.
    pub subject: Option<String>,
    /// When it was sent (its `Date` header); `None` when missing or unreadable.
    pub date: Option<DateTime<Utc>>,
    /// The author: From's display name, else its address.
    pub author: Option<String>,
    /// The body as sanitized HTML, tracking pixels removed; `None` when the message has no
    /// text at all.
    pub html: Option<String>,
    /// The attachments (inline images included), listed, not kept.
    pub attachments: Vec<Attachment>,
    /// The `List-Unsubscribe` links (`https:` and `mailto:`), in the order given.
    pub unsubscribe: Vec<String>,
}

impl MailMessage {
    /// The item's content: the body, then a footer listing the attachments (not kept) and
    /// offering the `List-Unsubscribe` links, `https:` ones as links (`mailto:` ones as text:
    /// the sanitizer keeps only web links), each in a paragraph marked `data-unsubscribe`
    /// with its URL. `None` when there is nothing to show.
    pub fn item_html(&self) -> Option<String> {
        let mut footer = String::new();
        if !self.attachments.is_empty() {
            footer.push_str("<p>Attachments (not kept):</p><ul>");
            for attachment in &self.attachments {
                footer.push_str("<li>");
                push_escaped(
                    &mut footer,
                    attachment.name.as_deref().unwrap_or("(no name)"),
                );
                footer.push_str(&format!(
                    " ({}, {})</li>",
                    escaped(&attachment.mime_type),
                    size_text(attachment.size)
                ));
            }
            footer.push_str("</ul>");
        }
        for url in &self.unsubscribe {
            // Each link's paragraph says what it is in `data-unsubscribe`, which the UI offers
            // as the item's Unsubscribe action. Only this footer can carry the attribute: the
            // sanitizer drops every `data-` attribute of the sender's own HTML.
            footer.push_str("<p data-unsubscribe=\"");
            push_escaped(&mut footer, url);
            footer.push_str("\">");
            if url.to_ascii_lowercase().starts_with("mailto:") {
                footer.push_str("Unsubscribe by mail: ");
                push_escaped(&mut footer, url.get(7..).unwrap_or_default());
                footer.push_str("</p>");
            } else {
                footer.push_str("<a href=\"");
                push_escaped(&mut footer, url);
                footer.push_str(
                    "\" target=\"_blank\" rel=\"noopener noreferrer\">Unsubscribe</a></p>",
                );
            }
        }
        match (&self.html, footer.is_empty()) {
            (None, true) => None,
            (Some(html), true) => Some(html.clone()),
            (html, false) => Some(format!(
                "{}<hr>{footer}",
                html.as_deref().unwrap_or_default()
            )),
        }
    }
}

/// A size in bytes as people read it: `512 B`, `70 kB`, `2.1 MB`.
fn size_text(bytes: u64) -> String {
    match bytes {
        0..1_000 => format!("{bytes} B"),
        1_000..1_000_000 => format!("{} kB", bytes / 1_000),
        _ => format!("{:.1} MB", bytes as f64 / 1_000_000.0),
    }
}

/// `text` with `&`, `<`, `>` and `"` escaped.
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text);
    out
}

/// The addresses a raw message was delivered to, as its headers tell (`Delivered-To`,
/// `X-Original-To`, `Envelope-To`, then `To` and `Cc`), lower-cased, without repeats: for
/// an HTTP delivery that names no envelope recipient. Empty for what is not a message.
pub fn header_recipients(raw: &[u8]) -> Vec<String> {
    let Some(message) = MessageParser::default().parse(raw) else {
        return Vec::new();
    };
    let mut found: Vec<String> = Vec::new();
    let mut add = |address: &str| {
        let address = address
            .trim()
            .trim_matches(['<', '>'])
            .trim()
            .to_lowercase();
        if address.contains('@') && !found.contains(&address) {
            found.push(address);
        }
    };
    for name in ["Delivered-To", "X-Original-To", "Envelope-To"] {
        for (header, value) in message.headers_raw() {
            if header.eq_ignore_ascii_case(name) {
                value.split(',').for_each(&mut add);
            }
        }
    }
    for list in [message.to(), message.cc()].into_iter().flatten() {
        list.iter().filter_map(|a| a.address()).for_each(&mut add);
    }
    found
}

/// Reads a raw RFC 5322 message. The HTML goes through `sanitizer` (the one feed content goes
/// through), after its tracking pixels are removed.
pub fn read_message(raw: &[u8], sanitizer: &Sanitizer) -> Result<MailMessage, MailError> {
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Err(MailError::Empty);
    }
    let message = MessageParser::default()
        .parse(raw)
        .ok_or(MailError::NotAMessage)?;
    if message.headers().is_empty() {
        return Err(MailError::NotAMessage);
    }
    let sender = sender_of(&message).ok_or(MailError::NoSender)?;
    let from = message.from().and_then(|from| from.first());
    let author = from
        .and_then(|a| a.name())
        .map(clean_line)
        .filter(|name| !name.is_empty())
        .or_else(|| sender.address.clone());
    Ok(MailMessage {
        message_id: message
            .message_id()
            .map(|id| id.trim().trim_matches(['<', '>']).to_owned())
            .filter(|id| !id.is_empty()),
        subject: message.subject().map(clean_line).filter(|s| !s.is_empty()),
        date: message
            .date()
            .and_then(|date| DateTime::from_timestamp(date.to_timestamp(), 0)),
        author,
        html: body_html(&message, sanitizer),
        attachments: attachments_of(&message),
        unsubscribe: message
            .header_raw("List-Unsubscribe")
            .map(bracketed)
            .unwrap_or_default()
            .into_iter()
            .filter(|url| {
                let lower = url.to_ascii_lowercase();
                lower.starts_with("https://")
                    || lower.starts_with("http://")
                    || lower.starts_with("mailto:")
            })
            .collect(),
        sender,
    })
}

/// The sender: the `List-Id` when there is one (a list keeps its id when its From address
/// changes), else the From address (else `Sender`, else `Reply-To`).
fn sender_of(message: &mail_parser::Message<'_>) -> Option<Sender> {
    let from = [message.from(), message.sender(), message.reply_to()]
        .into_iter()
        .flatten()
        .filter_map(|a| a.first())
        .find(|a| a.address().is_some_and(|addr| addr.contains('@')));
    let address = from
        .and_then(|a| a.address())
        .map(|a| a.trim().to_lowercase());
    let (list_id, list_name) = message
        .header_raw("List-Id")
        .map(list_id_of)
        .unwrap_or_default();
    let key = list_id.clone().or_else(|| address.clone())?;
    let name = from
        .and_then(|a| a.name())
        .map(clean_line)
        .filter(|n| !n.is_empty())
        .or(list_name)
        .unwrap_or_else(|| key.clone());
    Some(Sender {
        key,
        address,
        list_id,
        name,
    })
}

/// The id and description of a raw `List-Id` value (`Our news <news.example.com>`, RFC 2919);
/// a value without brackets is all id.
fn list_id_of(raw: &str) -> (Option<String>, Option<String>) {
    let raw = unfold(raw);
    let (id, name) = match (raw.rfind('<'), raw.rfind('>')) {
        (Some(open), Some(close)) if open < close => {
            (&raw[open + 1..close], Some(raw[..open].trim()))
        }
        _ => (raw.trim(), None),
    };
    let id = id.trim().to_lowercase();
    let valid = !id.is_empty() && !id.chars().any(|c| c.is_whitespace() || c.is_control());
    let name = name
        .map(|n| clean_line(n.trim_matches('"')))
        .filter(|n| !n.is_empty());
    (valid.then_some(id), name)
}

/// The `<…>` entries of a raw header value (`List-Unsubscribe: <https://…>, <mailto:…>`), with
/// folding whitespace removed.
fn bracketed(raw: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = raw;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>') else {
            break;
        };
        let entry: String = rest[open + 1..open + close]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        if !entry.is_empty() {
            found.push(entry);
        }
        rest = &rest[open + close + 1..];
    }
    found
}

/// A header value on one line: folding and runs of whitespace made one space, control
/// characters removed.
fn clean_line(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A raw header value unfolded (RFC 5322 §2.2.3).
fn unfold(raw: &str) -> String {
    raw.replace("\r\n", "").replace('\n', "")
}

/// The body as sanitized HTML: the first HTML part, else the text parts made into HTML.
fn body_html(message: &mail_parser::Message<'_>, sanitizer: &Sanitizer) -> Option<String> {
    let html = message
        .html_bodies()
        .find_map(|part| match &part.body {
            PartType::Html(html) => Some(html.to_string()),
            _ => None,
        })
        .or_else(|| {
            let texts: Vec<String> = message
                .text_bodies()
                .filter_map(|part| match &part.body {
                    PartType::Text(text) => Some(text_to_html(text)),
                    _ => None,
                })
                .collect();
            (!texts.is_empty()).then(|| texts.join("<hr>"))
        })?;
    let html = cut_to(html, MAX_BODY_BYTES);
    let clean = sanitizer.clean(&remove_tracking_pixels(&html), None);
    (!clean.trim().is_empty()).then_some(clean)
}

/// `html` cut to at most `max` bytes at a character boundary, with a note that it was.
fn cut_to(mut html: String, max: usize) -> String {
    if html.len() <= max {
        return html;
    }
    let mut end = max;
    while !html.is_char_boundary(end) {
        end -= 1;
    }
    html.truncate(end);
    html.push_str("\n<p>[… the rest of this message was too long to keep]</p>");
    html
}

/// The message's attachments and inline images, with their decoded sizes.
fn attachments_of(message: &mail_parser::Message<'_>) -> Vec<Attachment> {
    message
        .attachments()
        .map(|part| {
            let mime_type = part
                .content_type()
                .map(|ct| match ct.subtype() {
                    Some(sub) => format!("{}/{}", ct.ctype(), sub),
                    None => ct.ctype().to_string(),
                })
                .unwrap_or_else(|| "application/octet-stream".into())
                .to_ascii_lowercase();
            Attachment {
                name: part
                    .attachment_name()
                    .map(clean_line)
                    .filter(|n| !n.is_empty()),
                mime_type,
                size: part.contents().len() as u64,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_id_with_and_without_a_description() {
        assert_eq!(
            list_id_of("\"Weekly news\" <Weekly.Example.COM>"),
            (
                Some("weekly.example.com".into()),
                Some("Weekly news".into())
            )
        );
        assert_eq!(
            list_id_of(" list.example.org "),
            (Some("list.example.org".into()), None)
        );
        assert_eq!(list_id_of("<>"), (None, None));
    }

    #[test]
    fn bracketed_entries_of_a_folded_header() {
        assert_eq!(
            bracketed("<mailto:u@example.com?subject=x>,\r\n <https://example.com/u?\r\n id=1>"),
            [
                "mailto:u@example.com?subject=x",
                "https://example.com/u?id=1"
            ]
        );
        assert!(bracketed("<unclosed").is_empty());
    }

    #[test]
    fn a_long_body_is_cut_at_a_character_boundary() {
        let cut = cut_to("ああああ".into(), 4);
        assert!(cut.starts_with("あ\n<p>"), "{cut}");
    }
}
