//! `tidings feed show URL` and `tidings feed set URL --suspend|--resume --proxy URL|--no-proxy`:
//! a shared feed's operator settings. Both act on every subscriber's fetch of the feed, and a
//! proxy URL may carry credentials, so they belong to whoever runs the server (the admin API
//! has them too); a user pauses only their own subscription.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use tidings_store::{FeedSettings, FeedSettingsChanges};

use crate::config::GlobalConfig;
use crate::output::outln;

/// `tidings feed …`.
#[derive(Debug, Subcommand)]
pub enum FeedCommand {
    /// Show a feed's operator settings (suspended, proxy) and how many follow it.
    Show(FeedShowArgs),
    /// Suspend or resume a feed for everyone who follows it, or set or remove its proxy.
    Set(Box<FeedSetArgs>),
}

/// Arguments of `tidings feed show`.
#[derive(Debug, Args)]
pub struct FeedShowArgs {
    /// The feed's URL (any spelling of it, as subscribed).
    pub url: String,
}

/// Arguments of `tidings feed set`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("change").required(true).multiple(true)
    .args(["suspend", "resume", "proxy", "no_proxy"])))]
#[command(group(clap::ArgGroup::new("fetching").args(["suspend", "resume"])))]
#[command(group(clap::ArgGroup::new("proxying").args(["proxy", "no_proxy"])))]
pub struct FeedSetArgs {
    /// The feed's URL (any spelling of it, as subscribed).
    pub url: String,
    /// Fetch it for nobody, whoever follows it.
    #[arg(long)]
    pub suspend: bool,
    /// Fetch it again (due at once).
    #[arg(long)]
    pub resume: bool,
    /// Fetch it through this proxy: http://, https://, socks5:// or socks5h:// with a host
    /// and port (credentials before the host if the proxy wants them).
    #[arg(long, value_name = "URL")]
    pub proxy: Option<String>,
    /// Fetch it directly again.
    #[arg(long)]
    pub no_proxy: bool,
    /// The outbound settings the proxy's address is checked against (the worker's).
    #[command(flatten)]
    pub fetch: super::worker::FetchArgs,
}

/// Runs `tidings feed …`.
pub async fn run(config: &GlobalConfig, command: FeedCommand) -> anyhow::Result<ExitCode> {
    match command {
        FeedCommand::Show(args) => show(config, &args).await,
        FeedCommand::Set(args) => set(config, *args).await,
    }
}

async fn show(config: &GlobalConfig, args: &FeedShowArgs) -> anyhow::Result<ExitCode> {
    let store = super::open_existing_store(config).await?;
    let result = async {
        match store.feed_id_by_url(&args.url).await? {
            Some(id) => Ok(Some(store.feed_settings(id).await?)),
            None => Ok::<_, anyhow::Error>(None),
        }
    }
    .await;
    store.close().await;
    report(result?, &args.url)
}

async fn set(config: &GlobalConfig, args: FeedSetArgs) -> anyhow::Result<ExitCode> {
    // The proxy is checked before the database is opened: a refusal changes nothing.
    let proxy_url = match (&args.proxy, args.no_proxy) {
        (Some(text), _) => {
            let policy = args
                .fetch
                .check()?
                .client()?
                .config()
                .address_policy
                .clone();
            match policy.parse_proxy_url(text) {
                Ok(url) => Some(Some(url.to_string())),
                Err(reason) => {
                    eprintln!("tidings: {reason} {}", tidings_fetch::PROXY_URL_FORMS);
                    return Ok(ExitCode::from(2));
                }
            }
        }
        (None, true) => Some(None),
        (None, false) => None,
    };
    let changes = FeedSettingsChanges {
        suspended: (args.suspend || args.resume).then_some(args.suspend),
        proxy_url,
    };
    let store = super::open_existing_store(config).await?;
    let result = async {
        match store.feed_id_by_url(&args.url).await? {
            Some(id) => Ok(Some(store.update_feed_settings(id, &changes).await?)),
            None => Ok::<_, anyhow::Error>(None),
        }
    }
    .await;
    store.close().await;
    report(result?, &args.url)
}

/// Prints the feed's settings (the proxy's password hidden), or says there is no such feed.
fn report(feed: Option<FeedSettings>, url: &str) -> anyhow::Result<ExitCode> {
    let Some(feed) = feed else {
        eprintln!(
            "tidings: no feed has the URL {url:?}; give the feed's URL as a subscription shows \
             it (feed_url), not its site's"
        );
        return Ok(ExitCode::FAILURE);
    };
    let proxy = feed
        .proxy_url
        .as_deref()
        .map_or_else(|| "none".to_owned(), tidings_fetch::redact_url);
    outln!(
        "feed {} {}: {}; proxy: {proxy}; {} subscriber{} ({} not paused)",
        feed.id,
        feed.url,
        if feed.suspended {
            "suspended for everyone"
        } else if feed.active_subscribers == 0 {
            "not fetched (every subscription is paused)"
        } else {
            "fetched"
        },
        feed.subscribers,
        if feed.subscribers == 1 { "" } else { "s" },
        feed.active_subscribers
    );
    Ok(ExitCode::SUCCESS)
}
