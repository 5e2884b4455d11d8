//! The Google Reader protocol's names for things: item ids in their long and decimal forms,
//! stream ids of feeds, labels and states, times in the units apps send, and page
//! continuations.

use super::protocol::{GReaderError, Params, Result};

/// The prefix of an item id in the long form.
const ITEM_ID_PREFIX: &str = "tag:google.com,2005:reader/item/";
/// Every item of every subscription.
pub(super) const READING_LIST: &str = "user/-/state/com.google/reading-list";
/// Read items.
pub(super) const READ: &str = "user/-/state/com.google/read";
/// Starred items.
pub(super) const STARRED: &str = "user/-/state/com.google/starred";
/// The prefix of a label's stream id.
pub(super) const LABEL_PREFIX: &str = "user/-/label/";
/// The prefix of a feed's stream id.
pub(super) const FEED_PREFIX: &str = "feed/";
/// The most item ids one `edit-tag` or `stream/items/contents` request may name.
const MAX_NAMED_ITEMS: usize = 10_000;

/// The long form of an item id.
pub fn long_item_id(id: i64) -> String {
    format!("{ITEM_ID_PREFIX}{:016x}", id as u64)
}

/// An item id in any form clients send: the long form (hex) or decimal.
pub fn parse_item_id(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Some(hex) = text.strip_prefix(ITEM_ID_PREFIX) {
        if hex.is_empty() || hex.len() > 16 {
            return None;
        }
        return u64::from_str_radix(hex, 16).ok().map(|v| v as i64);
    }
    text.parse::<i64>().ok()
}

/// A time clients send in seconds, milliseconds or microseconds, in microseconds.
pub(super) fn to_micros(value: i64) -> i64 {
    if value.abs() >= 100_000_000_000_000 {
        value
    } else if value.abs() >= 100_000_000_000 {
        value.saturating_mul(1_000)
    } else {
        value.saturating_mul(1_000_000)
    }
}

/// Decodes `%XX` escapes of a URL path segment (a `+` stays a `+`).
pub(super) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(byte) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A feed's stream id: `feed/<feed id>`, as FreshRSS and Miniflux write it. A URL in it broke
/// apps that put ids into forms unencoded (NetNewsWire: `&`, `+`, `%`) or cut them with
/// `replace("feed/", "")` (Read You: every WordPress `…/feed/`).
pub(super) fn feed_stream_id(feed_id: i64) -> String {
    format!("{FEED_PREFIX}{feed_id}")
}

/// A label's stream id.
pub(super) fn label_stream_id(name: &str) -> String {
    format!("{LABEL_PREFIX}{name}")
}

/// Microseconds (or milliseconds) of Unix seconds, as the decimal strings clients expect.
pub(super) fn usec(secs: i64) -> String {
    (secs.saturating_mul(1_000_000)).to_string()
}

/// The continuation of a page that ended on the item that arrived at `arrived_us` with sync
/// id `id`: its place in the arrival order streams list in. Only the id is read back (see
/// [`parse_continuation`]), so continuations of earlier versions, which carried the item's
/// publication time first, go on working; the time is not read from the item for it, which
/// let a page of ids be listed from the arrival rows alone.
pub(super) fn continuation(arrived_us: i64, id: i64) -> String {
    format!("{arrived_us}_{id}")
}

/// Reads a continuation back (a 400 naming it when it is not one this server gave).
pub(super) fn parse_continuation(text: &str) -> Result<(i64, i64)> {
    text.trim()
        .split_once('_')
        .and_then(|(p, i)| Some((p.parse().ok()?, i.parse().ok()?)))
        .ok_or_else(|| {
            GReaderError::bad_request(format!(
                "Invalid continuation c={text:?}: send back the continuation of the previous page."
            ))
        })
}

/// The name of a label given as a stream id or a bare name.
pub(super) fn label_name(text: &str) -> &str {
    let text = text.trim();
    text.strip_prefix("user/")
        .and_then(|rest| rest.split_once('/'))
        .and_then(|(_, rest)| rest.strip_prefix("label/"))
        .unwrap_or(text)
}

/// The item ids of the repeatable `i` parameter, in any accepted form.
pub(super) fn item_ids(params: &Params) -> Result<Vec<i64>> {
    let values = params.all("i");
    if values.len() > MAX_NAMED_ITEMS {
        return Err(GReaderError::bad_request(format!(
            "At most {MAX_NAMED_ITEMS} items (i=…) can be named at once."
        )));
    }
    values
        .into_iter()
        .map(|value| {
            parse_item_id(value).ok_or_else(|| {
                GReaderError::bad_request(format!(
                    "Invalid item id i={value:?}: use tag:google.com,2005:reader/item/<16 hex \
                     digits> or the decimal id."
                ))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_ids_are_read_in_long_and_decimal_forms() {
        assert_eq!(
            long_item_id(42),
            "tag:google.com,2005:reader/item/000000000000002a"
        );
        assert_eq!(parse_item_id(&long_item_id(42)), Some(42));
        assert_eq!(
            parse_item_id("tag:google.com,2005:reader/item/2a"),
            Some(42)
        );
        assert_eq!(parse_item_id("42"), Some(42));
        assert_eq!(parse_item_id(" 42 "), Some(42));
        assert_eq!(parse_item_id("tag:google.com,2005:reader/item/xyz"), None);
        assert_eq!(parse_item_id("tag:google.com,2005:reader/item/"), None);
        assert_eq!(parse_item_id("forty-two"), None);
    }

    #[test]
    fn times_in_any_unit_become_microseconds() {
        assert_eq!(to_micros(1_700_000_000), 1_700_000_000_000_000);
        assert_eq!(to_micros(1_700_000_000_123), 1_700_000_000_123_000);
        assert_eq!(to_micros(1_700_000_000_123_456), 1_700_000_000_123_456);
    }

    #[test]
    fn path_segments_are_percent_decoded() {
        assert_eq!(
            percent_decode("feed%2Fhttps%3A%2F%2Fa.example%2Ffeed%3Fx%3D1+2"),
            "feed/https://a.example/feed?x=1+2"
        );
        assert_eq!(
            percent_decode("user/-/label/Tech%20News"),
            "user/-/label/Tech News"
        );
        assert_eq!(percent_decode("bad%2"), "bad%2");
        assert_eq!(percent_decode("%zz"), "%zz");
    }

    #[test]
    fn continuations_round_trip_and_bad_ones_are_refused() {
        assert_eq!(
            parse_continuation(&continuation(1_700_000_000, 7)).unwrap(),
            (1_700_000_000, 7)
        );
        assert!(parse_continuation("garbage").is_err());
    }
}
