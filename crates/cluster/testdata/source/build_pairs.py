#!/usr/bin/env python3
"""Builds ../pairs.jsonl, the labelled set of tidings-cluster, from the hand-written stories,
series and digests beside this file: each pair is two items as two feeds give them (link,
guid, canonical link, title, plain text) and its kind. The ways feeds copy and vary an item
(URL variants, reprints, the same outlet's second feed, corrections) are written out below,
one list per kind, and cycled over the stories so that every language gets every variant.

Run: python3 build_pairs.py (deterministic: the same files give the same set).
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stories_en import STORIES as EN  # noqa: E402
from stories_ja import STORIES as JA  # noqa: E402
from stories_zh import STORIES as ZH  # noqa: E402
from stories_de import STORIES as DE  # noqa: E402
from stories_fr import STORIES as FR  # noqa: E402
from series import SERIES, DIGESTS  # noqa: E402
from hard import PAIRS as HARD  # noqa: E402
from heldout import PAIRS as HELDOUT  # noqa: E402
from heldout2 import PAIRS as HELDOUT2  # noqa: E402

STORIES = EN + JA + ZH + DE + FR
CJK = {"ja", "zh"}


def sentences(text, lang):
    if lang in CJK:
        parts = re.findall(r"[^。]+。?", text)
    else:
        parts = re.split(r"(?<=[.!?])\s+", text)
    return [p.strip() for p in parts if p.strip()]


def join(parts, lang):
    return ("" if lang in CJK else " ").join(parts)


def bare(host):
    return host[4:] if host.startswith("www.") else host


def site_name(host):
    name = bare(host).split(".")[0]
    return name.replace("-", " ").title()


def item(link=None, title=None, text=None, guid=None, canonical=None):
    out = {"link": link, "title": title, "text": text}
    if guid is not None:
        out["guid"] = guid
    if canonical is not None:
        out["canonical"] = canonical
    return out


# ---- URL variants: two spellings of one page ----------------------------------------------

def url_variants(host, path, i):
    b = bare(host)
    base = f"https://{host}{path}"
    stem = path.rstrip("/")
    slug = stem.rsplit("/", 1)[-1]
    variants = [
        (base, f"http://{host}{path}"),
        (base, f"{base}?utm_source=rss&utm_medium=rss&utm_campaign={slug}"),
        (f"https://www.{b}{path}", f"https://{b}{path}"),
        (base, f"https://m.{b}{path}"),
        (base, f"https://{host}{stem}/amp/"),
        (base, f"{base}#comments"),
        (f"https://{host}{stem}", f"https://{host}{stem}/"),
        (base, f"https://news.google.com/url?url=https://{host}{path}&ct=ga&cd=CAIyGjE1&usg=AOvVaw1"),
        (base, f"https://{b.replace('.', '-')}.cdn.ampproject.org/c/s/{host}{path}"),
        (base, f"{base}?fbclid=IwAR3xYzQ8k_Lm2"),
        (base, f"https://amp.{b}{path}"),
        (base, f"https://{host.upper()}:443{path}"),
        (base, f"{base}?amp=1"),
        (base, f"{base}?mc_cid=4f1a2b3c&mc_eid=9c8d7e6f"),
        (base, "https://l.facebook.com/l.php?u=" + re.sub(r"[:/]", lambda m: "%3A" if m.group() == ":" else "%2F", base) + "&h=AT0xYz"),
        (base, f"http://m.{b}{path}?utm_source=twitter&ref=feed#top"),
        (base, f"https://www.google.com/url?q={base}&sa=D&source=editors"),
        (f"https://{host}{path}?xtor=RSS-3208", f"https://{host}{path}?at_medium=RSS&at_campaign=feed"),
    ]
    return variants[i % len(variants)]


MORE = {"en": "Continue reading", "ja": "続きを読む", "zh": "阅读全文", "de": "Weiterlesen", "fr": "Lire la suite"}


def url_variant_pairs():
    pairs = []
    for i, s in enumerate(STORIES):
        a_url, b_url = url_variants(s["host"], s["path"], i)
        parts = sentences(s["text"], s["lang"])
        style = i % 5
        if style == 0:
            b_text = s["text"]
        elif style == 1:
            b_text = parts[0]
        elif style == 2:
            b_text = join(parts[:2], s["lang"]) + ("…" if s["lang"] in CJK else " …")
        elif style == 3:
            b_text = None
        else:
            b_text = s["text"] + ("" if s["lang"] in CJK else " ") + MORE[s["lang"]]
        b_title = s["title"] if i % 3 else f"{s['title']} - {site_name(s['host'])}"
        pairs.append(("url_variant", s["lang"],
                      item(a_url, s["title"], s["text"]),
                      item(b_url, b_title, b_text)))
    return pairs


# ---- Canonical: another link, with the page's canonical link or a permalink guid ----------

TEASER = {
    "en": "Read the full story on {site}.",
    "ja": "記事の全文は{site}でご覧ください。",
    "zh": "点击查看{site}全文。",
    "de": "Den vollständigen Artikel lesen Sie bei {site}.",
    "fr": "Lire l'article complet sur {site}.",
}
PARTNERS = {
    "en": "newsroom-partner.com", "ja": "partner-news.jp", "zh": "hezuo-meiti.cn",
    "de": "partnerportal.de", "fr": "partenaire-info.fr",
}


def canonical_pairs():
    pairs = []
    for n, s in enumerate(STORIES[::2]):
        host, path, lang = s["host"], s["path"], s["lang"]
        original = f"https://{host}{path}"
        site = site_name(host)
        teaser = TEASER[lang].format(site=site)
        style = n % 5
        if style == 0:
            a = item(f"http://feedproxy.google.com/~r/{site.replace(' ', '')}/~3/Xq{n}Lk9aB/", s["title"], teaser, guid=original)
        elif style == 1:
            a = item(f"https://{PARTNERS[lang]}/wire/{4100 + n}", s["alt"], sentences(s["text"], lang)[0], canonical=original)
        elif style == 2:
            a = item(f"https://t.co/{n}aZ8kQ2", s["title"], None, guid=f"http://{host}{path}")
        elif style == 3:
            a = item(f"https://{host}/?p={52000 + n}", s["title"], teaser, canonical=f"http://{bare(host)}{path}")
        else:
            a = item(f"https://{PARTNERS[lang]}/articles/{site.lower().replace(' ', '-')}-{n}", s["alt"], teaser,
                     guid=f"tag:{PARTNERS[lang]},2026:{n}", canonical=f"https://www.{bare(host)}{path}")
        b = item(f"{original}?utm_source=feed", s["title"], s["text"])
        pairs.append(("canonical", lang, a, b))
    return pairs


# ---- Syndicated copies: a paper reprints the wire's (or a blog's) item ---------------------

REPRINT_HOSTS = {
    "en": ["www.valleygazette.com", "northstartribune.com", "www.dailyexaminer.net"],
    "ja": ["www.chiho-shimpo.jp", "news.portal-site.jp", "www.minato-times.jp"],
    "zh": ["www.difang-ribao.cn", "news.menhu-wang.cn", "www.dushi-kuaibao.cn"],
    "de": ["www.landeszeitung-online.de", "www.nachrichtenportal.de", "www.generalanzeiger.de"],
    "fr": ["www.la-gazette-locale.fr", "www.portail-actu.fr", "www.courrier-regional.fr"],
}
DATELINE = {
    "en": "LONDON ({site}) — ", "ja": "【{site}】", "zh": "（{site}讯）", "de": "Berlin ({site}) – ", "fr": "PARIS ({site}) - ",
}
FIRST_ON = {
    "en": "The post {title} appeared first on {site}.",
    "ja": "この記事は{site}から転載しています。",
    "zh": "本文转载自{site}，版权归原作者所有。",
    "de": "Dieser Artikel erschien zuerst bei {site}.",
    "fr": "Cet article a été initialement publié sur {site}.",
}
BYLINE = {
    "en": "(Reporting by Sam Ortiz; editing by Jo Lane)",
    "ja": "（編集部）",
    "zh": "责任编辑：王丽",
    "de": "Mit Material von Agenturen.",
    "fr": "Avec agences.",
}
LOCAL = {
    "en": "Local businesses said they were watching the news closely.",
    "ja": "地元の関係者も今後の動きに注目している。",
    "zh": "本地相关人士表示将密切关注后续进展。",
    "de": "Auch in der Region wird die Entwicklung aufmerksam verfolgt.",
    "fr": "Dans la région, les acteurs locaux suivent le dossier de près.",
}


def syndicated_pairs():
    pairs = []
    for i, s in enumerate(STORIES):
        lang = s["lang"]
        site = site_name(s["host"])
        parts = sentences(s["text"], lang)
        sep = "" if lang in CJK else " "
        style = i % 5
        if style == 0:
            text = DATELINE[lang].format(site=site) + s["text"] + sep + FIRST_ON[lang].format(title=s["title"], site=site)
        elif style == 1:
            text = s["text"] + sep + FIRST_ON[lang].format(title=s["title"], site=site)
        elif style == 2:
            text = join(parts[:3], lang)
        elif style == 3:
            text = join(parts[:-1], lang) + sep + BYLINE[lang]
        else:
            text = join(parts[:2] + [LOCAL[lang]] + parts[2:], lang)
        host = REPRINT_HOSTS[lang][i % 3]
        title = s["alt"] if i % 4 else s["title"]
        link = f"https://{host}/news/2026/11/{7300 + i}"
        pairs.append(("syndicated_copy", lang,
                      item(f"https://{s['host']}{s['path']}", s["title"], s["text"]),
                      item(link, title, text)))
    return pairs


# ---- Near-identical text: the same outlet's second feed, another URL scheme -----------------

def typographic(text, lang, i):
    if lang in CJK:
        full = str.maketrans("0123456789%", "０１２３４５６７８９％")
        return text.translate(full) if i % 2 == 0 else text.replace("。", "。\n")
    out = text.replace("'", "\u2019").replace(" - ", " \u2013 ")
    if i % 2:
        out = out.replace(". ", ".  ").replace(", ", ",\u00a0")
    return "\n" + out + "\n"


def near_identical_pairs():
    pairs = []
    for i, s in enumerate(STORIES):
        if i % 3 == 2:
            continue
        lang = s["lang"]
        title = s["title"] if i % 2 else (f"【{site_name(s['host'])}】{s['title']}" if lang in CJK else f"[{site_name(s['host'])}] {s['title']}")
        link = f"https://{s['host']}/a/{880000 + i * 37}"
        pairs.append(("near_identical_text", lang,
                      item(f"https://{s['host']}{s['path']}", s["title"], s["text"], guid=f"urn:uuid:{i:08x}-0000-4000-8000-00000000000a"),
                      item(link, title, typographic(s["text"], lang, i), guid=f"{s['host']}-{i}")))
    return pairs


# ---- Negatives -------------------------------------------------------------------------------

def slug(title):
    words = re.findall(r"[a-z0-9]+", title.lower())
    return "-".join(words[:6]) or "article"


def same_topic_pairs():
    pairs = []
    for i, s in enumerate(STORIES):
        lang = s["lang"]
        a_text = s["text"] if i % 4 else sentences(s["text"], lang)[0]
        rival_link = f"https://{s['rival_host']}/2026/11/{slug(s['rival_title'])}-{i}"
        pairs.append(("same_topic", lang,
                      item(f"https://{s['host']}{s['path']}", s["title"], a_text),
                      item(rival_link, s["rival_title"], s["rival_text"])))
    return pairs


NOTICE = {
    "en": "Correction: An earlier version of this article gave a wrong figure.",
    "ja": "（記事の一部を訂正しました）",
    "zh": "更正：本文此前版本数据有误，现已更正。",
    "de": "Korrekturhinweis: In einer früheren Version dieses Artikels stand eine falsche Zahl.",
    "fr": "Rectificatif : une précédente version de cet article comportait une erreur de chiffre.",
}
TITLE_MARK = {"en": "CORRECTED: {t}", "ja": "【訂正】{t}", "zh": "更正：{t}", "de": "Korrektur: {t}", "fr": "Rectificatif : {t}"}


def correction_pairs():
    pairs = []
    fixable = [s for s in STORIES if s.get("fix")]
    for i, s in enumerate(fixable[:34]):
        lang = s["lang"]
        old, new = s["fix"]
        assert old in s["text"], s["title"]
        fixed = s["text"].replace(old, new)
        sep = "" if lang in CJK else " "
        url = f"https://{s['host']}{s['path']}"
        style = i % 4
        if style == 0:
            b = item(url, s["title"], fixed)
        elif style == 1:
            b = item(url.rstrip("/") + "-corrected", s["title"], fixed + sep + NOTICE[lang])
        elif style == 2:
            b = item(url + "?version=2", TITLE_MARK[lang].format(t=s["title"]), fixed)
        else:
            b = item(f"https://{REPRINT_HOSTS[lang][i % 3]}/news/2026/11/{9100 + i}", s["alt"], fixed)
        pairs.append(("correction", lang, item(url, s["title"], s["text"]), b))
    return pairs


def series_pairs():
    pairs = []
    for s in SERIES:
        items = []
        for n, (title, text) in enumerate(s["parts"], start=1):
            link = s.get("link") or f"https://{s['host']}{s['path'].format(n=n)}"
            items.append(item(link, title, text, guid=f"{s['host']}:{s['path']}:{n}"))
        for x in range(len(items)):
            for y in range(x + 1, len(items)):
                pairs.append(("series", s["lang"], items[x], items[y]))
    return pairs


def digest_pairs():
    pairs = []
    for d in DIGESTS:
        items = []
        for n, (title, text) in enumerate(d["issues"], start=1):
            link = d.get("link") or f"https://{d['host']}{d['path'].format(n=20 + n)}"
            items.append(item(link, title, text))
        for x in range(len(items)):
            for y in range(x + 1, len(items)):
                pairs.append(("digest", d["lang"], items[x], items[y]))
    return pairs


def hard_pairs():
    return HARD


def write(name, prefix, pairs):
    out_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", name)
    counts = {}
    with open(out_path, "w", encoding="utf-8") as out:
        for kind, lang, a, b in pairs:
            counts[kind] = counts.get(kind, 0) + 1
            record = {"id": f"{prefix}{kind}-{counts[kind]:03}", "kind": kind, "lang": lang, "a": a, "b": b}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(name, counts, sum(counts.values()))


def main():
    builders = [url_variant_pairs, canonical_pairs, syndicated_pairs, near_identical_pairs,
                same_topic_pairs, series_pairs, digest_pairs, correction_pairs, hard_pairs]
    write("pairs.jsonl", "", [pair for build in builders for pair in build()])
    write("heldout.jsonl", "heldout-", HELDOUT)
    write("heldout2.jsonl", "heldout2-", HELDOUT2)


if __name__ == "__main__":
    main()
