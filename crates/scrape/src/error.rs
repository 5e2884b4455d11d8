//! Why a page gave no items: each error names the field, selector or path at fault, so that
//! the person configuring the source knows what to change.

/// Why [`crate::scrape`] produced no items, or a configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScrapeError {
    /// A field of the configuration is missing, not used by its kind, or malformed.
    #[error("{field}: {reason}")]
    InvalidConfig {
        /// The configuration field at fault, e.g. `item_selector`.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The page is larger than the limit.
    #[error("the page is too large to scrape: {size} bytes, the limit is {limit} bytes")]
    TooLarge {
        /// The page's size in bytes.
        size: usize,
        /// The limit in force.
        limit: usize,
    },
    /// A selector or key path found nothing on the page.
    #[error("{field} `{selector}` matched nothing{where_}")]
    NothingMatched {
        /// The configuration field, e.g. `item_selector` or `title_selector`.
        field: &'static str,
        /// The selector or key path as configured.
        selector: String,
        /// Where it was looked for (" in any of the 12 items", " in __NEXT_DATA__ …"), or
        /// empty for the whole page.
        where_: String,
    },
    /// The page lacks the data its kind needs (no `__NEXT_DATA__`, no `__remixContext`), or
    /// that data is not readable.
    #[error("{0}")]
    MissingData(String),
    /// A key path led to a value of the wrong type.
    #[error("{field} `{path}` leads to {found}, not a list of items")]
    NotAList {
        /// The configuration field, `data_key` or `context_key`.
        field: &'static str,
        /// The path as configured.
        path: String,
        /// What it leads to ("an object with keys posts, total", "a string").
        found: String,
    },
    /// Dates were found but none could be read with the configured format.
    #[error("date_selector found dates such as `{example}`, but none could be read {how}")]
    UnreadableDates {
        /// The first date text found.
        example: String,
        /// How they were read ("with date_format `%d.%m.%Y`", "as a date").
        how: String,
    },
    /// Items were found but none has a title or a link.
    #[error("{0}")]
    NoUsableItems(String),
}
