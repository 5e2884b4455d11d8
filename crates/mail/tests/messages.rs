//! Each message of `testdata/` read as tidings stores it.

use std::time::Instant;

use tidings_feed::Sanitizer;
use tidings_mail::{MailError, MailMessage, header_recipients, read_message};

fn read(name: &str) -> Result<MailMessage, MailError> {
    let path = format!("{}/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    let raw = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    read_message(&raw, &Sanitizer::default())
}

#[test]
fn multipart_alternative_newsletter() {
    let m = read("multipart_alternative.eml").unwrap();
    assert_eq!(m.sender.key, "cafe-notes.writer.example.com");
    assert_eq!(
        m.sender.list_id.as_deref(),
        Some("cafe-notes.writer.example.com")
    );
    assert_eq!(
        m.sender.address.as_deref(),
        Some("writer@writer.example.com")
    );
    assert_eq!(m.sender.name, "Café Writer");
    assert_eq!(m.subject.as_deref(), Some("Café notes — issue 42"));
    assert_eq!(m.author.as_deref(), Some("Café Writer"));
    assert_eq!(
        m.message_id.as_deref(),
        Some("20261129080000.abc123@writer.example.com")
    );
    assert_eq!(m.date.unwrap().to_rfc3339(), "2026-11-29T08:00:00+00:00");
    assert_eq!(
        m.unsubscribe,
        [
            "https://writer.example.com/unsubscribe?u=abc&l=42",
            "mailto:unsubscribe@writer.example.com?subject=unsubscribe"
        ]
    );
    // The HTML part was chosen over the text part, decoded and sanitized as feed content is.
    let html = m.html.unwrap();
    assert!(html.contains("<h1>Café notes — issue 42</h1>"), "{html}");
    assert!(html.contains("Thanks for reading ✨"), "{html}");
    assert!(
        html.contains("https://cdn.example.com/header.jpg"),
        "{html}"
    );
    assert!(html.contains("target=\"_blank\""), "{html}");
    for gone in [
        "script",
        "alert",
        "onclick",
        "<style",
        "color:red",
        "Issue 42</title",
    ] {
        assert!(!html.contains(gone), "{gone} left in {html}");
    }
    // Both tracking pixels are gone: the 1×1 one and the one sized by its style.
    assert!(!html.contains("open.gif"), "{html}");
    assert!(!html.contains("/e/o/"), "{html}");
    assert!(m.attachments.is_empty());
}

#[test]
fn japanese_iso_2022_jp_headers_and_body() {
    let m = read("japanese_iso2022jp.eml").unwrap();
    assert_eq!(m.sender.key, "magazine@news.example.jp");
    assert_eq!(m.sender.name, "技術評論メルマガ");
    assert_eq!(
        m.subject.as_deref(),
        Some("【週刊ニュース】第１２号のお知らせ")
    );
    let html = m.html.unwrap();
    // The text part made HTML: paragraphs, and the address a link.
    assert!(
        html.contains("<p>いつもご購読ありがとうございます。</p>"),
        "{html}"
    );
    assert!(
        html.contains("<a href=\"https://news.example.jp/2026/11/29\""),
        "{html}"
    );
    assert!(html.contains("配信停止はこちら。"), "{html}");
}

#[test]
fn shift_jis_html_in_base64() {
    let m = read("shift_jis.eml").unwrap();
    assert_eq!(m.sender.name, "ショップ通信");
    assert_eq!(m.subject.as_deref(), Some("本日のセール"));
    assert!(m.message_id.is_none());
    let html = m.html.unwrap();
    assert!(
        html.contains("<p>セール情報：<b>本日限り</b>の特価です。</p>"),
        "{html}"
    );
    assert!(html.contains(">詳しくはこちら</a>"), "{html}");
}

#[test]
fn inline_images_and_attachments_are_listed_not_shown() {
    let m = read("inline_images.eml").unwrap();
    assert_eq!(m.sender.name, "The Gallery");
    let html = m.html.unwrap();
    // A cid: image cannot be shown (its bytes are not kept): dropped, the web image kept.
    assert!(!html.contains("cid:"), "{html}");
    assert!(
        html.contains("https://gallery.example.org/november.jpg"),
        "{html}"
    );
    let listed: Vec<(Option<&str>, &str, u64)> = m
        .attachments
        .iter()
        .map(|a| (a.name.as_deref(), a.mime_type.as_str(), a.size))
        .collect();
    assert_eq!(
        listed,
        [
            (Some("logo.png"), "image/png", 70),
            (Some("programme décembre.pdf"), "application/pdf", 2064),
        ]
    );
}

#[test]
fn a_confirmation_mail_keeps_its_link_clickable() {
    let m = read("confirmation.eml").unwrap();
    assert_eq!(m.sender.key, "noreply@digest.example.net");
    assert_eq!(m.sender.name, "Weekly Digest");
    let html = m.html.unwrap();
    assert!(
        html.contains("<a href=\"https://digest.example.net/confirm?token=s3cr3t&amp;list=7\""),
        "{html}"
    );
}

#[test]
fn malformed_mime_is_read_as_far_as_it_goes() {
    let m = read("malformed_mime.eml").unwrap();
    assert_eq!(m.sender.key, "broken@example.com");
    assert!(m.date.is_none());
    assert!(m.subject.unwrap().contains("subject"));
}

#[test]
fn what_is_not_a_newsletter_is_a_clear_error() {
    assert_eq!(read("no_sender.eml").unwrap_err(), MailError::NoSender);
    assert_eq!(read("not_a_message.bin").unwrap_err(), MailError::NoSender);
    let sanitizer = Sanitizer::default();
    assert_eq!(read_message(b"", &sanitizer).unwrap_err(), MailError::Empty);
    assert_eq!(
        read_message(b" \r\n\r\n", &sanitizer).unwrap_err(),
        MailError::Empty
    );
    assert_eq!(
        read_message(b"\r\n\r\nonly a body", &sanitizer).unwrap_err(),
        MailError::NotAMessage
    );
    assert!(MailError::NoSender.to_string().contains("no From address"));
}

#[test]
fn every_prefix_of_every_message_is_read_without_a_panic() {
    let dir = format!("{}/testdata", env!("CARGO_MANIFEST_DIR"));
    let sanitizer = Sanitizer::default();
    for entry in std::fs::read_dir(dir).unwrap() {
        let raw = std::fs::read(entry.unwrap().path()).unwrap();
        for end in (0..raw.len()).step_by(7) {
            let _ = read_message(&raw[..end], &sanitizer);
        }
    }
}

#[test]
fn a_very_large_message_is_read_quickly_and_its_body_bounded() {
    // 8 MB: a newsletter of 40,000 paragraphs, quoted-printable, with an attachment of 2 MB.
    let mut raw = String::from(
        "From: Big <big@example.com>\r\nSubject: big\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\n\
         Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n",
    );
    for i in 0..40_000 {
        raw.push_str(&format!(
            "<p>Paragraph {i} of a very long issue, caf=C3=A9 and more text to read.</p>=\r\n\
             <img src=3D\"https://t.example.com/p{i}.gif\" width=3D\"1\" height=3D\"1\">\r\n"
        ));
    }
    raw.push_str("--B\r\nContent-Type: application/zip; name=big.zip\r\nContent-Transfer-Encoding: base64\r\n\r\n");
    for _ in 0..27_000 {
        raw.push_str(
            "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB\r\n",
        );
    }
    raw.push_str("--B--\r\n");
    assert!(raw.len() > 8_000_000, "{}", raw.len());
    let started = Instant::now();
    let m = read_message(raw.as_bytes(), &Sanitizer::default()).unwrap();
    let took = started.elapsed();
    let html = m.html.unwrap();
    assert!(
        html.len() <= tidings_mail::MAX_BODY_BYTES + 200,
        "{}",
        html.len()
    );
    assert!(html.contains("Paragraph 0 of a very long issue, café"));
    assert!(html.contains("the rest of this message was too long to keep"));
    assert!(!html.contains("t.example.com"), "a pixel survived");
    assert_eq!(m.attachments.len(), 1);
    assert_eq!(m.attachments[0].size, 27_000 * 57);
    // Debug builds are slow; the bound is for a pathological slowdown, not a benchmark.
    assert!(took.as_secs() < 20, "{took:?}");
}

#[test]
fn the_item_lists_attachments_and_offers_unsubscribing() {
    let item = read("inline_images.eml").unwrap().item_html().unwrap();
    assert!(
        item.contains("<li>programme décembre.pdf (application/pdf, 2 kB)</li>"),
        "{item}"
    );
    let item = read("multipart_alternative.eml")
        .unwrap()
        .item_html()
        .unwrap();
    assert!(
        item.contains(
            "<a href=\"https://writer.example.com/unsubscribe?u=abc&amp;l=42\" \
             target=\"_blank\" rel=\"noopener noreferrer\">Unsubscribe</a>"
        ),
        "{item}"
    );
    assert!(
        item.contains("Unsubscribe by mail: unsubscribe@writer.example.com?subject=unsubscribe"),
        "{item}"
    );
    // Each link marked for the UI's Unsubscribe action, in the order the header gives them.
    let marked: Vec<&str> = item
        .split("<p data-unsubscribe=\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect();
    assert_eq!(
        marked,
        [
            "https://writer.example.com/unsubscribe?u=abc&amp;l=42",
            "mailto:unsubscribe@writer.example.com?subject=unsubscribe"
        ]
    );
}

#[test]
fn only_the_footer_marks_unsubscribe_links() {
    // A sender's own HTML cannot pass a link off as the Unsubscribe action: the sanitizer
    // drops its data- attributes, so the UI finds none without a List-Unsubscribe header.
    let raw = b"From: a@b.example\r\nSubject: x\r\nContent-Type: text/html\r\n\r\n\
                <p data-unsubscribe=\"https://evil.example/\">Click <a href=\"https://evil.example/\" \
                data-unsubscribe=\"https://evil.example/\">here</a></p>";
    let message = read_message(raw, &Sanitizer::default()).unwrap();
    let item = message.item_html().unwrap();
    assert!(item.contains("evil.example"), "{item}");
    assert!(!item.contains("data-unsubscribe"), "{item}");
}

#[test]
fn recipients_from_the_headers() {
    let raw = b"Delivered-To: K3X9Q2+shop@News.Tidings.Example\r\nFrom: a@b.example\r\n\
                To: \"Me\" <me@example.com>, k3x9q2+shop@news.tidings.example\r\n\
                Cc: other@example.org\r\n\r\nbody";
    assert_eq!(
        header_recipients(raw),
        [
            "k3x9q2+shop@news.tidings.example",
            "me@example.com",
            "other@example.org"
        ]
    );
    assert!(header_recipients(b"").is_empty());
}
