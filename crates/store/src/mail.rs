//! Newsletters by email (issue 36): users' receiving addresses, and the per-user feed of each
//! sender that delivered mail goes to. A delivered message is stored as an item through
//! [`Store::store_fetch`], the path fetched feeds take, so search, tags, rules, summaries,
//! notifications and the sync APIs treat it as any item.

use crate::{FeedMetadata, FetchWrites, NewItem, Result, Store, StoreError, in_tx, unix_now};

/// The group mail feeds are put in when they are created.
pub const NEWSLETTERS_GROUP: &str = "Newsletters";

/// The longest label of an address.
pub const MAX_MAIL_LABEL_CHARS: usize = 32;

/// A user's receiving address.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MailAddress {
    /// The address's id.
    pub id: i64,
    /// Its random local part: `<token>@<domain>`.
    pub token: String,
    /// The label after a `+`, when the user gave one.
    pub label: Option<String>,
    /// When it was created (Unix seconds).
    pub created_at: i64,
}

impl MailAddress {
    /// The address at `domain`: `<token>@<domain>`, or `<token>+<label>@<domain>`.
    pub fn at(&self, domain: &str) -> String {
        match &self.label {
            Some(label) => format!("{}+{label}@{domain}", self.token),
            None => format!("{}@{domain}", self.token),
        }
    }
}

/// The sender a delivered message comes from: the feed it goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailSender<'a> {
    /// The sender's identity (the List-Id, else the From address), lower-cased.
    pub key: &'a str,
    /// The URL the feed is created with (`mailto:…`); an existing feed keeps its own.
    pub feed_url: &'a str,
    /// The feed's title: the sender's name.
    pub title: &'a str,
}

/// What a delivery did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MailDelivery {
    /// The sender's feed.
    pub feed_id: i64,
    /// The user's subscription to it.
    pub subscription_id: i64,
    /// Whether the feed (and its subscription) was created by this delivery.
    pub new_feed: bool,
    /// Whether the message became a new item (`false`: the same message again).
    pub new_item: bool,
}

/// A label as stored: lower-cased; letters, digits, `-`, `_` and `.`, 1 to
/// [`MAX_MAIL_LABEL_CHARS`] characters.
fn check_label(label: &str) -> Result<String> {
    let label = label.trim().to_ascii_lowercase();
    let valid = !label.is_empty()
        && label.len() <= MAX_MAIL_LABEL_CHARS
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !label.starts_with('.')
        && !label.ends_with('.');
    if valid {
        Ok(label)
    } else {
        Err(StoreError::Invalid(format!(
            "a label is 1 to {MAX_MAIL_LABEL_CHARS} letters, digits, '-', '_' or '.' \
             (not at either end), not {label:?}"
        )))
    }
}

impl Store {
    /// Creates a receiving address for the user with the random `token` the caller drew (a
    /// token taken already is a [`StoreError::Conflict`]; draw another).
    pub async fn create_mail_address(
        &self,
        user_id: i64,
        token: &str,
        label: Option<&str>,
    ) -> Result<MailAddress> {
        let label = label.map(check_label).transpose()?;
        let token = token.to_ascii_lowercase();
        let now = unix_now();
        let created = crate::with_db!(self, write, |db| {
            sqlx::query_scalar::<_, i64>(
                "INSERT INTO mail_addresses (user_id, token, label, created_at)
                 VALUES ($1, $2, $3, $4) RETURNING id",
            )
            .bind(user_id)
            .bind(&token)
            .bind(&label)
            .bind(now)
            .fetch_one(db)
            .await
        });
        match created {
            Ok(id) => Ok(MailAddress {
                id,
                token,
                label,
                created_at: now,
            }),
            Err(e) if StoreError::is_unique_violation(&e) => {
                Err(StoreError::Conflict("that address is taken".into()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The user's addresses that are not revoked, oldest first.
    pub async fn list_mail_addresses(&self, user_id: i64) -> Result<Vec<MailAddress>> {
        let rows: Vec<(i64, String, Option<String>, i64)> = crate::with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT id, token, label, created_at FROM mail_addresses
                 WHERE user_id = $1 AND revoked_at IS NULL ORDER BY id",
            )
            .bind(user_id)
            .fetch_all(db)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|(id, token, label, created_at)| MailAddress {
                id,
                token,
                label,
                created_at,
            })
            .collect())
    }

    /// Revokes one of the user's addresses: mail to it is refused from now on, and its token
    /// is never given out again. [`StoreError::NotFound`] when it is not theirs or revoked.
    pub async fn revoke_mail_address(&self, user_id: i64, id: i64) -> Result<()> {
        let revoked = crate::with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE mail_addresses SET revoked_at = $1
                 WHERE id = $2 AND user_id = $3 AND revoked_at IS NULL",
            )
            .bind(unix_now())
            .bind(id)
            .bind(user_id)
            .execute(db)
            .await?
            .rows_affected()
        });
        if revoked == 0 {
            return Err(StoreError::NotFound("mail address"));
        }
        Ok(())
    }

    /// The user an address's token belongs to, when the address exists and is not revoked.
    pub async fn mail_recipient(&self, token: &str) -> Result<Option<i64>> {
        Ok(crate::with_db!(self, read, |db| {
            sqlx::query_scalar(
                "SELECT user_id FROM mail_addresses WHERE token = $1 AND revoked_at IS NULL",
            )
            .bind(token.to_ascii_lowercase())
            .fetch_optional(db)
            .await?
        }))
    }

    /// Delivers a message to the user: into the user's feed of its sender, created (with a
    /// subscription in the [`NEWSLETTERS_GROUP`] group, made when missing) on the sender's
    /// first message, and subscribed again when the user had unsubscribed. The item is stored
    /// by [`Store::store_fetch`], as a fetched feed's items are; the same message delivered
    /// twice (the same `Message-ID`) is one item.
    pub async fn deliver_mail(
        &self,
        user_id: i64,
        sender: &MailSender<'_>,
        item: &NewItem,
    ) -> Result<MailDelivery> {
        let now = unix_now();
        let (feed_id, subscription_id, new_feed) = self.mail_feed_of(user_id, sender, now).await?;
        if new_feed {
            // A subscription made again on a feed with items (the user had unsubscribed): the
            // user's rules act on those as on any backlog that arrives with a subscription.
            // Before the new item, which the rules meet at ingest like any arriving item.
            self.run_rules_on_backlog(user_id, feed_id).await?;
        }
        let written = self
            .store_fetch(
                feed_id,
                std::slice::from_ref(item),
                now,
                &FetchWrites {
                    metadata: Some(FeedMetadata {
                        title: Some(sender.title),
                        ..FeedMetadata::default()
                    }),
                    summaries: true,
                    ..FetchWrites::default()
                },
            )
            .await?;
        Ok(MailDelivery {
            feed_id,
            subscription_id,
            new_feed,
            new_item: written.counts.inserted > 0,
        })
    }

    /// The user's feed of `sender` and their subscription to it, made when missing: `(feed,
    /// subscription, whether the subscription was made now)`.
    async fn mail_feed_of(
        &self,
        user_id: i64,
        sender: &MailSender<'_>,
        now: i64,
    ) -> Result<(i64, i64, bool)> {
        let key = sender.key.to_lowercase();
        Ok(in_tx!(self, |tx| {
            let existing: Option<i64> = sqlx::query_scalar(
                "SELECT feed_id FROM mail_feeds WHERE user_id = $1 AND sender_key = $2",
            )
            .bind(user_id)
            .bind(&key)
            .fetch_optional(&mut *tx)
            .await?;
            let feed_id = match existing {
                Some(feed_id) => {
                    sqlx::query("UPDATE feeds SET orphaned_at = NULL WHERE id = $1")
                        .bind(feed_id)
                        .execute(&mut *tx)
                        .await?;
                    feed_id
                }
                None => {
                    let feed_id: i64 = sqlx::query_scalar(
                        "INSERT INTO feeds (url, title, created_at, updated_at)
                         VALUES ($1, $2, $3, $3) RETURNING id",
                    )
                    .bind(sender.feed_url)
                    .bind(sender.title)
                    .bind(now)
                    .fetch_one(&mut *tx)
                    .await?;
                    crate::feeds::ensure_fetch_state!(tx, feed_id, now);
                    sqlx::query(
                        "INSERT INTO mail_feeds (feed_id, user_id, sender_key) VALUES ($1, $2, $3)",
                    )
                    .bind(feed_id)
                    .bind(user_id)
                    .bind(&key)
                    .execute(&mut *tx)
                    .await?;
                    feed_id
                }
            };
            let subscribed: Option<i64> = sqlx::query_scalar(
                "SELECT id FROM subscriptions WHERE user_id = $1 AND feed_id = $2",
            )
            .bind(user_id)
            .bind(feed_id)
            .fetch_optional(&mut *tx)
            .await?;
            match subscribed {
                Some(id) => (feed_id, id, false),
                None => {
                    sqlx::query(
                        "INSERT INTO feed_groups (user_id, name, position, is_default, created_at)
                         VALUES ($1, $2,
                                 (SELECT COALESCE(MAX(position), 0) + 1 FROM feed_groups
                                  WHERE user_id = $1),
                                 FALSE, $3)
                         ON CONFLICT (user_id, name) DO NOTHING",
                    )
                    .bind(user_id)
                    .bind(NEWSLETTERS_GROUP)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                    let group_id: i64 = sqlx::query_scalar(
                        "SELECT id FROM feed_groups WHERE user_id = $1 AND name = $2",
                    )
                    .bind(user_id)
                    .bind(NEWSLETTERS_GROUP)
                    .fetch_one(&mut *tx)
                    .await?;
                    let id: i64 = sqlx::query_scalar(
                        "INSERT INTO subscriptions (user_id, feed_id, group_id, created_at)
                         VALUES ($1, $2, $3, $4) RETURNING id",
                    )
                    .bind(user_id)
                    .bind(feed_id)
                    .bind(group_id)
                    .bind(now)
                    .fetch_one(&mut *tx)
                    .await?;
                    (feed_id, id, true)
                }
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(check_label(" Shop.JP ").unwrap(), "shop.jp");
        for bad in ["", ".x", "x.", "a b", "a+b", "ä", &"x".repeat(33)] {
            assert!(check_label(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_address_at_a_domain() {
        let mut address = MailAddress {
            id: 1,
            token: "k3x9".into(),
            label: None,
            created_at: 0,
        };
        assert_eq!(address.at("news.example"), "k3x9@news.example");
        address.label = Some("shop".into());
        assert_eq!(address.at("news.example"), "k3x9+shop@news.example");
    }
}
