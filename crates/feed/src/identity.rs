//! The item identity rule (F4).
//!
//! An item of a feed is the same item when it has the same guid; without a guid, the same link;
//! without either, the same title, publication time and summary. The store keeps the key this
//! module computes under a unique constraint per feed, so re-seen items are updated in place.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

/// Which field an item's identity was taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentitySource {
    /// The feed's own id for the item (RSS `guid`, Atom `id`, JSON Feed `id`).
    Guid,
    /// The item's link, used when it has no guid.
    Link,
    /// A hash of title, publication time and summary, used when it has neither.
    Content,
}

impl IdentitySource {
    fn prefix(self) -> &'static str {
        match self {
            IdentitySource::Guid => "g",
            IdentitySource::Link => "l",
            IdentitySource::Content => "h",
        }
    }
}

/// The identity of one item within its feed: where it came from and a fixed-length key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemIdentity {
    /// The field the identity was derived from.
    pub source: IdentitySource,
    /// `"<g|l|h>:<64 hex digits>"`: short and of bounded length whatever the guid's size, so it
    /// fits a unique index on both engines.
    pub key: String,
}

/// Computes an item's identity: its guid, else its link, else a hash of title + published +
/// summary. Blank values (empty or whitespace only) count as missing; surrounding whitespace is
/// ignored so that a feed that re-indents its XML does not duplicate its items.
pub fn item_identity(
    guid: Option<&str>,
    link: Option<&str>,
    title: Option<&str>,
    published: Option<DateTime<Utc>>,
    summary: Option<&str>,
) -> ItemIdentity {
    if let Some(guid) = present(guid) {
        return keyed(IdentitySource::Guid, &[guid]);
    }
    if let Some(link) = present(link) {
        return keyed(IdentitySource::Link, &[link]);
    }
    let published = published
        .map(|t| t.timestamp().to_string())
        .unwrap_or_default();
    keyed(
        IdentitySource::Content,
        &[
            present(title).unwrap_or(""),
            &published,
            present(summary).unwrap_or(""),
        ],
    )
}

/// The value with surrounding whitespace removed, or `None` when nothing is left.
fn present(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

fn keyed(source: IdentitySource, parts: &[&str]) -> ItemIdentity {
    let mut hasher = Sha256::new();
    for (index, part) in parts.iter().enumerate() {
        if index > 0 {
            // A separator that cannot occur in text keeps ("ab","c") apart from ("a","bc").
            hasher.update([0u8]);
        }
        hasher.update(part.as_bytes());
    }
    ItemIdentity {
        source,
        key: format!("{}:{}", source.prefix(), hex::encode(hasher.finalize())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(secs: i64) -> Option<DateTime<Utc>> {
        Utc.timestamp_opt(secs, 0).single()
    }

    #[test]
    fn guid_wins_over_link_and_content() {
        let a = item_identity(
            Some("id-1"),
            Some("https://a/1"),
            Some("T"),
            at(1),
            Some("S"),
        );
        let b = item_identity(
            Some("id-1"),
            Some("https://a/2"),
            Some("U"),
            at(2),
            Some("R"),
        );
        assert_eq!(a.source, IdentitySource::Guid);
        assert_eq!(a, b);
        assert!(a.key.starts_with("g:"));
        assert_eq!(a.key.len(), 66);
    }

    #[test]
    fn link_is_used_without_guid() {
        let a = item_identity(None, Some("https://a/1"), Some("T"), at(1), None);
        let b = item_identity(
            Some("   "),
            Some(" https://a/1\n"),
            Some("Other"),
            None,
            None,
        );
        assert_eq!(a.source, IdentitySource::Link);
        assert_eq!(a, b);
        assert_ne!(
            a,
            item_identity(None, Some("https://a/2"), Some("T"), at(1), None)
        );
    }

    #[test]
    fn content_hash_without_guid_or_link() {
        let a = item_identity(None, None, Some("Title"), at(100), Some("Sum"));
        assert_eq!(a.source, IdentitySource::Content);
        assert_eq!(
            a,
            item_identity(Some(""), Some(""), Some(" Title "), at(100), Some("Sum"))
        );
        assert_ne!(
            a,
            item_identity(None, None, Some("Title"), at(101), Some("Sum"))
        );
        assert_ne!(
            a,
            item_identity(None, None, Some("Title"), at(100), Some("Sum2"))
        );
        assert_ne!(
            a,
            item_identity(None, None, Some("Title2"), at(100), Some("Sum"))
        );
        assert_ne!(
            a,
            item_identity(None, None, Some("Title"), None, Some("Sum"))
        );
    }

    #[test]
    fn fields_do_not_run_into_each_other() {
        let a = item_identity(None, None, Some("ab"), None, Some("c"));
        let b = item_identity(None, None, Some("a"), None, Some("bc"));
        assert_ne!(a, b);
    }

    #[test]
    fn same_value_from_different_sources_differs() {
        let by_guid = item_identity(Some("https://a/1"), None, None, None, None);
        let by_link = item_identity(None, Some("https://a/1"), None, None, None);
        assert_ne!(by_guid.key, by_link.key);
    }

    #[test]
    fn huge_guid_gives_bounded_key() {
        let guid = "x".repeat(100_000);
        assert_eq!(
            item_identity(Some(&guid), None, None, None, None).key.len(),
            66
        );
    }
}
