//! `tidings rules list|add|test|apply` as a person runs them, on both engines: a rule saved
//! from the command line is listed, tested against the user's items, applied once with an
//! undo printed; a bad rule or an unknown feed is refused with the reason, changing nothing.

use std::path::Path;

use tidings_store::{ItemFilter, ItemQuery, NewItem, Store};

use crate::support::{add_user, drop_postgres, run, store_at, subscribe, test_databases, tidings};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `tidings rules ARGS…` on `url`; answers (success, stdout, stderr).
async fn rules(dir: &Path, url: &str, args: &[&str]) -> (bool, String, String) {
    let mut command = tidings(dir, url);
    command.arg("rules").args(args);
    let output = run(&mut command).await;
    (
        output.status.success(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

async fn visible(store: &Store, user: i64) -> usize {
    let query = ItemQuery {
        filter: ItemFilter::All,
        limit: 200,
        ..ItemQuery::default()
    };
    store.list_items(user, &query).await.unwrap().items.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_from_the_command_line_on_both_engines() {
    let dir = tempfile::tempdir().unwrap();
    for (url, admin) in test_databases(dir.path(), "cli_rules").await {
        let store = store_at(&url).await;
        let ann = add_user(&store, "ann").await;
        let feed = subscribe(&store, ann, "https://wire.example/feed").await;
        let items: Vec<NewItem> = ["Sponsored: one", "Sponsored: two", "Rust news"]
            .iter()
            .enumerate()
            .map(|(n, title)| NewItem {
                guid: Some(format!("g{n}")),
                title: Some((*title).into()),
                published: Some(1_700_000_000 + n as i64),
                ..NewItem::default()
            })
            .collect();
        store
            .upsert_items(feed, &items, 1_700_000_000)
            .await
            .unwrap();
        let d = dir.path();

        // A test saves nothing and lists what matches.
        let (ok, out, err) =
            rules(d, &url, &["test", "--user", "ann", "--query", "sponsored"]).await;
        assert!(ok, "{err}");
        assert!(
            out.starts_with("2 of the 3 most recent items match"),
            "{out}"
        );
        assert!(
            out.contains("Sponsored: one") && !out.contains("Rust news"),
            "{out}"
        );

        // Refusals say why and save nothing.
        let (ok, _, err) = rules(
            d,
            &url,
            &[
                "add", "--user", "ann", "--query", "x", "--action", "explode",
            ],
        )
        .await;
        assert!(!ok && err.contains("the actions are"), "{err}");
        let (ok, _, err) = rules(
            d,
            &url,
            &[
                "add",
                "--user",
                "ann",
                "--feed",
                "https://nowhere.example/",
                "--query",
                "x",
                "--action",
                "read",
            ],
        )
        .await;
        assert!(!ok && err.contains("no feed has the URL"), "{err}");
        let (ok, _, err) = rules(d, &url, &["list", "--user", "nobody"]).await;
        assert!(!ok && err.contains("no user named"), "{err}");

        // Saved for the feed, listed, applied once.
        let (ok, out, err) = rules(
            d,
            &url,
            &[
                "add",
                "--user",
                "ann",
                "--name",
                "No ads",
                "--feed",
                "https://wire.example/feed",
                "--query",
                "sponsored",
                "--action",
                "hide",
            ],
        )
        .await;
        assert!(ok, "{err}");
        let id: i64 = out.split('\t').next().unwrap().trim().parse().unwrap();
        let (_, listed, _) = rules(d, &url, &["list", "--user", "ann"]).await;
        assert!(
            listed.contains("No ads")
                && listed.contains("query \"sponsored\"")
                && listed.contains("hide"),
            "{listed}"
        );
        assert_eq!(
            visible(&store, ann).await,
            3,
            "saving changes no existing item"
        );
        let (ok, out, err) = rules(d, &url, &["apply", "--user", "ann", &id.to_string()]).await;
        assert!(ok, "{err}");
        assert!(
            out.starts_with("2 items changed") && out.contains("application_id"),
            "{out}"
        );
        assert_eq!(visible(&store, ann).await, 1);

        store.close().await;
        drop_postgres(admin).await;
    }
}
