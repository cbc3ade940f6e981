//! A `str` cut at byte indexes with no panic path.
//!
//! `&text[a..b]` panics when a bound falls inside a character, and that
//! panic's message formats the character with `Debug`, which pulls about
//! 9 KB of formatting and Unicode tables (5 KB gzip) into every wasm build
//! (docs/performance.md, "Bundle size"). The core cuts only next to ASCII
//! bytes it found, so every bound is between characters; [`cut`] says so
//! without that path. One `&text[..]` anywhere in the wasm's code brings
//! it all back, and `make test-deploy` fails on it.

use core::slice::SliceIndex;

/// `text`'s bytes in `range`. A bound inside a character, or past the end,
/// gives `""`; the core's callers cut only next to ASCII bytes they found.
pub(crate) fn cut<R: SliceIndex<str, Output = str>>(text: &str, range: R) -> &str {
    text.get(range).unwrap_or_default()
}

/// `text` with each `from` in it replaced by `to` (`str::replace`, whose
/// searcher carries the same panic path; `from` empty: `text` unchanged).
pub(crate) fn replace_all(text: &str, from: &str, to: &str) -> String {
    if from.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.as_bytes().windows(from.len()).position(|w| w == from.as_bytes()) {
        out.push_str(cut(rest, ..at));
        out.push_str(to);
        rest = cut(rest, at + from.len()..);
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::{cut, replace_all};
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn cuts_between_characters_and_gives_nothing_inside_one() {
        assert_eq!(cut("https://a.example/p", 8..17), "a.example");
        assert_eq!(cut("https://a", ..5), "https");
        assert_eq!(cut("abc", 3..), "");
        assert_eq!(cut("abc", 4..), "", "past the end");
        assert_eq!(cut("é/x", 1..), "", "inside a character");
        assert_eq!(cut("é/x", 2..), "/x");
    }

    #[test]
    fn replaces_as_str_replace_does() {
        let rows = [
            ("IDEMPOTENCY_LEASE_SECONDS must exceed IDEMPOTENCY_LEASE_SECONDS", "IDEMPOTENCY_LEASE_SECONDS", "lease"),
            ("aaa", "aa", "b"),
            ("no match here", "xyz", "q"),
            ("é→é", "é", "e"),
            ("", "a", "b"),
            ("abc", "", "x"),
        ];
        for (text, from, to) in rows {
            let expected = if from.is_empty() { text.to_owned() } else { text.replace(from, to) };
            assert_eq!(replace_all(text, from, to), expected, "{text:?} {from:?}");
        }
    }
}
