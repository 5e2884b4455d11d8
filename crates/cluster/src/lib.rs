//! Duplicates across feeds (issue 35): whether two items are the same story, and the keys an
//! index finds the candidates by. Pure: no I/O. The store runs it at ingest; the rules for
//! readers are in `docs/duplicates.md`.
//!
//! # The same story
//! [`same_story`] compares two items read once into [`Fingerprint`]s (from a [`Story`]: link,
//! `<link rel=canonical>`, guid, title, plain text, vector). The text is read as search reads it
//! ([`tidings_text::tokenize`]: words, CJK character bigrams), so Japanese and Chinese compare
//! as well as English, German or French. The rules, in order:
//!
//! 1. **Guards** keep apart what looks alike and is not the same item, whatever the other
//!    evidence:
//!    - **Series:** the titles name different parts (`Part 1`/`Part 2`, `Teil 3`, `épisode
//!      2`, `第1回`/`第2回`, `第三話`, `(上)`/`(下)`, `前編`/`後編`, `(一)`/`(二)`), or both
//!      titles are alike but for their numbers, both have numbers and neither's numbers are
//!      all in the other's (`This Week in Rust 580`/`581`, `Daily digest 28 Nov`/`29 Nov`). A
//!      headline that only adds a figure (`Quake hits Japan`, `6.1 quake hits Japan`) or is
//!      written anew with other figures is not kept apart by them.
//!    - **Corrections:** one item is marked as a correction and the other is not (a title
//!      starting `Correction:`, `CORRECTED`, `Korrektur:`, `Rectificatif :`, a title or text
//!      with `訂正` or `更正`, or a sentence such as `This article has been corrected`,
//!      `In einer früheren Version`, `Une précédente version de cet article`). Or their texts
//!      are versions of one text (at least half of the smaller one's shingles in the other)
//!      with a **figure changed** in the same place (`rose 12%` and `rose 21%`): a correction
//!      changes the text materially when it changes a number, adds a correction notice or
//!      changes enough words that the texts are no longer near-identical (below); an edit
//!      that does none of these (a typo, a reworded sentence) leaves one story. Whoever read
//!      the first version sees the correction as an item of its own.
//!    - **Frames:** texts that begin and end alike (at least [`FRAME_SHINGLES`] shingles
//!      together: a newsletter's greeting and footer) and disagree in between are different
//!      issues.
//! 2. **The same canonical URL** ([`canonical_url`]: scheme, `www.`/`m.`/`amp.` hosts, AMP
//!    paths, tracking parameters, fragments, trailing slashes, default ports, known
//!    redirectors) among the items' links, canonical links and guids that are URLs: the same
//!    story, unless the texts share almost nothing (under [`URL_TEXT_DISJOINT`]) and are both
//!    substantial, or (when the URL is only both items' link, not a canonical link or guid)
//!    both a sentence or more under titles that differ too: then the URL is a page many items
//!    link to (a podcast's show page, a newsletter's latest issue). A site's home page is never
//!    evidence.
//! 3. **Vectors**, when both items have one: a cosine under [`VECTOR_VETO`] keeps them apart
//!    (different stories on the same topic share words, not their whole vocabulary).
//! 4. **Near-identical text:** the share of the smaller text's shingles (three tokens in a row)
//!    found in the other (containment, so a truncated copy or a copy with a line added, `The
//!    post … appeared first on …`, still matches) is at least [`TEXT_SAME`] when both texts
//!    are substantial ([`SUBSTANTIAL_SHINGLES`]); between [`TEXT_CONFIRMED`] and it when the
//!    vectors confirm ([`VECTOR_CONFIRM`]); short texts also need their titles to agree
//!    ([`TITLE_WITH_SHORT_TEXT`]). Texts that are comparable and share less
//!    than [`TEXT_DISAGREE`] are different stories whatever the titles say: two outlets'
//!    articles on one event, or a weekly digest under the same title.
//! 5. **Near-identical title** (token Jaccard at least [`TITLE_SAME`], with and without a
//!    trailing site name such as ` - Reuters`) when both titles are specific
//!    ([`MIN_SPECIFIC_TITLE_TOKENS`]) and the texts do not disagree (one is missing or too
//!    short to compare): a title-only feed and the full one.
//!
//! Anything else is not the same story. Every decision says why ([`Verdict`]), and
//! [`Measures`] gives the numbers it was made on.
//!
//! # Finding candidates
//! Comparing an arriving item with every item its subscribers can see does not scale to a
//! million items. [`lookup_keys`] gives each item a few keys (its canonical URLs, its specific
//! title's token set, and at most [`MAX_TEXT_KEYS`] anchor passages of [`ANCHOR_TOKENS`] tokens
//! from the start of its text, without particles and stop words, chosen by their hash so that
//! copies choose the same ones); two items the rules call the same share at least one key
//! (measured on the labelled set), and no key is a phrase many items have. The intended use: a
//! table of `(key, item)` with an index on the key, written when an item is stored; at ingest,
//! the items sharing a key with the new one among what the user can see are the candidates
//! (ranked by how many keys they share, the first few compared with [`same_story`]), an
//! equality look-up per key whatever the number of items. Keys of items past the window in
//! which copies arrive (days) may be dropped to keep the table small.
//!
//! # Measured
//! The labelled set in `testdata/pairs.jsonl` (hand-written items in English, Japanese,
//! Chinese, German and French; positives and hard negatives by kind) and the held-out pairs
//! beside it are measured by this crate's tests, which print precision and recall per kind and
//! by evidence, and fail under precision 0.98 or recall 0.90 (`testdata/README.md` says how
//! the sets were made and what their first runs changed).

#![warn(missing_docs)]

mod decide;
mod fingerprint;
mod guards;
mod keys;
mod link;
mod redirect;

pub use decide::{
    Apart, COMPARABLE_SHINGLES, Evidence, FRAME_SHINGLES, Measures, SUBSTANTIAL_SHINGLES,
    TEXT_CONFIRMED, TEXT_DISAGREE, TEXT_SAME, TITLE_SAME, TITLE_WITH_SHORT_TEXT, URL_TEXT_DISJOINT,
    VECTOR_CONFIRM, VECTOR_VETO, Verdict, same_story,
};
pub use fingerprint::{
    ANCHOR_TOKENS, Fingerprint, MAX_TEXT_CHARS, MAX_TITLE_CHARS, MIN_SPECIFIC_TITLE_TOKENS,
    SHINGLE_TOKENS, Story,
};
pub use keys::{
    ANCHOR_MODULUS, KeyKind, LookupKey, MAX_TEXT_KEYS, MIN_SHARED_TEXT_KEYS, lookup_keys,
    story_keys, worth_comparing,
};
pub use link::{canonical_url, is_site_root, is_tracking_parameter};

#[cfg(test)]
mod labelled;
