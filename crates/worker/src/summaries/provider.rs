//! Summary providers (F42): the built-in extractive summarizer, any OpenAI-compatible chat
//! endpoint (OpenAI, Ollama, llama.cpp, vLLM…), and Anthropic's Messages API. One request per
//! summary; what a request costs and how it fails is the caller's business
//! ([`super::Summarizer`]: retries, breaker, budget).

use std::time::Duration;

use serde_json::{Value, json};
use url::Url;

/// The longest input sent to a remote provider, in characters: an article's point is in its
/// first pages, and a bound keeps every request's cost known.
pub const MAX_INPUT_CHARS: usize = 20_000;
/// The `anthropic-version` header of Messages API requests.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Anthropic's API, when no base URL is given.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The longest answer read from a provider, in bytes.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// Which provider writes summaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProviderKind {
    /// The built-in extractive summarizer: no key, no network (the default).
    #[default]
    Local,
    /// An OpenAI-compatible `/v1/chat/completions` endpoint.
    OpenAi,
    /// Anthropic's Messages API (`/v1/messages`).
    Anthropic,
}

impl ProviderKind {
    /// The setting's and the API's spelling: `local`, `openai`, `anthropic`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Local => "local",
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }

    /// Reads the setting's spelling; `None` for anything else.
    pub fn parse(text: &str) -> Option<ProviderKind> {
        match text.trim().to_ascii_lowercase().as_str() {
            "local" => Some(ProviderKind::Local),
            "openai" => Some(ProviderKind::OpenAi),
            "anthropic" => Some(ProviderKind::Anthropic),
            _ => None,
        }
    }

    /// Whether it makes network requests (and so has a breaker, a budget and retries).
    pub fn is_remote(self) -> bool {
        self != ProviderKind::Local
    }
}

/// Why a provider gave no summary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// No answer within the time-out.
    #[error("the summary provider did not answer within {0:?}")]
    Timeout(Duration),
    /// The connection failed.
    #[error("the summary provider could not be reached: {0}")]
    Connect(String),
    /// 429: too many requests; try again after the time given, if the provider gave one.
    #[error("the summary provider is rate limiting (HTTP 429{})", .retry_after.map(|d| format!(", retry after {} s", d.as_secs())).unwrap_or_default())]
    RateLimited {
        /// From the `Retry-After` header.
        retry_after: Option<Duration>,
    },
    /// A 5xx (or Anthropic's 529, overloaded): the provider's own trouble, for now.
    #[error("the summary provider failed (HTTP {status}): {message}")]
    Server {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// Another 4xx: the request is refused (a bad key, an unknown model, a text too long);
    /// asking again will not help.
    #[error("the summary provider refused the request (HTTP {status}): {message}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// A 2xx whose body is not the protocol's answer, or holds no text.
    #[error("the summary provider's answer is not usable: {0}")]
    BadAnswer(String),
}

impl ProviderError {
    /// Whether asking again later may help: time-outs, connection failures, 429, 5xx.
    pub fn is_temporary(&self) -> bool {
        matches!(
            self,
            ProviderError::Timeout(_)
                | ProviderError::Connect(_)
                | ProviderError::RateLimited { .. }
                | ProviderError::Server { .. }
        )
    }

    /// The wait a 429 asked for.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::RateLimited { retry_after } => *retry_after,
            _ => None,
        }
    }
}

/// A remote provider's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteSettings {
    /// OpenAI-compatible or Anthropic.
    pub kind: ProviderKind,
    /// The endpoint's base: `https://api.openai.com`, `http://127.0.0.1:11434` (Ollama)… with
    /// or without a trailing `/v1`.
    pub base_url: Url,
    /// The model to ask.
    pub model: String,
    /// The key, sent as `Authorization: Bearer` (OpenAI) or `x-api-key` (Anthropic).
    pub api_key: Option<String>,
    /// How long one request may take.
    pub timeout: Duration,
}

/// A remote provider: one HTTP request per summary.
#[derive(Debug, Clone)]
pub struct RemoteProvider {
    settings: RemoteSettings,
    endpoint: Url,
    client: Result<reqwest::Client, String>,
}

/// The instruction every remote provider gets: the same as the catchup-feed seed's, in the
/// article's own language instead of a fixed one.
pub fn instruction(target_chars: usize) -> String {
    format!(
        "Summarize the article the user sends in at most {target_chars} characters, in the \
         article's own language. Answer with the summary only, as plain text: no title, no \
         preamble, no markup."
    )
}

/// The text sent: the title, a blank line, the article, cut at [`MAX_INPUT_CHARS`].
pub fn input_text(title: Option<&str>, text: &str) -> String {
    let mut input = String::new();
    if let Some(title) = title.map(str::trim).filter(|t| !t.is_empty()) {
        input.push_str(title);
        input.push_str("\n\n");
    }
    input.extend(text.chars().take(MAX_INPUT_CHARS));
    input
}

/// The endpoint of `path` (`chat/completions`, `messages`) under a base URL given with or
/// without its `/v1`.
pub fn endpoint(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    let trimmed = base.path().trim_end_matches('/');
    let prefix = if trimmed.ends_with("/v1") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/v1")
    };
    url.set_path(&format!("{prefix}/{path}"));
    url.set_query(None);
    url
}

impl RemoteProvider {
    /// A provider with `settings`. The HTTP client speaks to the configured address as it
    /// is: the operator chose it (often a model server on the same machine), so the fetcher's
    /// guard against private addresses does not apply.
    pub fn new(settings: RemoteSettings) -> RemoteProvider {
        // Err only means a provider is already installed, which is what we want.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("tidings/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string());
        let path = match settings.kind {
            ProviderKind::Anthropic => "messages",
            _ => "chat/completions",
        };
        RemoteProvider {
            endpoint: endpoint(&settings.base_url, path),
            settings,
            client,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &RemoteSettings {
        &self.settings
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &Url {
        &self.endpoint
    }

    /// Asks for a summary of `input` in at most `target_chars` characters: one request.
    pub async fn summarize(
        &self,
        input: &str,
        target_chars: usize,
    ) -> Result<String, ProviderError> {
        let client = self
            .client
            .as_ref()
            .map_err(|e| ProviderError::Connect(e.clone()))?;
        // Tokens are not characters: one character of Japanese can take more than one token,
        // so the answer gets room for twice the target and is cut to it afterwards.
        let max_tokens = (target_chars * 2).clamp(256, 8192);
        let settings = &self.settings;
        let (request, body) = model_request(
            client,
            &self.endpoint,
            settings,
            &instruction(target_chars),
            input,
            max_tokens,
        );
        let value = send_json(request, &body, settings.timeout).await?;
        model_text(settings.kind, &value)
    }
}

/// A request to a model (`kind` OpenAI-compatible or Anthropic) at `endpoint`: `system` as
/// the instruction, `input` as the user's message, at most `max_tokens` in the answer; with
/// the key and the headers the protocol wants. Answers the request and its JSON body.
pub(crate) fn model_request(
    client: &reqwest::Client,
    endpoint: &Url,
    settings: &RemoteSettings,
    system: &str,
    input: &str,
    max_tokens: usize,
) -> (reqwest::RequestBuilder, Value) {
    let mut request = client.post(endpoint.clone());
    let body = match settings.kind {
        ProviderKind::Anthropic => {
            // Messages API: the instruction is `system`, not a message.
            request = request.header("anthropic-version", ANTHROPIC_VERSION);
            if let Some(key) = &settings.api_key {
                request = request.header("x-api-key", key);
            }
            json!({
                "model": settings.model,
                "max_tokens": max_tokens,
                "system": system,
                "messages": [{"role": "user", "content": input}],
            })
        }
        _ => {
            if let Some(key) = &settings.api_key {
                request = request.bearer_auth(key);
            }
            json!({
                "model": settings.model,
                "max_tokens": max_tokens,
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": input},
                ],
            })
        }
    };
    (request, body)
}

/// The text of a model's answer (`kind`'s protocol), trimmed; an error when it has none.
pub(crate) fn model_text(kind: ProviderKind, value: &Value) -> Result<String, ProviderError> {
    match kind {
        ProviderKind::Anthropic => anthropic_text(value),
        _ => openai_text(value),
    }
    .map(|t| t.trim().to_owned())
    .filter(|t| !t.is_empty())
    .ok_or_else(|| ProviderError::BadAnswer("no text in the answer".into()))
}

/// A request's failure as a [`ProviderError`]: a time-out after `timeout`, else a connection
/// failure with every cause of it.
pub(crate) fn request_error(error: &reqwest::Error, timeout: Duration) -> ProviderError {
    if error.is_timeout() {
        ProviderError::Timeout(timeout)
    } else {
        let mut message = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        ProviderError::Connect(message)
    }
}

/// Sends `request` with `body` as JSON and reads the answer: its JSON on a 2xx, else the
/// error its status says (429 with its `Retry-After`, 5xx, another 4xx with the provider's
/// message). The one exchange every remote provider's request goes through (summaries,
/// translations).
pub(crate) async fn send_json(
    request: reqwest::RequestBuilder,
    body: &Value,
    timeout: Duration,
) -> Result<Value, ProviderError> {
    let response = request
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| request_error(&e, timeout))?;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    let bytes = read_limited(response)
        .await
        .map_err(|e| request_error(&e, timeout))?;
    let value: Option<Value> = serde_json::from_slice(&bytes).ok();
    if !(200..300).contains(&status) {
        let message = value
            .as_ref()
            .and_then(error_message)
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes).chars().take(300).collect());
        return Err(match status {
            429 => ProviderError::RateLimited { retry_after },
            500..=599 => ProviderError::Server { status, message },
            _ => ProviderError::Refused { status, message },
        });
    }
    value.ok_or_else(|| ProviderError::BadAnswer("not JSON".into()))
}

/// Reads at most [`MAX_ANSWER_BYTES`] of a body.
async fn read_limited(mut response: reqwest::Response) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = MAX_ANSWER_BYTES.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if room <= chunk.len() {
            break;
        }
    }
    Ok(body)
}

/// `Retry-After` as seconds (the form APIs use) or an HTTP date.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = date.timestamp() - chrono::Utc::now().timestamp();
    Some(Duration::from_secs(wait.max(0) as u64))
}

/// `choices[0].message.content` of a chat completion.
fn openai_text(value: &Value) -> Option<String> {
    value
        .get("choices")?
        .get(0)?
        .get("message")?
        .get("content")?
        .as_str()
        .map(str::to_owned)
}

/// The text blocks of a Messages API answer, joined.
fn anthropic_text(value: &Value) -> Option<String> {
    let blocks = value.get("content")?.as_array()?;
    let text: Vec<&str> = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    (!text.is_empty()).then(|| text.join(""))
}

/// `error.message` (both protocols), or `error` as a string (Ollama, llama.cpp).
fn error_message(value: &Value) -> Option<String> {
    let error = value.get("error")?;
    error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| error.as_str())
        .map(|m| m.chars().take(300).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_take_the_base_with_or_without_v1() {
        let with = Url::parse("http://127.0.0.1:11434/v1/").unwrap();
        let without = Url::parse("https://api.example.com").unwrap();
        let nested = Url::parse("https://proxy.example/openai").unwrap();
        assert_eq!(
            endpoint(&with, "chat/completions").as_str(),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
        assert_eq!(
            endpoint(&without, "messages").as_str(),
            "https://api.example.com/v1/messages"
        );
        assert_eq!(
            endpoint(&nested, "chat/completions").as_str(),
            "https://proxy.example/openai/v1/chat/completions"
        );
    }

    #[test]
    fn answers_and_errors_are_read_from_both_protocols() {
        let openai = json!({"choices": [{"message": {"role": "assistant", "content": "Hi."}}]});
        assert_eq!(openai_text(&openai).as_deref(), Some("Hi."));
        let anthropic = json!({"content": [{"type": "thinking", "thinking": "x"},
                                           {"type": "text", "text": "A"},
                                           {"type": "text", "text": "B"}]});
        assert_eq!(anthropic_text(&anthropic).as_deref(), Some("AB"));
        assert_eq!(anthropic_text(&json!({"content": []})), None);
        let error = json!({"type": "error", "error": {"type": "x", "message": "bad key"}});
        assert_eq!(error_message(&error).as_deref(), Some("bad key"));
        assert_eq!(
            error_message(&json!({"error": "model not found"})).as_deref(),
            Some("model not found")
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        assert_eq!(parse_retry_after(" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
    }

    #[test]
    fn input_is_bounded_and_titled() {
        let long = "あ".repeat(MAX_INPUT_CHARS + 10);
        let input = input_text(Some(" Title "), &long);
        assert!(input.starts_with("Title\n\n"));
        assert_eq!(input.chars().count(), MAX_INPUT_CHARS + 7);
        assert_eq!(input_text(None, "x"), "x");
    }

    #[test]
    fn only_passing_failures_are_temporary() {
        assert!(ProviderError::RateLimited { retry_after: None }.is_temporary());
        assert!(ProviderError::Timeout(Duration::from_secs(1)).is_temporary());
        assert!(
            ProviderError::Server {
                status: 529,
                message: String::new()
            }
            .is_temporary()
        );
        assert!(
            !ProviderError::Refused {
                status: 401,
                message: String::new()
            }
            .is_temporary()
        );
        assert!(!ProviderError::BadAnswer(String::new()).is_temporary());
        assert_eq!(ProviderKind::parse(" OpenAI "), Some(ProviderKind::OpenAi));
        assert_eq!(ProviderKind::parse("claude"), None);
    }
}
