//! The SSRF guard against real servers on loopback: with private networks refused, no
//! spelling, name or redirect gets a request to the local server; with them allowed, it is
//! reachable.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::support::lan_config;
use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tidings_fetch::{
    AddressClass, AddressPolicy, ClientConfig, FailureKind, FetchError, FetchRequest,
    GuardedClient, Refusal,
};
use tidings_testkit::TestServer;

/// The "internal service" that must never be reached.
async fn victim() -> TestServer {
    TestServer::start(Router::new().fallback(|| async { "internal secret" })).await
}

fn overrides(entries: &[(&str, &str)]) -> HashMap<String, Vec<IpAddr>> {
    entries
        .iter()
        .map(|(name, ip)| (name.to_string(), vec![ip.parse().unwrap()]))
        .collect()
}

/// The production policy (private networks refused), with test names mapped to loopback.
fn strict_client() -> GuardedClient {
    GuardedClient::new(ClientConfig {
        dns_overrides: overrides(&[("public.test", "127.0.0.1"), ("mixed.test", "127.0.0.1")]),
        ..ClientConfig::default()
    })
    .unwrap()
}

async fn refusal(client: &GuardedClient, url: &str) -> Refusal {
    match client.fetch(&FetchRequest::parse(url).unwrap()).await {
        Err(FetchError::Refused(refusal)) => refusal,
        other => panic!("{url} was not refused: {other:?}"),
    }
}

#[tokio::test]
async fn loopback_in_every_spelling_is_refused_before_any_request() {
    let server = victim().await;
    let port = server.addr.port();
    let client = strict_client();
    let spellings = [
        "127.0.0.1",
        "127.1",
        "2130706433",
        "0x7f000001",
        "0x7f.0.0.1",
        "0x7f.1",
        "0177.0.0.1",
        "0177.1",
        "017700000001",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[::127.0.0.1]",
        "[::1]",
        "0.0.0.0",
        "0",
    ];
    for host in spellings {
        let url = format!("http://{host}:{port}/secret");
        let refused = refusal(&client, &url).await;
        assert!(
            matches!(refused, Refusal::Address { .. }),
            "{url}: {refused:?}"
        );
        assert!(refused.to_string().starts_with("refused: "), "{refused}");
    }
    assert_eq!(
        refusal(&client, &server.url("/")).await.to_string(),
        "refused: 127.0.0.1 is a loopback address (to allow this host alone, list it in TIDINGS_ALLOWED_NETWORKS; to allow feeds on every private network, set TIDINGS_ALLOW_PRIVATE_NETWORKS=true or --allow-private-networks)"
    );
    assert_eq!(
        refusal(&client, &format!("http://[::ffff:127.0.0.1]:{port}/"))
            .await
            .to_string(),
        "refused: ::ffff:127.0.0.1 is a loopback address (to allow this host alone, list it in TIDINGS_ALLOWED_NETWORKS; to allow feeds on every private network, set TIDINGS_ALLOW_PRIVATE_NETWORKS=true or --allow-private-networks)"
    );
    assert_eq!(server.total_hits(), 0, "the local server saw a request");
}

#[tokio::test]
async fn local_names_and_names_resolving_to_loopback_are_refused() {
    let server = victim().await;
    let client = strict_client();
    for host in [
        "localhost",
        "LOCALHOST",
        "app.localhost",
        "printer.local",
        "intranet",
    ] {
        let refused = refusal(&client, &server.url_as(host, "/")).await;
        assert!(
            matches!(refused, Refusal::LocalName(_)),
            "{host}: {refused:?}"
        );
    }
    // Metadata services' names are refused as such, whatever any setting says.
    let refused = refusal(&client, &server.url_as("metadata.google.internal", "/")).await;
    assert_eq!(
        refused,
        Refusal::MetadataName("metadata.google.internal".into())
    );
    // A public-looking name whose DNS answer is loopback: refused at connect time.
    let refused = refusal(&client, &server.url_as("public.test", "/secret")).await;
    assert_eq!(
        refused,
        Refusal::ResolvedAddress {
            name: "public.test".into(),
            address: "127.0.0.1".parse().unwrap(),
            class: AddressClass::Loopback,
        }
    );
    assert_eq!(
        refused.to_string(),
        "refused: public.test resolves to 127.0.0.1, a loopback address (to allow this host alone, list it in TIDINGS_ALLOWED_NETWORKS; to allow feeds on every private network, set TIDINGS_ALLOW_PRIVATE_NETWORKS=true or --allow-private-networks)"
    );
    // The same through a trailing dot and upper case.
    refusal(&client, &server.url_as("PUBLIC.test.", "/")).await;
    assert_eq!(server.total_hits(), 0, "the local server saw a request");
}

#[tokio::test]
async fn schemes_and_credentials_are_refused() {
    let client = strict_client();
    assert_eq!(
        refusal(&client, "ftp://example.com/feed").await.to_string(),
        "refused: scheme ftp is not http(s)"
    );
    assert_eq!(
        refusal(&client, "file:///etc/passwd").await,
        Refusal::Scheme("file".into())
    );
    assert_eq!(
        refusal(&client, "http://user:secret@example.com/").await,
        Refusal::UserInfo
    );
    let error = client
        .fetch(&FetchRequest::parse("ftp://example.com/").unwrap())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), FailureKind::Refused);
}

/// A "public" server (127.0.0.2, exempted as one allowed network, as an operator would
/// exempt one host) that redirects wherever it is told.
async fn redirector() -> TestServer {
    let router = Router::new().route(
        "/to",
        get(|axum::extract::Query(query): axum::extract::Query<HashMap<String, String>>| async move {
            (StatusCode::FOUND, [(header::LOCATION, query["url"].clone())]).into_response()
        }),
    );
    TestServer::start_on("127.0.0.2", router).await
}

#[tokio::test]
async fn redirects_into_the_local_network_are_refused() {
    let server = victim().await;
    let public = redirector().await;
    let client = GuardedClient::new(ClientConfig {
        address_policy: AddressPolicy {
            allow_private_networks: false,
            allowed_networks: vec!["127.0.0.2/32".parse().unwrap()],
            ..AddressPolicy::default()
        },
        dns_overrides: overrides(&[("public.test", "127.0.0.2"), ("sneaky.test", "127.0.0.1")]),
        ..ClientConfig::default()
    })
    .unwrap();
    let port = server.addr.port();
    let targets = [
        format!("http://127.0.0.1:{port}/secret"),
        format!("http://2130706433:{port}/secret"),
        format!("http://[::ffff:127.0.0.1]:{port}/secret"),
        format!("http://localhost:{port}/secret"),
        format!("http://sneaky.test:{port}/secret"),
        format!("ftp://127.0.0.1:{port}/secret"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
    ];
    for target in &targets {
        let start =
            url::Url::parse_with_params(&public.url_as("public.test", "/to"), [("url", target)])
                .unwrap();
        let error = client.fetch(&FetchRequest::new(start)).await.unwrap_err();
        assert!(
            matches!(error, FetchError::Refused(_)),
            "{target}: {error:?}"
        );
    }
    assert_eq!(
        public.total_hits(),
        targets.len(),
        "every first hop reached the public server"
    );
    assert_eq!(
        server.total_hits(),
        0,
        "a redirect reached the local server"
    );
}

#[tokio::test]
async fn allowing_private_networks_reaches_the_local_server() {
    let server = victim().await;
    let client = GuardedClient::new(ClientConfig {
        dns_overrides: overrides(&[("public.test", "127.0.0.1")]),
        ..lan_config()
    })
    .unwrap();
    for url in [
        server.url("/"),
        server.url_as("localhost", "/"),
        server.url_as("public.test", "/"),
        server.url_as("2130706433", "/"),
    ] {
        let response = client
            .fetch(&FetchRequest::parse(&url).unwrap())
            .await
            .unwrap();
        assert_eq!(response.body.as_ref(), b"internal secret", "{url}");
        assert_eq!(
            response.remote_addr.map(|a| a.ip()),
            Some("127.0.0.1".parse().unwrap())
        );
    }
    assert_eq!(server.total_hits(), 4);
    // Unspecified stays refused whatever the setting.
    let refused = refusal(&client, &format!("http://0.0.0.0:{}/", server.addr.port())).await;
    assert_eq!(
        refused.to_string(),
        "refused: 0.0.0.0 is an unspecified address"
    );
    let refused = refusal(&client, &format!("http://[::]:{}/", server.addr.port())).await;
    assert_eq!(refused.to_string(), "refused: :: is an unspecified address");
    assert_eq!(server.total_hits(), 4);
}

#[tokio::test]
async fn a_proxy_on_a_private_address_needs_private_networks() {
    let proxy = victim().await;
    let request = FetchRequest::parse("http://feeds.example.com/")
        .unwrap()
        .with_proxy(Some(url::Url::parse(&proxy.url("")).unwrap()));
    let refused = match strict_client().fetch(&request).await {
        Err(FetchError::Refused(refused)) => refused,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        refused.to_string(),
        "refused: 127.0.0.1 is a loopback address (to allow this host alone, list it in TIDINGS_ALLOWED_NETWORKS; to allow feeds on every private network, set TIDINGS_ALLOW_PRIVATE_NETWORKS=true or --allow-private-networks)"
    );
    assert_eq!(proxy.total_hits(), 0);
}

/// Binds a server on 127.0.0.2 and another on 127.0.0.1 with the same port, so a name that
/// resolves to both reaches either depending only on which address is dialled.
async fn twin_servers() -> (TestServer, TestServer) {
    for _ in 0..20 {
        let allowed =
            TestServer::start_on("127.0.0.2", Router::new().fallback(|| async { "allowed" })).await;
        let secret = Router::new().fallback(|| async { "internal secret" });
        if let Some(local) =
            TestServer::start_on_port("127.0.0.1", allowed.addr.port(), secret).await
        {
            return (allowed, local);
        }
    }
    panic!("no port free on both 127.0.0.1 and 127.0.0.2");
}

#[tokio::test]
async fn refused_addresses_are_dropped_from_a_mixed_dns_answer() {
    let (allowed, local) = twin_servers().await;
    let mut dns = HashMap::new();
    // Loopback first: an unfiltered connector would dial it before the allowed address.
    dns.insert(
        "mixed.test".to_owned(),
        vec!["127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap()],
    );
    let client = GuardedClient::new(ClientConfig {
        address_policy: AddressPolicy {
            allow_private_networks: false,
            allowed_networks: vec!["127.0.0.2/32".parse().unwrap()],
            ..AddressPolicy::default()
        },
        dns_overrides: dns,
        ..ClientConfig::default()
    })
    .unwrap();
    for _ in 0..3 {
        let response = client
            .fetch(&FetchRequest::parse(&allowed.url_as("mixed.test", "/")).unwrap())
            .await
            .unwrap();
        assert_eq!(response.body.as_ref(), b"allowed");
        assert_eq!(response.remote_addr, Some(allowed.addr));
    }
    assert_eq!(local.total_hits(), 0, "the refused address was dialled");
    assert_eq!(allowed.total_hits(), 3);
}

/// `TIDINGS_ALLOWED_NETWORKS` names one internal host: that name reaches its server, and
/// nothing else on the network opens: not the same server by address or by another name, not
/// a metadata address the allowed name might resolve to.
#[tokio::test]
async fn an_allowed_host_name_opens_that_host_alone() {
    let server = victim().await;
    let port = server.addr.port();
    let (networks, hosts) =
        tidings_fetch::parse_allowed("feeds.corp.example, 10.9.0.0/16").unwrap();
    let client = GuardedClient::new(ClientConfig {
        address_policy: AddressPolicy {
            allowed_networks: networks,
            allowed_hosts: hosts,
            ..AddressPolicy::default()
        },
        dns_overrides: overrides(&[
            ("feeds.corp.example", "127.0.0.1"),
            ("other.corp.example", "127.0.0.1"),
            ("sub.feeds.corp.example", "127.0.0.1"),
        ]),
        ..ClientConfig::default()
    })
    .unwrap();
    let allowed = client
        .fetch(&FetchRequest::parse(&server.url_as("FEEDS.corp.example.", "/feed")).unwrap())
        .await
        .expect("the allowed host is reached");
    assert_eq!(allowed.status, 200);
    assert_eq!(server.total_hits(), 1);
    for refused in [
        format!("http://127.0.0.1:{port}/"),
        format!("http://other.corp.example:{port}/"),
        format!("http://localhost:{port}/"),
        format!("http://sub.feeds.corp.example:{port}/"),
    ] {
        refusal(&client, &refused).await;
    }
    assert_eq!(server.total_hits(), 1, "only the allowed name got through");
    // An allowed name can be pointed at a metadata address by whoever runs its DNS: refused.
    let (networks, hosts) = tidings_fetch::parse_allowed("metadata.corp.example").unwrap();
    let client = GuardedClient::new(ClientConfig {
        address_policy: AddressPolicy {
            allowed_networks: networks,
            allowed_hosts: hosts,
            ..AddressPolicy::default()
        },
        dns_overrides: overrides(&[("metadata.corp.example", "169.254.169.254")]),
        ..ClientConfig::default()
    })
    .unwrap();
    let refused = refusal(&client, "http://metadata.corp.example/latest/meta-data/").await;
    assert!(matches!(
        refused,
        Refusal::ResolvedAddress {
            class: AddressClass::CloudMetadata,
            ..
        }
    ));
    // The list refuses what could never work, and says why.
    for (entry, why) in [
        ("169.254.169.254", "never allowed"),
        ("168.63.129.16/32", "never allowed"),
        ("metadata.google.internal", "never allowed"),
        ("10.0.0.0/33", "invalid entry"),
        ("http://feeds.corp", "invalid entry"),
    ] {
        let error = tidings_fetch::parse_allowed(entry).unwrap_err().to_string();
        assert!(error.contains(why), "{entry}: {error}");
    }
}
