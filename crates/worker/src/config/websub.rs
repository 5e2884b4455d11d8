//! WebSub's settings (F18): whether feeds are subscribed, the callbacks' base, the lease asked
//! for and the safety-net polling of pushed feeds. The subscriber job is in [`crate::websub`].

use std::time::Duration;

use url::Url;

/// The lease tidings asks hubs for: 10 days, the spec's suggested default (hubs choose).
pub const DEFAULT_LEASE_SECONDS: i64 = 10 * 24 * 3600;
/// How often a feed whose hub pushes is still polled, as a safety net for lost pushes.
pub const DEFAULT_SAFETY_POLL: Duration = Duration::from_secs(6 * 3600);

/// WebSub settings. `Default` is off.
#[derive(Debug, Clone)]
pub struct WebSubConfig {
    /// Whether this process subscribes feeds to their hubs (`TIDINGS_WEBSUB`). Discovery and
    /// the callback work either way.
    pub enabled: bool,
    /// The server's public URL (`TIDINGS_BASE_URL`); callbacks are `{base}/websub/{token}`.
    /// Required when `enabled`.
    pub base_url: Option<Url>,
    /// The lease asked for, in seconds.
    pub lease_seconds: i64,
    /// How often a feed whose hub pushes is polled all the same.
    pub safety_poll: Duration,
}

impl Default for WebSubConfig {
    fn default() -> WebSubConfig {
        WebSubConfig {
            enabled: false,
            base_url: None,
            lease_seconds: DEFAULT_LEASE_SECONDS,
            safety_poll: DEFAULT_SAFETY_POLL,
        }
    }
}

impl WebSubConfig {
    /// Whether feeds are subscribed: on, with a base URL for the callbacks.
    pub fn is_on(&self) -> bool {
        self.enabled && self.base_url.is_some()
    }

    /// The callback URL of `token`.
    pub fn callback_url(&self, token: &str) -> Option<Url> {
        let base = self.base_url.as_ref()?;
        let mut url = base.clone();
        let path = format!("{}/websub/{token}", base.path().trim_end_matches('/'));
        url.set_path(&path);
        url.set_query(None);
        url.set_fragment(None);
        Some(url)
    }
}
