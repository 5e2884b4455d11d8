//! The pieces of WebSub a fetch round stands on: which hub and topic a fetched response
//! advertises, and the random callback tokens and secrets. The subscriber job, the hub's
//! verifications and pushes are in [`crate::websub`].

use tidings_feed::{AdvertisedLinks, WebSubLinks};
use tidings_fetch::FetchResponse;

/// A random token or secret: 32 bytes, hex.
pub fn random_token() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

/// The hub and topic a fetched response advertises: its `Link` headers first, then the
/// document's own links (`document`), the topic defaulting to the URL that answered.
pub fn discovered_links(
    response: &FetchResponse,
    document: &AdvertisedLinks,
) -> Option<WebSubLinks> {
    let headers = response
        .link
        .as_deref()
        .map(|value| AdvertisedLinks::of_link_header(value, &response.url))
        .unwrap_or_default();
    tidings_feed::websub_links(&headers, document, &response.url)
}
