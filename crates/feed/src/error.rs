//! Why a document could not be read as a feed.

/// Why [`crate::parse`] refused a document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The document is not a feed: an HTML page, another kind of XML or JSON, or garbage. The
    /// text says what it is instead.
    #[error("not a feed: {0}")]
    NotAFeed(String),
    /// The document is larger than [`crate::ParseOptions::max_input_bytes`].
    #[error("too large to parse: {size} bytes, the limit is {limit} bytes")]
    TooLarge {
        /// The document's size in bytes.
        size: usize,
        /// The limit in force.
        limit: usize,
    },
}
