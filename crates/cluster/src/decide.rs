//! The decision: whether two items are the same story, with the evidence or the reason (the
//! rules are in the [crate docs](crate)).

use std::collections::HashSet;

use crate::fingerprint::{Fingerprint, SHINGLE_TOKENS};

/// Shingles each text needs before its text alone can decide (about fifteen words, or twenty
/// CJK characters: a paragraph, not a one-line summary).
pub const SUBSTANTIAL_SHINGLES: usize = 15;

/// Shingles each text needs before the texts are compared at all: shorter texts (a headline
/// repeated, `Comments`) say nothing either way.
pub const COMPARABLE_SHINGLES: usize = 4;

/// Containment of the smaller text's shingles in the other's at which texts are copies. On the
/// labelled set, articles of two outlets quoting one press release reach 0.43 and reprints
/// edited by the paper (a new first sentence, trimmed, another spelling) 0.79.
pub const TEXT_SAME: f64 = 0.75;

/// Containment at which texts are copies when the vectors confirm.
pub const TEXT_CONFIRMED: f64 = 0.6;

/// Shingles that two texts' common start and end (a newsletter's greeting and footer) must
/// have together before the rest of each is compared on its own.
pub const FRAME_SHINGLES: usize = 8;

/// Containment below which the texts disagree, whatever the titles say.
pub const TEXT_DISAGREE: f64 = 0.5;

/// Containment below which two texts behind one URL are different items (the URL is a show's
/// or a newsletter's page, not the item's): substantial texts, or short ones under titles that
/// differ too.
pub const URL_TEXT_DISJOINT: f64 = 0.25;

/// Similarity (Jaccard over tokens) at which titles alone are the same story.
pub const TITLE_SAME: f64 = 0.85;

/// Title similarity short texts need beside their containment.
pub const TITLE_WITH_SHORT_TEXT: f64 = 0.5;

/// Vector cosine that confirms texts between [`TEXT_CONFIRMED`] and [`TEXT_SAME`].
pub const VECTOR_CONFIRM: f32 = 0.8;

/// Vector cosine below which text or title evidence is overruled.
pub const VECTOR_VETO: f32 = 0.35;

/// What showed two items to be the same story.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// A canonical URL (link, canonical link or guid) in common.
    Url,
    /// Near-identical texts (one contained in the other).
    Text,
    /// Near-identical specific titles, and texts that do not disagree.
    Title,
}

/// Why two items are kept apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Apart {
    /// Their titles name different parts, episodes, issues or dates.
    Series,
    /// One is marked as a correction and the other is not.
    Correction,
    /// Their texts are versions of one text with a figure changed in the same place.
    ChangedFigure,
    /// Their texts begin and end alike and differ in between: issues of a newsletter in one
    /// frame (greeting, footer), or a version with a passage rewritten.
    Frame,
    /// They share a URL, but their texts have almost nothing in common and are substantial, or
    /// are a few sentences under titles that differ too: the URL is a page for many items (a
    /// show, a newsletter), not theirs.
    SharedPage,
    /// Their vectors disagree.
    Vectors,
    /// Their texts are comparable and differ.
    Texts,
    /// Nothing shows them to be the same story.
    NoEvidence,
}

/// The decision on two items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The same story, and what showed it.
    Same(Evidence),
    /// Different stories, and why.
    Different(Apart),
}

impl Verdict {
    /// Whether the items are the same story.
    pub fn is_same(&self) -> bool {
        matches!(self, Verdict::Same(_))
    }
}

/// The measures [`same_story`] decides on, for whoever tunes or explains a decision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measures {
    /// Whether a canonical URL is shared.
    pub shared_url: bool,
    /// Whether a shared URL is one an item claims as its own page (its canonical link or its
    /// guid), not only the link of both.
    pub claimed_url: bool,
    /// Shingles of the smaller text.
    pub smaller_text: usize,
    /// The share of the smaller text's shingles found in the other text (0 when either is
    /// empty).
    pub containment: f64,
    /// The best Jaccard similarity of the titles' token sets (with and without site names).
    pub title: f64,
    /// The vectors' cosine, when both have one of the same length.
    pub cosine: Option<f32>,
}

impl Measures {
    /// The measures of two items.
    pub fn of(a: &Fingerprint, b: &Fingerprint) -> Measures {
        let smaller_text = a.shingles.len().min(b.shingles.len());
        let containment = if smaller_text == 0 {
            0.0
        } else {
            let (small, large) = if a.shingles.len() <= b.shingles.len() {
                (&a.shingles, &b.shingles)
            } else {
                (&b.shingles, &a.shingles)
            };
            small.iter().filter(|s| large.contains(s)).count() as f64 / small.len() as f64
        };
        let mut title: f64 = 0.0;
        for x in &a.titles {
            for y in &b.titles {
                let common = x.intersection(y).count();
                let all = x.len() + y.len() - common;
                if all > 0 {
                    title = title.max(common as f64 / all as f64);
                }
            }
        }
        Measures {
            shared_url: a.urls.iter().any(|u| b.urls.contains(u)),
            claimed_url: a.claimed.iter().any(|u| b.urls.contains(u))
                || b.claimed.iter().any(|u| a.urls.contains(u)),
            smaller_text,
            containment,
            title,
            cosine: cosine(a.vector.as_deref(), b.vector.as_deref()),
        }
    }
}

/// Whether `a` and `b` are the same story ([crate docs](crate)). Symmetric, and never fails.
pub fn same_story(a: &Fingerprint, b: &Fingerprint) -> Verdict {
    let m = Measures::of(a, b);
    if a.marks.differ(&b.marks) {
        return Verdict::Different(Apart::Series);
    }
    if a.correction != b.correction {
        return Verdict::Different(Apart::Correction);
    }
    let comparable = m.smaller_text >= COMPARABLE_SHINGLES;
    if comparable && m.containment >= TEXT_DISAGREE && changed_figure(a, b) {
        return Verdict::Different(Apart::ChangedFigure);
    }
    if framed_apart(&a.sequence, &b.sequence) {
        return Verdict::Different(Apart::Frame);
    }
    let substantial = m.smaller_text >= SUBSTANTIAL_SHINGLES;
    if m.shared_url {
        // Two texts that have almost nothing in common behind one URL: substantial ones, or
        // short ones (a podcast episode's sentence) under titles that differ too, when the URL
        // is only both items' link (a canonical link or a guid names the item's own page, and
        // a syndication partner's teaser says nothing about the story).
        let short_apart =
            !m.claimed_url && m.smaller_text >= FRAME_SHINGLES && m.title < TITLE_WITH_SHORT_TEXT;
        if (substantial || short_apart) && m.containment < URL_TEXT_DISJOINT {
            return Verdict::Different(Apart::SharedPage);
        }
        return Verdict::Same(Evidence::Url);
    }
    if m.cosine.is_some_and(|c| c < VECTOR_VETO) {
        return Verdict::Different(Apart::Vectors);
    }
    if substantial {
        if m.containment >= TEXT_SAME {
            return Verdict::Same(Evidence::Text);
        }
        let confirmed = m.cosine.is_some_and(|c| c >= VECTOR_CONFIRM);
        if m.containment >= TEXT_CONFIRMED && confirmed {
            return Verdict::Same(Evidence::Text);
        }
    } else if comparable && m.containment >= TEXT_SAME && m.title >= TITLE_WITH_SHORT_TEXT {
        return Verdict::Same(Evidence::Text);
    }
    if comparable && m.containment < TEXT_DISAGREE {
        return Verdict::Different(Apart::Texts);
    }
    if m.title >= TITLE_SAME && a.title_specific && b.title_specific {
        return Verdict::Same(Evidence::Title);
    }
    Verdict::Different(Apart::NoEvidence)
}

/// Whether two texts (their shingles in order) share a frame, a common start and a common end
/// of at least [`FRAME_SHINGLES`] together, around middles that disagree (under
/// [`TEXT_DISAGREE`]) of at least as many shingles each once the shingles that straddle the
/// frame's edges are left out (those differ whenever anything next to them does, so two small
/// edits a sentence apart do not make a middle of their own). Both ends are
/// needed: a reprint cut short with the reprinter's own last lines shares only a start with
/// the original.
fn framed_apart(a: &[u64], b: &[u64]) -> bool {
    let start = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let most = a.len().min(b.len()) - start;
    let end = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(most)
        .take_while(|(x, y)| x == y)
        .count();
    if start == 0 || end == 0 || start + end < FRAME_SHINGLES {
        return false;
    }
    let edge = SHINGLE_TOKENS - 1;
    let middle = |text: &'_ [u64]| -> Vec<u64> {
        let inner = &text[start..text.len() - end];
        if inner.len() > 2 * edge {
            inner[edge..inner.len() - edge].to_vec()
        } else {
            Vec::new()
        }
    };
    let (middle_a, middle_b) = (middle(a), middle(b));
    if middle_a.len() < FRAME_SHINGLES || middle_b.len() < FRAME_SHINGLES {
        return false;
    }
    // As sets, like the whole texts' containment, so that the answer is the same whichever
    // text comes first.
    let (x, y): (HashSet<u64>, HashSet<u64>) = (
        middle_a.into_iter().collect(),
        middle_b.into_iter().collect(),
    );
    let shared = x.intersection(&y).count();
    (shared as f64) < TEXT_DISAGREE * x.len().min(y.len()) as f64
}

/// Whether the texts put a different figure in the same place (the same tokens before and
/// after it) and neither has the other's figure there: `rose 12%` and `rose 21%`.
fn changed_figure(a: &Fingerprint, b: &Fingerprint) -> bool {
    a.figures.iter().any(|(place, here)| {
        b.figures
            .get(place)
            .is_some_and(|there| here.is_disjoint(there))
    })
}

/// The cosine of two vectors of the same length; `None` when either is missing, empty, of
/// another length, zero or not finite.
fn cosine(a: Option<&[f32]>, b: Option<&[f32]>) -> Option<f32> {
    let (a, b) = (a?, b?);
    if a.is_empty() || a.len() != b.len() {
        return None;
    }
    let (mut dot, mut aa, mut bb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        aa += x * x;
        bb += y * y;
    }
    let cosine = dot / (aa.sqrt() * bb.sqrt());
    cosine.is_finite().then_some(cosine as f32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Story;

    fn story<'a>(link: &'a str, title: &'a str, text: &'a str) -> Fingerprint {
        Fingerprint::new(&Story {
            link: Some(link),
            title: Some(title),
            text: Some(text),
            ..Story::default()
        })
    }

    const WIRE: &str = "東京都は28日、来年度から公立の小中学校の給食費を無償にすると発表した。対象は約60万人で、年間の費用は約450億円を見込む。物価の上昇で家計の負担が増えていることを踏まえた。都内の一部の区ではすでに無償化が始まっている。";

    #[test]
    fn a_japanese_reprint_is_the_same_story_by_its_text() {
        let original = story(
            "https://example.jp/news/1",
            "給食費を無償化へ　東京都",
            WIRE,
        );
        let reprint = story(
            "https://paper.example.jp/a/99",
            "都、小中学校の給食費を来年度から無償に",
            &format!("【共同】{WIRE}（編集部）"),
        );
        assert_eq!(
            same_story(&original, &reprint),
            Verdict::Same(Evidence::Text)
        );
    }

    #[test]
    fn a_corrected_figure_keeps_the_versions_apart_even_behind_one_url() {
        let original = story("https://example.jp/news/1", "給食費を無償化へ", WIRE);
        let corrected = WIRE.replace("約450億円", "約540億円");
        let corrected = story("https://example.jp/news/1", "給食費を無償化へ", &corrected);
        assert_eq!(
            same_story(&original, &corrected),
            Verdict::Different(Apart::ChangedFigure)
        );
    }

    #[test]
    fn a_url_variant_is_the_same_story_whatever_the_texts() {
        let a = story(
            "https://www.example.com/2026/11/story/",
            "Council approves budget",
            "The council approved the budget on Tuesday after a long debate.",
        );
        let b = story(
            "http://m.example.com/2026/11/story?utm_source=rss",
            "Budget passes",
            "",
        );
        assert_eq!(same_story(&a, &b), Verdict::Same(Evidence::Url));
    }

    #[test]
    fn a_show_page_behind_every_episode_is_no_evidence() {
        let show = "https://podcast.example/show";
        let one = story(
            show,
            "Winter pruning",
            "Which shrubs to prune now in winter, and which ones to leave until spring.",
        );
        let two = story(
            show,
            "Garlic on a balcony",
            "Three kinds of garlic planted in pots on a balcony, and when to harvest them.",
        );
        assert_eq!(
            same_story(&one, &two),
            Verdict::Different(Apart::SharedPage)
        );
        // Another blurb under the same title is one episode seen twice.
        let again = story(
            show,
            "Winter pruning",
            "Pruning now: which shrubs, and which to leave.",
        );
        assert_eq!(same_story(&one, &again), Verdict::Same(Evidence::Url));
    }

    #[test]
    fn a_site_home_page_is_no_evidence() {
        let a = story("https://example.com/", "Budget passes after debate", "");
        let b = story("https://www.example.com", "New park opens downtown", "");
        assert_eq!(same_story(&a, &b), Verdict::Different(Apart::NoEvidence));
    }

    #[test]
    fn a_title_only_item_matches_on_a_specific_title() {
        let full = story(
            "https://example.com/a",
            "Offshore wind farm begins full operation in the north",
            "The wind farm began full operation on Tuesday with 110 turbines.",
        );
        let title_only = story(
            "https://aggregator.example/item/1",
            "Offshore wind farm begins full operation in the north - Example News",
            "",
        );
        assert_eq!(
            same_story(&full, &title_only),
            Verdict::Same(Evidence::Title)
        );
        let short = story("https://aggregator.example/item/2", "Weekly links", "");
        let other = story("https://example.org/b", "Weekly links", "");
        assert_eq!(
            same_story(&short, &other),
            Verdict::Different(Apart::NoEvidence)
        );
    }

    #[test]
    fn chinese_parts_of_a_series_stay_apart() {
        let intro = "本系列将分几期介绍芯片产业链各个环节的现状与挑战。";
        let one = story(
            "https://example.cn/1",
            "深度解析：芯片产业链（一）",
            &format!("{intro}本期关注芯片设计。"),
        );
        let two = story(
            "https://example.cn/2",
            "深度解析：芯片产业链（二）",
            &format!("{intro}本期关注晶圆制造。"),
        );
        assert_eq!(same_story(&one, &two), Verdict::Different(Apart::Series));
    }

    #[test]
    fn vectors_veto_a_title_match_and_odd_vectors_are_ignored() {
        let a = Fingerprint::new(&Story {
            link: Some("https://example.com/a"),
            title: Some("Offshore wind farm begins full operation in the north"),
            vector: Some(&[1.0, 0.0]),
            ..Story::default()
        });
        let b = Fingerprint::new(&Story {
            link: Some("https://example.org/b"),
            title: Some("Offshore wind farm begins full operation in the north"),
            vector: Some(&[0.0, 1.0]),
            ..Story::default()
        });
        assert_eq!(same_story(&a, &b), Verdict::Different(Apart::Vectors));
        for odd in [
            &[][..],
            &[1.0, 0.0, 0.0][..],
            &[0.0, 0.0][..],
            &[f32::NAN, 1.0][..],
        ] {
            let c = Fingerprint::new(&Story {
                vector: Some(odd),
                link: Some("https://example.org/c"),
                title: Some("Offshore wind farm begins full operation in the north"),
                ..Story::default()
            });
            assert_eq!(
                same_story(&a, &c),
                Verdict::Same(Evidence::Title),
                "{odd:?}"
            );
        }
    }

    #[test]
    fn nothing_makes_it_panic() {
        let long = "word ".repeat(5_000);
        let odd = [
            "",
            "\u{0}",
            "%%%",
            "第",
            "(",
            "第九九九九九九九九九九九九回",
            "Part 99999999999999999999999",
            "https://[::1]:99999/",
            "http://%zz/",
            long.as_str(),
        ];
        for x in odd {
            for y in odd {
                let a = Fingerprint::new(&Story {
                    link: Some(x),
                    canonical: Some(y),
                    guid: Some(x),
                    title: Some(x),
                    text: Some(y),
                    vector: None,
                });
                let b = story(y, y, x);
                let _ = same_story(&a, &b);
                let _ = crate::lookup_keys(&a);
            }
        }
    }
}
