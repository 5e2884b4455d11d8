//! Words that are never part of a tag: function words, and the words every web page has.

use std::collections::HashSet;
use std::sync::LazyLock;

/// English function words and common verbs, adverbs and web words, case-folded.
const ENGLISH: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "ago",
    "all",
    "almost",
    "also",
    "am",
    "among",
    "an",
    "and",
    "another",
    "any",
    "anyone",
    "anything",
    "are",
    "aren't",
    "around",
    "as",
    "at",
    "away",
    "back",
    "be",
    "became",
    "because",
    "become",
    "been",
    "before",
    "being",
    "below",
    "best",
    "better",
    "between",
    "both",
    "but",
    "by",
    "can",
    "can't",
    "cannot",
    "could",
    "couldn't",
    "did",
    "didn't",
    "do",
    "does",
    "doesn't",
    "doing",
    "don't",
    "done",
    "down",
    "during",
    "each",
    "either",
    "else",
    "enough",
    "even",
    "ever",
    "every",
    "few",
    "first",
    "for",
    "from",
    "further",
    "get",
    "gets",
    "getting",
    "give",
    "given",
    "go",
    "goes",
    "going",
    "good",
    "got",
    "great",
    "had",
    "hadn't",
    "has",
    "hasn't",
    "have",
    "haven't",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "however",
    "i",
    "i'm",
    "i've",
    "if",
    "in",
    "into",
    "is",
    "isn't",
    "it",
    "it's",
    "its",
    "itself",
    "just",
    "last",
    "least",
    "less",
    "let",
    "let's",
    "like",
    "likely",
    "made",
    "make",
    "makes",
    "making",
    "many",
    "may",
    "maybe",
    "me",
    "might",
    "more",
    "most",
    "much",
    "must",
    "my",
    "myself",
    "need",
    "needs",
    "never",
    "new",
    "next",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "often",
    "on",
    "once",
    "one",
    "only",
    "or",
    "other",
    "others",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "per",
    "put",
    "rather",
    "really",
    "said",
    "same",
    "say",
    "says",
    "see",
    "seen",
    "several",
    "shall",
    "she",
    "should",
    "shouldn't",
    "since",
    "so",
    "some",
    "something",
    "still",
    "such",
    "take",
    "than",
    "that",
    "that's",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "there's",
    "these",
    "they",
    "thing",
    "things",
    "this",
    "those",
    "though",
    "through",
    "thus",
    "to",
    "today",
    "too",
    "two",
    "under",
    "until",
    "up",
    "upon",
    "us",
    "use",
    "used",
    "uses",
    "using",
    "very",
    "want",
    "was",
    "wasn't",
    "way",
    "we",
    "we're",
    "well",
    "were",
    "weren't",
    "what",
    "when",
    "where",
    "whether",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "within",
    "without",
    "won't",
    "would",
    "wouldn't",
    "yes",
    "yet",
    "you",
    "you're",
    "your",
    "yours",
    "yourself",
    "yourselves",
    // Generic nouns, adjectives, adverbs and verb forms that describe no topic.
    "able",
    "actually",
    "along",
    "already",
    "always",
    "anyway",
    "big",
    "bit",
    "came",
    "come",
    "comes",
    "coming",
    "day",
    "days",
    "early",
    "end",
    "everyone",
    "everything",
    "far",
    "felt",
    "find",
    "gave",
    "hour",
    "hours",
    "instead",
    "keep",
    "kept",
    "kind",
    "knew",
    "know",
    "known",
    "large",
    "later",
    "long",
    "look",
    "looking",
    "looks",
    "lot",
    "lots",
    "minute",
    "minutes",
    "month",
    "months",
    "nothing",
    "ok",
    "okay",
    "old",
    "part",
    "people",
    "probably",
    "real",
    "saw",
    "seem",
    "seems",
    "small",
    "someone",
    "soon",
    "sort",
    "sure",
    "taken",
    "tell",
    "think",
    "thought",
    "time",
    "times",
    "told",
    "took",
    "true",
    "try",
    "trying",
    "usually",
    "week",
    "weeks",
    "went",
    "year",
    "years",
    // What feeds and pages say about themselves.
    "article",
    "blog",
    "click",
    "com",
    "comments",
    "continue",
    "html",
    "http",
    "https",
    "link",
    "org",
    "page",
    "post",
    "posted",
    "read",
    "reading",
    "share",
    "via",
    "www",
];

/// German function words, case-folded.
const GERMAN: &[&str] = &[
    "aber", "alle", "allem", "allen", "aller", "alles", "als", "also", "am", "an", "ander",
    "andere", "anderen", "auch", "auf", "aus", "bei", "beim", "bereits", "bin", "bis", "bist",
    "da", "dabei", "damit", "dann", "darauf", "das", "dass", "dem", "den", "denn", "der", "des",
    "dessen", "deshalb", "die", "dies", "diese", "diesem", "diesen", "dieser", "dieses", "doch",
    "dort", "du", "durch", "ein", "eine", "einem", "einen", "einer", "eines", "er", "es", "etwa",
    "etwas", "euch", "euer", "für", "gegen", "gibt", "hat", "hatte", "haben", "hier", "hin",
    "hinter", "ich", "ihr", "ihre", "ihrem", "ihren", "ihrer", "im", "immer", "in", "ins", "ist",
    "ja", "jede", "jedem", "jeden", "jeder", "jedes", "jetzt", "kann", "kein", "keine", "können",
    "könnte", "man", "mehr", "mein", "meine", "mit", "muss", "nach", "neue", "neuen", "neues",
    "nicht", "nichts", "noch", "nun", "nur", "ob", "oder", "ohne", "schon", "sehr", "sein",
    "seine", "seinem", "seinen", "seiner", "sich", "sie", "sind", "so", "soll", "sollen", "sowie",
    "über", "um", "und", "uns", "unser", "unter", "viel", "viele", "vom", "von", "vor", "war",
    "waren", "was", "weil", "wenn", "wer", "werden", "wie", "wieder", "will", "wir", "wird", "wo",
    "wurde", "wurden", "zu", "zum", "zur", "zwischen",
];

/// French function words, case-folded.
const FRENCH: &[&str] = &[
    "au", "aux", "avec", "ce", "ces", "cette", "dans", "de", "des", "du", "elle", "en", "est",
    "et", "il", "ils", "je", "la", "le", "les", "leur", "lui", "mais", "nous", "ou", "par", "pas",
    "plus", "pour", "qu", "que", "qui", "sa", "se", "ses", "son", "sont", "sur", "un", "une",
    "vous",
];

/// Japanese nouns too general to be a tag. Words of hiragana only are never tags anyway.
const JAPANESE: &[&str] = &[
    "今回",
    "今日",
    "今年",
    "昨日",
    "明日",
    "本日",
    "場合",
    "以上",
    "以下",
    "自分",
    "必要",
    "可能",
    "予定",
    "記事",
    "内容",
    "関連",
    "最近",
    "一部",
    "全部",
    "部分",
    "方法",
    "理由",
    "結果",
    "状態",
    "感じ",
    "時間",
    "問題",
    "紹介",
    "詳細",
    "コト",
    "モノ",
    "ページ",
    "ブログ",
    "サイト",
    "リンク",
    "毎日",
    "毎年",
    "現在",
    "一方",
    "全体",
];

/// Every list in one set, made on first use.
static STOP_WORDS: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    [ENGLISH, GERMAN, FRENCH, JAPANESE]
        .into_iter()
        .flatten()
        .copied()
        .collect()
});

/// Numerals written in kanji.
const KANJI_NUMERALS: &str = "〇零一二三四五六七八九十百千万億";
/// Units of time and counting that follow a kanji numeral in a date or a duration.
const KANJI_UNITS: &str = "年月日週間時分秒半前後頃毎回度個人";

/// Whether a CJK word is a count, date or duration in kanji (`一週間`, `三月二十日`, `二年`):
/// only numerals and units, at least one of each, starting with a numeral. The segmenter
/// cuts these out of ordinary sentences, and they describe no topic.
pub(crate) fn is_count_or_date(word: &str) -> bool {
    let mut chars = word.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    KANJI_NUMERALS.contains(first)
        && word.chars().any(|c| KANJI_UNITS.contains(c))
        && word
            .chars()
            .all(|c| KANJI_NUMERALS.contains(c) || KANJI_UNITS.contains(c))
}

/// Counters whose number was written in digits, which the segmenter leaves apart
/// (`4 年目`, `10 周年`, `3 ヶ月`): no topic alone.
const BARE_COUNTERS: &[&str] = &["周年", "ヶ月", "カ月", "か月", "年ぶり"];

/// Whether a CJK word is a counter left without its number: an ordinal of units (`年目`,
/// `回目`, `人目`: units ending in 目) or one of [`BARE_COUNTERS`]. A number in digits is a
/// word of its own, so `is_count_or_date` never sees these with theirs.
pub(crate) fn is_bare_counter(word: &str) -> bool {
    if BARE_COUNTERS.contains(&word) {
        return true;
    }
    let count = word.chars().count();
    count >= 2
        && word.ends_with('目')
        && word
            .chars()
            .take(count - 1)
            .all(|c| KANJI_UNITS.contains(c))
}

/// Whether an English word (case-folded) looks like a regular past tense (`waited`): at
/// least six letters (not `embed`) ending in `ed` but not `eed` (`feed`, `speed`). Such a
/// word alone describes no topic, though it may start a phrase (`distributed systems`).
pub(crate) fn looks_past_tense(word: &str) -> bool {
    word.len() >= 6 && word.is_ascii() && word.ends_with("ed") && !word.ends_with("eed")
}

/// Whether `word` (case-folded) is a stop word of any language the extractor knows.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_without_their_number_are_no_topic() {
        for counter in ["年目", "回目", "人目", "日目", "周年", "ヶ月"] {
            assert!(is_bare_counter(counter), "{counter}");
        }
        for word in ["目標", "人間", "年金", "注目", "駅長", "目"] {
            assert!(!is_bare_counter(word), "{word}");
        }
    }

    #[test]
    fn lists_are_folded() {
        for list in [ENGLISH, GERMAN, FRENCH, JAPANESE] {
            for word in list.iter() {
                assert_eq!(
                    crate::normalize_tag(word).as_deref(),
                    Some(*word),
                    "{word} is not in its folded form"
                );
            }
        }
        assert!(is_stop_word("the"));
        assert!(is_stop_word("und"));
        assert!(is_stop_word("場合"));
        assert!(!is_stop_word("rust"));
    }

    #[test]
    fn counts_and_dates_in_kanji_are_no_topic() {
        for word in ["一週", "一週間", "二年", "三月二十日", "十五分", "百年前"] {
            assert!(is_count_or_date(word), "{word}");
        }
        for word in ["東京", "一般", "万博", "図書館", "年金", "時間", "三井"] {
            assert!(!is_count_or_date(word), "{word}");
        }
    }

    #[test]
    fn past_tense_verbs_are_told_apart_from_feeds() {
        for word in ["waited", "released", "stopped"] {
            assert!(looks_past_tense(word), "{word}");
        }
        for word in ["feed", "speed", "red", "embed", "need"] {
            assert!(!looks_past_tense(word), "{word}");
        }
    }
}
