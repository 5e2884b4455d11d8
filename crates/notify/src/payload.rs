//! The JSON each kind of channel receives. Several new items go into one message (up to
//! [`MAX_ITEMS_PER_MESSAGE`]), within the service's limits:
//!
//! - **Discord**: one embed per item (`title` ≤ 256 characters, linked to the item, `description`
//!   its text ≤ [`SUMMARY_CHARS`], `author.name` the feed, `timestamp` its publication time), at
//!   most 10 embeds and 6,000 characters across them, and `allowed_mentions` empty so that a
//!   title with `@everyone` pings nobody.
//! - **Slack**: `text` (the notification's one-line fallback) and `blocks`: per item a
//!   `section` (linked title and text, Slack's `<`, `>` and `&` escaped so that a title cannot
//!   write `<!channel>`) and a `context` (feed and time), within 50 blocks and 3,000 characters
//!   a section.
//! - **Generic**: `{"type": "new_items" | "test", "channel": {"id", "name"}, "items": [{"id",
//!   "feed_id", "feed_title", "title", "url", "author", "published_at" (RFC 3339), "summary"}]}`.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use crate::target::Kind;

/// Items per message at most: Discord's limit of embeds per message (and a readable Slack
/// message).
pub const MAX_ITEMS_PER_MESSAGE: usize = 10;
/// An item's text in a message, at most this many characters (a preview, not the article).
pub const SUMMARY_CHARS: usize = 300;
/// Discord: characters of an embed's title at most.
pub const DISCORD_TITLE_CHARS: usize = 256;
/// Discord: characters of an embed's author name at most.
pub const DISCORD_AUTHOR_CHARS: usize = 256;
/// Discord: characters of an embed's description at most.
pub const DISCORD_DESCRIPTION_CHARS: usize = 4096;
/// Discord: characters of all the embeds of a message together at most.
pub const DISCORD_TOTAL_CHARS: usize = 6000;
/// Slack: characters of a section's text at most.
pub const SLACK_SECTION_CHARS: usize = 3000;

/// The channel a message is for (its name appears in generic payloads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    /// The channel's id.
    pub id: i64,
    /// The name the user gave it.
    pub name: String,
}

/// A new item as a message shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The item's id.
    pub item_id: i64,
    /// Its feed's id.
    pub feed_id: i64,
    /// The feed's title (the user's own title for the subscription when they gave one).
    pub feed_title: Option<String>,
    /// The item's title.
    pub title: Option<String>,
    /// Its link.
    pub url: Option<String>,
    /// Its author.
    pub author: Option<String>,
    /// Its text as plain text (any length; messages cut it).
    pub summary: Option<String>,
    /// When it was published.
    pub published_at: DateTime<Utc>,
}

impl Notice {
    fn title_or_default(&self) -> &str {
        self.title
            .as_deref()
            .filter(|t| !t.trim().is_empty())
            .unwrap_or("(untitled)")
    }

    /// The link when it is an http(s) URL (Discord refuses an embed whose `url` is not).
    fn http_url(&self) -> Option<&str> {
        self.url
            .as_deref()
            .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
    }
}

/// `text` cut to at most `max` characters, with an ellipsis when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    if max == 0 {
        return String::new();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out.truncate(out.trim_end().len());
    out.push('…');
    out
}

/// The payload of a message about `notices` (the first [`MAX_ITEMS_PER_MESSAGE`]) to a
/// channel of `kind`. `test` marks the "send test" message.
pub fn build_payload(kind: Kind, channel: &Channel, notices: &[Notice], test: bool) -> Value {
    let notices = &notices[..notices.len().min(MAX_ITEMS_PER_MESSAGE)];
    match kind {
        Kind::Discord => discord(notices, test),
        Kind::Slack => slack(notices, test),
        Kind::Generic => generic(channel, notices, test),
    }
}

fn timestamp(at: &DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn headline(count: usize, test: bool) -> String {
    match (test, count) {
        (true, _) => "Test message from tidings: this channel works.".to_owned(),
        (false, 1) => "1 new item".to_owned(),
        (false, n) => format!("{n} new items"),
    }
}

fn discord(notices: &[Notice], test: bool) -> Value {
    // Each embed gets an equal share of the message's 6,000 characters.
    let share = DISCORD_TOTAL_CHARS / notices.len().max(1);
    let embeds: Vec<Value> = notices
        .iter()
        .map(|notice| {
            let title = cut(
                notice.title_or_default(),
                DISCORD_TITLE_CHARS.min(share / 3),
            );
            let author = notice
                .feed_title
                .as_deref()
                .map(|name| cut(name, DISCORD_AUTHOR_CHARS.min(share / 6)));
            let used = title.chars().count() + author.as_ref().map_or(0, |a| a.chars().count());
            let room = share
                .saturating_sub(used)
                .min(SUMMARY_CHARS)
                .min(DISCORD_DESCRIPTION_CHARS);
            let mut embed = json!({
                "title": title,
                "timestamp": timestamp(&notice.published_at),
            });
            if let Some(url) = notice.http_url() {
                embed["url"] = json!(url);
            }
            if let Some(summary) = notice.summary.as_deref().filter(|s| !s.is_empty()) {
                embed["description"] = json!(cut(summary, room));
            }
            if let Some(author) = author {
                embed["author"] = json!({ "name": author });
            }
            embed
        })
        .collect();
    json!({
        "content": headline(notices.len(), test),
        "embeds": embeds,
        "allowed_mentions": { "parse": [] },
    })
}

/// Slack's mrkdwn escapes: only these three are special.
fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn slack(notices: &[Notice], test: bool) -> Value {
    let mut blocks = Vec::with_capacity(notices.len() * 2 + 1);
    blocks.push(json!({
        "type": "section",
        "text": { "type": "mrkdwn", "text": slack_escape(&headline(notices.len(), test)) },
    }));
    for notice in notices {
        let title = slack_escape(&cut(notice.title_or_default(), 256));
        // A link's URL must not carry `|` or `>`, which end Slack's link syntax.
        let linked = match notice.http_url() {
            Some(url) => format!(
                "*<{}|{}>*",
                url.replace('|', "%7C").replace('>', "%3E"),
                title
            ),
            None => format!("*{title}*"),
        };
        let mut text = linked;
        if let Some(summary) = notice.summary.as_deref().filter(|s| !s.is_empty()) {
            text.push('\n');
            text.push_str(&slack_escape(&cut(summary, SUMMARY_CHARS)));
        }
        blocks.push(json!({
            "type": "section",
            "text": { "type": "mrkdwn", "text": cut(&text, SLACK_SECTION_CHARS) },
        }));
        let mut context = Vec::new();
        if let Some(feed) = &notice.feed_title {
            context.push(slack_escape(&cut(feed, 200)));
        }
        context.push(format!(
            "<!date^{}^{{date_short_pretty}} {{time}}|{}>",
            notice.published_at.timestamp(),
            timestamp(&notice.published_at)
        ));
        blocks.push(json!({
            "type": "context",
            "elements": [{ "type": "mrkdwn", "text": context.join(" · ") }],
        }));
    }
    let titles: Vec<String> = notices
        .iter()
        .map(|n| cut(n.title_or_default(), 100))
        .collect();
    let fallback = if titles.is_empty() {
        headline(0, test)
    } else {
        format!("{}: {}", headline(notices.len(), test), titles.join(" · "))
    };
    json!({ "text": slack_escape(&fallback), "blocks": blocks })
}

fn generic(channel: &Channel, notices: &[Notice], test: bool) -> Value {
    let items: Vec<Value> = notices
        .iter()
        .map(|notice| {
            json!({
                "id": notice.item_id,
                "feed_id": notice.feed_id,
                "feed_title": notice.feed_title,
                "title": notice.title,
                "url": notice.url,
                "author": notice.author,
                "published_at": timestamp(&notice.published_at),
                "summary": notice.summary.as_deref().map(|s| cut(s, SUMMARY_CHARS)),
            })
        })
        .collect();
    json!({
        "type": if test { "test" } else { "new_items" },
        "channel": { "id": channel.id, "name": channel.name },
        "items": items,
    })
}

/// The item a "send test" message shows, so that the user sees what a real one looks like.
pub fn test_notice(now: DateTime<Utc>) -> Notice {
    Notice {
        item_id: 0,
        feed_id: 0,
        feed_title: Some("tidings".into()),
        title: Some("This is how new items will look".into()),
        url: None,
        author: None,
        summary: Some("New items that match this channel's rules arrive like this one.".into()),
        published_at: now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(n: i64, title: &str, summary: &str) -> Notice {
        Notice {
            item_id: n,
            feed_id: 7,
            feed_title: Some("Example Feed".into()),
            title: Some(title.into()),
            url: Some(format!("https://example.com/{n}")),
            author: Some("Ann".into()),
            summary: Some(summary.into()),
            published_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
        }
    }

    fn channel() -> Channel {
        Channel {
            id: 3,
            name: "news".into(),
        }
    }

    fn chars(value: &Value, key: &str) -> usize {
        value[key].as_str().map_or(0, |s| s.chars().count())
    }

    #[test]
    fn discord_messages_stay_within_discords_limits() {
        let long = "長".repeat(5000);
        let notices: Vec<Notice> = (0..12).map(|n| notice(n, &long, &long)).collect();
        let payload = build_payload(Kind::Discord, &channel(), &notices, false);
        let embeds = payload["embeds"].as_array().unwrap();
        assert_eq!(embeds.len(), 10);
        assert_eq!(payload["content"], "10 new items");
        assert_eq!(payload["allowed_mentions"]["parse"], json!([]));
        let mut total = 0;
        for embed in embeds {
            assert!(chars(embed, "title") <= DISCORD_TITLE_CHARS);
            assert!(chars(embed, "description") <= DISCORD_DESCRIPTION_CHARS);
            assert!(embed["title"].as_str().unwrap().ends_with('…'));
            total += chars(embed, "title") + chars(embed, "description");
            total += embed["author"]["name"]
                .as_str()
                .map_or(0, |s| s.chars().count());
        }
        assert!(total <= DISCORD_TOTAL_CHARS, "{total}");
        let one = build_payload(Kind::Discord, &channel(), &[notice(1, "Hi", "Body")], false);
        assert_eq!(
            one["embeds"][0],
            json!({
                "title": "Hi", "url": "https://example.com/1", "description": "Body",
                "timestamp": "2023-11-14T22:13:20Z", "author": {"name": "Example Feed"}
            })
        );
    }

    #[test]
    fn slack_messages_escape_mentions_and_link_titles() {
        let payload = build_payload(
            Kind::Slack,
            &channel(),
            &[notice(1, "<!channel> & friends", "a > b")],
            false,
        );
        let section = payload["blocks"][1]["text"]["text"].as_str().unwrap();
        assert_eq!(
            section,
            "*<https://example.com/1|&lt;!channel&gt; &amp; friends>*\na &gt; b"
        );
        assert!(
            payload["text"]
                .as_str()
                .unwrap()
                .starts_with("1 new item: &lt;!channel")
        );
        assert_eq!(payload["blocks"].as_array().unwrap().len(), 3);
        let context = payload["blocks"][2]["elements"][0]["text"]
            .as_str()
            .unwrap();
        assert!(
            context.starts_with("Example Feed · <!date^1700000000^"),
            "{context}"
        );
    }

    #[test]
    fn generic_payloads_carry_every_field() {
        let payload = build_payload(Kind::Generic, &channel(), &[notice(1, "T", "S")], true);
        assert_eq!(
            payload,
            json!({
                "type": "test",
                "channel": {"id": 3, "name": "news"},
                "items": [{
                    "id": 1, "feed_id": 7, "feed_title": "Example Feed", "title": "T",
                    "url": "https://example.com/1", "author": "Ann",
                    "published_at": "2023-11-14T22:13:20Z", "summary": "S"
                }]
            })
        );
    }

    #[test]
    fn cutting_counts_characters_not_bytes() {
        assert_eq!(cut("日本語のテキスト", 4), "日本語…");
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("a b c d", 4), "a b…");
    }
}
