//! The first-administrator setup token: printed as a link by `serve` while no user exists,
//! valid until the first administrator is created.

use sha2::{Digest, Sha256};
use tidings_store::{Result, Store};

/// The setup token's hash, as stored: a leaked database does not reveal a usable token.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// When the database has no user at all, creates a new random setup token, stores its hash
/// (replacing any earlier one) and returns the token. Returns `None` once any user exists.
pub async fn issue_setup_token(store: &Store) -> Result<Option<String>> {
    let (users, _) = store.count_users().await?;
    if users > 0 {
        store.clear_setup_token().await?;
        return Ok(None);
    }
    let token = hex::encode(rand::random::<[u8; 32]>());
    store.set_setup_token_hash(&token_hash(&token)).await?;
    Ok(Some(token))
}

/// Whether `token` is the pending setup token (compared by hash, in constant time).
pub async fn check_setup_token(store: &Store, token: &str) -> Result<bool> {
    let Some(stored) = store.setup_token_hash().await? else {
        return Ok(false);
    };
    let given = token_hash(token);
    let same = stored.len() == given.len()
        && stored
            .bytes()
            .zip(given.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    Ok(same)
}
