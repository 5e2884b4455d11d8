//! The resolver behind every guarded request: it looks a name up and hands reqwest only the
//! addresses the [`AddressPolicy`] allows. Because reqwest connects to exactly the addresses
//! returned here, the address checked is the address connected to, and a name whose DNS
//! answer changes between two lookups (DNS rebinding) cannot slip past the check.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::address::{AddressPolicy, Refusal};

/// Resolves with the system resolver (or a fixed override) and drops refused addresses.
#[derive(Debug, Clone)]
pub(crate) struct GuardedResolver {
    pub(crate) policy: Arc<AddressPolicy>,
    /// Names answered from this table instead of DNS; the answers are still checked.
    pub(crate) overrides: Arc<HashMap<String, Vec<IpAddr>>>,
}

/// A lookup that found nothing at all (as opposed to only refused addresses).
#[derive(Debug, thiserror::Error)]
#[error("{0} did not resolve to any address")]
pub(crate) struct NoAddress(String);

impl GuardedResolver {
    async fn lookup(
        &self,
        name: String,
    ) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
        self.policy.check_host_name(&name)?;
        let found: Vec<SocketAddr> = match self.overrides.get(&name) {
            Some(addresses) => addresses.iter().map(|ip| SocketAddr::new(*ip, 0)).collect(),
            None => tokio::net::lookup_host((name.as_str(), 0)).await?.collect(),
        };
        let mut first_refused = None;
        let allowed: Vec<SocketAddr> = found
            .iter()
            .copied()
            .filter(
                |addr| match self.policy.refused_class_for_host(Some(&name), addr.ip()) {
                    None => true,
                    Some(class) => {
                        first_refused.get_or_insert((addr.ip(), class));
                        false
                    }
                },
            )
            .collect();
        if !allowed.is_empty() {
            return Ok(allowed);
        }
        match first_refused {
            Some((address, class)) => {
                tracing::debug!(%name, %address, "refused every resolved address");
                Err(Box::new(Refusal::ResolvedAddress {
                    name,
                    address,
                    class,
                }))
            }
            None => Err(Box::new(NoAddress(name))),
        }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let resolver = self.clone();
        let name = name.as_str().trim_end_matches('.').to_ascii_lowercase();
        Box::pin(async move {
            let addresses = resolver.lookup(name).await?;
            let addresses: Addrs = Box::new(addresses.into_iter());
            Ok(addresses)
        })
    }
}
