//! The opt-in media proxy (`TIDINGS_MEDIA_PROXY`) against a real server and a local image
//! server: items' http: images point at signed `/media` URLs, which answer the image through
//! the guarded client with cache headers and a sandboxing CSP; unsigned or altered URLs,
//! non-images, oversized images and guarded addresses are refused; off, nothing changes.

use tidings_testkit::on_both_engines;

use crate::support::{PNG_1X1 as PNG, TestApp, TestServer, call};
use reqwest::{Method, StatusCode};
use tidings_server::media::{MAX_MEDIA_BYTES, MediaProxy, MediaProxyMode};
use tidings_store::NewItem;
use tidings_testkit::{TestDb, follow};

const KEY: &str = "a media proxy key of at least 32 characters";

async fn images() -> TestServer {
    let site = TestServer::start_empty().await;
    site.serve("/pic.png", 200, "image/png", PNG);
    site.serve("/page.html", 200, "text/html", "<html>not an image</html>");
    site.serve(
        "/huge.png",
        200,
        "image/png",
        vec![0u8; MAX_MEDIA_BYTES + 1],
    );
    site
}

/// A server with the proxy in `mode`, a user `ann` following a feed with one item whose
/// content shows `/pic.png` from `site` and an https image; answers the app, ann's client and
/// the listed item.
async fn reader(
    db: &TestDb,
    site: &TestServer,
    mode: MediaProxyMode,
) -> (TestApp, reqwest::Client, serde_json::Value) {
    let app = TestApp::start_with(db, true, |config| {
        config.media_proxy = MediaProxy::new(mode, Some(KEY));
    })
    .await;
    let ann = app.user("ann", false).await;
    let (_, feed) = follow(&app.store, ann, "https://pictures.example/feed").await;
    let content = format!(
        "<p>Look: <img alt=\"a > b\" src=\"{}\"> and <img src=\"https://cdn.example/x.png\"></p>",
        site.url("/pic.png")
    );
    app.store
        .upsert_items(
            feed,
            &[NewItem {
                guid: Some("1".into()),
                title: Some("Pictures".into()),
                content: Some(content),
                published: Some(1_760_000_000),
                ..NewItem::default()
            }],
            1_760_000_000,
        )
        .await
        .unwrap();
    let client = app.signed_in("ann").await;
    let (status, _, body) = call(
        &client,
        Method::GET,
        &app.url("/items?include=content"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let item = body["items"][0].clone();
    (app, client, item)
}

/// The first `src` in `html`, with `&amp;` undone.
fn first_src(html: &str) -> String {
    html.split("src=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .replace("&amp;", "&")
}

#[tokio::test]
async fn http_images_go_through_the_signed_proxy() {
    let site = images().await;
    let db = TestDb::sqlite();
    let (app, client, item) = reader(&db, &site, MediaProxyMode::Insecure).await;
    let content = item["content"].as_str().unwrap();
    let proxied = first_src(content);
    assert!(
        proxied.starts_with(&format!("{}/media?url=", app.base)),
        "{content}"
    );
    assert!(
        content.contains("src=\"https://cdn.example/x.png\""),
        "https stays: {content}"
    );
    assert!(content.contains("alt=\"a > b\""), "{content}");

    // The image comes through the server, cacheable, under a sandbox; without a session.
    let anonymous = reqwest::Client::new();
    let response = anonymous.get(&proxied).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "image/png");
    assert_eq!(headers["cache-control"], "public, max-age=86400");
    assert!(
        headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("sandbox")
    );
    assert_eq!(response.bytes().await.unwrap().as_ref(), PNG);
    assert_eq!(site.hits("/pic.png"), 1);

    // The item alone says the same.
    let id = item["id"].as_i64().unwrap();
    let (_, _, one) = call(
        &client,
        Method::GET,
        &app.url(&format!("/items/{id}")),
        None,
    )
    .await;
    assert_eq!(first_src(one["item"]["content"].as_str().unwrap()), proxied);

    // Only what the server signed, unchanged.
    let proxy = MediaProxy::new(MediaProxyMode::Insecure, Some(KEY));
    let signed = |url: &str| {
        format!(
            "{}/media?url={}&sig={}",
            app.base,
            urlencode(url),
            proxy.sign(url)
        )
    };
    let altered = proxied.replace("pic.png", "page.html");
    for (url, expected) in [
        (altered, StatusCode::FORBIDDEN),
        (
            format!(
                "{}/media?url={}&sig=00",
                app.base,
                urlencode(&site.url("/pic.png"))
            ),
            StatusCode::FORBIDDEN,
        ),
        (
            signed(&site.url("/page.html")),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (signed(&site.url("/huge.png")), StatusCode::BAD_GATEWAY),
        (signed(&site.url("/missing.png")), StatusCode::NOT_FOUND),
        (
            signed("http://169.254.169.254/latest/meta-data"),
            StatusCode::BAD_GATEWAY,
        ),
    ] {
        let response = anonymous.get(&url).send().await.unwrap();
        assert_eq!(response.status(), expected, "{url}");
        assert!(
            !response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("image/"),
            "{url}"
        );
    }
    assert_eq!(site.hits("/page.html"), 1);
}

#[tokio::test]
async fn all_mode_proxies_https_images_and_off_changes_nothing() {
    let site = images().await;
    let db = TestDb::sqlite();
    let (app, _, item) = reader(&db, &site, MediaProxyMode::All).await;
    let content = item["content"].as_str().unwrap();
    assert_eq!(
        content.matches(&format!("{}/media?url=", app.base)).count(),
        2,
        "{content}"
    );

    let db = TestDb::sqlite();
    let (app, _, item) = reader(&db, &site, MediaProxyMode::Off).await;
    let content = item["content"].as_str().unwrap();
    assert_eq!(first_src(content), site.url("/pic.png"));
    // Off, the route still serves only what this server signed.
    let response = reqwest::get(format!("{}/media?url=x&sig=00", app.base))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
}

/// A device keeping items offline asks for `images=proxied`: with the proxy off, every image
/// of the listing then points at a signed `/media` address that serves it, so the device can
/// keep it from this server's origin.
#[tokio::test]
async fn images_proxied_for_offline_keeping_with_the_proxy_off() {
    let site = images().await;
    let db = TestDb::sqlite();
    let (app, client, _) = reader(&db, &site, MediaProxyMode::Off).await;
    let (status, _, body) = call(
        &client,
        Method::GET,
        &app.url("/items?include=content&images=proxied"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let content = body["items"][0]["content"].as_str().unwrap();
    assert_eq!(
        content.matches(&format!("{}/media?url=", app.base)).count(),
        2,
        "both images, http and https: {content}"
    );
    let response = client.get(first_src(content)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.bytes().await.unwrap().as_ref(), PNG);
    assert_eq!(site.hits("/pic.png"), 1);

    let (status, _, body) = call(&client, Method::GET, &app.url("/items?images=all"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("images must be proxied"),
        "{body}"
    );
}

fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// With the proxy on for every image, the three sync APIs send apps the proxied addresses of
/// items' images (in their HTML) and of image enclosures, never the originals; audio stays
/// where it is (the proxy serves images only).
mod sync_apis {
    use super::*;

    const PICTURE: &str = "https://cdn.example/x.png";
    const COVER: &str = "https://cdn.example/cover.jpg";
    const EPISODE: &str = "https://cdn.example/ep1.mp3";

    on_both_engines!(send_proxied_images_and_image_enclosures, |db| {
        let app = TestApp::start_with(db, true, |config| {
            config.media_proxy = MediaProxy::new(MediaProxyMode::All, Some(KEY));
        })
        .await;
        let ann = app.user("ann", false).await;
        let (_, feed) = follow(&app.store, ann, "https://pictures.example/feed").await;
        let enclosure = |url: &str, mime: &str| tidings_store::Enclosure {
            url: url.into(),
            mime_type: Some(mime.into()),
            length: None,
        };
        let item = NewItem {
            guid: Some("1".into()),
            title: Some("Pictures".into()),
            content: Some(format!("<p>Look: <img src=\"{PICTURE}\"></p>")),
            enclosures: vec![
                enclosure(COVER, "image/jpeg"),
                enclosure(EPISODE, "audio/mpeg"),
            ],
            published: Some(1_760_000_000),
            ..NewItem::default()
        };
        app.store
            .upsert_items(feed, &[item], 1_760_000_000)
            .await
            .unwrap();
        let browser = app.signed_in("ann").await;
        let key = crate::sync_clients::api_key(&app, &browser, "read_write").await;
        let proxy = MediaProxy::new(MediaProxyMode::All, Some(KEY));
        let proxied = |url: &str| {
            format!(
                "{}/media?url={}&sig={}",
                app.base,
                urlencode(url),
                proxy.sign(url)
            )
        };
        let client = reqwest::Client::new();

        // Google Reader.
        let login = client
            .get(format!(
                "{}/accounts/ClientLogin?Email=ann&Passwd={key}",
                app.base
            ))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let auth = login.lines().find_map(|l| l.strip_prefix("Auth=")).unwrap();
        let stream: serde_json::Value = client
            .get(format!("{}/reader/api/0/stream/contents", app.base))
            .header("authorization", format!("GoogleLogin auth={auth}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let item = &stream["items"][0];
        for field in ["summary", "content"] {
            let html = item[field]["content"].as_str().unwrap();
            assert_eq!(first_src(html), proxied(PICTURE), "{field}: {html}");
        }
        assert_eq!(item["enclosure"][0]["href"], proxied(COVER), "{item}");
        assert_eq!(item["enclosure"][1]["href"], EPISODE, "{item}");

        // Fever.
        let digest = tidings_server::sync::fever::key_digest("ann", &key);
        let fever: serde_json::Value = client
            .post(format!("{}/fever/?api&items", app.base))
            .form(&[("api_key", digest.as_str())])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let html = fever["items"][0]["html"].as_str().unwrap();
        assert_eq!(first_src(html), proxied(PICTURE), "{html}");

        // Miniflux.
        let entries: serde_json::Value = client
            .get(format!("{}/v1/entries", app.base))
            .header("x-auth-token", &key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let entry = &entries["entries"][0];
        let html = entry["content"].as_str().unwrap();
        assert_eq!(first_src(html), proxied(PICTURE), "{html}");
        assert_eq!(entry["enclosures"][0]["url"], proxied(COVER), "{entry}");
        assert_eq!(entry["enclosures"][1]["url"], EPISODE, "{entry}");
    });
}
