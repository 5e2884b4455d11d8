//! Passwords: the policy every new password must meet (F20) and argon2id hashing.
//!
//! The policy follows current guidance: length first (at least 12 characters), no composition
//! rules, and a refusal of passwords that are mostly guessable parts (common words, the user's
//! own name, keyboard rows, runs like `1234` or `aaaa`), whatever their length.

use argon2::Argon2;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};

/// The fewest characters a password may have.
pub const MIN_PASSWORD_CHARS: usize = 12;
/// The most bytes a password may have; longer inputs would only make hashing slow.
pub const MAX_PASSWORD_BYTES: usize = 1024;
/// What must be left of a password once its guessable parts are taken out.
const MIN_UNGUESSABLE_CHARS: usize = 6;

/// Words that attackers try first; a password built around one of them is refused.
const COMMON_WORDS: &[&str] = &[
    "password",
    "passwort",
    "passw0rd",
    "p@ssw0rd",
    "p@ssword",
    "admin",
    "administrator",
    "root",
    "secret",
    "test",
    "letmein",
    "welcome",
    "qwerty",
    "azerty",
    "iloveyou",
    "monkey",
    "dragon",
    "master",
    "login",
    "changeme",
    "default",
    "tidings",
    "feed",
    "reader",
    "user",
    "guest",
    "football",
    "baseball",
    "sunshine",
    "princess",
    "shadow",
    "superman",
    "trustno1",
    "hello",
    "freedom",
    "whatever",
];

/// Keyboard rows, walked forwards or backwards.
const KEYBOARD_ROWS: &[&str] = &[
    "`1234567890-=",
    "qwertyuiop[]",
    "asdfghjkl;'",
    "zxcvbnm,./",
    "qwertzuiop",
    "yxcvbnm",
    "azertyuiop",
    "qsdfghjklm",
    "wxcvbn",
    "1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik9ol0p",
];

/// Why a password was refused. The message says what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PasswordPolicyError {
    /// Fewer than [`MIN_PASSWORD_CHARS`] characters.
    #[error("the password is too short: {0} characters, at least 12 are needed")]
    TooShort(usize),
    /// More than [`MAX_PASSWORD_BYTES`] bytes.
    #[error("the password is too long: at most 1024 bytes are accepted")]
    TooLong,
    /// Mostly guessable parts.
    #[error(
        "the password is too easy to guess: it is mostly {0}; use 12 or more characters that \
         are not common words, your user name or keyboard patterns (a few unrelated words work well)"
    )]
    Guessable(String),
}

/// Checks a new password against the policy of F20 for the given user name.
pub fn check_password_policy(password: &str, username: &str) -> Result<(), PasswordPolicyError> {
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(PasswordPolicyError::TooLong);
    }
    let chars = password.chars().count();
    if chars < MIN_PASSWORD_CHARS {
        return Err(PasswordPolicyError::TooShort(chars));
    }
    let lowered: Vec<char> = password.to_lowercase().chars().collect();
    let mut guessable = vec![false; lowered.len()];
    let mut found: Vec<&'static str> = Vec::new();

    let username: Vec<char> = username.trim().to_lowercase().chars().collect();
    if username.len() >= 3 && mark_all(&lowered, &username, &mut guessable) {
        found.push("your user name");
    }
    for word in COMMON_WORDS {
        let word: Vec<char> = word.chars().collect();
        if mark_all(&lowered, &word, &mut guessable) && !found.contains(&"a common word") {
            found.push("a common word");
        }
    }
    if mark_keyboard_walks(&lowered, &mut guessable) {
        found.push("keyboard patterns");
    }
    if mark_years(&lowered, &mut guessable) {
        found.push("a year");
    }
    if mark_runs(&lowered, &mut guessable) {
        found.push("repeated or sequential characters");
    }
    let left = guessable.iter().filter(|g| !**g).count();
    let distinct = {
        let mut seen = lowered.clone();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    };
    if distinct < 5 && !found.contains(&"repeated or sequential characters") {
        found.push("repeated or sequential characters");
    }
    if left < MIN_UNGUESSABLE_CHARS || distinct < 5 {
        return Err(PasswordPolicyError::Guessable(join_reasons(&found)));
    }
    Ok(())
}

fn join_reasons(found: &[&str]) -> String {
    match found {
        [] => "predictable characters".to_string(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Marks every occurrence of `needle` in `haystack`; true when there was one.
fn mark_all(haystack: &[char], needle: &[char], marks: &mut [bool]) -> bool {
    if needle.is_empty() || needle.len() > haystack.len() {
        return false;
    }
    let mut any = false;
    for start in 0..=haystack.len() - needle.len() {
        if haystack[start..start + needle.len()] == *needle {
            marks[start..start + needle.len()].fill(true);
            any = true;
        }
    }
    any
}

/// Marks stretches of four or more keys walked along a keyboard row, in either direction.
fn mark_keyboard_walks(chars: &[char], marks: &mut [bool]) -> bool {
    const MIN_WALK: usize = 4;
    let mut any = false;
    for row in KEYBOARD_ROWS {
        let forward: Vec<char> = row.chars().collect();
        let backward: Vec<char> = forward.iter().rev().copied().collect();
        for row in [&forward, &backward] {
            for len in (MIN_WALK..=row.len()).rev() {
                for window in row.windows(len) {
                    any |= mark_all(chars, window, marks);
                }
            }
        }
    }
    any
}

/// Marks years from 1900 to 2099, which people add to words to meet length rules.
fn mark_years(chars: &[char], marks: &mut [bool]) -> bool {
    let mut any = false;
    for start in 0..chars.len().saturating_sub(3) {
        let window = &chars[start..start + 4];
        if window.iter().all(char::is_ascii_digit)
            && matches!((window[0], window[1]), ('1', '9') | ('2', '0'))
        {
            marks[start..start + 4].fill(true);
            any = true;
        }
    }
    any
}

/// Marks runs of four or more characters that repeat (`aaaa`) or step by one (`1234`, `dcba`,
/// `7890`).
fn mark_runs(chars: &[char], marks: &mut [bool]) -> bool {
    const MIN_RUN: usize = 4;
    let step = |a: char, b: char| -> Option<i64> {
        let (a, b) = (a as i64, b as i64);
        // 9 -> 0 continues a digit sequence, as in 7890.
        if a == '9' as i64 && b == '0' as i64 {
            return Some(1);
        }
        if a == '0' as i64 && b == '9' as i64 {
            return Some(-1);
        }
        Some(b - a).filter(|d| d.abs() <= 1)
    };
    let mut any = false;
    let mut start = 0;
    while start < chars.len() {
        let mut end = start + 1;
        let mut direction = None;
        while end < chars.len() {
            match (step(chars[end - 1], chars[end]), direction) {
                (Some(d), None) => direction = Some(d),
                (Some(d), Some(current)) if d == current => {}
                _ => break,
            }
            end += 1;
        }
        if end - start >= MIN_RUN {
            marks[start..end].fill(true);
            any = true;
            start = end;
        } else {
            start += 1;
        }
    }
    any
}

/// Why a password could not be hashed or checked.
#[derive(Debug, thiserror::Error)]
#[error("password hashing failed: {0}")]
pub struct HashError(String);

/// Hashes a password with argon2id (the crate's defaults: 19 MiB, 2 passes) and a random salt,
/// giving a PHC string such as `$argon2id$v=19$m=19456,t=2,p=1$…`. Slow on purpose: call it
/// off the async executor (e.g. in `spawn_blocking`).
pub fn hash_password(password: &str) -> Result<String, HashError> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|hash| hash.to_string())
        .map_err(|e| HashError(e.to_string()))
}

/// Whether `password` matches the stored PHC `hash`. A malformed hash never matches.
pub fn verify_password(password: &str, hash: &str) -> bool {
    Argon2::default()
        .verify_password(password.as_bytes(), hash)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_long_unpredictable_passwords() {
        for ok in [
            "correct horse battery staple",
            "Tr4vel-plans:kyoto",
            "blue ocean 57 violin",
            "日本語のパスワード十二文字以上",
            "zq8#Lm2!vR0p",
        ] {
            assert_eq!(check_password_policy(ok, "alice"), Ok(()), "{ok}");
        }
    }

    #[test]
    fn refuses_short_passwords_counting_characters_not_bytes() {
        assert_eq!(
            check_password_policy("short", "alice"),
            Err(PasswordPolicyError::TooShort(5))
        );
        // Eleven characters, 33 bytes.
        assert_eq!(
            check_password_policy("あいうえおかきくけこさ", "alice"),
            Err(PasswordPolicyError::TooShort(11))
        );
        assert_eq!(
            check_password_policy(&"x".repeat(1025), "alice"),
            Err(PasswordPolicyError::TooLong)
        );
    }

    #[test]
    fn refuses_guessable_passwords_with_the_reason() {
        let cases = [
            ("password1234", "a common word"),
            ("Password2024!", "a common word"),
            ("adminadmin12", "a common word"),
            ("111111111111", "repeated"),
            ("123456789012", "sequential"),
            ("abcdefghijkl", "sequential"),
            ("qwertyuiop12", "keyboard"),
            ("asdfghjkl;'1", "keyboard"),
            ("1qaz2wsx3edc", "keyboard"),
            ("alicealice99", "user name"),
            ("Alice-2024-!!", "user name"),
            ("abababababab", "repeated"),
            ("secret-secret", "a common word"),
        ];
        for (password, reason) in cases {
            let Err(err) = check_password_policy(password, "alice") else {
                panic!("{password} was accepted");
            };
            assert!(
                err.to_string().contains(reason),
                "{password}: expected {reason:?} in {err}"
            );
        }
    }

    #[test]
    fn hashes_verify_and_differ_by_salt() {
        let a = hash_password("correct horse battery staple").unwrap();
        let b = hash_password("correct horse battery staple").unwrap();
        assert!(a.starts_with("$argon2id$"));
        assert_ne!(a, b, "random salt");
        assert!(verify_password("correct horse battery staple", &a));
        assert!(!verify_password("correct horse battery stapler", &a));
        assert!(!verify_password("anything", "not a hash"));
        assert!(!verify_password("anything", ""));
    }
}
