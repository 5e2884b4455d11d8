//! A short-lived memory of API keys that authenticated, so that an app's sync (dozens of
//! requests in a few seconds, each presenting its key) does not look the key up in the
//! database for every request.
//!
//! What a key may do can change: it is revoked (one key, or all of a user's on a password
//! change), its user is disabled, deleted, promoted or demoted, or changes password. Every
//! store call that does one of these forgets the whole memory at once (changes of this kind
//! are rare, so forgetting all of it costs nothing worth sparing), so within one process a
//! change holds from the next request. Another process on the same database (a second
//! `tidings serve` on one PostgreSQL, or the `tidings user` command beside a running server)
//! cannot reach this memory: there a change holds once the entries made before it have
//! expired, at most [`AUTH_CACHE_LIFE`] later. That bound is stated in the security and
//! operations documents; invalidating through the database instead (a generation number every
//! request reads) would cost the round trip the memory saves. A key's own expiry is checked on
//! every use, and keys that failed are never remembered.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long an authenticated key is remembered: the longest that a change made by another
/// process (see the module's doc) takes to hold here.
pub const AUTH_CACHE_LIFE: Duration = Duration::from_secs(10);

/// The most keys remembered; past it the expired ones are dropped, and if none were, all.
const AUTH_CACHE_KEYS: usize = 4_096;

/// How a key was presented: its hash as stored, or the Fever API's digest of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum KeyForm {
    /// The SHA-256 of the key, as `api_keys.key_hash` holds it.
    Hash,
    /// The hash of a Fever `api_key` digest, as `api_keys.fever_digest_sha256*` hold it.
    Fever,
}

/// What a key that authenticated gave: its user and its own id and scope, the fields of
/// `Authenticated` (held here as plain values, so that this module imports nothing of the
/// store's and the store can hold it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RememberedKey {
    /// The user's id.
    pub(crate) user_id: i64,
    /// The user's name.
    pub(crate) username: String,
    /// Whether the user is an administrator.
    pub(crate) is_admin: bool,
    /// Whether the user is disabled (never, when remembered).
    pub(crate) is_disabled: bool,
    /// Whether the user has a password.
    pub(crate) has_password: bool,
    /// When the user was created.
    pub(crate) created_at: i64,
    /// When the user last signed in.
    pub(crate) last_login_at: Option<i64>,
    /// The key's id.
    pub(crate) key_id: i64,
    /// Whether the key may write.
    pub(crate) read_write: bool,
}

/// One remembered key.
#[derive(Debug, Clone)]
struct Entry {
    found: RememberedKey,
    /// The key's own expiry, checked on every use.
    key_expires_at: Option<i64>,
    remembered_at: Instant,
}

/// The memory (one per store, shared by its clones).
#[derive(Debug, Default)]
pub(crate) struct AuthCache {
    entries: Mutex<HashMap<(KeyForm, String), Entry>>,
    /// Counts the times the memory was forgotten, so that a look-up that began before a
    /// change does not remember what it read after the change forgot everything.
    generation: AtomicU64,
}

impl AuthCache {
    /// What is remembered for a key presented as `form` with `value` (a hash, never the key),
    /// if it is recent and the key has not expired since.
    pub(crate) fn get(&self, form: KeyForm, value: &str, now_unix: i64) -> Option<RememberedKey> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let entry = entries.get(&(form, value.to_owned()))?;
        let fresh = entry.remembered_at.elapsed() < AUTH_CACHE_LIFE
            && entry.key_expires_at.is_none_or(|t| now_unix < t);
        fresh.then(|| entry.found.clone())
    }

    /// The generation to give [`AuthCache::remember`] for a look-up starting now.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Remembers a key that authenticated, unless the memory was forgotten since the look-up
    /// began (`generation`).
    pub(crate) fn remember(
        &self,
        form: KeyForm,
        value: &str,
        found: RememberedKey,
        key_expires_at: Option<i64>,
        generation: u64,
    ) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        // Checked under the lock, which `forget_all` takes too: no change slips in between.
        if self.generation.load(Ordering::SeqCst) != generation {
            return;
        }
        if entries.len() >= AUTH_CACHE_KEYS {
            entries.retain(|_, entry| entry.remembered_at.elapsed() < AUTH_CACHE_LIFE);
            if entries.len() >= AUTH_CACHE_KEYS {
                entries.clear();
            }
        }
        entries.insert(
            (form, value.to_owned()),
            Entry {
                found,
                key_expires_at,
                remembered_at: Instant::now(),
            },
        );
    }

    /// Forgets every key: called by every store call that revokes a key or changes what a
    /// user may do, after its change is written.
    pub(crate) fn forget_all(&self) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        self.generation.fetch_add(1, Ordering::SeqCst);
        entries.clear();
    }
}
