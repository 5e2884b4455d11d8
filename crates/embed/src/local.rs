//! The local embedder: no model and no key, so related items work on a fresh install.
//!
//! An item's vector is its weighted term frequencies folded into [`LOCAL_DIMS`] dimensions by
//! feature hashing (each token adds to one dimension chosen by its hash, with a sign from the
//! hash, so that collisions cancel out on average). Tokens are the search tokenizer's (words,
//! CJK bigrams), so Japanese and Chinese need no dictionary; stop words, hiragana-only bigrams
//! (particles and endings), numbers and one-letter words carry no weight. A term's weight is
//! `1 + ln(count)`, title tokens counting [`TITLE_WEIGHT`] times. Without a corpus there is no
//! inverse document frequency: the same text always gets the same vector, on every worker.

use std::collections::HashMap;
use std::future::Future;

use tidings_text::{TokenKind, tokenize};

use crate::vector::splitmix64;
use crate::{EmbedError, Embedder};

/// Dimensions of a local vector: 256 signed bytes per item stored.
pub const LOCAL_DIMS: usize = 256;
/// The model name of local vectors; a new weighting gets a new name, so items are re-embedded.
pub const LOCAL_MODEL: &str = "local-hash-256-v1";
/// How many times a title token counts.
pub const TITLE_WEIGHT: f32 = 2.0;
/// Characters of an item's text read (title included): the start of an article says what it
/// is about, and a provider charges by the token.
pub const MAX_TEXT_CHARS: usize = 4_000;

/// The text an item is embedded from: its title, a blank line, then its plain text, at most
/// [`MAX_TEXT_CHARS`] characters in all.
pub fn item_text(title: Option<&str>, text: Option<&str>) -> String {
    let title = title.unwrap_or_default().trim();
    let text = text.unwrap_or_default().trim();
    let joined = match (title.is_empty(), text.is_empty()) {
        (false, false) => format!("{title}\n\n{text}"),
        (false, true) => title.to_string(),
        _ => text.to_string(),
    };
    match joined.char_indices().nth(MAX_TEXT_CHARS) {
        Some((cut, _)) => joined[..cut].to_string(),
        None => joined,
    }
}

/// The local embedder ([module docs](self)).
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalEmbedder;

impl LocalEmbedder {
    /// The vector of `text` (as [`item_text`] builds it: the title is its first paragraph),
    /// of unit length; all zeros when nothing in it carries weight.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let (title, body) = match text.split_once("\n\n") {
            Some((title, body)) => (title, body),
            None => ("", text),
        };
        let mut counts: HashMap<String, f32> = HashMap::new();
        for (part, weight) in [(title, TITLE_WEIGHT), (body, 1.0)] {
            for token in tokenize(part) {
                if carries_weight(&token.text, token.kind) {
                    *counts.entry(token.text).or_default() += weight;
                }
            }
        }
        let mut vector = vec![0f32; LOCAL_DIMS];
        for (token, count) in counts {
            let hash = splitmix64(fnv1a(token.as_bytes()));
            let dimension = (hash % LOCAL_DIMS as u64) as usize;
            let sign = if hash >> 63 == 1 { -1.0 } else { 1.0 };
            vector[dimension] += sign * (1.0 + count.ln());
        }
        let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 {
            for v in &mut vector {
                *v /= norm;
            }
        }
        vector
    }
}

impl Embedder for LocalEmbedder {
    fn model(&self) -> &str {
        LOCAL_MODEL
    }

    fn max_batch(&self) -> usize {
        64
    }

    fn embed(
        &self,
        texts: &[String],
    ) -> impl Future<Output = Result<Vec<Vec<f32>>, EmbedError>> + Send {
        let vectors = texts.iter().map(|text| self.vector(text)).collect();
        std::future::ready(Ok(vectors))
    }
}

/// Whether a token says something about the text: not a stop word, a number, a letter alone
/// or a run of hiragana (Japanese particles and endings).
fn carries_weight(token: &str, kind: TokenKind) -> bool {
    match kind {
        TokenKind::Word => {
            token.chars().nth(1).is_some()
                && !token.chars().all(|c| c.is_numeric())
                && !tidings_tags::is_stop_word(token)
        }
        TokenKind::Unigram | TokenKind::Bigram => !token
            .chars()
            .all(|c| ('\u{3041}'..='\u{309F}').contains(&c)),
    }
}

/// FNV-1a over `bytes`: a stable hash (std's is seeded per process).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xCBF2_9CE4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01B3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::{cosine, quantize};

    fn similarity(a: &str, b: &str) -> f32 {
        let e = LocalEmbedder;
        cosine(&quantize(&e.vector(a)), &quantize(&e.vector(b)))
    }

    #[test]
    fn texts_on_one_subject_are_nearer_than_texts_on_others() {
        let rust = item_text(
            Some("Rust 1.80 released"),
            Some(
                "The Rust compiler gets LazyLock and exclusive range patterns in the new release.",
            ),
        );
        let rust2 = item_text(
            Some("What's new in the Rust compiler"),
            Some("LazyLock is stable; the release also brings range patterns to Rust."),
        );
        let cooking = item_text(
            Some("Sourdough at home"),
            Some("Feed the starter, fold the dough and bake it in a hot oven."),
        );
        assert!(
            similarity(&rust, &rust2) > 0.4,
            "{}",
            similarity(&rust, &rust2)
        );
        assert!(
            similarity(&rust, &cooking) < 0.2,
            "{}",
            similarity(&rust, &cooking)
        );
        assert!((similarity(&rust, &rust) - 1.0).abs() < 1e-3);
    }

    #[test]
    fn japanese_is_compared_by_its_bigrams_not_its_particles() {
        let a = item_text(
            Some("東京都知事選挙の結果"),
            Some("東京都知事選挙で現職が再選された。"),
        );
        let b = item_text(
            Some("都知事選挙、現職が勝利"),
            Some("東京都の知事選挙は現職の勝利に終わった。"),
        );
        let c = item_text(Some("大阪の天気"), Some("明日の大阪は雨のち晴れでしょう。"));
        assert!(similarity(&a, &b) > 0.3, "{}", similarity(&a, &b));
        assert!(similarity(&a, &c) < 0.15, "{}", similarity(&a, &c));
        // Particles alone carry nothing.
        assert!(LocalEmbedder.vector("のにはを").iter().all(|v| *v == 0.0));
    }

    #[test]
    fn stop_words_and_numbers_carry_no_weight() {
        assert!(
            LocalEmbedder
                .vector("the and of 2024 a")
                .iter()
                .all(|v| *v == 0.0)
        );
        let v = LocalEmbedder.vector("kubernetes");
        assert_eq!(v.len(), LOCAL_DIMS);
        assert!((v.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5);
    }

    #[test]
    fn item_text_joins_title_and_text_within_the_limit() {
        assert_eq!(item_text(Some(" Title "), Some(" body ")), "Title\n\nbody");
        assert_eq!(item_text(None, Some("body")), "body");
        assert_eq!(item_text(Some("t"), None), "t");
        let long = "語".repeat(MAX_TEXT_CHARS * 2);
        assert_eq!(item_text(None, Some(&long)).chars().count(), MAX_TEXT_CHARS);
    }

    #[test]
    fn the_trait_gives_one_vector_per_text() {
        let texts = vec!["rust compiler".to_string(), "sourdough".to_string()];
        let vectors = futures_lite_block_on(LocalEmbedder.embed(&texts)).unwrap();
        assert_eq!(vectors.len(), 2);
        assert_eq!(vectors[0], LocalEmbedder.vector("rust compiler"));
        assert_eq!(LocalEmbedder.model(), LOCAL_MODEL);
    }

    /// Polls a future that is ready at once (the local embedder's).
    fn futures_lite_block_on<F: Future>(future: F) -> F::Output {
        use std::task::{Context, Poll, Waker};
        let mut future = std::pin::pin!(future);
        match future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
        {
            Poll::Ready(output) => output,
            Poll::Pending => panic!("the local embedder never waits"),
        }
    }
}
