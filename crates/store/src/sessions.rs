//! Server-side sessions (F21) and API keys (F23). Only SHA-256 hashes of the secrets are
//! stored; the secrets themselves exist in the user's cookie or script alone.

use crate::auth_cache::{KeyForm, RememberedKey};
use crate::{Result, Store, StoreError, User, unix_now, with_db};

/// What the API may do with an API key (F23).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApiKeyScope {
    /// Reading only: any request that changes something is refused.
    Read,
    /// Reading and writing.
    ReadWrite,
}

impl ApiKeyScope {
    /// The word stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiKeyScope::Read => "read",
            ApiKeyScope::ReadWrite => "read_write",
        }
    }

    fn parse(value: &str) -> ApiKeyScope {
        if value == "read_write" {
            ApiKeyScope::ReadWrite
        } else {
            ApiKeyScope::Read
        }
    }
}

/// A session as listed to its user.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Session {
    /// The session's id (not its secret).
    pub id: i64,
    /// When it was created.
    pub created_at: i64,
    /// When it was last used.
    pub last_seen_at: i64,
    /// When it ends whatever happens.
    pub expires_at: i64,
    /// The browser it was created from.
    pub user_agent: Option<String>,
    /// The address it was created from.
    pub ip: Option<String>,
}

/// An API key as listed (never with its secret).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ApiKey {
    /// The key's id.
    pub id: i64,
    /// The name its user gave it.
    pub name: String,
    /// Its first characters, to recognise it.
    pub prefix: String,
    /// What it may do.
    pub scope: ApiKeyScope,
    /// When it was created.
    pub created_at: i64,
    /// When it stops working, if ever.
    pub expires_at: Option<i64>,
    /// When it was last used.
    pub last_used_at: Option<i64>,
}

/// Who a presented credential belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    /// The user.
    pub user: User,
    /// The session's id, when a session cookie was presented.
    pub session_id: Option<i64>,
    /// The key's id and scope, when an API key was presented.
    pub api_key: Option<(i64, ApiKeyScope)>,
}

/// How often `last_seen_at` / `last_used_at` are written: at most once a minute per session
/// or key, so reading does not turn every request into a write.
const TOUCH_EVERY_SECONDS: i64 = 60;

type AuthRow = (
    i64,
    String,
    bool,
    bool,
    Option<String>,
    i64,
    Option<i64>,
    i64,
    i64,
);

fn auth_user(row: &AuthRow) -> User {
    User {
        id: row.0,
        username: row.1.clone(),
        is_admin: row.2,
        is_disabled: row.3,
        has_password: row.4.is_some(),
        created_at: row.5,
        last_login_at: row.6,
    }
}

/// A key's [`Authenticated`] as the memory of keys holds it.
fn remembered(found: &Authenticated) -> RememberedKey {
    let (key_id, scope) = found.api_key.unwrap_or((0, ApiKeyScope::Read));
    RememberedKey {
        user_id: found.user.id,
        username: found.user.username.clone(),
        is_admin: found.user.is_admin,
        is_disabled: found.user.is_disabled,
        has_password: found.user.has_password,
        created_at: found.user.created_at,
        last_login_at: found.user.last_login_at,
        key_id,
        read_write: scope == ApiKeyScope::ReadWrite,
    }
}

/// A remembered key as the [`Authenticated`] it was.
fn from_remembered(key: RememberedKey) -> Authenticated {
    let scope = if key.read_write {
        ApiKeyScope::ReadWrite
    } else {
        ApiKeyScope::Read
    };
    Authenticated {
        user: User {
            id: key.user_id,
            username: key.username,
            is_admin: key.is_admin,
            is_disabled: key.is_disabled,
            has_password: key.has_password,
            created_at: key.created_at,
            last_login_at: key.last_login_at,
        },
        session_id: None,
        api_key: Some((key.key_id, scope)),
    }
}

impl Store {
    /// Creates a session for the user. `token_sha256` is the hash of the cookie's secret.
    pub async fn create_session(
        &self,
        user_id: i64,
        token_sha256: &str,
        expires_at: i64,
        user_agent: Option<&str>,
        ip: Option<&str>,
    ) -> Result<i64> {
        let now = unix_now();
        Ok(with_db!(self, write, |db| {
            sqlx::query_scalar::<_, i64>(
                "INSERT INTO sessions (user_id, token_hash, created_at, last_seen_at, expires_at,
                                       user_agent, ip)
                 VALUES ($1, $2, $3, $3, $4, $5, $6) RETURNING id",
            )
            .bind(user_id)
            .bind(token_sha256)
            .bind(now)
            .bind(expires_at)
            .bind(user_agent.map(|ua| ua.chars().take(300).collect::<String>()))
            .bind(ip)
            .fetch_one(db)
            .await?
        }))
    }

    /// The user of a live session: not past its absolute expiry, used within `idle_seconds`,
    /// and its user not disabled. Records the use (at most once a minute).
    pub async fn authenticate_session(
        &self,
        token_sha256: &str,
        idle_seconds: i64,
    ) -> Result<Option<Authenticated>> {
        let now = unix_now();
        let row: Option<(AuthRow, i64)> = with_db!(self, read, |db| {
            sqlx::query_as::<
                _,
                (
                    i64,
                    String,
                    bool,
                    bool,
                    Option<String>,
                    i64,
                    Option<i64>,
                    i64,
                    i64,
                    i64,
                ),
            >(
                "SELECT u.id, u.username, u.is_admin, u.is_disabled, u.password_hash, u.created_at,
                        u.last_login_at, s.id, s.last_seen_at, s.expires_at
                 FROM sessions s JOIN users u ON u.id = s.user_id
                 WHERE s.token_hash = $1",
            )
            .bind(token_sha256)
            .fetch_optional(db)
            .await?
            .map(|r| ((r.0, r.1, r.2, r.3, r.4, r.5, r.6, r.7, r.8), r.9))
        });
        let Some((row, expires_at)) = row else {
            return Ok(None);
        };
        let (session_id, last_seen) = (row.7, row.8);
        if row.3 || now >= expires_at || now - last_seen > idle_seconds {
            return Ok(None);
        }
        if now - last_seen >= TOUCH_EVERY_SECONDS {
            with_db!(self, write, |db| {
                sqlx::query("UPDATE sessions SET last_seen_at = $1 WHERE id = $2")
                    .bind(now)
                    .bind(session_id)
                    .execute(db)
                    .await?;
            });
        }
        Ok(Some(Authenticated {
            user: auth_user(&row),
            session_id: Some(session_id),
            api_key: None,
        }))
    }

    /// Ends a session (sign-out). Returns whether it existed.
    pub async fn delete_session(&self, session_id: i64) -> Result<bool> {
        Ok(with_db!(self, write, |db| {
            sqlx::query("DELETE FROM sessions WHERE id = $1")
                .bind(session_id)
                .execute(db)
                .await?
                .rows_affected()
        }) > 0)
    }

    /// Ends one of the user's sessions by id.
    pub async fn delete_user_session(&self, user_id: i64, session_id: i64) -> Result<()> {
        let deleted = with_db!(self, write, |db| {
            sqlx::query("DELETE FROM sessions WHERE id = $1 AND user_id = $2")
                .bind(session_id)
                .bind(user_id)
                .execute(db)
                .await?
                .rows_affected()
        });
        if deleted == 0 {
            return Err(StoreError::NotFound("session"));
        }
        Ok(())
    }

    /// Ends every session of a user except `keep` (after a password change, or on disabling).
    pub async fn delete_user_sessions(&self, user_id: i64, keep: Option<i64>) -> Result<u64> {
        Ok(with_db!(self, write, |db| {
            sqlx::query("DELETE FROM sessions WHERE user_id = $1 AND id <> COALESCE($2, -1)")
                .bind(user_id)
                .bind(keep)
                .execute(db)
                .await?
                .rows_affected()
        }))
    }

    /// The user's live sessions, newest first.
    pub async fn list_sessions(&self, user_id: i64) -> Result<Vec<Session>> {
        let now = unix_now();
        let rows: Vec<(i64, i64, i64, i64, Option<String>, Option<String>)> =
            with_db!(self, read, |db| {
                sqlx::query_as(
                    "SELECT id, created_at, last_seen_at, expires_at, user_agent, ip FROM sessions
                     WHERE user_id = $1 AND expires_at > $2 ORDER BY last_seen_at DESC, id DESC",
                )
                .bind(user_id)
                .bind(now)
                .fetch_all(db)
                .await?
            });
        Ok(rows
            .into_iter()
            .map(
                |(id, created_at, last_seen_at, expires_at, user_agent, ip)| Session {
                    id,
                    created_at,
                    last_seen_at,
                    expires_at,
                    user_agent,
                    ip,
                },
            )
            .collect())
    }

    /// Deletes sessions past their absolute expiry or idle longer than `idle_seconds`.
    pub async fn delete_expired_sessions(&self, idle_seconds: i64) -> Result<u64> {
        let now = unix_now();
        Ok(with_db!(self, write, |db| {
            sqlx::query("DELETE FROM sessions WHERE expires_at <= $1 OR last_seen_at < $2")
                .bind(now)
                .bind(now.saturating_sub(idle_seconds))
                .execute(db)
                .await?
                .rows_affected()
        }))
    }

    /// Stores a new API key. `key_sha256` is the hash of the secret shown once to the user.
    pub async fn create_api_key(
        &self,
        user_id: i64,
        name: &str,
        prefix: &str,
        key_sha256: &str,
        scope: ApiKeyScope,
        expires_at: Option<i64>,
    ) -> Result<ApiKey> {
        let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
        if name.is_empty() || name.chars().count() > 100 {
            return Err(StoreError::Invalid(
                "the key's name must have 1 to 100 characters".into(),
            ));
        }
        let now = unix_now();
        let id = with_db!(self, write, |db| {
            sqlx::query_scalar::<_, i64>(
                "INSERT INTO api_keys (user_id, name, key_prefix, key_hash, scope, created_at,
                                       expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
            )
            .bind(user_id)
            .bind(&name)
            .bind(prefix)
            .bind(key_sha256)
            .bind(scope.as_str())
            .bind(now)
            .bind(expires_at)
            .fetch_one(db)
            .await?
        });
        Ok(ApiKey {
            id,
            name,
            prefix: prefix.to_string(),
            scope,
            created_at: now,
            expires_at,
            last_used_at: None,
        })
    }

    /// The user's keys that are not revoked, newest first.
    pub async fn list_api_keys(&self, user_id: i64) -> Result<Vec<ApiKey>> {
        let rows: Vec<(i64, String, String, String, i64, Option<i64>, Option<i64>)> =
            with_db!(self, read, |db| {
                sqlx::query_as(
                    "SELECT id, name, key_prefix, scope, created_at, expires_at, last_used_at
                     FROM api_keys WHERE user_id = $1 AND revoked_at IS NULL
                     ORDER BY created_at DESC, id DESC",
                )
                .bind(user_id)
                .fetch_all(db)
                .await?
            });
        Ok(rows
            .into_iter()
            .map(
                |(id, name, prefix, scope, created_at, expires_at, last_used_at)| ApiKey {
                    id,
                    name,
                    prefix,
                    scope: ApiKeyScope::parse(&scope),
                    created_at,
                    expires_at,
                    last_used_at,
                },
            )
            .collect())
    }

    /// Revokes one of the user's keys.
    pub async fn revoke_api_key(&self, user_id: i64, key_id: i64) -> Result<()> {
        let revoked = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE api_keys SET revoked_at = $1
                 WHERE id = $2 AND user_id = $3 AND revoked_at IS NULL",
            )
            .bind(unix_now())
            .bind(key_id)
            .bind(user_id)
            .execute(db)
            .await?
            .rows_affected()
        });
        self.auth_cache.forget_all();
        if revoked == 0 {
            return Err(StoreError::NotFound("API key"));
        }
        Ok(())
    }

    /// Revokes every live key of the user (a password change or reset); returns how many.
    pub async fn revoke_user_api_keys(&self, user_id: i64) -> Result<u64> {
        let revoked = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE api_keys SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL",
            )
            .bind(unix_now())
            .bind(user_id)
            .execute(db)
            .await?
            .rows_affected()
        });
        self.auth_cache.forget_all();
        Ok(revoked)
    }

    /// The user of a live API key: not revoked, not expired, its user not disabled. Records
    /// the use (at most once a minute).
    /// A key that authenticated is remembered for a few seconds, within which changes made by
    /// another process may not hold yet (see [`crate::auth_cache`]).
    pub async fn authenticate_api_key(&self, key_sha256: &str) -> Result<Option<Authenticated>> {
        self.authenticate_key_where(KeyForm::Hash, "k.key_hash = $1", key_sha256)
            .await
    }

    /// The user of a live API key, by the Fever API's digest of it, md5(username:key) (see
    /// [`Store::set_api_key_fever_hash`]); the same checks as [`Store::authenticate_api_key`].
    /// The digest is hashed as stored and the hash looked up.
    pub async fn authenticate_fever_key(&self, fever_md5: &str) -> Result<Option<Authenticated>> {
        if fever_md5.trim().is_empty() {
            return Ok(None);
        }
        self.authenticate_key_where(
            KeyForm::Fever,
            "(k.fever_digest_sha256 = $1 OR k.fever_digest_sha256_folded = $1)",
            &crate::sync::fever_digest_hash(fever_md5),
        )
        .await
    }

    /// The user of the live API key matching `condition` on `$1 = value`.
    async fn authenticate_key_where(
        &self,
        form: KeyForm,
        condition: &'static str,
        value: &str,
    ) -> Result<Option<Authenticated>> {
        let now = unix_now();
        if let Some(found) = self.auth_cache.get(form, value, now) {
            return Ok(Some(from_remembered(found)));
        }
        let generation = self.auth_cache.generation();
        let row = with_db!(self, read, |db| {
            sqlx::query_as::<
                _,
                (
                    i64,
                    String,
                    bool,
                    bool,
                    Option<String>,
                    i64,
                    Option<i64>,
                    i64,
                    String,
                    Option<i64>,
                    Option<i64>,
                    Option<i64>,
                ),
            >(sqlx::AssertSqlSafe(format!(
                "SELECT u.id, u.username, u.is_admin, u.is_disabled, u.password_hash, u.created_at,
                        u.last_login_at, k.id, k.scope, k.expires_at, k.revoked_at, k.last_used_at
                 FROM api_keys k JOIN users u ON u.id = k.user_id
                 WHERE {condition}"
            )))
            .bind(value)
            .fetch_optional(db)
            .await?
        });
        let Some(r) = row else {
            return Ok(None);
        };
        let (key_id, scope, expires_at, revoked_at, last_used) =
            (r.7, r.8.clone(), r.9, r.10, r.11);
        if r.3 || revoked_at.is_some() || expires_at.is_some_and(|t| now >= t) {
            return Ok(None);
        }
        if last_used.is_none_or(|t| now - t >= TOUCH_EVERY_SECONDS) {
            with_db!(self, write, |db| {
                sqlx::query("UPDATE api_keys SET last_used_at = $1 WHERE id = $2")
                    .bind(now)
                    .bind(key_id)
                    .execute(db)
                    .await?;
            });
        }
        let user_row: AuthRow = (r.0, r.1, r.2, r.3, r.4, r.5, r.6, key_id, 0);
        let found = Authenticated {
            user: auth_user(&user_row),
            session_id: None,
            api_key: Some((key_id, ApiKeyScope::parse(&scope))),
        };
        self.auth_cache
            .remember(form, value, remembered(&found), expires_at, generation);
        Ok(Some(found))
    }
}
