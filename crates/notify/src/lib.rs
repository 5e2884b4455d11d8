//! Notifications of new items to webhooks (F43): Discord, Slack and a generic JSON webhook.
//!
//! Pure parts and the one network call, with no storage:
//! - [`target`]: the channel kinds and their URL forms ([`validate_url`]); where Discord and
//!   Slack live ([`Endpoints`], configurable so that tests and air-gapped installations can
//!   point them at stand-ins).
//! - [`rules`]: which items a channel gets (feeds, groups, keywords through the search
//!   tokenizer of `tidings-text`).
//! - [`payload`]: the JSON each kind receives, several items batched into one message within
//!   the service's limits.
//! - [`send`]: one delivery through the SSRF-guarded client of `tidings-fetch`, and what the
//!   answer means (sent, rate limited with the wait asked for, failed for good or for now).
//! - [`policy`]: pacing, back-off and the circuit breaker per channel.
//! - [`sign`]: generic webhooks' secrets and the `X-Tidings-Signature` header.
//!
//! The queue, the delivery log and the worker that drives them live in `tidings-store` and
//! `tidings-worker`.

#![warn(missing_docs)]

pub mod payload;
pub mod policy;
pub mod rules;
pub mod send;
pub mod sign;
pub mod target;

pub use payload::{Channel, MAX_ITEMS_PER_MESSAGE, Notice, build_payload, test_notice};
pub use policy::{DeliveryPolicy, Verdict};
pub use rules::{Keyword, MAX_KEYWORDS, Rules, RulesError, item_tokens, keywords_match};
pub use send::{Answer, DeliveryError, deliver};
pub use sign::{SIGNATURE_HEADER, SigningSecret};
pub use target::{Endpoints, Kind, UrlError, redact, validate_url};
