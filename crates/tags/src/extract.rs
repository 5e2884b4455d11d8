//! Keyphrase extraction: the words of a document, its candidate phrases, and their scores.

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;

use crate::name::{MAX_TAG_CHARS, normalize_tag};
use crate::pos::Pos;
use crate::stopwords::is_stop_word;

/// The most tags an item gets.
pub const MAX_TAGS: usize = 8;
/// The lowest score a tag may have: phrases far behind the best one are noise.
pub const MIN_SCORE: f64 = 0.1;
/// How many appearances in the text one appearance in the title is worth.
pub const TITLE_WEIGHT: f64 = 3.0;
/// Characters of the text read (the title is read whole, up to this too): keyphrases show
/// early, and the work per item stays bounded whatever its length.
pub const MAX_INPUT_CHARS: usize = 20_000;

/// Words in a phrase of a space-separated language.
const MAX_SPACED_WORDS: usize = 3;
/// Words in a phrase of Japanese, whose words are shorter (`東京` `都` `知事` `選挙`).
const MAX_CJK_WORDS: usize = 4;

/// A keyphrase of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct Keyphrase {
    /// The phrase, as [`normalize_tag`] spells it.
    pub name: String,
    /// How well it describes the document, in 0–1 (the best phrase of a document scores 1),
    /// rounded to three decimals.
    pub score: f64,
}

/// How a word is written: with spaces around it, or in a CJK run without spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    Spaced,
    Cjk,
}

/// A word of the document.
#[derive(Debug)]
struct Word {
    /// The word as a tag name spells it (folded).
    key: String,
    script: Script,
    /// Never part of a phrase: a stop word, a number, one letter, hiragana.
    stop: bool,
    /// Written with a capital letter, not at a sentence's start (a name, a German noun).
    capitalized: bool,
    in_title: bool,
}

/// What the text is read into: words, and the punctuation that ends a phrase.
#[derive(Debug)]
enum Piece {
    Word(Word),
    Break,
}

/// The keyphrases of a document, best first: at most `limit` (and at most [`MAX_TAGS`]),
/// each scoring at least [`MIN_SCORE`]. `title` and `text` are plain text (not HTML). The
/// same input always gives the same output. Without the document's language: no
/// part-of-speech step (see [`extract_keyphrases_in`]).
pub fn extract_keyphrases(title: &str, text: &str, limit: usize) -> Vec<Keyphrase> {
    extract_keyphrases_in(title, text, None, limit)
}

/// [`extract_keyphrases`] of a document in `language` (a BCP 47 tag, as items carry it): in
/// English and Japanese a part-of-speech step leaves out verbs, adjectives and adverbs alone
/// (`adds`, `faster`, `ship`, `発表`), keeping names and noun phrases. Other languages, and
/// `None`, are tagged without it.
pub fn extract_keyphrases_in(
    title: &str,
    text: &str,
    language: Option<&str>,
    limit: usize,
) -> Vec<Keyphrase> {
    let limit = limit.min(MAX_TAGS);
    if limit == 0 {
        return Vec::new();
    }
    let mut pieces = Vec::new();
    read_words(&truncate(title), true, &mut pieces);
    pieces.push(Piece::Break);
    read_words(&truncate(text), false, &mut pieces);
    let candidates = candidates(&pieces);
    choose(candidates, limit, Pos::of(language))
}

/// The first [`MAX_INPUT_CHARS`] characters of `text`.
fn truncate(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(MAX_INPUT_CHARS) {
        Some((end, _)) => std::borrow::Cow::Borrowed(&text[..end]),
        None => std::borrow::Cow::Borrowed(text),
    }
}

/// Letters of the scripts written without spaces: Han and kana. Korean (Hangul) is written
/// with spaces and read as words.
fn is_cjk_letter(c: char) -> bool {
    tidings_text::is_cjk(c)
        && !matches!(c, '\u{1100}'..='\u{11FF}' | '\u{3130}'..='\u{318F}'
        | '\u{A960}'..='\u{A97F}' | '\u{D7B0}'..='\u{D7FF}' | '\u{AC00}'..='\u{D7AF}')
}

/// A character of a spaced word.
fn is_word_char(c: char) -> bool {
    (c.is_alphanumeric() || unicode_normalization::char::is_combining_mark(c)) && !is_cjk_letter(c)
}

/// Characters kept inside a word when letters follow: `node.js`, `state-of-the-art`, `don't`.
fn is_joiner(c: char) -> bool {
    matches!(c, '-' | '.' | '\'' | '’' | '_')
}

fn is_hiragana(c: char) -> bool {
    matches!(c, '\u{3041}'..='\u{309F}')
}

/// Whether a white-space-separated chunk is an address (a URL, a mail address): never a tag.
fn is_address(chunk: &str) -> bool {
    chunk.contains("://") || chunk.starts_with("www.") || chunk.contains('@')
}

/// Reads `text` into words and breaks, appending to `out`.
fn read_words(text: &str, in_title: bool, out: &mut Vec<Piece>) {
    let text: String = text.nfkc().collect();
    let mut sentence_start = true;
    for chunk in text.split_whitespace() {
        if is_address(chunk) {
            push_break(out);
            continue;
        }
        let chars: Vec<char> = chunk.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if is_cjk_letter(c) {
                let start = i;
                while i < chars.len() && is_cjk_letter(chars[i]) {
                    i += 1;
                }
                let run: String = chars[start..i].iter().collect();
                for segment in crate::segment::segment(&run) {
                    out.push(Piece::Word(cjk_word(&segment, in_title)));
                }
                sentence_start = false;
            } else if is_word_char(c) {
                let start = i;
                i += 1;
                loop {
                    if i < chars.len() && is_word_char(chars[i]) {
                        i += 1;
                    } else if i + 1 < chars.len()
                        && is_joiner(chars[i])
                        && is_word_char(chars[i + 1])
                    {
                        i += 2;
                    } else {
                        break;
                    }
                }
                let raw: String = chars[start..i].iter().collect();
                out.push(Piece::Word(spaced_word(&raw, sentence_start, in_title)));
                sentence_start = false;
            } else {
                push_break(out);
                if matches!(c, '.' | '!' | '?' | ':' | '。' | '…') {
                    sentence_start = true;
                }
                i += 1;
            }
        }
    }
}

fn push_break(out: &mut Vec<Piece>) {
    if !matches!(out.last(), Some(Piece::Break) | None) {
        out.push(Piece::Break);
    }
}

/// A word of a space-separated language.
fn spaced_word(raw: &str, sentence_start: bool, in_title: bool) -> Word {
    // A possessive is its noun (`Rust's` is `rust`), an elided article goes (`l'article`).
    let mut word = raw;
    for suffix in ["'s", "’s"] {
        if let Some(stem) = word.strip_suffix(suffix) {
            word = stem;
        }
    }
    if let Some((head, rest)) = word.split_once(['\'', '’'])
        && head.chars().count() <= 2
        && !rest.is_empty()
    {
        word = rest;
    }
    let key = normalize_tag(word).unwrap_or_default();
    // A word longer than a tag may be (a hash, a run of letters) is not cut into one.
    let stop = key.chars().count() < 2
        || word.chars().count() > MAX_TAG_CHARS
        || !key.chars().any(char::is_alphabetic)
        || is_stop_word(&key);
    Word {
        capitalized: !sentence_start && word.chars().next().is_some_and(char::is_uppercase),
        key,
        script: Script::Spaced,
        stop,
        in_title,
    }
}

/// A word of a CJK run, as the segmenter cut it. Only words without hiragana (nouns in kanji
/// or katakana) are part of phrases; hiragana marks particles and endings.
fn cjk_word(segment: &str, in_title: bool) -> Word {
    let key = normalize_tag(segment).unwrap_or_default();
    let stop = key.is_empty()
        || segment.chars().count() > MAX_TAG_CHARS
        || key.chars().any(is_hiragana)
        || is_stop_word(&key)
        || crate::stopwords::is_count_or_date(&key);
    Word {
        key,
        script: Script::Cjk,
        stop,
        capitalized: false,
        in_title,
    }
}

/// A candidate phrase and what the document says about it.
#[derive(Debug)]
struct Candidate {
    /// Its words' keys.
    words: Vec<String>,
    /// Appearances.
    count: u32,
    /// Appearances weighted: a title's count [`TITLE_WEIGHT`].
    weight: f64,
    /// The position of its first word in the document (title first), in words.
    first: usize,
    /// Appearances written capitalized mid-sentence.
    capitalized: u32,
    /// Appearances written capitalized mid-sentence in the text (a title's capitals may be
    /// its style): the phrase is a name, whatever the part-of-speech step says.
    named: u32,
    /// Appearances (Japanese) right before する, な and their forms: used as a verb or an
    /// adjective there.
    predicative: u32,
    in_title: bool,
    /// Appeared as a whole run of CJK nouns, between particles or punctuation.
    compound: bool,
}

impl Candidate {
    /// The statistical score, before it is scaled to 0–1.
    fn raw_score(&self) -> f64 {
        let length = 1.0 + 0.25 * (self.words.len() as f64 - 1.0);
        let early = 1.0 + 1.0 / (1.0 + self.first as f64 / 25.0);
        let capitalized = 1.0 + 0.5 * f64::from(self.capitalized) / f64::from(self.count);
        self.weight * length * early * capitalized
    }

    /// Whether a phrase of several words counts: it must recur (the title counts as one
    /// appearance), or every chance sequence of words would be one (`stabilizes lazycell`).
    /// A Japanese compound noun counts at once: the segmenter cuts finer than words
    /// (`過去` `最低`).
    /// A word alone that looks like a past tense (`waited`) counts only when it was written
    /// capitalized mid-sentence (a name); a count or date in kanji (`一週`, `二十日`, which
    /// the segmenter may cut into several words) never does, nor a counter whose number was
    /// in digits (`年目` of `4 年目`).
    fn is_eligible(&self, pos: Pos) -> bool {
        let whole = self.words.concat();
        if crate::stopwords::is_count_or_date(&whole) || crate::stopwords::is_bare_counter(&whole) {
            return false;
        }
        let eligible = match self.words.as_slice() {
            [word] => self.capitalized > 0 || !crate::stopwords::looks_past_tense(word),
            _ => self.count >= 2 || self.compound,
        };
        eligible && self.is_noun_phrase(pos)
    }

    /// The part-of-speech step (see `pos`): whether the phrase is a name or a noun phrase,
    /// not a verb, adjective or adverb alone, nor a phrase around a verb.
    fn is_noun_phrase(&self, pos: Pos) -> bool {
        match (pos, self.words.as_slice()) {
            (Pos::English, words) if words.iter().any(|w| crate::pos::is_no_topic(w)) => false,
            (Pos::English, _) if self.named > 0 => true,
            (Pos::English, [word]) => !crate::pos::is_predicate_word(word),
            (Pos::English, [.., last]) => {
                !crate::pos::is_modifier(last)
                    && !self.words.iter().any(|w| crate::pos::is_pure_verb(w))
            }
            (Pos::Japanese, words) => {
                self.predicative < self.count
                    && !(words.len() == 1 && crate::pos::is_japanese_modifier(&words[0]))
            }
            _ => true,
        }
    }

    /// Whether `other`'s words appear in a row in this phrase.
    fn contains(&self, other: &Candidate) -> bool {
        self.words.len() > other.words.len()
            && self
                .words
                .windows(other.words.len())
                .any(|window| window == other.words.as_slice())
    }
}

/// Every phrase of the document by its name.
fn candidates(pieces: &[Piece]) -> HashMap<String, Candidate> {
    let mut found: HashMap<String, Candidate> = HashMap::new();
    let mut run: Vec<(usize, &Word)> = Vec::new();
    let mut position = 0;
    for piece in pieces {
        match piece {
            Piece::Word(word) => {
                let ends_run = word.stop
                    || run
                        .last()
                        .is_some_and(|(_, last)| last.script != word.script);
                if ends_run {
                    add_phrases(&run, Some(word), &mut found);
                    run.clear();
                }
                if !word.stop {
                    run.push((position, word));
                }
                position += 1;
            }
            Piece::Break => {
                add_phrases(&run, None, &mut found);
                run.clear();
            }
        }
    }
    add_phrases(&run, None, &mut found);
    found
}

/// Adds the phrases of a run of words (no stop word or break inside, one script), followed
/// by the word `next` (the one that ended the run; `None` at a break).
fn add_phrases(
    run: &[(usize, &Word)],
    next: Option<&Word>,
    found: &mut HashMap<String, Candidate>,
) {
    let Some((_, first)) = run.first() else {
        return;
    };
    // A Japanese word right before する or な is a verb or adjective there (see `pos`).
    let predicative = first.script == Script::Cjk
        && next.is_some_and(|w| {
            w.script == Script::Cjk && crate::pos::is_japanese_predicate_ending(&w.key)
        });
    let (most, joiner) = match first.script {
        Script::Spaced => (MAX_SPACED_WORDS, " "),
        Script::Cjk => (MAX_CJK_WORDS, ""),
    };
    for start in 0..run.len() {
        for len in 1..=most.min(run.len() - start) {
            let words = &run[start..start + len];
            let keys: Vec<&str> = words.iter().map(|(_, w)| w.key.as_str()).collect();
            let name = keys.join(joiner);
            // A one-character word alone (`都`, `年`) says nothing.
            if name.chars().count() < 2 || name.chars().count() > MAX_TAG_CHARS {
                continue;
            }
            let in_title = words.iter().all(|(_, w)| w.in_title);
            let capitalized = first_is_capitalized(words);
            let candidate = found.entry(name).or_insert_with(|| Candidate {
                words: keys.iter().map(|k| (*k).to_owned()).collect(),
                count: 0,
                weight: 0.0,
                first: words[0].0,
                capitalized: 0,
                named: 0,
                predicative: 0,
                in_title: false,
                compound: false,
            });
            candidate.count += 1;
            candidate.weight += if in_title { TITLE_WEIGHT } else { 1.0 };
            candidate.in_title |= in_title;
            candidate.compound |= first.script == Script::Cjk && len == run.len();
            candidate.capitalized += u32::from(capitalized);
            candidate.named += u32::from(capitalized && !in_title);
            candidate.predicative += u32::from(predicative && start + len == run.len());
        }
    }
}

fn first_is_capitalized(words: &[(usize, &Word)]) -> bool {
    words.iter().all(|(_, w)| w.capitalized)
}

/// The best `limit` candidates, scaled to 0–1, without phrases that only appear inside a
/// longer chosen one, nor those `pos` says are no noun phrase.
fn choose(candidates: HashMap<String, Candidate>, limit: usize, pos: Pos) -> Vec<Keyphrase> {
    let mut scored: Vec<(String, f64, Candidate)> = candidates
        .into_iter()
        .filter(|(_, candidate)| candidate.is_eligible(pos))
        .map(|(name, candidate)| (name, candidate.raw_score(), candidate))
        .collect();
    let best = scored.iter().map(|(_, raw, _)| *raw).fold(0.0, f64::max);
    if best <= 0.0 {
        return Vec::new();
    }
    for entry in &mut scored {
        entry.1 = ((entry.1 / best) * 1000.0).round() / 1000.0;
    }
    // Ties go by name, so that the order never depends on the map's.
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut chosen: Vec<(String, f64, Candidate)> = Vec::new();
    for (name, score, candidate) in scored {
        if chosen.len() == limit || score < MIN_SCORE {
            break;
        }
        let inside_chosen = chosen
            .iter()
            .any(|(_, _, longer)| longer.contains(&candidate) && candidate.count <= longer.count);
        if !inside_chosen {
            chosen.push((name, score, candidate));
        }
    }
    chosen
        .into_iter()
        .map(|(name, score, _)| Keyphrase { name, score })
        .collect()
}
