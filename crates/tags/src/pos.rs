//! A part-of-speech step per language: which words alone are verbs, adjectives or adverbs,
//! and so no tags ("adds", "faster", "ship"), while names and noun phrases are. It runs when
//! the item's language is known (English or Japanese); other languages, and items whose
//! language is unknown, are tagged as before.
//!
//! No model: a tagger for English (a perceptron or an HMM with its weights) is megabytes of
//! data and a per-word cost for a step that only has to say "not a noun" about a few
//! hundred frequent words. Instead:
//! - **English:** compact lexicons of the verbs and adjectives news and blog text uses, with
//!   their inflections recognised by suffix (`adds`, `shipped`, `making`; `faster`,
//!   `biggest`, `easier`), and adverbs in `-ly`. A word written capitalized mid-sentence is a
//!   name and keeps its place (`Ship` as a product's name).
//! - **Japanese:** TinySegmenter has no dictionary and so no part of speech; but what follows
//!   a kanji or katakana word says it: a verbal noun used as a verb is followed by する
//!   and its forms (`発表した`: `発表` `し` `た`), an adjectival noun by な (`新たな`).
//!   A word that is used so every time it appears is no tag; also adjectival nouns of a
//!   short list (`大幅`, `新た`) and words in -的 (`技術的`) alone.

use std::collections::HashSet;
use std::sync::LazyLock;

/// The languages with a part-of-speech step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pos {
    /// English (`en`, `en-GB`).
    English,
    /// Japanese (`ja`).
    Japanese,
    /// Any other language, or none known: no step.
    None,
}

impl Pos {
    /// The step for an item in `language` (a BCP 47 tag).
    pub(crate) fn of(language: Option<&str>) -> Pos {
        let primary = language
            .and_then(|tag| tag.split(['-', '_']).next())
            .map(str::to_ascii_lowercase);
        match primary.as_deref() {
            Some("en") => Pos::English,
            Some("ja") => Pos::Japanese,
            _ => Pos::None,
        }
    }
}

/// Verbs that are (almost) never nouns: any form of one, anywhere in a phrase, makes it no
/// noun phrase (`rust adds`, `adds support`).
const VERBS: &[&str] = &[
    "accept",
    "achieve",
    "acquire",
    "add",
    "admit",
    "adopt",
    "agree",
    "allow",
    "announce",
    "appear",
    "apply",
    "approve",
    "argue",
    "arrive",
    "ask",
    "assume",
    "avoid",
    "become",
    "begin",
    "believe",
    "belong",
    "bring",
    "carry",
    "celebrate",
    "choose",
    "cite",
    "collect",
    "complain",
    "complete",
    "confirm",
    "consider",
    "contain",
    "continue",
    "create",
    "decide",
    "declare",
    "deliver",
    "deny",
    "depend",
    "describe",
    "destroy",
    "detect",
    "develop",
    "die",
    "disagree",
    "discover",
    "discuss",
    "disrupt",
    "earn",
    "enable",
    "encourage",
    "ensure",
    "enter",
    "erupt",
    "examine",
    "exceed",
    "expand",
    "expect",
    "explain",
    "explore",
    "extend",
    "fail",
    "feel",
    "follow",
    "forget",
    "get",
    "give",
    "grow",
    "happen",
    "hear",
    "hide",
    "hire",
    "identify",
    "ignore",
    "improve",
    "include",
    "install",
    "intend",
    "introduce",
    "invite",
    "join",
    "keep",
    "kill",
    "knock",
    "know",
    "learn",
    "leave",
    "let",
    "lose",
    "lower",
    "maintain",
    "make",
    "manage",
    "mean",
    "mention",
    "merge",
    "miss",
    "notice",
    "obtain",
    "occur",
    "own",
    "parse",
    "perform",
    "persuade",
    "prefer",
    "prepare",
    "prevent",
    "produce",
    "promise",
    "propose",
    "protect",
    "prove",
    "provide",
    "publish",
    "put",
    "quit",
    "raise",
    "reach",
    "read",
    "realize",
    "receive",
    "recommend",
    "reduce",
    "refuse",
    "reject",
    "rely",
    "remain",
    "remember",
    "remove",
    "reopen",
    "replace",
    "require",
    "resign",
    "retire",
    "reveal",
    "revive",
    "say",
    "see",
    "seek",
    "seem",
    "sell",
    "send",
    "serve",
    "settle",
    "slash",
    "solve",
    "speak",
    "spend",
    "stabilise",
    "stabilize",
    "succeed",
    "sue",
    "suggest",
    "suppose",
    "take",
    "tell",
    "tend",
    "thank",
    "think",
    "throw",
    "try",
    "understand",
    "unveil",
    "urge",
    "vow",
    "want",
    "warn",
    "weaken",
    "win",
    "wonder",
    "write",
];

/// Verbs that are nouns as often: no tag alone (`launch`, `update`, `cut`), but a phrase may
/// end in one (`security update`, `job cuts`).
const NOUN_VERBS: &[&str] = &[
    "ban", "beat", "boost", "break", "build", "cache", "call", "cancel", "catch", "change",
    "charge", "chat", "check", "claim", "close", "copy", "cover", "cut", "debut", "delay",
    "download", "drive", "drop", "ease", "end", "face", "fall", "fight", "fit", "fix", "flood",
    "fly", "force", "gain", "help", "hit", "hold", "hope", "import", "increase", "launch", "lead",
    "lie", "limit", "live", "look", "love", "meet", "move", "offer", "open", "pick", "plan",
    "plant", "play", "present", "pull", "push", "recall", "release", "report", "rescue", "return",
    "rise", "roll", "rollout", "run", "sack", "save", "set", "ship", "show", "sign", "sit", "slip",
    "speed", "spot", "spread", "stand", "start", "stay", "step", "stop", "store", "strike",
    "struggle", "support", "surprise", "swap", "switch", "talk", "target", "test", "travel",
    "treat", "triumph", "turn", "update", "use", "vote", "wait", "walk", "watch", "wish", "work",
    "worry",
];

/// Irregular forms of the verbs above.
const IRREGULAR_VERB_FORMS: &[&str] = &[
    "began",
    "begun",
    "brought",
    "built",
    "chose",
    "chosen",
    "drove",
    "driven",
    "fell",
    "fallen",
    "felt",
    "fought",
    "found",
    "gave",
    "given",
    "got",
    "gotten",
    "grew",
    "grown",
    "heard",
    "held",
    "hid",
    "hidden",
    "kept",
    "knew",
    "known",
    "led",
    "left",
    "lost",
    "made",
    "meant",
    "met",
    "paid",
    "ran",
    "rose",
    "risen",
    "said",
    "sat",
    "saw",
    "seen",
    "sent",
    "sold",
    "spent",
    "spoke",
    "spoken",
    "stood",
    "struck",
    "taught",
    "thought",
    "threw",
    "thrown",
    "told",
    "took",
    "understood",
    "won",
    "wrote",
    "written",
];

/// Adjectives, in their plain form; comparatives and superlatives are recognised by suffix.
const ADJECTIVES: &[&str] = &[
    "able",
    "actual",
    "asynchronous",
    "available",
    "bad",
    "big",
    "bright",
    "broad",
    "busy",
    "calm",
    "central",
    "cheap",
    "clean",
    "clear",
    "close",
    "cold",
    "common",
    "complex",
    "constant",
    "cool",
    "crucial",
    "current",
    "dark",
    "dead",
    "deep",
    "different",
    "difficult",
    "distant",
    "dry",
    "due",
    "easy",
    "empty",
    "entire",
    "essential",
    "exact",
    "expensive",
    "extra",
    "fair",
    "false",
    "familiar",
    "famous",
    "fast",
    "fat",
    "federal",
    "fine",
    "firm",
    "flat",
    "forgotten",
    "former",
    "free",
    "fresh",
    "full",
    "gentle",
    "global",
    "great",
    "happy",
    "hard",
    "healthy",
    "heavy",
    "high",
    "hot",
    "huge",
    "important",
    "impossible",
    "independent",
    "large",
    "late",
    "latest",
    "likely",
    "little",
    "local",
    "logarithmic",
    "long",
    "loud",
    "low",
    "main",
    "major",
    "minor",
    "mobile",
    "modern",
    "modular",
    "narrow",
    "native",
    "near",
    "nearly",
    "necessary",
    "nice",
    "noisy",
    "normal",
    "obvious",
    "official",
    "old",
    "original",
    "particular",
    "plain",
    "poor",
    "popular",
    "possible",
    "practical",
    "previous",
    "proper",
    "public",
    "quick",
    "quiet",
    "rare",
    "ready",
    "recent",
    "regular",
    "rich",
    "safe",
    "separate",
    "sequential",
    "serious",
    "sharp",
    "short",
    "significant",
    "similar",
    "simple",
    "slow",
    "small",
    "smart",
    "smooth",
    "soft",
    "special",
    "standard",
    "strange",
    "strict",
    "strong",
    "sudden",
    "tall",
    "thick",
    "thin",
    "tiny",
    "tired",
    "tough",
    "typical",
    "unable",
    "unusual",
    "useful",
    "various",
    "virtual",
    "warm",
    "weak",
    "whole",
    "wide",
    "wild",
    "wrong",
    "young",
];

/// English words that are no topic wherever they stand: prepositions and adverbs the stop
/// list lacks, numerals, and the days and months (a date, as `三月二十日` in Japanese).
const NO_TOPIC: &[&str] = &[
    "across",
    "ago",
    "ahead",
    "alone",
    "amid",
    "apart",
    "based",
    "behind",
    "beyond",
    "despite",
    "downtown",
    "earlier",
    "inside",
    "onto",
    "outside",
    "overnight",
    "past",
    "toward",
    "towards",
    "tomorrow",
    "tonight",
    "yesterday",
    "zero",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "hundred",
    "hundreds",
    "thousand",
    "thousands",
    "million",
    "millions",
    "billion",
    "billions",
    "trillion",
    "dozen",
    "dozens",
    "half",
    "third",
    "fourth",
    "fifth",
    "percent",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "mondays",
    "tuesdays",
    "wednesdays",
    "thursdays",
    "fridays",
    "saturdays",
    "sundays",
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Nouns with an adjective's ending (see [`looks_adjective`]).
const NOT_ADJECTIVES: &[&str] = &[
    "alternative",
    "archive",
    "collective",
    "constable",
    "detective",
    "directive",
    "executive",
    "explosive",
    "incentive",
    "initiative",
    "narrative",
    "objective",
    "perspective",
    "relative",
    "representative",
    "timetable",
    "variable",
    "vegetable",
];

/// Words in -ly that are not adverbs.
const NOT_ADVERBS: &[&str] = &[
    "ally",
    "anomaly",
    "apply",
    "assembly",
    "belly",
    "billy",
    "bully",
    "butterfly",
    "comply",
    "emily",
    "family",
    "firefly",
    "fly",
    "holly",
    "imply",
    "italy",
    "jelly",
    "july",
    "kelly",
    "lily",
    "molly",
    "monopoly",
    "multiply",
    "rally",
    "rely",
    "reply",
    "supply",
];

fn set(lists: &[&'static [&'static str]]) -> HashSet<&'static str> {
    lists.iter().copied().flatten().copied().collect()
}

static PURE_VERBS: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| set(&[VERBS, IRREGULAR_VERB_FORMS]));
static ALL_VERBS: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| set(&[VERBS, NOUN_VERBS, IRREGULAR_VERB_FORMS]));
static ADJECTIVE_SET: LazyLock<HashSet<&'static str>> = LazyLock::new(|| set(&[ADJECTIVES]));
static NOT_ADVERB_SET: LazyLock<HashSet<&'static str>> = LazyLock::new(|| set(&[NOT_ADVERBS]));
static NO_TOPIC_SET: LazyLock<HashSet<&'static str>> = LazyLock::new(|| set(&[NO_TOPIC]));
static NOT_ADJECTIVE_SET: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| set(&[NOT_ADJECTIVES]));

/// Whether an English word (case-folded) is no topic in any phrase (see [`NO_TOPIC`]).
pub(crate) fn is_no_topic(word: &str) -> bool {
    NO_TOPIC_SET.contains(word)
}

/// Whether an English word has an adjective's ending (`-ous`, `-ful`, `-less`, `-ive`,
/// `-able`, `-ible`; `famous`, `massive`), unless it is a noun of [`NOT_ADJECTIVES`]. Only
/// for a word alone: in a phrase such a word is the noun's modifier.
fn looks_adjective(word: &str) -> bool {
    word.len() > 5
        && ["ous", "ful", "less", "ive", "able", "ible"]
            .iter()
            .any(|ending| word.ends_with(ending))
        && !NOT_ADJECTIVE_SET.contains(word)
}

/// Adds `stem` as a plain form, with a final `e` restored and a doubled consonant undone
/// (`mak` → `make`, `shipp` → `ship`, `bigg` → `big`).
fn push_stems(stems: &mut Vec<String>, stem: &str) {
    if stem.len() < 2 {
        return;
    }
    stems.push(stem.to_owned());
    stems.push(format!("{stem}e"));
    let bytes = stem.as_bytes();
    if bytes.len() >= 3 && bytes[bytes.len() - 1] == bytes[bytes.len() - 2] {
        stems.push(stem[..stem.len() - 1].to_owned());
    }
}

/// The plain forms `word` may be an inflection of (itself first): `-s`/`-es`/`-ies`,
/// `-ed`/`-ied`, `-ing` (`making` → `make`, `shipped` → `ship`).
fn verb_stems(word: &str) -> Vec<String> {
    let mut stems = vec![word.to_owned()];
    if let Some(stem) = word
        .strip_suffix("ies")
        .or_else(|| word.strip_suffix("ied"))
    {
        stems.push(format!("{stem}y"));
    }
    for suffix in ["ing", "ed", "es", "s", "d"] {
        if let Some(stem) = word.strip_suffix(suffix) {
            push_stems(&mut stems, stem);
        }
    }
    stems
}

/// The plain forms `word` may be a comparative or superlative of (itself first).
fn adjective_stems(word: &str) -> Vec<String> {
    let mut stems = vec![word.to_owned()];
    if let Some(stem) = word
        .strip_suffix("iest")
        .or_else(|| word.strip_suffix("ier"))
    {
        stems.push(format!("{stem}y"));
    }
    for suffix in ["est", "er"] {
        if let Some(stem) = word.strip_suffix(suffix) {
            push_stems(&mut stems, stem);
        }
    }
    stems
}

/// Whether an English word (case-folded) is a form of a verb that is never a noun. Not a
/// form in -ing: that is a noun as often (`machine learning`, `web browsing`).
pub(crate) fn is_pure_verb(word: &str) -> bool {
    if !word.is_ascii() {
        return false;
    }
    if PURE_VERBS.contains(word) {
        return true;
    }
    !word.ends_with("ing")
        && verb_stems(word)
            .iter()
            .any(|s| PURE_VERBS.contains(s.as_str()))
}

/// Whether an English word (case-folded) is an adjective (any degree) or an adverb in -ly.
pub(crate) fn is_modifier(word: &str) -> bool {
    if !word.is_ascii() {
        return false;
    }
    if word.len() > 4 && word.ends_with("ly") && !NOT_ADVERB_SET.contains(word) {
        return true;
    }
    adjective_stems(word)
        .iter()
        .any(|s| ADJECTIVE_SET.contains(s.as_str()))
}

/// Whether an English word (case-folded) alone is a verb or a modifier, and so no tag.
pub(crate) fn is_predicate_word(word: &str) -> bool {
    is_modifier(word)
        || looks_adjective(word)
        || (word.is_ascii()
            && verb_stems(word)
                .iter()
                .any(|s| ALL_VERBS.contains(s.as_str())))
}

/// Verbal nouns of Japanese (サ変名詞) that news uses as verbs, in headlines without する
/// (`新設`, `開始へ`): no topic alone, though a compound may end in one (`自動運転`).
const JAPANESE_VERBAL: &[&str] = &[
    "発表", "開始", "決定", "上昇", "達成", "整備", "成功", "公開", "移行", "稼働", "延長", "導入",
    "実施", "検討", "開発", "運行", "発見", "登録", "建設", "委託", "開催", "完成", "誕生", "防衛",
    "突破", "減少", "拡大", "増加", "低下", "衝突", "上陸", "協議", "施行", "禁止", "提供", "着工",
    "発売", "新設", "出場", "混乱", "向上", "強化", "改善", "対応", "利用", "使用", "確認", "増設",
    "採用", "販売", "参加", "実現", "解除", "再開", "延伸", "開業", "開幕", "閉幕", "発生", "発行",
    "変更", "追加", "取得", "記録", "更新", "設定", "影響", "流行", "定着", "前進", "高騰", "復旧",
    "放出", "懸念", "注意", "予定", "計画",
];

/// Adjectival nouns of Japanese that are no topic alone (`大幅に`, `新たな`).
const JAPANESE_ADJECTIVAL: &[&str] = &[
    "大幅",
    "新た",
    "簡単",
    "便利",
    "重要",
    "様々",
    "十分",
    "確実",
    "急速",
    "大切",
    "特別",
    "自由",
    "正確",
    "有効",
    "好調",
    "深刻",
    "活発",
    "明らか",
    "大量",
    "多数",
    "複雑",
    "不要",
    "同様",
    "本格",
    "積極",
    "一時",
    "実質",
    "主",
    "初",
    "再び",
    "引き続き",
];

static JAPANESE_PREDICATE_SET: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| set(&[JAPANESE_ADJECTIVAL, JAPANESE_VERBAL]));

/// Whether a Japanese word alone is a verbal or adjectival noun (of the lists, or in -的).
pub(crate) fn is_japanese_modifier(word: &str) -> bool {
    JAPANESE_PREDICATE_SET.contains(word) || (word.chars().count() >= 2 && word.ends_with('的'))
}

/// Whether a word of hiragana right after a kanji or katakana word makes that word a verb
/// (する and its forms: `し`, `する`, `され`, `させ`, `せず`, `でき`) or an adjective (`な`).
pub(crate) fn is_japanese_predicate_ending(word: &str) -> bool {
    word == "な"
        || ["す", "し", "さ", "せ", "でき"]
            .iter()
            .any(|start| word.starts_with(start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_verbs_and_adjectives_are_told_from_nouns() {
        for word in [
            "adds", "added", "adding", "shipped", "ships", "making", "brought",
        ] {
            assert!(is_predicate_word(word), "{word}");
        }
        for word in [
            "faster",
            "fastest",
            "bigger",
            "easier",
            "quickly",
            "officially",
        ] {
            assert!(is_predicate_word(word) && is_modifier(word), "{word}");
        }
        for word in ["update", "launch", "ship"] {
            assert!(is_predicate_word(word) && !is_pure_verb(word), "{word}");
        }
        for word in [
            "rust", "compiler", "firefox", "italy", "family", "builds", "learning",
        ] {
            assert!(!is_pure_verb(word) && !is_modifier(word), "{word}");
        }
        for word in ["rust", "compiler", "firefox", "italy", "family", "kernel"] {
            assert!(!is_predicate_word(word), "{word}");
        }
    }

    #[test]
    fn japanese_endings_make_verbs_and_adjectives() {
        for ending in ["し", "する", "され", "させ", "な", "できる"] {
            assert!(is_japanese_predicate_ending(ending), "{ending}");
        }
        for ending in ["の", "を", "が", "に", "は", "で"] {
            assert!(!is_japanese_predicate_ending(ending), "{ending}");
        }
        assert!(is_japanese_modifier("大幅"));
        assert!(is_japanese_modifier("技術的"));
        assert!(!is_japanese_modifier("東京"));
    }

    #[test]
    fn languages_have_their_step() {
        assert_eq!(Pos::of(Some("en-GB")), Pos::English);
        assert_eq!(Pos::of(Some("ja")), Pos::Japanese);
        assert_eq!(Pos::of(Some("de")), Pos::None);
        assert_eq!(Pos::of(None), Pos::None);
    }
}
