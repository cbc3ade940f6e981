//! Keys for HTML forms with no JavaScript (SPEC §8, `IDEMPOTENCY_FORMS=inject`):
//! which answers get their forms keys, and what that does to their headers.
//! The host streams the body through the runtime's `HTMLRewriter`, reports
//! what it sees of the page's forms, and places what
//! [`page_form_keys`](crate::core::page_form_keys) gives (page_forms.rs).

use crate::core::request::fingerprint::media_type;

/// Whether an answer gets form keys: a whole body that is HTML (not XHTML), in a
/// charset the runtime's rewriter reads. Statuses that carry no body have
/// no forms to give keys to (nor has the answer to a `HEAD`, which the
/// exchange leaves out); a range (`206`, or any `Content-Range`) is a slice
/// of a page, which rewriting would corrupt; and a charset the rewriter
/// refuses (UTF-16, an unknown label) would fail the answer — so those pass
/// as the origin sent them (SPEC §8: rewriting never breaks an answer).
pub(crate) fn gets_form_keys(status: u16, headers: &[(String, String)]) -> bool {
    let header = |wanted: &str| headers.iter().find(|(name, _)| name.eq_ignore_ascii_case(wanted)).map(|(_, v)| v);
    let Some(content_type) = header("content-type") else { return false };
    // One value only: a browser reads the last of several (`text/html;a=b,
    // application/xhtml+xml`, or two header lines joined), which may not
    // be HTML at all.
    let content_types = headers.iter().filter(|(name, _)| name.eq_ignore_ascii_case("content-type")).count();
    if content_types > 1 || content_type.contains(',') {
        return false;
    }
    // HTML only: an XHTML page is XML, which the rewriter reads as HTML —
    // an inserted `<input>` (not self-closed) would break it, and markup
    // it takes for text (a `<textarea>`'s) is elements there.
    let html = media_type(content_type) == "text/html";
    let whole = status != 206 && header("content-range").is_none();
    // Bytes the runtime decodes: none, or its own two codings exactly as it
    // names them (a seventh red team: `deflate`, `zstd`, `x-gzip`, `GZIP`,
    // `gzip, gzip` pass to the rewriter still compressed, and came out
    // broken).
    let encodings = headers.iter().filter(|(name, _)| name.eq_ignore_ascii_case("content-encoding")).count();
    let decoded = encodings == 0
        || (encodings == 1
            && header("content-encoding").is_some_and(|e| matches!(e.trim(), "gzip" | "br" | "identity")));
    html && whole && decoded && rewriter_reads(content_type) && !matches!(status, 100..=199 | 204 | 205 | 304)
}

/// Whether the `charset` of a `Content-Type` (none: the rewriter's UTF-8)
/// is one the rewriter reads: an ASCII-compatible encoding, where a form's
/// markup is the bytes it looks for. A short list of the common ones, not
/// every label: a page in any other passes unrewritten, never broken.
fn rewriter_reads(content_type: &str) -> bool {
    let charset = content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim().eq_ignore_ascii_case("charset").then(|| value.trim().trim_matches('"').to_ascii_lowercase())
    });
    let Some(charset) = charset else { return true };
    const READ: [&str; 8] =
        ["utf-8", "utf8", "us-ascii", "ascii", "iso-8859-1", "latin1", "windows-1252", "iso-8859-15"];
    READ.contains(&charset.as_str())
        || charset.strip_prefix("windows-125").is_some_and(|d| d.len() == 1 && d.as_bytes()[0].is_ascii_digit())
        || charset.strip_prefix("iso-8859-").is_some_and(|n| n.parse::<u8>().is_ok_and(|n| (1..=16).contains(&n)))
}

/// The longest tag the runtime's rewriter is handed, in bytes. It gives up
/// on a tag of about 3 MB (a large `data-` attribute) and cuts the page off
/// there with no error; the host's glue holds a tag's bytes up to this and
/// past it sends the rest of the page as the origin sent it (SPEC §8).
pub const LONGEST_TAG_BYTES: u32 = 1 << 20;

/// Whether a body of `known_len` bytes (`None`: not known, it streams)
/// could hold a tag longer than [`LONGEST_TAG_BYTES`]: only such bodies pay
/// for the guard in front of the rewriter.
pub(crate) fn may_hold_a_long_tag(known_len: Option<u64>) -> bool {
    known_len.is_none_or(|len| len > u64::from(LONGEST_TAG_BYTES))
}

/// The headers of an answer whose forms get keys: its body is new with
/// each answer sent, so nothing may describe it as the origin's bytes or let
/// a cache serve one page's keys to another load of it. The length and
/// validators go (a `304` would revive an old page's keys), and a shared
/// cache may not keep it (`public` and `s-maxage` give way to `private`);
/// the browser's own cache and back button still show the page it was
/// served, keys and all, as they should. The headers CDNs obey over
/// `Cache-Control` (`CDN-Cache-Control`, `Cloudflare-CDN-Cache-Control`
/// and any other `*-CDN-Cache-Control`, `Surrogate-Control`) go too: a
/// CDN in front of the worker would otherwise hand one page's keys to many
/// people (SPEC §8).
pub(crate) fn edit_headers(headers: &mut Vec<(String, String)>) {
    const DESCRIBE_THE_BYTES: [&str; 5] = ["content-length", "etag", "last-modified", "content-digest", "repr-digest"];
    let cdn_cache = |name: &str| {
        let name = name.to_ascii_lowercase();
        name.ends_with("cdn-cache-control") || name == "surrogate-control"
    };
    headers.retain(|(name, _)| !DESCRIBE_THE_BYTES.iter().any(|d| name.eq_ignore_ascii_case(d)) && !cdn_cache(name));
    let mut directives: Vec<String> = Vec::new();
    headers.retain(|(name, value)| {
        let cache_control = name.eq_ignore_ascii_case("cache-control");
        if cache_control {
            directives.extend(value.split(',').map(|d| d.trim().to_owned()).filter(|d| !d.is_empty()));
        }
        !cache_control
    });
    let shared = |d: &String| {
        let name = d.split('=').next().unwrap_or("").trim();
        name.eq_ignore_ascii_case("public") || name.eq_ignore_ascii_case("s-maxage")
    };
    directives.retain(|d| !shared(d));
    if !directives.iter().any(|d| d.eq_ignore_ascii_case("private") || d.eq_ignore_ascii_case("no-store")) {
        directives.insert(0, "private".to_owned());
    }
    headers.push(("cache-control".to_owned(), directives.join(", ")));
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn which_answers_get_keys() {
        let html = |t: &str| vec![("Content-Type".to_owned(), t.to_owned())];
        assert!(gets_form_keys(200, &html("text/html")));
        assert!(gets_form_keys(422, &html("TEXT/HTML; charset=utf-8")));
        assert!(!gets_form_keys(200, &html("application/xhtml+xml")), "XML, not HTML");
        assert!(!gets_form_keys(200, &html("application/json")));
        assert!(!gets_form_keys(200, &html("text/plain")));
        assert!(!gets_form_keys(200, &[]));
        for status in [101, 204, 205, 206, 304] {
            assert!(!gets_form_keys(status, &html("text/html")), "{status}");
        }
        let mut range = html("text/html");
        range.push(("content-range".into(), "bytes 0-99/1000".into()));
        assert!(!gets_form_keys(200, &range), "a slice of a page");
        // A browser reads the last of several values: maybe XML.
        assert!(!gets_form_keys(200, &html("text/html;, application/xhtml+xml")));
        assert!(!gets_form_keys(200, &html("text/html;a=b, text/xml")));
        let mut two = html("text/html;a=b");
        two.push(("content-type".into(), "application/xhtml+xml".into()));
        assert!(!gets_form_keys(200, &two), "two header lines");
    }

    #[test]
    fn only_bytes_the_runtime_decodes_are_rewritten() {
        let encoded = |e: &str| {
            vec![("content-type".to_owned(), "text/html".to_owned()), ("content-encoding".to_owned(), e.to_owned())]
        };
        for e in ["gzip", "br", "identity", " gzip "] {
            assert!(gets_form_keys(200, &encoded(e)), "{e}");
        }
        for e in ["deflate", "zstd", "compress", "x-gzip", "GZIP", "gzip, gzip", "gzip, br", ""] {
            assert!(!gets_form_keys(200, &encoded(e)), "{e}");
        }
        let mut twice = encoded("gzip");
        twice.push(("Content-Encoding".to_owned(), "gzip".to_owned()));
        assert!(!gets_form_keys(200, &twice));
    }

    #[test]
    fn only_charsets_the_rewriter_reads_are_rewritten() {
        let html = |t: &str| vec![("content-type".to_owned(), t.to_owned())];
        for read in [
            "text/html",
            "text/html; charset=utf-8",
            "text/html;charset=\"UTF-8\"",
            "text/html; charset=ISO-8859-1",
            "text/html; charset=windows-1251",
            "text/html; charset=iso-8859-15",
        ] {
            assert!(gets_form_keys(200, &html(read)), "{read}");
        }
        for refused in [
            "text/html; charset=utf-16",
            "text/html; charset=UTF-16LE",
            "text/html; charset=x-unknown",
            "text/html; charset=",
            "text/html; charset=iso-2022-jp",
            "text/html; charset=iso-8859-99",
            "text/html; charset=windows-12510",
        ] {
            assert!(!gets_form_keys(200, &html(refused)), "{refused}");
        }
    }

    #[test]
    fn a_rewritten_answer_keeps_no_validator_and_no_shared_cache() {
        let edited = |pairs: &[(&str, &str)]| {
            let mut headers: Vec<(String, String)> =
                pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
            edit_headers(&mut headers);
            headers
        };
        let got = edited(&[
            ("content-type", "text/html"),
            ("Content-Length", "120"),
            ("ETag", "\"a\""),
            ("Last-Modified", "x"),
            ("Cache-Control", "public, max-age=60"),
            ("cache-control", "s-maxage=600, stale-while-revalidate=30"),
            ("set-cookie", "s=1"),
            // What CDNs obey over Cache-Control (SPEC §8).
            ("CDN-Cache-Control", "max-age=600"),
            ("Cloudflare-CDN-Cache-Control", "max-age=600"),
            ("Fastly-CDN-Cache-Control", "max-age=600"),
            ("Surrogate-Control", "max-age=600"),
            ("x-cdn-cache-note", "kept: not a cache header"),
        ]);
        let expected = [
            ("content-type", "text/html"),
            ("set-cookie", "s=1"),
            ("x-cdn-cache-note", "kept: not a cache header"),
            ("cache-control", "private, max-age=60, stale-while-revalidate=30"),
        ];
        assert_eq!(got, expected.map(|(n, v)| (n.to_owned(), v.to_owned())));
        let last = |pairs: &[(&str, &str)]| edited(pairs).pop().unwrap().1;
        assert_eq!(last(&[]), "private");
        assert_eq!(last(&[("cache-control", "no-store")]), "no-store");
        assert_eq!(last(&[("cache-control", "Private, no-cache")]), "Private, no-cache");
    }
}
