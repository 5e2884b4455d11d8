//! Search's part in the API (F35): reading `q` into a query with a clear error, and rendering
//! a hit's snippet as safe HTML. The index and the matching are the store's.

use tidings_feed::text::escape_html;
use tidings_text::{MAX_QUERY_CHARS, MAX_TERM_CHARS, MAX_TERMS, SearchQuery, snippet};

use crate::base::error::{ApiError, ApiResult};

/// Characters of content a snippet shows.
const SNIPPET_CHARS: usize = 160;

/// The search in `q`, or `None` when `q` is absent or blank (a plain listing).
pub(crate) fn parse_q(q: Option<&str>) -> ApiResult<Option<SearchQuery>> {
    let Some(q) = q.filter(|q| !q.trim().is_empty()) else {
        return Ok(None);
    };
    SearchQuery::parse(q).map(Some).map_err(|error| {
        ApiError::validation(
            format!("q: {error}"),
            format!(
                "Search for up to {MAX_TERMS} words or \"quoted phrases\" of at most \
                 {MAX_TERM_CHARS} characters each ({MAX_QUERY_CHARS} in all); put - before a \
                 word to exclude it."
            ),
        )
    })
}

/// A snippet of `text` around what `query` matched, as HTML: the text escaped, the matches
/// in `<mark>`.
pub(crate) fn snippet_html(text: &str, query: &SearchQuery) -> String {
    let mut html = String::new();
    for segment in snippet(text, query, SNIPPET_CHARS) {
        if segment.highlighted {
            html.push_str("<mark>");
            html.push_str(&escape_html(&segment.text));
            html.push_str("</mark>");
        } else {
            html.push_str(&escape_html(&segment.text));
        }
    }
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_are_escaped() {
        let query = SearchQuery::parse("script").unwrap();
        assert_eq!(
            snippet_html("<script>alert(1)</script> & script", &query),
            "&lt;<mark>script</mark>&gt;alert(1)&lt;/<mark>script</mark>&gt; &amp; <mark>script</mark>"
        );
    }

    #[test]
    fn blank_q_is_no_search_and_bad_q_is_explained() {
        assert!(parse_q(None).unwrap().is_none());
        assert!(parse_q(Some("  ")).unwrap().is_none());
        assert!(parse_q(Some("rust")).unwrap().is_some());
        assert!(parse_q(Some("-rust")).is_err());
        assert!(parse_q(Some(&"x ".repeat(201))).is_err());
    }
}
