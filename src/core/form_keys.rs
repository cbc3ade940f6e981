//! Keys for HTML forms with no JavaScript (SPEC §8, `IDEMPOTENCY_FORMS=inject`):
//! which answers get their post forms a hidden `idempotency_key` field, what
//! that does to their headers, and the field itself. The host streams the
//! body through the runtime's `HTMLRewriter`, reports what it sees of each
//! form, and inserts what [`key_input`] gives before the form's end tag.

use super::Uuid7Generator;
use super::fingerprint::media_type;
use super::form_field::KEY_FIELD;

/// Whether an answer gets form keys: a body that is HTML. Statuses that
/// carry no body have no forms to give keys to (nor has the answer to a
/// `HEAD`, which the exchange leaves out).
pub(crate) fn gets_form_keys(status: u16, headers: &[(String, String)]) -> bool {
    let html = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
        .map(|(_, value)| media_type(value))
        .is_some_and(|t| t == "text/html" || t == "application/xhtml+xml");
    html && !matches!(status, 100..=199 | 204 | 205 | 304)
}

/// The headers of an answer whose forms get keys: its body is new with
/// each answer sent, so nothing may describe it as the origin's bytes or let
/// a cache serve one page's keys to another load of it. The length and
/// validators go (a `304` would revive an old page's keys), and a shared
/// cache may not keep it (`public` and `s-maxage` give way to `private`);
/// the browser's own cache and back button still show the page it was
/// served, keys and all, as they should.
pub(crate) fn edit_headers(headers: &mut Vec<(String, String)>) {
    const DESCRIBE_THE_BYTES: [&str; 5] = ["content-length", "etag", "last-modified", "content-digest", "repr-digest"];
    headers.retain(|(name, _)| !DESCRIBE_THE_BYTES.iter().any(|d| name.eq_ignore_ascii_case(d)));
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

/// What goes before a form's end tag: the hidden key field, with a new
/// UUIDv7 from `now_ms` and `random`, when the form posts and has no field
/// of that name yet; `None` otherwise. `method` is the form's `method`
/// attribute, `submitters` the `formmethod` of each control in it that has
/// one (a form whose button posts it is a post form too), `has_field`
/// whether a control in it is named `idempotency_key` already (the page's
/// own key wins).
pub fn key_input(
    method: Option<&str>,
    submitters: &[String],
    has_field: bool,
    now_ms: u64,
    random: [u8; 10],
) -> Option<String> {
    // An enumerated attribute: its keyword in any case, nothing around it
    // (HTML: a `method` of " post " is invalid, and the form submits with GET).
    let posts = |m: &str| m.eq_ignore_ascii_case("post");
    if has_field || !(method.is_some_and(posts) || submitters.iter().any(|m| posts(m))) {
        return None;
    }
    let key = Uuid7Generator::format(&Uuid7Generator::default().next(now_ms, random));
    Some(format!(r#"<input type="hidden" name="{KEY_FIELD}" value="{key}">"#))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn input(method: Option<&str>, submitters: &[&str], has_field: bool) -> Option<String> {
        let submitters: Vec<String> = submitters.iter().map(|s| s.to_string()).collect();
        key_input(method, &submitters, has_field, 1_764_000_000_000, [0xab; 10])
    }

    #[test]
    fn post_forms_without_the_field_get_one_with_a_new_uuid7() {
        let field = input(Some("post"), &[], false).unwrap();
        let key = field.strip_prefix(r#"<input type="hidden" name="idempotency_key" value=""#).unwrap();
        let key = key.strip_suffix(r#"">"#).unwrap();
        assert_eq!((key.len(), &key[14..15]), (36, "7"), "{key}");
        assert!(crate::core::IdempotencyKey::parse(key).is_ok(), "a key §1 accepts");
        for (method, submitters, has_field, gets) in [
            (Some("POST"), &[][..], false, true),
            (Some("pOsT"), &[], false, true),
            (Some(" post "), &[], false, false),
            (Some("get"), &["post"][..], false, true),
            (None, &["get", "POST"], false, true),
            (Some("post"), &[], true, false),
            (Some("get"), &[], false, false),
            (None, &[], false, false),
            (Some("dialog"), &["get"], false, false),
        ] {
            assert_eq!(input(method, submitters, has_field).is_some(), gets, "{method:?} {submitters:?} {has_field}");
        }
        let other = key_input(Some("post"), &[], false, 1_764_000_000_000, [0xcd; 10]).unwrap();
        assert_ne!(other, field, "each form its own key");
    }

    #[test]
    fn which_answers_get_keys() {
        let html = |t: &str| vec![("Content-Type".to_owned(), t.to_owned())];
        assert!(gets_form_keys(200, &html("text/html")));
        assert!(gets_form_keys(422, &html("TEXT/HTML; charset=utf-8")));
        assert!(gets_form_keys(200, &html("application/xhtml+xml")));
        assert!(!gets_form_keys(200, &html("application/json")));
        assert!(!gets_form_keys(200, &html("text/plain")));
        assert!(!gets_form_keys(200, &[]));
        for status in [101, 204, 205, 304] {
            assert!(!gets_form_keys(status, &html("text/html")), "{status}");
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
        ]);
        let expected = [
            ("content-type", "text/html"),
            ("set-cookie", "s=1"),
            ("cache-control", "private, max-age=60, stale-while-revalidate=30"),
        ];
        assert_eq!(got, expected.map(|(n, v)| (n.to_owned(), v.to_owned())));
        let last = |pairs: &[(&str, &str)]| edited(pairs).pop().unwrap().1;
        assert_eq!(last(&[]), "private");
        assert_eq!(last(&[("cache-control", "no-store")]), "no-store");
        assert_eq!(last(&[("cache-control", "Private, no-cache")]), "Private, no-cache");
    }
}
