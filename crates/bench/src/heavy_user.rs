//! `tidings-bench heavy-user`: one user with a very large account (issue 38: 1,000,000 unread
//! items in 500 subscriptions, from `tidings-bench generate --users 1 --subscriptions 500`),
//! through a running server, as the web UI and the Fever apps ask.
//!
//! Three measurements, one function each:
//! - the UI's first screen: the requests the UI sends when it opens (`app.js` `loadSession`,
//!   `state.js`, the list's first page in `list-loading.js`, the sidebar's tags), all at once
//!   as the browser sends them, timed each and as a screen (the slowest of them);
//! - "Mark all read" as the UI sends it (`all` with `before`), then its undo, timed each;
//! - Fever's `unread_item_ids`, the list of every unread id.
//!
//! The REST API allows one user 120 requests a minute: a screen answered `429` is waited out
//! by its `Retry-After` and sent again, not timed. The Google Reader first sync is
//! `tidings-bench sync --first-sync N --ids-page N`, search is `tidings-bench search`.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use tidings::output::outln;

use crate::sync::load_average;

/// The longest `Retry-After` the bench waits out.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(61);

/// Arguments of `tidings-bench heavy-user`.
#[derive(Debug, Args)]
pub struct HeavyUserArgs {
    /// The running server's base URL.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// The API keys file of `tidings-bench generate`: its first key is the heavy user's.
    #[arg(long, default_value = "bench-keys.txt")]
    pub keys_file: std::path::PathBuf,
    /// First screens timed (after one not timed, which warms the caches).
    #[arg(long, default_value_t = 30)]
    pub screens: usize,
    /// "Mark all read" and undo pairs timed.
    #[arg(long, default_value_t = 3)]
    pub marks: usize,
    /// Fever `unread_item_ids` requests timed.
    #[arg(long, default_value_t = 5)]
    pub fever: usize,
}

/// The requests of the UI's first screen, under `/api/v1`, as the UI sends them with its
/// default preferences (pages of 50, the unread view, 20 tags in the sidebar).
const FIRST_SCREEN: [&str; 7] = [
    "/me",
    "/preferences",
    "/subscriptions",
    "/groups",
    "/counts",
    "/items?filter=unread&limit=50&include=content",
    "/tags?limit=20",
];

/// The HTTP client, the server's base URL and the heavy user's API key.
struct Target {
    client: reqwest::Client,
    base: String,
    key: String,
}

/// Runs `tidings-bench heavy-user`.
pub async fn run(args: HeavyUserArgs) -> anyhow::Result<ExitCode> {
    let key = std::fs::read_to_string(&args.keys_file)
        .with_context(|| format!("cannot read {}", args.keys_file.display()))?
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(String::from)
        .with_context(|| format!("{} holds no API key", args.keys_file.display()))?;
    let target = Target {
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(300))
            .build()?,
        base: args.url.trim_end_matches('/').to_string(),
        key,
    };
    let me = target.get_json("/me").await?;
    let username = me["user"]["username"]
        .as_str()
        .context("GET /api/v1/me answered no user.username")?
        .to_string();
    let counts = target.get_json("/counts").await?;
    outln!(
        "tidings-bench heavy-user: {username} at {}, {} unread in {} subscriptions; load {}",
        target.base,
        counts["unread"],
        counts["subscriptions"].as_array().map_or(0, Vec::len),
        load_average()
    );
    first_screens(&target, args.screens).await?;
    let mut healthy = true;
    for _ in 0..args.marks {
        healthy &= mark_all_and_undo(&target).await?;
    }
    fever_unread_ids(&target, &username, args.fever).await?;
    Ok(if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

impl Target {
    /// A REST request as the heavy user.
    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, format!("{}/api/v1{path}", self.base))
            .bearer_auth(&self.key)
    }

    /// Sends a request (rebuilt for each try) until it is not answered 429, waiting out each
    /// `Retry-After`; answers the time of the try that was not limited and its JSON.
    async fn send(
        &self,
        request: impl Fn() -> reqwest::RequestBuilder,
    ) -> anyhow::Result<(Duration, serde_json::Value)> {
        loop {
            let sent = Instant::now();
            let response = request()
                .send()
                .await
                .context("the server did not answer")?;
            let status = response.status();
            let wait = retry_wait(response.headers());
            // The body is part of the answer's time.
            let body = response.bytes().await?;
            let took = sent.elapsed();
            if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
                tokio::time::sleep(wait).await;
                continue;
            }
            if !status.is_success() {
                bail!(
                    "the server answered {status}: {}",
                    String::from_utf8_lossy(&body[..body.len().min(300)])
                );
            }
            let json = serde_json::from_slice(&body).context("the answer is not JSON")?;
            return Ok((took, json));
        }
    }

    /// POST of a JSON body to a REST path: its time and answer.
    async fn post_json(
        &self,
        path: &str,
        body: &str,
    ) -> anyhow::Result<(Duration, serde_json::Value)> {
        self.send(|| {
            self.request(reqwest::Method::POST, path)
                .header("content-type", "application/json")
                .body(body.to_string())
        })
        .await
        .with_context(|| format!("POST /api/v1{path}"))
    }

    /// GET of a REST path, untimed.
    async fn get_json(&self, path: &str) -> anyhow::Result<serde_json::Value> {
        let (_, json) = self
            .send(|| self.request(reqwest::Method::GET, path))
            .await
            .with_context(|| format!("GET /api/v1{path}"))?;
        Ok(json)
    }
}

/// The wait an answer's `Retry-After` asks for (a 429's), at least a second.
fn retry_wait(headers: &reqwest::header::HeaderMap) -> Duration {
    headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(1), Duration::from_secs)
        .clamp(Duration::from_secs(1), MAX_RETRY_WAIT)
}

/// Sends the first screen's requests `screens + 1` times, all of a screen at once; prints
/// median, p95 and max per request and for the screen (its slowest request), the first
/// screen left out.
async fn first_screens(target: &Target, screens: usize) -> anyhow::Result<()> {
    let mut per_path: Vec<Vec<Duration>> = vec![Vec::new(); FIRST_SCREEN.len()];
    let mut whole = Vec::new();
    for round in 0..=screens {
        let answers = futures_util::future::join_all(FIRST_SCREEN.iter().map(|path| async move {
            target
                .send(|| target.request(reqwest::Method::GET, path))
                .await
                .with_context(|| format!("GET /api/v1{path}"))
        }))
        .await;
        let mut slowest = Duration::ZERO;
        for (n, answer) in answers.into_iter().enumerate() {
            let (took, _) = answer?;
            slowest = slowest.max(took);
            if round > 0 {
                per_path[n].push(took);
            }
        }
        if round > 0 {
            whole.push(slowest);
        }
    }
    outln!(
        "{:52} {:>9} {:>9} {:>9}  load {}",
        format!("first screen, {screens} times"),
        "median",
        "p95",
        "max",
        load_average()
    );
    for (path, mut samples) in FIRST_SCREEN.iter().zip(per_path) {
        print_quantiles(&format!("GET /api/v1{path}"), &mut samples)?;
    }
    print_quantiles("the screen (its slowest request)", &mut whole)
}

/// Prints a line of median, p95 and max.
fn print_quantiles(label: &str, samples: &mut [Duration]) -> anyhow::Result<()> {
    samples.sort();
    outln!(
        "{label:52} {:>9} {:>9} {:>9}",
        crate::quantiles::ms_at(samples, 0.5, 1),
        crate::quantiles::ms_at(samples, 0.95, 1),
        crate::quantiles::ms_at(samples, 1.0, 1)
    );
    Ok(())
}

/// "Mark all read" as the UI sends it, then its undo; prints both times and the counts.
/// Answers whether the undo made every marked item unread again.
async fn mark_all_and_undo(target: &Target) -> anyhow::Result<bool> {
    let before = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let body = serde_json::json!({"all": true, "before": before}).to_string();
    let (marking, result) = target.post_json("/items/mark-read", &body).await?;
    let marked = result["marked"].as_u64().unwrap_or(0);
    let undo = result["undo"].to_string();
    let (undoing, restored) = target.post_json("/items/mark-read/undo", &undo).await?;
    let restored = restored["restored"].as_u64().unwrap_or(0);
    let unread = target.get_json("/counts").await?["unread"]
        .as_u64()
        .unwrap_or(0);
    outln!(
        "mark all read: {marked} items in {:.2} s; undo: {restored} unread again in {:.2} s; \
         {unread} unread after; load {}",
        marking.as_secs_f64(),
        undoing.as_secs_f64(),
        load_average()
    );
    Ok(marked > 0 && unread >= marked)
}

/// Fever's `unread_item_ids` `times` times (the key's Fever digest is md5(username:key));
/// prints each time and the number of ids.
async fn fever_unread_ids(target: &Target, username: &str, times: usize) -> anyhow::Result<()> {
    let digest = tidings_server::base::auth::fever_key_digest(username, &target.key);
    let mut samples = Vec::with_capacity(times);
    let mut ids = 0;
    for _ in 0..times {
        let (took, answer) = target
            .send(|| {
                target
                    .client
                    .post(format!("{}/fever/?api&unread_item_ids", target.base))
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(format!("api_key={digest}"))
            })
            .await
            .context("POST /fever/?api&unread_item_ids")?;
        if answer["auth"] != 1 {
            bail!(
                "Fever refused the key's digest (auth {}): was the key made by this version of `tidings-bench generate`?",
                answer["auth"]
            );
        }
        // A comma-separated string of ids.
        ids = answer["unread_item_ids"]
            .as_str()
            .map_or(0, |s| s.split(',').filter(|id| !id.is_empty()).count());
        samples.push(took);
    }
    print_quantiles(
        &format!("Fever unread_item_ids ({ids} ids), {times} times"),
        &mut samples,
    )
}
