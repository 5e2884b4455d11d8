//! Lenient date parsing for feeds: RFC 3339 / ISO 8601 (also partial and date-only), RFC 822 /
//! RFC 2822 with the breakage found in real feeds, and the Japanese `2024年3月5日` form.
//!
//! Everything is normalized to UTC. A value that cannot be read is `None`: the caller decides
//! what a missing date means (the store estimates it from the fetch time), so this module never
//! substitutes "now" and never panics.

use chrono::{DateTime, Duration, FixedOffset, NaiveDate, TimeZone, Utc};

/// Longer values are not dates; refusing them keeps the work per value small.
const MAX_DATE_LEN: usize = 128;

/// Parses a feed date in any of the supported forms and returns it in UTC.
///
/// A value without a zone is taken as UTC. A named zone that is not known but looks like one
/// (two to five letters) is taken as UTC as well, since a date a few hours off is more useful
/// to a reader than none. A wrong weekday is ignored, like every reader does.
pub fn parse_date(value: &str) -> Option<DateTime<Utc>> {
    let value = value.trim();
    if value.is_empty() || value.len() > MAX_DATE_LEN {
        return None;
    }
    let normalized;
    let value = if value.contains(['年', '月', '日']) {
        normalized = value
            .replace(['年', '月'], "-")
            .replace('日', " ")
            .replace(['時', '分'], ":")
            .replace('秒', "")
            .replace(": ", " ");
        normalized.trim().trim_end_matches(':')
    } else {
        value
    };
    parse_iso8601(value).or_else(|| parse_rfc822(value))
}

/// The calendar and clock fields of a date before its zone is applied.
#[derive(Debug, Default, Clone, Copy)]
struct Fields {
    year: i32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    nanosecond: u32,
    /// Seconds east of UTC.
    offset: i32,
}

impl Fields {
    fn to_utc(self) -> Option<DateTime<Utc>> {
        if !(1..=9999).contains(&self.year) || self.minute > 59 || self.second > 60 {
            return None;
        }
        let date = NaiveDate::from_ymd_opt(self.year, self.month, self.day)?;
        // "24:00" means midnight at the end of the day; a leap second is folded into :59.
        let (hour, extra_day) = match self.hour {
            24 => (0, 1),
            h if h < 24 => (h, 0),
            _ => return None,
        };
        let local =
            date.and_hms_nano_opt(hour, self.minute, self.second.min(59), self.nanosecond)?
                + Duration::days(extra_day);
        let zone = FixedOffset::east_opt(self.offset)?;
        Some(
            zone.from_local_datetime(&local)
                .single()?
                .with_timezone(&Utc),
        )
    }
}

/// A byte cursor over an ASCII date string.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn skip_spaces(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    /// Reads between `min` and `max` ASCII digits as a number.
    fn number(&mut self, min: usize, max: usize) -> Option<u32> {
        let start = self.pos;
        let mut value: u32 = 0;
        while self.pos - start < max {
            match self.peek() {
                Some(d @ b'0'..=b'9') => {
                    value = value * 10 + u32::from(d - b'0');
                    self.pos += 1;
                }
                _ => break,
            }
        }
        (self.pos - start >= min).then_some(value)
    }

    fn rest(&self) -> &[u8] {
        self.bytes.get(self.pos..).unwrap_or_default()
    }
}

/// RFC 3339 and the ISO 8601 forms feeds use: `2024-03-05T10:00:00.5+09:00`, a space instead of
/// `T`, no seconds, no zone, `2024-03-05`, `2024-03`, `2024`, `20240305T100000Z`, and
/// `2024/03/05 10:00`.
fn parse_iso8601(value: &str) -> Option<DateTime<Utc>> {
    let mut c = Cursor {
        bytes: value.as_bytes(),
        pos: 0,
    };
    let mut f = Fields {
        month: 1,
        day: 1,
        ..Fields::default()
    };
    f.year = i32::try_from(c.number(4, 4)?).ok()?;
    if c.eat(b'-') || c.eat(b'/') {
        f.month = c.number(1, 2)?;
        if c.eat(b'-') || c.eat(b'/') {
            f.day = c.number(1, 2)?;
        }
    } else if matches!(c.peek(), Some(b'0'..=b'9')) {
        f.month = c.number(2, 2)?;
        f.day = c.number(2, 2)?;
    }
    if matches!(c.peek(), Some(b'T' | b't')) {
        c.pos += 1;
    } else {
        c.skip_spaces();
    }
    if !c.at_end() && matches!(c.peek(), Some(b'0'..=b'9')) {
        f.hour = c.number(1, 2)?;
        let extended = c.eat(b':');
        f.minute = c.number(2, 2)?;
        if (extended && c.eat(b':')) || (!extended && matches!(c.peek(), Some(b'0'..=b'9'))) {
            f.second = c.number(2, 2)?;
            if c.eat(b'.') || c.eat(b',') {
                f.nanosecond = fraction_nanos(&mut c)?;
            }
        }
    }
    c.skip_spaces();
    f.offset = zone_at_end(c.rest())?;
    f.to_utc()
}

/// Reads fractional-second digits (any count, nanosecond precision kept).
fn fraction_nanos(c: &mut Cursor<'_>) -> Option<u32> {
    let mut nanos: u32 = 0;
    let mut digits = 0;
    while let Some(d @ b'0'..=b'9') = c.peek() {
        if digits < 9 {
            nanos = nanos * 10 + u32::from(d - b'0');
        }
        digits += 1;
        c.pos += 1;
    }
    if digits == 0 {
        return None;
    }
    for _ in digits..9 {
        nanos *= 10;
    }
    Some(nanos)
}

/// The offset a trailing zone designates: nothing (UTC), `Z`, `+09:00`, `+0900`, `+09`, `+9`,
/// `GMT+9`, or a named zone.
fn zone_at_end(rest: &[u8]) -> Option<i32> {
    let text = std::str::from_utf8(rest).ok()?.trim();
    // A parenthesized comment such as "(JST)" after a numeric zone adds nothing.
    let text = match text.find('(') {
        Some(open) if text.ends_with(')') => text[..open].trim(),
        _ => text,
    };
    if text.is_empty() {
        return Some(0);
    }
    if let Some(offset) = numeric_offset(text) {
        return Some(offset);
    }
    let letters = text.bytes().take_while(u8::is_ascii_alphabetic).count();
    let (name, after) = text.split_at(letters);
    if after.is_empty() {
        return named_zone(name);
    }
    // "GMT+9", "UTC-05:00": a base zone with an explicit numeric offset.
    let base = named_zone(name)?;
    Some(base + numeric_offset(after.trim())?)
}

/// `+09:00`, `+0900`, `+09`, `+9`, `-0500`. Offsets of a day or more are refused.
fn numeric_offset(text: &str) -> Option<i32> {
    let sign = match text.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits = &text[1..];
    let (hours, minutes) = match (digits.len(), digits.find(':')) {
        (_, Some(colon)) => (&digits[..colon], &digits[colon + 1..]),
        (1 | 2, None) => (digits, "0"),
        (3, None) => (&digits[..1], &digits[1..]),
        (4, None) => (&digits[..2], &digits[2..]),
        _ => return None,
    };
    if hours.is_empty() || hours.len() > 2 || minutes.len() > 2 {
        return None;
    }
    if !hours
        .bytes()
        .chain(minutes.bytes())
        .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let hours: i32 = hours.parse().ok()?;
    let minutes: i32 = minutes.parse().ok()?;
    if hours > 23 || minutes > 59 {
        return None;
    }
    Some(sign * (hours * 3600 + minutes * 60))
}

/// Offsets of the zone names feeds use. Ambiguous abbreviations take their most common meaning
/// in feeds (CST is US Central, IST is India).
fn named_zone(name: &str) -> Option<i32> {
    const H: i32 = 3600;
    let upper = name.to_ascii_uppercase();
    let offset = match upper.as_str() {
        "Z" | "UT" | "UTC" | "GMT" | "WET" | "Z00" => 0,
        "EST" => -5 * H,
        "EDT" => -4 * H,
        "CST" => -6 * H,
        "CDT" => -5 * H,
        "MST" => -7 * H,
        "MDT" => -6 * H,
        "PST" => -8 * H,
        "PDT" => -7 * H,
        "AKST" => -9 * H,
        "AKDT" => -8 * H,
        "HST" => -10 * H,
        "AST" => -4 * H,
        "ADT" => -3 * H,
        "NST" => -(3 * H + 1800),
        "NDT" => -(2 * H + 1800),
        "BST" | "CET" | "MET" | "WEST" => H,
        "CEST" | "MEST" | "EET" | "SAST" => 2 * H,
        "EEST" | "MSK" => 3 * H,
        "IST" => 5 * H + 1800,
        "ICT" | "WIB" => 7 * H,
        "HKT" | "SGT" | "AWST" | "PHT" | "WITA" => 8 * H,
        "JST" | "KST" | "WIT" => 9 * H,
        "ACST" => 9 * H + 1800,
        "ACDT" => 10 * H + 1800,
        "AEST" => 10 * H,
        "AEDT" => 11 * H,
        "NZST" => 12 * H,
        "NZDT" => 13 * H,
        _ if (2..=5).contains(&upper.len()) => 0,
        _ => return None,
    };
    Some(offset)
}

fn month_number(word: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    const FULL: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let lower = word.to_ascii_lowercase();
    let lower = lower.trim_end_matches('.');
    if let Some(i) = FULL.iter().position(|m| *m == lower) {
        return Some(i as u32 + 1);
    }
    if lower == "sept" {
        return Some(9);
    }
    MONTHS
        .iter()
        .position(|m| *m == lower)
        .map(|i| i as u32 + 1)
}

fn is_weekday(word: &str) -> bool {
    const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
    const FULL: [&str; 9] = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "tues",
        "thurs",
    ];
    let lower = word.to_ascii_lowercase();
    let lower = lower.trim_end_matches('.');
    DAYS.contains(&lower) || FULL.contains(&lower)
}

/// RFC 822 / 2822 and its breakage: missing or wrong weekday, lowercase or full month names,
/// `Mar 05 2024` order, two-digit years, missing seconds, named zones, `+09:00`, `GMT+9`,
/// `am`/`pm`, `05-Mar-2024`, a zone glued to the time.
fn parse_rfc822(value: &str) -> Option<DateTime<Utc>> {
    let mut f = Fields::default();
    let (mut year, mut month, mut day, mut time, mut zone) = (None, None, None, None, None);
    let mut pm = None;
    let mut in_comment = false;
    let tokens = value
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .flat_map(split_dashed_date);
    for token in tokens {
        if in_comment || token.starts_with('(') {
            in_comment = !token.ends_with(')');
            continue;
        }
        let first = token.as_bytes().first().copied()?;
        if first.is_ascii_digit() && token.contains(':') {
            if time.is_some() {
                return None;
            }
            let (clock, glued_zone) = split_glued_zone(token);
            time = Some(parse_clock(clock)?);
            if !glued_zone.is_empty() {
                zone = Some(zone_at_end(glued_zone.as_bytes())?);
            }
        } else if first.is_ascii_digit() {
            let digits = token.trim_end_matches('.');
            if !digits.bytes().all(|b| b.is_ascii_digit()) {
                let number_len = digits.bytes().take_while(u8::is_ascii_digit).count();
                // "5th", "1st": an ordinal day.
                if day.is_none() && matches!(&digits[number_len..], "st" | "nd" | "rd" | "th") {
                    day = Some(digits[..number_len].parse().ok()?);
                    continue;
                }
                return None;
            }
            let number: u32 = digits.parse().ok()?;
            if digits.len() >= 3 || (day.is_some() && year.is_none()) || number > 31 {
                if year.is_some() {
                    return None;
                }
                year = Some(expand_year(number, digits.len())?);
            } else if day.is_none() {
                day = Some(number);
            } else {
                return None;
            }
        } else if first == b'+' || first == b'-' {
            zone = Some(numeric_offset(token)?);
        } else if let Some(m) = month_number(token) {
            if month.is_some() {
                return None;
            }
            month = Some(m);
        } else if is_weekday(token) {
            continue;
        } else if token.eq_ignore_ascii_case("am") || token.eq_ignore_ascii_case("pm") {
            pm = Some(token.eq_ignore_ascii_case("pm"));
        } else if token.eq_ignore_ascii_case("at") {
            continue;
        } else {
            zone = Some(zone_at_end(token.as_bytes())?);
        }
    }
    f.year = year?;
    f.month = month?;
    f.day = day?;
    if let Some((hour, minute, second, nanosecond)) = time {
        f.hour = match pm {
            Some(true) if hour < 12 => hour + 12,
            Some(false) if hour == 12 => 0,
            _ => hour,
        };
        f.minute = minute;
        f.second = second;
        f.nanosecond = nanosecond;
    }
    f.offset = zone.unwrap_or(0);
    f.to_utc()
}

/// Splits `05-Mar-2024` into its parts; other tokens pass through whole.
fn split_dashed_date(token: &str) -> Vec<&str> {
    let has_letters = token.bytes().any(|b| b.is_ascii_alphabetic());
    let starts_with_digit = token.bytes().next().is_some_and(|b| b.is_ascii_digit());
    if has_letters && starts_with_digit && token.contains('-') && !token.contains(':') {
        token.split('-').filter(|p| !p.is_empty()).collect()
    } else {
        vec![token]
    }
}

/// Splits `10:00:00+0900` or `10:00Z` into the clock and the zone glued to it.
fn split_glued_zone(token: &str) -> (&str, &str) {
    let split = token
        .char_indices()
        .find(|&(_, c)| c == '+' || c == '-' || c.is_ascii_alphabetic())
        .map_or(token.len(), |(i, _)| i);
    token.split_at(split)
}

/// `10:00`, `10:00:00`, `10:00:00.123`, `9:5`.
fn parse_clock(clock: &str) -> Option<(u32, u32, u32, u32)> {
    let mut c = Cursor {
        bytes: clock.as_bytes(),
        pos: 0,
    };
    let hour = c.number(1, 2)?;
    if !c.eat(b':') {
        return None;
    }
    let minute = c.number(1, 2)?;
    let (mut second, mut nanos) = (0, 0);
    if c.eat(b':') {
        second = c.number(1, 2)?;
        if c.eat(b'.') || c.eat(b',') {
            nanos = fraction_nanos(&mut c)?;
        }
    }
    c.at_end().then_some((hour, minute, second, nanos))
}

/// Two-digit years follow RFC 2822 §4.3: 00–49 are 2000–2049, 50–99 are 1950–1999; three-digit
/// years count from 1900.
fn expand_year(number: u32, digits: usize) -> Option<i32> {
    let year = match digits {
        1 | 2 if number < 50 => number + 2000,
        1 | 2 => number + 1900,
        3 => number + 1900,
        4 => number,
        _ => return None,
    };
    i32::try_from(year).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iso(value: &str) -> Option<String> {
        parse_date(value).map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
    }

    #[test]
    fn rfc3339_and_iso8601() {
        assert_eq!(
            iso("2024-03-05T10:00:00Z").as_deref(),
            Some("2024-03-05T10:00:00Z")
        );
        assert_eq!(
            iso("2024-03-05T10:00:00+09:00").as_deref(),
            Some("2024-03-05T01:00:00Z")
        );
        assert_eq!(
            iso("2024-03-05T10:00:00.123456+09:00").as_deref(),
            Some("2024-03-05T01:00:00.123456Z")
        );
        assert_eq!(
            iso("2024-03-05t10:00:00z").as_deref(),
            Some("2024-03-05T10:00:00Z")
        );
        assert_eq!(
            iso("2024-03-05T10:00-05:00").as_deref(),
            Some("2024-03-05T15:00:00Z")
        );
        assert_eq!(
            iso("2024-03-05T10:00:00+0900").as_deref(),
            Some("2024-03-05T01:00:00Z")
        );
        assert_eq!(
            iso("2024-03-05T10:00:00+09").as_deref(),
            Some("2024-03-05T01:00:00Z")
        );
        assert_eq!(
            iso("2024-03-05 10:00:00").as_deref(),
            Some("2024-03-05T10:00:00Z")
        );
        assert_eq!(
            iso("2024-03-05T10:00:00").as_deref(),
            Some("2024-03-05T10:00:00Z")
        );
        assert_eq!(
            iso("2024-03-05 10:00:00 +0900").as_deref(),
            Some("2024-03-05T01:00:00Z")
        );
        assert_eq!(
            iso("2024-03-05T10:00:00 JST").as_deref(),
            Some("2024-03-05T01:00:00Z")
        );
        assert_eq!(
            iso("20240305T100000Z").as_deref(),
            Some("2024-03-05T10:00:00Z")
        );
        assert_eq!(
            iso("2024/03/05 10:00").as_deref(),
            Some("2024-03-05T10:00:00Z")
        );
    }

    #[test]
    fn partial_and_date_only() {
        assert_eq!(iso("2024-03-05").as_deref(), Some("2024-03-05T00:00:00Z"));
        assert_eq!(iso("2024-03").as_deref(), Some("2024-03-01T00:00:00Z"));
        assert_eq!(iso("2024").as_deref(), Some("2024-01-01T00:00:00Z"));
        assert_eq!(iso("2024-3-5").as_deref(), Some("2024-03-05T00:00:00Z"));
    }

    #[test]
    fn rfc822_and_its_breakage() {
        let cases = [
            ("Tue, 05 Mar 2024 10:00:00 GMT", "2024-03-05T10:00:00Z"),
            ("Tue, 05 Mar 2024 10:00:00 +0900", "2024-03-05T01:00:00Z"),
            ("05 Mar 2024 10:00:00 +0000", "2024-03-05T10:00:00Z"),
            ("Fri, 05 Mar 2024 10:00:00 GMT", "2024-03-05T10:00:00Z"),
            ("Tue, 05 mar 2024 10:00:00 GMT", "2024-03-05T10:00:00Z"),
            ("Tue, 05 MAR 2024 10:00:00 GMT", "2024-03-05T10:00:00Z"),
            ("Tue, 05 Mar 24 10:00:00 GMT", "2024-03-05T10:00:00Z"),
            ("Fri, 05 Mar 99 10:00:00 GMT", "1999-03-05T10:00:00Z"),
            ("Tue, 5 Mar 2024 10:00 +0900", "2024-03-05T01:00:00Z"),
            ("Tue, 05 Mar 2024 10:00:00 JST", "2024-03-05T01:00:00Z"),
            ("Tue, 05 Mar 2024 10:00:00 KST", "2024-03-05T01:00:00Z"),
            ("Tue, 05 Mar 2024 10:00:00 CET", "2024-03-05T09:00:00Z"),
            ("Tue, 05 Mar 2024 10:00:00 CEST", "2024-03-05T08:00:00Z"),
            ("Tue, 05 Mar 2024 10:00:00 EST", "2024-03-05T15:00:00Z"),
            ("Tue, 05 Mar 2024 10:00:00 PDT", "2024-03-05T17:00:00Z"),
            ("Tue, 05 Mar 2024 10:00:00 UT", "2024-03-05T10:00:00Z"),
            ("Tue, 05 Mar 2024 10:00:00 Z", "2024-03-05T10:00:00Z"),
            ("Tue, 05 Mar 2024 10:00:00 +09:00", "2024-03-05T01:00:00Z"),
            ("Tue, 05 Mar 2024 10:00:00 GMT+9", "2024-03-05T01:00:00Z"),
            (
                "Tue, 05 Mar 2024 10:00:00 +0900 (JST)",
                "2024-03-05T01:00:00Z",
            ),
            ("Tue, 05 Mar 2024 10:00:00", "2024-03-05T10:00:00Z"),
            ("Tue, 05 Mar 2024", "2024-03-05T00:00:00Z"),
            (
                "Tuesday, 05 March 2024 10:00:00 GMT",
                "2024-03-05T10:00:00Z",
            ),
            ("Mar 05 2024 10:00:00 GMT", "2024-03-05T10:00:00Z"),
            ("Tue Mar 05 10:00:00 JST 2024", "2024-03-05T01:00:00Z"),
            ("05-Mar-2024 10:00:00 +0000", "2024-03-05T10:00:00Z"),
            ("Tue, 05 Mar 2024 10:00:00+0900", "2024-03-05T01:00:00Z"),
            ("Tue,05 Mar 2024 10:00:00 GMT", "2024-03-05T10:00:00Z"),
            ("Tue, 05 Mar 2024 24:10:00 GMT", "2024-03-06T00:10:00Z"),
            ("Tue, 05 Mar 2024 10:00:60 GMT", "2024-03-05T10:00:59Z"),
            ("March 5th, 2024 10:00 pm EST", "2024-03-06T03:00:00Z"),
            ("Tue, 05 Mar 2024 10:00:00 -0000", "2024-03-05T10:00:00Z"),
            ("Tue, 05 Mar 2024 10:00:00 XYZT", "2024-03-05T10:00:00Z"),
        ];
        for (input, expected) in cases {
            assert_eq!(iso(input).as_deref(), Some(expected), "{input}");
        }
    }

    #[test]
    fn japanese_form() {
        assert_eq!(
            iso("2024年3月5日 10:00").as_deref(),
            Some("2024-03-05T10:00:00Z")
        );
        assert_eq!(
            iso("2024年3月5日 10時00分 +0900").as_deref(),
            Some("2024-03-05T01:00:00Z")
        );
    }

    #[test]
    fn unparseable_is_none_never_now() {
        for input in [
            "",
            "   ",
            "yesterday",
            "not a date",
            "2024-13-05",
            "2024-02-30",
            "Tue, 32 Mar 2024",
            "Tue, 05 Foo 2024 10:00:00 GMT",
            "99:99:99",
            "2024-03-05T25:00:00Z",
            "Tue, 05 Mar 2024 10:61:00 GMT",
            "+0900",
            "12345678901234567890",
            "𝟚𝟘𝟚𝟜-𝟘𝟛-𝟘𝟝",
            "2024-03-05T10:00:00+25:00",
            "Tue, 05 Mar 2024 10:00:00 Europe/Berlin/Nowhere",
        ] {
            assert_eq!(iso(input), None, "{input}");
        }
        assert_eq!(iso(&"1".repeat(10_000)), None);
    }
}
