//! The keys an index stores per item, so that the candidates for [`crate::same_story`] are
//! found by equality look-ups rather than by reading a user's items (see the
//! [crate docs](crate#finding-candidates)).

use crate::fingerprint::{Fingerprint, hash_tokens};

/// Of an item's anchor passages, those whose hash is divisible by this are keys: a choice made
/// by the passage itself, so two copies choose the same ones where their texts agree. One in
/// four leaves two copies sharing thirty anchor passages (about two sentences) without a
/// shared key once in about 5,600 pairs.
pub const ANCHOR_MODULUS: u64 = 4;

/// The most text keys an item has. They are taken from the start of the text, where copies
/// agree (a truncated copy is the start of the full text), so a long text costs no more rows
/// than a short one.
pub const MAX_TEXT_KEYS: usize = 12;

/// What a key stands for; part of its hash, so kinds never meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyKind {
    /// A canonical URL of the item.
    Url,
    /// The token set of a specific title (with and without a site name).
    Title,
    /// An anchor passage of the text ([`crate::ANCHOR_TOKENS`] tokens in a row).
    Text,
}

/// One key of an item: the value an index stores (a signed 64-bit integer, as both SQLite's
/// `INTEGER` and PostgreSQL's `BIGINT` hold it) and its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LookupKey {
    /// What it stands for.
    pub kind: KeyKind,
    /// The value to store and look up.
    pub value: i64,
}

/// The keys of an item: one per canonical URL, one per specific title form, and up to
/// [`MAX_TEXT_KEYS`] text anchors; without repeats, in that order. Two items that
/// [`crate::same_story`] calls the same share at least one key, except rarely: copies whose
/// texts share only a few passages, and a title-only item whose title differs a little from
/// the other's (every merged pair of the labelled set shares one).
pub fn lookup_keys(fingerprint: &Fingerprint) -> Vec<LookupKey> {
    let mut keys: Vec<LookupKey> = Vec::new();
    let mut push = |kind: KeyKind, value: u64| {
        let key = LookupKey {
            kind,
            value: value as i64,
        };
        if !keys.contains(&key) {
            keys.push(key);
        }
    };
    for url in &fingerprint.urls {
        push(KeyKind::Url, hash_tokens(["url", url.as_str()]));
    }
    if fingerprint.title_specific {
        for set in &fingerprint.titles {
            let mut tokens: Vec<&str> = set.iter().map(String::as_str).collect();
            tokens.sort_unstable();
            push(
                KeyKind::Title,
                hash_tokens(std::iter::once("title").chain(tokens)),
            );
        }
    }
    let anchors = fingerprint
        .anchors
        .iter()
        .filter(|a| *a % ANCHOR_MODULUS == 0)
        .take(MAX_TEXT_KEYS);
    for anchor in anchors {
        push(KeyKind::Text, hash_tokens(["text", &anchor.to_string()]));
    }
    keys
}
