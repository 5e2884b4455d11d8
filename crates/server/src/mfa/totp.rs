//! Time-based one-time codes (RFC 6238 over RFC 4226's HOTP): 6 digits, 30-second steps,
//! HMAC-SHA1 as every authenticator app expects, accepted one step either side of the server's
//! clock. The HMAC is `ring`'s, already in the tree through rustls; the rest is a few lines
//! of arithmetic that the RFC's own test vectors check below.

use ring::hmac;

/// Seconds per step.
pub const STEP_SECONDS: i64 = 30;
/// Digits per code.
pub const DIGITS: u32 = 6;
/// Steps accepted either side of the current one (clock drift, a code typed as it turned).
pub const WINDOW_STEPS: i64 = 1;
/// Bytes of a new secret (160 bits, RFC 4226's recommendation).
pub const SECRET_BYTES: usize = 20;

/// The HMAC behind the codes. Only SHA-1 is used for enrolment (what apps support); the
/// others exist for the RFC's test vectors.
#[derive(Debug, Clone, Copy)]
pub enum Algorithm {
    /// HMAC-SHA1, the default of RFC 6238 and of every authenticator app.
    Sha1,
    /// HMAC-SHA256.
    Sha256,
    /// HMAC-SHA512.
    Sha512,
}

impl Algorithm {
    fn ring(self) -> hmac::Algorithm {
        match self {
            Algorithm::Sha1 => hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
            Algorithm::Sha256 => hmac::HMAC_SHA256,
            Algorithm::Sha512 => hmac::HMAC_SHA512,
        }
    }
}

/// HOTP (RFC 4226): the `digits`-digit code of `counter`.
pub fn hotp(algorithm: Algorithm, secret: &[u8], counter: u64, digits: u32) -> u32 {
    let key = hmac::Key::new(algorithm.ring(), secret);
    let tag = hmac::sign(&key, &counter.to_be_bytes());
    let mac = tag.as_ref();
    // Dynamic truncation: the low nibble of the last byte picks 4 bytes, top bit cleared.
    let offset = usize::from(mac[mac.len() - 1] & 0x0f);
    let value = u32::from_be_bytes([
        mac[offset] & 0x7f,
        mac[offset + 1],
        mac[offset + 2],
        mac[offset + 3],
    ]);
    value % 10u32.pow(digits)
}

/// The time step of a Unix time.
pub fn step_at(unix_seconds: i64) -> i64 {
    unix_seconds.div_euclid(STEP_SECONDS)
}

/// The 6-digit SHA-1 code of a step, zero-padded, as an app shows it.
pub fn code(secret: &[u8], step: i64) -> String {
    let value = hotp(Algorithm::Sha1, secret, step.max(0) as u64, DIGITS);
    format!("{value:0width$}", width = DIGITS as usize)
}

/// Checks a typed code against the steps around `unix_seconds` and answers the step it
/// belongs to, which the caller must then spend (so that it cannot be used twice). Spaces and
/// dashes are ignored (apps show `123 456`); anything else than 6 digits never matches.
pub fn verify(secret: &[u8], typed: &str, unix_seconds: i64) -> Option<i64> {
    let digits: String = typed
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect();
    if digits.len() != DIGITS as usize || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let now = step_at(unix_seconds);
    // Every step of the window is computed and compared, so the time taken does not say
    // which one matched.
    let mut found = None;
    for step in now - WINDOW_STEPS..=now + WINDOW_STEPS {
        if constant_time_eq(code(secret, step).as_bytes(), digits.as_bytes()) && found.is_none() {
            found = Some(step);
        }
    }
    found
}

/// Compares two byte strings without stopping at the first difference.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A new random secret.
pub fn new_secret() -> Vec<u8> {
    rand::random::<[u8; SECRET_BYTES]>().to_vec()
}

/// RFC 4648 base32 without padding, as `otpauth://` URIs and apps' manual entry use it.
pub fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for &byte in bytes {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// Decodes RFC 4648 base32 as [`base32`] writes it (spaces ignored, as a key is shown in
/// groups); `None` for any other character.
pub fn base32_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let (mut buffer, mut bits) = (0u32, 0);
    for c in text.chars().filter(|c| !c.is_whitespace()) {
        let value = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".find(c.to_ascii_uppercase())? as u32;
        buffer = (buffer << 5) | value;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    Some(out)
}

/// The `otpauth://totp/…` URI an authenticator app scans: issuer and account name, the
/// secret in base32, and the parameters spelled out (they are the defaults).
pub fn otpauth_uri(issuer: &str, account: &str, secret: &[u8]) -> String {
    let label = format!("{issuer}:{account}");
    let mut uri = url::Url::parse("otpauth://totp/").expect("a constant URL");
    uri.set_path(&format!(
        "/{}",
        url::form_urlencoded::byte_serialize(label.as_bytes())
            .collect::<String>()
            .replace('+', "%20")
    ));
    uri.query_pairs_mut()
        .append_pair("secret", &base32(secret))
        .append_pair("issuer", issuer)
        .append_pair("algorithm", "SHA1")
        .append_pair("digits", &DIGITS.to_string())
        .append_pair("period", &STEP_SECONDS.to_string());
    uri.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238, Appendix B: 8-digit codes at the listed times, per algorithm, with the
    /// RFC's seeds (the ASCII digits repeated to the hash's size).
    #[test]
    fn rfc_6238_test_vectors() {
        let sha1 = b"12345678901234567890";
        let sha256 = b"12345678901234567890123456789012";
        let sha512 = b"1234567890123456789012345678901234567890123456789012345678901234";
        let vectors: &[(i64, u32, u32, u32)] = &[
            (59, 94287082, 46119246, 90693936),
            (1111111109, 7081804, 68084774, 25091201),
            (1111111111, 14050471, 67062674, 99943326),
            (1234567890, 89005924, 91819424, 93441116),
            (2000000000, 69279037, 90698825, 38618901),
            (20000000000, 65353130, 77737706, 47863826),
        ];
        for &(time, expect1, expect256, expect512) in vectors {
            let step = step_at(time) as u64;
            assert_eq!(
                hotp(Algorithm::Sha1, sha1, step, 8),
                expect1,
                "SHA1 at {time}"
            );
            assert_eq!(
                hotp(Algorithm::Sha256, sha256, step, 8),
                expect256,
                "SHA256 at {time}"
            );
            assert_eq!(
                hotp(Algorithm::Sha512, sha512, step, 8),
                expect512,
                "SHA512 at {time}"
            );
        }
    }

    /// RFC 4226, Appendix D: the first ten 6-digit HOTP values of its secret.
    #[test]
    fn rfc_4226_test_vectors() {
        let expected = [
            755224, 287082, 359152, 969429, 338314, 254676, 287922, 162583, 399871, 520489,
        ];
        for (counter, want) in expected.iter().enumerate() {
            assert_eq!(
                hotp(Algorithm::Sha1, b"12345678901234567890", counter as u64, 6),
                *want
            );
        }
    }

    #[test]
    fn codes_are_accepted_one_step_either_side_and_no_further() {
        let secret = b"12345678901234567890";
        let now = 1_111_111_111;
        let step = step_at(now);
        for offset in -1..=1 {
            let typed = code(secret, step + offset);
            assert_eq!(
                verify(secret, &typed, now),
                Some(step + offset),
                "offset {offset}"
            );
        }
        for offset in [-3, -2, 2, 3] {
            let typed = code(secret, step + offset);
            // A code of a far step may by chance equal one inside the window; not with these.
            assert_eq!(verify(secret, &typed, now), None, "offset {offset}");
        }
        // The RFC's 8-digit value's last 6 digits are the 6-digit code.
        assert_eq!(code(secret, step), "050471");
        assert_eq!(
            verify(secret, "050 471", now),
            Some(step),
            "spaces are ignored"
        );
        assert_eq!(verify(secret, "50471", now), None, "too short");
        assert_eq!(verify(secret, "0504710", now), None, "too long");
        assert_eq!(verify(secret, "05047a", now), None, "not digits");
        assert_eq!(verify(secret, "", now), None);
    }

    #[test]
    fn base32_matches_rfc_4648() {
        // RFC 4648 section 10, without the padding.
        for (input, output) in [
            ("", ""),
            ("f", "MY"),
            ("fo", "MZXQ"),
            ("foo", "MZXW6"),
            ("foob", "MZXW6YQ"),
            ("fooba", "MZXW6YTB"),
            ("foobar", "MZXW6YTBOI"),
        ] {
            assert_eq!(base32(input.as_bytes()), output, "{input:?}");
        }
        assert_eq!(
            base32(&new_secret()).len(),
            32,
            "160 bits are 32 characters"
        );
    }

    #[test]
    fn the_otpauth_uri_names_the_issuer_account_and_secret() {
        let uri = otpauth_uri("tidings (example.org)", "Zoë", b"12345678901234567890");
        assert_eq!(
            uri,
            "otpauth://totp/tidings%20%28example.org%29%3AZo%C3%AB?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ\
             &issuer=tidings+%28example.org%29&algorithm=SHA1&digits=6&period=30"
        );
    }
}
