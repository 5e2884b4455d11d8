//! Which of the UI's languages the shell is written in, before any script runs: the words a
//! reader sees while the app loads (or without JavaScript) and `<html lang>`. The app then
//! follows the `language` preference; the shell follows what the browser said last: the
//! choice the app remembers in a cookie, else the browser's `Accept-Language`.

/// The cookie in which the app remembers this browser's language choice (`auto` or a code),
/// so that the shell of the next visit is already in it.
pub const LANGUAGE_COOKIE: &str = "tidings_language";

/// Browser tags that mean a language of the UI without saying so (as `ui/i18n.js` reads
/// them): Chinese from the mainland and Singapore is written in Simplified characters.
const ALIASES: &[(&str, &str)] = &[
    ("zh", "zh-Hans"),
    ("zh-cn", "zh-Hans"),
    ("zh-sg", "zh-Hans"),
];

/// The index in `codes` of the language the shell is written in: `chosen` (the cookie) when
/// it names one of them, else the first of `accept_language`'s tags by weight that one of them
/// covers (`ja-JP` is `ja`; `zh-TW` is not `zh-Hans`), else the first, English.
pub fn negotiate(codes: &[&str], chosen: Option<&str>, accept_language: Option<&str>) -> usize {
    let find = |tag: &str| {
        let lower = tag.trim().to_ascii_lowercase();
        codes
            .iter()
            .position(|code| {
                let code = code.to_ascii_lowercase();
                lower == code
                    || lower
                        .strip_prefix(&code)
                        .is_some_and(|r| r.starts_with('-'))
            })
            .or_else(|| {
                let (_, target) = ALIASES.iter().find(|(alias, _)| *alias == lower)?;
                codes.iter().position(|code| code == target)
            })
    };
    if let Some(index) = chosen.and_then(find) {
        return index;
    }
    let mut tags: Vec<(f32, &str)> = accept_language
        .unwrap_or_default()
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';');
            let tag = pieces.next()?.trim();
            let weight = pieces
                .find_map(|p| p.trim().strip_prefix("q="))
                .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok())?;
            (!tag.is_empty() && tag != "*" && weight > 0.0).then_some((weight, tag))
        })
        .collect();
    // Stable: tags of equal weight keep the browser's order.
    tags.sort_by(|a, b| b.0.total_cmp(&a.0));
    tags.into_iter().find_map(|(_, tag)| find(tag)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODES: &[&str] = &["en", "ja", "zh-Hans"];

    #[test]
    fn the_remembered_choice_comes_first_then_the_browser() {
        assert_eq!(negotiate(CODES, Some("ja"), Some("zh-CN,en")), 1);
        // `auto`, or a code no longer spoken, leaves it to the browser.
        assert_eq!(negotiate(CODES, Some("auto"), Some("zh-CN,en")), 2);
        assert_eq!(negotiate(CODES, Some("fr"), Some("ja-JP")), 1);
        assert_eq!(negotiate(CODES, None, None), 0);
    }

    #[test]
    fn accept_language_is_read_by_weight_and_region() {
        assert_eq!(negotiate(CODES, None, Some("ja-JP,ja;q=0.9,en;q=0.8")), 1);
        assert_eq!(negotiate(CODES, None, Some("en;q=0.5, ja;q=0.9")), 1);
        assert_eq!(negotiate(CODES, None, Some("fr-FR, zh-Hans-CN;q=0.7")), 2);
        assert_eq!(negotiate(CODES, None, Some("zh-SG")), 2);
        // Traditional Chinese is not Simplified: English rather than the wrong script.
        assert_eq!(negotiate(CODES, None, Some("zh-TW,zh;q=0")), 0);
        // Refused (q=0), wildcards and rubbish are passed over, never a failure.
        assert_eq!(negotiate(CODES, None, Some("ja;q=0, *;q=0.5")), 0);
        assert_eq!(negotiate(CODES, None, Some(";;,q=,ja;q=x,,JA")), 1);
        assert_eq!(negotiate(CODES, None, Some("jav,ja")), 1);
    }
}
