//! Fetching for tidings: the SSRF-guarded HTTP client, the pure scheduling policy and the
//! per-host limiter (rate, cap, slow budget). Nothing here knows about the database; the
//! worker ties these to the store.
//!
//! A worker's round for one feed:
//!
//! 1. wait for a slot with [`HostLimiter::acquire`] (a rate, a cap and a slow budget per host);
//! 2. [`GuardedClient::fetch`] a [`FetchRequest`] carrying the stored ETag / Last-Modified
//!    and the feed's proxy;
//! 3. parse the body of a 2xx response (a 304 has none);
//! 4. turn the result into an [`Outcome`] with [`FetchResponse::outcome`] or
//!    [`FetchError::outcome`] and let [`decide`] say when to come back, what the feed's
//!    status is and whether its URL moved.
//!
//! ```no_run
//! use std::time::Duration;
//! use tidings_fetch::{
//!     ClientConfig, FailureCounts, FetchRequest, GuardedClient, HostLimiter, ParseResult,
//!     PolicyConfig, decide, effective_interval,
//! };
//!
//! # async fn round() -> Result<(), Box<dyn std::error::Error>> {
//! let client = GuardedClient::new(ClientConfig::default())?;
//! let limiter = HostLimiter::default();
//! let request = FetchRequest::parse("https://example.com/feed.xml")?
//!     .with_validators(Some("\"v1\"".into()), None);
//! // Waits for the host's rate and cap; a request still running after 2 s moves to the
//! // host's slow budget so that its other feeds go on.
//! let host = request.url.host_str().unwrap_or_default();
//! let outcome = match limiter.run(host, client.fetch(&request)).await {
//!     Ok(response) if response.is_success() => {
//!         // parse response.body (charset: response.charset) here
//!         response.outcome(ParseResult::Parsed)
//!     }
//!     Ok(response) => response.outcome(ParseResult::Skipped),
//!     Err(error) => error.outcome(),
//! };
//! let decision = decide(
//!     &PolicyConfig::default(),
//!     chrono::Utc::now(),
//!     &outcome,
//!     FailureCounts::default(),
//!     effective_interval([60, 120]),
//! );
//! println!("{:?} until {:?}", decision.status, decision.next_check);
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod address;
pub mod client;
pub mod limiter;
pub mod policy;
pub mod redact;
mod resolve;

pub use address::{
    AddressClass, AddressPolicy, InvalidAllowed, IpNetwork, PROXY_URL_FORMS, Refusal, classify,
    is_metadata_name, parse_allowed,
};
pub use client::{
    ClientConfig, FetchError, FetchRequest, FetchResponse, GuardedClient, PostResponse,
};
pub use limiter::{HostLimiter, HostLimits, HostPermit};
pub use policy::{
    CacheHints, Decision, FailureCounts, FailureKind, FeedStatus, NextCheck, Outcome, ParseResult,
    PolicyConfig, decide, effective_interval,
};
pub use redact::redact_url;
