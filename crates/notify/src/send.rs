//! One delivery: the payload POSTed through the SSRF-guarded client, and what the answer
//! means for the queue.

use std::time::Duration;

use bytes::Bytes;
use chrono::Utc;
use serde_json::Value;
use tidings_fetch::{FetchError, GuardedClient, PostResponse};
use url::Url;

use crate::sign::{SIGNATURE_HEADER, SigningSecret};

/// The most bytes of a webhook's answer read (Discord's and Slack's are a few hundred).
pub const MAX_ANSWER_BYTES: usize = 16 * 1024;
/// The most characters of an answer's text kept in an error message.
const ANSWER_EXCERPT_CHARS: usize = 200;
/// The longest wait a service may ask for that is taken as asked; longer ones are cut to it
/// (a broken header must not park a channel for a year).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// A delivery that was accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The 2xx status (Discord answers 204, Slack 200 "ok").
    pub status: u16,
}

/// Why a delivery was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DeliveryError {
    /// The answer's status, when there was an answer.
    pub status: Option<u16>,
    /// What went wrong, for the delivery log.
    pub message: String,
    /// Whether trying again later may work (a time-out, 429, 5xx), as opposed to an answer
    /// that will not change (404: the webhook was deleted; 400: the payload was refused; the
    /// guard refused the address).
    pub retryable: bool,
    /// How long the service asked to wait (429's `retry_after`, `Retry-After`).
    pub retry_after: Option<Duration>,
}

/// POSTs `payload` to `url` and reads the answer. Never panics on what the network does.
/// `service` says the URL is at a service the operator configured (Discord, Slack): their
/// explanations go into error messages wherever they live; a user's own webhook's answer does
/// only when it came from a public address (see [`judge_answer`]). With a `signing` secret
/// the message carries [`SIGNATURE_HEADER`] over its exact body, signed now.
pub async fn deliver(
    client: &GuardedClient,
    url: &Url,
    payload: &Value,
    service: bool,
    signing: Option<&SigningSecret>,
) -> Result<Answer, DeliveryError> {
    let body = Bytes::from(serde_json::to_vec(payload).unwrap_or_default());
    let headers: Vec<(&'static str, String)> = signing
        .map(|secret| {
            let signature = secret.signature(Utc::now().timestamp(), &body);
            (SIGNATURE_HEADER, signature)
        })
        .into_iter()
        .collect();
    match client
        .post_json_with(url, body, &headers, MAX_ANSWER_BYTES)
        .await
    {
        Ok(response) if response.is_success() => Ok(Answer {
            status: response.status,
        }),
        Ok(response) => Err(judge_answer(&response, service)),
        Err(error) => Err(judge_transport(&error)),
    }
}

fn judge_transport(error: &FetchError) -> DeliveryError {
    let retryable = !matches!(
        error,
        FetchError::Refused(_) | FetchError::InvalidUrl(_) | FetchError::Build(_)
    );
    DeliveryError {
        status: None,
        message: error.to_string(),
        retryable,
        retry_after: None,
    }
}

/// What a non-2xx answer means. Its body is quoted in the message only from a `service` the
/// operator configured or from a public address: an internal service's answer (one reached
/// through the operator's exemptions) stays out, since the user who set the webhook up reads
/// the message (an internal token came back this way once).
pub fn judge_answer(response: &PostResponse, service: bool) -> DeliveryError {
    let status = response.status;
    let text = String::from_utf8_lossy(&response.body);
    let json: Option<Value> = serde_json::from_str(&text).ok();
    // Discord explains in `message` (and `retry_after` on 429); Slack in a plain-text body.
    let explained = json
        .as_ref()
        .and_then(|v| v.get("message"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| text.trim().to_owned());
    let excerpt: String = if service || response.from_public_address {
        explained.chars().take(ANSWER_EXCERPT_CHARS).collect()
    } else {
        String::new()
    };
    let retry_after = wait_asked_for(response, json.as_ref());
    let retryable = status == 429 || status == 408 || status >= 500;
    let mut message = match status {
        300..=399 => format!(
            "the webhook answered HTTP {status} (a redirect); webhooks are not followed to \
             another address: check the channel's URL"
        ),
        404 => "the webhook answered HTTP 404: it was deleted or the URL is wrong".to_owned(),
        401 | 403 => format!("the webhook answered HTTP {status}: its token was refused"),
        429 => "the webhook answered HTTP 429: rate limited".to_owned(),
        _ => format!("the webhook answered HTTP {status}"),
    };
    if !excerpt.is_empty() {
        message.push_str(&format!(" ({excerpt})"));
    }
    if let Some(wait) = retry_after {
        message.push_str(&format!("; asked to wait {:.1} s", wait.as_secs_f64()));
    }
    DeliveryError {
        status: Some(status),
        message,
        retryable,
        retry_after,
    }
}

/// The wait a service asked for: Discord's JSON `retry_after` (seconds, fractional), else
/// `Retry-After` (seconds or an HTTP date), else Discord's `X-RateLimit-Reset-After` on a
/// 429. At most [`MAX_RETRY_AFTER`].
fn wait_asked_for(response: &PostResponse, json: Option<&Value>) -> Option<Duration> {
    let seconds = json
        .and_then(|v| v.get("retry_after"))
        .and_then(Value::as_f64)
        .or_else(|| {
            let header = response.retry_after.as_deref()?;
            header.trim().parse::<f64>().ok().or_else(|| {
                let date = tidings_fetch::policy::parse_http_date(header)?;
                Some((date - Utc::now()).num_milliseconds().max(0) as f64 / 1000.0)
            })
        })
        .or_else(|| {
            (response.status == 429)
                .then(|| {
                    response
                        .rate_limit_reset_after
                        .as_deref()?
                        .trim()
                        .parse()
                        .ok()
                })
                .flatten()
        })?;
    (seconds.is_finite() && seconds >= 0.0)
        .then(|| Duration::from_secs_f64(seconds).min(MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a user's webhook's answer from a public address means.
    fn judge_answer_of(response: &PostResponse) -> DeliveryError {
        judge_answer(response, false)
    }

    #[test]
    fn internal_answers_are_not_quoted() {
        let mut internal = answer(500, "internal token: s3cr3t", None);
        internal.from_public_address = false;
        let error = judge_answer(&internal, false);
        assert_eq!(error.message, "the webhook answered HTTP 500");
        assert!(judge_answer(&internal, true).message.contains("s3cr3t"));
    }

    fn answer(status: u16, body: &str, retry_after: Option<&str>) -> PostResponse {
        PostResponse {
            status,
            retry_after: retry_after.map(str::to_owned),
            rate_limit_reset_after: None,
            body: Bytes::from(body.to_owned()),
            from_public_address: true,
        }
    }

    #[test]
    fn discord_429_waits_as_long_as_its_body_says() {
        let error = judge_answer_of(&answer(
            429,
            r#"{"message": "You are being rate limited.", "retry_after": 1.25, "global": false}"#,
            Some("2"),
        ));
        assert!(error.retryable);
        assert_eq!(error.retry_after, Some(Duration::from_millis(1250)));
        assert!(error.message.contains("rate limited"), "{}", error.message);
    }

    #[test]
    fn retry_after_headers_are_read_when_the_body_says_nothing() {
        let error = judge_answer_of(&answer(429, "", Some("7")));
        assert_eq!(error.retry_after, Some(Duration::from_secs(7)));
        let error = judge_answer_of(&answer(503, "busy", Some("100000")));
        assert!(error.retryable);
        assert_eq!(error.retry_after, Some(MAX_RETRY_AFTER));
        let mut reset = answer(429, "", None);
        reset.rate_limit_reset_after = Some("0.5".into());
        assert_eq!(
            judge_answer_of(&reset).retry_after,
            Some(Duration::from_millis(500))
        );
    }

    #[test]
    fn client_errors_are_final_and_explained() {
        let error = judge_answer_of(&answer(
            404,
            r#"{"message": "Unknown Webhook", "code": 10015}"#,
            None,
        ));
        assert!(!error.retryable);
        assert_eq!(
            error.message,
            "the webhook answered HTTP 404: it was deleted or the URL is wrong (Unknown Webhook)"
        );
        let error = judge_answer_of(&answer(400, "invalid_payload", None));
        assert!(!error.retryable);
        assert!(error.message.ends_with("(invalid_payload)"));
        assert!(!judge_answer_of(&answer(302, "", None)).retryable);
        assert!(judge_answer_of(&answer(500, "", None)).retryable);
    }
}
