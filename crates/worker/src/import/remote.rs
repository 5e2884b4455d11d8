//! Reading a history from another reader's server, whichever API it speaks, for the command
//! line (as the operator) and for the server's import jobs (through the address guard).

use super::greader::GReaderClient;
use super::miniflux::MinifluxClient;
use super::{History, HistoryError};

/// Where a history is read from over the network, with the credentials. Its `Debug` shows
/// no password or key, so that it can be logged.
#[derive(Clone)]
pub enum HistorySource {
    /// A Google Reader API server: its API root, the login and the (API) password.
    GReader {
        /// The API's root.
        url: String,
        /// The login.
        login: String,
        /// The password.
        password: String,
    },
    /// A Miniflux server: its address and an API key.
    Miniflux {
        /// The server's address.
        url: String,
        /// The API key.
        api_key: String,
    },
}

impl std::fmt::Debug for HistorySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HistorySource::GReader { url, login, .. } => f
                .debug_struct("GReader")
                .field("url", url)
                .field("login", login)
                .finish_non_exhaustive(),
            HistorySource::Miniflux { url, .. } => f
                .debug_struct("Miniflux")
                .field("url", url)
                .finish_non_exhaustive(),
        }
    }
}

impl HistorySource {
    /// The kind's name: `greader` or `miniflux`.
    pub fn kind(&self) -> &'static str {
        match self {
            HistorySource::GReader { .. } => "greader",
            HistorySource::Miniflux { .. } => "miniflux",
        }
    }

    /// The server's address, as given.
    pub fn url(&self) -> &str {
        match self {
            HistorySource::GReader { url, .. } | HistorySource::Miniflux { url, .. } => url,
        }
    }

    /// Signs in and reads the history. With `guard` (an import the server runs for a user),
    /// the server's address and every connection to it pass the feeds' address guard.
    pub async fn read(
        &self,
        guard: Option<&tidings_fetch::GuardedClient>,
    ) -> Result<History, HistoryError> {
        match self {
            HistorySource::GReader {
                url,
                login,
                password,
            } => {
                GReaderClient::login(url, login, password, guard)
                    .await?
                    .history()
                    .await
            }
            HistorySource::Miniflux { url, api_key } => {
                MinifluxClient::new(url, api_key, guard)?.history().await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_read_for_a_user_passes_the_address_guard_and_shows_no_secret() {
        let guard = tidings_fetch::GuardedClient::new(tidings_fetch::ClientConfig::default())
            .expect("client");
        for source in [
            HistorySource::Miniflux {
                url: "http://127.0.0.1:9".into(),
                api_key: "secret-key".into(),
            },
            HistorySource::GReader {
                url: "http://169.254.169.254/api/greader.php".into(),
                login: "me".into(),
                password: "secret-password".into(),
            },
        ] {
            let error = source.read(Some(&guard)).await.unwrap_err().to_string();
            assert!(
                error.contains("not an address this server may reach"),
                "{error}"
            );
            let shown = format!("{source:?} {error}");
            assert!(!shown.contains("secret"), "{shown}");
        }
    }
}
