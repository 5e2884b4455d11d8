//! Relevance order: one scoring function (BM25) over index token streams, so that every storage
//! engine ranks the same candidates in the same order. The engines only supply the inputs:
//! each candidate's tokens (re-made from its text by [`crate::index_tokens`], exactly what the
//! index holds) and how many documents of a sample contain each term.

use crate::SearchQuery;

/// BM25's saturation of term frequency: the tenth occurrence of a word adds little.
pub const K1: f64 = 1.2;
/// BM25's length normalization: 0 ignores a document's length, 1 divides by it fully.
pub const B: f64 = 0.75;

/// Document frequencies of a query's required terms in a sample of the collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermStatistics {
    /// Documents in the sample.
    pub documents: u64,
    /// For each required term of the query, in the query's order, the documents of the
    /// sample that contain it.
    pub containing: Vec<u64>,
}

impl TermStatistics {
    /// The inverse document frequency of required term `k` (BM25's, which stays positive for
    /// a term in every document): rarer terms weigh more.
    fn idf(&self, k: usize) -> f64 {
        let n = self.documents as f64;
        let df = self
            .containing
            .get(k)
            .copied()
            .unwrap_or(0)
            .min(self.documents) as f64;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }
}

/// How often each required term of `query` occurs in `tokens` (an index token stream), in
/// the query's order: a phrase counts where all its tokens follow one another.
pub fn term_frequencies(query: &SearchQuery, tokens: &[String]) -> Vec<u32> {
    query
        .required()
        .map(|term| term.occurrences(tokens) as u32)
        .collect()
}

/// The positions in `documents` (index token streams of candidates that match `query`), best
/// match first by BM25 over the required terms, with `statistics` for the terms' weights and
/// the candidates' mean length as the typical length. Ties keep the candidates' order, so a
/// caller that lists them newest first gets the newest of equal matches first.
pub fn rank(
    query: &SearchQuery,
    documents: &[Vec<String>],
    statistics: &TermStatistics,
) -> Vec<usize> {
    let scores = scores(query, documents, statistics);
    let mut order: Vec<usize> = (0..documents.len()).collect();
    // Stable: equal scores keep their order.
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    order
}

/// The BM25 score of each of `documents` for `query` (see [`rank`]).
pub fn scores(
    query: &SearchQuery,
    documents: &[Vec<String>],
    statistics: &TermStatistics,
) -> Vec<f64> {
    if documents.is_empty() {
        return Vec::new();
    }
    let total: usize = documents.iter().map(Vec::len).sum();
    let mean_length = (total as f64 / documents.len() as f64).max(1.0);
    let weights: Vec<f64> = (0..query.required().count())
        .map(|k| statistics.idf(k))
        .collect();
    documents
        .iter()
        .map(|tokens| {
            let norm = K1 * (1.0 - B + B * tokens.len() as f64 / mean_length);
            term_frequencies(query, tokens)
                .iter()
                .zip(&weights)
                .map(|(&tf, weight)| {
                    let tf = f64::from(tf);
                    weight * tf * (K1 + 1.0) / (tf + norm)
                })
                .sum()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index_tokens;

    fn q(text: &str) -> SearchQuery {
        SearchQuery::parse(text).unwrap()
    }

    fn stats(documents: u64, containing: &[u64]) -> TermStatistics {
        TermStatistics {
            documents,
            containing: containing.to_vec(),
        }
    }

    #[test]
    fn frequencies_of_words_phrases_and_prefixes() {
        let doc =
            index_tokens("Rust, rust and RUST. Open source: open source software. 東京と東北");
        assert_eq!(term_frequencies(&q("rust"), &doc), [3]);
        assert_eq!(term_frequencies(&q("\"open source\" -rust"), &doc), [2]);
        assert_eq!(term_frequencies(&q("\"software open\""), &doc), [0]);
        // 東京 and 東北 start with 東; a CJK word is a phrase of bigrams.
        assert_eq!(term_frequencies(&q("東 東京"), &doc), [2, 1]);
        assert_eq!(term_frequencies(&q("absent"), &doc), [0]);
    }

    #[test]
    fn more_occurrences_and_shorter_documents_rank_higher() {
        let docs: Vec<Vec<String>> = [
            "rust once in a rather long text about many other things entirely",
            "rust rust rust",
            "rust twice rust",
            "rust once",
        ]
        .iter()
        .map(|t| index_tokens(t))
        .collect();
        assert_eq!(rank(&q("rust"), &docs, &stats(100, &[10])), [1, 2, 3, 0]);
        // No candidates, no order; a term in every document still weighs something.
        assert!(rank(&q("rust"), &[], &stats(0, &[0])).is_empty());
        assert!(stats(10, &[10]).idf(0) > 0.0);
    }

    #[test]
    fn rarer_terms_weigh_more_and_ties_keep_the_given_order() {
        let docs: Vec<Vec<String>> = [
            "common common rare",
            "common rare rare",
            "rare common other",
        ]
        .iter()
        .map(|t| index_tokens(t))
        .collect();
        // "rare" is in 1 document of 1,000 and "common" in 900: two "rare" win.
        assert_eq!(
            rank(&q("common rare"), &docs, &stats(1000, &[900, 1])),
            [1, 0, 2]
        );
        // The other way round, two "common" win.
        assert_eq!(
            rank(&q("common rare"), &docs, &stats(1000, &[1, 900])),
            [0, 1, 2]
        );
        // Equal documents keep their order.
        let same: Vec<Vec<String>> = (0..3).map(|_| index_tokens("rust")).collect();
        assert_eq!(rank(&q("rust"), &same, &stats(10, &[1])), [0, 1, 2]);
        // Missing statistics weigh the terms alike: the first two tie and keep their order.
        assert_eq!(rank(&q("common rare"), &docs, &stats(0, &[])), [0, 1, 2]);
    }
}
