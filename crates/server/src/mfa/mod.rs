//! Second factors (issue 19): TOTP one-time codes ([`totp`]), WebAuthn passkeys
//! ([`webauthn`]) and single-use recovery codes, and the half-signed-in state between a
//! password and its second factor. The API routes are in [`crate::api::mfa`].

pub mod totp;
pub mod webauthn;

use axum::http::HeaderValue;

/// The cookie that carries a sign-in waiting for its second factor. It is not a session: it
/// opens nothing but the second-factor endpoints under its path, and lasts
/// [`PENDING_SECONDS`].
pub const PENDING_COOKIE: &str = "tidings_second_factor";
/// The path the pending cookie is sent to (the sign-in endpoints only).
pub const PENDING_COOKIE_PATH: &str = "/api/v1/session";
/// How long a password sign-in waits for its second factor.
pub const PENDING_SECONDS: i64 = 300;
/// Wrong codes a pending sign-in accepts before it ends (the password must be typed again).
pub const MAX_PENDING_ATTEMPTS: i64 = 5;
/// How long a passkey challenge stays valid (the browser's own time-out is the same).
pub const PASSKEY_CHALLENGE_SECONDS: i64 = 300;
/// Recovery codes made at once.
pub const RECOVERY_CODES: usize = 10;

/// The `Set-Cookie` value for a pending sign-in: HttpOnly, SameSite=Strict, limited to the
/// sign-in endpoints.
pub fn pending_cookie(token: &str, secure: bool) -> HeaderValue {
    let flag = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{PENDING_COOKIE}={token}; Path={PENDING_COOKIE_PATH}; HttpOnly; SameSite=Strict; \
         Max-Age={PENDING_SECONDS}{flag}"
    ))
    .unwrap_or_else(|_| expired_pending_cookie(secure))
}

/// The `Set-Cookie` value that removes the pending cookie.
pub fn expired_pending_cookie(secure: bool) -> HeaderValue {
    if secure {
        HeaderValue::from_static(
            "tidings_second_factor=; Path=/api/v1/session; HttpOnly; SameSite=Strict; Max-Age=0; Secure",
        )
    } else {
        HeaderValue::from_static(
            "tidings_second_factor=; Path=/api/v1/session; HttpOnly; SameSite=Strict; Max-Age=0",
        )
    }
}

/// New recovery codes: ten groups of `xxxxx-xxxxx` in lower-case base32 (50 random bits
/// each, so a plain SHA-256 is enough to store them: no one guesses 2^50 values through a
/// rate-limited sign-in, and a stolen database does not reveal them faster than brute force).
pub fn new_recovery_codes() -> Vec<String> {
    (0..RECOVERY_CODES)
        .map(|_| {
            let text = totp::base32(&rand::random::<[u8; 7]>()).to_lowercase();
            format!("{}-{}", &text[..5], &text[5..10])
        })
        .collect()
}

/// A typed recovery code as it is hashed: lower-case, without spaces or dashes.
pub fn normalize_recovery_code(typed: &str) -> String {
    typed
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// The stored hash of a recovery code, however it was typed.
pub fn recovery_code_hash(typed: &str) -> String {
    crate::base::auth::secret_hash(&normalize_recovery_code(typed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_codes_are_distinct_and_match_however_they_are_typed() {
        let codes = new_recovery_codes();
        assert_eq!(codes.len(), RECOVERY_CODES);
        let mut unique = codes.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), RECOVERY_CODES);
        for code in &codes {
            assert_eq!(code.len(), 11, "{code}");
            assert_eq!(&code[5..6], "-");
            let sloppy = format!(" {} ", code.to_uppercase().replace('-', " "));
            assert_eq!(recovery_code_hash(&sloppy), recovery_code_hash(code));
        }
        assert_ne!(recovery_code_hash(&codes[0]), recovery_code_hash(&codes[1]));
    }

    #[test]
    fn the_pending_cookie_reaches_only_the_sign_in_endpoints() {
        let cookie = pending_cookie("abc", true);
        let cookie = cookie.to_str().unwrap();
        assert!(cookie.starts_with("tidings_second_factor=abc;"), "{cookie}");
        for part in [
            "Path=/api/v1/session",
            "HttpOnly",
            "SameSite=Strict",
            "Max-Age=300",
            "Secure",
        ] {
            assert!(cookie.contains(part), "{part} in {cookie}");
        }
        assert!(
            !pending_cookie("abc", false)
                .to_str()
                .unwrap()
                .contains("Secure")
        );
    }
}
