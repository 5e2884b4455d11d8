//! URL resolution shared by the parsers, the sanitizer and discovery.

use url::Url;

/// Resolves `value` against `base` (when it is relative) and returns it only when it is an
/// http(s) URL with a host. Surrounding whitespace is ignored.
pub(crate) fn web_url(base: Option<&Url>, value: &str) -> Option<Url> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    let url = match Url::parse(value) {
        Ok(url) => url,
        Err(url::ParseError::RelativeUrlWithoutBase) => base?.join(value).ok()?,
        Err(_) => return None,
    };
    is_web(&url).then_some(url)
}

/// Whether a URL is http(s) with a host.
pub(crate) fn is_web(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https") && url.host().is_some()
}

/// Applies an `xml:base` value to the base in effect. A base that cannot be resolved leaves the
/// outer one in effect.
pub(crate) fn apply_xml_base(outer: Option<&Url>, value: Option<&str>) -> Option<Url> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return outer.cloned();
    };
    match Url::parse(value) {
        Ok(url) => Some(url),
        Err(url::ParseError::RelativeUrlWithoutBase) => outer
            .and_then(|o| o.join(value).ok())
            .or_else(|| outer.cloned()),
        Err(_) => outer.cloned(),
    }
}
