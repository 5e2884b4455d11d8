//! The one HTTP client for every outbound request (F13, F26): feeds, discovery pages,
//! favicons, and later full text and webhooks.
//!
//! Every request goes through the [`AddressPolicy`] four times over: the URL (scheme,
//! credentials, IP-literal host, local names) before each hop, the resolver's answers at
//! connect time, each redirect's `Location` before it is followed, and the peer address of
//! each response. Redirects are followed here, one hop at a time, never by reqwest.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use reqwest::StatusCode;
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use url::Url;

use crate::address::{AddressPolicy, Refusal};
use crate::policy::{CacheHints, FailureKind, Outcome, ParseResult};
use crate::resolve::GuardedResolver;

/// Total time one fetch may take, redirects and body included.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Time for each hop's response headers to arrive: shorter than [`DEFAULT_TIMEOUT`], so a
/// server that does not answer gives up its slot early while a body that is arriving has the
/// whole time.
pub const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest decoded body accepted: 5 MB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 5 * 1024 * 1024;
/// Redirects followed before giving up.
pub const DEFAULT_MAX_REDIRECTS: usize = 5;
/// The `Accept` header of feed requests: feed types first, anything else last so that a
/// page given as a feed URL still arrives for discovery.
pub const FEED_ACCEPT: &str = "application/atom+xml, application/rss+xml, application/feed+json, \
     application/json;q=0.9, application/xml;q=0.9, text/xml;q=0.9, text/html;q=0.8, */*;q=0.7";
/// Most proxied clients kept at once; the cache is emptied when it would grow past this.
const MAX_PROXY_CLIENTS: usize = 64;
/// A body read past this size is a large one: it goes on only while it is the one large body
/// being read ([`LARGE_BODIES_AT_ONCE`]). Feeds are rarely larger, and below it the bodies in
/// flight are bounded by the requests in flight.
pub const LARGE_BODY_BYTES: usize = 1024 * 1024;
/// Large bodies read at once by one client: one, so that bodies sent without a length, which
/// are known to be over the limit only once it is read (5 MB held each meanwhile), add one
/// limit's worth to the process's memory rather than one per request in flight. The OPML
/// import's farm sends two such bodies; read at once they took the server 5-8 MB over its
/// otherwise steady peak for a moment (issue 32).
pub const LARGE_BODIES_AT_ONCE: usize = 1;
/// The longest a large body waits for its turn (or a fifth of the fetch's timeout, when
/// shorter) before it is read anyway. The turn bounds memory in the usual case, where bodies
/// arrive quickly; a body trickling in from a slow server must not make every other large feed
/// wait out its own timeout behind it and fail as "timed out" when its server was fine.
pub const LARGE_BODY_WAIT: Duration = Duration::from_secs(2);

/// `tidings/<version> (+<project url>)`, the `User-Agent` of every request.
pub fn default_user_agent() -> String {
    format!(
        "tidings/{} (+{})",
        env!("CARGO_PKG_VERSION"),
        env!("CARGO_PKG_REPOSITORY")
    )
}

/// Settings of a [`GuardedClient`]. `Default` gives the product's limits with private
/// networks refused.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Sent as `User-Agent`.
    pub user_agent: String,
    /// Total time for one fetch, all redirect hops and the body included.
    pub timeout: Duration,
    /// Time for each hop's status line and headers to arrive (capped by `timeout`).
    pub first_byte_timeout: Duration,
    /// Largest body accepted, counted in decoded bytes so a compressed bomb is cut off too.
    pub max_body_bytes: usize,
    /// Redirects followed before the fetch fails.
    pub max_redirects: usize,
    /// Which addresses may be reached (`allow_private_networks` lives here).
    pub address_policy: AddressPolicy,
    /// Names answered from this table instead of DNS, like `/etc/hosts`. The answers go
    /// through the address policy like any DNS answer, which is what tests use to make a
    /// public-looking name resolve to loopback.
    pub dns_overrides: HashMap<String, Vec<IpAddr>>,
}

impl Default for ClientConfig {
    fn default() -> ClientConfig {
        ClientConfig {
            user_agent: default_user_agent(),
            timeout: DEFAULT_TIMEOUT,
            first_byte_timeout: DEFAULT_FIRST_BYTE_TIMEOUT,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_redirects: DEFAULT_MAX_REDIRECTS,
            address_policy: AddressPolicy::default(),
            dns_overrides: HashMap::new(),
        }
    }
}

impl ClientConfig {
    /// Lets requests reach `base_url`'s host when it is an IP address, even on a private
    /// network: for service bases the operator chose (a stand-in on 127.0.0.1, a relay on the
    /// LAN), which are not user input. A host name goes through the guard as any
    /// (`allow_private_networks` lifts local ones); the never-allowed classes stay refused.
    pub fn allow_operator_base(&mut self, base_url: &Url) {
        let address = match base_url.host() {
            Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
            Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
            _ => return,
        };
        let prefix = if address.is_ipv4() { 32 } else { 128 };
        self.address_policy
            .allowed_networks
            .extend(crate::IpNetwork::new(address, prefix));
    }
}

/// One GET to make: the URL and what the caller knows about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    /// Where to go.
    pub url: Url,
    /// The stored `ETag`, sent as `If-None-Match`.
    pub etag: Option<String>,
    /// The stored `Last-Modified`, sent as `If-Modified-Since`.
    pub last_modified: Option<String>,
    /// The `Accept` header; [`FEED_ACCEPT`] when `None`.
    pub accept: Option<String>,
    /// A lower body limit for this request (favicons take 256 KB); the client's limit
    /// applies when `None` or when this one is larger.
    pub max_body_bytes: Option<usize>,
    /// The feed's own proxy (F16): `http://`, `https://`, `socks5://` or `socks5h://`, with
    /// optional `user:password@`. The proxy's address passes the same policy as targets.
    ///
    /// With an `http(s)://` or `socks5h://` proxy the *proxy* resolves and connects to the
    /// target, so this client can check the target URL but not the address it ends up at:
    /// such a proxy must enforce the egress policy itself. With `socks5://` the target is
    /// resolved here, through the guarded resolver, and the guard holds in full.
    pub proxy: Option<Url>,
}

impl FetchRequest {
    /// A plain GET of `url` with no validators and no proxy.
    pub fn new(url: Url) -> FetchRequest {
        FetchRequest {
            url,
            etag: None,
            last_modified: None,
            accept: None,
            max_body_bytes: None,
            proxy: None,
        }
    }

    /// Parses `url` and makes a plain GET of it.
    pub fn parse(url: &str) -> Result<FetchRequest, FetchError> {
        let url = Url::parse(url).map_err(|e| FetchError::InvalidUrl(format!("{url}: {e}")))?;
        Ok(FetchRequest::new(url))
    }

    /// Adds the validators of the last response, for a conditional GET.
    pub fn with_validators(mut self, etag: Option<String>, last_modified: Option<String>) -> Self {
        self.etag = etag;
        self.last_modified = last_modified;
        self
    }

    /// Routes the request through the feed's proxy (see [`FetchRequest::proxy`]).
    pub fn with_proxy(mut self, proxy: Option<Url>) -> Self {
        self.proxy = proxy;
        self
    }

    /// Sets the `Accept` header.
    pub fn with_accept(mut self, accept: impl Into<String>) -> Self {
        self.accept = Some(accept.into());
        self
    }

    /// Lowers the body limit for this request.
    pub fn with_max_body_bytes(mut self, limit: usize) -> Self {
        self.max_body_bytes = Some(limit);
        self
    }
}

/// What the server answered, after redirects. Any status is a response here, 404 and 503
/// included; only transport problems are errors.
#[derive(Debug, Clone)]
pub struct FetchResponse {
    /// The final status code (200, 304, 404, 503…).
    pub status: u16,
    /// The URL that answered, after redirects.
    pub url: Url,
    /// Where the feed moved for good: the target of the last 301/308 in an unbroken run of
    /// permanent redirects from the requested URL. A 302/303/307 anywhere before it means
    /// the move is not permanent, and this is `None`.
    pub permanent_redirect: Option<Url>,
    /// How many redirects were followed.
    pub redirects: usize,
    /// The decoded body of a 2xx response; empty for 304 and for error statuses.
    pub body: Bytes,
    /// The media type of `Content-Type`, lower-cased, without parameters.
    pub content_type: Option<String>,
    /// The `charset` parameter of `Content-Type`, as sent (the parser decides what to do
    /// with it, since XML may declare its own).
    pub charset: Option<String>,
    /// `ETag`, to send back as `If-None-Match`.
    pub etag: Option<String>,
    /// `Last-Modified`, to send back as `If-Modified-Since`.
    pub last_modified: Option<String>,
    /// The headers the scheduling policy reads (Retry-After, Cache-Control, Expires, Date).
    pub cache_hints: CacheHints,
    /// The peer the response came from (the proxy's address when proxied).
    pub remote_addr: Option<SocketAddr>,
    /// The `Link` headers (several joined with ", "), where WebSub hubs and the `self` URL
    /// are advertised (F18).
    pub link: Option<String>,
}

impl FetchResponse {
    /// A 304: the stored copy is still current.
    pub fn is_not_modified(&self) -> bool {
        self.status == 304
    }

    /// A 2xx status.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The scheduling policy's view of this response, given what parsing its body did
    /// (pass [`ParseResult::Skipped`] for a 304 or an unchanged body).
    pub fn outcome(&self, parse: ParseResult) -> Outcome {
        Outcome::Response {
            status: self.status,
            hints: self.cache_hints.clone(),
            parse,
            permanent_redirect: self.permanent_redirect.as_ref().map(|url| url.to_string()),
        }
    }
}

/// What a server answered a [`GuardedClient::post_json`] or [`GuardedClient::post_form`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostResponse {
    /// The status code (204, 429, 500…); redirects are not followed.
    pub status: u16,
    /// `Retry-After`, as sent.
    pub retry_after: Option<String>,
    /// `X-RateLimit-Reset-After` (Discord: seconds until the bucket refills), as sent.
    pub rate_limit_reset_after: Option<String>,
    /// The answer's body, whatever the status, cut at the caller's limit.
    pub body: Bytes,
    /// Whether the answer came from a public address. An answer from an address only the
    /// operator's exemptions open (a private network, an allowed network or host) may be an
    /// internal service's: callers must not put its body in messages users read.
    pub from_public_address: bool,
}

impl PostResponse {
    /// A 2xx status.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Whether `response` came from a public address (see [`PostResponse::from_public_address`]).
fn is_public_peer(response: &reqwest::Response) -> bool {
    response
        .remote_addr()
        .is_some_and(|peer| crate::classify(peer.ip()) == crate::AddressClass::Public)
}

/// Why a fetch produced no response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The guard refused the URL, a redirect or an address.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The URL (or a redirect's `Location`) could not be parsed.
    #[error("invalid URL: {0}")]
    InvalidUrl(String),
    /// The per-feed proxy URL is unusable.
    #[error("invalid proxy: {0}")]
    InvalidProxy(String),
    /// The whole fetch took longer than the configured timeout.
    #[error("timed out after {} s", .0.as_secs_f64())]
    Timeout(Duration),
    /// The server sent no response headers within the first-byte timeout.
    #[error("no response within {} s", .0.as_secs_f64())]
    NoResponse(Duration),
    /// No connection could be made (DNS failure, connection refused, TLS failure…).
    #[error("could not connect: {0}")]
    Connect(String),
    /// The decoded body passed the limit; reading stopped there.
    #[error("refused: body larger than {}", ByteSize(*.limit))]
    BodyTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// More redirects than allowed (a loop, usually).
    #[error("too many redirects (more than {limit})")]
    TooManyRedirects {
        /// The redirect limit.
        limit: usize,
    },
    /// A redirect status without a usable `Location`.
    #[error("HTTP {status} redirect without a usable Location header")]
    BadRedirect {
        /// The redirect status.
        status: u16,
    },
    /// The body could not be read or decompressed (a broken gzip stream, a reset).
    #[error("could not read the response body: {0}")]
    Body(String),
    /// Any other HTTP-level failure (malformed response, protocol error).
    #[error("HTTP error: {0}")]
    Http(String),
    /// The client could not be built (TLS set-up).
    #[error("could not build the HTTP client: {0}")]
    Build(String),
}

impl FetchError {
    /// The scheduling policy's view of this failure.
    pub fn outcome(&self) -> Outcome {
        Outcome::Failed {
            kind: self.kind(),
            message: self.to_string(),
        }
    }

    /// The category the scheduling policy and the metrics use.
    pub fn kind(&self) -> FailureKind {
        match self {
            FetchError::Refused(_) => FailureKind::Refused,
            FetchError::InvalidUrl(_) => FailureKind::InvalidUrl,
            FetchError::InvalidProxy(_) => FailureKind::InvalidProxy,
            FetchError::Timeout(_) | FetchError::NoResponse(_) => FailureKind::Timeout,
            FetchError::Connect(_) => FailureKind::Connect,
            FetchError::BodyTooLarge { .. } => FailureKind::BodyTooLarge,
            FetchError::TooManyRedirects { .. } | FetchError::BadRedirect { .. } => {
                FailureKind::Redirect
            }
            FetchError::Body(_) | FetchError::Http(_) | FetchError::Build(_) => FailureKind::Http,
        }
    }
}

/// Bytes written as whole megabytes when they are, for messages ("5 MB").
struct ByteSize(usize);

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MB: usize = 1024 * 1024;
        const KB: usize = 1024;
        match self.0 {
            n if n >= MB && n % MB == 0 => write!(f, "{} MB", n / MB),
            n if n >= KB && n % KB == 0 => write!(f, "{} KB", n / KB),
            n => write!(f, "{n} bytes"),
        }
    }
}

/// The SSRF-guarded HTTP client. Cheap to clone; share one per process.
#[derive(Clone)]
pub struct GuardedClient {
    inner: Arc<Inner>,
}

struct Inner {
    config: ClientConfig,
    policy: Arc<AddressPolicy>,
    resolver: GuardedResolver,
    direct: reqwest::Client,
    /// reqwest binds proxies to a client, so each distinct per-feed proxy gets its own.
    proxied: Mutex<HashMap<String, reqwest::Client>>,
    /// Turns for reading a body past [`LARGE_BODY_BYTES`].
    large_bodies: tokio::sync::Semaphore,
}

impl fmt::Debug for GuardedClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardedClient")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl GuardedClient {
    /// Builds the client. Installs the ring crypto provider for rustls first if no provider
    /// is installed yet (a no-op when one is).
    pub fn new(config: ClientConfig) -> Result<GuardedClient, FetchError> {
        // Err only means a provider is already installed, which is what we want.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let policy = Arc::new(config.address_policy.clone());
        let resolver = GuardedResolver {
            policy: Arc::clone(&policy),
            overrides: Arc::new(
                config
                    .dns_overrides
                    .iter()
                    .map(|(name, ips)| {
                        (name.trim_end_matches('.').to_ascii_lowercase(), ips.clone())
                    })
                    .collect(),
            ),
        };
        let direct = build_reqwest(&config, &resolver, None)?;
        Ok(GuardedClient {
            inner: Arc::new(Inner {
                config,
                policy,
                resolver,
                direct,
                proxied: Mutex::new(HashMap::new()),
                large_bodies: tokio::sync::Semaphore::new(LARGE_BODIES_AT_ONCE),
            }),
        })
    }

    /// A `reqwest` client builder for talking to an API at a user-given address (another
    /// reader's, in an import the server runs), under the same guard as feeds: names resolve
    /// through the guarded resolver, every redirect hop is checked (IP literals never reach
    /// the resolver), at most `max_redirects` are followed, and the environment's proxies
    /// are ignored. The caller adds its own time-out and headers; requests should still be
    /// checked with [`AddressPolicy::check_url`] before they are sent.
    pub fn guarded_builder(&self) -> reqwest::ClientBuilder {
        let policy = Arc::clone(&self.inner.policy);
        let max_redirects = self.inner.config.max_redirects;
        reqwest::Client::builder()
            .no_proxy()
            .referer(false)
            .dns_resolver(self.inner.resolver.clone())
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() > max_redirects {
                    attempt.error("too many redirects")
                } else if let Err(refusal) = policy.check_url(attempt.url()) {
                    attempt.error(refusal)
                } else {
                    attempt.follow()
                }
            }))
    }

    /// The settings the client was built with.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// Fetches `request.url`, following at most `max_redirects` redirects, each hop checked
    /// by the guard, within the configured timeout.
    pub async fn fetch(&self, request: &FetchRequest) -> Result<FetchResponse, FetchError> {
        let timeout = self.inner.config.timeout;
        let started = std::time::Instant::now();
        let result = tokio::time::timeout(timeout, self.fetch_hops(request)).await;
        let result = result.unwrap_or(Err(FetchError::Timeout(timeout)));
        match &result {
            Ok(response) => tracing::debug!(
                url = %crate::redact_url(request.url.as_str()),
                status = response.status,
                redirects = response.redirects,
                bytes = response.body.len(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "fetched"
            ),
            Err(error) => tracing::debug!(
                url = %crate::redact_url(request.url.as_str()),
                %error,
                "fetch failed"
            ),
        }
        result
    }

    async fn fetch_hops(&self, request: &FetchRequest) -> Result<FetchResponse, FetchError> {
        let config = &self.inner.config;
        let client = self.client_for(request.proxy.as_ref())?;
        let body_limit = request
            .max_body_bytes
            .map_or(config.max_body_bytes, |limit| {
                limit.min(config.max_body_bytes)
            });
        let mut url = request.url.clone();
        let mut permanent_redirect = None;
        let mut only_permanent_so_far = true;
        let mut redirects = 0;
        loop {
            self.inner.policy.check_url(&url)?;
            let first_byte = config.first_byte_timeout.min(config.timeout);
            let response =
                match tokio::time::timeout(first_byte, self.send(&client, &url, request)).await {
                    Ok(response) => response?,
                    Err(_) if first_byte < config.timeout => {
                        return Err(FetchError::NoResponse(first_byte));
                    }
                    Err(_) => return Err(FetchError::Timeout(config.timeout)),
                };
            let status = response.status();
            if is_followed_redirect(status) {
                if redirects >= config.max_redirects {
                    return Err(FetchError::TooManyRedirects {
                        limit: config.max_redirects,
                    });
                }
                let next = redirect_target(&url, &response)?;
                redirects += 1;
                let permanent = matches!(
                    status,
                    StatusCode::MOVED_PERMANENTLY | StatusCode::PERMANENT_REDIRECT
                );
                only_permanent_so_far &= permanent;
                if only_permanent_so_far {
                    permanent_redirect = Some(next.clone());
                }
                tracing::trace!(
                    from = %crate::redact_url(url.as_str()),
                    to = %crate::redact_url(next.as_str()),
                    status = status.as_u16(), "redirect");
                url = next;
                continue;
            }
            let hops = Hops {
                url,
                permanent_redirect,
                redirects,
            };
            let limits = BodyLimits {
                max: body_limit,
                large_bodies: &self.inner.large_bodies,
            };
            return read_response(response, hops, limits, config.timeout).await;
        }
    }

    /// POSTs `form` as `application/x-www-form-urlencoded` to `url` (a WebSub hub, F18), through
    /// the same guard as fetches: the URL and every address are checked, and a 307 or 308
    /// redirect is followed with the same body to a URL the guard checks again (a hub may move,
    /// W3C WebSub §5.1.2); other redirects are answers, since a POST is not turned into a GET.
    /// The answer's body is kept up to `max_answer_bytes`. Within the configured timeout.
    pub async fn post_form(
        &self,
        url: &Url,
        form: &[(&str, &str)],
        max_answer_bytes: usize,
    ) -> Result<PostResponse, FetchError> {
        let timeout = self.inner.config.timeout;
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        tokio::time::timeout(timeout, self.post_hops(url, body, max_answer_bytes))
            .await
            .unwrap_or(Err(FetchError::Timeout(timeout)))
    }

    async fn post_hops(
        &self,
        url: &Url,
        body: String,
        max_answer_bytes: usize,
    ) -> Result<PostResponse, FetchError> {
        let config = &self.inner.config;
        let client = self.inner.direct.clone();
        let mut url = url.clone();
        let mut redirects = 0;
        loop {
            self.inner.policy.check_url(&url)?;
            let mut response = client
                .post(url.clone())
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(body.clone())
                .send()
                .await
                .map_err(|e| map_reqwest_error(&e, config.timeout))?;
            if let Some(peer) = response.remote_addr() {
                self.inner
                    .policy
                    .check_ip_for_host(url.host_str(), peer.ip())?;
            }
            let status = response.status();
            if matches!(
                status,
                StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
            ) {
                if redirects >= config.max_redirects {
                    return Err(FetchError::TooManyRedirects {
                        limit: config.max_redirects,
                    });
                }
                url = redirect_target(&url, &response)?;
                redirects += 1;
                continue;
            }
            let headers = response.headers();
            let text = |name: HeaderName| header_text(headers, &name);
            let mut answer = PostResponse {
                status: status.as_u16(),
                retry_after: text(header::RETRY_AFTER),
                rate_limit_reset_after: None,
                body: Bytes::new(),
                from_public_address: is_public_peer(&response),
            };
            let mut kept = BytesMut::new();
            while kept.len() < max_answer_bytes {
                match response.chunk().await {
                    Ok(Some(chunk)) => {
                        let room = max_answer_bytes - kept.len();
                        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    }
                    // The body is only for messages: a broken one is just shorter.
                    Ok(None) | Err(_) => break,
                }
            }
            answer.body = kept.freeze();
            return Ok(answer);
        }
    }

    /// Sends one hop and checks who answered.
    async fn send(
        &self,
        client: &reqwest::Client,
        url: &Url,
        request: &FetchRequest,
    ) -> Result<reqwest::Response, FetchError> {
        let accept = request.accept.as_deref().unwrap_or(FEED_ACCEPT);
        let mut headers = HeaderMap::new();
        insert_header(&mut headers, header::ACCEPT, Some(accept));
        insert_header(&mut headers, header::IF_NONE_MATCH, request.etag.as_deref());
        insert_header(
            &mut headers,
            header::IF_MODIFIED_SINCE,
            request.last_modified.as_deref(),
        );
        let response = client
            .get(url.clone())
            .headers(headers)
            .send()
            .await
            .map_err(|e| map_reqwest_error(&e, self.inner.config.timeout))?;
        // Belt and braces: whatever path the connection took, its peer must pass too.
        if let Some(peer) = response.remote_addr() {
            self.inner
                .policy
                .check_ip_for_host(url.host_str(), peer.ip())?;
        }
        Ok(response)
    }

    /// POSTs `body` as `application/json` to `url` (webhooks, F43), through the same guard
    /// as every fetch: the URL, the resolver's answers and the peer address. Redirects are
    /// not followed (a 3xx is returned as it is): a webhook that moves is the user's to fix,
    /// and a POST must not be replayed at a place the guard never saw. The answer's body is
    /// read whatever its status, up to `max_answer_bytes` (cut there, not an error), because
    /// webhook services explain errors and rate limits in it; the time-outs are the client's.
    pub async fn post_json(
        &self,
        url: &Url,
        body: Bytes,
        max_answer_bytes: usize,
    ) -> Result<PostResponse, FetchError> {
        self.post_json_with(url, body, &[], max_answer_bytes).await
    }

    /// [`GuardedClient::post_json`] with more request headers (a webhook's signature).
    pub async fn post_json_with(
        &self,
        url: &Url,
        body: Bytes,
        headers: &[(&'static str, String)],
        max_answer_bytes: usize,
    ) -> Result<PostResponse, FetchError> {
        let config = &self.inner.config;
        let timeout = config.timeout;
        let started = std::time::Instant::now();
        let post = async {
            self.inner.policy.check_url(url)?;
            let first_byte = config.first_byte_timeout.min(timeout);
            let mut request = self
                .inner
                .direct
                .post(url.clone())
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::ACCEPT, "application/json");
            for (name, value) in headers {
                request = request.header(*name, value);
            }
            let send = request.body(body).send();
            let mut response = match tokio::time::timeout(first_byte, send).await {
                Ok(response) => response.map_err(|e| map_reqwest_error(&e, timeout))?,
                Err(_) if first_byte < timeout => return Err(FetchError::NoResponse(first_byte)),
                Err(_) => return Err(FetchError::Timeout(timeout)),
            };
            if let Some(peer) = response.remote_addr() {
                self.inner
                    .policy
                    .check_ip_for_host(url.host_str(), peer.ip())?;
            }
            let headers = response.headers();
            let text = |name: HeaderName| header_text(headers, &name);
            let mut answer = PostResponse {
                status: response.status().as_u16(),
                retry_after: text(header::RETRY_AFTER),
                rate_limit_reset_after: text(HeaderName::from_static("x-ratelimit-reset-after")),
                body: Bytes::new(),
                from_public_address: is_public_peer(&response),
            };
            let mut read = BytesMut::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| FetchError::Body(error_chain(&e)))?
            {
                let room = max_answer_bytes.saturating_sub(read.len());
                read.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if read.len() >= max_answer_bytes {
                    break;
                }
            }
            answer.body = read.freeze();
            Ok(answer)
        };
        let result = tokio::time::timeout(timeout, post)
            .await
            .unwrap_or(Err(FetchError::Timeout(timeout)));
        match &result {
            Ok(answer) => tracing::debug!(
                url = %crate::redact_url(url.as_str()),
                status = answer.status,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "posted"
            ),
            Err(error) => tracing::debug!(
                url = %crate::redact_url(url.as_str()),
                %error,
                "post failed"
            ),
        }
        result
    }

    fn client_for(&self, proxy: Option<&Url>) -> Result<reqwest::Client, FetchError> {
        let Some(proxy_url) = proxy else {
            return Ok(self.inner.direct.clone());
        };
        self.inner.policy.check_proxy_url(proxy_url)?;
        let key = proxy_url.as_str().to_owned();
        let mut cache = self
            .inner
            .proxied
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(client) = cache.get(&key) {
            return Ok(client.clone());
        }
        let proxy = reqwest::Proxy::all(proxy_url.as_str())
            .map_err(|e| FetchError::InvalidProxy(error_chain(&e)))?;
        let client = build_reqwest(&self.inner.config, &self.inner.resolver, Some(proxy))?;
        if cache.len() >= MAX_PROXY_CLIENTS {
            cache.clear();
        }
        cache.insert(key, client.clone());
        Ok(client)
    }
}

fn build_reqwest(
    config: &ClientConfig,
    resolver: &GuardedResolver,
    proxy: Option<reqwest::Proxy>,
) -> Result<reqwest::Client, FetchError> {
    // `no_proxy` first: HTTP_PROXY and friends from the environment would send requests
    // around the resolver. Only the explicit per-feed proxy is added back.
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .user_agent(config.user_agent.clone())
        .timeout(config.timeout)
        .connect_timeout(config.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .gzip(true)
        .brotli(true)
        .deflate(true)
        .dns_resolver(resolver.clone());
    if let Some(proxy) = proxy {
        builder = builder.proxy(proxy);
    }
    builder
        .build()
        .map_err(|e| FetchError::Build(error_chain(&e)))
}

fn insert_header(headers: &mut HeaderMap, name: HeaderName, value: Option<&str>) {
    let Some(value) = value else { return };
    match HeaderValue::from_str(value) {
        Ok(value) => {
            headers.insert(name, value);
        }
        // A stored validator that is not a valid header value is skipped, not fatal: the
        // fetch just becomes unconditional.
        Err(_) => tracing::debug!(header = %name, "skipped a header value that is not valid"),
    }
}

/// The redirects followed: 301, 302, 303, 307, 308. (300 and 305 are not followed.)
fn is_followed_redirect(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    )
}

fn redirect_target(current: &Url, response: &reqwest::Response) -> Result<Url, FetchError> {
    let status = response.status().as_u16();
    let location = response
        .headers()
        .get(header::LOCATION)
        // Servers do send raw UTF-8 here; the URL parser percent-encodes it as browsers do.
        .and_then(|value| std::str::from_utf8(value.as_bytes()).ok())
        .map(str::trim)
        .filter(|value| !value.is_empty())
        .ok_or(FetchError::BadRedirect { status })?;
    // An unparsable Location is the server's mistake, judged like a missing one.
    current
        .join(location)
        .map_err(|_| FetchError::BadRedirect { status })
}

/// Where the redirects led.
struct Hops {
    url: Url,
    permanent_redirect: Option<Url>,
    redirects: usize,
}

/// How much of a body [`read_response`] reads.
struct BodyLimits<'a> {
    /// The most bytes accepted.
    max: usize,
    /// The turn a body past [`LARGE_BODY_BYTES`] waits for.
    large_bodies: &'a tokio::sync::Semaphore,
}

async fn read_response(
    mut response: reqwest::Response,
    hops: Hops,
    limits: BodyLimits<'_>,
    timeout: Duration,
) -> Result<FetchResponse, FetchError> {
    let body_limit = limits.max;
    let status = response.status().as_u16();
    let headers = response.headers();
    let text = |name: HeaderName| header_text(headers, &name);
    let (content_type, charset) = text(header::CONTENT_TYPE)
        .map(|value| parse_content_type(&value))
        .unwrap_or((None, None));
    let mut fetched = FetchResponse {
        status,
        url: hops.url,
        permanent_redirect: hops.permanent_redirect,
        redirects: hops.redirects,
        body: Bytes::new(),
        content_type,
        charset,
        etag: text(header::ETAG),
        last_modified: text(header::LAST_MODIFIED),
        cache_hints: CacheHints {
            retry_after: text(header::RETRY_AFTER),
            cache_control: text(header::CACHE_CONTROL),
            expires: text(header::EXPIRES),
            date: text(header::DATE),
        },
        remote_addr: response.remote_addr(),
        link: text(header::LINK),
    };
    // Only a 2xx body means anything to the caller; error pages are not read at all.
    if !fetched.is_success() {
        return Ok(fetched);
    }
    // Content-Length is gone when the body was compressed; then only counting helps.
    let announced = response.content_length().unwrap_or(0);
    if announced > body_limit as u64 {
        return Err(FetchError::BodyTooLarge { limit: body_limit });
    }
    // Held until the body is read: a large body waits for its turn (at most `wait`) before it
    // grows past LARGE_BODY_BYTES, and asks once.
    let wait = LARGE_BODY_WAIT.min(timeout / 5);
    let large_turn = || async {
        tokio::time::timeout(wait, limits.large_bodies.acquire())
            .await
            .ok()
            .and_then(Result::ok)
    };
    let (mut large_turn_held, mut asked) = (None, false);
    if announced > LARGE_BODY_BYTES as u64 {
        large_turn_held = large_turn().await;
        asked = true;
    }
    let mut body = BytesMut::with_capacity(announced as usize);
    // `chunk` yields decoded bytes, so the limit counts what a decompression bomb expands to.
    while let Some(chunk) = response.chunk().await.map_err(|e| {
        if e.is_timeout() {
            FetchError::Timeout(timeout)
        } else {
            FetchError::Body(error_chain(&e))
        }
    })? {
        let read = body.len().saturating_add(chunk.len());
        if read > body_limit {
            return Err(FetchError::BodyTooLarge { limit: body_limit });
        }
        if read > LARGE_BODY_BYTES && !asked {
            large_turn_held = large_turn().await;
            asked = true;
        }
        body.extend_from_slice(&chunk);
    }
    drop(large_turn_held);
    fetched.body = body.freeze();
    Ok(fetched)
}

/// A header's values as text, several joined with ", " (as HTTP allows for lists).
/// Non-UTF-8 bytes are replaced rather than failing the fetch.
fn header_text(headers: &HeaderMap, name: &HeaderName) -> Option<String> {
    let values: Vec<String> = headers
        .get_all(name)
        .iter()
        .map(|value| String::from_utf8_lossy(value.as_bytes()).trim().to_owned())
        .filter(|value| !value.is_empty())
        .collect();
    (!values.is_empty()).then(|| values.join(", "))
}

/// Splits `Content-Type` into the lower-cased media type and the `charset` parameter.
pub fn parse_content_type(value: &str) -> (Option<String>, Option<String>) {
    let mut parts = value.split(';');
    let media_type = parts
        .next()
        .map(|media| media.trim().to_ascii_lowercase())
        .filter(|media| !media.is_empty());
    let charset = parts.find_map(|parameter| {
        let (name, value) = parameter.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("charset") {
            return None;
        }
        let value = value.trim().trim_matches('"').trim();
        (!value.is_empty()).then(|| value.to_owned())
    });
    (media_type, charset)
}

fn map_reqwest_error(error: &reqwest::Error, timeout: Duration) -> FetchError {
    if let Some(refusal) = find_source::<Refusal>(error) {
        return FetchError::Refused(refusal.clone());
    }
    if error.is_timeout() {
        return FetchError::Timeout(timeout);
    }
    if error.is_connect() {
        return FetchError::Connect(error_chain(error));
    }
    if error.is_body() || error.is_decode() {
        return FetchError::Body(error_chain(error));
    }
    FetchError::Http(error_chain(error))
}

/// The first error of type `T` in the source chain (our resolver's refusal arrives wrapped
/// in reqwest's and hyper's connect errors).
fn find_source<T: std::error::Error + 'static>(error: &reqwest::Error) -> Option<&T> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(err) = current {
        if let Some(found) = err.downcast_ref::<T>() {
            return Some(found);
        }
        current = err.source();
    }
    None
}

/// The messages of the source chain below reqwest's own (which repeats the URL), joined.
fn error_chain(error: &reqwest::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = std::error::Error::source(error);
    while let Some(err) = current {
        let text = err.to_string();
        if !parts.iter().any(|seen| seen.contains(&text)) {
            parts.push(text);
        }
        current = err.source();
    }
    let text = if parts.is_empty() {
        error.to_string()
    } else {
        parts.join(": ")
    };
    // reqwest's own message names the request's URL ("error sending request for url (…)"),
    // which may carry a feed's token: messages are logged and shown, so it is redacted.
    match error.url() {
        Some(url) => text.replace(url.as_str(), &crate::redact::redact_url(url.as_str())),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_error_message_never_carries_the_urls_secrets() {
        // Connection refused, on a URL with a password and a token in it.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let url = "http://ann:hunter2@127.0.0.1:9/feed?token=s3cret";
        let error = client
            .get(url)
            .send()
            .await
            .expect_err("nothing listens on port 9");
        let message = error_chain(&error);
        assert!(!message.contains("s3cret"), "{message}");
        assert!(!message.contains("hunter2"), "{message}");
    }

    #[test]
    fn content_type_is_split_into_media_type_and_charset() {
        assert_eq!(
            parse_content_type("application/rss+xml; charset=Shift_JIS"),
            (Some("application/rss+xml".into()), Some("Shift_JIS".into()))
        );
        assert_eq!(
            parse_content_type("Text/XML;Charset=\"utf-8\""),
            (Some("text/xml".into()), Some("utf-8".into()))
        );
        assert_eq!(
            parse_content_type("text/html; q=1; charset=euc-jp"),
            (Some("text/html".into()), Some("euc-jp".into()))
        );
        assert_eq!(
            parse_content_type("application/xml"),
            (Some("application/xml".into()), None)
        );
        assert_eq!(parse_content_type(""), (None, None));
        assert_eq!(
            parse_content_type("text/xml; charset="),
            (Some("text/xml".into()), None)
        );
    }

    #[test]
    fn body_limit_messages_read_in_megabytes() {
        assert_eq!(
            FetchError::BodyTooLarge {
                limit: DEFAULT_MAX_BODY_BYTES
            }
            .to_string(),
            "refused: body larger than 5 MB"
        );
        assert_eq!(
            FetchError::BodyTooLarge { limit: 256 * 1024 }.to_string(),
            "refused: body larger than 256 KB"
        );
        assert_eq!(
            FetchError::BodyTooLarge { limit: 1000 }.to_string(),
            "refused: body larger than 1000 bytes"
        );
    }

    #[test]
    fn user_agent_names_tidings_its_version_and_url() {
        let agent = default_user_agent();
        assert!(agent.starts_with(&format!("tidings/{} (+", env!("CARGO_PKG_VERSION"))));
        assert!(agent.ends_with(')'));
        assert!(agent.contains("://"));
    }

    #[test]
    fn building_twice_does_not_panic_on_the_installed_provider() {
        GuardedClient::new(ClientConfig::default()).unwrap();
        GuardedClient::new(ClientConfig::default()).unwrap();
    }
}
