//! XSS vectors through the sanitizer. The output of every vector is re-tokenized the way a
//! browser would tokenize it, and every start tag, attribute and URL is checked against the
//! policy; a substring search alone would miss entity- and whitespace-obfuscated survivors.

use std::cell::RefCell;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use tidings_feed::{ParseOptions, SanitizeOptions, Sanitizer, parse};
use url::Url;

const ALLOWED: &[(&str, &[&str])] = &[
    ("p", &[]),
    ("br", &[]),
    ("a", &["href", "title", "target", "rel"]),
    ("ul", &[]),
    ("ol", &["start"]),
    ("li", &[]),
    ("blockquote", &[]),
    ("pre", &[]),
    ("code", &[]),
    ("strong", &[]),
    ("em", &[]),
    ("b", &[]),
    ("i", &[]),
    ("u", &[]),
    ("s", &[]),
    ("sub", &[]),
    ("sup", &[]),
    ("h1", &[]),
    ("h2", &[]),
    ("h3", &[]),
    ("h4", &[]),
    ("h5", &[]),
    ("h6", &[]),
    ("hr", &[]),
    ("table", &[]),
    ("thead", &[]),
    ("tbody", &[]),
    ("tfoot", &[]),
    ("tr", &[]),
    ("th", &["colspan", "rowspan"]),
    ("td", &["colspan", "rowspan"]),
    ("caption", &[]),
    ("colgroup", &["span"]),
    ("col", &["span"]),
    ("figure", &[]),
    ("figcaption", &[]),
    ("dl", &[]),
    ("dt", &[]),
    ("dd", &[]),
    (
        "img",
        &["src", "alt", "title", "width", "height", "srcset", "sizes"],
    ),
    ("picture", &[]),
    ("source", &["src", "srcset", "type", "media", "sizes"]),
    ("audio", &["src", "controls"]),
    ("video", &["src", "poster", "width", "height", "controls"]),
];

/// A tag seen in the output.
#[derive(Debug)]
struct SeenTag {
    name: String,
    attrs: Vec<(String, String)>,
}

#[derive(Default)]
struct Collector {
    tags: RefCell<Vec<SeenTag>>,
    comments: RefCell<usize>,
}

impl TokenSink for Collector {
    type Handle = ();
    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        match token {
            Token::TagToken(tag) if tag.kind == TagKind::StartTag => {
                let name = tag.name.to_string();
                self.tags.borrow_mut().push(SeenTag {
                    name: name.clone(),
                    attrs: tag
                        .attrs
                        .iter()
                        .map(|a| (a.name.local.to_string(), a.value.to_string()))
                        .collect(),
                });
                match name.as_str() {
                    "script" => TokenSinkResult::RawData(RawKind::ScriptData),
                    "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => {
                        TokenSinkResult::RawData(RawKind::Rawtext)
                    }
                    "title" | "textarea" => TokenSinkResult::RawData(RawKind::Rcdata),
                    "plaintext" => TokenSinkResult::Plaintext,
                    _ => TokenSinkResult::Continue,
                }
            }
            Token::CommentToken(_) | Token::DoctypeToken(_) => {
                *self.comments.borrow_mut() += 1;
                TokenSinkResult::Continue
            }
            _ => TokenSinkResult::Continue,
        }
    }
}

fn tokenize(html: &str) -> (Vec<SeenTag>, usize) {
    let tokenizer = Tokenizer::new(Collector::default(), TokenizerOpts::default());
    let queue = BufferQueue::default();
    queue.push_back(StrTendril::from_slice(html));
    let _ = tokenizer.feed(&queue);
    tokenizer.end();
    (tokenizer.sink.tags.take(), tokenizer.sink.comments.take())
}

/// Every violation of the policy in sanitized output; empty when it is safe.
fn violations(output: &str) -> Vec<String> {
    let mut found = Vec::new();
    let (tags, comments) = tokenize(output);
    if comments > 0 {
        found.push("comment or doctype survived".to_owned());
    }
    for tag in &tags {
        let Some((_, allowed)) = ALLOWED.iter().find(|(n, _)| *n == tag.name) else {
            found.push(format!("element <{}> survived", tag.name));
            continue;
        };
        for (name, value) in &tag.attrs {
            if !allowed.contains(&name.as_str()) || name.starts_with("on") || name == "style" {
                found.push(format!("attribute {name} on <{}> survived", tag.name));
                continue;
            }
            let media = matches!(tag.name.as_str(), "img" | "source" | "video" | "audio");
            match name.as_str() {
                "href" => check_url(value, false, &mut found),
                "src" | "poster" => check_url(value, media, &mut found),
                "srcset" => {
                    for candidate in value.split(',') {
                        let url = candidate.split_whitespace().next().unwrap_or("");
                        check_url(url, true, &mut found);
                    }
                }
                "target" if value != "_blank" => found.push(format!("target={value}")),
                "rel" if value != "noopener noreferrer" => found.push(format!("rel={value}")),
                _ => {}
            }
        }
        if tag.name == "a" {
            let has = |n: &str| tag.attrs.iter().any(|(name, _)| name == n);
            if !has("target") || !has("rel") {
                found.push("link without target/rel".to_owned());
            }
        }
    }
    found
}

fn check_url(value: &str, https_only: bool, found: &mut Vec<String>) {
    match Url::parse(value) {
        Ok(url) if url.scheme() == "https" => {}
        Ok(url) if url.scheme() == "http" && !https_only => {}
        Ok(url) => found.push(format!(
            "URL with scheme {} survived: {value}",
            url.scheme()
        )),
        Err(e) => found.push(format!("URL that is not absolute survived ({e}): {value}")),
    }
}

const HANDLERS: &[&str] = &[
    "onerror",
    "onload",
    "onclick",
    "onmouseover",
    "onfocus",
    "ontoggle",
    "onanimationstart",
    "onbegin",
    "onpointerenter",
    "onauxclick",
];
const HANDLER_TAGS: &[&str] = &[
    "<img src=https://x.example/a.png {h}=alert(1)>",
    "<a href=https://x.example/ {h}=\"alert(1)\">x</a>",
    "<p {h}=alert(1)>x</p>",
    "<video src=https://x.example/v.mp4 {h}=alert(1)></video>",
    "<body {h}=alert(1)>",
    "<svg {h}=alert(1)>",
    "<details open {h}=alert(1)>",
    "<input autofocus {h}=alert(1)>",
    "<table {h}=alert(1)><td {h}=alert(1)>x</td></table>",
    "<img src=x {H}=alert`1`>",
];

/// Obfuscations of `javascript:alert(1)` as browsers would still run them.
const JS_URLS: &[&str] = &[
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    " javascript:alert(1)",
    "\u{1}javascript:alert(1)",
    "jav\tascript:alert(1)",
    "jav&#x09;ascript:alert(1)",
    "jav&#x0A;ascript:alert(1)",
    "jav&#x0D;ascript:alert(1)",
    "&#106;avascript:alert(1)",
    "&#x6A;avascript:alert(1)",
    "&#0000106&#0000097&#0000118&#0000097&#0000115&#0000099&#0000114&#0000105&#0000112&#0000116&#0000058alert(1)",
    "javascript&colon;alert(1)",
    "javascript&#58;alert(1)",
    "&Tab;javascript:alert(1)",
    "java&NewLine;script:alert(1)",
    "vbscript:msgbox(1)",
    "livescript:alert(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "data:image/svg+xml,<svg onload=alert(1)>",
    "jar:javascript:alert(1)",
    "javascript://https://ok.example/%0Aalert(1)",
];
const URL_SLOTS: &[&str] = &[
    "<a href=\"{u}\">x</a>",
    "<img src=\"{u}\">",
    "<video poster=\"{u}\" src=\"{u}\"></video>",
    "<audio src=\"{u}\"></audio>",
    "<picture><source srcset=\"{u} 1x\"><img srcset=\"{u}, https://ok.example/i.png 2x\"></picture>",
    "<iframe src=\"{u}\"></iframe>",
    "<form action=\"{u}\"><button formaction=\"{u}\">x</button></form>",
    "<object data=\"{u}\"></object>",
];

const MISC: &[&str] = &[
    // Script tricks.
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//xss.example/x.js></SCRIPT>",
    "<scr<script>ipt>alert(1)</script>",
    "<script/xss src=\"https://xss.example/x.js\"></script>",
    "<<script>alert(1);//<</script>",
    "</script><script>alert(1)</script>",
    "<script>/*</script><img src=x onerror=alert(1)>*/",
    "<img \"\"\"><script>alert(1)</script>\">",
    "<img src=x:alert(alt) onerror=eval(src) alt=0>",
    "<script\x0Csrc=//x.example></script>",
    "<![CDATA[<script>alert(1)</script>]]>",
    "<!--<img src=x onerror=alert(1)>-->",
    "<!--[if gte IE 4]><script>alert(1)</script><![endif]-->",
    "<? echo('<script>alert(1)</script>'); ?>",
    "<img src=`x`onerror=alert(1)>",
    "<a href=\"https://ok.example/\"title=\"x\"onmouseover=alert(1)>x</a>",
    "<img/src=x/onerror=alert(1)>",
    "<img src=x onerror\x0B=alert(1)>",
    // svg and math namespaces.
    "<svg><script>alert(1)</script></svg>",
    "<svg><a xlink:href=\"javascript:alert(1)\"><text x=20 y=20>x</text></a></svg>",
    "<svg><animate onbegin=alert(1) attributeName=x dur=1s>",
    "<svg><set attributeName=\"href\" to=\"javascript:alert(1)\"/></svg>",
    "<svg><animate attributeName=href values=\"javascript:alert(1)\"/><a><text>x</text></a></svg>",
    "<svg><foreignObject><iframe src=\"javascript:alert(1)\"></iframe></foreignObject></svg>",
    "<svg><use href=\"data:image/svg+xml,<svg id='x' xmlns='http://www.w3.org/2000/svg'><image href='1' onerror='alert(1)'/></svg>#x\"/></svg>",
    "<svg><style>&lt;img src=x onerror=alert(1)&gt;</style></svg>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "<math href=\"javascript:alert(1)\">CLICK</math>",
    "<math><maction actiontype=\"statusline#\" xlink:href=\"javascript:alert(1)\">x</maction></math>",
    "<math><mi xlink:href=\"data:x,<script>alert(1)</script>\">x</mi></math>",
    "<svg><p><style><img src=x onerror=alert(1)></style></p></svg>",
    // Mutation XSS through raw-text and template elements.
    "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\">",
    "<template><img src=x onerror=alert(1)></template>",
    "<textarea><img src=x onerror=alert(1)></textarea>",
    "<style><img src=x onerror=alert(1)></style>",
    "<title><img src=x onerror=alert(1)></title>",
    "<xmp><img src=x onerror=alert(1)></xmp>",
    "<noembed><img src=x onerror=alert(1)></noembed>",
    "<noframes><img src=x onerror=alert(1)></noframes>",
    "<iframe><img src=x onerror=alert(1)></iframe>",
    "<plaintext><img src=x onerror=alert(1)>",
    "<form><math><mtext></form><form><mglyph><style></math><img src onerror=alert(1)>",
    "<svg></p><style><a id=\"</style><img src=1 onerror=alert(1)>\">",
    "<math><mi><mglyph><svg><mtext><textarea><path id=\"</textarea><img onerror=alert(1) src=1>\">",
    "<select><template><style><!--</style><a rel=\"--></style></template></select><img src onerror=alert(1)>\">",
    "<table><tr><td><svg><desc><table><td><style><img src=x onerror=alert(1)>",
    "<a title=\"</a><img src=x onerror=alert(1)>\">x</a>",
    "<p title=\"&lt;/p&gt;&lt;img src=x onerror=alert(1)&gt;\">x</p>",
    "<div id=\"x\"><p></div><img src=x onerror=alert(1)>",
    // srcdoc, meta refresh, base href, links and styles.
    "<iframe srcdoc=\"<script>alert(1)</script>\"></iframe>",
    "<iframe srcdoc=\"&lt;img src=x onerror=alert(1)&gt;\"></iframe>",
    "<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert(1)\">",
    "<meta http-equiv=\"refresh\" content=\"0; url=https://evil.example/\">",
    "<meta charset=\"x-imap4-modified-utf7\">&ADz&AGn&AG0&AEf&ACA&AHM&AHI&AGO&AD0&AGn&ACA&AG8Abg&AGUAcgByAG8AcgA9AGEAbABlAHIAdAAoADEAKQ&ACAAPABi",
    "<base href=\"javascript:alert(1)//\"><a href=\"x\">x</a>",
    "<base href=\"https://evil.example/\"><a href=\"x\">x</a>",
    "<link rel=\"stylesheet\" href=\"https://evil.example/x.css\">",
    "<link rel=\"import\" href=\"https://evil.example/x.html\">",
    "<p style=\"background:url(javascript:alert(1))\">x</p>",
    "<div style=\"width:expression(alert(1))\">x</div>",
    "<style>@import 'https://evil.example/x.css';</style>",
    "<a href=\"https://ok.example/\" style=\"position:fixed;top:0;left:0;width:100%;height:100%\">x</a>",
    "<object data=\"https://evil.example/x.swf\"></object>",
    "<embed src=\"https://evil.example/x.swf\">",
    "<applet code=\"x\"></applet>",
    "<form action=\"https://evil.example/\"><input name=password></form>",
    "<isindex action=\"javascript:alert(1)\" type=image>",
    "<button form=x formaction=\"javascript:alert(1)\">x</button>",
    "<marquee onstart=alert(1)>x</marquee>",
    "<frameset onload=alert(1)>",
    "<keygen autofocus onfocus=alert(1)>",
    "<video><source onerror=\"alert(1)\"></video>",
    "<audio src=x onerror=alert(1)>",
    "<img src=\"https://ok.example/i.png\" usemap=\"#m\"><map name=m><area href=\"javascript:alert(1)\"></map>",
    "<a href=\"https://ok.example/\" ping=\"https://tracker.example/\">x</a>",
    "<a href=\"https://ok.example/\" target=\"_self\" rel=\"opener\">x</a>",
    "<img src=\"https://ok.example/i.png\" id=\"location\" name=\"cookie\" class=\"x\">",
    "<form id=\"test\"></form><button form=\"test\" formaction=\"javascript:alert(1)\">X</button>",
    "<dialog open onclose=alert(1)>",
    "<x contenteditable onblur=alert(1)>lose focus!",
    "<custom-element onclick=alert(1)>x</custom-element>",
    "<div data-bind=\"html: '<img src=x onerror=alert(1)>'\">",
    "{{constructor.constructor('alert(1)')()}}<p ng-app>{{7*7}}</p>",
    "<a href=\"https://ok.example/\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" xlink:href=\"javascript:alert(1)\">x</a>",
    "<img src=\"https://ok.example/i.png\" srcset=\"https://ok.example/i.png 1x,javascript:alert(1) 2x\">",
    "<img src=\"https://ok.example/i.png\" sizes=\"(max-width: 600px) 480px\" srcset=\"data:image/png;base64,AAA 1x\">",
];

fn vectors() -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for handler in HANDLERS {
        for template in HANDLER_TAGS {
            all.push(
                template
                    .replace("{h}", handler)
                    .replace("{H}", &handler.to_uppercase()),
            );
        }
    }
    for url in JS_URLS {
        for slot in URL_SLOTS {
            all.push(slot.replace("{u}", url));
        }
    }
    all.extend(MISC.iter().map(|v| (*v).to_owned()));
    all
}

#[test]
fn at_least_150_vectors_none_survives_and_output_is_stable() {
    let all = vectors();
    assert!(all.len() >= 150, "only {} vectors", all.len());
    let base = Url::parse("https://feed.example/post/1").expect("base");
    for sanitizer in [
        Sanitizer::default(),
        Sanitizer::new(SanitizeOptions {
            rewrite_http_media_to_https: true,
            ..SanitizeOptions::default()
        }),
        Sanitizer::new(SanitizeOptions {
            keep_http_media: true,
            ..SanitizeOptions::default()
        }),
    ] {
        for vector in &all {
            for base in [None, Some(&base)] {
                let out = sanitizer.clean(vector, base);
                // The fast paths give exactly what the full sanitizer gives.
                assert_eq!(
                    out,
                    sanitizer.clean_with_ammonia(vector, base),
                    "fast path differs for {vector:?}"
                );
                let problems = violations(&out);
                assert!(
                    problems.is_empty(),
                    "vector {vector:?}\noutput {out:?}\n{problems:?}"
                );
                let lowered: String = out
                    .to_ascii_lowercase()
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect();
                assert!(
                    !lowered.contains("javascript:") || !lowered.contains("href=\"javascript"),
                    "{out}"
                );
                assert_eq!(
                    sanitizer.clean(&out, base),
                    out,
                    "not a fixed point for {vector:?}"
                );
            }
        }
    }
}

#[test]
fn vectors_inside_feeds_are_neutralized_too() {
    let sanitizer = Sanitizer::default();
    for vector in vectors() {
        let escaped = vector
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        let rss = format!(
            "<rss version=\"2.0\"><channel><title>x</title><item><title>{escaped}</title><description>{escaped}</description></item></channel></rss>"
        );
        let options = ParseOptions {
            feed_url: Url::parse("https://feed.example/rss").ok(),
            ..ParseOptions::default()
        };
        let Ok(mut feed) = parse(rss.as_bytes(), &options) else {
            panic!("not parsed: {rss}")
        };
        feed.sanitize_html(&sanitizer);
        for item in &feed.items {
            if let Some(content) = &item.content {
                assert!(violations(content).is_empty(), "{vector:?} -> {content:?}");
            }
            // A title is plain text, which every client shows as text (the web UI builds text
            // nodes). Markup is stripped only when it clearly is markup; otherwise the title is
            // the author's characters as written, never a splice of pieces that forms new tags.
            if let Some(title) = &item.title
                && title.contains('<')
            {
                let as_written = tidings_feed::text::collapse_whitespace(
                    &tidings_feed::text::decode_entities(&vector),
                );
                assert!(
                    as_written == *title || !title.contains("<img"),
                    "{vector:?} -> title {title:?}"
                );
            }
        }
    }
}

#[test]
fn the_checker_itself_catches_violations() {
    assert!(!violations("<script>alert(1)</script>").is_empty());
    assert!(!violations("<img src=\"x\" onerror=\"alert(1)\">").is_empty());
    assert!(!violations("<a href=\"jav&#x09;ascript:alert(1)\" target=\"_blank\" rel=\"noopener noreferrer\">x</a>").is_empty());
    assert!(!violations("<img src=\"http://insecure.example/i.png\">").is_empty());
    assert!(!violations("<!-- x -->").is_empty());
    assert!(!violations("<a href=\"https://ok.example/\">no rel</a>").is_empty());
    assert!(
        violations(
            "<a href=\"https://ok.example/\" target=\"_blank\" rel=\"noopener noreferrer\">x</a>"
        )
        .is_empty()
    );
}
