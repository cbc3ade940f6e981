//! Which of a page's forms get a key, and where it goes (SPEC §8,
//! `IDEMPOTENCY_FORMS=inject`). The host's rewriter reports what it saw of
//! the page — each form's attributes and controls, whether a form sat
//! inside another or a `<template>`, the controls that name a form from
//! elsewhere, the page's first `<base href>`, what its `<noscript>`s hold —
//! and this file decides. A key never leaves the page's origin nor goes
//! into a URL: a form gets one only when every way it can be sent posts a
//! body this layer reads, to the page's own origin, as a browser with
//! JavaScript off would read the page. Whatever it cannot read with
//! certainty (a character reference it does not decode, markup the
//! rewriter sees as text) counts against the key: a form without one still
//! works, unprotected; a key in the wrong place leaks.
//!
//! A form with an `id` can be sent by controls anywhere on the page
//! (`<button form="id">`), seen only later in the stream: its key is placed
//! at the page's end, once every control has been seen, as a hidden input
//! naming it (`form="id"`). A form with no `id` has every control inside
//! it, and gets its key before its end tag.

use crate::core::Uuid7Generator;
use crate::core::request::form_field::KEY_FIELD;
use crate::core::text::cut::cut;
use crate::core::text::json_read::Json;

/// Where the rewriter asks for keys: before one form's end tag, or at the
/// end of the page for the forms other controls may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Before the end tag of the one form reported.
    FormEnd,
    /// At the end of a page the rewriter read whole.
    PageEnd,
    /// At the end of what the rewriter read of a page it was cut off from
    /// (a tag over [`LONGEST_TAG_BYTES`](crate::core::LONGEST_TAG_BYTES)),
    /// or of a page that ends inside an element whose content is text
    /// (`<script>`, `<plaintext>`…) where an input would be text too: no
    /// form waiting for the end gets a key.
    PageCut,
}

impl Placement {
    /// A placement by the name the rewriter's glue gives it: `form-end`,
    /// `page-end`, `page-cut`.
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "form-end" => Some(Self::FormEnd),
            "page-end" => Some(Self::PageEnd),
            "page-cut" => Some(Self::PageCut),
            _ => None,
        }
    }
}

/// What goes into the page at `placement` for the page `report` describes,
/// a JSON object the rewriter's glue writes:
///
/// - `forms`: the forms to decide (the one ending, or every form with an
///   `id`), each with its attributes `method`, `action`, `enctype`, `id`
///   (strings as written, or `null`), `nested` (it sat inside another form,
///   the browser would not keep it apart from an earlier one whose end tag
///   never came, or its `</form>` came with an element opened inside it
///   still open, which the browser keeps open in the form for later
///   controls to join), `inTemplate`, `noscript` (the text of the
///   `<noscript>`s inside it, which the rewriter reads as text) and
///   `controls`;
/// - `naming`: the controls anywhere on the page with a `form` attribute;
/// - `bases`: every `<base href>` so far (a browser uses the first outside
///   templates and SVG; the key needs each on the page's origin);
/// - `noscript`: the text of every `<noscript>` so far, and
///   `noscriptOverflow` when there was too much of it to keep;
/// - `unsure`: the markup so far took a turn the rewriter may read
///   otherwise than a browser (inside SVG or MathML, a nested one, an HTML
///   element or an integration point's content; an end tag a browser
///   ignores or answers by moving elements): no key from there on.
///
/// A control is its `tag`, its attributes `type`, `name`, `formmethod`,
/// `formaction`, `formenctype` and `form`, and `inert` (inside a template,
/// SVG or MathML: it submits nothing, but a script could move it).
/// `page_origin` is the page's own `scheme://host[:port]`. `random` gives
/// 10 bytes per key (a form past its end gets none). `None`: nothing to
/// place (a report it cannot read included: no key is the safe answer).
pub fn page_form_keys(
    page_origin: &str,
    report: &str,
    placement: Placement,
    now_ms: u64,
    random: &[u8],
) -> Option<String> {
    let report = Json::parse(report)?;
    let (Some(Json::Array(forms)), Some(Json::Array(naming))) = (report.member("forms"), report.member("naming"))
    else {
        return None;
    };
    let page = Page::new(page_origin, &report)?;
    // Each key its own 10 random bytes; one generator for the page, so its
    // keys are distinct even within a millisecond.
    let mut randoms = random.chunks_exact(10);
    let mut generator = Uuid7Generator::default();
    let mut key = || {
        let random: [u8; 10] = randoms.next()?.try_into().ok()?;
        Some(Uuid7Generator::format(&generator.next(now_ms, random)))
    };
    let mut placed = String::new();
    match placement {
        // A form with an id waits for the page's end: controls anywhere may name it.
        Placement::FormEnd => {
            if let [form] = forms.as_slice()
                && matches!(form.member("id"), Some(Json::Null))
                && page.keys(form, &[])
            {
                placed = format!(r#"<input type="hidden" name="{KEY_FIELD}" value="{}">"#, key()?);
            }
        }
        Placement::PageCut => {}
        Placement::PageEnd => {
            // A control naming a form by an id this file cannot read could
            // name any of them.
            let owners: Option<Vec<String>> = naming.iter().map(|c| id_value(attribute(c, "form")?)).collect();
            let owners = owners?;
            // A form id this file cannot read could be any other's, as a
            // browser reads it (`caf&eacute;` and `café`): no form with an
            // id gets a key (a seventh red team).
            let ids: Option<Vec<Option<String>>> = forms
                .iter()
                .map(|form| match attribute(form, "id") {
                    Some(raw) => id_value(raw).map(|id| Some(id).filter(|id| !id.is_empty())),
                    None => Some(None),
                })
                .collect();
            let ids = ids?;
            for (form, id) in forms.iter().zip(&ids) {
                let Some(id) = id else { continue };
                // Two forms with one id: a control naming it reaches only
                // the first, and so would both keys.
                if ids.iter().filter(|other| other.as_ref() == Some(id)).count() > 1 {
                    continue;
                }
                let its: Vec<&Json> = naming.iter().zip(&owners).filter(|(_, o)| *o == id).map(|(c, _)| c).collect();
                if !page.keys(form, &its) {
                    continue;
                }
                let Some(key) = key() else { break };
                placed += r#"<input type="hidden" form=""#;
                // Anything but visible ASCII as a reference: a raw CR would
                // be read as LF (a seventh red team).
                for c in id.chars() {
                    match c {
                        '!' | '#'..='%' | '\''..=';' | '=' | '?'..='~' => placed.push(c),
                        c => placed += &format!("&#{};", u32::from(c)),
                    }
                }
                placed += &format!(r#"" name="{KEY_FIELD}" value="{key}">"#);
            }
        }
    }
    (!placed.is_empty()).then_some(placed)
}

/// A form's or control's attribute as the report gives it, as written: a
/// string, or none (`null`).
fn attribute<'a>(element: &'a Json, name: &str) -> Option<&'a str> {
    match element.member(name) {
        Some(Json::String(value)) => Some(value),
        _ => None,
    }
}

/// An `id` (or a control's `form`) as a browser compares it: its raw line
/// breaks read as LF and a NUL as U+FFFD, as the tokenizer reads the page,
/// then its character references decoded ([`decoded`]). `None` for one it
/// cannot read, and for any id with a character outside ASCII: the
/// rewriter may read the page's bytes in another charset than a browser
/// (a `<meta charset>` it does not obey, a byte order mark), so two ids
/// one of them reads apart the other may read as one.
fn id_value(raw: &str) -> Option<String> {
    let mut read = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                chars.next_if_eq(&'\n');
                read.push('\n');
            }
            '\0' => read.push('\u{FFFD}'),
            c => read.push(c),
        }
    }
    decoded(&read).filter(|id| id.is_ascii())
}

/// An attribute's value as a browser reads it, its character references
/// decoded: `&amp;`, `&quot;`, `&apos;`, `&lt;`, `&gt;` and numeric ones
/// of ASCII characters (`&#47;`, `&#x2F;`, with or without `;`); an `&`
/// that starts nothing is itself. `None` for any other reference (there are
/// two thousand names, and some are read without their `;`): the caller
/// counts it against the key.
fn decoded(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('&') {
        out += cut(rest, ..at);
        rest = cut(rest, at + 1..);
        let bytes = rest.as_bytes();
        if bytes.first() == Some(&b'#') {
            let hex = matches!(bytes.get(1), Some(b'x' | b'X'));
            let start = if hex { 2 } else { 1 };
            let digits =
                bytes[start..].iter().take_while(|b| if hex { b.is_ascii_hexdigit() } else { b.is_ascii_digit() });
            let len = digits.count();
            let radix = if hex { 16 } else { 10 };
            let number = bytes[start..start + len]
                .iter()
                .try_fold(0u32, |n, b| n.checked_mul(radix)?.checked_add(char::from(*b).to_digit(radix)?))
                .filter(|_| len > 0)?;
            // ASCII only (what a URL, a method or an id is spelled with):
            // past it the browser remaps some (C1 controls), replaces others.
            out.push(char::from(u8::try_from(number).ok().filter(|b| (1..0x80).contains(b))?));
            let end = start + len + usize::from(bytes.get(start + len) == Some(&b';'));
            rest = cut(rest, end..);
        } else if bytes.first().is_some_and(u8::is_ascii_alphanumeric) {
            let (name, value) = [("amp;", '&'), ("quot;", '"'), ("apos;", '\''), ("lt;", '<'), ("gt;", '>')]
                .into_iter()
                .find(|(name, _)| rest.starts_with(name))?;
            out.push(value);
            rest = cut(rest, name.len()..);
        } else {
            out.push('&');
        }
    }
    out += rest;
    Some(out)
}

/// A submit button: a `button` of any `type` but `button` or `reset` (an
/// unknown type is a submit button), an `input` of type `submit` or
/// `image`; never one in a template, SVG or MathML, which submits nothing.
fn submits(control: &Json, kind: Option<&str>) -> bool {
    let tag = attribute(control, "tag").unwrap_or("");
    let kind = |k: &str| kind.is_some_and(|t| t.eq_ignore_ascii_case(k));
    let inert = !matches!(control.member("inert"), Some(Json::Bool(false)));
    !inert
        && if tag.eq_ignore_ascii_case("button") {
            !kind("button") && !kind("reset")
        } else {
            tag.eq_ignore_ascii_case("input") && (kind("submit") || kind("image"))
        }
}

/// Whether `text` (what the rewriter read as text inside a `<noscript>`)
/// holds one of `tags`, in any case: markup a browser with JavaScript off
/// reads as elements.
fn holds_tag(text: &str, tags: &[&str]) -> bool {
    // Byte windows, not `str::contains`: its searcher is 2 KB of wasm.
    tags.iter().any(|tag| text.as_bytes().windows(tag.len()).any(|w| w.eq_ignore_ascii_case(tag.as_bytes())))
}

/// The tags in a `<noscript>` that could submit a form or change where it goes.
const NOSCRIPT_CONTROLS: [&str; 6] = ["<button", "<input", "<select", "<textarea", "<form", "</form"];

/// Whether `text` (a `<noscript>`'s, inside a form) holds any tag, start or
/// end: a browser with JavaScript off reads it as markup, and an element it
/// leaves open (`<noscript><div></noscript></form>`: the `</noscript>` is
/// ignored past the `<div>`) holds the form open past its `</form>`.
fn holds_any_tag(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(at, byte)| {
        *byte == b'<' && {
            let next = bytes.get(at + 1).copied().unwrap_or(b' ');
            next.is_ascii_alphabetic() || (next == b'/' && bytes.get(at + 2).is_some_and(u8::is_ascii_alphabetic))
        }
    })
}

/// The page the forms are on: its origin, whether its base URL (the first
/// `<base href>`, resolved against the page) is on that origin, and what its
/// `<noscript>`s hold.
struct Page<'a> {
    scheme: &'a str,
    authority: &'a str,
    base_here: bool,
    /// A `<noscript>` so far holds a form or a control: with JavaScript off
    /// it may hold the browser's form open, or name a form from outside it.
    noscript_controls: bool,
    /// The markup took a turn where the rewriter's view and a browser's may
    /// part (the report's `unsure`).
    unsure: bool,
}

impl<'a> Page<'a> {
    /// The page on `origin` that `report` describes; `None` for a report
    /// it cannot read.
    fn new(origin: &'a str, report: &Json) -> Option<Self> {
        let (scheme, authority) = origin.split_once(':').unwrap_or(("", origin));
        let noscript = match (report.member("noscript"), report.member("noscriptOverflow")) {
            (Some(Json::String(text)), Some(Json::Bool(false))) => text.as_str(),
            _ => "<form <base",
        };
        let Json::Array(bases) = report.member("bases")? else { return None };
        let bases: Vec<Option<String>> = bases
            .iter()
            .map(|base| match base {
                Json::String(href) => Some(decoded(href)),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let mut page = Self {
            scheme,
            authority: authority.trim_start_matches('/'),
            base_here: true,
            noscript_controls: holds_tag(noscript, &NOSCRIPT_CONTROLS),
            // A `<noscript>` a browser ends elsewhere than the rewriter (a
            // comment or quoted value left open in it) puts every later
            // tag in doubt.
            unsure: !matches!(report.member("unsure"), Some(Json::Bool(false)))
                || !crate::core::noscript_ends_as_text(noscript),
        };
        // The base a browser uses is one of these (the first outside
        // templates and SVG), or one the rewriter read as text (in a
        // `<noscript>`): each must be on the page's origin. One it cannot
        // decode may send every relative action anywhere.
        page.base_here = !holds_tag(noscript, &["<base"])
            && bases.iter().all(|href| href.as_deref().is_some_and(|href| page.keeps(href)));
        Some(page)
    }

    /// Whether `form` gets a key, its `controls` and those of `naming` (the
    /// controls elsewhere that name it) considered: it has no key field of
    /// its own, sits in no other form and no template, holds no
    /// `<noscript>` markup a browser could submit it with, and every way it
    /// can be sent posts a body this layer reads to the page's origin. The
    /// ways: each control that submits it or names another way to (a
    /// browser reads a `formmethod` only on a submit button; a script may
    /// make any button one), and the form itself, always (Enter in a field,
    /// `form.submit()`, a button a browser does not count as a submitter). An attribute it cannot decode
    /// counts against the key.
    fn keys(&self, form: &Json, naming: &[&Json]) -> bool {
        self.sent_here_only(form, naming).unwrap_or(false)
    }

    fn sent_here_only(&self, form: &Json, naming: &[&Json]) -> Option<bool> {
        let Some(Json::Array(controls)) = form.member("controls") else { return None };
        let flag = |name| !matches!(form.member(name), Some(Json::Bool(false)));
        let inside = match form.member("noscript") {
            Some(Json::String(text)) => holds_any_tag(text),
            _ => true,
        };
        if flag("nested") || flag("inTemplate") || inside || self.noscript_controls || self.unsure {
            return Some(false);
        }
        // `None`: a value it cannot decode; `Some(None)`: no such attribute.
        let read = |element: &Json, name: &str| match attribute(element, name) {
            Some(raw) => decoded(raw).map(Some),
            None => Some(None),
        };
        let own = [read(form, "method")?, read(form, "action")?, read(form, "enctype")?];
        let sent_here = |method: Option<&str>, action: Option<&str>, enctype: Option<&str>| {
            // An enumerated attribute: its keyword in any case, nothing
            // around it (HTML: a `method` of " post " is invalid: GET).
            method.is_some_and(|m| m.eq_ignore_ascii_case("post"))
                && action.is_none_or(|a| self.keeps(a))
                && !enctype.is_some_and(|e| e.trim().eq_ignore_ascii_case("text/plain"))
        };
        for control in controls.iter().chain(naming.iter().copied()) {
            if read(control, "name")?.as_deref() == Some(KEY_FIELD) {
                return Some(false);
            }
            let [method, action, enctype] =
                [read(control, "formmethod")?, read(control, "formaction")?, read(control, "formenctype")?];
            let submits = submits(control, read(control, "type")?.as_deref());
            let another_way = method.is_some() || action.is_some() || enctype.is_some();
            let or_own = |mine: Option<String>, i: usize| mine.or_else(|| own[i].clone());
            if (submits || another_way)
                && !sent_here(or_own(method, 0).as_deref(), or_own(action, 1).as_deref(), or_own(enctype, 2).as_deref())
            {
                return Some(false);
            }
        }
        // The form itself, whatever its controls: a browser may submit it
        // with none of them (Enter in a field; a button Chromium does not
        // count as a submitter: one with `command`/`commandfor`, a
        // `<select>`'s first `<button>` — the seventh forms red team).
        Some(sent_here(own[0].as_deref(), own[1].as_deref(), own[2].as_deref()))
    }

    /// Whether a URL written in the page (an `action`, a `formaction`, the
    /// base's `href`) resolves to the page's origin. Read as a browser
    /// reads it — spaces around it ignored, `\` as `/` — but strictly: any
    /// spelling of a scheme or host it does not read with certainty (a tab
    /// or line break inside, a user name, a percent-escape, a trailing dot,
    /// `https:/host`) counts as another origin, and the form goes without a
    /// key.
    fn keeps(&self, reference: &str) -> bool {
        let reference = reference.trim_matches(|c: char| c <= ' ').as_bytes();
        // An empty action is the page's own URL, whatever the base.
        if reference.is_empty() {
            return true;
        }
        if reference.iter().any(|b| matches!(b, b'\t' | b'\n' | b'\r')) {
            return false;
        }
        match scheme_end(reference) {
            Some(colon) => {
                let rest = &reference[colon + 1..];
                // `https:path` is relative to the base; `https:/…` a host.
                reference[..colon].eq_ignore_ascii_case(self.scheme.as_bytes())
                    && if rest.first().is_some_and(slash) { self.is_authority(rest) } else { self.base_here }
            }
            None if reference.len() > 1 && slash(&reference[0]) && slash(&reference[1]) => {
                self.base_here && self.is_authority(reference)
            }
            None => self.base_here,
        }
    }

    /// Whether `rest`, after its leading slashes, names this page's host
    /// and port.
    fn is_authority(&self, rest: &[u8]) -> bool {
        let rest = &rest[rest.iter().position(|b| !slash(b)).unwrap_or(rest.len())..];
        let mut authority =
            &rest[..rest.iter().position(|b| matches!(b, b'/' | b'\\' | b'?' | b'#')).unwrap_or(rest.len())];
        let default_port: &[u8] = match self.scheme {
            "https" => b":443",
            "http" => b":80",
            _ => b"",
        };
        if let Some(host) = authority.strip_suffix(default_port).filter(|_| !default_port.is_empty()) {
            authority = host;
        }
        !authority.is_empty() && authority.eq_ignore_ascii_case(self.authority.as_bytes())
    }
}

fn slash(byte: &u8) -> bool {
    matches!(byte, b'/' | b'\\')
}

/// Where `reference`'s scheme ends (its `:`), if it starts with one: a
/// letter, then letters, digits, `+`, `-`, `.`.
fn scheme_end(reference: &[u8]) -> Option<usize> {
    let colon = reference.iter().position(|b| *b == b':')?;
    let scheme = &reference[..colon];
    let valid = scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    valid.then_some(colon)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    const PAGE: &str = "https://shop.example";

    /// One form as the rewriter's glue reports it.
    #[derive(Clone, Default)]
    struct FormSeen {
        method: Option<String>,
        action: Option<String>,
        enctype: Option<String>,
        id: Option<String>,
        nested: bool,
        in_template: bool,
        noscript: String,
        controls: Vec<Control>,
    }

    /// One of its controls.
    #[derive(Clone, Default)]
    struct Control {
        tag: String,
        kind: Option<String>,
        name: Option<String>,
        formmethod: Option<String>,
        formaction: Option<String>,
        formenctype: Option<String>,
        inert: bool,
    }

    fn json(value: Option<&str>) -> String {
        value.map_or("null".to_owned(), |v| format!("{v:?}"))
    }

    /// The report the rewriter's glue writes for `forms`, with the
    /// controls `naming` them (each with its `form` attribute), the page's
    /// `base` and the text of its `<noscript>`s.
    fn report_of(forms: &[FormSeen], naming: &[(&str, Control)], base: Option<&str>, noscript: &str) -> String {
        let control = |c: &Control, owner: Option<&str>| {
            format!(
                r#"{{"tag":{},"type":{},"name":{},"formmethod":{},"formaction":{},"formenctype":{},"form":{},"inert":{}}}"#,
                json(Some(&c.tag)),
                json(c.kind.as_deref()),
                json(c.name.as_deref()),
                json(c.formmethod.as_deref()),
                json(c.formaction.as_deref()),
                json(c.formenctype.as_deref()),
                json(owner),
                c.inert,
            )
        };
        let form = |f: &FormSeen| {
            format!(
                r#"{{"method":{},"action":{},"enctype":{},"id":{},"nested":{},"inTemplate":{},"noscript":{},"controls":[{}]}}"#,
                json(f.method.as_deref()),
                json(f.action.as_deref()),
                json(f.enctype.as_deref()),
                json(f.id.as_deref()),
                f.nested,
                f.in_template,
                json(Some(&f.noscript)),
                f.controls.iter().map(|c| control(c, None)).collect::<Vec<_>>().join(","),
            )
        };
        format!(
            r#"{{"forms":[{}],"naming":[{}],"bases":[{}],"noscript":{},"noscriptOverflow":false,"unsure":false}}"#,
            forms.iter().map(form).collect::<Vec<_>>().join(","),
            naming.iter().map(|(owner, c)| control(c, Some(owner))).collect::<Vec<_>>().join(","),
            base.map(|b| json(Some(b))).unwrap_or_default(),
            json(Some(noscript)),
        )
    }

    fn report(forms: &[FormSeen]) -> String {
        report_of(forms, &[], None, "")
    }

    fn form(method: Option<&str>, action: Option<&str>) -> FormSeen {
        FormSeen { method: method.map(str::to_owned), action: action.map(str::to_owned), ..FormSeen::default() }
    }

    fn post() -> FormSeen {
        form(Some("post"), Some("/orders"))
    }

    fn button(kind: Option<&str>, formmethod: Option<&str>, formaction: Option<&str>) -> Control {
        Control {
            tag: "button".to_owned(),
            kind: kind.map(str::to_owned),
            formmethod: formmethod.map(str::to_owned),
            formaction: formaction.map(str::to_owned),
            ..Control::default()
        }
    }

    fn with(mut form: FormSeen, controls: Vec<Control>) -> FormSeen {
        form.controls = controls;
        form
    }

    fn keyed_on(base: Option<&str>, form: &FormSeen) -> bool {
        let report = report_of(std::slice::from_ref(form), &[], base, "");
        page_form_keys(PAGE, &report, Placement::FormEnd, 1_764_000_000_000, &[7; 10]).is_some()
    }

    fn keyed(form: &FormSeen) -> bool {
        keyed_on(None, form)
    }

    #[test]
    fn a_post_form_gets_a_new_uuid7_before_its_end_tag() {
        let field =
            page_form_keys(PAGE, &report(&[post()]), Placement::FormEnd, 1_764_000_000_000, &[0xab; 10]).unwrap();
        let key = field.strip_prefix(r#"<input type="hidden" name="idempotency_key" value=""#).unwrap();
        let key = key.strip_suffix(r#"">"#).unwrap();
        assert_eq!((key.len(), &key[14..15]), (36, "7"), "{key}");
        assert!(crate::core::IdempotencyKey::parse(key).is_ok(), "a key §1 accepts");
        let other = page_form_keys(PAGE, &report(&[post()]), Placement::FormEnd, 1_764_000_000_000, &[0xcd; 10]);
        assert_ne!(other.as_deref(), Some(field.as_str()), "each form its own key");
    }

    /// Every submitter shape: the form's own method, its submit buttons
    /// (with and without `formmethod`), buttons that submit nothing, inputs.
    #[test]
    fn a_form_gets_a_key_only_when_every_way_it_is_sent_posts() {
        let input = |kind: &str, formmethod: Option<&str>| Control {
            tag: "INPUT".to_owned(),
            kind: Some(kind.to_owned()),
            formmethod: formmethod.map(str::to_owned),
            ..Control::default()
        };
        let get = || form(Some("get"), Some("/orders"));
        let cases: Vec<(&str, FormSeen, bool)> = vec![
            ("a post form", post(), true),
            ("POST in any case", form(Some("pOsT"), None), true),
            ("a method with spaces is invalid: GET", form(Some(" post "), None), false),
            ("a get form", get(), false),
            ("no method: GET", form(None, None), false),
            ("a dialog form", form(Some("dialog"), None), false),
            ("a post form, its button plain", with(post(), vec![button(None, None, None)]), true),
            // The form itself counts whatever its buttons (a seventh red team:
            // Chromium submits it with its own method past a button it does
            // not count as a submitter).
            ("a get form whose one button posts", with(get(), vec![button(None, Some("post"), None)]), false),
            (
                "no method, a button posts",
                with(form(None, None), vec![button(Some("submit"), Some("POST"), None)]),
                false,
            ),
            (
                "a get form, one button posting, one plain",
                with(get(), vec![button(None, Some("post"), None), button(None, None, None)]),
                false,
            ),
            ("a post form, a button sending GET", with(post(), vec![button(None, Some("get"), None)]), false),
            ("a post form, a button closing a dialog", with(post(), vec![button(None, Some("dialog"), None)]), false),
            ("an empty formmethod is invalid: GET", with(post(), vec![button(None, Some(""), None)]), false),
            (
                "a type=button posting, the form GET",
                with(get(), vec![button(Some("button"), Some("post"), None)]),
                false,
            ),
            ("a type=reset: the form itself posts", with(post(), vec![button(Some("RESET"), None, None)]), true),
            ("an unknown button type, a get form", with(get(), vec![button(Some("bogus"), Some("post"), None)]), false),
            ("an image input posting a get form", with(get(), vec![input("image", Some("post"))]), false),
            ("an image input posting a post form", with(post(), vec![input("image", Some("post"))]), true),
            ("a submit input with GET", with(post(), vec![input("Submit", Some("get"))]), false),
            ("a text input's formmethod counts too", with(post(), vec![input("text", Some("get"))]), false),
            ("a get form, a text input naming POST", with(get(), vec![input("text", Some("post"))]), false),
        ];
        for (what, form, gets) in cases {
            assert_eq!(keyed(&form), gets, "{what}");
        }
    }

    #[test]
    fn a_form_sent_to_another_origin_gets_no_key() {
        for (action, gets) in [
            ("/orders", true),
            ("orders?x=1", true),
            ("?q=1", true),
            ("#top", true),
            ("", true),
            ("   ", true),
            ("https://shop.example/orders", true),
            ("HTTPS://SHOP.EXAMPLE/orders", true),
            ("https://shop.example:443/orders", true),
            ("https:orders", true),
            (" https://evil.example/ ", false),
            ("https://evil.example/orders", false),
            ("//evil.example/orders", false),
            ("/\\evil.example/orders", false),
            ("\\\\evil.example/orders", false),
            ("/\t/evil.example/orders", false),
            ("ht\ntps://evil.example/", false),
            ("https:/evil.example", false),
            ("https:////evil.example", false),
            ("http://shop.example/orders", false),
            ("https://shop.example:8443/orders", false),
            ("https://shop.example./orders", false),
            ("https://user@shop.example/orders", false),
            ("https://shop.example@evil.example/", false),
            ("https://%73hop.example/", false),
            ("javascript:alert(1)", false),
            ("mailto:a@shop.example", false),
        ] {
            assert_eq!(keyed(&form(Some("post"), Some(action))), gets, "action {action:?}");
            let by_button = with(form(Some("post"), None), vec![button(None, None, Some(action))]);
            assert_eq!(keyed(&by_button), gets, "formaction {action:?}");
        }
    }

    #[test]
    fn a_base_on_another_origin_sends_relative_actions_there() {
        let evil = Some("https://evil.example/");
        assert!(!keyed_on(evil, &post()), "a relative action follows the base");
        assert!(!keyed_on(evil, &with(form(Some("post"), None), vec![button(None, None, Some("/orders"))])));
        assert!(keyed_on(evil, &form(Some("post"), None)), "no action: the page's own URL");
        assert!(keyed_on(evil, &form(Some("post"), Some(""))), "an empty action: the page's own URL");
        assert!(keyed_on(evil, &form(Some("post"), Some("https://shop.example/orders"))));
        assert!(!keyed_on(Some("//evil.example"), &post()));
        assert!(!keyed_on(Some("http://shop.example/"), &post()), "another scheme, another origin");
        assert!(!keyed_on(evil, &form(Some("post"), Some("//shop.example/orders"))), "the base's scheme");
        for here in ["/app/", "https://shop.example/app/", ""] {
            assert!(keyed_on(Some(here), &post()), "{here:?}");
        }
    }

    #[test]
    fn text_plain_nested_templated_and_self_keyed_forms_get_none() {
        let mut plain = post();
        plain.enctype = Some(" TEXT/PLAIN ".to_owned());
        assert!(!keyed(&plain));
        let formenctype = Control { formenctype: Some("text/plain".to_owned()), ..button(None, None, None) };
        assert!(!keyed(&with(post(), vec![formenctype])));
        let mut multipart = post();
        multipart.enctype = Some("multipart/form-data".to_owned());
        assert!(keyed(&multipart));
        let own = Control { tag: "textarea".to_owned(), name: Some(KEY_FIELD.to_owned()), ..Control::default() };
        assert!(!keyed(&with(post(), vec![own])), "the page's own field wins");
        let other_name =
            Control { tag: "input".to_owned(), name: Some("Idempotency_Key".to_owned()), ..Control::default() };
        assert!(keyed(&with(post(), vec![other_name])), "field names are exact");
        assert!(!keyed(&FormSeen { nested: true, ..post() }));
        assert!(!keyed(&FormSeen { in_template: true, ..post() }));
    }

    #[test]
    fn a_form_with_an_id_gets_its_key_at_the_page_end_naming_it() {
        let named = |id: &str, controls: Vec<Control>| FormSeen { id: Some(id.to_owned()), ..with(post(), controls) };
        let at = |forms: &[FormSeen], placement: Placement| {
            page_form_keys(PAGE, &report(forms), placement, 1_764_000_000_000, &[1; 40])
        };
        assert_eq!(at(&[named("f1", vec![])], Placement::FormEnd), None, "not before its end tag");
        let placed = at(&[named("f1", vec![])], Placement::PageEnd).unwrap();
        assert!(placed.starts_with(r#"<input type="hidden" form="f1" name="idempotency_key" value=""#), "{placed}");
        assert_eq!(at(&[named("f1", vec![])], Placement::PageCut), None, "controls after the cut were never seen");
        let late_get = named("f1", vec![button(None, Some("get"), Some("/orders/preview"))]);
        assert_eq!(at(&[late_get], Placement::PageEnd), None, "a control outside it sends GET");
        let two = at(&[named("a", vec![]), named("b\"><script>", vec![])], Placement::PageEnd).unwrap();
        assert_eq!(two.matches("<input").count(), 2, "{two}");
        assert!(two.contains(r#"form="b&#34;&#62;&#60;script&#62;""#), "the id cannot end the attribute: {two}");
        let keys: Vec<&str> = two.split("value=\"").skip(1).map(|rest| &rest[..36]).collect();
        assert_ne!(keys[0], keys[1], "each form its own key");
        assert_eq!(at(&[named("same", vec![]), named("same", vec![])], Placement::PageEnd), None, "one id, two forms");
        assert_eq!(at(&[named("", vec![])], Placement::PageEnd), None, "an empty id names nothing");
        assert_eq!(at(&[post()], Placement::PageEnd), None, "a form with no id was keyed at its end tag");
        let short =
            page_form_keys(PAGE, &report(&[named("a", vec![]), named("b", vec![])]), Placement::PageEnd, 1, &[1; 15]);
        assert_eq!(short.map(|s| s.matches("<input").count()), Some(1), "no random bytes, no key");
    }

    #[test]
    fn attributes_are_read_with_their_character_references_and_unread_ones_count_against_the_key() {
        for (action, gets) in [
            ("&#47;&#47;evil.example/x", false),
            ("&#x2F;&#x2f;evil.example/x", false),
            ("&#47&#47evil.example/x", false),
            ("/&#92;evil.example/x", false),
            ("&#x0C;//evil.example/x", false),
            ("&sol;&sol;evil.example/x", false),
            ("/orders?a=1&amp;b=2", true),
            ("/orders?a=1&b=2", false),
            ("/orders?q=a & b", true),
            ("/orders&#0;", false),
            ("/orders?to=&#233;t&#xE9;", false),
            ("/orders?n=&#49;&#x32;", true),
        ] {
            assert_eq!(keyed(&form(Some("post"), Some(action))), gets, "action {action:?}");
        }
        assert!(keyed(&form(Some("p&#111;st"), None)), "a method spelled with a reference is still post");
        let mut plain = post();
        plain.enctype = Some("text&#47;plain".to_owned());
        assert!(!keyed(&plain));
        assert!(!keyed(&with(post(), vec![button(None, Some("&#103;et"), None)])));
        let typed = |kind: &str| with(form(Some("post"), None), vec![button(Some(kind), Some("get"), None)]);
        assert!(!keyed(&typed("submit")));
        assert!(!keyed(&typed("butto&#110;")), "a button a script may make submit counts too");
        let own =
            Control { tag: "input".to_owned(), name: Some("idempotency&#95;key".to_owned()), ..Control::default() };
        assert!(!keyed(&with(post(), vec![own])), "the page's own field, however spelled");
        assert!(!keyed_on(Some("&#47;&#47;evil.example/"), &post()), "a base read as the browser reads it");
    }

    #[test]
    fn controls_naming_a_form_are_matched_by_its_id_as_the_browser_reads_both() {
        let named = |id: &str| FormSeen { id: Some(id.to_owned()), ..post() };
        let at = |forms: &[FormSeen], naming: &[(&str, Control)]| {
            page_form_keys(PAGE, &report_of(forms, naming, None, ""), Placement::PageEnd, 1, &[1; 30])
        };
        let get = || button(None, Some("get"), None);
        assert_eq!(at(&[named("a")], &[("&#97;", get())]), None, "a control naming `a` by a reference");
        assert!(at(&[named("a")], &[("b", get())]).is_some(), "one naming another form");
        let placed = at(&[named("a&amp;b")], &[]).unwrap();
        assert!(placed.contains(r#"form="a&#38;b""#), "the id as the browser reads it, written back: {placed}");
        assert_eq!(at(&[named("a&amp;b")], &[("a&b", get())]), None);
        assert_eq!(at(&[named("&#97;"), named("a")], &[]), None, "one id once read, two forms");
        assert_eq!(at(&[named("a")], &[("&unknown;", get())]), None, "a control naming who knows which form");
        assert_eq!(at(&[named("&unknown;")], &[]), None, "an id it cannot read");
        // The seventh red team: ids as the tokenizer reads them — raw line
        // breaks as LF, NUL as U+FFFD — and written back as references.
        assert_eq!(at(&[named("f\nx")], &[("f\rx", get())]), None, "a raw CR is read as LF");
        assert_eq!(at(&[named("f\r\nx")], &[("f\nx", get())]), None, "CRLF too");
        assert_eq!(at(&[named("h\u{FFFD}")], &[("h\0", get())]), None, "NUL is U+FFFD");
        let placed = at(&[named("g&#13;x")], &[]).unwrap();
        assert!(placed.contains(r#"form="g&#13;x""#), "a CR from a reference stays a CR: {placed}");
        assert_eq!(at(&[named("g&#13;x")], &[("g\nx", get())]).map(|p| p.contains("g&#13;x")), Some(true));
        assert_eq!(at(&[named("caf&eacute;"), named("café")], &[]), None, "an unread id could be another's");
        assert_eq!(at(&[named("café")], &[]), None, "read in another charset, it could be another's");
        assert_eq!(at(&[named("a"), named("\u{3042}")], &[]), None, "no form with an id, then");
    }

    #[test]
    fn controls_in_svg_math_or_a_template_submit_nothing_and_noscript_markup_counts() {
        let inert = |c: Control| Control { inert: true, ..c };
        let foreign = form(Some("post"), Some("https://evil.example/c"));
        assert!(!keyed(&with(foreign, vec![inert(button(None, None, Some("/ok")))])), "Enter sends the form itself");
        let get = form(Some("get"), None);
        assert!(!keyed(&with(get, vec![inert(button(None, Some("post"), None))])));
        assert!(!keyed(&with(post(), vec![inert(button(None, Some("get"), None))])), "a script could move it");
        assert!(keyed(&with(post(), vec![inert(button(None, None, None))])));
        // What the rewriter read as text in a <noscript>, a browser with JavaScript off reads as markup.
        let holding = |text: &str| FormSeen { noscript: text.to_owned(), ..post() };
        assert!(!keyed(&holding("<BUTTON formmethod=get>x</button>")));
        // Any tag at all inside the form: an element left open there holds the
        // form open past its </form> (a fourth red team's <noscript><div>).
        for markup in ["<div>", "<p>Turn on JavaScript", "<table>", "</span>", "<object data=x>"] {
            assert!(!keyed(&holding(markup)), "{markup}");
        }
        assert!(keyed(&holding("Turn on JavaScript: 1 < 2, a <3 b")), "text alone");
        let page = |noscript: &str, form: &FormSeen| {
            let report = report_of(std::slice::from_ref(form), &[], None, noscript);
            page_form_keys(PAGE, &report, Placement::FormEnd, 1, &[1; 10]).is_some()
        };
        assert!(!page("<base href=https://evil.example/>", &post()), "a base only a browser without JavaScript sees");
        assert!(!page(r#"<form method="get" action="https://evil.example/">"#, &post()), "a form it holds open");
        assert!(page(r#"<iframe src="https://www.googletagmanager.com/ns.html"></iframe>"#, &post()));
    }

    #[test]
    fn a_report_it_cannot_read_places_nothing() {
        let valid = report(&[post()]);
        assert!(page_form_keys(PAGE, &valid, Placement::FormEnd, 1, &[0; 10]).is_some());
        for report in [
            "",
            "{}",
            "[{}]",
            r#"{"forms":[{"method":"post"}],"naming":[],"bases":[],"noscript":"","noscriptOverflow":false,"unsure":false}"#,
            r#"{"forms":[1],"naming":[],"bases":[],"noscript":"","noscriptOverflow":false,"unsure":false}"#,
            &valid.replace(r#""bases":[]"#, r#""bases":[1]"#),
            &valid.replace(r#""nested":false"#, r#""nested":"no""#),
            "not json",
        ] {
            assert_eq!(page_form_keys(PAGE, report, Placement::FormEnd, 1, &[0; 10]), None, "{report}");
        }
        // Every base must be here: a browser ignores one in a template, and uses the next.
        let bases = valid.replace(r#""bases":[]"#, r#""bases":["/","https://evil.example/"]"#);
        assert_eq!(page_form_keys(PAGE, &bases, Placement::FormEnd, 1, &[0; 10]), None);
        // Markup the rewriter may read otherwise than a browser: no key from there on.
        let unsure = valid.replace(r#""unsure":false"#, r#""unsure":true"#);
        assert_eq!(page_form_keys(PAGE, &unsure, Placement::FormEnd, 1, &[0; 10]), None);
        assert_eq!(
            page_form_keys(PAGE, &valid.replace(r#","unsure":false"#, ""), Placement::FormEnd, 1, &[0; 10]),
            None
        );
        // Too much noscript text to keep: the worst is assumed.
        let overflow = valid.replace(r#""noscriptOverflow":false"#, r#""noscriptOverflow":true"#);
        assert_eq!(page_form_keys(PAGE, &overflow, Placement::FormEnd, 1, &[0; 10]), None);
        assert_eq!(Placement::named("page-end"), Some(Placement::PageEnd));
        assert_eq!(Placement::named("end"), None);
    }
}
