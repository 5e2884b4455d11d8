//! An item read once for comparing: its canonical URLs, its title's tokens and marks, its
//! text's shingles and figures, whether it is a correction, and its vector.

use std::collections::{BTreeSet, HashMap, HashSet};

use tidings_text::{Token, TokenKind, normalize, tokenize};

use crate::guards::{TitleMarks, is_correction};
use crate::link::{canonical_url, is_site_root};

/// Characters of an item's text read: enough to tell copies apart, and a bound on the work.
pub const MAX_TEXT_CHARS: usize = 20_000;

/// Characters of a title read: titles are short, and a bound keeps a broken feed's "title"
/// from costing more than its text.
pub const MAX_TITLE_CHARS: usize = 1_000;

/// Tokens in a shingle: three words (or three CJK bigrams, about four characters) are specific
/// enough that two texts share many only when one copies the other.
pub const SHINGLE_TOKENS: usize = 3;

/// Tokens in an anchor passage ([`Fingerprint::anchors`]): longer than a shingle, since a key
/// is looked up among a million items where three words in a row (`said on Monday`) or a
/// four-character Japanese phrase (`と発表した`) recur, while copies share long passages.
pub const ANCHOR_TOKENS: usize = 6;

/// Distinct tokens a title needs before it can be evidence alone (`Weekly links` and `Open
/// thread` cannot; `Fed holds rates steady as inflation cools` can).
pub const MIN_SPECIFIC_TITLE_TOKENS: usize = 5;

/// One item as [`crate::same_story`] reads it: what a feed gives (the link, the guid, the title
/// and the content as plain text), the page's `<link rel=canonical>` when it is known (from the
/// full-text extraction), and the item's vector when it has one.
#[derive(Debug, Clone, Copy, Default)]
pub struct Story<'a> {
    /// The item's link.
    pub link: Option<&'a str>,
    /// The page's `<link rel=canonical>`, when known.
    pub canonical: Option<&'a str>,
    /// The feed's id for the item; evidence only when it is an http(s) URL.
    pub guid: Option<&'a str>,
    /// The title as plain text.
    pub title: Option<&'a str>,
    /// The content (else the summary) as plain text, markup removed.
    pub text: Option<&'a str>,
    /// The item's vector (any model, the same for both items compared), the second opinion.
    pub vector: Option<&'a [f32]>,
}

/// An item read once ([`Fingerprint::new`]), so that comparing it with many candidates does not
/// tokenize it again.
#[derive(Debug, Clone, Default)]
pub struct Fingerprint {
    /// The canonical URLs of its link, canonical link and guid, without site roots.
    pub(crate) urls: Vec<String>,
    /// Those of its canonical link and guid: URLs that claim to be the item's own page, where
    /// a link may lead to a page of many items (a show's page).
    pub(crate) claimed: Vec<String>,
    /// The title's token sets: the whole title, then the title without a trailing site name
    /// (`… - Reuters`, `… | Heise`) when it has one.
    pub(crate) titles: Vec<HashSet<String>>,
    /// Whether the title has enough distinct tokens to be evidence alone.
    pub(crate) title_specific: bool,
    /// The numbers and parts of the title.
    pub(crate) marks: TitleMarks,
    /// The text's shingles.
    pub(crate) shingles: HashSet<u64>,
    /// The text's shingles in text order, so that a common start and end can be found.
    pub(crate) sequence: Vec<u64>,
    /// The passages an index may key on, in text order: hashes of [`ANCHOR_TOKENS`] tokens in a
    /// row of which at least half carry meaning (not stop words, not particles), so that a key
    /// is not a phrase many items have (`in a statement on the`, `すると発表した`).
    pub(crate) anchors: Vec<u64>,
    /// The figures (runs of tokens with digits) of the text, by the tokens around them.
    pub(crate) figures: HashMap<u64, BTreeSet<String>>,
    /// Whether the title or text says it is a corrected version.
    pub(crate) correction: bool,
    /// The vector, when given.
    pub(crate) vector: Option<Vec<f32>>,
}

impl Fingerprint {
    /// Reads `story`. Never fails: a missing or unreadable part is simply no evidence.
    pub fn new(story: &Story<'_>) -> Fingerprint {
        let (urls, claimed) = story_urls(story);
        let title = story_title(story);
        let text = normalize(cut(story.text.unwrap_or_default().trim(), MAX_TEXT_CHARS));
        let tokens = tokenize(&text);
        let texts: Vec<&str> = tokens.iter().map(|t| t.text.as_str()).collect();
        let titles = title_sets(&title);
        let title_specific = is_specific(&titles);
        let (sequence, shingles) = shingles(&tokens);
        Fingerprint {
            urls,
            claimed,
            title_specific,
            titles,
            marks: TitleMarks::read(&title),
            shingles,
            sequence,
            anchors: anchor_passages(&texts).take(MAX_ANCHORS).collect(),
            figures: figures(&tokens),
            correction: is_correction(&title, &text),
            vector: story.vector.map(<[f32]>::to_vec),
        }
    }

    /// The canonical URLs it is known by (link, canonical link, guid), site roots left out.
    pub fn urls(&self) -> &[String] {
        &self.urls
    }
}

/// A story's canonical URLs without site roots: all of them (link first), and those its
/// canonical link and guid claim.
pub(crate) fn story_urls(story: &Story<'_>) -> (Vec<String>, Vec<String>) {
    let web = |raw: Option<&str>| canonical_url(raw?).filter(|u| !is_site_root(u));
    let claimed: Vec<String> = [web(story.canonical), web(story.guid)]
        .into_iter()
        .flatten()
        .collect();
    let mut urls: Vec<String> = Vec::new();
    for url in web(story.link).into_iter().chain(claimed.iter().cloned()) {
        if !urls.contains(&url) {
            urls.push(url);
        }
    }
    (urls, claimed)
}

/// A story's title as it is compared: trimmed, cut and normalized.
pub(crate) fn story_title(story: &Story<'_>) -> String {
    normalize(cut(story.title.unwrap_or_default().trim(), MAX_TITLE_CHARS))
}

/// Whether a title (its [`title_sets`]) is specific enough to be evidence alone.
pub(crate) fn is_specific(titles: &[HashSet<String>]) -> bool {
    titles
        .first()
        .is_some_and(|set| set.len() >= MIN_SPECIFIC_TITLE_TOKENS)
}

/// `text` cut to at most `max` characters.
fn cut(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// The token sets of a normalized title: the whole, then (when it has one) the title without a
/// trailing site name of at most four tokens after ` - `, ` | `, ` – `, ` — ` or ` :: `, as
/// aggregators add.
pub(crate) fn title_sets(title: &str) -> Vec<HashSet<String>> {
    let set =
        |text: &str| -> HashSet<String> { tokenize(text).into_iter().map(|t| t.text).collect() };
    let whole = set(title);
    if whole.is_empty() {
        return Vec::new();
    }
    let mut sets = vec![whole];
    let cut_at = [" - ", " | ", " – ", " — ", " :: "]
        .iter()
        .filter_map(|separator| title.rfind(separator))
        .max();
    if let Some(at) = cut_at {
        let (head, tail) = title.split_at(at);
        let head = set(head);
        if tokenize(tail).len() <= 4 && head.len() >= 3 {
            sets.push(head);
        }
    }
    sets
}

/// A stable hash of some tokens (xxh3 over their texts with a separator no token contains).
pub(crate) fn hash_tokens<'a>(tokens: impl IntoIterator<Item = &'a str>) -> u64 {
    let mut bytes = Vec::with_capacity(64);
    for token in tokens {
        bytes.extend_from_slice(token.as_bytes());
        bytes.push(0x1F);
    }
    xxhash_rust::xxh3::xxh3_64(&bytes)
}

/// The shingles of a text's tokens in order and as a set. A text of fewer than
/// [`SHINGLE_TOKENS`] tokens is one shingle.
fn shingles(tokens: &[Token]) -> (Vec<u64>, HashSet<u64>) {
    let mut sequence = Vec::new();
    let mut set = HashSet::new();
    if tokens.is_empty() {
        return (sequence, set);
    }
    for window in tokens.windows(SHINGLE_TOKENS.min(tokens.len())) {
        let hash = hash_tokens(window.iter().map(|t| t.text.as_str()));
        sequence.push(hash);
        set.insert(hash);
    }
    (sequence, set)
}

/// The most anchor passages kept, from the start of the text: the keys are chosen among the
/// first of them (see [`crate::MAX_TEXT_KEYS`]).
pub(crate) const MAX_ANCHORS: usize = 256;

/// The anchor passages of a text's tokens ([`Fingerprint::anchors`]), each once, in text
/// order, made as they are asked for (the keys need only the first few). A text of fewer than
/// [`ANCHOR_TOKENS`] tokens is one passage.
pub(crate) fn anchor_passages<'t>(tokens: &'t [&'t str]) -> impl Iterator<Item = u64> + 't {
    // `windows` wants a width of one at least; an empty text has no window of any width.
    let width = ANCHOR_TOKENS.min(tokens.len()).max(1);
    let mut seen = HashSet::new();
    tokens
        .windows(width)
        .filter(move |window| window.iter().filter(|t| carries_meaning(t)).count() * 2 >= width)
        .map(|window| hash_tokens(window.iter().copied()))
        .filter(move |hash| seen.insert(*hash))
}

/// Whether a token (as [`tokenize`] makes it) says something about the text: not a stop word,
/// a one-letter word or a number, and for CJK no hiragana (particles and endings: `と発` and
/// `表し` of `と発表した` are in most Japanese news). Read from the token's text alone, so
/// that tokens kept as strings (the search index's) give the same passages.
fn carries_meaning(token: &str) -> bool {
    let mut chars = token.chars();
    match chars.next() {
        // A CJK token (a bigram or a lone character) is all CJK, a word none.
        Some(first) if tidings_text::is_cjk(first) => !token
            .chars()
            .any(|c| ('\u{3041}'..='\u{309F}').contains(&c)),
        Some(_) => {
            chars.next().is_some()
                && !token.chars().all(|c| c.is_ascii_digit())
                && !tidings_tags::is_stop_word(token)
        }
        None => false,
    }
}

/// Whether a token holds a digit: part of a figure (`12`, `5` of `12.5`, `4bn`).
fn is_figure(token: &Token) -> bool {
    token.kind == TokenKind::Word && token.text.chars().any(|c| c.is_ascii_digit())
}

/// The figures of a text: each run of tokens with digits (`12.5` is the run `12`, `5`), keyed
/// by the tokens just before and after it, so that two versions of a sentence with another
/// figure in the same place can be found. A figure is its tokens joined without separators,
/// so `8,000`, `8.000`, `8 000` and `8000` are one figure (and so, rarely, are `12.5` and `125`).
fn figures(tokens: &[Token]) -> HashMap<u64, BTreeSet<String>> {
    let mut figures: HashMap<u64, BTreeSet<String>> = HashMap::new();
    let mut i = 0;
    while i < tokens.len() {
        if !is_figure(&tokens[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < tokens.len() && is_figure(&tokens[i]) {
            i += 1;
        }
        let before = start
            .checked_sub(1)
            .map_or("", |at| tokens[at].text.as_str());
        let after = tokens.get(i).map_or("", |t| t.text.as_str());
        let figure: Vec<&str> = tokens[start..i].iter().map(|t| t.text.as_str()).collect();
        figures
            .entry(hash_tokens([before, after]))
            .or_default()
            .insert(figure.concat());
    }
    figures
}
