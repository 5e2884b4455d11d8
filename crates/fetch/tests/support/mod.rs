//! What the client tests share besides the local server (`tidings_testkit::TestServer`): a
//! client allowed to reach it.

use tidings_fetch::{AddressPolicy, ClientConfig, GuardedClient};

/// A client that may reach loopback, as `TIDINGS_ALLOW_PRIVATE_NETWORKS=true` gives.
pub fn lan_client() -> GuardedClient {
    GuardedClient::new(lan_config()).unwrap()
}

/// The settings of [`lan_client`].
pub fn lan_config() -> ClientConfig {
    ClientConfig {
        address_policy: AddressPolicy {
            allow_private_networks: true,
            ..AddressPolicy::default()
        },
        ..ClientConfig::default()
    }
}
