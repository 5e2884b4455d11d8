//! Turning a feed's bytes into UTF-8 text.
//!
//! Precedence: a byte order mark, then the charset the caller got from HTTP, then the XML
//! declaration, then sniffing. Two kinds of lie are common enough to correct: a declaration (or
//! header) naming a multi-byte charset for bytes that are really UTF-8, and a server that labels
//! everything ISO-8859-1 while the document says, truthfully, UTF-8.

use std::borrow::Cow;

use encoding_rs::{EUC_JP, Encoding, SHIFT_JIS, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252};

/// How far into the document the XML declaration is looked for.
const DECLARATION_WINDOW: usize = 1024;

/// The decoded text and the encoding it was read with.
#[derive(Debug)]
pub struct DecodedText<'a> {
    /// The document as UTF-8, without its byte order mark.
    pub text: Cow<'a, str>,
    /// The encoding that was used to read it.
    pub encoding: &'static Encoding,
}

/// Decodes `bytes` to UTF-8. `http_charset` is the `charset` parameter of the response's
/// `Content-Type`, if any. Never fails: undecodable bytes become U+FFFD.
pub fn decode_document<'a>(bytes: &'a [u8], http_charset: Option<&str>) -> DecodedText<'a> {
    if let Some((encoding, bom_len)) = Encoding::for_bom(bytes) {
        return decode_with(&bytes[bom_len..], encoding);
    }
    let declared = declared_encoding(bytes);
    let from_http = http_charset
        .and_then(|label| Encoding::for_label(label.trim().trim_matches(['"', '\'']).as_bytes()));
    if let Some(encoding) = from_http {
        // A server default of ISO-8859-1 (which encoding_rs reads as windows-1252) must not
        // override a document that declares UTF-8 and is valid UTF-8.
        let server_default = encoding == WINDOWS_1252 || encoding.name() == "US-ASCII";
        if server_default && declared == Some(UTF_8) && std::str::from_utf8(bytes).is_ok() {
            return decode_with(bytes, UTF_8);
        }
        return decode_checked(bytes, encoding);
    }
    if let Some(encoding) = declared {
        return decode_checked(bytes, encoding);
    }
    if let Some(encoding) = sniff_utf16(bytes) {
        return decode_with(bytes, encoding);
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        return DecodedText {
            text: Cow::Borrowed(text),
            encoding: UTF_8,
        };
    }
    // No label at all and not UTF-8: the Japanese legacy encodings are the common case for feeds
    // that omit the declaration; they reject most Latin text, which then falls to windows-1252.
    for candidate in [SHIFT_JIS, EUC_JP] {
        let (text, had_errors) = candidate.decode_without_bom_handling(bytes);
        if !had_errors {
            return DecodedText {
                text,
                encoding: candidate,
            };
        }
    }
    decode_with(bytes, WINDOWS_1252)
}

/// Decodes with `encoding`, falling back to UTF-8 when the label was stale: the bytes do not
/// decode cleanly with it but are valid UTF-8.
fn decode_checked<'a>(bytes: &'a [u8], encoding: &'static Encoding) -> DecodedText<'a> {
    let (text, had_errors) = encoding.decode_without_bom_handling(bytes);
    if had_errors && let Ok(utf8) = std::str::from_utf8(bytes) {
        return DecodedText {
            text: Cow::Borrowed(utf8),
            encoding: UTF_8,
        };
    }
    DecodedText { text, encoding }
}

fn decode_with<'a>(bytes: &'a [u8], encoding: &'static Encoding) -> DecodedText<'a> {
    let (text, _) = encoding.decode_without_bom_handling(bytes);
    DecodedText { text, encoding }
}

/// UTF-16 without a byte order mark, recognized by `<` next to a zero byte.
fn sniff_utf16(bytes: &[u8]) -> Option<&'static Encoding> {
    match bytes {
        [b'<', 0, ..] => Some(UTF_16LE),
        [0, b'<', ..] => Some(UTF_16BE),
        _ => None,
    }
}

/// The encoding named by the XML declaration at the start of the document, if any. A
/// declaration of UTF-16 read from ASCII-compatible bytes is a lie and is ignored.
fn declared_encoding(bytes: &[u8]) -> Option<&'static Encoding> {
    let window = &bytes[..bytes.len().min(DECLARATION_WINDOW)];
    let start = window.iter().position(|b| !b.is_ascii_whitespace())?;
    let window = &window[start..];
    if !window.starts_with(b"<?xml") {
        return None;
    }
    let end = window.windows(2).position(|w| w == b"?>")?;
    let declaration = &window[..end];
    let at = find(declaration, b"encoding")?;
    let rest = &declaration[at + b"encoding".len()..];
    let rest = trim_ascii_start(rest).strip_prefix(b"=")?;
    let rest = trim_ascii_start(rest);
    let quote = *rest.first()?;
    if quote != b'"' && quote != b'\'' {
        return None;
    }
    let value = &rest[1..];
    let close = value.iter().position(|&b| b == quote)?;
    let encoding = Encoding::for_label(&value[..close])?;
    if encoding == UTF_16LE || encoding == UTF_16BE {
        return Some(UTF_8);
    }
    Some(encoding)
}

fn trim_ascii_start(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    &bytes[start..]
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sjis(text: &str) -> Vec<u8> {
        SHIFT_JIS.encode(text).0.into_owned()
    }

    #[test]
    fn bom_wins_over_everything() {
        let mut bytes = vec![0xEF, 0xBB, 0xBF];
        bytes.extend_from_slice(
            "<?xml version=\"1.0\" encoding=\"Shift_JIS\"?><a>日本</a>".as_bytes(),
        );
        let decoded = decode_document(&bytes, Some("EUC-JP"));
        assert_eq!(decoded.encoding, UTF_8);
        assert!(decoded.text.starts_with("<?xml"));
        assert!(decoded.text.contains("日本"));
    }

    #[test]
    fn http_charset_beats_declaration_and_works_alone() {
        let bytes = sjis("<rss><title>日本語</title></rss>");
        assert!(
            decode_document(&bytes, Some("Shift_JIS"))
                .text
                .contains("日本語")
        );
        assert!(
            decode_document(&bytes, Some("\"shift_jis\""))
                .text
                .contains("日本語")
        );
    }

    #[test]
    fn declaration_is_honored() {
        let bytes = EUC_JP
            .encode("<?xml version='1.0' encoding='EUC-JP'?><rss>日本語</rss>")
            .0;
        let decoded = decode_document(&bytes, None);
        assert_eq!(decoded.encoding, EUC_JP);
        assert!(decoded.text.contains("日本語"));
    }

    #[test]
    fn stale_declaration_falls_back_to_utf8() {
        let bytes =
            "<?xml version=\"1.0\" encoding=\"Shift_JIS\"?><rss>日本語です</rss>".as_bytes();
        let decoded = decode_document(bytes, None);
        assert_eq!(decoded.encoding, UTF_8);
        assert!(decoded.text.contains("日本語です"));
    }

    #[test]
    fn latin1_server_default_does_not_override_utf8_document() {
        let bytes = "<?xml version=\"1.0\" encoding=\"utf-8\"?><rss>café</rss>".as_bytes();
        assert!(
            decode_document(bytes, Some("ISO-8859-1"))
                .text
                .contains("café")
        );
    }

    #[test]
    fn sniffing_without_any_label() {
        assert!(
            decode_document(&sjis("<rss>日本語のフィード</rss>"), None)
                .text
                .contains("日本語のフィード")
        );
        let latin1 = b"<rss>caf\xe9 cr\xe8me</rss>";
        assert!(decode_document(latin1, None).text.contains("café crème"));
        let utf16: Vec<u8> = "<rss>x</rss>"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        assert_eq!(decode_document(&utf16, None).text, "<rss>x</rss>");
    }
}
