//! Japanese words: TinySegmenter (Taku Kudo's compact segmenter) with its model compiled in.
//! It decides at each character whether a word starts, from weighted features of the
//! characters around it, their types (kanji, hiragana, katakana, Latin, digits) and the
//! decisions before; no dictionary. A port of the published algorithm over the model in
//! [`model`].

use std::collections::HashMap;
use std::sync::LazyLock;

mod model;

/// The three characters before the text and after it, as the model knows them.
const BEFORE: [char; 3] = ['\u{E003}', '\u{E002}', '\u{E001}'];
const AFTER: [char; 3] = ['\u{E004}', '\u{E005}', '\u{E006}'];

/// The model's tables, by the names the algorithm gives them.
macro_rules! tables {
    ($($name:ident),* $(,)?) => {
        #[allow(non_snake_case)]
        struct Model {
            $($name: HashMap<[char; 4], i32>,)*
        }
        static MODEL: LazyLock<Model> = LazyLock::new(|| Model {
            $($name: model::$name.iter().copied().collect(),)*
        });
    };
}

tables!(
    BC1, BC2, BC3, BP1, BP2, BQ1, BQ2, BQ3, BQ4, BW1, BW2, BW3, TC1, TC2, TC3, TC4, TQ1, TQ2, TQ3,
    TQ4, TW1, TW2, TW3, TW4, UC1, UC2, UC3, UC4, UC5, UC6, UP1, UP2, UP3, UQ1, UQ2, UQ3, UW1, UW2,
    UW3, UW4, UW5, UW6,
);

/// A feature's weight; 0 for features the model does not know.
fn weight(table: &HashMap<[char; 4], i32>, key: &[char]) -> i32 {
    let mut padded = ['\0'; 4];
    padded[..key.len()].copy_from_slice(key);
    table.get(&padded).copied().unwrap_or(0)
}

/// The model's character types: kanji numerals (M), other kanji (H), hiragana (I), katakana
/// (K), Latin letters (A), digits (N), anything else (O).
fn char_type(c: char) -> char {
    match c {
        '一' | '二' | '三' | '四' | '五' | '六' | '七' | '八' | '九' | '十' | '百' | '千'
        | '万' | '億' | '兆' => 'M',
        '\u{4E00}'..='\u{9FA0}' | '々' | '〆' | 'ヵ' | 'ヶ' => 'H',
        '\u{3041}'..='\u{3093}' => 'I',
        '\u{30A1}'..='\u{30F4}' | 'ー' | '\u{FF71}'..='\u{FF9D}' | 'ﾞ' | 'ｰ' => 'K',
        'a'..='z' | 'A'..='Z' | 'ａ'..='ｚ' | 'Ａ'..='Ｚ' => 'A',
        '0'..='9' | '０'..='９' => 'N',
        _ => 'O',
    }
}

/// Splits Japanese text into words. Every character of `text` is in exactly one word, in
/// order.
pub fn segment(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    let m = &*MODEL;
    let chars: Vec<char> = BEFORE
        .into_iter()
        .chain(text.chars())
        .chain(AFTER)
        .collect();
    let types: Vec<char> = ['O'; 3]
        .into_iter()
        .chain(text.chars().map(char_type))
        .chain(['O'; 3])
        .collect();
    let mut words = Vec::new();
    let mut word = chars[3].to_string();
    // The decisions at the three characters before: B(egin), O(ther), U(nknown).
    let mut p = ['U'; 3];
    for i in 4..chars.len() - 3 {
        let w = &chars[i - 3..i + 3];
        let c = &types[i - 3..i + 3];
        let score = model::BIAS
            + weight(&m.UP1, &[p[0]])
            + weight(&m.UP2, &[p[1]])
            + weight(&m.UP3, &[p[2]])
            + weight(&m.BP1, &[p[0], p[1]])
            + weight(&m.BP2, &[p[1], p[2]])
            + weight(&m.UW1, &w[0..1])
            + weight(&m.UW2, &w[1..2])
            + weight(&m.UW3, &w[2..3])
            + weight(&m.UW4, &w[3..4])
            + weight(&m.UW5, &w[4..5])
            + weight(&m.UW6, &w[5..6])
            + weight(&m.BW1, &w[1..3])
            + weight(&m.BW2, &w[2..4])
            + weight(&m.BW3, &w[3..5])
            + weight(&m.TW1, &w[0..3])
            + weight(&m.TW2, &w[1..4])
            + weight(&m.TW3, &w[2..5])
            + weight(&m.TW4, &w[3..6])
            + weight(&m.UC1, &c[0..1])
            + weight(&m.UC2, &c[1..2])
            + weight(&m.UC3, &c[2..3])
            + weight(&m.UC4, &c[3..4])
            + weight(&m.UC5, &c[4..5])
            + weight(&m.UC6, &c[5..6])
            + weight(&m.BC1, &c[1..3])
            + weight(&m.BC2, &c[2..4])
            + weight(&m.BC3, &c[3..5])
            + weight(&m.TC1, &c[0..3])
            + weight(&m.TC2, &c[1..4])
            + weight(&m.TC3, &c[2..5])
            + weight(&m.TC4, &c[3..6])
            + weight(&m.UQ1, &[p[0], c[0]])
            + weight(&m.UQ2, &[p[1], c[1]])
            + weight(&m.UQ3, &[p[2], c[2]])
            + weight(&m.BQ1, &[p[1], c[1], c[2]])
            + weight(&m.BQ2, &[p[1], c[2], c[3]])
            + weight(&m.BQ3, &[p[2], c[1], c[2]])
            + weight(&m.BQ4, &[p[2], c[2], c[3]])
            + weight(&m.TQ1, &[p[1], c[0], c[1], c[2]])
            + weight(&m.TQ2, &[p[1], c[1], c[2], c[3]])
            + weight(&m.TQ3, &[p[2], c[0], c[1], c[2]])
            + weight(&m.TQ4, &[p[2], c[1], c[2], c[3]]);
        p = [p[1], p[2], if score < 0 { 'O' } else { 'B' }];
        if score > 0 {
            words.push(std::mem::take(&mut word));
        }
        word.push(chars[i]);
    }
    words.push(word);
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_as_tinysegmenter_does() {
        assert_eq!(
            segment("私の名前は中野です"),
            ["私", "の", "名前", "は", "中野", "です"]
        );
        assert_eq!(
            segment("TinySegmenterは25kBで書かれています。"),
            [
                "TinySegmenter",
                "は",
                "2",
                "5",
                "kB",
                "で",
                "書か",
                "れ",
                "て",
                "い",
                "ます",
                "。"
            ]
        );
        assert!(segment("").is_empty());
    }

    #[test]
    fn every_character_is_kept_in_order() {
        for text in [
            "東京都知事選挙の投票率",
            "ｶﾀｶﾅとカタカナ",
            "\u{E001}é漢\u{20000}",
        ] {
            assert_eq!(segment(text).concat(), text);
        }
    }
}
