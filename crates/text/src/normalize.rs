//! Character normalization for search: compatibility forms, case and diacritics folded away.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Whether `c` is a diacritic that search ignores: the combining marks of Latin, Greek and
/// Cyrillic letters, Hebrew points and Arabic vowel marks. Marks that change a letter in other
/// scripts (kana voicing marks, Indic vowel signs) are kept.
fn is_ignored_diacritic(c: char) -> bool {
    matches!(c,
        '\u{0300}'..='\u{036F}'   // combining diacritical marks
        | '\u{1AB0}'..='\u{1AFF}' // … extended
        | '\u{1DC0}'..='\u{1DFF}' // … supplement
        | '\u{20D0}'..='\u{20FF}' // … for symbols
        | '\u{FE20}'..='\u{FE2F}' // half marks
        | '\u{0591}'..='\u{05BD}' | '\u{05BF}' | '\u{05C1}'..='\u{05C2}' | '\u{05C4}'..='\u{05C5}'
        | '\u{05C7}'              // Hebrew points and accents
        | '\u{064B}'..='\u{065F}' | '\u{0670}' // Arabic vowel marks
    )
}

/// Letters that carry a diacritic without decomposing into letter + mark, folded the way
/// people type them without the diacritic.
fn fold_letter(c: char, out: &mut String) {
    match c {
        'ß' => out.push_str("ss"),
        'ς' => out.push('σ'),
        'ø' => out.push('o'),
        'đ' => out.push('d'),
        'ł' => out.push('l'),
        'ħ' => out.push('h'),
        'ı' => out.push('i'),
        'æ' => out.push_str("ae"),
        'œ' => out.push_str("oe"),
        _ => out.push(c),
    }
}

/// Normalizes one unit of text (a character with the combining marks that follow it): NFKD,
/// lower case, diacritics dropped, then NFC so that kana and Hangul compose again. The result
/// may be empty (a lone diacritic) or longer than one character (`ß` → `ss`, `ﬁ` → `fi`).
pub fn normalize_unit(unit: &str) -> String {
    let mut chars = unit.chars();
    if let (Some(c), None) = (chars.next(), chars.next())
        && is_stable(c)
    {
        return c.to_string();
    }
    let mut folded = String::with_capacity(unit.len());
    for c in unit.nfkd() {
        if is_ignored_diacritic(c) {
            continue;
        }
        for lower in c.to_lowercase() {
            fold_letter(lower, &mut folded);
        }
    }
    // Lower-casing can yield characters that decompose (e.g. U+0130 → i + U+0307): drop those
    // diacritics too before composing.
    folded
        .nfkd()
        .filter(|c| !is_ignored_diacritic(*c))
        .nfc()
        .collect()
}

/// Whether `c` alone normalizes to itself, known without the tables: the letters of the
/// scripts written without spaces (Han ideographs, kana, Hangul syllables), which have no case
/// and no diacritic to drop, and whose decompositions (voiced kana, Hangul) compose back. Most
/// of a Japanese, Chinese or Korean text is these, and it is indexed a character at a time.
fn is_stable(c: char) -> bool {
    matches!(c,
        '\u{4E00}'..='\u{9FFF}'   // Han unified ideographs
        | '\u{3041}'..='\u{3096}' // hiragana letters
        | '\u{30A1}'..='\u{30FA}' | '\u{30FC}' // katakana letters, prolonged sound mark
        | '\u{AC00}'..='\u{D7A3}' // Hangul syllables
    )
}

/// Whether `c` continues the unit of the character before it: combining marks, and the
/// half-width kana voicing marks (which NFKC turns into combining marks).
pub(crate) fn continues_unit(c: char) -> bool {
    is_combining_mark(c) || c == '\u{FF9E}' || c == '\u{FF9F}'
}

/// Normalizes a whole text as search sees it (see [`normalize_unit`]).
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (start, end) in units(text) {
        out.push_str(&normalize_unit(&text[start..end]));
    }
    out
}

/// The byte ranges of `text`'s units: a character and the marks continuing it.
pub(crate) fn units(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut chars = text.char_indices().peekable();
    std::iter::from_fn(move || {
        let (start, c) = chars.next()?;
        let mut end = start + c.len_utf8();
        while let Some(&(i, next)) = chars.peek() {
            if !continues_unit(next) {
                break;
            }
            end = i + next.len_utf8();
            chars.next();
        }
        Some((start, end))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_case_width_and_diacritics() {
        let cases = [
            ("Rust", "rust"),
            ("ＲＵＳＴ", "rust"),
            ("ｒｕｓｔ１２３", "rust123"),
            ("café", "cafe"),
            ("cafe\u{301}", "cafe"),
            ("Müller", "muller"),
            ("STRAẞE", "strasse"),
            ("Straße", "strasse"),
            ("naïve façade", "naive facade"),
            ("Ærø", "aero"),
            ("Łódź", "lodz"),
            ("İstanbul", "istanbul"),
            ("ΣΟΦΟΣ σοφος", "σοφοσ σοφοσ"),
            ("ﬁle", "file"),
            ("ｶﾀｶﾅ", "カタカナ"),
            ("ｶﾞｷﾞ", "ガギ"),
            ("ﾊﾟﾝ", "パン"),
            ("がぎ", "がぎ"),
            ("パン", "パン"),
            ("한국어", "한국어"),
            ("ﾍﾞﾙﾘﾝ", "ベルリン"),
            ("Ｔｏｋｙｏ　タワー", "tokyo タワー"),
            ("שָׁלוֹם", "שלום"),
            ("مَرْحَبًا", "مرحبا"),
            ("Привет Ёлка", "привет елка"),
            ("हिन्दी", "हिन्दी"),
            ("①", "1"),
        ];
        for (input, expected) in cases {
            assert_eq!(normalize(input), expected, "normalize({input:?})");
        }
    }

    #[test]
    fn units_keep_marks_with_their_base() {
        let text = "e\u{301}ｶﾞx";
        let pieces: Vec<&str> = units(text).map(|(s, e)| &text[s..e]).collect();
        assert_eq!(pieces, ["e\u{301}", "ｶﾞ", "x"]);
        assert_eq!(units("").count(), 0);
        // A mark with no base is a unit of its own.
        let text = "\u{301}a";
        assert_eq!(units(text).count(), 2);
    }

    #[test]
    fn stable_characters_are_their_own_normal_form() {
        // Every character the shortcut takes normalizes to itself the long way too.
        let ranges = [
            ('\u{4E00}', '\u{9FFF}'),
            ('\u{3041}', '\u{3096}'),
            ('\u{30A1}', '\u{30FA}'),
            ('\u{30FC}', '\u{30FC}'),
            ('\u{AC00}', '\u{D7A3}'),
        ];
        let mut checked = 0;
        for (first, last) in ranges {
            for c in first..=last {
                assert!(is_stable(c));
                let mut folded = String::new();
                for d in c.to_string().nfkd() {
                    for lower in d.to_lowercase() {
                        fold_letter(lower, &mut folded);
                    }
                }
                let slow: String = folded
                    .nfkd()
                    .filter(|d| !is_ignored_diacritic(*d))
                    .nfc()
                    .collect();
                assert_eq!(slow, c.to_string(), "{c:?} (U+{:04X})", c as u32);
                checked += 1;
            }
        }
        assert_eq!(checked, 20_992 + 86 + 90 + 1 + 11_172);
        // Next to the ranges, the long way: the spacing voiced marks, the katakana middle dot.
        assert!(!is_stable('\u{309B}') && !is_stable('\u{30FB}') && !is_stable('\u{F900}'));
        assert_eq!(normalize_unit("\u{309B}"), " \u{3099}");
        assert_eq!(normalize_unit("\u{F900}"), "\u{8C48}");
    }

    #[test]
    fn lone_diacritic_normalizes_to_nothing() {
        assert_eq!(normalize_unit("\u{301}"), "");
    }
}
