//! What keeps look-alike items apart: the numbers and parts in a title (series, episodes,
//! dated digests) and correction notices. Read from the text as search normalizes it
//! ([`tidings_text::normalize`]: NFKC, case and accents folded), so full-width digits and
//! `Épisode` read as `episode`.

use std::collections::BTreeSet;

/// The marks of a title that tell one item of a series from another.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TitleMarks {
    /// Every number written with digits, its groups joined (`6.000`, `6,000` and `6 000` are
    /// `6000`; `2.4` and `2,4` are `24`), without leading zeros.
    pub numbers: BTreeSet<String>,
    /// The title's search tokens that have no digit, to tell whether two titles differ only by
    /// their numbers.
    pub words: BTreeSet<String>,
    /// The place in a series a word names: the number after `Part`, `Teil`, `épisode`, `第…回`
    /// (in digits, Roman numerals, words or kanji) as digits, and `first`, `middle`, `last` for
    /// `前編`/`上`, `中編`/`中`, `後編`/`下`.
    pub parts: BTreeSet<String>,
}

/// Words after which a number is a place in a series, in the languages of the labelled set
/// (English, German, French; normalized, so `épisode` is `episode`).
const SERIES_WORDS: &[&str] = &[
    "part", "pt", "episode", "ep", "chapter", "ch", "vol", "volume", "season", "issue", "no", "nr",
    "number", "teil", "folge", "kapitel", "ausgabe", "band", "partie", "chapitre", "tome",
    "saison", "numero", "n", "lesson", "lektion", "lecon", "day", "tag", "jour", "week", "woche",
    "semaine",
];

/// Number words up to ten, in English, German and French, with their values.
const NUMBER_WORDS: &[(&str, u32)] = &[
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("first", 1),
    ("second", 2),
    ("third", 3),
    ("final", 99),
    ("last", 99),
    ("eins", 1),
    ("zwei", 2),
    ("drei", 3),
    ("vier", 4),
    ("funf", 5),
    ("sechs", 6),
    ("un", 1),
    ("une", 1),
    ("deux", 2),
    ("trois", 3),
    ("quatre", 4),
    ("cinq", 5),
    ("i", 1),
    ("ii", 2),
    ("iii", 3),
    ("iv", 4),
    ("v", 5),
    ("vi", 6),
    ("vii", 7),
    ("viii", 8),
    ("ix", 9),
    ("x", 10),
];

/// Counters that follow `第N` in Japanese and Chinese series titles (episode, chapter, issue,
/// volume, part).
const CJK_COUNTERS: &str = "回話话集期章部弾编編篇巻卷号號講讲夜日";

/// Words of a Japanese or Chinese title that name the first, middle or last part.
const CJK_PARTS: &[(&str, &str)] = &[
    ("前編", "first"),
    ("前篇", "first"),
    ("上篇", "first"),
    ("上巻", "first"),
    ("中編", "middle"),
    ("中篇", "middle"),
    ("後編", "last"),
    ("後篇", "last"),
    ("后篇", "last"),
    ("下篇", "last"),
    ("下巻", "last"),
    ("完結編", "last"),
    ("(上)", "first"),
    ("(中)", "middle"),
    ("(下)", "last"),
    ("【上】", "first"),
    ("【中】", "middle"),
    ("【下】", "last"),
];

impl TitleMarks {
    /// The marks of a normalized title.
    pub(crate) fn read(title: &str) -> TitleMarks {
        let mut marks = TitleMarks::default();
        let title = join_digit_groups(title);
        let title = title.as_str();
        marks.words = tidings_text::tokenize(title)
            .into_iter()
            .map(|t| t.text)
            .filter(|t| !t.chars().any(|c| c.is_ascii_digit()))
            .collect();
        let words: Vec<&str> = title
            .split(|c: char| !c.is_alphanumeric() || tidings_text::is_cjk(c))
            .filter(|w| !w.is_empty())
            .collect();
        for (i, word) in words.iter().enumerate() {
            for run in word.split(|c: char| !c.is_ascii_digit()) {
                if !run.is_empty() {
                    marks.numbers.insert(without_leading_zeros(run));
                }
            }
            if let Some(value) = series_number(word, words.get(i + 1).copied()) {
                marks.parts.insert(value.to_string());
            }
        }
        read_cjk_parts(title, &mut marks.parts);
        marks
    }

    /// Whether two titles name different items of a series: their parts differ (one has a part
    /// and the other another or none), or the titles are alike but for their numbers (at least
    /// half their other tokens in common), both have numbers and neither's numbers are all in
    /// the other (`Issue 47` and `Issue 48`, `28 Nov` and `29 Nov`). A headline that adds a
    /// figure (`6.1 quake` and `6.1 quake, 2 hurt`) or is written anew with other figures is
    /// not kept apart by its numbers.
    pub(crate) fn differ(&self, other: &TitleMarks) -> bool {
        if self.parts != other.parts {
            return true;
        }
        let common = self.words.intersection(&other.words).count();
        let all = self.words.len() + other.words.len() - common;
        let alike = all == 0 || common * 2 >= all;
        alike
            && !self.numbers.is_empty()
            && !other.numbers.is_empty()
            && !self.numbers.is_subset(&other.numbers)
            && !other.numbers.is_subset(&self.numbers)
    }
}

/// `title` with the separators inside numbers removed: a `.` or `,` between digits, and a
/// space before a group of exactly three digits (`120 000`), so that one number written in
/// several ways is one number.
fn join_digit_groups(title: &str) -> String {
    let chars: Vec<char> = title.chars().collect();
    let mut out = String::with_capacity(title.len());
    for (i, &c) in chars.iter().enumerate() {
        let after_digit = i > 0 && chars[i - 1].is_ascii_digit();
        let group = chars[i + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let joins =
            after_digit && group > 0 && (matches!(c, '.' | ',') || (c == ' ' && group == 3));
        if !joins {
            out.push(c);
        }
    }
    out
}

/// Digits without leading zeros (`007` is `7`; `0` stays).
fn without_leading_zeros(digits: &str) -> String {
    let trimmed = digits.trim_start_matches('0');
    if trimmed.is_empty() { "0" } else { trimmed }.to_string()
}

/// The place in a series that `word` (and the word after it) names: `part 2`, `teil zwei`,
/// `ep12`, `episode iv`.
fn series_number(word: &str, next: Option<&str>) -> Option<u32> {
    if SERIES_WORDS.contains(&word) {
        return next.and_then(number_value);
    }
    // A series word glued to its number: `ep12`, `vol3`, `s02e05` is left to the numbers.
    let letters_end = word.find(|c: char| c.is_ascii_digit())?;
    let (prefix, digits) = word.split_at(letters_end);
    (!prefix.is_empty() && SERIES_WORDS.contains(&prefix))
        .then(|| digits.parse::<u32>().ok())
        .flatten()
}

/// The value of a number written in digits, as a word or a Roman numeral up to ten.
fn number_value(word: &str) -> Option<u32> {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_digit()) {
        return word.get(..9).unwrap_or(word).parse().ok();
    }
    NUMBER_WORDS
        .iter()
        .find(|(name, _)| *name == word)
        .map(|(_, value)| *value)
}

/// Adds the parts a Japanese or Chinese title names: `第3回`, `第三話`, `(上)`, `後編`,
/// `(二)`.
fn read_cjk_parts(title: &str, parts: &mut BTreeSet<String>) {
    for (word, part) in CJK_PARTS {
        if title.contains(word) {
            parts.insert((*part).to_string());
        }
    }
    let chars: Vec<char> = title.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let (value, end) = match c {
            '第' => match cjk_number(&chars[i + 1..]) {
                Some((value, len)) => (value, i + 1 + len),
                None => continue,
            },
            // A numeral in brackets, `(二)`, numbers a part in Chinese titles.
            '(' => match cjk_number(&chars[i + 1..]) {
                Some((value, len)) if chars.get(i + 1 + len) == Some(&')') => {
                    parts.insert(value.to_string());
                    continue;
                }
                _ => continue,
            },
            _ => continue,
        };
        if chars.get(end).is_some_and(|c| CJK_COUNTERS.contains(*c)) {
            parts.insert(value.to_string());
        }
    }
}

/// A number at the start of `chars` in digits or kanji numerals (`12`, `十二`, `二十`), with how
/// many characters it takes.
fn cjk_number(chars: &[char]) -> Option<(u32, usize)> {
    let digits: String = chars.iter().take_while(|c| c.is_ascii_digit()).collect();
    if !digits.is_empty() {
        let value = digits.get(..9).unwrap_or(&digits).parse().ok()?;
        return Some((value, digits.chars().count()));
    }
    let mut value = 0u32;
    let mut current = 0u32;
    let mut len = 0;
    for &c in chars.iter().take(6) {
        let digit = "〇一二三四五六七八九".chars().position(|d| d == c);
        match (digit, c) {
            (Some(d), _) => current = d as u32,
            (None, '十') => {
                value += current.max(1) * 10;
                current = 0;
            }
            (None, '百') => {
                value += current.max(1) * 100;
                current = 0;
            }
            _ => break,
        }
        len += 1;
    }
    (len > 0).then_some((value + current, len))
}

/// Phrases a normalized title starts with when it is a correction.
const TITLE_CORRECTION_PREFIXES: &[&str] = &[
    "correction:",
    "correction -",
    "corrected:",
    "corrected -",
    "corrected-",
    "corrects ",
    "clarification:",
    "[correction]",
    "[corrected]",
    "korrektur:",
    "korrigiert:",
    "berichtigung:",
    "rectificatif:",
    "rectificatif :",
    "correctif:",
    "correctif :",
    "erratum:",
    "erratum :",
];

/// Phrases anywhere in a normalized title or text that say it is a corrected version.
const CORRECTION_PHRASES: &[&str] = &[
    "(corrected)",
    "[corrected]",
    "this article has been corrected",
    "this story has been corrected",
    "this article was corrected",
    "this story was corrected",
    "this article has been updated to correct",
    "this story has been updated to correct",
    "an earlier version of this",
    "a previous version of this",
    "correction appended",
    "訂正",
    "更正",
    "勘误",
    "(korrigiert)",
    "in einer fruheren version",
    "korrekturhinweis",
    "anm. d. red.: in einer",
    "(rectifie)",
    "une precedente version de cet article",
    "une version precedente de cet article",
    "cet article a ete corrige",
];

/// Whether a normalized title or text says the item is a corrected version of another.
pub(crate) fn is_correction(title: &str, text: &str) -> bool {
    let title = title.trim_start();
    TITLE_CORRECTION_PREFIXES
        .iter()
        .any(|p| title.starts_with(p))
        || CORRECTION_PHRASES
            .iter()
            .any(|p| title.contains(p) || text.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidings_text::normalize;

    fn marks(title: &str) -> TitleMarks {
        TitleMarks::read(&normalize(title))
    }

    fn differ(a: &str, b: &str) -> bool {
        marks(a).differ(&marks(b))
    }

    #[test]
    fn parts_of_a_series_differ() {
        for (a, b) in [
            ("Building a parser, part 1", "Building a parser, part 2"),
            ("Building a parser, Part One", "Building a parser, Part Two"),
            (
                "The history of Unix (Part II)",
                "The history of Unix (Part III)",
            ),
            ("Podcast Ep12: caching", "Podcast Ep13: caching"),
            ("Rust lernen – Teil 3", "Rust lernen – Teil 4"),
            ("Série d'été, épisode 2", "Série d'été, épisode 3"),
            ("連載 第1回 型システム入門", "連載 第2回 型システム入門"),
            ("連載 第一回 型システム入門", "連載 第二回 型システム入門"),
            ("東京の名建築を歩く（上）", "東京の名建築を歩く（下）"),
            ("インタビュー前編", "インタビュー後編"),
            ("深度解析：芯片产业（一）", "深度解析：芯片产业（二）"),
            ("This Week in Rust 580", "This Week in Rust 581"),
            ("Daily digest – 28 Nov 2026", "Daily digest – 29 Nov 2026"),
            (
                "今日のテックニュース 11月26日",
                "今日のテックニュース 11月27日",
            ),
            ("Bitcoin tops $100,000", "Bitcoin tops $90,000"),
            ("Part 2: the aftermath", "The aftermath"),
            ("第１２話", "第13話"),
        ] {
            assert!(differ(a, b), "{a} / {b}");
        }
    }

    #[test]
    fn copies_of_one_title_do_not_differ() {
        for (a, b) in [
            ("Building a parser, part 1", "Building a Parser (Part 1)"),
            (
                "Quake of magnitude 6.1 hits Japan",
                "6.1 quake hits Japan, 2 hurt",
            ),
            ("Quake hits Japan", "6.1 quake hits Japan"),
            ("第１回 型システム入門", "第1回 型システム入門"),
            ("Rust 1.94 released", "Rust 1.94 is out"),
            ("Episode 007", "episode 7"),
            (
                "Storm cuts power to 40,000 homes",
                "Storm cuts power to 40 000 homes",
            ),
            (
                "Autobauer will 6.000 Stellen abbauen",
                "Stellenabbau: Autobauer streicht bis 2030 Jobs",
            ),
        ] {
            assert!(!differ(a, b), "{a} / {b}");
        }
    }

    #[test]
    fn corrections_are_recognized() {
        for (title, text) in [
            ("CORRECTED: Acme profit rises 21%", ""),
            (
                "Acme profit rises",
                "This article has been corrected to show the rise was 21%.",
            ),
            ("【訂正】新駅の開業日", ""),
            ("新駅の開業日", "（記事の一部を訂正しました）"),
            ("更正：新规将于明年实施", ""),
            (
                "Neue Regeln ab Januar",
                "In einer früheren Version hieß es …",
            ),
            ("Rectificatif : la réforme entre en vigueur en mars", ""),
        ] {
            assert!(
                is_correction(&normalize(title), &normalize(text)),
                "{title}"
            );
        }
        for (title, text) in [
            ("Stock market correction deepens", "Shares fell again."),
            (
                "Acme profit rises 21%",
                "Acme said profit rose 21% in the quarter.",
            ),
        ] {
            assert!(
                !is_correction(&normalize(title), &normalize(text)),
                "{title}"
            );
        }
    }
}
