//! Precision and recall of the tagger on a labelled set of 200 items (100 English, 100
//! Japanese, `testdata/labelled_*.tsv`), each with the tags a person would accept, and what
//! tagging costs per item. Printed with `--nocapture`:
//!
//! `cargo test -p tidings-tags --release --test labelled -- --nocapture`
//!
//! A tag counts as right when its name is one of the item's accepted tags (after
//! `normalize_tag`); precision is right tags over tags given, recall right tags over accepted
//! tags. "Before" is the tagger without the item's language (no part-of-speech step), "after"
//! with it.

use std::collections::HashSet;
use std::time::Instant;

use tidings_tags::{MAX_TAGS, extract_keyphrases_in, normalize_tag};

struct Labelled {
    language: String,
    title: String,
    body: String,
    accepted: HashSet<String>,
}

fn load(text: &str) -> Vec<Labelled> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 4, "a labelled line has 4 fields: {line}");
            Labelled {
                language: fields[0].to_owned(),
                title: fields[1].to_owned(),
                body: fields[2].to_owned(),
                accepted: fields[3]
                    .split(';')
                    .filter_map(|tag| normalize_tag(tag.trim()))
                    .collect(),
            }
        })
        .collect()
}

/// Right tags, tags given and accepted tags over `items`, tagged with their language or
/// without, counting the `most` best tags of each; the wrong tags given, for the report.
fn score(
    items: &[Labelled],
    with_language: bool,
    most: usize,
) -> (usize, usize, usize, Vec<String>) {
    let (mut right, mut given, mut accepted) = (0, 0, 0);
    let mut wrong = Vec::new();
    for item in items {
        let language = with_language.then_some(item.language.as_str());
        let mut tags = tag(&item.title, &item.body, language);
        tags.truncate(most);
        given += tags.len();
        accepted += item.accepted.len();
        for name in tags {
            if item.accepted.contains(&name) {
                right += 1;
            } else {
                wrong.push(name);
            }
        }
    }
    (right, given, accepted, wrong)
}

fn tag(title: &str, body: &str, language: Option<&str>) -> Vec<String> {
    extract_keyphrases_in(title, body, language, MAX_TAGS)
        .into_iter()
        .map(|k| k.name)
        .collect()
}

fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (1000.0 * part as f64 / whole as f64).round() / 10.0
}

#[test]
fn labelled_set_precision_and_recall() {
    let english = load(include_str!("../testdata/labelled_en.tsv"));
    let japanese = load(include_str!("../testdata/labelled_ja.tsv"));
    assert_eq!(english.len(), 100);
    assert_eq!(japanese.len(), 100);
    println!(
        "| language | items | precision before | after | recall before | after | \
         top 3 precision before | after | tags per item before | after |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (name, items) in [("en", &english), ("ja", &japanese)] {
        let (right0, given0, accepted0, _) = score(items, false, MAX_TAGS);
        let (right1, given1, accepted1, wrong) = score(items, true, MAX_TAGS);
        let (top0, top_given0, _, _) = score(items, false, 3);
        let (top1, top_given1, _, _) = score(items, true, 3);
        println!(
            "| {name} | {} | {} % ({right0}/{given0}) | {} % ({right1}/{given1}) | {} % | {} % \
             | {} % | {} % | {:.2} | {:.2} |",
            items.len(),
            percent(right0, given0),
            percent(right1, given1),
            percent(right0, accepted0),
            percent(right1, accepted1),
            percent(top0, top_given0),
            percent(top1, top_given1),
            given0 as f64 / items.len() as f64,
            given1 as f64 / items.len() as f64,
        );
        // A change that makes the step worse than no step fails here.
        assert!(right1 * given0 >= right0 * given1, "{name}: precision fell");
        if std::env::var_os("SHOW_WRONG").is_some() {
            println!("{name} wrong after: {wrong:?}");
        }
    }
    // What tagging costs: every item tagged 20 times, wall clock on one thread.
    let all: Vec<&Labelled> = english.iter().chain(&japanese).collect();
    for with_language in [false, true] {
        let start = Instant::now();
        let rounds = 20;
        for _ in 0..rounds {
            for item in &all {
                let language = with_language.then_some(item.language.as_str());
                std::hint::black_box(tag(&item.title, &item.body, language));
            }
        }
        let per_item = start.elapsed().as_secs_f64() * 1e6 / (rounds * all.len()) as f64;
        println!(
            "tagging cost {}: {per_item:.1} µs per item (wall clock, one thread)",
            if with_language {
                "with language"
            } else {
                "without language"
            }
        );
    }
}
