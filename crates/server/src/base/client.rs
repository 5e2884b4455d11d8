//! Who a request comes from, as the layers in front of the handlers learn it: the client's
//! address and scheme, the slot where the per-user rate limit leaves its decision, the slot
//! where authentication leaves the user's id for the request's log line, and the cookies.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, HeaderValue, header};

use crate::ratelimit::RateDecision;

/// Where a request comes from, as far as the server can tell.
#[derive(Debug, Clone)]
pub struct ClientContext {
    /// The client's address: the peer, or the first untrusted address in
    /// `X-Forwarded-For` when the peer is a trusted proxy.
    pub ip: Option<IpAddr>,
    /// Whether the client reached us over HTTPS (directly or through a trusted proxy).
    pub https: bool,
}

impl ClientContext {
    /// The address as a rate-limit key.
    pub fn key(&self) -> String {
        self.ip
            .map_or_else(|| "unknown".to_string(), |ip| ip.to_string())
    }
}

/// Where the authenticated handler leaves its rate-limit decision, so the headers can be set
/// on whatever response follows.
#[derive(Debug, Clone, Default)]
pub struct RateSlot(pub Arc<Mutex<Option<RateDecision>>>);

impl RateSlot {
    /// Records a decision.
    pub fn set(&self, decision: RateDecision) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(decision);
    }

    /// The decision recorded, if any.
    pub fn get(&self) -> Option<RateDecision> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Sets the `X-RateLimit-Limit / -Remaining / -Reset` headers of one limiter's decision.
pub fn rate_headers(headers: &mut HeaderMap, decision: RateDecision) {
    for (name, value) in [
        ("x-ratelimit-limit", decision.limit.to_string()),
        ("x-ratelimit-remaining", decision.remaining.to_string()),
        ("x-ratelimit-reset", decision.reset_seconds.to_string()),
        ("x-ratelimit-scope", decision.scope.to_string()),
    ] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
}

/// Where authentication leaves the user's id, so the request's log line can name the user.
#[derive(Debug, Clone, Default)]
pub struct RequestUser(Arc<Mutex<Option<i64>>>);

impl RequestUser {
    /// Records the authenticated user.
    pub fn set(&self, user_id: i64) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(user_id);
    }

    /// The user recorded, if any.
    pub fn get(&self) -> Option<i64> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Records the user of the request whose extensions these are, when there is a slot.
pub fn note_user(extensions: &axum::http::Extensions, user_id: i64) {
    if let Some(slot) = extensions.get::<RequestUser>() {
        slot.set(user_id);
    }
}

/// The value of a cookie in the request's `Cookie` headers.
pub fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Headers with one `Cookie` header of this value.
    fn with_cookie(value: &'static str) -> HeaderMap {
        HeaderMap::from_iter([(header::COOKIE, HeaderValue::from_static(value))])
    }

    #[test]
    fn cookies_are_found_among_others() {
        let h = with_cookie("a=1; tidings_session=abc ; b=2");
        assert_eq!(cookie(&h, "tidings_session"), Some("abc"));
        assert_eq!(cookie(&h, "missing"), None);
        assert_eq!(
            cookie(&with_cookie("tidings_session="), "tidings_session"),
            None
        );
    }
}
