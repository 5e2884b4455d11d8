//! OPML import and export (F37): the pure reading and writing of OPML documents, and the
//! import/export of a user's subscriptions on top of the store (an import fetches each feed
//! once to check it, through the worker's fetcher, and records that fetch as the feed's
//! first). The command line's `tidings opml` and the API's `GET/POST /api/v1/opml` both call
//! [`import_opml`] and [`export_opml`].

use std::collections::{HashMap, HashSet};

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};
use tidings_fetch::{AddressPolicy, FetchResponse};
use tidings_store::{
    ImportJobProgress, NewImportJob, NewSubscription, OpmlImportRecord, Store, StoreError,
};
use tokio::task::JoinSet;
use url::Url;

use crate::fetcher::Fetcher;
use crate::import_job::{JobProgress, JobReport, StartedJob, spawn_import_job};
use crate::refresh::{CheckFailure, RefreshError};
use crate::round::FeedReport;

/// The largest OPML document read.
pub const MAX_OPML_BYTES: usize = 10 * 1024 * 1024;
/// Feeds imported from one file at most (F37).
pub const MAX_IMPORT_FEEDS: usize = 1000;
/// Outlines read from one file at most, folders included; the rest is ignored.
const MAX_OUTLINES: usize = 20_000;
/// Nested folders are joined into one group name with this.
pub const GROUP_SEPARATOR: &str = " / ";

/// One feed of an OPML document.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OpmlFeed {
    /// The feed's URL (`xmlUrl`), as written.
    pub xml_url: String,
    /// Its title (`title`, else `text`).
    pub title: Option<String>,
    /// Its site (`htmlUrl`).
    pub html_url: Option<String>,
    /// The folder it is in: the names of the enclosing outlines joined with
    /// [`GROUP_SEPARATOR`]; `None` at the top level.
    pub group: Option<String>,
    /// tidings' own settings of the subscription, when the file is a tidings export.
    pub settings: OpmlSettings,
    /// FreshRSS' filter actions that mark the feed's new items read, one search query each
    /// (its export's `frss:filtersActionRead`, queries one per line; FreshRSS'
    /// `app/views/helpers/export/opml.phtml`); the history import makes them rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_filters: Vec<String>,
}

/// The namespace of tidings' own outline attributes, so that an export read back into
/// tidings keeps each subscription's settings, and other readers ignore them.
pub const OPML_NAMESPACE: &str = "https://tidings.invalid/opml";

/// A subscription's settings as tidings' export carries them (`tidings:` attributes); each is
/// `None` when the file does not say, and is then left at tidings' default on import.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct OpmlSettings {
    /// `tidings:interval`: the fetch interval in minutes.
    pub interval_minutes: Option<i64>,
    /// `tidings:fullText`: `auto`, `always` or `never`.
    pub full_text: Option<String>,
    /// `tidings:summarize`: whether new items are summarized.
    pub summarize: Option<bool>,
    /// `tidings:scrape`: for a scraped source (F7), its configuration (JSON); the outline's
    /// URL is then the page scraped, not a feed.
    pub scrape_config: Option<String>,
    /// `tidings:feedTitle="true"`: the outline's title is the feed's own, not one the user
    /// gave, so the import sets no custom title (which would stop following the feed's).
    pub feed_title: Option<bool>,
    /// `tidings:suspended="true"`: the user paused the subscription (the feed is not fetched
    /// for them).
    pub suspended: Option<bool>,
    /// `tidings:translate`: the language the feed's new items are translated into in the
    /// background ("always translate", issue 37), a BCP 47 tag; absent when off.
    pub translate: Option<String>,
    /// `tidings:proxy`: the proxy the feed is fetched through. It routes every subscriber's
    /// fetch and may carry credentials, so only an administrator's export carries it and only
    /// an administrator's import sets it.
    pub proxy_url: Option<String>,
}

impl OpmlSettings {
    /// Reads the `tidings:` attributes of an outline.
    fn read(start: &BytesStart<'_>) -> OpmlSettings {
        let get = |name: &str| {
            start
                .attributes()
                .with_checks(false)
                .filter_map(Result::ok)
                .find(|attr| *attr.key.as_ref() == *format!("tidings:{name}"))
                .map(|attr| {
                    tidings_feed::text::decode_entities(&attr.value)
                        .trim()
                        .to_owned()
                })
        };
        OpmlSettings {
            interval_minutes: get("interval").and_then(|v| v.parse().ok()),
            full_text: get("fullText")
                .filter(|v| ["auto", "always", "never"].contains(&v.as_str())),
            summarize: get("summarize").and_then(|v| v.parse().ok()),
            scrape_config: get("scrape").filter(|v| !v.is_empty()),
            feed_title: get("feedTitle").and_then(|v| v.parse().ok()),
            suspended: get("suspended").and_then(|v| v.parse().ok()),
            // A tag that is not one is ignored, as any other unreadable setting is.
            translate: get("translate").and_then(|v| tidings_text::language::canonical_tag(&v)),
            proxy_url: get("proxy").filter(|v| !v.is_empty()),
        }
    }

    /// The `tidings:` attributes, each with a leading space.
    fn attributes(&self) -> String {
        let mut out = String::new();
        if let Some(interval) = self.interval_minutes {
            out.push_str(&format!(" tidings:interval=\"{interval}\""));
        }
        if let Some(mode) = &self.full_text {
            out.push_str(&format!(" tidings:fullText=\"{}\"", xml_attribute(mode)));
        }
        if let Some(summarize) = self.summarize {
            out.push_str(&format!(" tidings:summarize=\"{summarize}\""));
        }
        if self.feed_title == Some(true) {
            out.push_str(" tidings:feedTitle=\"true\"");
        }
        if let Some(config) = &self.scrape_config {
            out.push_str(&format!(" tidings:scrape=\"{}\"", xml_attribute(config)));
        }
        if self.suspended == Some(true) {
            out.push_str(" tidings:suspended=\"true\"");
        }
        if let Some(language) = &self.translate {
            out.push_str(&format!(
                " tidings:translate=\"{}\"",
                xml_attribute(language)
            ));
        }
        if let Some(proxy) = &self.proxy_url {
            out.push_str(&format!(" tidings:proxy=\"{}\"", xml_attribute(proxy)));
        }
        out
    }
}

/// A parsed OPML document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpmlDocument {
    /// The head's title.
    pub title: Option<String>,
    /// Its feeds in document order.
    pub feeds: Vec<OpmlFeed>,
}

/// Why a document is not usable OPML.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpmlError {
    /// Larger than [`MAX_OPML_BYTES`].
    #[error("the OPML file is larger than {} MB", MAX_OPML_BYTES / (1024 * 1024))]
    TooLarge,
    /// Not well-formed XML.
    #[error("the OPML file is not well-formed XML: {0}")]
    Xml(String),
    /// Well-formed, but its root is not `<opml>`.
    #[error("the file is not OPML (its root element is <{0}>)")]
    NotOpml(String),
}

/// FreshRSS' `frss:filtersActionRead` of an outline: its lines (search queries), with the
/// XML's character references decoded and nothing else changed.
fn read_filters(start: &BytesStart<'_>) -> Vec<String> {
    start
        .attributes()
        .with_checks(false)
        .filter_map(Result::ok)
        .find(|attr| attr.key.local_name().as_ref() == "filtersActionRead")
        .map(|attr| {
            tidings_feed::text::decode_entities(&attr.value)
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn attribute(start: &BytesStart<'_>, name: &str) -> Option<String> {
    start
        .attributes()
        .with_checks(false)
        .filter_map(Result::ok)
        .find(|attr| attr.key.local_name().as_ref().eq_ignore_ascii_case(name))
        .map(|attr| {
            tidings_feed::text::decode_entities(&attr.value)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|value| !value.is_empty())
}

/// Reads an OPML document (1.0 or 2.0, any declared encoding). Outlines with an `xmlUrl` are
/// feeds; outlines without one are folders, whose names become the feeds' groups. A feed
/// outside any folder with an OPML 2.0 `category` attribute gets its first category's last
/// path segment as group. No DTD or external entity is ever read.
pub fn parse_opml(bytes: &[u8]) -> Result<OpmlDocument, OpmlError> {
    if bytes.len() > MAX_OPML_BYTES {
        return Err(OpmlError::TooLarge);
    }
    let text = tidings_feed::encoding::decode_document(bytes, None).text;
    let mut reader = Reader::from_str(&text);
    let mut document = OpmlDocument::default();
    let mut root: Option<String> = None;
    // One entry per open outline: the folder name it adds (None for a feed outline that has
    // children, which adds no level).
    let mut folders: Vec<Option<String>> = Vec::new();
    let mut in_head_title = false;
    let mut head_title = String::new();
    let mut outlines = 0usize;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| OpmlError::Xml(e.to_string()))?;
        let is_empty = matches!(event, Event::Empty(_));
        match event {
            Event::Start(start) | Event::Empty(start)
                if start.local_name().as_ref().eq_ignore_ascii_case("outline") =>
            {
                outlines += 1;
                if outlines > MAX_OUTLINES {
                    break;
                }
                let name = attribute(&start, "title").or_else(|| attribute(&start, "text"));
                match attribute(&start, "xmlUrl") {
                    Some(xml_url) => {
                        let path: Vec<&str> =
                            folders.iter().flatten().map(String::as_str).collect();
                        let group = if path.is_empty() {
                            attribute(&start, "category").and_then(|categories| {
                                categories
                                    .split(',')
                                    .next()
                                    .and_then(|c| c.trim_matches('/').rsplit('/').next())
                                    .map(str::trim)
                                    .filter(|c| !c.is_empty())
                                    .map(str::to_owned)
                            })
                        } else {
                            Some(path.join(GROUP_SEPARATOR))
                        };
                        document.feeds.push(OpmlFeed {
                            xml_url,
                            title: name,
                            html_url: attribute(&start, "htmlUrl"),
                            group,
                            settings: OpmlSettings::read(&start),
                            read_filters: read_filters(&start),
                        });
                        if !is_empty {
                            folders.push(None);
                        }
                    }
                    None if !is_empty => {
                        folders.push(Some(name.unwrap_or_default()).filter(|n| !n.is_empty()))
                    }
                    None => {}
                }
            }
            Event::Start(start) => {
                let name = start.local_name().as_ref().to_owned();
                if root.is_none() {
                    if !name.eq_ignore_ascii_case("opml") {
                        return Err(OpmlError::NotOpml(name));
                    }
                    root = Some(name);
                } else if name.eq_ignore_ascii_case("title") && folders.is_empty() {
                    in_head_title = true;
                }
            }
            Event::Empty(start) if root.is_none() => {
                let name = start.local_name().as_ref().to_owned();
                if !name.eq_ignore_ascii_case("opml") {
                    return Err(OpmlError::NotOpml(name));
                }
                root = Some(name);
            }
            // quick-xml reports entity references apart from the text around them.
            Event::Text(text) if in_head_title => head_title.push_str(text.as_ref()),
            Event::GeneralRef(reference) if in_head_title => {
                head_title.push_str(&format!("&{};", reference.as_ref()));
            }
            Event::End(end) => {
                let local = end.local_name();
                if local.as_ref().eq_ignore_ascii_case("outline") {
                    folders.pop();
                } else if local.as_ref().eq_ignore_ascii_case("title") && in_head_title {
                    in_head_title = false;
                    let title = tidings_feed::text::decode_entities(&head_title)
                        .trim()
                        .to_owned();
                    if !title.is_empty() && document.title.is_none() {
                        document.title = Some(title);
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if root.is_none() {
        return Err(OpmlError::NotOpml("nothing".into()));
    }
    Ok(document)
}

/// Writes an OPML 2.0 document: feeds without a group at the top level, the others in one
/// folder outline per group, in the order groups first appear.
pub fn build_opml(
    title: &str,
    feeds: &[OpmlFeed],
    created: chrono::DateTime<chrono::Utc>,
) -> String {
    let escape = xml_attribute;
    let outline = |feed: &OpmlFeed, indent: &str| {
        let title = feed.title.as_deref().unwrap_or(&feed.xml_url);
        let mut line = format!(
            "{indent}<outline type=\"rss\" text=\"{}\" title=\"{}\" xmlUrl=\"{}\"",
            escape(title),
            escape(title),
            escape(&feed.xml_url)
        );
        if let Some(html_url) = &feed.html_url {
            line.push_str(&format!(" htmlUrl=\"{}\"", escape(html_url)));
        }
        line.push_str(&feed.settings.attributes());
        line.push_str("/>\n");
        line
    };
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<opml version=\"2.0\" xmlns:tidings=\"{OPML_NAMESPACE}\">\n"
    );
    out.push_str(&format!(
        "  <head>\n    <title>{}</title>\n    <dateCreated>{}</dateCreated>\n  </head>\n  <body>\n",
        escape(title),
        created.to_rfc2822()
    ));
    let mut groups: Vec<&str> = Vec::new();
    for feed in feeds {
        match &feed.group {
            None => out.push_str(&outline(feed, "    ")),
            Some(group) if !groups.contains(&group.as_str()) => groups.push(group),
            Some(_) => {}
        }
    }
    for group in groups {
        out.push_str(&format!(
            "    <outline text=\"{}\" title=\"{}\">\n",
            escape(group),
            escape(group)
        ));
        for feed in feeds.iter().filter(|f| f.group.as_deref() == Some(group)) {
            out.push_str(&outline(feed, "      "));
        }
        out.push_str("    </outline>\n");
    }
    out.push_str("  </body>\n</opml>\n");
    out
}

/// `text` escaped for an XML 1.0 attribute or element: markup characters as entities, tab
/// and line breaks as character references (so attribute normalization keeps them), and the
/// characters XML 1.0 cannot hold at all (the other C0 controls, U+FFFE, U+FFFF) left out, so
/// that the document is well-formed whatever was stored.
fn xml_attribute(text: &str) -> String {
    let kept: String = text
        .chars()
        .filter(|c| !matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}'))
        .collect();
    tidings_feed::text::escape_html(&kept)
        .replace('\t', "&#9;")
        .replace('\n', "&#10;")
        .replace('\r', "&#13;")
}

/// What became of one feed of an imported file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ImportStatus {
    /// Subscribed.
    Added,
    /// Not subscribed, nothing wrong: already subscribed, or listed twice.
    Skipped,
    /// Not subscribed: the URL is unusable or not allowed, or a limit was reached.
    Refused,
    /// Not subscribed: certainly no feed (404 or 410, not a feed). Feeds whose check failed
    /// in a way that may pass (429, 5xx, a time-out, a network error) are added instead, with
    /// the error as their reason. Importing the file again tries it again.
    Failed,
}

/// One line of an import report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ImportEntry {
    /// The feed URL as written in the file.
    pub url: String,
    /// Its title in the file.
    pub title: Option<String>,
    /// The group it went (or would have gone) into.
    pub group: Option<String>,
    /// What happened.
    pub status: ImportStatus,
    /// Why, when it was not added; for a feed added despite an error that may pass (429,
    /// 5xx, a time-out), that error.
    pub reason: Option<String>,
    /// What to do about it, when it was not imported for a reason that will not pass.
    pub what_to_do: Option<String>,
    /// The new subscription's id, when added.
    pub subscription_id: Option<i64>,
}

/// The report of an import (F37), also stored in the user's import history.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ImportReport {
    /// The history record's id.
    pub import_id: i64,
    /// Feed outlines in the file.
    pub outlines: usize,
    /// Subscriptions added.
    pub added: usize,
    /// Feeds skipped.
    pub skipped: usize,
    /// Feeds refused.
    pub refused: usize,
    /// Feeds whose check failed (an HTTP error, no answer, not a feed).
    pub failed: usize,
    /// Feeds not imported because the file lists more than [`ImportOptions::max_feeds`].
    pub over_file_limit: usize,
    /// Feeds not imported because the user's subscription limit was reached.
    pub over_subscription_limit: usize,
    /// One entry per feed outline, in file order.
    pub entries: Vec<ImportEntry>,
}

impl ImportReport {
    /// What a person should know about limits, in plain words: `None` when every feed of the
    /// file was considered.
    pub fn limit_notice(&self, options: &ImportOptions) -> Option<String> {
        let mut notices = Vec::new();
        if self.over_file_limit > 0 {
            notices.push(format!(
                "the file lists {} feeds, more than the {} one import takes: the last {} were \
                 not imported (split the file and import the rest separately)",
                self.outlines, options.max_feeds, self.over_file_limit
            ));
        }
        if self.over_subscription_limit > 0 {
            notices.push(format!(
                "{} feeds were not imported because the limit of {} subscriptions was reached \
                 (an administrator can raise it with TIDINGS_MAX_SUBSCRIPTIONS; importing the \
                 same file again then adds the rest and skips the feeds already followed)",
                self.over_subscription_limit,
                options.max_subscriptions.unwrap_or_default()
            ));
        }
        (!notices.is_empty()).then(|| notices.join("; "))
    }
}

/// How an import behaves.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The uploaded file's name, for the history.
    pub file_name: Option<String>,
    /// Feeds imported at most; the rest are refused (F37: 1000).
    pub max_feeds: usize,
    /// The user's subscription limit (F29), if any: feeds past it are refused. It holds
    /// however many imports and subscribes run at once.
    pub max_subscriptions: Option<i64>,
    /// Feeds in progress at once, checking or storing their first fetch (each request still
    /// waits for the fetcher's per-host limits).
    pub concurrency: usize,
}

impl Default for ImportOptions {
    fn default() -> ImportOptions {
        ImportOptions {
            file_name: None,
            max_feeds: MAX_IMPORT_FEEDS,
            max_subscriptions: None,
            concurrency: IMPORT_FETCH_CONCURRENCY,
        }
    }
}

/// Feeds an import has in progress at once (checking, or storing their first fetch), by
/// default: the worker's in-flight bound at its default concurrency
/// ([`crate::WorkerConfig::in_flight`]), so an import holds no more responses than a round.
/// Each request still waits for the per-host limits.
pub const IMPORT_FETCH_CONCURRENCY: usize =
    crate::config::DEFAULT_CONCURRENCY * crate::config::IN_FLIGHT_PER_SLOT;

/// Why an import could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file is not OPML.
    #[error(transparent)]
    Opml(#[from] OpmlError),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Subscribes `user_id` to every feed of an OPML file, creating groups from its folders, with
/// the outline's title as the subscription's title, and records the import in the user's
/// history; see [`import_opml_document`] for how. The command line's and the history import's
/// way; the API runs the same import as a job ([`start_opml_import`]).
pub async fn import_opml(
    fetcher: &Fetcher,
    user_id: i64,
    bytes: &[u8],
    options: &ImportOptions,
) -> Result<ImportReport, ImportError> {
    import_opml_with_progress(fetcher, user_id, bytes, options, &JobProgress::new(0)).await
}

/// [`import_opml`], counting on `progress` as feeds are settled (its total is set to the
/// file's feed outlines first): the command line's progress line.
pub async fn import_opml_with_progress(
    fetcher: &Fetcher,
    user_id: i64,
    bytes: &[u8],
    options: &ImportOptions,
    progress: &JobProgress,
) -> Result<ImportReport, ImportError> {
    let document = parse_opml(bytes)?;
    progress.update(|p| p.total = document.feeds.len() as i64);
    let mut report = import_opml_document(fetcher, user_id, &document, options, progress).await?;
    report.import_id = record_report(fetcher.store(), user_id, options, &report).await?;
    Ok(report)
}

/// The kind of an OPML import job.
pub const OPML_JOB_KIND: &str = "opml";

/// Starts the import of an OPML file as a background job (issue 32) and answers at once with
/// the job; a file that is not OPML is refused before any job starts. The job's counters
/// follow the import, and its end carries the per-URL report ([`ImportEntry`]s as its entries,
/// an [`OpmlJobSummary`] as its summary). Refused with [`StoreError::LimitReached`] when the
/// user has `max_running` imports running.
pub async fn start_opml_import(
    fetcher: &Fetcher,
    user_id: i64,
    bytes: &[u8],
    options: ImportOptions,
    max_running: i64,
) -> Result<StartedJob, ImportError> {
    let document = parse_opml(bytes)?;
    let new = NewImportJob {
        kind: OPML_JOB_KIND,
        source: options.file_name.as_deref(),
        total: document.feeds.len() as i64,
        owner: &fetcher.config().owner,
    };
    let fetcher_for_job = fetcher.clone();
    let started = spawn_import_job(fetcher.store(), user_id, &new, max_running, |progress| {
        let (fetcher, options) = (fetcher_for_job, options.clone());
        async move {
            let report = import_opml_document(&fetcher, user_id, &document, &options, &progress)
                .await
                .map_err(|error| format!("the database failed: {error}"))?;
            Ok(job_report(&report, &options))
        }
    })
    .await?;
    Ok(started)
}

/// The totals of an OPML import job that its counters do not carry (its summary).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OpmlJobSummary {
    /// Of the feeds not imported, those refused before any request (not a URL, an address
    /// not allowed, over a limit); the others failed their check.
    pub refused: usize,
    /// Feeds not imported because the file lists more than [`ImportOptions::max_feeds`].
    pub over_file_limit: usize,
    /// Feeds not imported because the user's subscription limit was reached.
    pub over_subscription_limit: usize,
    /// What a limit left out, in plain words.
    pub notice: Option<String>,
}

/// What an OPML import job hands back when it ends.
fn job_report(report: &ImportReport, options: &ImportOptions) -> JobReport {
    let summary = OpmlJobSummary {
        refused: report.refused,
        over_file_limit: report.over_file_limit,
        over_subscription_limit: report.over_subscription_limit,
        notice: report.limit_notice(options),
    };
    JobReport {
        progress: ImportJobProgress {
            total: report.outlines as i64,
            checked: report.outlines as i64,
            added: report.added as i64,
            skipped: report.skipped as i64,
            failed: (report.refused + report.failed) as i64,
        },
        entries: serde_json::to_string(&report.entries).unwrap_or_else(|_| "[]".into()),
        summary: serde_json::to_string(&summary).ok(),
    }
}

/// Subscribes `user_id` to every feed of `document`, creating groups from its folders, with
/// the outline's title as the subscription's title, and counts on `progress` as feeds are
/// settled. Each feed is fetched once first, many at once (a rolling window of
/// [`ImportOptions::concurrency`] feeds, each request under the worker's per-host limits): one
/// that is certainly no feed (404, 410, not a feed, an address refused) is reported as failed
/// with the reason and not subscribed; one whose fetch failed in a way that may pass (429,
/// 5xx, a time-out) is subscribed with its error. The user's subscription limit takes feeds in
/// file order as far as it can; the rest are reported as over it (and not fetched). The
/// response that passed the check is recorded as the new feed's first fetch (its items are
/// stored before this returns), so an import costs one request per feed; favicons are looked
/// up afterwards, once per site. The report's `import_id` is left 0.
pub async fn import_opml_document(
    fetcher: &Fetcher,
    user_id: i64,
    document: &OpmlDocument,
    options: &ImportOptions,
    progress: &JobProgress,
) -> Result<ImportReport, StoreError> {
    let store = fetcher.store();
    let mut groups: HashMap<String, i64> = store
        .list_groups(user_id)
        .await?
        .into_iter()
        .map(|group| (group.name.to_lowercase(), group.id))
        .collect();
    let subscribed: HashSet<String> = store
        .list_subscriptions(user_id)
        .await?
        .into_iter()
        .map(|s| s.feed_url)
        .collect();
    let address_policy = fetcher.client().config().address_policy.clone();
    let plan = plan_import(document, options, &address_policy, &subscribed);
    let mut entries = plan.entries;
    // What the plan settled without a request (it has its reason) counts at once.
    progress.update(|p| {
        for entry in entries.iter().filter(|entry| entry.reason.is_some()) {
            count_settled(p, entry);
        }
    });
    // When the subscription limit may be reached, feeds are subscribed in file order (the
    // first ones get the places), else as their checks end.
    let in_file_order = options.max_subscriptions.is_some_and(|limit| {
        subscribed.len() as i64 + (plan.candidates.len() + plan.scraped.len()) as i64 > limit
    });
    // Feeds the installation already fetches need no request; while the limit may be
    // reached, every feed waits for its turn in the file instead.
    let (known, candidates) = if in_file_order {
        (Vec::new(), plan.candidates)
    } else {
        known_fresh_feeds(store, plan.candidates).await?
    };
    let mut import = Import {
        fetcher,
        user_id,
        document,
        options,
        progress,
        in_file_order,
        groups: &mut groups,
        entries: &mut entries,
    };
    import.subscribe_known(known).await?;
    import.check_and_subscribe(candidates).await?;
    for (index, url) in plan.scraped {
        let feed = &document.feeds[index];
        let entry = &mut entries[index];
        import_scraped(fetcher, user_id, feed, &url, options, &mut groups, entry).await?;
        progress.update(|p| count_settled(p, entry));
    }
    restore_proxies(fetcher, user_id, &document.feeds, &mut entries).await?;
    merged_into_existing(store, user_id, &mut entries, progress).await?;
    Ok(build_report(options, entries))
}

/// How recently a feed another user follows must have been fetched without an error for an
/// import to subscribe it without a request of its own: the worker keeps such a feed at its
/// interval (an hour by default, twelve hours at most) unless the server asks for a longer
/// pause.
const KNOWN_FEED_FRESH_SECONDS: i64 = 24 * 60 * 60;

/// Splits an import's feeds into those the installation already fetches (stored under the
/// same address, followed by someone, its last fetch within [`KNOWN_FEED_FRESH_SECONDS`]
/// successful and nothing failed since) and the rest, which are checked. On a shared
/// installation a list of popular feeds then costs no request for those others follow: each
/// was one fetch a feed, paced per host, so 500 feeds on one site took half a minute.
async fn known_fresh_feeds(
    store: &Store,
    candidates: Vec<(usize, Url)>,
) -> Result<(Vec<(usize, Url)>, Vec<(usize, Url)>), StoreError> {
    let fresh_since = tidings_store::unix_now() - KNOWN_FEED_FRESH_SECONDS;
    let mut known = Vec::new();
    let mut unknown = Vec::new();
    for (index, url) in candidates {
        let fresh = match store.feed_id_by_url(url.as_str()).await? {
            Some(feed_id) => {
                let state = store.feed_fetch_state(feed_id).await?;
                state.subscribers > 0
                    && state.status == tidings_store::FetchStatus::Active
                    && state.consecutive_failures == 0
                    && state.parse_failures == 0
                    && state.last_success_at.is_some_and(|at| at >= fresh_since)
            }
            None => false,
        };
        if fresh {
            known.push((index, url));
        } else {
            unknown.push((index, url));
        }
    }
    Ok((known, unknown))
}

/// Says "skipped" for the added entries whose subscription is gone once the first fetches are
/// done: the feed's address had moved for good to a feed the user already followed, so the
/// store merged the new subscription into that one (one per user and feed). Nothing is new.
async fn merged_into_existing(
    store: &Store,
    user_id: i64,
    entries: &mut [ImportEntry],
    progress: &JobProgress,
) -> Result<(), StoreError> {
    if !entries
        .iter()
        .any(|entry| entry.status == ImportStatus::Added)
    {
        return Ok(());
    }
    let existing: HashSet<i64> = store
        .list_subscriptions(user_id)
        .await?
        .into_iter()
        .map(|subscription| subscription.id)
        .collect();
    for entry in entries.iter_mut() {
        let gone = entry
            .subscription_id
            .is_some_and(|id| !existing.contains(&id));
        if entry.status == ImportStatus::Added && gone {
            entry.status = ImportStatus::Skipped;
            entry.subscription_id = None;
            entry.reason = Some(
                "already subscribed: its address has moved for good to a feed you follow".into(),
            );
            progress.update(|p| {
                p.added -= 1;
                p.skipped += 1;
            });
        }
    }
    Ok(())
}

/// Counts a settled entry on a job's counters.
fn count_settled(progress: &mut ImportJobProgress, entry: &ImportEntry) {
    progress.checked += 1;
    match entry.status {
        ImportStatus::Added => progress.added += 1,
        ImportStatus::Skipped => progress.skipped += 1,
        ImportStatus::Refused | ImportStatus::Failed => progress.failed += 1,
    }
}

/// An import before any request: one entry per feed outline (settled, or still to check),
/// and the feeds to check, and the scraped sources to read, with their entries' indexes.
struct ImportPlan {
    entries: Vec<ImportEntry>,
    candidates: Vec<(usize, Url)>,
    scraped: Vec<(usize, Url)>,
}

/// What can be said of every feed before any request ([`precheck`]).
fn plan_import(
    document: &OpmlDocument,
    options: &ImportOptions,
    address_policy: &AddressPolicy,
    subscribed: &HashSet<String>,
) -> ImportPlan {
    let mut seen: HashSet<String> = HashSet::new();
    let mut plan = ImportPlan {
        entries: Vec::with_capacity(document.feeds.len()),
        candidates: Vec::new(),
        scraped: Vec::new(),
    };
    for (index, feed) in document.feeds.iter().enumerate() {
        let mut entry = ImportEntry {
            url: feed.xml_url.clone(),
            title: feed.title.clone(),
            group: feed.group.clone(),
            status: ImportStatus::Refused,
            reason: None,
            what_to_do: None,
            subscription_id: None,
        };
        match precheck(feed, index, options, address_policy, subscribed, &mut seen) {
            // A scraped source's page is no feed to check: it is read with its configuration.
            Ok(url) if feed.settings.scrape_config.is_some() => plan.scraped.push((index, url)),
            Ok(url) => plan.candidates.push((index, url)),
            Err((status, reason)) => {
                entry.what_to_do = precheck_what_to_do(status, &reason).map(str::to_owned);
                entry.status = status;
                entry.reason = Some(reason);
            }
        }
        plan.entries.push(entry);
    }
    plan
}

/// The state of one import while its feeds are checked.
struct Import<'a> {
    fetcher: &'a Fetcher,
    user_id: i64,
    document: &'a OpmlDocument,
    options: &'a ImportOptions,
    progress: &'a JobProgress,
    /// Whether checked feeds are subscribed in file order (the limit may be reached), rather
    /// than as their checks end.
    in_file_order: bool,
    groups: &'a mut HashMap<String, i64>,
    entries: &'a mut Vec<ImportEntry>,
}

/// The first fetches of new feeds, running: each yields its feed and how it went.
type FirstFetches = JoinSet<(i64, Result<FeedReport, RefreshError>)>;

impl Import<'_> {
    /// Checks `candidates` in a rolling window: as one check ends, the next starts, so that a
    /// slow feed holds only its own place. The window counts the checks running and the first
    /// fetches not yet stored, so an import holds at most that many responses. Every request
    /// waits for the fetcher's per-host limiter, as the worker's do. Once the subscription
    /// limit is reached no more feeds are fetched.
    async fn check_and_subscribe(
        &mut self,
        candidates: Vec<(usize, Url)>,
    ) -> Result<(), StoreError> {
        let window = self.options.concurrency.max(1);
        let mut waiting = candidates.into_iter().enumerate();
        type Check = (usize, usize, Result<FetchResponse, CheckFailure>);
        let mut checks: JoinSet<Check> = JoinSet::new();
        // Which entry each check is for, so that a check that panicked is still reported.
        let mut checking: HashMap<tokio::task::Id, (usize, usize)> = HashMap::new();
        // Checks ended but not yet settled (in file order, those after one still running).
        let mut ended: std::collections::BTreeMap<usize, Check> = Default::default();
        let mut next_in_order = 0usize;
        let mut first_fetches = FirstFetches::new();
        let mut urls: HashMap<usize, Url> = HashMap::new();
        let mut limit_reached: Option<i64> = None;
        loop {
            while limit_reached.is_none()
                && checks.len() + ended.len() + first_fetches.len() < window
            {
                let Some((position, (index, url))) = waiting.next() else {
                    break;
                };
                let fetcher = self.fetcher.clone();
                let request = url.clone();
                let task = checks
                    .spawn(async move { (position, index, fetcher.check_feed(&request).await) });
                checking.insert(task.id(), (position, index));
                urls.insert(index, url);
            }
            tokio::select! {
                Some(done) = checks.join_next_with_id(), if !checks.is_empty() => {
                    let check = match done {
                        Ok((id, check)) => {
                            checking.remove(&id);
                            check
                        }
                        // A check that panicked: its feed is reported as failed; importing
                        // again retries.
                        Err(error) => {
                            tracing::warn!(%error, "an OPML feed check failed");
                            let Some((position, index)) = checking.remove(&error.id()) else {
                                continue;
                            };
                            (position, index, Err(CheckFailure {
                                reason: "the check did not finish".to_owned(),
                                transient: None,
                                what_to_do: Some("Import the file again to try it again."),
                            }))
                        }
                    };
                    ended.insert(check.0, check);
                    // Settled as they end, or in file order while the limit may be reached.
                    loop {
                        let next = if self.in_file_order {
                            ended.remove(&next_in_order)
                        } else {
                            ended.pop_first().map(|(_, check)| check)
                        };
                        let Some((_, index, check)) = next else { break };
                        next_in_order += 1;
                        let Some(url) = urls.remove(&index) else { continue };
                        self.settle(index, &url, check, &mut limit_reached, &mut first_fetches)
                            .await?;
                        let entry = &self.entries[index];
                        self.progress.update(|p| count_settled(p, entry));
                    }
                }
                Some(done) = first_fetches.join_next(), if !first_fetches.is_empty() => {
                    log_first_fetch(done);
                }
                else => break,
            }
        }
        if let Some(limit) = limit_reached {
            for (_, (index, _)) in waiting {
                self.entries[index].reason = Some(over_subscription_limit_reason(limit));
                let entry = &self.entries[index];
                self.progress.update(|p| count_settled(p, entry));
            }
        }
        Ok(())
    }

    /// Subscribes the feeds the installation already fetches ([`known_fresh_feeds`]) without
    /// a request: their stored items arrive as each subscription's backlog, and the worker
    /// goes on fetching them as before.
    async fn subscribe_known(&mut self, known: Vec<(usize, Url)>) -> Result<(), StoreError> {
        for (index, url) in known {
            let feed = &self.document.feeds[index];
            let subscribed = subscribe_one(
                self.fetcher.store(),
                self.user_id,
                feed,
                &url,
                self.options,
                self.groups,
            )
            .await?;
            let entry = &mut self.entries[index];
            match subscribed {
                Ok((subscription_id, _)) => {
                    entry.status = ImportStatus::Added;
                    entry.subscription_id = Some(subscription_id);
                }
                Err(Refusal::LimitReached(limit)) => {
                    entry.reason = Some(over_subscription_limit_reason(limit));
                }
                Err(Refusal::Other(status, reason)) => {
                    entry.status = status;
                    entry.reason = Some(reason);
                }
            }
            let entry = &self.entries[index];
            self.progress.update(|p| count_settled(p, entry));
        }
        Ok(())
    }

    /// Settles the entry of one checked feed: subscribes it (starting its first fetch, with
    /// the check's response) unless it is certainly no feed or the limit is reached. A
    /// database failure stops the import.
    async fn settle(
        &mut self,
        index: usize,
        url: &Url,
        check: Result<FetchResponse, CheckFailure>,
        limit_reached: &mut Option<i64>,
        first_fetches: &mut FirstFetches,
    ) -> Result<(), StoreError> {
        let entry = &mut self.entries[index];
        // A failure that may pass subscribes the feed anyway, with that fetch as its first
        // (the feed shows the error and gets the normal back-off): an outage on the day of
        // the import must not lose the subscription.
        let (fetched, passing_error) = match check {
            Ok(response) => (Ok(response), None),
            Err(CheckFailure {
                reason,
                transient: Some(fetched),
                ..
            }) => (*fetched, Some(reason)),
            Err(CheckFailure {
                reason, what_to_do, ..
            }) => {
                entry.status = ImportStatus::Failed;
                entry.reason = Some(reason);
                entry.what_to_do = what_to_do.map(str::to_owned);
                return Ok(());
            }
        };
        if let Some(limit) = limit_reached {
            entry.reason = Some(over_subscription_limit_reason(*limit));
            return Ok(());
        }
        let feed = &self.document.feeds[index];
        let subscribed = subscribe_one(
            self.fetcher.store(),
            self.user_id,
            feed,
            url,
            self.options,
            self.groups,
        )
        .await?;
        let entry = &mut self.entries[index];
        match subscribed {
            Ok((subscription_id, feed_id)) => {
                entry.status = ImportStatus::Added;
                entry.subscription_id = Some(subscription_id);
                entry.reason = passing_error.map(|error| {
                    format!("{error}; subscribed anyway, tidings retries it with back-off")
                });
                // Spawned, so that it finishes (and releases its feed) even when the import
                // stops; awaited before the import ends, so that its items are stored by then.
                let fetcher = self.fetcher.clone();
                first_fetches.spawn(async move {
                    let fetched = fetcher.refresh_feed_with_result(feed_id, fetched).await;
                    (feed_id, fetched)
                });
            }
            Err(Refusal::LimitReached(limit)) => {
                *limit_reached = Some(limit);
                entry.reason = Some(over_subscription_limit_reason(limit));
            }
            Err(Refusal::Other(status, reason)) => {
                entry.status = status;
                entry.reason = Some(reason);
            }
        }
        Ok(())
    }
}

/// Logs how a new feed's first fetch went: one that was not recorded (another worker has the
/// feed, or it is gone) leaves its items to the feed's own next fetch.
fn log_first_fetch(done: Result<(i64, Result<FeedReport, RefreshError>), tokio::task::JoinError>) {
    match done {
        Ok((_, Ok(report))) => tracing::debug!(%report, "imported feed fetched"),
        Ok((feed_id, Err(error))) => {
            tracing::debug!(feed = feed_id, %error, "an imported feed's first fetch was not recorded");
        }
        Err(error) => tracing::warn!(%error, "an imported feed's first fetch failed"),
    }
}

/// Counts the import's outcomes into its report (`import_id` 0 until recorded).
fn build_report(options: &ImportOptions, entries: Vec<ImportEntry>) -> ImportReport {
    let count = |status| entries.iter().filter(|e| e.status == status).count();
    let over = |reason: &str| {
        entries
            .iter()
            .filter(|e| e.status == ImportStatus::Refused && e.reason.as_deref() == Some(reason))
            .count()
    };
    ImportReport {
        import_id: 0,
        outlines: entries.len(),
        added: count(ImportStatus::Added),
        skipped: count(ImportStatus::Skipped),
        refused: count(ImportStatus::Refused),
        failed: count(ImportStatus::Failed),
        over_file_limit: over(&over_file_limit_reason(options.max_feeds)),
        over_subscription_limit: options
            .max_subscriptions
            .map_or(0, |limit| over(&over_subscription_limit_reason(limit))),
        entries,
    }
}

/// Records an import, with its per-URL report, in the user's history; returns its id.
async fn record_report(
    store: &Store,
    user_id: i64,
    options: &ImportOptions,
    report: &ImportReport,
) -> Result<i64, StoreError> {
    store
        .record_opml_import(
            user_id,
            &OpmlImportRecord {
                id: 0,
                created_at: chrono::Utc::now().timestamp(),
                file_name: options.file_name.clone(),
                outlines: report.outlines as i64,
                added: report.added as i64,
                skipped: report.skipped as i64,
                failed: (report.refused + report.failed) as i64,
                report: serde_json::to_string(&report.entries).unwrap_or_else(|_| "[]".into()),
            },
        )
        .await
}

fn over_file_limit_reason(max_feeds: usize) -> String {
    format!("over the limit of {max_feeds} feeds per import")
}

fn over_subscription_limit_reason(limit: i64) -> String {
    format!("over the limit of {limit} subscriptions")
}

/// What to do about a feed [`precheck`] did not take: nothing for a skipped one, and the
/// limits are explained by [`ImportReport::limit_notice`].
fn precheck_what_to_do(status: ImportStatus, reason: &str) -> Option<&'static str> {
    if status != ImportStatus::Refused || reason.starts_with("over the limit") {
        None
    } else if reason.starts_with("not a URL") {
        Some("Correct the address in the file, or subscribe to the feed by its address.")
    } else {
        Some(
            "This server does not fetch such addresses (private or local networks); if it \
             should, ask its administrator to allow them.",
        )
    }
}

/// What can be said of a feed before any request: its URL, or why it is not imported.
fn precheck(
    feed: &OpmlFeed,
    index: usize,
    options: &ImportOptions,
    address_policy: &AddressPolicy,
    subscribed: &HashSet<String>,
    seen: &mut HashSet<String>,
) -> Result<Url, (ImportStatus, String)> {
    let refused = |reason: String| Err((ImportStatus::Refused, reason));
    if index >= options.max_feeds {
        return refused(over_file_limit_reason(options.max_feeds));
    }
    let url = match Url::parse(feed.xml_url.trim()) {
        // Spellings of one address are one feed (F10): `…/feed#x` is listed twice with `…/feed`.
        Ok(url) => tidings_feed::normalize_feed_url(&url),
        Err(error) => return refused(format!("not a URL: {error}")),
    };
    if let Err(refusal) = address_policy.check_url(&url) {
        return refused(refusal.to_string());
    }
    if !seen.insert(url.to_string()) {
        return Err((
            ImportStatus::Skipped,
            "listed more than once in the file".into(),
        ));
    }
    if subscribed.contains(url.as_str()) {
        return Err((ImportStatus::Skipped, "already subscribed".into()));
    }
    Ok(url)
}

/// Why [`subscribe_one`] did not subscribe.
enum Refusal {
    /// The user's subscription limit is reached.
    LimitReached(i64),
    /// Anything else, with the entry's status and reason.
    Other(ImportStatus, String),
}

/// Subscribes to one checked feed of an import in the group of its folder (created when
/// missing), titled as in the file; returns the subscription's and the feed's ids. A database
/// failure stops the import.
async fn subscribe_one(
    store: &Store,
    user_id: i64,
    feed: &OpmlFeed,
    url: &Url,
    options: &ImportOptions,
    groups: &mut HashMap<String, i64>,
) -> Result<Result<(i64, i64), Refusal>, StoreError> {
    let group_id = match resolve_group(store, user_id, feed.group.as_deref(), groups).await? {
        Ok(group_id) => group_id,
        Err(refusal) => return Ok(Err(refusal)),
    };
    // The outline's name is what the person called the feed in their old reader; an outline
    // named by its own URL says nothing more.
    let title = feed
        .title
        .clone()
        .filter(|title| title.trim() != feed.xml_url.trim() && title.trim() != url.as_str())
        .filter(|_| feed.settings.feed_title != Some(true));
    let subscribed = store
        .subscribe_within_limit(
            user_id,
            &NewSubscription {
                feed_url: url.to_string(),
                group_id,
                title,
                interval_minutes: None,
            },
            options.max_subscriptions,
        )
        .await;
    let subscribed = match subscribed {
        Ok(subscription) => restore_settings(store, user_id, subscription, &feed.settings).await,
        Err(error) => Err(error),
    };
    Ok(match subscribed {
        Ok(subscription) => Ok((subscription.id, subscription.feed_id)),
        Err(StoreError::Conflict(_)) => Err(Refusal::Other(
            ImportStatus::Skipped,
            "already subscribed".into(),
        )),
        Err(StoreError::LimitReached { limit, .. }) => Err(Refusal::LimitReached(limit)),
        Err(StoreError::Invalid(reason)) => Err(Refusal::Other(ImportStatus::Refused, reason)),
        Err(error) => return Err(error),
    })
}

/// The id of the user's group `name` (created when missing); `None` for the default group.
async fn resolve_group(
    store: &Store,
    user_id: i64,
    name: Option<&str>,
    groups: &mut HashMap<String, i64>,
) -> Result<Result<Option<i64>, Refusal>, StoreError> {
    let Some(name) = name else {
        return Ok(Ok(None));
    };
    if let Some(id) = groups.get(&name.to_lowercase()) {
        return Ok(Ok(Some(*id)));
    }
    match store.create_group(user_id, name).await {
        Ok(group) => {
            groups.insert(group.name.to_lowercase(), group.id);
            Ok(Ok(Some(group.id)))
        }
        Err(StoreError::Invalid(reason)) => Ok(Err(Refusal::Other(
            ImportStatus::Refused,
            format!("the group {name:?} cannot be created: {reason}"),
        ))),
        Err(StoreError::Conflict(_)) => {
            // Created meanwhile (another import); look it up again.
            let existing = store
                .list_groups(user_id)
                .await?
                .into_iter()
                .find(|g| g.name.eq_ignore_ascii_case(name));
            Ok(Ok(existing.map(|g| g.id)))
        }
        Err(error) => Err(error),
    }
}

/// Imports one scraped source (F7) of a tidings export: subscribes to its page read with its
/// configuration, as `tidings` does when one is added by hand (the page is fetched once and
/// that fetch stored), then restores the subscription's settings.
async fn import_scraped(
    fetcher: &Fetcher,
    user_id: i64,
    feed: &OpmlFeed,
    url: &Url,
    options: &ImportOptions,
    groups: &mut HashMap<String, i64>,
    entry: &mut ImportEntry,
) -> Result<(), StoreError> {
    let store = fetcher.store();
    let config_json = feed.settings.scrape_config.as_deref().unwrap_or_default();
    let config: tidings_scrape::ScrapeConfig = match serde_json::from_str(config_json) {
        Ok(config) => config,
        Err(error) => {
            entry.status = ImportStatus::Refused;
            entry.reason = Some(format!("its scraper configuration is not usable: {error}"));
            entry.what_to_do = Some("Add the page again as a scraped source.".into());
            return Ok(());
        }
    };
    let group_id = match resolve_group(store, user_id, feed.group.as_deref(), groups).await? {
        Ok(group_id) => group_id,
        Err(Refusal::Other(status, reason)) => {
            entry.status = status;
            entry.reason = Some(reason);
            return Ok(());
        }
        Err(Refusal::LimitReached(limit)) => {
            entry.reason = Some(over_subscription_limit_reason(limit));
            return Ok(());
        }
    };
    let request = crate::ScrapedSourceRequest {
        url: url.to_string(),
        config,
        group_id,
        title: feed
            .title
            .clone()
            .filter(|_| feed.settings.feed_title != Some(true)),
        interval_minutes: feed.settings.interval_minutes,
        max_subscriptions: options.max_subscriptions,
    };
    match crate::subscribe_scraped(fetcher, user_id, &request).await {
        Ok(source) => {
            let subscription =
                restore_settings(store, user_id, source.subscription, &feed.settings).await?;
            entry.status = ImportStatus::Added;
            entry.subscription_id = Some(subscription.id);
        }
        Err(crate::ScrapeSourceError::Store(StoreError::Conflict(_))) => {
            entry.status = ImportStatus::Skipped;
            entry.reason = Some("already subscribed".into());
        }
        Err(crate::ScrapeSourceError::Store(StoreError::LimitReached { limit, .. })) => {
            entry.reason = Some(over_subscription_limit_reason(limit));
        }
        Err(crate::ScrapeSourceError::Store(StoreError::Invalid(reason))) => {
            entry.reason = Some(reason);
        }
        Err(crate::ScrapeSourceError::Store(error)) => return Err(error),
        Err(error) => {
            entry.status = ImportStatus::Failed;
            entry.reason = Some(error.to_string());
            entry.what_to_do = Some(
                "Check the page in your browser, and add it again as a scraped source.".into(),
            );
        }
    }
    Ok(())
}

/// Gives a new subscription the settings a tidings export carried for it; a setting the store
/// refuses (an interval out of range) is left at its default rather than failing the import.
async fn restore_settings(
    store: &Store,
    user_id: i64,
    subscription: tidings_store::Subscription,
    settings: &OpmlSettings,
) -> Result<tidings_store::Subscription, StoreError> {
    if *settings == OpmlSettings::default() {
        return Ok(subscription);
    }
    if let Some(language) = &settings.translate {
        // From now on, as when turned on by hand: the feed's past is not translated.
        let now = chrono::Utc::now().timestamp();
        store
            .set_subscription_translation(user_id, subscription.id, Some(language), now)
            .await?;
    }
    let changes = tidings_store::SubscriptionChanges {
        interval_minutes: settings.interval_minutes,
        full_text: settings
            .full_text
            .as_deref()
            .and_then(tidings_store::FullTextMode::parse),
        summarize: settings.summarize,
        suspended: settings.suspended,
        ..tidings_store::SubscriptionChanges::default()
    };
    match store
        .update_subscription(user_id, subscription.id, &changes)
        .await
    {
        Ok(updated) => Ok(updated),
        Err(StoreError::Invalid(reason)) => {
            tracing::info!(%reason, "an imported subscription's settings were not restored");
            Ok(tidings_store::Subscription {
                translate_to: settings.translate.clone(),
                ..subscription
            })
        }
        Err(error) => Err(error),
    }
}

/// The user's subscriptions as an OPML 2.0 document: the default group's feeds at the top
/// level, every other group as a folder. An administrator's export carries each feed's proxy
/// too (see [`OpmlSettings::proxy_url`]). Newsletters received by email (issue 36; their
/// `feed_url` is `mailto:`) are left out: no reader can subscribe to them elsewhere, and
/// importing one back would only fail.
pub async fn export_opml(store: &Store, user_id: i64, title: &str) -> Result<String, StoreError> {
    let is_admin = store.user(user_id).await?.is_admin;
    let groups: HashMap<i64, (String, bool)> = store
        .list_groups(user_id)
        .await?
        .into_iter()
        .map(|group| (group.id, (group.name, group.is_default)))
        .collect();
    let feeds: Vec<OpmlFeed> = store
        .list_subscriptions(user_id)
        .await?
        .into_iter()
        .filter(|subscription| !is_mail_feed(&subscription.feed_url))
        .map(|subscription| OpmlFeed {
            settings: OpmlSettings {
                interval_minutes: Some(subscription.interval_minutes),
                full_text: Some(subscription.full_text.as_str().to_owned()),
                summarize: Some(subscription.summarize),
                scrape_config: subscription.scrape_config.clone(),
                feed_title: Some(subscription.custom_title.is_none()),
                suspended: Some(subscription.suspended),
                translate: subscription.translate_to.clone(),
                proxy_url: None,
            },
            title: subscription
                .custom_title
                .or(subscription.feed_title)
                .or_else(|| Some(subscription.feed_url.clone())),
            xml_url: subscription.feed_url,
            html_url: subscription.site_url,
            group: groups
                .get(&subscription.group_id)
                .filter(|(_, is_default)| !is_default)
                .map(|(name, _)| name.clone()),
            read_filters: Vec::new(),
        })
        .collect();
    let mut feeds = feeds;
    if is_admin {
        for feed in &mut feeds {
            if let Some(id) = store.feed_id_by_url(&feed.xml_url).await? {
                feed.settings.proxy_url = store.feed_settings(id).await?.proxy_url;
            }
        }
    }
    Ok(build_opml(title, &feeds, chrono::Utc::now()))
}

/// Whether a feed is a sender's newsletters received by email (`mailto:`, issue 36).
fn is_mail_feed(feed_url: &str) -> bool {
    feed_url
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("mailto:"))
}

/// Sets the proxies an import's file names for its added feeds (see
/// [`OpmlSettings::proxy_url`]) when the importing user is an administrator and the proxy is
/// allowed; otherwise says in the feed's report why it was not set. `entries` are the
/// report's, one for each of `feeds`.
async fn restore_proxies(
    fetcher: &Fetcher,
    user_id: i64,
    feeds: &[OpmlFeed],
    entries: &mut [ImportEntry],
) -> Result<(), StoreError> {
    let store = fetcher.store();
    let mut is_admin = None;
    for (feed, entry) in feeds.iter().zip(entries.iter_mut()) {
        let (Some(proxy), ImportStatus::Added, Some(subscription_id)) = (
            feed.settings.proxy_url.as_deref(),
            entry.status,
            entry.subscription_id,
        ) else {
            continue;
        };
        let admin = match is_admin {
            Some(admin) => admin,
            None => *is_admin.insert(store.user(user_id).await?.is_admin),
        };
        let policy = &fetcher.client().config().address_policy;
        let refused = if !admin {
            Some(
                "its proxy was not set: only an administrator's import sets a feed's proxy, \
                 since it routes every subscriber's fetch"
                    .to_owned(),
            )
        } else {
            match policy.parse_proxy_url(proxy) {
                Ok(url) => {
                    let feed_id = store.subscription(user_id, subscription_id).await?.feed_id;
                    let changes = tidings_store::FeedSettingsChanges {
                        suspended: None,
                        proxy_url: Some(Some(url.to_string())),
                    };
                    store.update_feed_settings(feed_id, &changes).await?;
                    None
                }
                Err(reason) => Some(format!("its proxy was not set: {reason}")),
            }
        };
        if let Some(note) = refused {
            entry.reason = Some(match entry.reason.take() {
                Some(reason) => format!("{reason}; {note}"),
                None => note,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE opml [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<opml version="2.0">
  <head><title>My &amp; feeds</title></head>
  <body>
    <outline text="Top" xmlUrl="https://top.example/feed" htmlUrl="https://top.example/"/>
    <outline text="Tech">
      <outline text="Rust &amp; more" title="Rust" type="rss" xmlUrl="https://blog.rust-lang.org/feed.xml"/>
      <outline text="Deeper">
        <outline text="Deep" xmlUrl="https://deep.example/atom"/>
      </outline>
    </outline>
    <outline text="Cat" xmlurl="https://cat.example/rss" category="/News/World,/Other"/>
    <outline text="Empty folder"/>
  </body>
</opml>"#;

    #[test]
    fn folders_become_groups() {
        let document = parse_opml(SAMPLE.as_bytes()).unwrap();
        assert_eq!(document.title.as_deref(), Some("My & feeds"));
        let summary: Vec<(&str, Option<&str>, Option<&str>)> = document
            .feeds
            .iter()
            .map(|f| (f.xml_url.as_str(), f.title.as_deref(), f.group.as_deref()))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("https://top.example/feed", Some("Top"), None),
                (
                    "https://blog.rust-lang.org/feed.xml",
                    Some("Rust"),
                    Some("Tech")
                ),
                (
                    "https://deep.example/atom",
                    Some("Deep"),
                    Some("Tech / Deeper")
                ),
                ("https://cat.example/rss", Some("Cat"), Some("World")),
            ]
        );
    }

    #[test]
    fn built_documents_read_back_the_same() {
        let document = parse_opml(SAMPLE.as_bytes()).unwrap();
        let built = build_opml("Export <1>", &document.feeds, chrono::Utc::now());
        assert!(built.starts_with(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<opml version=\"2.0\" xmlns:tidings="
        ));
        let again = parse_opml(built.as_bytes()).unwrap();
        assert_eq!(again.title.as_deref(), Some("Export <1>"));
        let mut expected = document.feeds.clone();
        // The export writes top-level feeds first, then each group.
        expected.sort_by_key(|f| f.group.is_some());
        assert_eq!(again.feeds, expected);
    }

    #[test]
    fn exports_are_well_formed_whatever_the_stored_text_holds() {
        let feeds = vec![OpmlFeed {
            xml_url: "https://x.example/feed?a=1&b=\u{0}2".into(),
            title: Some("NUL\u{0} bell\u{7} esc\u{1b} \u{ffff}<tab>\there\nnext".into()),
            html_url: None,
            group: Some("Group\u{0}\u{1f}\"'".into()),
            settings: OpmlSettings::default(),
            read_filters: Vec::new(),
        }];
        let built = build_opml("Title\u{0}", &feeds, chrono::Utc::now());
        // XML 1.0's Char production, with the layout's own line breaks allowed.
        let is_xml_char = |c: char| {
            matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}')
                || c >= '\u{10000}'
        };
        assert!(built.chars().all(is_xml_char), "{built:?}");
        assert!(!built.contains('\t'), "tabs in attributes are references");
        let again = parse_opml(built.as_bytes()).unwrap();
        assert_eq!(again.title.as_deref(), Some("Title"));
        assert_eq!(again.feeds.len(), 1);
        assert_eq!(again.feeds[0].xml_url, "https://x.example/feed?a=1&b=2");
        assert_eq!(
            again.feeds[0].title.as_deref(),
            Some("NUL bell esc <tab> here next")
        );
        assert_eq!(again.feeds[0].group.as_deref(), Some("Group\"'"));
    }

    #[test]
    fn not_opml_is_an_error_not_a_panic() {
        assert!(matches!(parse_opml(b"<rss/>"), Err(OpmlError::NotOpml(_))));
        assert!(matches!(parse_opml(b""), Err(OpmlError::NotOpml(_))));
        for junk in [
            "<opml",
            "<<>>",
            "<opml><body><outline xmlUrl='",
            "\u{feff}<opml/>",
        ] {
            let _ = parse_opml(junk.as_bytes());
        }
        assert!(matches!(
            parse_opml(&vec![b' '; MAX_OPML_BYTES + 1]),
            Err(OpmlError::TooLarge)
        ));
    }

    #[test]
    fn shift_jis_documents_are_read() {
        let (encoded, _, _) = encoding_rs::SHIFT_JIS.encode(
            "<?xml version=\"1.0\" encoding=\"Shift_JIS\"?><opml version=\"1.0\"><body>\
             <outline text=\"日本語\"><outline text=\"ニュース\" xmlUrl=\"https://example.jp/rss\"/></outline>\
             </body></opml>",
        );
        let document = parse_opml(&encoded).unwrap();
        assert_eq!(document.feeds[0].title.as_deref(), Some("ニュース"));
        assert_eq!(document.feeds[0].group.as_deref(), Some("日本語"));
    }
}
