//! Proxy variables in the environment must not route requests around the guard: the client
//! ignores them. One test in its own binary, because it changes the process environment.

mod support;

use axum::Router;
use support::{TestServer, lan_client};
use tidings_fetch::FetchRequest;

#[tokio::test(flavor = "current_thread")]
async fn environment_proxies_are_ignored() {
    let proxy = TestServer::start(Router::new().fallback(|| async { "from the proxy" })).await;
    let target = TestServer::start(Router::new().fallback(|| async { "direct" })).await;
    for name in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "all_proxy",
    ] {
        // SAFETY: this binary runs this one test on a single-threaded runtime, and nothing
        // else reads the environment while it is changed.
        unsafe { std::env::set_var(name, proxy.url("")) };
    }
    // SAFETY: as above.
    unsafe { std::env::remove_var("NO_PROXY") };
    let response = lan_client()
        .fetch(&FetchRequest::parse(&target.url("/feed")).unwrap())
        .await
        .unwrap();
    assert_eq!(response.body.as_ref(), b"direct");
    assert_eq!(proxy.hits(), 0);
    assert_eq!(target.hits(), 1);
}
