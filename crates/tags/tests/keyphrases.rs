//! The extractor on real-looking items in Japanese, English, German and a mix: the phrases a
//! reader would tag them with come out, stop words never do, scores are in 0–1 and the same
//! input gives the same tags.

use tidings_tags::{Keyphrase, MAX_TAG_CHARS, MAX_TAGS, extract_keyphrases};

fn names(tags: &[Keyphrase]) -> Vec<&str> {
    tags.iter().map(|t| t.name.as_str()).collect()
}

/// What holds for every extraction: at most the limit, scores in 0–1 best first with the
/// best at 1, names normalized and unique, and the same answer twice.
fn check(title: &str, text: &str) -> Vec<Keyphrase> {
    let tags = extract_keyphrases(title, text, MAX_TAGS);
    if std::env::var_os("SHOW_TAGS").is_some() {
        eprintln!("{title}: {tags:?}");
    }
    assert!(!tags.is_empty(), "no tags for {title:?}");
    assert!(tags.len() <= MAX_TAGS);
    assert_eq!(tags[0].score, 1.0, "{tags:?}");
    for pair in tags.windows(2) {
        assert!(pair[0].score >= pair[1].score, "{tags:?}");
    }
    for tag in &tags {
        assert!((0.0..=1.0).contains(&tag.score), "{tag:?}");
        assert_eq!(
            tidings_tags::normalize_tag(&tag.name).as_deref(),
            Some(tag.name.as_str())
        );
        assert!(tag.name.chars().count() <= MAX_TAG_CHARS);
    }
    let mut unique = names(&tags);
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), tags.len(), "{tags:?}");
    assert_eq!(
        extract_keyphrases(title, text, MAX_TAGS),
        tags,
        "not deterministic"
    );
    tags
}

fn assert_has(tags: &[Keyphrase], expected: &[&str]) {
    for name in expected {
        assert!(
            names(tags).contains(name),
            "{name:?} missing from {:?}",
            names(tags)
        );
    }
}

fn assert_lacks(tags: &[Keyphrase], unwanted: &[&str]) {
    for tag in tags {
        for word in tag.name.split(' ') {
            assert!(
                !unwanted.contains(&word),
                "stop word {word:?} in {:?}",
                names(tags)
            );
        }
    }
}

#[test]
fn english() {
    let tags = check(
        "Rust 1.80 stabilizes LazyCell and LazyLock",
        "The Rust team is happy to announce a new version of Rust. LazyCell and LazyLock are \
         now stable: they initialize a value on first access. LazyLock is the thread-safe one, \
         and it replaces the lazy_static crate in many programs. The release also brings \
         exclusive ranges in patterns. Read more at https://blog.rust-lang.org/ about the \
         release.",
    );
    assert_has(&tags, &["rust", "lazylock", "lazycell"]);
    assert_eq!(tags[0].name, "rust", "{tags:?}");
    assert_lacks(
        &tags,
        &[
            "the", "and", "is", "a", "of", "at", "about", "new", "read", "https",
        ],
    );
    assert!(
        !names(&tags)
            .iter()
            .any(|n| n.contains("1.80") || n.contains("blog")),
        "{tags:?}"
    );
}

#[test]
fn english_phrases_of_several_words_that_recur() {
    let tags = check(
        "Why we moved to PostgreSQL logical replication",
        "Logical replication copies changes row by row. We used logical replication to move \
         forty databases with no downtime; streaming replication could not do that across \
         major versions.",
    );
    assert_has(&tags, &["logical replication", "postgresql"]);
    // `replication` appears outside the phrase too (streaming replication), so it stays.
    assert_has(&tags, &["replication"]);
    // `logical` never appears without `replication`: the phrase says it.
    assert!(!names(&tags).contains(&"logical"), "{tags:?}");
}

#[test]
fn japanese() {
    let tags = check(
        "東京都知事選挙の投票率が過去最低に",
        "東京都知事選挙の投票率は、前回の選挙を大きく下回りました。選挙管理委員会によると、\
         投票率の低下は若い世代で目立ちます。知事選挙は四年ごとに行われ、次の選挙では\
         インターネット投票の導入も検討されています。",
    );
    assert_eq!(tags[0].name, "選挙", "{tags:?}");
    // Compound nouns stay whole, also when the segmenter cut them (`過去` `最低`).
    assert_has(&tags, &["東京都知事選挙", "投票率", "過去最低"]);
    // Particles and endings are never tags or parts of them.
    for tag in &tags {
        assert!(
            !tag.name
                .chars()
                .any(|c| ('\u{3041}'..='\u{309F}').contains(&c)),
            "hiragana in {tag:?}"
        );
        assert!(tag.name.chars().count() >= 2, "{tag:?}");
    }
}

#[test]
fn japanese_katakana_and_full_width() {
    let tags = check(
        "ＲＳＳリーダーを作りました",
        "自宅のサーバーで動くＲＳＳリーダーを公開しました。リーダーは全文検索に対応し、\
         タグも自動で付きます。",
    );
    assert_has(&tags, &["rss", "リーダー", "全文検索"]);
}

#[test]
fn japanese_counters_after_digits_are_no_tags() {
    // A number in digits is a word apart, leaving its counter (`年目`, `周年`) alone.
    let tags = check(
        "駅長の猫、4 年目の春",
        "小さな駅で働く猫の駅長が、今年で 4 年目を迎えました。開業 10 周年の駅です。",
    );
    assert_has(&tags, &["駅長"]);
    assert_lacks(&tags, &["年目", "周年"]);
}

#[test]
fn mixed_japanese_and_english() {
    let tags = check(
        "Rust製のRSSリーダー tidings を公開",
        "tidings は Rust で書かれた RSS リーダーです。SQLite と PostgreSQL に対応し、\
         タグ付けやキーフレーズ抽出も Rust だけで動きます。",
    );
    assert_has(
        &tags,
        &["rust", "rss", "tidings", "リーダー", "キーフレーズ抽出"],
    );
    assert_lacks(&tags, &["で", "は", "の"]);
}

#[test]
fn german() {
    let tags = check(
        "Bundesregierung beschließt neues Klimaschutzgesetz",
        "Die Bundesregierung hat am Mittwoch das Klimaschutzgesetz beschlossen. Nach dem \
         Gesetz sollen die Emissionen bis 2030 deutlich sinken. Das Klimaschutzgesetz sieht \
         für jeden Sektor eigene Ziele vor, und die Bundesregierung will sie jährlich prüfen.",
    );
    assert_has(&tags, &["klimaschutzgesetz", "bundesregierung"]);
    assert_lacks(
        &tags,
        &[
            "die", "der", "das", "und", "hat", "am", "für", "nach", "bis",
        ],
    );
}

#[test]
fn scores_fall_with_importance() {
    let tags = check(
        "Kubernetes",
        "Kubernetes schedules containers. Kubernetes restarts containers. Helm installs charts.",
    );
    let score = |name: &str| tags.iter().find(|t| t.name == name).map(|t| t.score);
    assert_eq!(score("kubernetes"), Some(1.0));
    let containers = score("containers").expect("containers");
    let helm = score("helm").expect("helm");
    assert!(containers < 1.0 && helm < containers, "{tags:?}");
}

#[test]
fn nothing_to_tag() {
    assert!(extract_keyphrases("", "", MAX_TAGS).is_empty());
    assert!(extract_keyphrases("The and of", "is it 2024? 42.", MAX_TAGS).is_empty());
    assert!(extract_keyphrases("Rust", "", 0).is_empty());
    assert!(extract_keyphrases("のはをにで", "。、！", MAX_TAGS).is_empty());
}

#[test]
fn limits_hold_for_large_and_odd_input() {
    let text = (0..5000)
        .map(|n| format!("word{n} alpha{} ", n % 97))
        .collect::<String>();
    let tags = extract_keyphrases("Big", &text, 5);
    assert!(tags.len() <= 5);
    let long = "x".repeat(500);
    let tags = extract_keyphrases(&long, &long, MAX_TAGS);
    assert!(tags.is_empty(), "{tags:?}");
    // Control characters, lone combining marks, emoji: no panic, no junk.
    let tags = extract_keyphrases(
        "\u{0}\u{301}🎉 Launch",
        "\u{200B}launch\u{0} 🎉🎉",
        MAX_TAGS,
    );
    assert_eq!(names(&tags), ["launch"]);
}

#[test]
fn generic_words_past_tenses_and_dates_are_no_tags() {
    let tags = check(
        "It took a long time",
        "It took a long time to ship the compiler. After a long time, the new version of the \
         compiler is out. People waited a long time and the team worked for years on it.",
    );
    assert_eq!(tags[0].name, "compiler", "{tags:?}");
    assert_lacks(
        &tags,
        &[
            "long", "time", "took", "waited", "worked", "people", "years",
        ],
    );
    // A past tense is still part of a phrase, and a name ending in -ed is still a name.
    let tags = check(
        "Distributed systems at Red Hat",
        "Distributed systems fail in new ways. Testing distributed systems takes patience, and \
         the Fedora team at Red Hat tested their installer with Ahmed.",
    );
    assert_has(&tags, &["distributed systems"]);

    let tags = check(
        "桜の開花、例年より一週間早く",
        "桜の開花は例年より一週間早く、東京では三月二十日に満開となった。気象庁によると、\
         開花が一週間早くなったのは気温が高かったためだ。",
    );
    assert_eq!(tags[0].name, "開花", "{tags:?}");
    for date in ["一週", "一週間", "二十日", "三月二十日"] {
        assert!(
            !names(&tags).contains(&date),
            "{date} in {:?}",
            names(&tags)
        );
    }
    assert_has(&tags, &["例年", "気象庁"]);
}
