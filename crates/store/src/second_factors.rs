//! Second factors (issue 19): TOTP secrets with the last step used, single-use recovery codes,
//! WebAuthn passkeys, and the short-lived challenges of a sign-in in progress. The checks
//! themselves (codes, signatures) live in the server; this module stores and spends them, each
//! spending one conditional statement so that two requests racing with the same code or
//! challenge cannot both succeed.

use crate::{Result, Store, StoreError, in_tx, unix_now, with_db};

/// A user's TOTP secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TotpSecret {
    /// The raw secret (20 random bytes for secrets made by tidings).
    pub secret: Vec<u8>,
    /// When a first valid code confirmed it; until then sign-in does not ask for codes.
    pub confirmed_at: Option<i64>,
    /// The newest time step whose code was accepted (-1 for none).
    pub last_step: i64,
}

/// A registered passkey (WebAuthn credential).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passkey {
    /// The passkey's id in tidings.
    pub id: i64,
    /// Its user.
    pub user_id: i64,
    /// The credential id, base64url without padding, as the browser names it.
    pub credential_id: String,
    /// The public key as a COSE_Key (CBOR).
    pub public_key: Vec<u8>,
    /// The authenticator's signature counter at its last use (0 when it keeps none).
    pub sign_count: i64,
    /// The name its user gave it.
    pub name: String,
    /// When it was registered.
    pub created_at: i64,
    /// When it last signed someone in.
    pub last_used_at: Option<i64>,
}

/// Which second factors a user has turned on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SecondFactors {
    /// Whether a confirmed TOTP secret exists.
    pub totp: bool,
    /// How many passkeys are registered.
    pub passkeys: i64,
    /// How many recovery codes are still unused.
    pub recovery_codes_left: i64,
}

impl SecondFactors {
    /// Whether signing in with a password needs a second step.
    pub fn required(&self) -> bool {
        self.totp || self.passkeys > 0
    }
}

/// What a short-lived sign-in challenge is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChallengePurpose {
    /// A password was accepted; the second factor is awaited.
    SecondFactor,
    /// A WebAuthn assertion is awaited (password-less, or as the second factor).
    PasskeySignIn,
    /// A WebAuthn registration is awaited from a signed-in user.
    PasskeyRegister,
}

impl ChallengePurpose {
    fn as_str(self) -> &'static str {
        match self {
            ChallengePurpose::SecondFactor => "second_factor",
            ChallengePurpose::PasskeySignIn => "passkey_sign_in",
            ChallengePurpose::PasskeyRegister => "passkey_register",
        }
    }
}

/// A challenge to store ([`Store::create_auth_challenge`]).
#[derive(Debug, Clone, Copy)]
pub struct NewAuthChallenge<'a> {
    /// The SHA-256 of the token the browser holds.
    pub token_hash: &'a str,
    /// What it is for.
    pub purpose: ChallengePurpose,
    /// The user it belongs to, if known yet.
    pub user_id: Option<i64>,
    /// The WebAuthn challenge, if any.
    pub challenge: Option<&'a str>,
    /// When it ends (Unix seconds).
    pub expires_at: i64,
    /// The address of the client that asked for it (its rate-limit key), for the cap per
    /// client.
    pub client_key: &'a str,
}

/// How many live challenges the table holds: sign-in state is created by clients that have
/// not authenticated, so it is bounded in rows as well as in rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChallengeLimits {
    /// Per client address; beyond it, the address's oldest challenges are dropped (a client
    /// can only push out its own, or its network's).
    pub per_client: i64,
    /// In all; beyond it, new challenges are refused until old ones are used or expire
    /// (dropping others' would let a flood end every sign-in in progress).
    pub total: i64,
}

/// Whether [`Store::create_auth_challenge`] stored the challenge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChallengeStored {
    /// Stored.
    Stored,
    /// Refused: the table holds [`ChallengeLimits::total`] live challenges.
    Full,
}

/// A live challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthChallenge {
    /// The user it belongs to, if known yet (a password-less sign-in learns it from the
    /// passkey).
    pub user_id: Option<i64>,
    /// The WebAuthn challenge (base64url), if any.
    pub challenge: Option<String>,
    /// Wrong answers given so far.
    pub attempts: i64,
    /// When it ends.
    pub expires_at: i64,
}

type PasskeyRow = (i64, i64, String, Vec<u8>, i64, String, i64, Option<i64>);

fn passkey(row: PasskeyRow) -> Passkey {
    Passkey {
        id: row.0,
        user_id: row.1,
        credential_id: row.2,
        public_key: row.3,
        sign_count: row.4,
        name: row.5,
        created_at: row.6,
        last_used_at: row.7,
    }
}

type ChallengeRow = (Option<i64>, Option<String>, i64, i64);

fn challenge_of_row((user_id, challenge, attempts, expires_at): ChallengeRow) -> AuthChallenge {
    AuthChallenge {
        user_id,
        challenge,
        attempts,
        expires_at,
    }
}

const PASSKEY_COLUMNS: &str =
    "id, user_id, credential_id, public_key, sign_count, name, created_at, last_used_at";

impl Store {
    /// The user's TOTP secret, confirmed or not.
    pub async fn totp_secret(&self, user_id: i64) -> Result<Option<TotpSecret>> {
        let row = with_db!(self, read, |db| {
            sqlx::query_as::<_, (Vec<u8>, Option<i64>, i64)>(
                "SELECT secret, confirmed_at, last_step FROM totp_secrets WHERE user_id = $1",
            )
            .bind(user_id)
            .fetch_optional(db)
            .await?
        });
        Ok(row.map(|(secret, confirmed_at, last_step)| TotpSecret {
            secret,
            confirmed_at,
            last_step,
        }))
    }

    /// Starts (or restarts) TOTP enrolment with a new, unconfirmed secret. Refused with
    /// [`StoreError::Conflict`] when a confirmed secret exists: that one is turned off first.
    pub async fn begin_totp(&self, user_id: i64, secret: &[u8]) -> Result<()> {
        let written = with_db!(self, write, |db| {
            sqlx::query(
                "INSERT INTO totp_secrets (user_id, secret, confirmed_at, last_step, created_at)
                 VALUES ($1, $2, NULL, -1, $3)
                 ON CONFLICT (user_id) DO UPDATE
                     SET secret = excluded.secret, last_step = -1, created_at = excluded.created_at
                     WHERE totp_secrets.confirmed_at IS NULL",
            )
            .bind(user_id)
            .bind(secret)
            .bind(unix_now())
            .execute(db)
            .await?
            .rows_affected()
        });
        if written == 0 {
            return Err(StoreError::Conflict(
                "one-time codes are already on for this account".into(),
            ));
        }
        Ok(())
    }

    /// Confirms the pending TOTP secret with the step of a valid code; false when there is no
    /// pending secret (none, or already confirmed).
    pub async fn confirm_totp(&self, user_id: i64, step: i64) -> Result<bool> {
        let written = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE totp_secrets SET confirmed_at = $2, last_step = $3
                 WHERE user_id = $1 AND confirmed_at IS NULL",
            )
            .bind(user_id)
            .bind(unix_now())
            .bind(step)
            .execute(db)
            .await?
            .rows_affected()
        });
        Ok(written == 1)
    }

    /// Spends a confirmed TOTP secret's `step`: true only when it is newer than every step
    /// accepted before, so the same code (or an older one) never works twice.
    pub async fn use_totp_step(&self, user_id: i64, step: i64) -> Result<bool> {
        let written = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE totp_secrets SET last_step = $2
                 WHERE user_id = $1 AND confirmed_at IS NOT NULL AND last_step < $2",
            )
            .bind(user_id)
            .bind(step)
            .execute(db)
            .await?
            .rows_affected()
        });
        Ok(written == 1)
    }

    /// Removes the user's TOTP secret (confirmed or pending); true when one existed.
    pub async fn delete_totp(&self, user_id: i64) -> Result<bool> {
        let deleted = with_db!(self, write, |db| {
            sqlx::query("DELETE FROM totp_secrets WHERE user_id = $1")
                .bind(user_id)
                .execute(db)
                .await?
                .rows_affected()
        });
        Ok(deleted > 0)
    }

    /// Replaces every recovery code of the user with these hashes (in one transaction, so
    /// the old codes stop working exactly when the new ones start).
    pub async fn replace_recovery_codes(&self, user_id: i64, hashes: &[String]) -> Result<()> {
        crate::in_tx!(self, |tx| {
            sqlx::query("DELETE FROM recovery_codes WHERE user_id = $1")
                .bind(user_id)
                .execute(&mut *tx)
                .await?;
            for hash in hashes {
                sqlx::query("INSERT INTO recovery_codes (user_id, code_hash) VALUES ($1, $2)")
                    .bind(user_id)
                    .bind(hash)
                    .execute(&mut *tx)
                    .await?;
            }
        });
        Ok(())
    }

    /// Spends one unused recovery code by its hash; false when it is unknown or used.
    pub async fn use_recovery_code(&self, user_id: i64, code_hash: &str) -> Result<bool> {
        let written = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE recovery_codes SET used_at = $3
                 WHERE id = (SELECT id FROM recovery_codes
                             WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL
                             LIMIT 1)
                   AND used_at IS NULL",
            )
            .bind(user_id)
            .bind(code_hash)
            .bind(unix_now())
            .execute(db)
            .await?
            .rows_affected()
        });
        Ok(written == 1)
    }

    /// Removes every recovery code of the user (once no second factor is left).
    pub async fn delete_recovery_codes(&self, user_id: i64) -> Result<()> {
        with_db!(self, write, |db| {
            sqlx::query("DELETE FROM recovery_codes WHERE user_id = $1")
                .bind(user_id)
                .execute(db)
                .await?
                .rows_affected()
        });
        Ok(())
    }

    /// Which second factors the user has.
    pub async fn second_factors(&self, user_id: i64) -> Result<SecondFactors> {
        let (totp, passkeys, recovery_codes_left) = with_db!(self, read, |db| {
            sqlx::query_as::<_, (i64, i64, i64)>(
                "SELECT
                    (SELECT COUNT(*) FROM totp_secrets
                     WHERE user_id = $1 AND confirmed_at IS NOT NULL),
                    (SELECT COUNT(*) FROM passkeys WHERE user_id = $1),
                    (SELECT COUNT(*) FROM recovery_codes WHERE user_id = $1 AND used_at IS NULL)",
            )
            .bind(user_id)
            .fetch_one(db)
            .await?
        });
        Ok(SecondFactors {
            totp: totp > 0,
            passkeys,
            recovery_codes_left,
        })
    }

    /// Registers a passkey; [`StoreError::Conflict`] when the credential is registered
    /// already (to this user or another).
    pub async fn add_passkey(
        &self,
        user_id: i64,
        credential_id: &str,
        public_key: &[u8],
        sign_count: i64,
        name: &str,
    ) -> Result<Passkey> {
        let sql = format!(
            "INSERT INTO passkeys (user_id, credential_id, public_key, sign_count, name, created_at)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING {PASSKEY_COLUMNS}"
        );
        let inserted = with_db!(self, write, |db| {
            sqlx::query_as::<_, PasskeyRow>(sqlx::AssertSqlSafe(sql))
                .bind(user_id)
                .bind(credential_id)
                .bind(public_key)
                .bind(sign_count)
                .bind(name)
                .bind(unix_now())
                .fetch_one(db)
                .await
        });
        match inserted {
            Ok(row) => Ok(passkey(row)),
            Err(e) if StoreError::is_unique_violation(&e) => Err(StoreError::Conflict(
                "this passkey is registered already".into(),
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// The user's passkeys, oldest first.
    pub async fn passkeys(&self, user_id: i64) -> Result<Vec<Passkey>> {
        let sql = format!(
            "SELECT {PASSKEY_COLUMNS} FROM passkeys WHERE user_id = $1 ORDER BY created_at, id"
        );
        let rows = with_db!(self, read, |db| {
            sqlx::query_as::<_, PasskeyRow>(sqlx::AssertSqlSafe(sql))
                .bind(user_id)
                .fetch_all(db)
                .await?
        });
        Ok(rows.into_iter().map(passkey).collect())
    }

    /// The passkey with this credential id, whoever's it is.
    pub async fn passkey_by_credential(&self, credential_id: &str) -> Result<Option<Passkey>> {
        let sql = format!("SELECT {PASSKEY_COLUMNS} FROM passkeys WHERE credential_id = $1");
        let row = with_db!(self, read, |db| {
            sqlx::query_as::<_, PasskeyRow>(sqlx::AssertSqlSafe(sql))
                .bind(credential_id)
                .fetch_optional(db)
                .await?
        });
        Ok(row.map(passkey))
    }

    /// Records a passkey's use with the authenticator's new counter. Counters only grow: the
    /// update is refused (false) when another sign-in already stored this counter or a later
    /// one, which is how a cloned authenticator shows itself. Authenticators that keep no
    /// counter (synced passkeys) always send 0, which is accepted while the stored one is 0.
    pub async fn use_passkey(&self, id: i64, sign_count: i64) -> Result<bool> {
        let written = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE passkeys SET sign_count = $2, last_used_at = $3
                 WHERE id = $1 AND (($2 = 0 AND sign_count = 0) OR sign_count < $2)",
            )
            .bind(id)
            .bind(sign_count)
            .bind(unix_now())
            .execute(db)
            .await?
            .rows_affected()
        });
        Ok(written == 1)
    }

    /// Renames one of the user's passkeys (the caller checked the name); `None` when the user
    /// has no passkey with this id, so that another user's id is not told apart from a
    /// missing one.
    pub async fn rename_passkey(
        &self,
        user_id: i64,
        id: i64,
        name: &str,
    ) -> Result<Option<Passkey>> {
        let sql = format!(
            "UPDATE passkeys SET name = $3 WHERE id = $1 AND user_id = $2
             RETURNING {PASSKEY_COLUMNS}"
        );
        let row = with_db!(self, write, |db| {
            sqlx::query_as::<_, PasskeyRow>(sqlx::AssertSqlSafe(sql))
                .bind(id)
                .bind(user_id)
                .bind(name)
                .fetch_optional(db)
                .await?
        });
        Ok(row.map(passkey))
    }

    /// Removes one of the user's passkeys; false when the user has no passkey with this id.
    pub async fn delete_passkey(&self, user_id: i64, id: i64) -> Result<bool> {
        let deleted = with_db!(self, write, |db| {
            sqlx::query("DELETE FROM passkeys WHERE id = $1 AND user_id = $2")
                .bind(id)
                .bind(user_id)
                .execute(db)
                .await?
                .rows_affected()
        });
        Ok(deleted > 0)
    }

    /// Stores a challenge under the hash of the token its browser holds, within `limits`:
    /// expired challenges are dropped on the way, and so are the client's oldest beyond
    /// [`ChallengeLimits::per_client`]; when the table still holds
    /// [`ChallengeLimits::total`] live challenges, nothing is stored and the answer is
    /// [`ChallengeStored::Full`]. Two requests racing can overshoot the total by one each.
    pub async fn create_auth_challenge(
        &self,
        new: &NewAuthChallenge<'_>,
        limits: ChallengeLimits,
    ) -> Result<ChallengeStored> {
        let now = unix_now();
        let keep_of_client = (limits.per_client - 1).max(0);
        let stored = in_tx!(self, |tx| {
            sqlx::query("DELETE FROM auth_challenges WHERE expires_at < $1")
                .bind(now)
                .execute(&mut *tx)
                .await?;
            // The client's newest `keep_of_client` stay; the new one makes the cap.
            sqlx::query(
                "DELETE FROM auth_challenges WHERE client_key = $1 AND token_hash NOT IN (
                     SELECT token_hash FROM auth_challenges WHERE client_key = $1
                     ORDER BY expires_at DESC, token_hash DESC LIMIT $2)",
            )
            .bind(new.client_key)
            .bind(keep_of_client)
            .execute(&mut *tx)
            .await?;
            let live: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM auth_challenges")
                .fetch_one(&mut *tx)
                .await?;
            if live >= limits.total {
                ChallengeStored::Full
            } else {
                sqlx::query(
                    "INSERT INTO auth_challenges
                         (token_hash, purpose, user_id, challenge, expires_at, client_key)
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(new.token_hash)
                .bind(new.purpose.as_str())
                .bind(new.user_id)
                .bind(new.challenge)
                .bind(new.expires_at)
                .bind(new.client_key)
                .execute(&mut *tx)
                .await?;
                ChallengeStored::Stored
            }
        });
        Ok(stored)
    }

    /// How many challenges are stored, live or not yet swept (for tests and checks of the
    /// bounds).
    pub async fn count_auth_challenges(&self) -> Result<i64> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM auth_challenges")
                .fetch_one(db)
                .await?
        }))
    }

    /// The live challenge of this purpose under `token_hash`, left in place.
    pub async fn auth_challenge(
        &self,
        token_hash: &str,
        purpose: ChallengePurpose,
    ) -> Result<Option<AuthChallenge>> {
        let row = with_db!(self, read, |db| {
            sqlx::query_as::<_, ChallengeRow>(
                "SELECT user_id, challenge, attempts, expires_at FROM auth_challenges
                 WHERE token_hash = $1 AND purpose = $2 AND expires_at >= $3",
            )
            .bind(token_hash)
            .bind(purpose.as_str())
            .bind(unix_now())
            .fetch_optional(db)
            .await?
        });
        Ok(row.map(challenge_of_row))
    }

    /// Takes the live challenge of this purpose away (single use): only one of two requests
    /// racing with the same token gets it.
    pub async fn take_auth_challenge(
        &self,
        token_hash: &str,
        purpose: ChallengePurpose,
    ) -> Result<Option<AuthChallenge>> {
        let row = with_db!(self, write, |db| {
            sqlx::query_as::<_, ChallengeRow>(
                "DELETE FROM auth_challenges
                 WHERE token_hash = $1 AND purpose = $2 AND expires_at >= $3
                 RETURNING user_id, challenge, attempts, expires_at",
            )
            .bind(token_hash)
            .bind(purpose.as_str())
            .bind(unix_now())
            .fetch_optional(db)
            .await?
        });
        Ok(row.map(challenge_of_row))
    }

    /// Counts a wrong answer against a challenge and answers the attempts so far (0 when the
    /// challenge is gone).
    pub async fn count_auth_challenge_attempt(&self, token_hash: &str) -> Result<i64> {
        let attempts = with_db!(self, write, |db| {
            sqlx::query_scalar::<_, i64>(
                "UPDATE auth_challenges SET attempts = attempts + 1
                 WHERE token_hash = $1 RETURNING attempts",
            )
            .bind(token_hash)
            .fetch_optional(db)
            .await?
        });
        Ok(attempts.unwrap_or(0))
    }

    /// Ends a challenge (signed in, or too many wrong answers).
    pub async fn delete_auth_challenge(&self, token_hash: &str) -> Result<()> {
        with_db!(self, write, |db| {
            sqlx::query("DELETE FROM auth_challenges WHERE token_hash = $1")
                .bind(token_hash)
                .execute(db)
                .await?
                .rows_affected()
        });
        Ok(())
    }
}
