//! Proxy variables in the environment must not route requests around the guard: the client
//! ignores them. The variables are set only in a process of the test's own (the test binary run
//! again with them), so the other tests of the binary never see them, and nothing changes the
//! environment of a running process.

use axum::Router;
use tidings_fetch::FetchRequest;
use tidings_testkit::TestServer;

use crate::support::lan_client;

/// Where the child process fetches from (the parent's target server).
const TARGET: &str = "TIDINGS_TEST_PROXY_TARGET";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_proxies_are_ignored() {
    let test = "env_proxy::environment_proxies_are_ignored";
    let proxy = TestServer::start(Router::new().fallback(|| async { "from the proxy" })).await;
    let target = TestServer::start(Router::new().fallback(|| async { "direct" })).await;
    let (proxy_url, target_url) = (proxy.url(""), target.url("/feed"));
    let in_child = tokio::task::spawn_blocking(move || {
        tidings_testkit::process::alone(test, |child| {
            for name in [
                "HTTP_PROXY",
                "http_proxy",
                "HTTPS_PROXY",
                "ALL_PROXY",
                "all_proxy",
            ] {
                child.env(name, &proxy_url);
            }
            let child = child.env_remove("NO_PROXY").env_remove("no_proxy");
            child.env(TARGET, target_url);
        })
    })
    .await
    .unwrap();
    if in_child {
        // The environment names the parent's proxy; the client must go to the target direct.
        let target = std::env::var(TARGET).expect("the parent names the target");
        let response = lan_client()
            .fetch(&FetchRequest::parse(&target).unwrap())
            .await
            .unwrap();
        assert_eq!(response.body.as_ref(), b"direct");
        return;
    }
    assert_eq!(proxy.total_hits(), 0, "a request went through the proxy");
    assert_eq!(target.total_hits(), 1, "the child reached the target");
}
