//! A small, bounded XML tree built with quick-xml, tolerant of the ways feeds break.
//!
//! The feed extractors need random access (an item's `link` may come after its `content`, and
//! Atom's `xhtml` content must be re-serialized), so the document becomes a tree first. The tree
//! is bounded: nesting deeper than [`MAX_DEPTH`] is skipped and at most [`MAX_NODES`] nodes are
//! kept, so neither the stack nor memory grows with hostile input. Entities come from XML, HTML
//! and character references, and from the internal DTD subset's general entities
//! (`<!DOCTYPE rss [<!ENTITY name "…">]>`), expanded with bounds (see [`DtdEntities`]): an
//! external DTD or entity is never fetched, and an entity that grows past the bounds (billion
//! laughs) is refused and kept as its literal text.

use std::borrow::Cow;
use std::collections::HashMap;

use quick_xml::NsReader;
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;

use url::Url;

use crate::text::{decode_entities, escape_html, resolve_entity};
use crate::urls::{apply_xml_base, web_url};

/// Elements nested deeper than this are skipped (their content is dropped).
pub(crate) const MAX_DEPTH: usize = 128;
/// At most this many elements and text nodes are kept; the rest of the document is dropped and
/// a warning recorded. Real feeds stay far below it (a 5 MB feed has about 50,000).
pub(crate) const MAX_NODES: usize = 2_000_000;

/// The namespaces the extractors care about. Anything else is [`Ns::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ns {
    /// No namespace (RSS 0.9x / 2.0 elements, plain attributes).
    None,
    Atom,
    Atom03,
    Rss10,
    Rss090,
    Rdf,
    Content,
    Dc,
    DcTerms,
    Media,
    Itunes,
    Xhtml,
    Xml,
    Other,
}

impl Ns {
    fn from_uri(uri: &str) -> Ns {
        let uri = uri.trim();
        let lower = uri.to_ascii_lowercase();
        let bare = lower
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .trim_end_matches('/');
        match bare {
            "www.w3.org/2005/atom" => Ns::Atom,
            "purl.org/atom/ns#" | "purl.org/atom/ns" => Ns::Atom03,
            "purl.org/rss/1.0" => Ns::Rss10,
            "my.netscape.com/rdf/simple/0.9" => Ns::Rss090,
            "www.w3.org/1999/02/22-rdf-syntax-ns#" => Ns::Rdf,
            "purl.org/rss/1.0/modules/content" => Ns::Content,
            "purl.org/dc/elements/1.1" => Ns::Dc,
            "purl.org/dc/terms" => Ns::DcTerms,
            "search.yahoo.com/mrss" => Ns::Media,
            "www.itunes.com/dtds/podcast-1.0.dtd" => Ns::Itunes,
            "www.w3.org/1999/xhtml" => Ns::Xhtml,
            "www.w3.org/xml/1998/namespace" => Ns::Xml,
            "backend.userland.com/rss2" | "blogs.law.harvard.edu/tech/rss" => Ns::None,
            _ => Ns::Other,
        }
    }

    /// Feeds often use a prefix without declaring it; the usual prefixes are understood.
    fn from_undeclared_prefix(prefix: &str) -> Ns {
        match prefix.to_ascii_lowercase().as_str() {
            "atom" => Ns::Atom,
            "content" => Ns::Content,
            "dc" => Ns::Dc,
            "dcterms" => Ns::DcTerms,
            "media" => Ns::Media,
            "itunes" => Ns::Itunes,
            "rdf" => Ns::Rdf,
            "xhtml" => Ns::Xhtml,
            "xml" => Ns::Xml,
            _ => Ns::Other,
        }
    }

    fn from_resolved(resolved: &ResolveResult<'_>) -> Ns {
        match resolved {
            ResolveResult::Unbound => Ns::None,
            ResolveResult::Bound(ns) => Ns::from_uri(ns.0),
            ResolveResult::Unknown(prefix) => Ns::from_undeclared_prefix(prefix),
        }
    }
}

/// One attribute, its value unescaped.
#[derive(Debug, Clone)]
pub(crate) struct Attr {
    pub ns: Ns,
    pub name: String,
    pub value: String,
}

/// A child of an element.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    Element(Element),
    Text(String),
}

/// One element with its namespace, local name, attributes and children.
#[derive(Debug, Clone)]
pub(crate) struct Element {
    pub ns: Ns,
    pub name: String,
    pub attrs: Vec<Attr>,
    pub children: Vec<Node>,
    /// False when the document ended (or broke) before this element was closed.
    pub closed: bool,
}

impl Element {
    fn new(ns: Ns, name: &str) -> Element {
        Element {
            ns,
            name: name.to_owned(),
            attrs: Vec::new(),
            children: Vec::new(),
            closed: false,
        }
    }

    /// Child elements in document order.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|node| match node {
            Node::Element(element) => Some(element),
            Node::Text(_) => None,
        })
    }

    /// Whether the element is `name` in one of `namespaces`.
    pub fn is(&self, namespaces: &[Ns], name: &str) -> bool {
        self.name == name && namespaces.contains(&self.ns)
    }

    /// The first child element named `name` in one of `namespaces`.
    pub fn child(&self, namespaces: &[Ns], name: &str) -> Option<&Element> {
        self.elements().find(|e| e.is(namespaces, name))
    }

    /// All child elements named `name` in one of `namespaces`.
    pub fn children_named<'s>(
        &'s self,
        namespaces: &'s [Ns],
        name: &'s str,
    ) -> impl Iterator<Item = &'s Element> + 's {
        self.elements().filter(move |e| e.is(namespaces, name))
    }

    /// The value of an attribute without a namespace (or, for convenience, in any namespace
    /// when no unqualified one exists).
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|a| a.name == name && a.ns == Ns::None)
            .or_else(|| self.attrs.iter().find(|a| a.name == name))
            .map(|a| a.value.as_str())
    }

    /// The value of an attribute in a given namespace.
    pub fn attr_ns(&self, ns: Ns, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|a| a.name == name && a.ns == ns)
            .map(|a| a.value.as_str())
    }

    /// All text inside the element, descendants included, in document order.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let mut stack: Vec<std::slice::Iter<'_, Node>> = vec![self.children.iter()];
        while let Some(top) = stack.last_mut() {
            match top.next() {
                Some(Node::Text(text)) => out.push_str(text),
                Some(Node::Element(element)) => stack.push(element.children.iter()),
                None => {
                    stack.pop();
                }
            }
        }
        out
    }

    /// Whether the element has child elements (markup that was not escaped).
    pub fn has_element_children(&self) -> bool {
        self.elements().next().is_some()
    }

    /// The children serialized as HTML: used for Atom `xhtml` content and for RSS bodies whose
    /// HTML was written unescaped. Namespace prefixes are dropped; the sanitizer decides what
    /// survives.
    pub fn inner_html(&self) -> String {
        self.inner_html_based(None)
    }

    /// [`Element::inner_html`], with the `xml:base` of elements inside applied: below such an
    /// element, relative `href`, `src` and `poster` values are made absolute against it
    /// (resolved from `base`, the base in effect at this element), since the sanitizer later
    /// knows only one base per item.
    pub fn inner_html_based(&self, base: Option<&Url>) -> String {
        let mut out = String::new();
        write_children_html(&self.children, &mut out, base);
        out
    }
}

/// Serializes nodes as HTML without recursion (the tree depth is bounded, but the serializer
/// must not depend on it).
fn write_children_html(children: &[Node], out: &mut String, outer_base: Option<&Url>) {
    enum Step<'a> {
        Open(&'a Node),
        Close(&'a str),
        RestoreBase(Option<Url>),
    }
    // The base set by an `xml:base` inside the serialized content, once there is one.
    let mut nested_base: Option<Url> = None;
    let mut stack: Vec<Step<'_>> = children.iter().rev().map(Step::Open).collect();
    while let Some(step) = stack.pop() {
        match step {
            Step::Open(Node::Text(text)) => out.push_str(&escape_html(text)),
            Step::Open(Node::Element(element)) => {
                if let Some(value) = element.attr_ns(Ns::Xml, "base") {
                    let in_effect = nested_base.as_ref().or(outer_base);
                    let entered = apply_xml_base(in_effect, Some(value));
                    stack.push(Step::RestoreBase(std::mem::replace(
                        &mut nested_base,
                        entered,
                    )));
                }
                out.push('<');
                out.push_str(&element.name);
                for attr in element.attrs.iter().filter(|a| a.ns != Ns::Xml) {
                    let resolved = match (&nested_base, attr.name.as_str()) {
                        (Some(base), "href" | "src" | "poster") => {
                            web_url(Some(base), &attr.value).map(String::from)
                        }
                        _ => None,
                    };
                    out.push(' ');
                    out.push_str(&attr.name);
                    out.push_str("=\"");
                    out.push_str(&escape_html(resolved.as_deref().unwrap_or(&attr.value)));
                    out.push('"');
                }
                out.push('>');
                stack.push(Step::Close(&element.name));
                stack.extend(element.children.iter().rev().map(Step::Open));
            }
            Step::RestoreBase(previous) => nested_base = previous,
            Step::Close(name) => {
                if !is_void_element(name) {
                    out.push_str("</");
                    out.push_str(name);
                    out.push('>');
                }
            }
        }
    }
}

fn is_void_element(name: &str) -> bool {
    matches!(
        name,
        "area"
            | "base"
            | "br"
            | "col"
            | "embed"
            | "hr"
            | "img"
            | "input"
            | "link"
            | "meta"
            | "source"
            | "track"
            | "wbr"
    )
}

/// A parsed document: its root element, and a note when it had to be cut short.
#[derive(Debug)]
pub(crate) struct Document {
    pub root: Element,
    /// Why the document was not read to its end (malformed or truncated XML, size bounds);
    /// what came before is kept.
    pub warning: Option<String>,
}

/// Why no tree could be built.
#[derive(Debug)]
pub(crate) enum TreeError {
    /// No element at all before the end or the first syntax error.
    NoRootElement(Option<String>),
}

/// Builds the tree of `text`. Syntax errors after the root element has started end the parse
/// but keep what was read; unclosed elements are closed, and unclosed items or entries dropped
/// by the extractors (they check [`Element::closed`]).
pub(crate) fn parse_tree(text: &str) -> Result<Document, TreeError> {
    let mut reader = NsReader::from_str(text);
    {
        let config = reader.config_mut();
        config.check_end_names = false;
        config.allow_unmatched_ends = true;
        config.allow_dangling_amp = true;
        config.expand_empty_elements = false;
        config.check_comments = false;
    }
    let mut builder = TreeBuilder::default();
    let mut warning = None;
    let mut entities = DtdEntities::default();
    loop {
        let event = match reader.read_resolved_event() {
            Ok((resolved, event)) => {
                let ns = Ns::from_resolved(&resolved);
                (ns, event)
            }
            Err(error) => {
                warning = Some(format!(
                    "the XML is malformed at byte {}: {error}; the rest was ignored",
                    reader.error_position()
                ));
                break;
            }
        };
        match event {
            (ns, Event::Start(start)) if builder.depth_ok() => {
                if !builder.open(element_from(ns, &start, &reader), false) {
                    warning = Some(node_limit_warning());
                    break;
                }
            }
            (ns, Event::Empty(start)) if builder.depth_ok() => {
                if !builder.open(element_from(ns, &start, &reader), true) {
                    warning = Some(node_limit_warning());
                    break;
                }
            }
            (_, Event::Start(_)) => builder.skipped_depth += 1,
            (_, Event::Empty(_)) => {}
            (_, Event::End(end)) => {
                if builder.skipped_depth > 0 {
                    builder.skipped_depth -= 1;
                } else {
                    builder.close(end.local_name().as_ref());
                }
            }
            (_, Event::Text(t)) => {
                if !builder.text(&t.xml10_content()) {
                    warning = Some(node_limit_warning());
                    break;
                }
            }
            (_, Event::CData(t)) => {
                if !builder.text(&t.xml10_content()) {
                    warning = Some(node_limit_warning());
                    break;
                }
            }
            (_, Event::GeneralRef(reference)) => {
                let name: &str = &reference;
                // XML's own five first: escaped HTML bodies consist of little else.
                let predefined = match name {
                    "lt" => Some("<"),
                    "gt" => Some(">"),
                    "amp" => Some("&"),
                    "quot" => Some("\""),
                    "apos" => Some("'"),
                    _ => None,
                };
                let ok = match predefined
                    .map(Cow::Borrowed)
                    .or_else(|| entities.expand_in_document(name).map(Cow::Owned))
                    .or_else(|| resolve_entity(name))
                {
                    Some(value) => builder.text(&value),
                    // An undeclared or refused entity stays as written.
                    None => builder.text(&format!("&{name};")),
                };
                if !ok {
                    warning = Some(node_limit_warning());
                    break;
                }
            }
            (_, Event::Eof) => break,
            (_, Event::DocType(doctype)) => {
                entities = DtdEntities::from_doctype(doctype.as_ref());
            }
            (_, Event::Comment(_) | Event::PI(_) | Event::Decl(_)) => {}
        }
        if builder.finished() {
            break;
        }
    }
    if warning.is_none() {
        warning = entities.refused_warning();
    }
    builder.finish(warning)
}

/// The longest text one entity of the internal DTD subset may expand to.
pub(crate) const MAX_ENTITY_EXPANSION: usize = 64 * 1024;
/// The most text all entity references of a document may add together.
pub(crate) const MAX_DOCUMENT_EXPANSION: usize = 1024 * 1024;
/// How deeply entity values may refer to other entities.
const MAX_ENTITY_NESTING: usize = 8;
/// Declarations read from one internal subset; real feeds declare a handful.
const MAX_ENTITY_DECLARATIONS: usize = 1024;

/// The general entities declared in a document's internal DTD subset, expanded on use within
/// bounds: one entity's text is at most [`MAX_ENTITY_EXPANSION`] characters and nests at most
/// eight deep (billion laughs is refused at its fifth level), all references together add at
/// most [`MAX_DOCUMENT_EXPANSION`]. The work is linear in the declarations plus the output:
/// each entity is expanded once and remembered. External (`SYSTEM` / `PUBLIC`) and parameter
/// entities are ignored.
#[derive(Debug, Default)]
pub(crate) struct DtdEntities {
    declared: HashMap<String, String>,
    /// Each entity's expansion once computed; `None` when it was refused.
    expanded: HashMap<String, Option<String>>,
    /// Text added to the document by references so far.
    added: usize,
    /// The first entity that was refused, for the warning.
    refused: Option<String>,
}

impl DtdEntities {
    /// Reads the `<!ENTITY name "value">` declarations of a DOCTYPE's internal subset.
    pub(crate) fn from_doctype(doctype: &str) -> DtdEntities {
        let mut entities = DtdEntities::default();
        let Some(open) = doctype.find('[') else {
            return entities;
        };
        let mut rest = &doctype[open + 1..];
        while let Some(at) = rest.find("<!ENTITY") {
            rest = &rest[at + "<!ENTITY".len()..];
            let after_space = rest.trim_start();
            if after_space.len() == rest.len() || after_space.starts_with('%') {
                continue; // `<!ENTITYx` or a parameter entity
            }
            let name_len = after_space
                .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '>')
                .unwrap_or(after_space.len());
            let name = &after_space[..name_len];
            let value_part = after_space[name_len..].trim_start();
            let Some(quote) = value_part
                .chars()
                .next()
                .filter(|c| *c == '"' || *c == '\'')
            else {
                continue; // external: SYSTEM or PUBLIC, never fetched
            };
            let Some(close) = value_part[1..].find(quote) else {
                break;
            };
            if !name.is_empty()
                && entities.declared.len() < MAX_ENTITY_DECLARATIONS
                // The first declaration of a name is binding (XML 1.0 §4.2).
                && !entities.declared.contains_key(name)
            {
                entities
                    .declared
                    .insert(name.to_owned(), value_part[1..=close].to_owned());
            }
            rest = &value_part[1 + close..];
        }
        entities
    }

    /// The text a reference to `name` in the document stands for, when the entity is declared
    /// and within the bounds; `None` leaves the reference as written.
    pub(crate) fn expand_in_document(&mut self, name: &str) -> Option<String> {
        if !self.declared.contains_key(name) {
            return None;
        }
        let value = self.expand(name, 0);
        match value {
            Some(value) if self.added + value.len() <= MAX_DOCUMENT_EXPANSION => {
                self.added += value.len();
                Some(value)
            }
            _ => {
                self.refused.get_or_insert_with(|| name.to_owned());
                None
            }
        }
    }

    /// Why the document was not read as written, when an entity was refused.
    pub(crate) fn refused_warning(&self) -> Option<String> {
        self.refused.as_ref().map(|name| {
            format!(
                "the DTD entity &{name}; expands beyond the limits ({MAX_ENTITY_EXPANSION} \
                 characters, {MAX_ENTITY_NESTING} levels, {MAX_DOCUMENT_EXPANSION} per document) \
                 and was left unexpanded"
            )
        })
    }

    fn expand(&mut self, name: &str, depth: usize) -> Option<String> {
        if let Some(done) = self.expanded.get(name) {
            return done.clone();
        }
        if depth > MAX_ENTITY_NESTING {
            return None;
        }
        // Marked refused while in progress, so a cycle ends as a refusal.
        self.expanded.insert(name.to_owned(), None);
        let raw = self.declared.get(name)?.clone();
        let value = self.expand_value(&raw, depth);
        self.expanded.insert(name.to_owned(), value.clone());
        value
    }

    fn expand_value(&mut self, raw: &str, depth: usize) -> Option<String> {
        let mut out = String::with_capacity(raw.len());
        let mut rest = raw;
        while let Some(amp) = rest.find('&') {
            out.push_str(&rest[..amp]);
            let after = &rest[amp + 1..];
            let Some(semicolon) = after.find(';').filter(|&end| end <= 64) else {
                out.push('&');
                rest = after;
                continue;
            };
            let reference = &after[..semicolon];
            let replacement = match reference {
                "lt" => Some(Cow::Borrowed("<")),
                "gt" => Some(Cow::Borrowed(">")),
                "amp" => Some(Cow::Borrowed("&")),
                "quot" => Some(Cow::Borrowed("\"")),
                "apos" => Some(Cow::Borrowed("'")),
                _ if self.declared.contains_key(reference) => {
                    // A refused inner entity refuses the outer one.
                    Some(Cow::Owned(self.expand(reference, depth + 1)?))
                }
                _ => resolve_entity(reference),
            };
            match replacement {
                Some(text) => out.push_str(&text),
                None => {
                    out.push('&');
                    out.push_str(reference);
                    out.push(';');
                }
            }
            if out.len() > MAX_ENTITY_EXPANSION {
                return None;
            }
            rest = &after[semicolon + 1..];
        }
        out.push_str(rest);
        (out.len() <= MAX_ENTITY_EXPANSION).then_some(out)
    }
}

/// The element of a start tag, with its attributes resolved and unescaped.
fn element_from(ns: Ns, start: &BytesStart<'_>, reader: &NsReader<&[u8]>) -> Element {
    let local = start.local_name();
    let mut element = Element::new(ns, local.as_ref());
    for attr in start.attributes().with_checks(false) {
        let Ok(attr) = attr else { break };
        let key = attr.key;
        if key.as_ref() == "xmlns" || key.as_ref().starts_with("xmlns:") {
            continue;
        }
        let (resolved, local) = reader.resolver().resolve_attribute(key);
        let ns = match resolved {
            // Unprefixed attributes belong to no namespace whatever the default namespace is.
            ResolveResult::Unbound => Ns::None,
            ref other => Ns::from_resolved(other),
        };
        let raw = attr.value.replace(['\t', '\n', '\r'], " ");
        element.attrs.push(Attr {
            ns,
            name: local.as_ref().to_owned(),
            value: decode_entities(&raw).into_owned(),
        });
    }
    element
}

fn node_limit_warning() -> String {
    format!("the document has more than {MAX_NODES} nodes; the rest was ignored")
}

#[derive(Default)]
struct TreeBuilder {
    stack: Vec<Element>,
    root: Option<Element>,
    /// Start tags seen beyond the depth limit and not yet closed.
    skipped_depth: usize,
    nodes: usize,
}

impl TreeBuilder {
    fn depth_ok(&self) -> bool {
        self.skipped_depth == 0 && self.stack.len() < MAX_DEPTH
    }

    fn finished(&self) -> bool {
        self.root.is_some()
    }

    /// Opens an element (and closes it at once when it is empty). False when over budget.
    fn open(&mut self, element: Element, is_empty: bool) -> bool {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return false;
        }
        self.stack.push(element);
        if is_empty {
            self.pop_into_parent(true);
        }
        true
    }

    /// Closes the innermost open element with this local name; an end tag matching nothing
    /// open is ignored, as browsers do.
    fn close(&mut self, local_name: &str) {
        let Some(index) = self.stack.iter().rposition(|e| e.name == local_name) else {
            return;
        };
        while self.stack.len() > index + 1 {
            // Elements left open inside the closed one are closed implicitly.
            self.pop_into_parent(true);
        }
        self.pop_into_parent(true);
    }

    fn pop_into_parent(&mut self, closed: bool) {
        let Some(mut element) = self.stack.pop() else {
            return;
        };
        element.closed = closed;
        match self.stack.last_mut() {
            Some(parent) => parent.children.push(Node::Element(element)),
            None => self.root = Some(element),
        }
    }

    /// Adds text to the open element, merging with a preceding text node. Whitespace-only text
    /// in the structural levels (feed, channel, item) is dropped. False when over budget.
    fn text(&mut self, text: &str) -> bool {
        if text.is_empty() || self.skipped_depth > 0 {
            return true;
        }
        let depth = self.stack.len();
        let Some(parent) = self.stack.last_mut() else {
            // Text outside the root element (junk before it, whitespace) is ignored.
            return true;
        };
        if let Some(Node::Text(previous)) = parent.children.last_mut() {
            previous.push_str(text);
            return true;
        }
        if depth <= 3 && text.trim().is_empty() {
            return true;
        }
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return false;
        }
        parent.children.push(Node::Text(text.to_owned()));
        true
    }

    fn finish(mut self, mut warning: Option<String>) -> Result<Document, TreeError> {
        if !self.stack.is_empty() && warning.is_none() {
            warning = Some("the document ended before all elements were closed".to_owned());
        }
        while !self.stack.is_empty() {
            self.pop_into_parent(false);
        }
        match self.root {
            Some(root) => Ok(Document { root, warning }),
            None => Err(TreeError::NoRootElement(warning)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_tree_with_namespaces_and_entities() {
        let doc = parse_tree(
            r#"<?xml version="1.0"?><rss xmlns:dc="http://purl.org/dc/elements/1.1/"><channel>
            <title>A&nbsp;&amp;&#233;&unknown;</title><dc:creator>me</dc:creator><content:encoded>x</content:encoded>
            </channel></rss>"#,
        )
        .expect("tree");
        assert!(doc.warning.is_none());
        let channel = doc.root.child(&[Ns::None], "channel").expect("channel");
        assert_eq!(
            channel
                .child(&[Ns::None], "title")
                .map(Element::text)
                .as_deref(),
            Some("A\u{a0}&é&unknown;")
        );
        assert!(channel.child(&[Ns::Dc], "creator").is_some());
        assert!(channel.child(&[Ns::Content], "encoded").is_some());
    }

    #[test]
    fn truncated_document_keeps_what_came_before() {
        let doc =
            parse_tree("<rss><channel><item><title>a</title></item><item><title>b").expect("tree");
        assert!(doc.warning.is_some());
        let channel = doc.root.child(&[Ns::None], "channel").expect("channel");
        let items: Vec<_> = channel.children_named(&[Ns::None], "item").collect();
        assert_eq!(items.len(), 2);
        assert!(items[0].closed);
        assert!(!items[1].closed);
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let text = format!("<a>{}{}</a>", "<b>".repeat(100_000), "</b>".repeat(100_000));
        let doc = parse_tree(&text).expect("tree");
        let mut depth = 0;
        let mut element = &doc.root;
        while let Some(child) = element.elements().next() {
            element = child;
            depth += 1;
        }
        assert!(depth < MAX_DEPTH);
    }

    #[test]
    fn internal_dtd_entities_are_expanded_within_bounds() {
        let doc = parse_tree(
            r#"<!DOCTYPE rss [<!ENTITY me "Jane &amp; &who;"><!ENTITY who 'co&#233;'><!ENTITY me "later">
            <!ENTITY ext SYSTEM "file:///etc/passwd"><!ENTITY % p "x"><!ENTITY loop "&loop;">]>
            <rss><title>&me; &ext; &loop; &hellip;</title></rss>"#,
        )
        .expect("tree");
        let title = doc.root.child(&[Ns::None], "title").expect("title").text();
        assert_eq!(title, "Jane & coé &ext; &loop; …");
        assert!(doc.warning.as_deref().is_some_and(|w| w.contains("&loop;")));
        let mut laughs = String::from("<!DOCTYPE r [<!ENTITY a0 \"lol\">");
        for level in 1..=9 {
            laughs.push_str(&format!(
                "<!ENTITY a{level} \"{}\">",
                format!("&a{};", level - 1).repeat(10)
            ));
        }
        laughs.push_str("]><r>&a3;|&a9;</r>");
        let doc = parse_tree(&laughs).expect("tree");
        assert_eq!(doc.root.text(), format!("{}|&a9;", "lol".repeat(1000)));
        assert!(doc.warning.is_some());
    }

    #[test]
    fn no_root_is_an_error() {
        assert!(parse_tree("").is_err());
        assert!(parse_tree("just text").is_err());
    }
}
