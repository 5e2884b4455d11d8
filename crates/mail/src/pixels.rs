//! Tracking pixels: the invisible images newsletters load to learn that, when and where a
//! message was opened. They are removed from the raw HTML before it is sanitized, while their
//! sizes and styles are still there to see (the sanitizer drops `style`).
//!
//! The scan reads `<img …>` tags only roughly (quoted and bare attribute values); a tag it
//! misreads is kept, and the sanitizer that runs afterwards is what makes the HTML safe, so a
//! mistake here can leave a pixel in but never lets anything unsafe through.

/// Hosts and paths of the common open-tracking services, for pixels that do not say their size.
const TRACKER_MARKS: &[&str] = &[
    "/open.aspx",
    "/open.php",
    "/track/open",
    "/tracking/open",
    "/e/o/",
    "/wf/open",
    "/trk/",
    "pixel.gif",
    "pixel.png",
    "/beacon",
    "list-manage.com/track",
    "mailchimp.com/track",
    "sendgrid.net/wf/open",
    "mandrillapp.com/track",
    "/o.gif",
    "/t.gif",
    "spacer.gif",
];

/// `html` without its tracking pixels: images at most 2 px wide or high, images hidden by
/// their style, and images from the common open-tracking addresses.
pub fn remove_tracking_pixels(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(start) = find_img(rest) {
        let Some(len) = rest[start..].find('>') else {
            break;
        };
        let tag = &rest[start..start + len + 1];
        out.push_str(&rest[..start]);
        if !is_tracking_pixel(tag) {
            out.push_str(tag);
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    out
}

/// Where the next `<img` start tag begins (ASCII case-insensitive, followed by a space, `/` or
/// `>`).
fn find_img(html: &str) -> Option<usize> {
    let bytes = html.as_bytes();
    let mut from = 0;
    while let Some(offset) = html[from..].find('<') {
        let at = from + offset;
        let name = bytes.get(at + 1..at + 4);
        let after = bytes.get(at + 4).copied();
        if name.is_some_and(|n| n.eq_ignore_ascii_case(b"img"))
            && after.is_some_and(|c| c.is_ascii_whitespace() || c == b'/' || c == b'>')
        {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Whether an `<img …>` tag is a tracking pixel.
fn is_tracking_pixel(tag: &str) -> bool {
    let tiny = |name: &str| {
        attribute(tag, name).is_some_and(|v| {
            let digits: String = v.trim().chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u32>().is_ok_and(|n| n <= 2)
        })
    };
    if tiny("width") || tiny("height") {
        return true;
    }
    if attribute(tag, "style").is_some_and(hidden_by_style) {
        return true;
    }
    attribute(tag, "src").is_some_and(|src| {
        let src = src.to_ascii_lowercase();
        TRACKER_MARKS.iter().any(|mark| src.contains(mark))
    })
}

/// Whether an inline style hides an image or makes it at most 2 px wide or high.
fn hidden_by_style(style: &str) -> bool {
    let small = |value: &str| {
        let number: String = value
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        number.parse::<f32>().is_ok_and(|n| n <= 2.0)
    };
    style.split(';').any(|declaration| {
        let Some((property, value)) = declaration.split_once(':') else {
            return false;
        };
        let value = value.trim().to_ascii_lowercase();
        match property.trim().to_ascii_lowercase().as_str() {
            "display" => value.starts_with("none"),
            "visibility" => value.starts_with("hidden"),
            "opacity" => value.parse::<f32>().is_ok_and(|o| o == 0.0),
            "width" | "height" | "max-width" | "max-height" => small(&value),
            _ => false,
        }
    })
}

/// The value of attribute `name` in a start tag, roughly: `name="v"`, `name='v'` or `name=v`.
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let lower = tag.to_ascii_lowercase();
    let mut from = 0;
    while let Some(offset) = lower[from..].find(name) {
        let at = from + offset;
        from = at + name.len();
        // An attribute starts after whitespace or `/`: `alt="height=1"` holds no height.
        let before = at.checked_sub(1).map(|b| lower.as_bytes()[b]);
        if !before.is_some_and(|b| b.is_ascii_whitespace() || b == b'/') {
            continue;
        }
        let rest = lower[from..].trim_start();
        let Some(value) = rest.strip_prefix('=') else {
            continue;
        };
        let value_start = lower.len() - value.trim_start().len();
        let quote = tag.as_bytes().get(value_start).copied();
        return Some(match quote {
            Some(q @ (b'"' | b'\'')) => {
                let inner = &tag[value_start + 1..];
                &inner[..inner.find(q as char).unwrap_or(inner.len())]
            }
            _ => {
                let inner = &tag[value_start..];
                let end = inner
                    .find(|c: char| c.is_ascii_whitespace() || c == '>')
                    .unwrap_or(inner.len());
                &inner[..end]
            }
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pixels_go_and_pictures_stay() {
        let html = concat!(
            "<p>Hi</p><IMG SRC=\"https://t.example/x.gif\" WIDTH=\"1\" HEIGHT=\"1\">",
            "<img src='https://example.com/photo.jpg' width='600' alt='A photo'>",
            "<img style=\"display: none\" src=\"https://a.example/b.png\">",
            "<img src=https://x.list-manage.com/track/open.php?u=1 border=0>",
            "<img alt=\"height=1\" src=\"https://example.com/ok.png\"/>",
            "<imgx>",
        );
        assert_eq!(
            remove_tracking_pixels(html),
            concat!(
                "<p>Hi</p>",
                "<img src='https://example.com/photo.jpg' width='600' alt='A photo'>",
                "<img alt=\"height=1\" src=\"https://example.com/ok.png\"/>",
                "<imgx>",
            )
        );
    }

    #[test]
    fn an_unclosed_tag_is_left_to_the_sanitizer() {
        assert_eq!(remove_tracking_pixels("a<img src=x"), "a<img src=x");
        assert_eq!(remove_tracking_pixels("<"), "<");
    }
}
