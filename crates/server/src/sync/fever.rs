//! The Fever API (F71): the key digest Fever clients sign in with, stored beside every API
//! key when it is created.

/// The Fever API key of a username and an API key: md5(username:key), lowercase hex.
pub fn key_digest(username: &str, key: &str) -> String {
    use md5::Digest;
    hex::encode(md5::Md5::digest(format!("{username}:{key}").as_bytes()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_digest_is_md5_of_username_colon_key() {
        // md5("ann:secret"), as `printf ann:secret | md5sum` prints it.
        assert_eq!(
            super::key_digest("ann", "secret"),
            "5bdf88162a706752a8ca6fe5eab3a60f"
        );
    }
}
