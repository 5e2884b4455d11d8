//! The one path every received message takes, whichever way it came: read with
//! `tidings-mail` (off the async threads: a large message is seconds of CPU in a debug
//! build), then stored for each recipient as an item of their feed of its sender.

use tidings_mail::{MailError, MailMessage, read_message};
use tidings_store::{MailDelivery, MailSender, NewItem, StoreError};

use crate::base::state::AppState;

/// Why a message was not delivered.
#[derive(Debug, thiserror::Error)]
pub enum DeliverError {
    /// The message could not be read (not a message, no sender).
    #[error("the message cannot be read: {0}")]
    Unreadable(#[from] MailError),
    /// The database failed; the sender should try again later.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Reading the message stopped unexpectedly.
    #[error("reading the message failed")]
    Crashed,
}

/// The user an address belongs to, when it is one of this installation's addresses and is not
/// revoked.
pub async fn recipient(state: &AppState, address: &str) -> Result<Option<i64>, StoreError> {
    match state.config.mail.token_of(address) {
        Some(token) => state.store.mail_recipient(&token).await,
        None => Ok(None),
    }
}

/// Reads `raw` and delivers it to each user of `users` (each once).
pub async fn deliver(
    state: &AppState,
    users: &[i64],
    raw: Vec<u8>,
) -> Result<Vec<MailDelivery>, DeliverError> {
    let sanitizer = state.fetcher.sanitizer();
    let message = tokio::task::spawn_blocking(move || read_message(&raw, &sanitizer))
        .await
        .map_err(|_| DeliverError::Crashed)??;
    let item = item_of(&message);
    let mut users = users.to_vec();
    users.sort_unstable();
    users.dedup();
    let mut delivered = Vec::with_capacity(users.len());
    for user_id in users {
        let feed_url = feed_url_of(&message, user_id);
        let sender = MailSender {
            key: &message.sender.key,
            feed_url: &feed_url,
            title: &message.sender.name,
        };
        let delivery = state.store.deliver_mail(user_id, &sender, &item).await?;
        tracing::info!(
            user = user_id,
            feed = delivery.feed_id,
            new_feed = delivery.new_feed,
            new_item = delivery.new_item,
            "delivered a message from {}",
            message.sender.key
        );
        delivered.push(delivery);
    }
    Ok(delivered)
}

/// The item a message becomes: its subject, author and date, its body with the footer of
/// attachments and unsubscribe links, its `Message-ID` as the guid (so that the same message
/// delivered twice is one item).
fn item_of(message: &MailMessage) -> NewItem {
    NewItem {
        guid: message.message_id.clone(),
        title: message.subject.clone(),
        author: message.author.clone(),
        content: message.item_html(),
        published: message.date.map(|d| d.timestamp()),
        ..NewItem::default()
    }
}

/// The URL a sender's feed is created with: `mailto:` the From address, with the list's id
/// when there is one, and the user (feeds are one row per URL, and a user's mail is theirs
/// alone).
fn feed_url_of(message: &MailMessage, user_id: i64) -> String {
    let mut url = String::from("mailto:");
    url.push_str(&escape(
        message.sender.address.as_deref().unwrap_or_default(),
    ));
    url.push('?');
    if let Some(list) = &message.sender.list_id {
        url.push_str("list-id=");
        url.push_str(&escape(list));
        url.push('&');
    }
    url.push_str(&format!("for={user_id}"));
    url
}

/// `text` with every character but letters, digits and `.@_+-` percent-encoded.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b".@_+-".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn feed_urls_escape_what_a_mailto_url_reserves() {
        assert_eq!(escape("a+b@example.com"), "a+b@example.com");
        assert_eq!(escape("we?ird&x@ex"), "we%3Fird%26x@ex");
    }
}
