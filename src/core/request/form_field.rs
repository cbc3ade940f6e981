//! The `idempotency_key` field of an HTML form posted with no JavaScript
//! (SPEC §8): read from an `application/x-www-form-urlencoded` or
//! `multipart/form-data` body and taken out of it, every other byte left as
//! it was, so the origin gets the form it rendered.

use super::multipart;
use crate::core::request::fingerprint::media_type;

/// The field's name, as the edge gives it to forms ([`page_form_keys`](crate::core::page_form_keys)).
pub const KEY_FIELD: &str = "idempotency_key";

/// What a form body says of its key field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FieldKey {
    /// No such field, or the body is no form this reads.
    Absent,
    /// One field: its value, decoded from the body's encoding.
    One(Vec<u8>),
    /// More than one: which is the key is anyone's guess (SPEC §1 refuses a
    /// header sent twice for the same reason).
    Repeated,
}

/// The two encodings an HTML form posts in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Encoding {
    Urlencoded,
    Multipart,
}

/// The form encoding of a body of this `Content-Type`, if it is one.
fn encoding(content_type: &str) -> Option<Encoding> {
    match media_type(content_type).as_str() {
        "application/x-www-form-urlencoded" => Some(Encoding::Urlencoded),
        "multipart/form-data" => Some(Encoding::Multipart),
        _ => None,
    }
}

/// Whether a body of this `Content-Type` is a form [`take_key_field`]
/// reads.
pub(crate) fn is_form(content_type: Option<&str>) -> bool {
    content_type.and_then(encoding).is_some()
}

/// Reads the key field of a form `body` and removes every occurrence of
/// it. A body that is not a well-formed form of its `Content-Type` is left
/// as it is, and has no field.
pub(crate) fn take_key_field(content_type: Option<&str>, body: &mut Vec<u8>) -> FieldKey {
    let Some(content_type) = content_type else { return FieldKey::Absent };
    match encoding(content_type) {
        Some(Encoding::Urlencoded) => take_from_urlencoded(body),
        Some(Encoding::Multipart) => take_from_multipart(content_type, body),
        None => FieldKey::Absent,
    }
}

/// The field `name` of a form `body`, read as [`take_key_field`] reads
/// the key field but left in place: a route's `form:<field>` key source
/// (SPEC §13), a field of the origin's own form.
pub(crate) fn read_field(content_type: Option<&str>, body: &[u8], name: &str) -> FieldKey {
    let Some(content_type) = content_type else { return FieldKey::Absent };
    let values: Vec<Vec<u8>> = match encoding(content_type) {
        Some(Encoding::Urlencoded) => body
            .split(|&b| b == b'&')
            .map(name_and_value)
            .filter(|(n, _)| decoded(n) == name.as_bytes())
            .map(|(_, value)| decoded(value))
            .collect(),
        Some(Encoding::Multipart) => {
            let Some(parts) = multipart::parts(content_type, body) else { return FieldKey::Absent };
            let Ok(parts) = parts.collect::<Result<Vec<_>, _>>() else { return FieldKey::Absent };
            parts
                .iter()
                .filter(|p| p.name == name.as_bytes() && p.filename.is_none())
                .map(|p| p.content.to_vec())
                .collect()
        }
        None => return FieldKey::Absent,
    };
    match values.is_empty() {
        true => FieldKey::Absent,
        false => one_of(values),
    }
}

/// A urlencoded pair's name and value, as written (`a` alone is `a=`).
fn name_and_value(pair: &[u8]) -> (&[u8], &[u8]) {
    match pair.iter().position(|&b| b == b'=') {
        Some(at) => (&pair[..at], &pair[at + 1..]),
        None => (pair, &b""[..]),
    }
}

/// `a=1&idempotency_key=k&b=2` → `a=1&b=2`: the field's pairs and one `&`
/// each are removed; names and values are read as browsers encode them
/// (`+` is a space, then percent-decoding).
fn take_from_urlencoded(body: &mut Vec<u8>) -> FieldKey {
    let mut values = Vec::new();
    let mut kept: Vec<&[u8]> = Vec::new();
    for pair in body.split(|&b| b == b'&') {
        let (name, value) = name_and_value(pair);
        if decoded(name) == KEY_FIELD.as_bytes() {
            values.push(decoded(value));
        } else {
            kept.push(pair);
        }
    }
    if values.is_empty() {
        return FieldKey::Absent;
    }
    *body = kept.join(&b'&');
    one_of(values)
}

/// A urlencoded name or value as bytes: `+` is a space, then
/// percent-decoding (a `%` not followed by two hex digits stays as it is).
fn decoded(text: &[u8]) -> Vec<u8> {
    let spaced: Vec<u8> = text.iter().map(|&b| if b == b'+' { b' ' } else { b }).collect();
    percent_encoding::percent_decode(&spaced).collect()
}

/// Each part named `idempotency_key` that is not a file, removed with the
/// delimiter before it.
fn take_from_multipart(content_type: &str, body: &mut Vec<u8>) -> FieldKey {
    let Some(parts) = multipart::parts(content_type, body) else { return FieldKey::Absent };
    let Ok(parts) = parts.collect::<Result<Vec<_>, _>>() else { return FieldKey::Absent };
    let fields: Vec<_> = parts.iter().filter(|p| p.name == KEY_FIELD.as_bytes() && p.filename.is_none()).collect();
    if fields.is_empty() {
        return FieldKey::Absent;
    }
    let values = fields.iter().map(|p| p.content.to_vec()).collect();
    let spans: Vec<_> = fields.iter().map(|p| p.span).collect();
    let mut kept = Vec::with_capacity(body.len());
    let mut from = 0;
    for (start, end) in spans {
        kept.extend_from_slice(&body[from..start]);
        from = end;
    }
    kept.extend_from_slice(&body[from..]);
    *body = kept;
    one_of(values)
}

fn one_of(mut values: Vec<Vec<u8>>) -> FieldKey {
    match values.len() {
        1 => FieldKey::One(values.remove(0)),
        _ => FieldKey::Repeated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    const URLENCODED: &str = "application/x-www-form-urlencoded";
    const MULTIPART: &str = "multipart/form-data; boundary=B0und";

    fn take(content_type: &str, body: &[u8]) -> (FieldKey, Vec<u8>) {
        let mut body = body.to_vec();
        let key = take_key_field(Some(content_type), &mut body);
        (key, body)
    }

    fn one(key: &str) -> FieldKey {
        FieldKey::One(key.as_bytes().to_vec())
    }

    #[test]
    fn urlencoded_forms_lose_the_field_and_one_separator() {
        let cases: [(&str, FieldKey, &str); 8] = [
            ("idempotency_key=k1&item=tea&qty=1", one("k1"), "item=tea&qty=1"),
            ("item=tea&idempotency_key=k1&qty=1", one("k1"), "item=tea&qty=1"),
            ("item=tea&qty=1&idempotency_key=k1", one("k1"), "item=tea&qty=1"),
            ("idempotency_key=k1", one("k1"), ""),
            ("item=tea&qty=1", FieldKey::Absent, "item=tea&qty=1"),
            ("idempotency_key=k1&item=tea&idempotency_key=k2", FieldKey::Repeated, "item=tea"),
            // Decoded as browsers encode: `+` is a space, then percent escapes.
            ("idempotency%5Fkey=a%2Bb+c&x=%26", one("a+b c"), "x=%26"),
            // Empty pairs and odd bytes elsewhere stay as they were.
            ("&a=%ZZ&&idempotency_key=&b", one(""), "&a=%ZZ&&b"),
        ];
        for (body, key, rest) in cases {
            assert_eq!(take(URLENCODED, body.as_bytes()), (key, rest.as_bytes().to_vec()), "{body}");
        }
        // Its media type read as the fingerprint reads it.
        assert_eq!(take("Application/X-WWW-Form-Urlencoded; charset=UTF-8", b"idempotency_key=k").0, one("k"));
    }

    fn part(name: &str, extra: &str, content: &str) -> String {
        format!("--B0und\r\nContent-Disposition: form-data; name=\"{name}\"{extra}\r\n\r\n{content}\r\n")
    }

    #[test]
    fn multipart_forms_lose_the_field_s_part_and_its_delimiter() {
        let (item, key, end) = (part("item", "", "tea"), part("idempotency_key", "", "k1"), "--B0und--\r\n");
        let file = part("idempotency_key", "; filename=\"k.txt\"", "not a key");
        let cases: Vec<(String, FieldKey, String)> = vec![
            (format!("{key}{item}{end}"), one("k1"), format!("{item}{end}")),
            (format!("{item}{key}{end}"), one("k1"), format!("{item}{end}")),
            (format!("{item}{key}{item}{end}"), one("k1"), format!("{item}{item}{end}")),
            (format!("{item}{end}"), FieldKey::Absent, format!("{item}{end}")),
            (format!("{key}{item}{key}{end}"), FieldKey::Repeated, format!("{item}{end}")),
            // A file input of that name is a file, not the key.
            (format!("{file}{end}"), FieldKey::Absent, format!("{file}{end}")),
            // Not a well-formed form: left whole, no field read.
            (format!("{key}{item}"), FieldKey::Absent, format!("{key}{item}")),
        ];
        for (body, expected, rest) in cases {
            let (got, left) = take(MULTIPART, body.as_bytes());
            assert_eq!(got, expected, "{body:?}");
            // The first part's delimiter opening the body goes with it; the
            // next part's then carries its CRLF, which the parser reads as
            // an empty preamble.
            let left = String::from_utf8(left).unwrap();
            assert_eq!(left.trim_start_matches("\r\n"), rest, "{body:?}");
        }
    }

    #[test]
    fn other_bodies_have_no_field_and_are_left_alone() {
        for content_type in ["application/json", "text/plain", "multipart/mixed; boundary=B0und"] {
            assert_eq!(take(content_type, b"idempotency_key=k1"), (FieldKey::Absent, b"idempotency_key=k1".to_vec()));
        }
        let mut body = b"idempotency_key=k1".to_vec();
        assert_eq!(take_key_field(None, &mut body), FieldKey::Absent);
        assert!(is_form(Some("multipart/form-data; boundary=x")) && is_form(Some(URLENCODED)));
        assert!(!is_form(Some("application/json")) && !is_form(None));
    }

    #[test]
    fn a_field_is_read_and_left_in_place() {
        let urlencoded = b"request_id=r%2D1&item=tea&note=a+b";
        assert_eq!(read_field(Some(URLENCODED), urlencoded, "request_id"), one("r-1"));
        assert_eq!(read_field(Some(URLENCODED), urlencoded, "note"), one("a b"));
        assert_eq!(read_field(Some(URLENCODED), urlencoded, "missing"), FieldKey::Absent);
        assert_eq!(read_field(Some(URLENCODED), b"r=1&r=2", "r"), FieldKey::Repeated);
        let form = format!("{}{}--B0und--\r\n", part("request_id", "", "r-1"), part("file", "; filename=\"f\"", "x"));
        assert_eq!(read_field(Some(MULTIPART), form.as_bytes(), "request_id"), one("r-1"));
        assert_eq!(read_field(Some(MULTIPART), form.as_bytes(), "file"), FieldKey::Absent, "a file is no field");
        assert_eq!(read_field(Some("application/json"), urlencoded, "request_id"), FieldKey::Absent);
        assert_eq!(read_field(None, urlencoded, "request_id"), FieldKey::Absent);
    }

    #[cfg(not(target_arch = "wasm32"))]
    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn fields() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
            let name = "[a-z_]{1,12}".prop_filter("not the key", |n| n != KEY_FIELD);
            proptest::collection::vec((name, proptest::collection::vec(any::<u8>(), 0..40)), 0..6)
        }

        fn urlencoded(fields: &[(String, Vec<u8>)]) -> Vec<u8> {
            let mut out = form_urlencoded::Serializer::new(String::new());
            for (name, value) in fields {
                out.append_pair(name, &String::from_utf8_lossy(value));
            }
            out.finish().into_bytes()
        }

        fn multipart(fields: &[(String, Vec<u8>)]) -> Vec<u8> {
            let mut out = Vec::new();
            for (name, value) in fields {
                out.extend_from_slice(
                    format!("--B0und\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes(),
                );
                // Content never holds the delimiter: a CR becomes a space.
                out.extend(value.iter().map(|&b| if b == b'\r' { b' ' } else { b }));
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"--B0und--\r\n");
            out
        }

        proptest! {
            #[test]
            fn prop_taking_the_field_leaves_every_other_byte(
                fields in fields(),
                at in 0usize..7,
                key in "[0-9a-f-]{1,36}",
            ) {
                let at = at.min(fields.len());
                let mut with_key = fields.clone();
                with_key.insert(at, (KEY_FIELD.to_owned(), key.clone().into_bytes()));
                // urlencoded: exactly the same form encoded without it.
                let (got, rest) = take(URLENCODED, &urlencoded(&with_key));
                prop_assert_eq!(got, one(&key));
                prop_assert_eq!(rest, urlencoded(&fields));
                // multipart: the same, but for the CRLF a removed first
                // part leaves before the next delimiter.
                let (got, rest) = take(MULTIPART, &multipart(&with_key));
                prop_assert_eq!(got, one(&key));
                let expected = multipart(&fields);
                let rest = if at == 0 { rest.strip_prefix(b"\r\n").map(<[u8]>::to_vec).unwrap_or(rest) } else { rest };
                prop_assert_eq!(rest, expected);
            }
        }
    }
}
