//! Users, their default group and preferences, groups, and the first-admin setup token.

use crate::{Result, Store, StoreError, in_tx, unix_now, with_db};

/// The longest user name accepted.
pub const MAX_USERNAME_LEN: usize = 64;

/// A user account.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct User {
    /// The user's id.
    pub id: i64,
    /// The name as it was typed when the account was made (trimmed, NFC); sign-in compares
    /// names by [`username_key`].
    pub username: String,
    /// Whether the user manages other users (F24).
    pub is_admin: bool,
    /// A disabled user cannot sign in or use API keys.
    pub is_disabled: bool,
    /// Whether a password is set (accounts created through OIDC may have none).
    pub has_password: bool,
    /// When the account was created (Unix seconds).
    pub created_at: i64,
    /// The last successful sign-in (Unix seconds).
    pub last_login_at: Option<i64>,
}

/// What it takes to create a user.
#[derive(Debug, Clone)]
pub struct NewUser {
    /// The login name; checked by [`normalize_username`].
    pub username: String,
    /// An already-hashed password (argon2id PHC string), or `None`.
    pub password_hash: Option<String>,
    /// Whether the user is an administrator.
    pub is_admin: bool,
}

/// A group of subscriptions (F33).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Group {
    /// The group's id.
    pub id: i64,
    /// Its name, unique per user.
    pub name: String,
    /// Its place in the user's list.
    pub position: i64,
    /// Whether this is the user's default group, which cannot be deleted.
    pub is_default: bool,
}

/// The name every user's first group gets.
pub const DEFAULT_GROUP_NAME: &str = "General";

/// Inserts a user with its default group and preferences inside the transaction `$tx`, and
/// evaluates to the new id. Shared by ordinary creation and the one-time setup.
macro_rules! insert_user {
    ($tx:ident, $username:expr, $key:expr, $password_hash:expr, $is_admin:expr, $now:expr) => {{
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO users (username, username_key, password_hash, is_admin, created_at,
                                updated_at)
             VALUES ($1, $2, $3, $4, $5, $5) RETURNING id",
        )
        .bind($username)
        .bind($key)
        .bind($password_hash)
        .bind($is_admin)
        .bind($now)
        .fetch_one(&mut *$tx)
        .await?;
        sqlx::query(
            "INSERT INTO feed_groups (user_id, name, position, is_default, created_at)
             VALUES ($1, $2, 0, TRUE, $3)",
        )
        .bind(id)
        .bind($crate::users::DEFAULT_GROUP_NAME)
        .bind($now)
        .execute(&mut *$tx)
        .await?;
        sqlx::query("INSERT INTO user_preferences (user_id, updated_at) VALUES ($1, $2)")
            .bind(id)
            .bind($now)
            .execute(&mut *$tx)
            .await?;
        id
    }};
}

pub(crate) use insert_user;

const SETUP_TOKEN_KEY: &str = "setup_token_sha256";

pub(crate) type UserRow = (i64, String, bool, bool, Option<String>, i64, Option<i64>);

pub(crate) const USER_COLUMNS: &str =
    "id, username, is_admin, is_disabled, password_hash, created_at, last_login_at";

pub(crate) fn user_from_row(row: UserRow) -> User {
    let (id, username, is_admin, is_disabled, password_hash, created_at, last_login_at) = row;
    User {
        id,
        username,
        is_admin,
        is_disabled,
        has_password: password_hash.is_some(),
        created_at,
        last_login_at,
    }
}

/// The key a user name is compared by, for uniqueness and sign-in: NFKC, then full Unicode
/// case folding, then NFKC again (Unicode's NFKC_Casefold, less the removal of default
/// ignorables, which the character rule below refuses anyway). "José", "josé" typed
/// precomposed or as `e` + U+0301, "ＪＯＳÉ" in full-width letters and "JOSÉ" all have the key
/// "josé"; "Straße" and "STRASSE" share "strasse".
///
/// It checks what every name must be, old or new: 1–64 characters, letters, digits, `.`, `_`,
/// `-` and `@` (combining marks may follow a letter), starting with a letter or digit. It does
/// not apply the script rule of [`normalize_username`], so names that existed before that rule
/// keep working.
pub fn username_key(name: &str) -> Result<String> {
    use caseless::Caseless;
    use unicode_normalization::UnicodeNormalization;
    let name = name.trim();
    if name.is_empty() {
        return Err(StoreError::Invalid("the user name is empty".into()));
    }
    if name.chars().count() > MAX_USERNAME_LEN {
        return Err(StoreError::Invalid(format!(
            "the user name is longer than {MAX_USERNAME_LEN} characters"
        )));
    }
    let key: String = name.nfkc().default_case_fold().nfkc().collect();
    let valid_char = |c: char| {
        c.is_alphanumeric()
            || matches!(c, '.' | '_' | '-' | '@')
            || unicode_normalization::char::is_combining_mark(c)
    };
    if !key.chars().all(valid_char) || !key.starts_with(|c: char| c.is_alphanumeric()) {
        return Err(StoreError::Invalid(format!(
            "the user name {name:?} may only hold letters, digits, '.', '_', '-' and '@', \
             and must start with a letter or digit"
        )));
    }
    if key.chars().count() > MAX_USERNAME_LEN {
        return Err(StoreError::Invalid(format!(
            "the user name is longer than {MAX_USERNAME_LEN} characters once normalized"
        )));
    }
    Ok(key)
}

/// Checks a new user name and returns the form stored and shown: the name as typed, trimmed
/// and in NFC (which changes no character's look). Beside [`username_key`]'s rules, a name must
/// not mix scripts in ways that make it look like another name (UTS #39's "highly restrictive"
/// level): "pаypal" with a Cyrillic `а` is refused, while a wholly Latin, Cyrillic, Greek or
/// Japanese name is fine, and so is Latin with Han, kana or Hangul. Digits, `.`, `_`, `-` and
/// `@` go with any script.
pub fn normalize_username(name: &str) -> Result<String> {
    use unicode_normalization::UnicodeNormalization;
    let key = username_key(name)?;
    check_scripts(name.trim(), &key)?;
    Ok(name.trim().nfc().collect())
}

/// Refuses a name whose letters mix scripts beyond UTS #39's highly restrictive level, naming
/// the first character that breaks it.
fn check_scripts(name: &str, key: &str) -> Result<()> {
    use unicode_script::UnicodeScript;
    use unicode_security::{GeneralSecurityProfile, RestrictionLevel, RestrictionLevelDetection};
    let letters = |text: &str| -> String {
        text.chars()
            .filter(|c| !matches!(c, '.' | '_' | '-' | '@'))
            .collect()
    };
    let allowed = |text: &str| {
        letters(text)
            .as_str()
            .check_restriction_level(RestrictionLevel::HighlyRestrictive)
    };
    if allowed(key) {
        return Ok(());
    }
    if let Some(c) = key.chars().find(|c| {
        !matches!(c, '.' | '_' | '-' | '@') && !GeneralSecurityProfile::identifier_allowed(*c)
    }) {
        return Err(StoreError::Invalid(format!(
            "the user name {name:?} holds {c:?} (U+{:04X}), a character Unicode does not \
             recommend in names (UTS #39); choose a name without it",
            c as u32
        )));
    }
    // The first character whose addition breaks the rule, and the script it brings in.
    let mut prefix = String::new();
    let mut scripts: Vec<&'static str> = Vec::new();
    for c in key.chars() {
        prefix.push(c);
        let script = c.script();
        if !matches!(
            script,
            unicode_script::Script::Common | unicode_script::Script::Inherited
        ) && !scripts.contains(&script.full_name())
        {
            scripts.push(script.full_name());
        }
        if !allowed(&prefix) {
            return Err(StoreError::Invalid(format!(
                "the user name {name:?} mixes scripts ({}: {:?}), so it could \
                 be mistaken for another name; write its letters in one script, e.g. only \
                 Latin or only Cyrillic letters (digits, '.', '_' and '-' go with any)",
                scripts.join(" with "),
                prefix.chars().count()
            )));
        }
    }
    Ok(())
}

/// The active administrators' ids.
const ACTIVE_ADMINS: &str = "SELECT id FROM users WHERE is_admin = TRUE AND is_disabled = FALSE";

impl Store {
    /// Creates a user with its default group and preferences, in one transaction.
    pub async fn create_user(&self, new: &NewUser) -> Result<User> {
        let username = normalize_username(&new.username)?;
        let key = username_key(&username)?;
        let now = unix_now();
        let result: Result<i64> = async {
            Ok(in_tx!(self, |tx| insert_user!(
                tx,
                &username,
                &key,
                &new.password_hash,
                new.is_admin,
                now
            )))
        }
        .await;
        match result {
            Ok(id) => self.user(id).await,
            Err(StoreError::Database(e)) if StoreError::is_unique_violation(&e) => {
                Err(name_taken(&username))
            }
            Err(e) => Err(e),
        }
    }

    /// Creates the first administrator through the one-time setup (F20). Consuming the
    /// token row is the gate: of two racing setups only one deletes it, and the user is
    /// created in the same transaction, so there is never a second "first" administrator.
    /// Fails with `NotFound` when the token is wrong or used, `Conflict` when users exist.
    pub async fn create_first_admin(
        &self,
        token_sha256: &str,
        username: &str,
        password_hash: &str,
    ) -> Result<User> {
        let username = normalize_username(username)?;
        let key = username_key(&username)?;
        let now = unix_now();
        let result: Result<i64> = async {
            Ok(in_tx!(self, |tx| {
                let consumed =
                    sqlx::query("DELETE FROM system_settings WHERE key = $1 AND value = $2")
                        .bind(SETUP_TOKEN_KEY)
                        .bind(token_sha256)
                        .execute(&mut *tx)
                        .await?
                        .rows_affected();
                if consumed == 0 {
                    return Err(StoreError::NotFound("setup token"));
                }
                let users: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users")
                    .fetch_one(&mut *tx)
                    .await?;
                if users > 0 {
                    return Err(StoreError::Conflict("setup is already complete".into()));
                }
                insert_user!(tx, &username, &key, Some(password_hash), true, now)
            }))
        }
        .await;
        self.user(result?).await
    }

    /// The user with this id.
    pub async fn user(&self, id: i64) -> Result<User> {
        let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1");
        let row: Option<UserRow> = with_db!(self, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(id)
                .fetch_optional(db)
                .await?
        });
        row.map(user_from_row).ok_or(StoreError::NotFound("user"))
    }

    /// The user with this name, with the stored password hash: the one lookup of a name as
    /// someone typed it, for signing in (web, sync APIs) and the command line.
    ///
    /// Names match by [`username_key`], so case, width and composition do not matter. A name
    /// stored exactly as typed wins over the key: two accounts made before names were
    /// normalized whose names now share a key (say "strasse" and "straße") keep signing in
    /// with their own names; the older one keeps the key, so other spellings ("STRASSE")
    /// reach it (see migration 11).
    pub async fn user_credentials(&self, username: &str) -> Result<Option<(User, Option<String>)>> {
        use unicode_normalization::UnicodeNormalization;
        let typed = username.trim();
        let composed: String = typed.nfc().collect();
        let key = username_key(typed).unwrap_or_default();
        let sql = format!(
            "SELECT {USER_COLUMNS} FROM users
             WHERE username_key = $1 OR username = $2 OR username = $3
             ORDER BY CASE WHEN username = $2 OR username = $3 THEN 0 ELSE 1 END
             LIMIT 1"
        );
        let row: Option<UserRow> = with_db!(self, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(&key)
                .bind(typed)
                .bind(&composed)
                .fetch_optional(db)
                .await?
        });
        Ok(row.map(|row| {
            let hash = row.4.clone();
            (user_from_row(row), hash)
        }))
    }

    /// Every user, by name (compared as sign-in compares them, so case does not sort).
    pub async fn list_users(&self) -> Result<Vec<User>> {
        let sql = format!("SELECT {USER_COLUMNS} FROM users ORDER BY username_key, username");
        let rows: Vec<UserRow> = with_db!(self, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .fetch_all(db)
                .await?
        });
        Ok(rows.into_iter().map(user_from_row).collect())
    }

    /// How many users exist, and how many of them are administrators.
    pub async fn count_users(&self) -> Result<(i64, i64)> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_as::<_, (i64, i64)>(
                "SELECT COUNT(*), COUNT(CASE WHEN is_admin THEN 1 END) FROM users",
            )
            .fetch_one(db)
            .await?
        }))
    }

    /// Replaces a user's password hash (already checked against the policy and hashed).
    pub async fn set_password_hash(&self, user_id: i64, hash: &str) -> Result<()> {
        let changed = with_db!(self, write, |db| {
            sqlx::query("UPDATE users SET password_hash = $1, updated_at = $2 WHERE id = $3")
                .bind(hash)
                .bind(unix_now())
                .bind(user_id)
                .execute(db)
                .await?
                .rows_affected()
        });
        self.auth_cache.forget_all();
        if changed == 0 {
            return Err(StoreError::NotFound("user"));
        }
        Ok(())
    }

    /// Sets the administrator and disabled flags of a user. Refused (`Conflict`) when it would
    /// demote or disable the last active administrator, also when two such changes race: the
    /// active administrators are read and changed in one write transaction that such changes
    /// take one at a time (see `active_admins_sql`).
    pub async fn set_user_flags(
        &self,
        user_id: i64,
        is_admin: Option<bool>,
        is_disabled: Option<bool>,
    ) -> Result<User> {
        let loses_admin = is_admin == Some(false) || is_disabled == Some(true);
        let serialize = self.serialize_admin_changes_sql();
        let changed = in_tx!(self, |tx| {
            if loses_admin {
                sqlx::query(serialize).execute(&mut *tx).await?;
                let admins: Vec<i64> = sqlx::query_scalar(ACTIVE_ADMINS)
                    .fetch_all(&mut *tx)
                    .await?;
                if admins == [user_id] {
                    return Err(last_admin());
                }
            }
            sqlx::query(
                "UPDATE users SET is_admin = COALESCE($1, is_admin),
                        is_disabled = COALESCE($2, is_disabled), updated_at = $3
                 WHERE id = $4",
            )
            .bind(is_admin)
            .bind(is_disabled)
            .bind(unix_now())
            .bind(user_id)
            .execute(&mut *tx)
            .await?
            .rows_affected()
        });
        self.auth_cache.forget_all();
        if changed == 0 {
            return Err(StoreError::NotFound("user"));
        }
        self.user(user_id).await
    }

    /// The statement that makes changes able to remove an administrator run one at a time,
    /// so the second sees the first: on PostgreSQL a transaction-level advisory lock, taken in
    /// its own statement before the administrators are read (a statement's snapshot predates
    /// a lock it waits for). Locking the admin rows with `FOR UPDATE` instead deadlocked: a
    /// row demoted meanwhile drops out of the locked set while a racing deletion still needs
    /// it. On SQLite the write transaction (`BEGIN IMMEDIATE`) already serializes them.
    fn serialize_admin_changes_sql(&self) -> &'static str {
        match self.engine() {
            crate::Engine::Sqlite => "SELECT 1",
            crate::Engine::Postgres => "SELECT pg_advisory_xact_lock(7468, 1)",
        }
    }

    /// Records a successful sign-in.
    pub async fn touch_login(&self, user_id: i64) -> Result<()> {
        with_db!(self, write, |db| {
            sqlx::query("UPDATE users SET last_login_at = $1 WHERE id = $2")
                .bind(unix_now())
                .bind(user_id)
                .execute(db)
                .await?;
        });
        // Keys remember their user as it was, sign-in time included.
        self.auth_cache.forget_all();
        Ok(())
    }

    /// Deletes a user and everything that is only theirs (subscriptions, states, bookmarks,
    /// keys, sessions, groups). Shared feeds and items stay; a feed left without subscribers is
    /// marked orphaned so retention can collect it (F17, F28). The last active administrator
    /// is never deleted (`Conflict`), also when two deletions race (see
    /// [`Store::set_user_flags`]).
    pub async fn delete_user(&self, user_id: i64) -> Result<()> {
        let now = unix_now();
        let serialize = self.serialize_admin_changes_sql();
        let deleted = in_tx!(self, |tx| {
            sqlx::query(serialize).execute(&mut *tx).await?;
            let admins: Vec<i64> = sqlx::query_scalar(ACTIVE_ADMINS)
                .fetch_all(&mut *tx)
                .await?;
            if admins == [user_id] {
                return Err(last_admin());
            }
            // Subscriptions reference groups without cascade, so they go first.
            sqlx::query("DELETE FROM subscriptions WHERE user_id = $1")
                .bind(user_id)
                .execute(&mut *tx)
                .await?;
            let deleted = sqlx::query("DELETE FROM users WHERE id = $1")
                .bind(user_id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            sqlx::query(crate::feeds::MARK_ORPHANS)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            deleted
        });
        self.auth_cache.forget_all();
        if deleted == 0 {
            return Err(StoreError::NotFound("user"));
        }
        Ok(())
    }

    /// Stores the hash of a new one-time setup token, replacing any earlier one.
    pub async fn set_setup_token_hash(&self, token_sha256: &str) -> Result<()> {
        with_db!(self, write, |db| {
            sqlx::query(
                "INSERT INTO system_settings (key, value, updated_at) VALUES ($1, $2, $3)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            )
            .bind(SETUP_TOKEN_KEY)
            .bind(token_sha256)
            .bind(unix_now())
            .execute(db)
            .await?;
        });
        Ok(())
    }

    /// The stored setup token hash, if a setup is pending.
    pub async fn setup_token_hash(&self) -> Result<Option<String>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, String>("SELECT value FROM system_settings WHERE key = $1")
                .bind(SETUP_TOKEN_KEY)
                .fetch_optional(db)
                .await?
        }))
    }

    /// Forgets the setup token, once the first administrator exists.
    pub async fn clear_setup_token(&self) -> Result<()> {
        with_db!(self, write, |db| {
            sqlx::query("DELETE FROM system_settings WHERE key = $1")
                .bind(SETUP_TOKEN_KEY)
                .execute(db)
                .await?;
        });
        Ok(())
    }

    /// The user's groups, in their order.
    pub async fn list_groups(&self, user_id: i64) -> Result<Vec<Group>> {
        let rows: Vec<(i64, String, i64, bool)> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT id, name, position, is_default FROM feed_groups
                 WHERE user_id = $1 ORDER BY is_default DESC, position, name, id",
            )
            .bind(user_id)
            .fetch_all(db)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|(id, name, position, is_default)| Group {
                id,
                name,
                position,
                is_default,
            })
            .collect())
    }

    /// Creates a group for the user.
    pub async fn create_group(&self, user_id: i64, name: &str) -> Result<Group> {
        let name = group_name(name)?;
        let result = with_db!(self, write, |db| {
            sqlx::query_as::<_, (i64, i64)>(
                "INSERT INTO feed_groups (user_id, name, position, is_default, created_at)
                 VALUES ($1, $2,
                         (SELECT COALESCE(MAX(position), 0) + 1 FROM feed_groups WHERE user_id = $1),
                         FALSE, $3)
                 RETURNING id, position",
            )
            .bind(user_id)
            .bind(&name)
            .bind(unix_now())
            .fetch_one(db)
            .await
        });
        match result {
            Ok((id, position)) => Ok(Group {
                id,
                name,
                position,
                is_default: false,
            }),
            Err(e) if StoreError::is_unique_violation(&e) => Err(StoreError::Conflict(format!(
                "a group named {name:?} already exists"
            ))),
            Err(e) => Err(e.into()),
        }
    }

    /// Renames and/or moves one of the user's groups.
    pub async fn update_group(
        &self,
        user_id: i64,
        group_id: i64,
        name: Option<&str>,
        position: Option<i64>,
    ) -> Result<Group> {
        let name = name.map(group_name).transpose()?;
        let result = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE feed_groups SET name = COALESCE($1, name), position = COALESCE($2, position)
                 WHERE id = $3 AND user_id = $4",
            )
            .bind(&name)
            .bind(position)
            .bind(group_id)
            .bind(user_id)
            .execute(db)
            .await
            .map(|done| done.rows_affected())
        });
        match result {
            Ok(0) => Err(StoreError::NotFound("group")),
            Ok(_) => self
                .list_groups(user_id)
                .await?
                .into_iter()
                .find(|g| g.id == group_id)
                .ok_or(StoreError::NotFound("group")),
            Err(e) if StoreError::is_unique_violation(&e) => Err(StoreError::Conflict(format!(
                "a group named {:?} already exists",
                name.unwrap_or_default()
            ))),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes one of the user's groups; its subscriptions move to the default group. The
    /// default group itself cannot be deleted.
    pub async fn delete_group(&self, user_id: i64, group_id: i64) -> Result<()> {
        in_tx!(self, |tx| {
            let is_default: Option<bool> = sqlx::query_scalar(
                "SELECT is_default FROM feed_groups WHERE id = $1 AND user_id = $2",
            )
            .bind(group_id)
            .bind(user_id)
            .fetch_optional(&mut *tx)
            .await?;
            match is_default {
                None => return Err(StoreError::NotFound("group")),
                Some(true) => {
                    return Err(StoreError::Invalid(
                        "the default group cannot be deleted".into(),
                    ));
                }
                Some(false) => {}
            }
            sqlx::query(
                "UPDATE subscriptions SET group_id =
                    (SELECT id FROM feed_groups WHERE user_id = $1 AND is_default = TRUE)
                 WHERE user_id = $1 AND group_id = $2",
            )
            .bind(user_id)
            .bind(group_id)
            .execute(&mut *tx)
            .await?;
            sqlx::query("DELETE FROM feed_groups WHERE id = $1")
                .bind(group_id)
                .execute(&mut *tx)
                .await?;
        });
        Ok(())
    }

    /// The id of the user's default group.
    pub async fn default_group_id(&self, user_id: i64) -> Result<i64> {
        let id: Option<i64> = with_db!(self, read, |db| {
            sqlx::query_scalar(
                "SELECT id FROM feed_groups WHERE user_id = $1 AND is_default = TRUE",
            )
            .bind(user_id)
            .fetch_optional(db)
            .await?
        });
        id.ok_or(StoreError::NotFound("user"))
    }
}

/// The keys of users that existed before names had keys, `(id, username)` by id: each name's
/// [`username_key`], except that when two names share one, the older account keeps it and
/// the newer gets `KEY#ID`. No typed name has a `#`, so that key reaches nobody by accident,
/// and those accounts sign in with their exact names (see [`Store::user_credentials`]). A
/// stored name the key rules refuse (none should exist) is keyed by its lower case.
pub(crate) fn keys_of_existing_users(users: &[(i64, String)]) -> Vec<(i64, String)> {
    let mut taken = std::collections::HashSet::new();
    users
        .iter()
        .map(|(id, name)| {
            let key = username_key(name).unwrap_or_else(|_| name.trim().to_lowercase());
            let key = if taken.contains(&key) {
                tracing::warn!(
                    user = %name,
                    "another user's name has the same key; this user signs in with the exact name"
                );
                format!("{key}#{id}")
            } else {
                key
            };
            taken.insert(key.clone());
            (*id, key)
        })
        .collect()
}

/// The refusal of a name whose key another account has.
pub(crate) fn name_taken(username: &str) -> StoreError {
    StoreError::Conflict(format!(
        "a user named {username} already exists (names are compared ignoring case, letter \
         width and accent composition)"
    ))
}

fn last_admin() -> StoreError {
    StoreError::Conflict(
        "this is the last active administrator, who cannot be demoted, disabled or deleted".into(),
    )
}

fn group_name(name: &str) -> Result<String> {
    // Names from OPML files reach here unchecked by the API: control characters go.
    let name = crate::text::strip_control_chars(name)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if name.is_empty() {
        return Err(StoreError::Invalid("the group name is empty".into()));
    }
    if name.chars().count() > 100 {
        return Err(StoreError::Invalid(
            "the group name is longer than 100 characters".into(),
        ));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_fold_case_width_and_composition() {
        for (name, key) in [
            ("Jos\u{e9}", "jos\u{e9}"),
            ("jose\u{301}", "jos\u{e9}"),
            ("\u{ff2a}\u{ff2f}\u{ff33}\u{c9}", "jos\u{e9}"),
            ("Stra\u{df}e", "strasse"),
            ("\u{1e9e}", "ss"),
            (
                "\u{3a3}\u{3bf}\u{3c6}\u{3af}\u{3b1}\u{3c2}",
                "\u{3c3}\u{3bf}\u{3c6}\u{3af}\u{3b1}\u{3c3}",
            ),
            ("ｶﾀｶﾅ", "カタカナ"),
            ("  Ann.B-c_d@x ", "ann.b-c_d@x"),
        ] {
            assert_eq!(username_key(name).unwrap(), key, "{name:?}");
        }
        for bad in ["", " ", "a b", ".ann", "a/b", "\u{301}a", &"a".repeat(65)] {
            assert!(username_key(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn existing_names_sharing_a_key_get_distinct_keys() {
        let users = [
            (1, "strasse".to_string()),
            (2, "stra\u{df}e".to_string()),
            (3, "ann".to_string()),
        ];
        assert_eq!(
            keys_of_existing_users(&users),
            [
                (1, "strasse".to_string()),
                (2, "strasse#2".to_string()),
                (3, "ann".to_string())
            ]
        );
    }
}
