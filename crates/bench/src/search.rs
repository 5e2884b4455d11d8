//! The search benchmark (F35): realistic multilingual article text for `tidings-bench
//! generate`, and `tidings-bench search`, which times searches of each kind through the store
//! on the generated data set.
//!
//! The text: each item is in English, German, French, Japanese, Chinese or Korean, with words
//! drawn from a 20,000-word vocabulary per language with a Zipf-like distribution (a few
//! hundred real words first, then made-up words of the language's shape), so that common words
//! match a large share of the items and rare ones a few, as in real news.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use tidings::config::GlobalConfig;
use tidings_store::{ItemFilter, ItemQuery, ItemSearch, Store};
use tidings_text::SearchQuery;

/// Words per language's vocabulary.
const VOCABULARY: usize = 20_000;

/// A small, fast, deterministic random number generator (SplitMix64).
pub struct Rng(u64);

impl Rng {
    /// A generator for item `k`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03)
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// A rank in `0..n` with probability about proportional to 1 / (rank + 1).
    fn zipf(&mut self, n: usize) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64).powf(u) as usize).saturating_sub(1).min(n - 1)
    }
}

const EN: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "in",
    "for",
    "is",
    "on",
    "that",
    "with",
    "new",
    "says",
    "after",
    "year",
    "government",
    "market",
    "people",
    "city",
    "police",
    "report",
    "company",
    "state",
    "world",
    "president",
    "election",
    "court",
    "health",
    "school",
    "water",
    "energy",
    "climate",
    "change",
    "bank",
    "central",
    "open",
    "source",
    "software",
    "stock",
    "prices",
    "rust",
    "python",
    "security",
    "data",
    "privacy",
    "research",
    "university",
    "science",
    "space",
    "football",
    "season",
    "team",
    "music",
    "film",
    "festival",
    "weather",
    "storm",
    "earthquake",
    "economy",
    "inflation",
    "rates",
    "housing",
    "workers",
    "strike",
    "union",
    "trade",
    "china",
    "japan",
    "europe",
    "germany",
    "france",
    "korea",
    "tokyo",
    "london",
    "berlin",
    "paris",
    "seoul",
    "beijing",
    "minister",
    "policy",
    "budget",
    "tax",
    "hospital",
    "vaccine",
    "virus",
    "study",
    "students",
    "teachers",
    "train",
    "airport",
    "flights",
    "electric",
    "cars",
    "battery",
    "solar",
    "wind",
    "power",
    "grid",
    "internet",
    "phone",
    "apple",
    "google",
    "microsoft",
    "linux",
    "kernel",
    "release",
    "version",
    "update",
    "browser",
    "database",
    "server",
    "cloud",
    "startup",
    "investors",
    "funding",
    "profit",
    "loss",
    "quarter",
    "shares",
    "record",
    "history",
    "museum",
    "art",
    "book",
    "author",
    "review",
    "game",
    "players",
    "coach",
    "cup",
    "final",
    "win",
    "lost",
    "match",
    "league",
];
const DE: &[&str] = &[
    "der",
    "die",
    "und",
    "das",
    "nicht",
    "mit",
    "für",
    "auf",
    "Regierung",
    "Straße",
    "München",
    "Berlin",
    "Bürger",
    "Grüße",
    "Wirtschaft",
    "Präsident",
    "Wahl",
    "Gericht",
    "Schule",
    "Müller",
    "Größe",
    "Öffentlichkeit",
    "Übersicht",
    "Fußball",
    "Wetter",
    "Klimawandel",
    "Energie",
    "Strom",
    "Zukunft",
    "Preise",
    "Mieten",
    "Arbeit",
    "Gesundheit",
    "Krankenhaus",
    "Universität",
    "Forschung",
    "Studie",
    "Stadt",
    "Land",
    "Bahn",
    "Flughafen",
];
const FR: &[&str] = &[
    "le",
    "la",
    "les",
    "et",
    "des",
    "pour",
    "dans",
    "une",
    "gouvernement",
    "café",
    "crème",
    "économie",
    "élection",
    "président",
    "été",
    "hôpital",
    "santé",
    "école",
    "université",
    "société",
    "marché",
    "prix",
    "énergie",
    "électricité",
    "météo",
    "football",
    "équipe",
    "musée",
    "théâtre",
    "cinéma",
    "festival",
    "grève",
    "travail",
    "région",
    "façade",
    "naïve",
];
const JA: &[&str] = &[
    "東京",
    "大阪",
    "京都",
    "日本",
    "政府",
    "経済",
    "市場",
    "会社",
    "技術",
    "天気",
    "地震",
    "選挙",
    "首相",
    "大臣",
    "予算",
    "税金",
    "病院",
    "学校",
    "大学",
    "研究",
    "科学",
    "宇宙",
    "電車",
    "空港",
    "自動車",
    "電気",
    "データ",
    "サーバー",
    "ニュース",
    "インターネット",
    "スマートフォン",
    "ソフトウェア",
    "セキュリティ",
    "カタカナ",
    "ラーメン",
    "サッカー",
    "野球",
    "映画",
    "音楽",
    "株価",
    "物価",
    "円安",
    "台風",
    "気候",
    "変動",
    "環境",
    "観光",
];
const JA_PARTICLES: &[&str] = &["は", "が", "を", "に", "の", "で", "と", "から", "について"];
const ZH: &[&str] = &[
    "北京",
    "上海",
    "中国",
    "政府",
    "经济",
    "市场",
    "公司",
    "技术",
    "天气",
    "地震",
    "选举",
    "总统",
    "预算",
    "医院",
    "学校",
    "大学",
    "研究",
    "科学",
    "太空",
    "火车",
    "机场",
    "汽车",
    "电力",
    "数据",
    "服务器",
    "新闻",
    "互联网",
    "手机",
    "软件",
    "安全",
    "足球",
    "电影",
    "音乐",
    "股市",
    "价格",
    "通胀",
    "台风",
    "气候",
    "变化",
    "环境",
    "旅游",
    "人工智能",
];
const KO: &[&str] = &[
    "서울",
    "부산",
    "한국",
    "정부",
    "경제",
    "시장",
    "회사",
    "기술",
    "날씨",
    "지진",
    "선거",
    "대통령",
    "예산",
    "병원",
    "학교",
    "대학",
    "연구",
    "과학",
    "우주",
    "기차",
    "공항",
    "자동차",
    "전기",
    "데이터",
    "서버",
    "뉴스",
    "인터넷",
    "휴대폰",
    "소프트웨어",
    "보안",
    "축구",
    "영화",
    "음악",
    "주가",
    "물가",
    "태풍",
    "기후",
    "변화",
    "환경",
    "관광",
];
const KO_PARTICLES: &[&str] = &["은", "는", "이", "가", "을", "를", "에서", "의", "", ""];
/// Han characters for made-up Japanese and Chinese words.
const HAN: &str = "日本国人年大十二本中長出三同時政事自社発者地業方新場員立開手力問代明動京目通言理体田主題意不作用度強公持野以思家世多正安院心界教文元重近考画海売知道集別物使品計死特私始朝運終台広住真有口少町料工建空急止送切転研足究楽起着店病質待試族銀早映親験英医仕去味写字答夜音注帰古歌買悪図週室歩風紙黒花春赤青館屋色走秋夏習駅洋旅服夕借曜飲肉貸堂鳥飯勉冬昼茶弟牛魚兄犬妹姉漢";
/// Kana for made-up katakana words.
const KATAKANA: &str = "アイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワンガギグゲゴザジズゼゾダデドバビブベボパピプペポー";
/// Hangul syllables for made-up Korean words.
const HANGUL: &str = "가나다라마바사아자차카타파하거너더러머버서어저처커터퍼허고노도로모보소오조초코토포호구누두루무부수우주추쿠투푸후기니디리미비시이지치키티피히";
/// Latin syllables for made-up words.
const SYLLABLES: &[&str] = &[
    "ka", "ro", "mi", "ten", "bar", "lo", "vis", "den", "tra", "pol", "mer", "sun", "ha", "gri",
    "fel", "om", "ust", "nav", "qui", "zel", "bre", "dor", "ani", "cus", "pe", "lin",
];

/// The languages of the generated items, with their share in per mille.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// English.
    English,
    /// German.
    German,
    /// French.
    French,
    /// Japanese.
    Japanese,
    /// Chinese.
    Chinese,
    /// Korean.
    Korean,
}

fn language(rng: &mut Rng) -> Language {
    match rng.below(1000) {
        0..450 => Language::English,
        450..550 => Language::German,
        550..650 => Language::French,
        650..800 => Language::Japanese,
        800..920 => Language::Chinese,
        _ => Language::Korean,
    }
}

/// Word `rank` of a made-up tail: the real words first, then deterministic made-up words.
fn word(language: Language, rank: usize) -> String {
    let real: &[&str] = match language {
        Language::English => EN,
        Language::German => DE,
        Language::French => FR,
        Language::Japanese => JA,
        Language::Chinese => ZH,
        Language::Korean => KO,
    };
    if let Some(word) = real.get(rank) {
        return (*word).to_string();
    }
    let mut seed = Rng::new(rank as u64 * 7 + language as u64);
    let pick = |chars: &str, rng: &mut Rng| -> char {
        let chars: Vec<char> = chars.chars().collect();
        chars[rng.below(chars.len())]
    };
    match language {
        Language::English | Language::German | Language::French => {
            let n = 2 + seed.below(2);
            (0..n)
                .map(|_| SYLLABLES[seed.below(SYLLABLES.len())])
                .collect()
        }
        Language::Japanese if rank.is_multiple_of(3) => (0..3 + seed.below(3))
            .map(|_| pick(KATAKANA, &mut seed))
            .collect(),
        Language::Japanese | Language::Chinese => (0..2).map(|_| pick(HAN, &mut seed)).collect(),
        Language::Korean => (0..2 + seed.below(2))
            .map(|_| pick(HANGUL, &mut seed))
            .collect(),
    }
}

/// One sentence of `words` words in `language`.
pub fn sentence(language: Language, words: usize, rng: &mut Rng) -> String {
    let mut out = String::new();
    for n in 0..words {
        let w = word(language, rng.zipf(VOCABULARY));
        match language {
            Language::Japanese => {
                out.push_str(&w);
                out.push_str(JA_PARTICLES[rng.below(JA_PARTICLES.len())]);
            }
            Language::Chinese => out.push_str(&w),
            Language::Korean => {
                if n > 0 {
                    out.push(' ');
                }
                out.push_str(&w);
                out.push_str(KO_PARTICLES[rng.below(KO_PARTICLES.len())]);
            }
            _ => {
                if n > 0 {
                    out.push(' ');
                }
                out.push_str(&w);
            }
        }
    }
    out.push_str(match language {
        Language::Japanese | Language::Chinese => "。",
        _ => ".",
    });
    out
}

/// The title and HTML content of generated item `k`: a few sentences in one language, a
/// fixed phrase now and then (for phrase searches).
pub fn article(k: usize) -> (String, String) {
    let mut rng = Rng::new(k as u64);
    let language = language(&mut rng);
    let title_words = 4 + rng.below(5);
    let mut title = sentence(language, title_words, &mut rng);
    title.pop();
    if matches!(language, Language::Japanese | Language::Chinese) {
        title.pop();
    }
    let mut content = String::new();
    for _ in 0..2 + rng.below(3) {
        let words = 8 + rng.below(9);
        content.push_str("<p>");
        content.push_str(&sentence(language, words, &mut rng));
        if language == Language::English && rng.below(10) == 0 {
            content.push_str(" Open source software and climate change.");
        }
        content.push_str("</p>");
    }
    (title, content)
}

/// Arguments of `tidings-bench search`.
#[derive(Debug, Args)]
pub struct SearchBenchArgs {
    /// Searches of each kind.
    #[arg(long, default_value_t = 100)]
    pub searches: usize,
    /// Also print the N slowest queries of each kind, with their times.
    #[arg(long, default_value_t = 0)]
    pub show_slowest: usize,
}

/// One kind of search with the queries to run.
struct Kind {
    label: &'static str,
    queries: Vec<String>,
    filtered: bool,
    by_relevance: bool,
}

fn kinds(searches: usize) -> Vec<Kind> {
    let mut rng = Rng::new(42);
    // Mid-frequency English words: ranks 20 to 2,000 of the vocabulary.
    let mid = |rng: &mut Rng| word(Language::English, 20 + rng.zipf(2_000));
    let single = (0..searches).map(|_| mid(&mut rng)).collect();
    let two = (0..searches)
        .map(|_| format!("{} {}", mid(&mut rng), mid(&mut rng)))
        .collect();
    let cjk_words: Vec<&str> = JA
        .iter()
        .chain(ZH)
        .filter(|w| w.chars().count() == 2)
        .copied()
        .collect();
    let cjk = (0..searches)
        .map(|_| cjk_words[rng.below(cjk_words.len())].to_string())
        .collect();
    let phrases = [
        "\"open source\"",
        "\"climate change\"",
        "\"source software\"",
    ];
    let phrase = (0..searches)
        .map(|i| phrases[i % phrases.len()].to_string())
        .collect();
    let filtered = (0..searches).map(|_| mid(&mut rng)).collect();
    let relevance = (0..searches)
        .map(|i| match i % 3 {
            0 => mid(&mut rng),
            1 => format!("{} {}", mid(&mut rng), mid(&mut rng)),
            _ => cjk_words[rng.below(cjk_words.len())].to_string(),
        })
        .collect();
    vec![
        Kind {
            label: "single word",
            by_relevance: false,
            queries: single,
            filtered: false,
        },
        Kind {
            label: "two words",
            by_relevance: false,
            queries: two,
            filtered: false,
        },
        Kind {
            label: "CJK two characters",
            by_relevance: false,
            queries: cjk,
            filtered: false,
        },
        Kind {
            label: "phrase",
            by_relevance: false,
            queries: phrase,
            filtered: false,
        },
        Kind {
            label: "filtered (feed, unread, last 30 days)",
            queries: filtered,
            filtered: true,
            by_relevance: false,
        },
        Kind {
            label: "by relevance (words, two words, CJK)",
            queries: relevance,
            filtered: false,
            by_relevance: true,
        },
    ]
}

/// Runs `tidings-bench search`: as the first bench user of `tidings-bench generate`, each kind
/// of search (first page of 50, newest first, with snippets' text) `searches` times.
pub async fn run(config: &GlobalConfig, args: SearchBenchArgs) -> anyhow::Result<ExitCode> {
    let store = crate::store::open_store(config).await?;
    let Some((user_id, feed_ids)) = bench_user(&store).await? else {
        bail!("no bench user found; run `tidings-bench generate` first");
    };
    let pending = store.backfill_search_index(1).await?;
    if !pending.is_done() {
        bail!("the search index is still being built; let the backfill finish first");
    }
    println!(
        "tidings-bench search: {} indexed items, {} searches of each kind on {}",
        store.search_index_rows().await?,
        args.searches,
        store.engine()
    );
    let now = tidings_store::unix_now();
    let mut rng = Rng::new(7);
    println!("| Search | median | p95 | max | hits on the first page (mean) |");
    println!("| --- | --- | --- | --- | --- |");
    for kind in kinds(args.searches) {
        let mut times = Vec::with_capacity(kind.queries.len());
        let mut slowest = Vec::with_capacity(kind.queries.len());
        let mut hits = 0;
        for text in &kind.queries {
            let query = SearchQuery::parse(text).context("a bench query")?;
            let mut listing = ItemQuery {
                filter: ItemFilter::All,
                limit: 50,
                ..ItemQuery::default()
            };
            if kind.filtered {
                listing.feed_id = Some(feed_ids[rng.below(feed_ids.len())]);
                listing.filter = ItemFilter::Unread;
                listing.since = Some(now - 30 * 86_400);
            }
            let search = ItemSearch {
                query,
                listing,
                by_relevance: kind.by_relevance,
                offset: 0,
            };
            let started = Instant::now();
            let page = store.search_items(user_id, &search).await?;
            times.push(started.elapsed());
            slowest.push((started.elapsed(), text.clone()));
            hits += page.hits.len();
        }
        times.sort();
        slowest.sort();
        for (time, text) in slowest.iter().rev().take(args.show_slowest) {
            eprintln!(
                "{}: {text} {:.1} ms",
                kind.label,
                time.as_secs_f64() * 1000.0
            );
        }
        let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
        println!(
            "| {} | {} | {} | {} | {:.1} |",
            kind.label,
            ms(crate::quantiles::duration_at(&times, 0.5)),
            ms(crate::quantiles::duration_at(&times, 0.95)),
            ms(*times.last().unwrap_or(&Duration::ZERO)),
            hits as f64 / kind.queries.len().max(1) as f64
        );
    }
    let (index, rows) = (
        store.search_index_size_bytes().await?,
        store.search_index_rows().await?,
    );
    println!(
        "search index: {:.1} MB for {rows} items ({:.0} MB per million items)",
        index as f64 / 1_048_576.0,
        index as f64 / 1_048_576.0 / (rows.max(1) as f64 / 1_000_000.0)
    );
    store.close().await;
    Ok(ExitCode::SUCCESS)
}

/// The first bench user and the feeds they follow.
pub(crate) async fn bench_user(store: &Store) -> anyhow::Result<Option<(i64, Vec<i64>)>> {
    let users = store.list_users().await?;
    let Some(user) = users.iter().find(|u| u.username.starts_with("bench-")) else {
        return Ok(None);
    };
    let feeds: Vec<i64> = store
        .list_subscriptions(user.id)
        .await?
        .into_iter()
        .map(|s| s.feed_id)
        .collect();
    Ok(Some((user.id, feeds)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn articles_are_multilingual_and_deterministic() {
        assert_eq!(article(5), article(5));
        let scripts: std::collections::HashSet<&str> = (0..200)
            .map(|k| {
                let (title, _) = article(k);
                if title
                    .chars()
                    .any(|c| ('\u{AC00}'..='\u{D7AF}').contains(&c))
                {
                    "ko"
                } else if title.chars().any(tidings_text::is_cjk) {
                    "cjk"
                } else {
                    "latin"
                }
            })
            .collect();
        assert_eq!(scripts.len(), 3, "{scripts:?}");
        assert!((0..1000).all(|k| !article(k).1.contains('\'')));
    }
}
