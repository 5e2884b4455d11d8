//! The keys an index stores per item, so that the candidates for [`crate::same_story`] are
//! found by equality look-ups rather than by reading a user's items (see the
//! [crate docs](crate#finding-candidates)).

use std::collections::HashSet;

use crate::Story;
use crate::fingerprint::{
    Fingerprint, MAX_ANCHORS, anchor_passages, hash_tokens, is_specific, story_title, story_urls,
    title_sets,
};

/// Of an item's anchor passages, those whose hash is divisible by this are keys: a choice made
/// by the passage itself, so two copies choose the same ones where their texts agree. One in
/// four leaves two copies sharing thirty anchor passages (about two sentences) without a
/// shared key once in about 5,600 pairs.
pub const ANCHOR_MODULUS: u64 = 4;

/// The most text keys an item has. They are taken from the start of the text, where copies
/// agree (a truncated copy is the start of the full text), so a long text costs no more rows
/// than a short one. Each is a row in a hash-ordered index at ingest, most of what clustering
/// costs there; 8 rather than 12 changes no pair the labelled sets find (the text-only merged
/// pairs that share fewest text keys share 2 and 3 either way), while 6 leaves six pairs at
/// the minimum of 2 and 4 loses some (issue 35).
pub const MAX_TEXT_KEYS: usize = 8;

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
    let titles = fingerprint
        .title_specific
        .then_some(&fingerprint.titles[..]);
    keys_of(
        &fingerprint.urls,
        titles,
        fingerprint.anchors.iter().copied(),
    )
}

/// The keys [`lookup_keys`] gives for `story`, without reading the whole story: its URLs and
/// title, and only as much of its text as the first anchors take. `text_tokens` are the texts
/// of the tokens [`tidings_text::tokenize`] makes of the story's text (at least its first few
/// hundred: the search index's inline tokens do), so that an item tokenized once for the index
/// has its keys for the price of hashing a few dozen passages. Most arriving items have no
/// copy, and they are never read further ([`Fingerprint::new`] is for those that may).
pub fn story_keys(story: &Story<'_>, text_tokens: &[&str]) -> Vec<LookupKey> {
    let (urls, _) = story_urls(story);
    let sets = title_sets(&story_title(story));
    let titles = is_specific(&sets).then_some(&sets[..]);
    keys_of(
        &urls,
        titles,
        anchor_passages(text_tokens).take(MAX_ANCHORS),
    )
}

/// The keys of some canonical URLs, a specific title's token sets and a text's anchor
/// passages (in text order; only the first few chosen are read).
fn keys_of(
    urls: &[String],
    titles: Option<&[HashSet<String>]>,
    anchors: impl Iterator<Item = u64>,
) -> Vec<LookupKey> {
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
    for url in urls {
        push(KeyKind::Url, hash_tokens(["url", url.as_str()]));
    }
    for set in titles.into_iter().flatten() {
        let mut tokens: Vec<&str> = set.iter().map(String::as_str).collect();
        tokens.sort_unstable();
        push(
            KeyKind::Title,
            hash_tokens(std::iter::once("title").chain(tokens)),
        );
    }
    let chosen = anchors
        .filter(|a| *a % ANCHOR_MODULUS == 0)
        .take(MAX_TEXT_KEYS);
    for anchor in chosen {
        push(KeyKind::Text, hash_tokens(["text", &anchor.to_string()]));
    }
    keys
}

/// Text keys two items must share to be compared when they share no URL or title key: one
/// shared passage is also what a stock phrase or a feed's boilerplate gives, while copies share
/// many (every pair of the labelled set that the rules merge shares two text keys, or a URL or
/// title key).
pub const MIN_SHARED_TEXT_KEYS: usize = 2;

/// Whether an item that shares `shared` of another's keys (those of one kind or another) is
/// worth reading and comparing: it shares a URL or a title key, or at least
/// [`MIN_SHARED_TEXT_KEYS`] text keys. Reading a candidate is most of what clustering costs.
pub fn worth_comparing(shared: &[KeyKind]) -> bool {
    shared.iter().any(|k| *k != KeyKind::Text) || shared.len() >= MIN_SHARED_TEXT_KEYS
}
