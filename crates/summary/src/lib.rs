//! tidings' built-in summarizer (F42): the provider that needs no key, no model and no
//! network, and so works on a fresh install.
//!
//! It is extractive: it picks the article's most central sentences and gives them back in
//! their order, verbatim, within a target length. Centrality is TextRank (a PageRank over the
//! sentences, linked by the tokens they share), with a prior that favours early sentences,
//! since news and blog posts put their point first. Tokens are the search tokenizer's
//! ([`tidings_text::tokenize`]): words for space-separated scripts and character bigrams for
//! Japanese, Chinese and Korean, so the same ranking works in every language.

#![warn(missing_docs)]

mod sentences;

use std::collections::{HashMap, HashSet};

pub use sentences::{Sentence, split_sentences};

/// The summary length used when none is chosen, in characters (as in the catchup-feed seed).
pub const DEFAULT_TARGET_CHARS: usize = 900;
/// The shortest summary that may be asked for, in characters.
pub const MIN_TARGET_CHARS: usize = 100;
/// The longest summary that may be asked for, in characters.
pub const MAX_TARGET_CHARS: usize = 5_000;

/// At most this many sentences are ranked: the ranking is quadratic in their number, and an
/// article's point is in its first few hundred sentences.
const MAX_RANKED_SENTENCES: usize = 300;
/// PageRank's damping factor and iteration count (the values of the TextRank paper).
const DAMPING: f64 = 0.85;
const ITERATIONS: usize = 30;

/// A summary and how it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The summary's text: whole sentences of the input, in their order.
    pub text: String,
    /// How many sentences of the input it keeps.
    pub sentences_kept: usize,
    /// How many sentences the input has.
    pub sentences_total: usize,
}

/// Summarizes plain `text` (not markup) in at most `target_chars` characters, clamped to
/// [`MIN_TARGET_CHARS`]..=[`MAX_TARGET_CHARS`]. A text that already fits is returned whole
/// (its white space tidied); a text whose best sentence alone is too long gives that sentence
/// cut at a word boundary, with `…`.
pub fn summarize(text: &str, target_chars: usize) -> Summary {
    let target = target_chars.clamp(MIN_TARGET_CHARS, MAX_TARGET_CHARS);
    let sentences = split_sentences(text);
    let total = sentences.len();
    if sentences.is_empty() {
        return Summary {
            text: String::new(),
            sentences_kept: 0,
            sentences_total: 0,
        };
    }
    let all: Vec<&str> = sentences.iter().map(|s| s.text(text)).collect();
    if joined_len(&all) <= target {
        return Summary {
            text: join(&all),
            sentences_kept: total,
            sentences_total: total,
        };
    }
    let ranked = &all[..total.min(MAX_RANKED_SENTENCES)];
    let scores = rank_sentences(ranked);
    let mut order: Vec<usize> = (0..ranked.len()).collect();
    // Best first; ties go to the earlier sentence, so the result is deterministic.
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));

    let mut chosen: Vec<usize> = Vec::new();
    let mut length = 0;
    for &index in &order {
        let sentence = ranked[index];
        let added = sentence.chars().count() + usize::from(!chosen.is_empty());
        if length + added <= target {
            chosen.push(index);
            length += added;
        }
    }
    if chosen.is_empty() {
        return Summary {
            text: cut(ranked[order[0]], target),
            sentences_kept: 1,
            sentences_total: total,
        };
    }
    chosen.sort_unstable();
    let kept: Vec<&str> = chosen.iter().map(|&i| ranked[i]).collect();
    Summary {
        text: join(&kept),
        sentences_kept: kept.len(),
        sentences_total: total,
    }
}

/// TextRank scores of `sentences`, one per sentence, summing to about 1.
fn rank_sentences(sentences: &[&str]) -> Vec<f64> {
    let n = sentences.len();
    let token_sets: Vec<HashSet<String>> = sentences
        .iter()
        .map(|s| {
            tidings_text::tokenize(s)
                .into_iter()
                .map(|t| t.text)
                .collect()
        })
        .collect();
    // Tokens in most sentences ("the", "です") link everything to everything: weigh each
    // shared token by its rarity across the sentences (inverse sentence frequency).
    let mut sentence_frequency: HashMap<&str, usize> = HashMap::new();
    for set in &token_sets {
        for token in set {
            *sentence_frequency.entry(token.as_str()).or_default() += 1;
        }
    }
    let rarity = |token: &str| {
        let df = sentence_frequency.get(token).copied().unwrap_or(1) as f64;
        (n as f64 / df).ln().max(0.0) + 0.1
    };
    // Edge weights: the original paper's overlap, normalized by the sentences' lengths
    // (log, so long sentences are not favoured for being long).
    let mut weights = vec![vec![0.0f64; n]; n];
    for i in 0..n {
        for j in (i + 1)..n {
            let (small, large) = if token_sets[i].len() <= token_sets[j].len() {
                (&token_sets[i], &token_sets[j])
            } else {
                (&token_sets[j], &token_sets[i])
            };
            let shared: f64 = small
                .iter()
                .filter(|t| large.contains(*t))
                .map(|t| rarity(t))
                .sum();
            if shared == 0.0 {
                continue;
            }
            let norm =
                ((token_sets[i].len() + 1) as f64).ln() + ((token_sets[j].len() + 1) as f64).ln();
            let weight = shared / norm.max(1.0);
            weights[i][j] = weight;
            weights[j][i] = weight;
        }
    }
    let out_weight: Vec<f64> = weights.iter().map(|row| row.iter().sum()).collect();
    // The teleport prior: earlier sentences are likelier to carry the point (1/sqrt(position)).
    let prior_raw: Vec<f64> = (0..n).map(|i| 1.0 / ((i + 1) as f64).sqrt()).collect();
    let prior_sum: f64 = prior_raw.iter().sum();
    let prior: Vec<f64> = prior_raw.iter().map(|p| p / prior_sum).collect();
    // A sentence with very few tokens (a date line, "Read more") says little on its own.
    let substance: Vec<f64> = token_sets
        .iter()
        .map(|set| (set.len() as f64 / 4.0).min(1.0))
        .collect();

    let mut scores = prior.clone();
    for _ in 0..ITERATIONS {
        let mut next = vec![0.0; n];
        for (j, row) in weights.iter().enumerate() {
            if out_weight[j] == 0.0 {
                // A sentence linked to nothing hands its score back through the prior.
                for (i, value) in next.iter_mut().enumerate() {
                    *value += DAMPING * scores[j] * prior[i];
                }
                continue;
            }
            for (i, weight) in row.iter().enumerate() {
                if *weight > 0.0 {
                    next[i] += DAMPING * scores[j] * weight / out_weight[j];
                }
            }
        }
        for (i, value) in next.iter_mut().enumerate() {
            *value += (1.0 - DAMPING) * prior[i];
        }
        scores = next;
    }
    scores.iter().zip(&substance).map(|(s, w)| s * w).collect()
}

/// Whether a sentence is written in a script that needs no space between sentences.
fn ends_without_space(sentence: &str) -> bool {
    sentence.chars().last().is_some_and(|c| {
        tidings_text::is_cjk(c) || matches!(c, '。' | '！' | '？' | '」' | '』' | '）')
    })
}

/// The sentences joined as they would be written: no space after a CJK sentence.
fn join(sentences: &[&str]) -> String {
    let mut out = String::new();
    for (i, sentence) in sentences.iter().enumerate() {
        if i > 0 && !ends_without_space(sentences[i - 1]) {
            out.push(' ');
        }
        out.push_str(sentence);
    }
    out
}

/// The length in characters of [`join`]'s result, counting a separator between every two
/// sentences (an upper bound when some need none).
fn joined_len(sentences: &[&str]) -> usize {
    sentences.iter().map(|s| s.chars().count()).sum::<usize>() + sentences.len().saturating_sub(1)
}

/// `sentence` cut to at most `limit` characters including the closing `…`, at the last word
/// boundary when there is one in the second half (CJK text is cut between characters).
fn cut(sentence: &str, limit: usize) -> String {
    let keep = limit.saturating_sub(1);
    let head: String = sentence.chars().take(keep).collect();
    let boundary = head
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map(|(i, _)| i)
        .filter(|&i| head[..i].chars().count() * 2 >= keep);
    let mut out = match boundary {
        Some(i) => head[..i].trim_end().to_string(),
        None => head,
    };
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEWS: &str = "The city council approved a new tram line on Tuesday, connecting the \
        airport to the central station by 2029. The tram line will cost 1.2 billion euros, \
        most of it paid by the national government. Construction of the tram line starts next \
        spring near the airport. Some residents near the central station worry about noise \
        during construction. The council also discussed the budget for public libraries. \
        A bakery on Main Street celebrated its 50th anniversary. The weather was sunny. \
        Officials said the tram line would carry 40,000 passengers a day between the airport \
        and the central station. Read more on our website.";

    #[test]
    fn keeps_the_central_sentences_in_their_order_within_the_target() {
        let summary = summarize(NEWS, 300);
        assert!(summary.text.chars().count() <= 300, "{}", summary.text);
        assert!(
            summary
                .text
                .starts_with("The city council approved a new tram line"),
            "{}",
            summary.text
        );
        assert!(summary.text.contains("tram line"));
        // The off-topic sentences are what a summary leaves out.
        assert!(!summary.text.contains("bakery"), "{}", summary.text);
        assert!(!summary.text.contains("weather"), "{}", summary.text);
        assert!(!summary.text.contains("Read more"), "{}", summary.text);
        assert!(summary.sentences_kept >= 2 && summary.sentences_kept < summary.sentences_total);
        // Whole sentences of the input, in the input's order.
        let mut from = 0;
        for sentence in split_sentences(&summary.text) {
            let found = NEWS[from..]
                .find(sentence.text(&summary.text))
                .expect("verbatim");
            from += found;
        }
    }

    #[test]
    fn japanese_articles_are_split_and_ranked_too() {
        let text = "東京都は新しい地下鉄路線の建設を発表した。新しい地下鉄路線は2030年に開業する予定だ。\
            建設費は約5000億円と見込まれている。駅前の商店街では期待の声が上がっている。\
            一方で、工事中の騒音を心配する住民もいる。今日の東京は晴れだった。\
            都の担当者は「新しい地下鉄路線で通勤時間が短くなる」と話した。";
        let summary = summarize(text, 100);
        assert!(summary.text.chars().count() <= 100, "{}", summary.text);
        assert!(
            summary
                .text
                .starts_with("東京都は新しい地下鉄路線の建設を発表した。"),
            "{}",
            summary.text
        );
        assert!(!summary.text.contains("晴れ"), "{}", summary.text);
        // Japanese sentences are joined without spaces.
        assert!(!summary.text.contains("。 "), "{}", summary.text);
    }

    #[test]
    fn a_text_that_fits_is_returned_whole_and_tidied() {
        let summary = summarize("  One short post.\n\nWith two lines.  ", 900);
        assert_eq!(summary.text, "One short post. With two lines.");
        assert_eq!((summary.sentences_kept, summary.sentences_total), (2, 2));
    }

    #[test]
    fn an_empty_text_has_an_empty_summary() {
        assert_eq!(summarize("", 900).text, "");
        assert_eq!(summarize(" \n … \n", 900).sentences_total, 0);
    }

    #[test]
    fn one_sentence_longer_than_the_target_is_cut_at_a_word() {
        let long = format!("{} end.", "word ".repeat(100));
        let summary = summarize(&long, 120);
        assert!(summary.text.ends_with('…'));
        assert!(summary.text.chars().count() <= 120);
        assert!(summary.text.trim_end_matches('…').ends_with("word"));
        let japanese = "あ".repeat(300) + "。";
        let cut = summarize(&japanese, 100).text;
        assert_eq!(cut.chars().count(), 100);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn the_target_is_clamped_to_its_bounds() {
        let long = NEWS.repeat(20);
        assert!(summarize(&long, 10).text.chars().count() <= MIN_TARGET_CHARS);
        assert!(summarize(&long, 1_000_000).text.chars().count() <= MAX_TARGET_CHARS);
    }

    #[test]
    fn the_same_text_gives_the_same_summary() {
        assert_eq!(summarize(NEWS, 250), summarize(NEWS, 250));
    }

    #[test]
    fn a_huge_article_is_summarized_from_its_first_sentences() {
        let sentence = "Sentence about a topic with several words in it. ";
        let huge = sentence.repeat(10_000);
        let summary = summarize(&huge, 900);
        assert_eq!(summary.sentences_total, 10_000);
        assert!(summary.text.chars().count() <= 900);
    }
}
