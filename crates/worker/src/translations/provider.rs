//! Translation providers (issue 37), each behind [`TranslationProvider`]: a LibreTranslate
//! server, DeepL's API, any OpenAI-compatible chat endpoint and Anthropic's Messages API. One
//! request translates an item's title and text together; what a request costs and how it
//! fails is the caller's business ([`super::Translator`]: retries, breaker, budgets).
//!
//! The text goes as HTML in each provider's HTML mode (LibreTranslate `format: "html"`,
//! DeepL `tag_handling: "html"`, the models told to keep every tag), so that the translation
//! keeps the sanitized structure; what comes back is untrusted and is sanitized again by the
//! caller. The title goes as HTML-escaped text beside it and is read back as plain text.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::{Value, json};
use url::Url;

use crate::summaries::provider::{model_request, model_text, send_json};
use crate::summaries::{ProviderError, ProviderKind, RemoteSettings};

/// The longest text sent to a provider, in characters of HTML: a bound keeps each request's
/// cost known (DeepL takes at most 128 KiB a request). A longer text is cut and the cut
/// sanitized, so that its tags close.
pub const MAX_INPUT_CHARS: usize = 30_000;
/// DeepL's API for a free account's key (those end in `:fx`), when no base URL is given.
pub const DEEPL_FREE_BASE_URL: &str = "https://api-free.deepl.com";
/// DeepL's API for a Pro key, when no base URL is given.
pub const DEEPL_PRO_BASE_URL: &str = "https://api.deepl.com";

/// Which provider translates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TranslateProviderKind {
    /// None: translation is off (the default).
    #[default]
    Off,
    /// A LibreTranslate server (`POST /translate`), usually self-hosted, with or without a
    /// key.
    LibreTranslate,
    /// DeepL's API (`POST /v2/translate`), with a key.
    DeepL,
    /// An OpenAI-compatible `/v1/chat/completions` endpoint and a model.
    OpenAi,
    /// Anthropic's Messages API (`/v1/messages`) and a model.
    Anthropic,
}

impl TranslateProviderKind {
    /// The setting's and the API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TranslateProviderKind::Off => "off",
            TranslateProviderKind::LibreTranslate => "libretranslate",
            TranslateProviderKind::DeepL => "deepl",
            TranslateProviderKind::OpenAi => "openai",
            TranslateProviderKind::Anthropic => "anthropic",
        }
    }

    /// Reads the setting's spelling; `None` for anything else.
    pub fn parse(text: &str) -> Option<TranslateProviderKind> {
        match text.trim().to_ascii_lowercase().as_str() {
            "off" | "" => Some(TranslateProviderKind::Off),
            "libretranslate" => Some(TranslateProviderKind::LibreTranslate),
            "deepl" => Some(TranslateProviderKind::DeepL),
            "openai" => Some(TranslateProviderKind::OpenAi),
            "anthropic" => Some(TranslateProviderKind::Anthropic),
            _ => None,
        }
    }

    /// Whether it is a model that needs `TIDINGS_TRANSLATE_MODEL`.
    pub fn needs_model(self) -> bool {
        matches!(
            self,
            TranslateProviderKind::OpenAi | TranslateProviderKind::Anthropic
        )
    }
}

/// A provider's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranslateSettings {
    /// Which provider.
    pub kind: TranslateProviderKind,
    /// Its base URL: `http://127.0.0.1:5000` (LibreTranslate), `https://api-free.deepl.com`,
    /// `https://api.openai.com`… (the model providers' with or without `/v1`).
    pub base_url: Url,
    /// The key: LibreTranslate's `api_key`, DeepL's `Authorization: DeepL-Auth-Key`, the
    /// models' as for summaries.
    pub api_key: Option<String>,
    /// The model, for the model providers.
    pub model: Option<String>,
    /// How long one request may take.
    pub timeout: Duration,
}

/// One item's title and text to translate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranslationRequest {
    /// The title, plain text.
    pub title: Option<String>,
    /// The text, sanitized HTML (at most [`MAX_INPUT_CHARS`]).
    pub html: Option<String>,
    /// The item's language, when known.
    pub source: Option<String>,
    /// The language to translate into, a BCP 47 tag.
    pub target: String,
}

/// A provider's answer, untrusted: the caller sanitizes the HTML and reads the title as text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Translated {
    /// The title, as the provider wrote it (HTML-escaped text for the HTML providers).
    pub title: Option<String>,
    /// The text, HTML as the provider wrote it.
    pub html: Option<String>,
    /// The source language the provider detected, if it said.
    pub detected: Option<String>,
}

/// A provider's answer to come.
pub type TranslateFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Translated, ProviderError>> + Send + 'a>>;

/// A translation provider: one request per item and language.
pub trait TranslationProvider: Send + Sync + fmt::Debug {
    /// The provider's name as translations record it.
    fn name(&self) -> &'static str;
    /// The model, for the model providers.
    fn model(&self) -> Option<&str> {
        None
    }
    /// Translates `request`: one request.
    fn translate<'a>(&'a self, request: &'a TranslationRequest) -> TranslateFuture<'a>;
}

/// The provider `settings` name; `None` when translation is off.
pub fn provider(settings: &TranslateSettings) -> Option<Box<dyn TranslationProvider>> {
    if settings.kind == TranslateProviderKind::Off {
        return None;
    }
    let http = Http::new(settings.timeout);
    Some(match settings.kind {
        TranslateProviderKind::Off => return None,
        TranslateProviderKind::LibreTranslate => Box::new(LibreTranslate {
            endpoint: joined(&settings.base_url, "translate"),
            api_key: settings.api_key.clone(),
            http,
        }),
        TranslateProviderKind::DeepL => Box::new(DeepL {
            endpoint: joined(&settings.base_url, "v2/translate"),
            api_key: settings.api_key.clone(),
            http,
        }),
        TranslateProviderKind::OpenAi | TranslateProviderKind::Anthropic => {
            let kind = if settings.kind == TranslateProviderKind::Anthropic {
                ProviderKind::Anthropic
            } else {
                ProviderKind::OpenAi
            };
            let remote = RemoteSettings {
                kind,
                base_url: settings.base_url.clone(),
                model: settings.model.clone().unwrap_or_default(),
                api_key: settings.api_key.clone(),
                timeout: settings.timeout,
            };
            let path = if kind == ProviderKind::Anthropic {
                "messages"
            } else {
                "chat/completions"
            };
            Box::new(Model {
                endpoint: crate::summaries::provider::endpoint(&remote.base_url, path),
                name: settings.kind.as_str(),
                remote,
                http,
            })
        }
    })
}

/// `path` under `base`, whatever the base's trailing slash.
fn joined(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    url.set_path(&format!("{}/{path}", base.path().trim_end_matches('/')));
    url.set_query(None);
    url
}

/// The HTTP client of a provider. It speaks to the configured address as it is: the operator
/// chose it (often a server on the same machine), so the fetcher's guard against private
/// addresses does not apply.
#[derive(Debug)]
struct Http {
    client: Result<reqwest::Client, String>,
    timeout: Duration,
}

impl Http {
    fn new(timeout: Duration) -> Http {
        // Err only means a provider is already installed, which is what we want.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("tidings/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string());
        Http { client, timeout }
    }

    fn client(&self) -> Result<&reqwest::Client, ProviderError> {
        self.client
            .as_ref()
            .map_err(|e| ProviderError::Connect(e.clone()))
    }
}

/// The parts sent to the HTML providers, in order: the title (escaped) and the text, each
/// when there is one; and where each went.
fn html_parts(request: &TranslationRequest) -> (Vec<String>, Option<usize>, Option<usize>) {
    let mut parts = Vec::new();
    let title = request
        .title
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .map(|t| {
            parts.push(tidings_feed::text::escape_html(t));
            parts.len() - 1
        });
    let html = request
        .html
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .map(|t| {
            parts.push(t.to_owned());
            parts.len() - 1
        });
    (parts, title, html)
}

/// A LibreTranslate server. Its API (docs.libretranslate.com, "API Usage"): `POST /translate`
/// with JSON `{"q", "source", "target", "format": "html", "api_key"}`; `q` may be an array,
/// and then `translatedText` is one; with `source: "auto"` the answer carries
/// `detectedLanguage: {"language", "confidence"}` (one per text for an array).
#[derive(Debug)]
struct LibreTranslate {
    endpoint: Url,
    api_key: Option<String>,
    http: Http,
}

/// LibreTranslate's code for a language: the primary subtag, except Traditional Chinese
/// (`zt` in its language list).
pub fn libretranslate_target(tag: &str) -> String {
    let lower = tag.to_ascii_lowercase();
    if lower.starts_with("zh-hant") || lower == "zh-tw" || lower == "zh-hk" {
        return "zt".into();
    }
    lower.split('-').next().unwrap_or_default().to_owned()
}

impl TranslationProvider for LibreTranslate {
    fn name(&self) -> &'static str {
        "libretranslate"
    }

    fn translate<'a>(&'a self, request: &'a TranslationRequest) -> TranslateFuture<'a> {
        Box::pin(async move {
            let (parts, title_at, html_at) = html_parts(request);
            if parts.is_empty() {
                return Ok(Translated::default());
            }
            let mut body = json!({
                "q": parts,
                "source": "auto",
                "target": libretranslate_target(&request.target),
                "format": "html",
            });
            if let Some(key) = &self.api_key {
                body["api_key"] = json!(key);
            }
            let request = self.http.client()?.post(self.endpoint.clone());
            let value = send_json(request, &body, self.http.timeout).await?;
            let texts: Vec<Option<&str>> = match value.get("translatedText") {
                Some(Value::Array(texts)) => texts.iter().map(|t| t.as_str()).collect(),
                Some(Value::String(text)) => vec![Some(text.as_str())],
                _ => Vec::new(),
            };
            if texts.len() != parts.len() || texts.iter().any(Option::is_none) {
                return Err(ProviderError::BadAnswer(
                    "translatedText does not hold one text per text sent".into(),
                ));
            }
            let detected = match value.get("detectedLanguage") {
                Some(Value::Array(found)) => found.first().cloned(),
                other => other.cloned(),
            };
            let text_at = |at: Option<usize>| at.and_then(|at| texts[at]).map(str::to_owned);
            Ok(Translated {
                title: text_at(title_at),
                html: text_at(html_at),
                detected: detected
                    .as_ref()
                    .and_then(|d| d.get("language"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            })
        })
    }
}

/// DeepL's API. Its reference (developers.deepl.com, "Translate Text", "Access and
/// authentication"): `POST /v2/translate` with `Authorization: DeepL-Auth-Key KEY` and JSON
/// `{"text": [...], "target_lang", "tag_handling": "html"}`; the answer is
/// `{"translations": [{"detected_source_language", "text"}]}`, one per text, in order. Free
/// keys end in `:fx` and go to api-free.deepl.com.
#[derive(Debug)]
struct DeepL {
    endpoint: Url,
    api_key: Option<String>,
    http: Http,
}

/// DeepL's `target_lang` for a language: upper case, with the variants it wants where it
/// has several (`EN` alone is deprecated as a target: `EN-US` or `EN-GB`; `PT-PT` or
/// `PT-BR`; `ZH-HANS` or `ZH-HANT`).
pub fn deepl_target(tag: &str) -> String {
    let upper = tag.to_ascii_uppercase();
    let primary = upper.split('-').next().unwrap_or_default();
    match (primary, upper.as_str()) {
        ("EN", "EN-GB") => "EN-GB".into(),
        ("EN", _) => "EN-US".into(),
        ("PT", "PT-BR") => "PT-BR".into(),
        ("PT", _) => "PT-PT".into(),
        ("ZH", "ZH-HANT" | "ZH-TW" | "ZH-HK") => "ZH-HANT".into(),
        ("ZH", _) => "ZH-HANS".into(),
        (primary, _) => primary.to_owned(),
    }
}

impl TranslationProvider for DeepL {
    fn name(&self) -> &'static str {
        "deepl"
    }

    fn translate<'a>(&'a self, request: &'a TranslationRequest) -> TranslateFuture<'a> {
        Box::pin(async move {
            let (parts, title_at, html_at) = html_parts(request);
            if parts.is_empty() {
                return Ok(Translated::default());
            }
            let body = json!({
                "text": parts,
                "target_lang": deepl_target(&request.target),
                "tag_handling": "html",
            });
            let mut http = self.http.client()?.post(self.endpoint.clone());
            if let Some(key) = &self.api_key {
                http = http.header(
                    reqwest::header::AUTHORIZATION,
                    format!("DeepL-Auth-Key {key}"),
                );
            }
            let value = send_json(http, &body, self.http.timeout).await?;
            let translations = value
                .get("translations")
                .and_then(Value::as_array)
                .filter(|t| t.len() == parts.len())
                .ok_or_else(|| {
                    ProviderError::BadAnswer(
                        "translations does not hold one text per text sent".into(),
                    )
                })?;
            let text_at = |at: Option<usize>| {
                at.and_then(|at| translations[at].get("text"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            Ok(Translated {
                title: text_at(title_at),
                html: text_at(html_at),
                detected: translations
                    .first()
                    .and_then(|t| t.get("detected_source_language"))
                    .and_then(Value::as_str)
                    .map(str::to_ascii_lowercase),
            })
        })
    }
}

/// A model behind the OpenAI-compatible chat completions or Anthropic's Messages API, as
/// for summaries: the item goes as a JSON object `{"title", "content"}` in the user's
/// message, and the model is told to answer with the same object translated, every HTML tag
/// and attribute kept.
#[derive(Debug)]
struct Model {
    endpoint: Url,
    name: &'static str,
    remote: RemoteSettings,
    http: Http,
}

/// The instruction the models get.
pub fn model_instruction(target: &str) -> String {
    format!(
        "Translate the values of the JSON object the user sends into the language whose BCP 47 \
         tag is {target}. \"title\" is plain text; \"content\" is HTML: keep every tag and \
         attribute as it is and translate only the text between them. Answer with one JSON \
         object with the same two keys, \"title\" and \"content\", and nothing else."
    )
}

/// The object in a model's answer: the text from its first `{` to its last `}` (models wrap
/// JSON in a code fence or a sentence now and then).
fn answer_object(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    serde_json::from_str(text.get(start..=end)?).ok()
}

impl TranslationProvider for Model {
    fn name(&self) -> &'static str {
        self.name
    }

    fn model(&self) -> Option<&str> {
        Some(&self.remote.model)
    }

    fn translate<'a>(&'a self, request: &'a TranslationRequest) -> TranslateFuture<'a> {
        Box::pin(async move {
            let input = json!({
                "title": request.title.as_deref().unwrap_or_default(),
                "content": request.html.as_deref().unwrap_or_default(),
            })
            .to_string();
            // Tokens are not characters: room for the whole text again, and some.
            let max_tokens = (input.chars().count() * 2).clamp(1024, 16_384);
            let (http, body) = model_request(
                self.http.client()?,
                &self.endpoint,
                &self.remote,
                &model_instruction(&request.target),
                &input,
                max_tokens,
            );
            let value = send_json(http, &body, self.http.timeout).await?;
            let text = model_text(self.remote.kind, &value)?;
            let object = answer_object(&text).ok_or_else(|| {
                ProviderError::BadAnswer("the model's answer holds no JSON object".into())
            })?;
            let field = |key: &str| {
                object
                    .get(key)
                    .and_then(Value::as_str)
                    .filter(|t| !t.trim().is_empty())
                    .map(tidings_feed::text::escape_html)
            };
            let html = object
                .get("content")
                .and_then(Value::as_str)
                .filter(|t| !t.trim().is_empty())
                .map(str::to_owned);
            Ok(Translated {
                // Escaped, so that the title is read back as text like the others'.
                title: field("title"),
                html,
                detected: None,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_follow_each_providers_codes() {
        assert_eq!(deepl_target("en"), "EN-US");
        assert_eq!(deepl_target("en-GB"), "EN-GB");
        assert_eq!(deepl_target("pt-BR"), "PT-BR");
        assert_eq!(deepl_target("zh-Hans"), "ZH-HANS");
        assert_eq!(deepl_target("zh-TW"), "ZH-HANT");
        assert_eq!(deepl_target("ja"), "JA");
        assert_eq!(libretranslate_target("zh-Hant"), "zt");
        assert_eq!(libretranslate_target("zh-Hans"), "zh");
        assert_eq!(libretranslate_target("pt-BR"), "pt");
    }

    #[test]
    fn model_answers_are_read_from_fences_and_sentences() {
        let fenced = "```json\n{\"title\": \"T\", \"content\": \"<p>x</p>\"}\n```";
        assert_eq!(answer_object(fenced).unwrap()["title"], "T");
        assert!(answer_object("no object").is_none());
        assert!(answer_object("} {").is_none());
    }

    #[test]
    fn settings_spellings() {
        assert_eq!(
            TranslateProviderKind::parse(" DeepL "),
            Some(TranslateProviderKind::DeepL)
        );
        assert_eq!(
            TranslateProviderKind::parse("off"),
            Some(TranslateProviderKind::Off)
        );
        assert_eq!(TranslateProviderKind::parse("google"), None);
        let base = Url::parse("http://127.0.0.1:5000/lt/").unwrap();
        assert_eq!(
            joined(&base, "translate").as_str(),
            "http://127.0.0.1:5000/lt/translate"
        );
    }
}
