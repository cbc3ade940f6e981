//! Where a browser with JavaScript off ends a `<noscript>` (SPEC §8): the
//! rewriter reads its content as text and ends it at the first
//! `</noscript>`; a browser reads the content as markup, so a comment, a
//! quoted attribute value or a raw-text element left open inside it hides
//! that `</noscript>`, and the markup after it, from the browser — a form
//! the rewriter saw begin there is not the browser's.

/// Elements with no end tag: they leave nothing open.
const VOID: [&[u8]; 14] = [
    b"area", b"base", b"br", b"col", b"embed", b"hr", b"img", b"input", b"keygen", b"link", b"meta", b"param",
    b"source", b"wbr",
];

/// Elements whose content a browser reads as text up to their own end tag.
const RAW_TEXT: [&[u8]; 8] = [b"script", b"style", b"xmp", b"iframe", b"noembed", b"noframes", b"title", b"textarea"];

/// Whether each `<noscript>`'s text in `texts` (the texts in page order,
/// each ended by a NUL, as the rewriter's glue reports them) ends where a
/// browser's tokenizer is back in plain text with nothing left open: every
/// comment, tag, quoted value and raw-text element it opens is closed
/// inside it, and every element too, end tag for start tag (a `<template>`
/// or `<table>` left open changes how the browser builds the markup after
/// it). Anything this reader does not follow exactly (SVG or MathML, a
/// CDATA section, a `<plaintext>`, a script holding `<!--`, an element
/// closed out of order or by implication) counts as not ending.
///
/// ```
/// use oncekey::core::noscript_ends_as_text;
/// assert!(noscript_ends_as_text("<img height=\"1\" src=\"/t?a=1&b=2\"/>\0"));
/// assert!(!noscript_ends_as_text("<p title=\"\0"));
/// assert!(!noscript_ends_as_text("<!--\0-->\0"), "each one alone");
/// ```
pub fn noscript_ends_as_text(texts: &str) -> bool {
    texts.split('\0').all(|text| ends_in_data(text.as_bytes()))
}

/// Whether HTML's tokenizer, started in its data state on `text`, ends
/// there, each element it opened closed by its own end tag.
fn ends_in_data(text: &[u8]) -> bool {
    let mut open: Vec<Vec<u8>> = Vec::new();
    let mut at = 0;
    while let Some(&byte) = text.get(at) {
        if byte != b'<' {
            at += 1;
            continue;
        }
        let rest = &text[at..];
        let next = rest.get(1).copied().unwrap_or(b' ');
        at = if rest.starts_with(b"<!--") {
            // A comment ends at `-->` (`<!-->` and `<!--->` included) or
            // at `--!>` after its opening (a seventh red team: a browser
            // ends it there too), whichever comes first.
            let dashes = find(&text[at + 2..], b"-->").map(|end| at + 2 + end + 3);
            let bang = text.get(at + 4..).and_then(|body| find(body, b"--!>")).map(|end| at + 4 + end + 4);
            match dashes.into_iter().chain(bang).min() {
                Some(end) => end,
                None => return false,
            }
        } else if rest.starts_with(b"<![") {
            // A CDATA section is one only in SVG or MathML.
            return false;
        } else if rest.starts_with(b"<!") || next == b'?' {
            // A bogus comment, up to the next `>`.
            match find(rest, b">") {
                Some(end) => at + end + 1,
                None => return false,
            }
        } else if next == b'/' && rest.get(2).is_some_and(u8::is_ascii_alphabetic) {
            let Some((name, end)) = tag_end(text, at + 2) else { return false };
            if open.pop().is_none_or(|last| !last.eq_ignore_ascii_case(&name)) {
                return false;
            }
            end
        } else if next == b'/' {
            // `</>` is dropped; `</ x>` is a bogus comment.
            match find(rest, b">") {
                Some(end) => at + end + 1,
                None => return false,
            }
        } else if next.is_ascii_alphabetic() {
            let Some((name, end)) = tag_end(text, at + 1) else { return false };
            let name = name.to_ascii_lowercase();
            if matches!(name.as_slice(), b"svg" | b"math" | b"plaintext") {
                return false;
            }
            if RAW_TEXT.contains(&name.as_slice()) {
                match raw_text_end(&text[end..], &name) {
                    Some(close) => end + close,
                    None => return false,
                }
            } else {
                if !VOID.contains(&name.as_slice()) {
                    open.push(name);
                }
                end
            }
        } else {
            at + 1
        };
    }
    open.is_empty()
}

/// A tag whose name starts at `from`: its name, and where it ends (just
/// past its `>`); `None` when the text ends inside it. Attribute values in
/// quotes are skipped whole, as a browser reads them.
fn tag_end(text: &[u8], from: usize) -> Option<(Vec<u8>, usize)> {
    let name_len = text[from..].iter().take_while(|b| !b.is_ascii_whitespace() && **b != b'/' && **b != b'>').count();
    let name = text[from..from + name_len].to_vec();
    let mut at = from + name_len;
    loop {
        while text.get(at).is_some_and(|b| b.is_ascii_whitespace() || *b == b'/') {
            at += 1;
        }
        match text.get(at)? {
            b'>' => return Some((name, at + 1)),
            // An attribute's name (a leading `=` belongs to it).
            _ => {
                at += 1;
                while text.get(at).is_some_and(|b| !b.is_ascii_whitespace() && !matches!(b, b'/' | b'>' | b'=')) {
                    at += 1;
                }
            }
        }
        while text.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        if text.get(at) != Some(&b'=') {
            continue;
        }
        at += 1;
        while text.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        match *text.get(at)? {
            quote @ (b'"' | b'\'') => at += 1 + find(&text[at + 1..], &[quote])? + 1,
            b'>' => {}
            _ => {
                while text.get(at).is_some_and(|b| !b.is_ascii_whitespace() && *b != b'>') {
                    at += 1;
                }
            }
        }
    }
}

/// Where a raw-text element's content, `text`, ends: just past its end tag
/// (`</name` then a space, `/` or `>`, in any case). A script holding
/// `<!--` may escape its end tag, so it counts as never ending.
fn raw_text_end(text: &[u8], name: &[u8]) -> Option<usize> {
    if name == b"script" && find(text, b"<!--").is_some() {
        return None;
    }
    let mut from = 0;
    loop {
        let at = from + find(&text[from..], b"</")?;
        let after = text.get(at + 2..at + 2 + name.len())?;
        let closes = after.eq_ignore_ascii_case(name)
            && text.get(at + 2 + name.len()).is_none_or(|b| b.is_ascii_whitespace() || matches!(b, b'/' | b'>'));
        if closes {
            let (_, end) = tag_end(text, at + 2)?;
            return Some(end);
        }
        from = at + 2;
    }
}

/// Where `needle` first is in `haystack`: byte windows, not `str`'s
/// searcher (2 KB of wasm).
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::noscript_ends_as_text;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn markup_a_browser_closes_inside_the_noscript() {
        for text in [
            "",
            "Please turn JavaScript on.",
            "<p>Enable JS</p>",
            r#"<img height="1" width="1" style="display:none" src="https://t.example/tr?id=1&ev=PageView&noscript=1"/>"#,
            "<iframe src=\"https://gtm.example/ns.html?id=GTM-X\" height=\"0\"></iframe>",
            "<style>p > a { color: red }</style><p>x</p>",
            "<!-- a comment --><p>x</p>",
            "<!---->",
            "<!-- a --!><p>x</p>",
            "<!--!> -->",
            "<p title='a>b'>x</p>",
            "<p title=a>b</p>",
            "</>",
            "</ x>",
            "<?php ?>",
            "<!DOCTYPE html>",
            "a < b and c > d",
            "<p =x>y</p>",
            "<textarea></textarea >",
            "<TITLE>x</Title>",
        ] {
            assert!(noscript_ends_as_text(&format!("{text}\0")), "{text:?}");
        }
    }

    #[test]
    fn markup_that_carries_a_browser_past_the_noscript_s_end() {
        // The red team's openers: each hides the `</noscript>` the rewriter saw.
        for text in [
            r#"<p title=""#,
            "<p title='",
            "<!--",
            "<!-- -- >",
            // A comment a browser ends at `--!>`: the `<xmp>` after it is open
            // (the seventh forms red team).
            "<!-- --!><xmp><!-- -->",
            "<!--!><xmp>",
            "<xmp>",
            "<style>",
            "<title>",
            "<iframe>",
            "<script>",
            "<noembed>",
            "<noframes>",
            "<textarea>",
            "<p",
            "<p title",
            "<p title=",
            "</p title=\"",
            "<!DOCTYPE",
            "<?x",
            "</ x",
            "<plaintext>",
            "<svg></svg>",
            "<math>",
            "<![CDATA[ x ]]>",
            "<script><!--</script>",
            "<style></styles>",
            // Elements left open, or closed out of order (a sixth red team's
            // <template> held a GET form open past its </form>).
            "<template>",
            "<table><tr><td>",
            "<div><span></div>",
            "<p>Enable JS",
            "</p>",
            "<select><option>a",
        ] {
            assert!(!noscript_ends_as_text(&format!("{text}\0")), "{text:?}");
        }
    }

    #[test]
    fn each_noscript_alone() {
        assert!(noscript_ends_as_text("<p>a</p>\0<img src=x>\0"));
        assert!(!noscript_ends_as_text("<p>a</p>\0<p title=\"\0\">\0"));
        assert!(!noscript_ends_as_text("<!--\0-->\0"));
    }
}
