//! An item as rules see it, prepared once however many rules look at it.

use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

use tidings_text::index_tokens;

/// At most this many bytes of an item's text are looked at by a rule (tokens and regular
/// expressions alike), so that a 20 MB item costs what a long article costs.
pub const MAX_TEXT_BYTES: usize = 256 * 1024;

/// What rules look at in an item. The text is plain (no markup).
#[derive(Debug, Clone, Default)]
pub struct RuleItem<'a> {
    /// The feed it came from.
    pub feed_id: i64,
    /// Its title.
    pub title: &'a str,
    /// Its text (the feed's content or summary, as plain text).
    pub content: &'a str,
    /// Its author.
    pub author: &'a str,
    /// Its link.
    pub url: &'a str,
    /// The feed's categories for it.
    pub categories: &'a [String],
    /// tidings' tags for it, when they are known (they are found after arrival).
    pub tags: &'a [String],
    /// Its enclosures' MIME types.
    pub enclosure_types: &'a [String],
    /// When it was published, in seconds since the epoch.
    pub published_at: i64,
    /// Its popularity count, when one is known.
    pub popularity: Option<i64>,
}

/// An item with its token streams made: the work every rule shares, done once per item.
#[derive(Debug)]
pub struct PreparedItem<'a> {
    /// The item.
    pub item: RuleItem<'a>,
    /// The hashes of the title's and text's tokens, to rule out most terms without a scan
    /// (hashes rather than copies of the words: building the set is then one pass and no
    /// allocation per word).
    word_set: HashSet<u64, BuildHasherDefault<HashIsKey>>,
    /// The title's tokens, as the search index makes them.
    pub title_words: Cow<'a, [String]>,
    /// The text's tokens, as the search index makes them.
    pub content_words: Cow<'a, [String]>,
    /// The author's tokens.
    pub author_words: Vec<String>,
    /// The link, lowercased.
    pub url_lower: String,
}

impl<'a> PreparedItem<'a> {
    /// Tokenizes the item's fields once: the title, the text and the author each once.
    pub fn new(item: RuleItem<'a>) -> PreparedItem<'a> {
        let title_words = index_tokens(bounded(item.title));
        let content_words = index_tokens(bounded(item.content));
        PreparedItem::assemble(item, Cow::Owned(title_words), Cow::Owned(content_words))
    }

    /// Prepares an item whose title and text were tokenized already (as [`index_tokens`]
    /// makes them, e.g. by [`tidings_text::FieldTokens`]): ingest tokenizes a new item once for
    /// the search index and every subscriber's rules.
    pub fn with_tokens(
        item: RuleItem<'a>,
        title_words: &'a [String],
        content_words: &'a [String],
    ) -> PreparedItem<'a> {
        PreparedItem::assemble(
            item,
            Cow::Borrowed(title_words),
            Cow::Borrowed(content_words),
        )
    }

    fn assemble(
        item: RuleItem<'a>,
        title_words: Cow<'a, [String]>,
        content_words: Cow<'a, [String]>,
    ) -> PreparedItem<'a> {
        let word_set = title_words
            .iter()
            .chain(content_words.iter())
            .map(|w| word_hash(w))
            .collect();
        PreparedItem {
            url_lower: bounded(item.url).to_lowercase(),
            author_words: index_tokens(bounded(item.author)),
            item,
            word_set,
            title_words,
            content_words,
        }
    }

    /// Whether the item's words hold `word` (by its hash: a rare collision only costs the
    /// scan that follows).
    pub fn may_hold(&self, word: &str) -> bool {
        self.word_set.contains(&word_hash(word))
    }
}

/// A word's hash, with a key drawn once per process: the same in every item. foldhash is
/// several times faster than the standard SipHash on short strings, and ingest hashes every
/// word of every new item; its per-process random key keeps feed authors from choosing
/// colliding words.
fn word_hash(word: &str) -> u64 {
    static KEY: std::sync::OnceLock<foldhash::fast::RandomState> = std::sync::OnceLock::new();
    KEY.get_or_init(Default::default).hash_one(word)
}

/// The hasher of the word set: its keys are hashes already, used as they are (hashing them
/// again, as a default set does, doubled the cost of building it).
#[derive(Debug, Default)]
struct HashIsKey(u64);

impl Hasher for HashIsKey {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys reach this hasher; any other input is still hashed, if slowly.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// The start of `text`, at most [`MAX_TEXT_BYTES`] long, cut at a character boundary.
pub fn bounded(text: &str) -> &str {
    if text.len() <= MAX_TEXT_BYTES {
        return text;
    }
    let mut end = MAX_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_text_is_cut_at_a_character_boundary() {
        let text = "é".repeat(MAX_TEXT_BYTES);
        let cut = bounded(&text);
        assert!(cut.len() <= MAX_TEXT_BYTES && cut.len() > MAX_TEXT_BYTES - 2);
        assert_eq!(bounded("short"), "short");
    }
}
