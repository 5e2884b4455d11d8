//! `tidings parse`, `tidings sanitize` and `tidings discover --html` run as a user runs them.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn tidings() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tidings"))
}

fn corpus(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("crates/feed/testdata")
        .join(path)
}

fn run_with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = tidings()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tidings starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("stdin written");
    child.wait_with_output().expect("tidings ends")
}

#[test]
fn parse_prints_one_json_object_with_the_documented_fields() {
    let output = tidings()
        .arg("parse")
        .arg(corpus("feeds/rss20_full.xml"))
        .args(["--url", "https://blog.example.com/feed.xml"])
        .output()
        .expect("tidings runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    let keys: Vec<&str> = json
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    for key in [
        "format",
        "title",
        "site_url",
        "description",
        "updated",
        "items",
    ] {
        assert!(keys.contains(&key), "missing {key}");
    }
    assert_eq!(json["format"], "rss");
    assert_eq!(json["updated"], "2024-03-05T10:00:00Z");
    let item = &json["items"][0];
    for key in [
        "id",
        "url",
        "title",
        "author",
        "published",
        "updated",
        "summary",
        "content",
        "categories",
        "enclosures",
        "authors",
        "thumbnail",
    ] {
        assert!(item.get(key).is_some(), "item misses {key}");
    }
    assert_eq!(item["published"], "2024-03-05T01:00:00Z");
    // The feed's own id, and the key tidings stores the item under (F4: the guid wins).
    assert_eq!(item["id"], "post-1");
    assert!(
        item["identity"]
            .as_str()
            .is_some_and(|k| k.starts_with("g:")),
        "{}",
        item["identity"]
    );
    let content = item["content"].as_str().expect("content");
    assert!(!content.contains("<script") && !content.contains("onclick"));
    assert!(content.contains("rel=\"noopener noreferrer\""));
    let enclosure = &json["items"][5]["enclosures"][0];
    assert_eq!(enclosure["url"], "https://cdn.example.com/ep6.mp3");
    assert_eq!(enclosure["mime_type"], "audio/mpeg");
    assert_eq!(enclosure["length"], 5_000_000);
    // Media RSS: the item's image is its own field, not an enclosure.
    assert_eq!(
        json["items"][5]["thumbnail"],
        "https://cdn.example.com/ep6-thumb.jpg"
    );
    assert_eq!(json["items"][5]["enclosures"].as_array().unwrap().len(), 3);
}

#[test]
fn parse_prints_a_video_feeds_description_thumbnail_and_refuses_non_feed_json() {
    let output = tidings()
        .arg("parse")
        .arg(corpus("feeds/youtube_channel.xml"))
        .output()
        .expect("tidings runs");
    assert!(output.status.success());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let video = &json["items"][0];
    assert_eq!(
        video["thumbnail"],
        "https://i2.ytimg.com/vi/dQw4w9WgXc1/hqdefault.jpg"
    );
    assert!(
        video["summary"]
            .as_str()
            .is_some_and(|s| s.starts_with("<p>Today we build a workbench")),
        "{video}"
    );
    let output = tidings()
        .arg("parse")
        .arg(corpus("not-feeds/json_items_without_version.json"))
        .output()
        .expect("tidings runs");
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty(), "never an empty feed");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not a feed: the JSON document is not a JSON Feed"),
        "{stderr}"
    );
}

#[test]
fn parse_honours_charset_and_reports_formats() {
    let output = tidings()
        .arg("parse")
        .arg(corpus("feeds/ja_shift_jis_http_only.xml"))
        .args(["--charset", "Shift_JIS"])
        .output()
        .expect("tidings runs");
    assert!(output.status.success());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(json["title"], "日本語のブログ");
    for (file, format) in [
        ("feeds/atom10_full.xml", "atom"),
        ("feeds/jsonfeed11.json", "json"),
    ] {
        let output = tidings()
            .arg("parse")
            .arg(corpus(file))
            .output()
            .expect("runs");
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
        assert_eq!(json["format"], format, "{file}");
    }
}

#[test]
fn parse_of_a_non_feed_exits_1_with_one_line() {
    let output = tidings()
        .arg("parse")
        .arg(corpus("not-feeds/html_page.html"))
        .output()
        .expect("tidings runs");
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("not a feed: this is an HTML page"),
        "{stderr}"
    );
}

#[test]
fn sanitize_reads_stdin_and_resolves_against_base() {
    let output = run_with_stdin(
        &["sanitize", "--base", "https://example.com/a/"],
        "<p onclick=x()>Hi <a href=\"b\">b</a><script>alert(1)</script></p>",
    );
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim_end(),
        "<p>Hi <a href=\"https://example.com/a/b\" target=\"_blank\" rel=\"noopener noreferrer\">b</a></p>"
    );
}

#[test]
fn discover_lists_candidates_best_first() {
    let output = tidings()
        .args(["discover", "--html"])
        .arg(corpus("not-feeds/html_page.html"))
        .args(["--url", "https://site.example/page"])
        .output()
        .expect("tidings runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "https://site.example/feed.xml",
            "https://site.example/feed",
            "https://site.example/rss",
            "https://site.example/atom.xml",
            "https://site.example/index.xml",
            "https://site.example/rss.xml",
        ]
    );
}

/// Runs `args` with `stdin`, reads a few bytes of its output and closes the pipe, as
/// `tidings … | head` does; returns the exit status and standard error.
fn run_into_closed_pipe(args: &[&str], stdin: &[u8]) -> (std::process::ExitStatus, String) {
    use std::io::Read;
    let mut child = tidings()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tidings starts");
    let mut input = child.stdin.take().expect("stdin");
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).expect("some output");
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr read");
    let status = child.wait().expect("tidings ends");
    writer.join().unwrap();
    (status, stderr)
}

/// `tidings parse big.xml | head` and `tidings sanitize < big.html | head`: far more output
/// than a pipe holds, and the reader goes away after the first bytes. The command stops
/// quietly: no panic, no message, exit 0.
#[test]
fn a_closed_pipe_ends_commands_quietly() {
    let items: String = (0..3000)
        .map(|n| {
            format!(
                "<item><title>Item {n}</title><link>https://e.example/{n}</link>\
                 <description>{}</description></item>",
                "words ".repeat(40)
            )
        })
        .collect();
    let feed = format!(
        "<rss version=\"2.0\"><channel><title>Big</title><link>https://e.example/</link>\
         {items}</channel></rss>"
    );
    let html = "<p>paragraph</p>\n".repeat(20_000);
    for (args, input) in [
        (vec!["parse", "-"], feed.as_bytes()),
        (vec!["sanitize"], html.as_bytes()),
    ] {
        let (status, stderr) = run_into_closed_pipe(&args, input);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.trim().is_empty(), "{args:?}: {stderr}");
    }
}
