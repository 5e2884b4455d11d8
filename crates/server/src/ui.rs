//! The web UI (F50–F55): plain HTML, CSS and JavaScript modules from `crates/server/ui/`,
//! embedded in the binary so that one file is the whole product.
//!
//! Assets are served under `/ui/{version}/{file}`, where the version is a hash of every asset:
//! a new build changes the path, so browsers may cache the files forever, and the modules'
//! relative imports pick up the same version without any build step. Every view URL (a feed,
//! a group, a filter, an item, the settings…) answers with the same app shell, so reload and
//! the back button work; unknown paths outside the views keep their plain 404, and the API
//! keeps its JSON errors under `/api/`.

use std::sync::OnceLock;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};

use crate::AppState;

/// One embedded file of the UI.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// The file's name under `crates/server/ui/` and under `/ui/{version}/`.
    pub name: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its bytes.
    pub bytes: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $content_type:expr) => {
        Asset {
            name: $name,
            content_type: $content_type,
            bytes: include_bytes!(concat!("../ui/", $name)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file the browser loads, except the shell (`index.html`), which is filled in with
/// the version at start.
pub const ASSETS: &[Asset] = &[
    asset!("app.css", "text/css; charset=utf-8"),
    asset!("theme.js", JS),
    asset!("app.js", JS),
    asset!("state.js", JS),
    asset!("api.js", JS),
    asset!("dom.js", JS),
    asset!("auth.js", JS),
    asset!("mfa.js", JS),
    asset!("identities.js", JS),
    asset!("notifications.js", JS),
    asset!("reader.js", JS),
    asset!("media.js", JS),
    asset!("related.js", JS),
    asset!("summary.js", JS),
    asset!("dialogs.js", JS),
    asset!("settings.js", JS),
    asset!("keys.js", JS),
    asset!("search.js", JS),
    asset!("scrape.js", JS),
    asset!("icon.svg", "image/svg+xml"),
];

/// The app shell as written, with `{{V}}` where the asset version goes.
const SHELL_TEMPLATE: &str = include_str!("../ui/index.html");

/// The paths that answer with the app shell: one per kind of view.
pub const VIEW_PATHS: &[&str] = &[
    "/",
    "/login",
    "/setup",
    "/all",
    "/bookmarks",
    "/feeds/{id}",
    "/feeds/{id}/settings",
    "/groups/{id}",
    "/tags/{tag}",
    "/hot",
    "/settings",
    "/account",
    "/notifications",
    "/admin",
];

/// The version of this build's assets: the first 12 hex digits of a hash of all of them.
pub fn asset_version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let mut hasher = Sha256::new();
        hasher.update(SHELL_TEMPLATE.as_bytes());
        for asset in ASSETS {
            hasher.update(asset.name.as_bytes());
            hasher.update([0]);
            hasher.update(asset.bytes);
        }
        hex::encode(hasher.finalize())[..12].to_string()
    })
}

/// The app shell with this build's asset version.
pub fn shell() -> &'static str {
    static SHELL: OnceLock<String> = OnceLock::new();
    SHELL.get_or_init(|| SHELL_TEMPLATE.replace("{{V}}", asset_version()))
}

/// The total size of the UI's files in bytes, before compression.
pub fn total_size() -> usize {
    SHELL_TEMPLATE.len() + ASSETS.iter().map(|a| a.bytes.len()).sum::<usize>()
}

/// The most the UI may weigh over the network, each file gzipped as the server's compression
/// layer sends it: 64 KiB, so the first screen stays fast on a slow phone connection. The
/// budget is on the compressed figure since that is what crosses the network; comments and
/// clear names cost little in it.
pub const COMPRESSED_BUDGET: usize = 64 * 1024;

/// The UI's routes: the shell at every view path and the assets under `/ui/`.
pub fn router() -> Router<AppState> {
    let mut router = Router::new()
        .route("/ui/{version}/{file}", get(serve_asset))
        .route("/favicon.ico", get(favicon));
    for path in VIEW_PATHS {
        router = router.route(path, get(serve_shell));
    }
    router
}

async fn serve_shell() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            // The shell names the current asset version, so it is revalidated every time.
            (header::CACHE_CONTROL, "no-cache"),
        ],
        shell(),
    )
        .into_response()
}

async fn serve_asset(Path((version, file)): Path<(String, String)>) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.name == file) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    // A page from an older build may still ask for its version during an upgrade: it gets
    // today's file, but not cached, so it cannot pin a mismatched copy.
    let cache = if version == asset_version() {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let mut response = asset.bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}

async fn favicon() -> Response {
    let icon = ASSETS.iter().find(|a| a.name == "icon.svg");
    match icon {
        Some(asset) => (
            [
                (header::CONTENT_TYPE, asset.content_type),
                (header::CACHE_CONTROL, "public, max-age=86400"),
            ],
            asset.bytes,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a first visit downloads: each file gzipped on its own, summed.
    fn compressed_size() -> usize {
        use std::io::Write;
        let gzipped = |bytes: &[u8]| {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            // Writing into a Vec cannot fail.
            encoder.write_all(bytes).expect("gzip into memory");
            encoder.finish().expect("gzip into memory").len()
        };
        gzipped(SHELL_TEMPLATE.as_bytes()) + ASSETS.iter().map(|a| gzipped(a.bytes)).sum::<usize>()
    }

    #[test]
    fn the_ui_stays_within_its_budget() {
        let compressed = compressed_size();
        assert!(
            compressed < COMPRESSED_BUDGET,
            "UI assets are {compressed} bytes gzipped ({} before compression), over the \
             budget of {COMPRESSED_BUDGET}",
            total_size()
        );
        // The figure is real: gzip shrinks the text, and every asset counts.
        assert!(compressed < total_size() && compressed > total_size() / 10);
    }

    #[test]
    fn the_shell_names_only_embedded_assets_of_this_version() {
        let shell = shell();
        assert!(!shell.contains("{{V}}"));
        for reference in shell.split(&format!("/ui/{}/", asset_version())).skip(1) {
            let name: String = reference
                .chars()
                .take_while(|c| *c != '"' && *c != '\'')
                .collect();
            assert!(
                ASSETS.iter().any(|a| a.name == name),
                "{name} is not embedded"
            );
        }
    }

    #[test]
    fn no_module_imports_the_app_back() {
        // app.js is the root: the others share state through state.js, so imports form a
        // tree and no module depends on the router.
        for asset in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            let text = std::str::from_utf8(asset.bytes).unwrap();
            assert!(
                !text.contains("from './app.js'"),
                "{} imports app.js",
                asset.name
            );
        }
    }

    #[test]
    fn every_module_import_is_embedded() {
        for asset in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            let text = std::str::from_utf8(asset.bytes).unwrap();
            for part in text.split("from './").skip(1) {
                let name: String = part.chars().take_while(|c| *c != '\'').collect();
                assert!(
                    ASSETS.iter().any(|a| a.name == name),
                    "{} imports {name}, which is not embedded",
                    asset.name
                );
            }
        }
    }
}
