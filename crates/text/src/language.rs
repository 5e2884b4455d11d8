//! The language of an item or a feed (issue 37), as a BCP 47 tag: detected from the text with
//! `whatlang` (trigrams and scripts, 69 languages, no model to load), checked against what the
//! feed or the item declares.
//!
//! What is decided here, and why:
//! - **Declared and detected agree** (same primary subtag): the declared tag, canonically cased,
//!   since it may say more (`en-GB`, `zh-TW`).
//! - **They disagree:** a confident detection wins (feeds declare `en-US` by a blog engine's
//!   default over Japanese text); an unsure one loses to the declaration when both are written
//!   in the same script (a short German title in a German feed may look English to trigrams),
//!   and wins when the scripts differ (no Cyrillic text is English).
//! - **Kana means Japanese.** Han alone is the hard case: Japanese-only forms (`発`, `駅`, `円`)
//!   or Chinese-only forms (`这`, `们`, `說`) decide it; without either, the declared language,
//!   then the feed's language (`context`), then Chinese.
//! - **No letters at all** (a title of digits): the declaration, else nothing.

use whatlang::{Lang, Script};

/// How much of an item's body text detection reads, in characters: the first paragraphs tell
/// the language as well as the whole text, and the cost stays bounded for long articles.
pub const BODY_PREFIX_CHARS: usize = 600;

/// What the text says of its language, before any declaration is weighed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Guess {
    /// The language's BCP 47 primary subtag (`en`, `ja`, `zh`, `nb`).
    pub tag: &'static str,
    /// Whether the detector is sure (for short text it seldom is).
    pub reliable: bool,
    /// Han text without kana and without a form only one of Japanese and Chinese uses: the tag
    /// is a default (`zh`), and a declaration or the feed's language decides.
    pub han_only: bool,
}

/// The text detection reads of an item: its title, then the first [`BODY_PREFIX_CHARS`]
/// characters of its body's plain text.
pub fn item_text(title: Option<&str>, body: &str) -> String {
    let title = title.unwrap_or("");
    let mut text = String::with_capacity(title.len() + 1 + BODY_PREFIX_CHARS * 3);
    text.push_str(title);
    text.push('\n');
    text.extend(body.chars().take(BODY_PREFIX_CHARS));
    text
}

/// The language the text is written in, or `None` when it has no letters to tell by.
pub fn detect(text: &str) -> Option<Guess> {
    let info = whatlang::detect(text)?;
    let tag = tag_of(info.lang());
    if info.script() == Script::Mandarin || matches!(info.lang(), Lang::Cmn | Lang::Jpn) {
        let (kana, japanese_forms, chinese_forms) = cjk_evidence(text);
        // whatlang calls Han text Japanese only past 5 % kana; a single kana in a headline of
        // kanji is Japanese all the same (Chinese text has none).
        let guess = |tag, reliable, han_only| Guess {
            tag,
            reliable,
            han_only,
        };
        return Some(if kana > 0 || japanese_forms > chinese_forms {
            guess("ja", true, false)
        } else if chinese_forms > japanese_forms {
            guess("zh", true, false)
        } else {
            guess("zh", false, true)
        });
    }
    Some(Guess {
        tag,
        reliable: info.is_reliable(),
        han_only: false,
    })
}

/// An item's language: what [`detect`] found (`guess`) weighed against the language the item
/// or its feed declares (`declared`, any BCP 47 tag as written) and the feed's language as
/// known (`context`). See the module's notes for the rules. `None` when neither the text nor
/// a declaration tells.
pub fn resolve(
    guess: Option<Guess>,
    declared: Option<&str>,
    context: Option<&str>,
) -> Option<String> {
    let declared = declared.and_then(canonical_tag);
    let context = context.and_then(canonical_tag);
    let Some(guess) = guess else {
        return declared;
    };
    if guess.han_only {
        let cjk = [declared.as_deref(), context.as_deref()]
            .into_iter()
            .flatten()
            .find(|tag| matches!(primary(tag), "ja" | "zh"));
        return Some(cjk.unwrap_or(guess.tag).to_owned());
    }
    if let Some(declared) = &declared {
        if same_language(primary(declared), guess.tag) {
            return Some(declared.clone());
        }
        if !guess.reliable && same_script(primary(declared), guess.tag) {
            return Some(declared.clone());
        }
    }
    if !guess.reliable
        && let Some(context) = context.filter(|c| same_script(primary(c), guess.tag))
    {
        // A short title that trigrams cannot place, in a feed of one language of its script.
        return Some(context);
    }
    Some(guess.tag.to_owned())
}

/// A feed's language: the one it declares (`declared`), unless its items (`items`, the
/// languages of its recent items) are mostly in another: at least two items and more than
/// half of them in one other language. Without a declaration, its items' most common language.
pub fn feed_language<'a>(
    declared: Option<&str>,
    items: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let declared = declared.and_then(canonical_tag);
    let mut counts: Vec<(String, usize)> = Vec::new();
    let mut total = 0;
    for tag in items.into_iter().filter_map(canonical_tag) {
        total += 1;
        match counts.iter_mut().find(|(t, _)| *t == tag) {
            Some((_, n)) => *n += 1,
            None => counts.push((tag, 1)),
        }
    }
    // The most common tag; on a tie the first seen, so the answer does not depend on hashing.
    let mut top: Option<(String, usize)> = None;
    for (tag, n) in counts {
        if top.as_ref().is_none_or(|(_, best)| n > *best) {
            top = Some((tag, n));
        }
    }
    match (declared, top) {
        (Some(declared), Some((tag, n))) => {
            let outvoted =
                !same_language(primary(&declared), primary(&tag)) && total >= 2 && n * 2 > total;
            Some(if outvoted { tag } else { declared })
        }
        (declared, top) => declared.or(top.map(|(tag, _)| tag)),
    }
}

/// `tag` in its canonical case (`en-us` is `en-US`, `zh-hant` is `zh-Hant`), or `None` when
/// it is not a well-formed BCP 47 tag (a primary subtag of 2–3 letters, then subtags of 1–8
/// letters or digits; `_` is read as `-`). `C`, `i-default` and the like are not languages.
pub fn canonical_tag(tag: &str) -> Option<String> {
    let tag = tag.trim().replace('_', "-");
    let mut parts = tag.split('-');
    let first = parts.next()?;
    if !(2..=3).contains(&first.len()) || !first.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let mut out = first.to_ascii_lowercase();
    for part in parts {
        if part.is_empty() || part.len() > 8 || !part.chars().all(|c| c.is_ascii_alphanumeric()) {
            return None;
        }
        out.push('-');
        match part.len() {
            // A script (`Hant`) is title case, a region (`US`) upper case.
            4 if part.chars().all(|c| c.is_ascii_alphabetic()) => {
                out.push_str(&part[..1].to_ascii_uppercase());
                out.push_str(&part[1..].to_ascii_lowercase());
            }
            2 => out.push_str(&part.to_ascii_uppercase()),
            _ => out.push_str(&part.to_ascii_lowercase()),
        }
    }
    Some(out)
}

/// The primary subtag of a canonical tag.
fn primary(tag: &str) -> &str {
    tag.split('-').next().unwrap_or(tag)
}

/// Whether two primary subtags name one language: equal, or Norwegian written `no` and `nb`
/// (whatlang says Bokmål; feeds often say `no`), or Chinese written `zh` and `cmn`.
fn same_language(a: &str, b: &str) -> bool {
    fn fold(t: &str) -> &str {
        match t {
            "no" | "nn" => "nb",
            "cmn" => "zh",
            other => other,
        }
    }
    fold(a) == fold(b)
}

/// Whether two language tags as written anywhere (`en` and `en-GB`, `ja` and `JA`, `pt_BR` and
/// `pt`, `no` and `nb`) name one language: what decides that an item needs no translation into
/// a reader's language. Every crate asks this one function, so the rule cannot drift.
pub fn same_language_tags(a: &str, b: &str) -> bool {
    let primary_of = |tag: &str| {
        tag.trim()
            .split(['-', '_'])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase()
    };
    same_language(&primary_of(a), &primary_of(b))
}

/// The languages of each script that has more than one among whatlang's (a language of a
/// script of its own, such as Greek or Thai, is always detected surely). Other tags (the
/// declared ones whatlang does not know) count as Latin, as most such tags in feeds are.
const NON_LATIN_SHARED: &[(&str, &[&str])] = &[
    ("Cyrillic", &["ru", "uk", "sr", "be", "bg", "mk", "kk"]),
    ("Arabic", &["ar", "ur", "fa"]),
    ("Devanagari", &["hi", "mr", "ne"]),
    ("Hebrew", &["he", "yi"]),
    ("Han", &["ja", "zh", "ko"]),
    ("Greek", &["el"]),
    ("Thai", &["th"]),
    ("Armenian", &["hy"]),
    ("Georgian", &["ka"]),
    ("Bengali", &["bn"]),
];

/// Whether two languages are written in the same script, as far as [`NON_LATIN_SHARED`] knows.
fn same_script(a: &str, b: &str) -> bool {
    let script = |tag: &str| {
        NON_LATIN_SHARED
            .iter()
            .find(|(_, tags)| tags.iter().any(|t| same_language(t, tag)))
            .map_or("Latin", |(script, _)| *script)
    };
    script(a) == script(b)
}

/// Counts in `text` of kana, of Han forms only Japanese writes (its own simplifications and
/// kokuji) and of Han forms only Chinese writes (simplified or traditional forms that Japanese
/// writes otherwise). Kept to common characters of news text.
fn cjk_evidence(text: &str) -> (usize, usize, usize) {
    const JAPANESE_ONLY: &str = "発図駅広円対経済変気関県歳売読働込畑峠枠鉄転伝価実験様営楽総挙権処戦歩検証続払沢拡観覧雑薬";
    // Simplified forms, then traditional ones, each written otherwise in Japanese.
    const CHINESE_ONLY: &str = "这们说对时发现经过还进问关东车长门开见气边让书买读习个为从动两严丧临举义乐亚产亲亿仅仓价众优伙伟传伤伦伪业专\
        這們說對會發經關氣邊讓讀為從萬與專兩嚴舉樂亂爭虧亞產價眾夥傳體";
    let (mut kana, mut japanese, mut chinese) = (0, 0, 0);
    for c in text.chars() {
        match c {
            '\u{3041}'..='\u{309f}' | '\u{30a1}'..='\u{30fa}' | '\u{31f0}'..='\u{31ff}' => {
                kana += 1
            }
            c if JAPANESE_ONLY.contains(c) => japanese += 1,
            c if CHINESE_ONLY.contains(c) => chinese += 1,
            _ => {}
        }
    }
    (kana, japanese, chinese)
}

/// The BCP 47 tag (ISO 639-1 where there is one) of a whatlang language.
fn tag_of(lang: Lang) -> &'static str {
    match lang {
        Lang::Epo => "eo",
        Lang::Eng => "en",
        Lang::Rus => "ru",
        Lang::Cmn => "zh",
        Lang::Spa => "es",
        Lang::Por => "pt",
        Lang::Ita => "it",
        Lang::Ben => "bn",
        Lang::Fra => "fr",
        Lang::Deu => "de",
        Lang::Ukr => "uk",
        Lang::Kat => "ka",
        Lang::Ara => "ar",
        Lang::Hin => "hi",
        Lang::Jpn => "ja",
        Lang::Heb => "he",
        Lang::Yid => "yi",
        Lang::Pol => "pl",
        Lang::Amh => "am",
        Lang::Jav => "jv",
        Lang::Kor => "ko",
        Lang::Nob => "nb",
        Lang::Dan => "da",
        Lang::Swe => "sv",
        Lang::Fin => "fi",
        Lang::Tur => "tr",
        Lang::Nld => "nl",
        Lang::Hun => "hu",
        Lang::Ces => "cs",
        Lang::Ell => "el",
        Lang::Bul => "bg",
        Lang::Bel => "be",
        Lang::Mar => "mr",
        Lang::Kan => "kn",
        Lang::Ron => "ro",
        Lang::Slv => "sl",
        Lang::Hrv => "hr",
        Lang::Srp => "sr",
        Lang::Mkd => "mk",
        Lang::Lit => "lt",
        Lang::Lav => "lv",
        Lang::Est => "et",
        Lang::Tam => "ta",
        Lang::Vie => "vi",
        Lang::Urd => "ur",
        Lang::Tha => "th",
        Lang::Guj => "gu",
        Lang::Uzb => "uz",
        Lang::Pan => "pa",
        Lang::Aze => "az",
        Lang::Ind => "id",
        Lang::Tel => "te",
        Lang::Pes => "fa",
        Lang::Mal => "ml",
        Lang::Ori => "or",
        Lang::Mya => "my",
        Lang::Nep => "ne",
        Lang::Sin => "si",
        Lang::Khm => "km",
        Lang::Tuk => "tk",
        Lang::Aka => "ak",
        Lang::Zul => "zu",
        Lang::Sna => "sn",
        Lang::Afr => "af",
        Lang::Lat => "la",
        Lang::Slk => "sk",
        Lang::Cat => "ca",
        Lang::Tgl => "tl",
        Lang::Hye => "hy",
        Lang::Cym => "cy",
    }
}

#[cfg(test)]
mod tests;
