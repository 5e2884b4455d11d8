//! OpenID Connect sign-in (F22): the identities linked to each user (one user per issuer and
//! subject, several identities per user), the authorization requests in flight, and the
//! installation's choice of whether passwords still sign in.

use crate::second_factors::ChallengeStored;
use crate::users::{USER_COLUMNS, UserRow, insert_user, name_taken, user_from_row};
use crate::{
    Engine, Result, Store, StoreError, User, in_tx, normalize_username, unix_now, username_key,
    with_db,
};

/// An identity at an OpenID provider, linked to a user.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Identity {
    /// The link's id.
    pub id: i64,
    /// The provider's issuer URL (the ID token's `iss`).
    pub issuer: String,
    /// The user's identifier at that provider (the ID token's `sub`), stable and unique there.
    pub subject: String,
    /// The e-mail address the provider gave at the last sign-in, if any (shown, never trusted
    /// for matching accounts).
    pub email: Option<String>,
    /// When it was linked.
    pub created_at: i64,
    /// When it last signed in.
    pub last_used_at: Option<i64>,
}

/// An authorization request sent to the provider and not yet answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcLogin {
    /// The `nonce` the ID token must carry.
    pub nonce: String,
    /// The PKCE verifier whose S256 challenge went with the request.
    pub code_verifier: String,
    /// The user linking an identity, or `None` for a sign-in.
    pub link_user_id: Option<i64>,
    /// Where the browser goes once signed in (a path of this server).
    pub return_to: Option<String>,
}

/// What storing a new authorization request takes.
#[derive(Debug, Clone)]
pub struct NewOidcLogin<'a> {
    /// The SHA-256 of the request's `state`: the database never holds a usable state.
    pub state_hash: &'a str,
    /// The request's `nonce`.
    pub nonce: &'a str,
    /// The PKCE verifier.
    pub code_verifier: &'a str,
    /// The user linking an identity, or `None` for a sign-in.
    pub link_user_id: Option<i64>,
    /// Where to go afterwards.
    pub return_to: Option<&'a str>,
    /// When the request stops being accepted (Unix seconds).
    pub expires_at: i64,
}

/// The `system_settings` key that turns password sign-in off (value `off`).
const PASSWORD_SIGN_IN_KEY: &str = "password_sign_in";

type IdentityRow = (i64, String, String, Option<String>, i64, Option<i64>);

fn identity_from_row(row: IdentityRow) -> Identity {
    let (id, issuer, subject, email, created_at, last_used_at) = row;
    Identity {
        id,
        issuer,
        subject,
        email,
        created_at,
        last_used_at,
    }
}

const IDENTITY_COLUMNS: &str = "id, provider, subject, email, created_at, last_used_at";

/// The refusal to remove a user's last way to sign in.
fn last_sign_in_method() -> StoreError {
    StoreError::Conflict(
        "this is the account's last way to sign in: set a password or link another identity \
         first"
            .into(),
    )
}

impl Store {
    /// Stores an authorization request (and drops the expired ones, so abandoned requests do
    /// not pile up), unless `max_live` live ones are stored already: each is started by a
    /// browser that has not signed in, so they are bounded in rows as well as in rate. Two
    /// requests racing can overshoot the bound by one each.
    pub async fn create_oidc_login(
        &self,
        login: &NewOidcLogin<'_>,
        max_live: i64,
    ) -> Result<ChallengeStored> {
        let now = unix_now();
        let stored = in_tx!(self, |tx| {
            sqlx::query("DELETE FROM oidc_logins WHERE expires_at <= $1")
                .bind(now)
                .execute(&mut *tx)
                .await?;
            let live: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM oidc_logins")
                .fetch_one(&mut *tx)
                .await?;
            if live >= max_live {
                ChallengeStored::Full
            } else {
                sqlx::query(
                    "INSERT INTO oidc_logins (state_hash, nonce, code_verifier, link_user_id,
                                              return_to, created_at, expires_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .bind(login.state_hash)
                .bind(login.nonce)
                .bind(login.code_verifier)
                .bind(login.link_user_id)
                .bind(login.return_to)
                .bind(now)
                .bind(login.expires_at)
                .execute(&mut *tx)
                .await?;
                ChallengeStored::Stored
            }
        });
        Ok(stored)
    }

    /// Takes the authorization request of `state_hash` out of the store: the first answer
    /// with a state gets it, any later one (a replay) gets `None`, as does an expired one.
    pub async fn take_oidc_login(&self, state_hash: &str) -> Result<Option<OidcLogin>> {
        let row: Option<(String, String, Option<i64>, Option<String>, i64)> =
            with_db!(self, write, |db| {
                sqlx::query_as(
                    "DELETE FROM oidc_logins WHERE state_hash = $1
                     RETURNING nonce, code_verifier, link_user_id, return_to, expires_at",
                )
                .bind(state_hash)
                .fetch_optional(db)
                .await?
            });
        Ok(row.filter(|row| row.4 > unix_now()).map(
            |(nonce, code_verifier, link_user_id, return_to, _)| OidcLogin {
                nonce,
                code_verifier,
                link_user_id,
                return_to,
            },
        ))
    }

    /// The user an identity is linked to, if any; records the identity's use and its latest
    /// e-mail address.
    pub async fn identity_user(
        &self,
        issuer: &str,
        subject: &str,
        email: Option<&str>,
    ) -> Result<Option<User>> {
        let user_id: Option<i64> = with_db!(self, write, |db| {
            sqlx::query_scalar(
                "UPDATE identities SET last_used_at = $1, email = COALESCE($2, email)
                 WHERE provider = $3 AND subject = $4 RETURNING user_id",
            )
            .bind(unix_now())
            .bind(email)
            .bind(issuer)
            .bind(subject)
            .fetch_optional(db)
            .await?
        });
        match user_id {
            Some(id) => Ok(Some(self.user(id).await?)),
            None => Ok(None),
        }
    }

    /// Links an identity to a user. Linking it again to the same user only refreshes the
    /// e-mail address; an identity linked to another user is a `Conflict`.
    pub async fn link_identity(
        &self,
        user_id: i64,
        issuer: &str,
        subject: &str,
        email: Option<&str>,
    ) -> Result<Identity> {
        let now = unix_now();
        let sql = format!(
            "INSERT INTO identities (user_id, provider, subject, email, created_at, last_used_at)
             VALUES ($1, $2, $3, $4, $5, $5)
             ON CONFLICT (provider, subject) DO UPDATE SET email = COALESCE(excluded.email, identities.email)
             WHERE identities.user_id = excluded.user_id
             RETURNING {IDENTITY_COLUMNS}"
        );
        let row: Option<IdentityRow> = with_db!(self, write, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(user_id)
                .bind(issuer)
                .bind(subject)
                .bind(email)
                .bind(now)
                .fetch_optional(db)
                .await?
        });
        // No row: the conflict's WHERE failed, so another user has this identity.
        row.map(identity_from_row).ok_or_else(|| {
            StoreError::Conflict("this identity is already linked to another account".into())
        })
    }

    /// The identities linked to a user, oldest first.
    pub async fn list_identities(&self, user_id: i64) -> Result<Vec<Identity>> {
        let sql =
            format!("SELECT {IDENTITY_COLUMNS} FROM identities WHERE user_id = $1 ORDER BY id");
        let rows: Vec<IdentityRow> = with_db!(self, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(user_id)
                .fetch_all(db)
                .await?
        });
        Ok(rows.into_iter().map(identity_from_row).collect())
    }

    /// Unlinks one of a user's identities, unless it is the last way the user can sign in:
    /// no other identity, and no password or (`password_counts` false) passwords turned off
    /// for the installation. `NotFound` when the user has no such identity. Two unlinks of
    /// the same user run one after the other, so they cannot remove the last two together.
    pub async fn unlink_identity(
        &self,
        user_id: i64,
        identity_id: i64,
        password_counts: bool,
    ) -> Result<()> {
        // The user's row is locked on PostgreSQL; SQLite's write transaction is exclusive.
        let lock = match self.engine() {
            Engine::Sqlite => "SELECT password_hash FROM users WHERE id = $1",
            Engine::Postgres => "SELECT password_hash FROM users WHERE id = $1 FOR UPDATE",
        };
        in_tx!(self, |tx| {
            let password: Option<Option<String>> = sqlx::query_scalar(lock)
                .bind(user_id)
                .fetch_optional(&mut *tx)
                .await?;
            let Some(password) = password else {
                return Err(StoreError::NotFound("user"));
            };
            let others: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM identities WHERE user_id = $1 AND id <> $2",
            )
            .bind(user_id)
            .bind(identity_id)
            .fetch_one(&mut *tx)
            .await?;
            if others == 0 && !(password_counts && password.is_some()) {
                return Err(last_sign_in_method());
            }
            let deleted = sqlx::query("DELETE FROM identities WHERE id = $1 AND user_id = $2")
                .bind(identity_id)
                .bind(user_id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if deleted == 0 {
                return Err(StoreError::NotFound("identity"));
            }
        });
        Ok(())
    }

    /// Creates a user without a password, signed up through an identity, with the identity
    /// linked, in one transaction. `Conflict` when the name is taken or the identity is
    /// already linked.
    pub async fn create_user_with_identity(
        &self,
        username: &str,
        issuer: &str,
        subject: &str,
        email: Option<&str>,
    ) -> Result<User> {
        let username = normalize_username(username)?;
        let key = username_key(&username)?;
        let now = unix_now();
        let no_password: Option<String> = None;
        let result: Result<i64> = async {
            Ok(in_tx!(self, |tx| {
                let id = insert_user!(tx, &username, &key, &no_password, false, now);
                sqlx::query(
                    "INSERT INTO identities (user_id, provider, subject, email, created_at,
                                             last_used_at)
                     VALUES ($1, $2, $3, $4, $5, $5)",
                )
                .bind(id)
                .bind(issuer)
                .bind(subject)
                .bind(email)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                id
            }))
        }
        .await;
        match result {
            Ok(id) => self.user(id).await,
            Err(StoreError::Database(e)) if StoreError::is_unique_violation(&e) => {
                // Either the name or the identity: say which.
                if self.identity_owner(issuer, subject).await?.is_some() {
                    Err(StoreError::Conflict(
                        "this identity is already linked to another account".into(),
                    ))
                } else {
                    Err(name_taken(&username))
                }
            }
            Err(e) => Err(e),
        }
    }

    /// The id of the user an identity is linked to, without recording a use.
    async fn identity_owner(&self, issuer: &str, subject: &str) -> Result<Option<i64>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, i64>(
                "SELECT user_id FROM identities WHERE provider = $1 AND subject = $2",
            )
            .bind(issuer)
            .bind(subject)
            .fetch_optional(db)
            .await?
        }))
    }

    /// The users that could still sign in if passwords were turned off: those with a linked
    /// identity and not disabled.
    pub async fn users_with_identity(&self) -> Result<Vec<User>> {
        let sql = format!(
            "SELECT {USER_COLUMNS} FROM users u
             WHERE is_disabled = FALSE AND EXISTS (SELECT 1 FROM identities i WHERE i.user_id = u.id)
             ORDER BY id"
        );
        let rows: Vec<UserRow> = with_db!(self, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .fetch_all(db)
                .await?
        });
        Ok(rows.into_iter().map(user_from_row).collect())
    }

    /// Whether passwords sign in (true unless an administrator turned them off).
    pub async fn password_sign_in(&self) -> Result<bool> {
        let value: Option<String> = with_db!(self, read, |db| {
            sqlx::query_scalar("SELECT value FROM system_settings WHERE key = $1")
                .bind(PASSWORD_SIGN_IN_KEY)
                .fetch_optional(db)
                .await?
        });
        Ok(value.as_deref() != Some("off"))
    }

    /// Turns password sign-in on or off for the installation.
    pub async fn set_password_sign_in(&self, enabled: bool) -> Result<()> {
        with_db!(self, write, |db| {
            sqlx::query(
                "INSERT INTO system_settings (key, value, updated_at) VALUES ($1, $2, $3)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            )
            .bind(PASSWORD_SIGN_IN_KEY)
            .bind(if enabled { "on" } else { "off" })
            .bind(unix_now())
            .execute(db)
            .await?;
        });
        Ok(())
    }
}
