//! The request fingerprint (SPEC §2): what makes two requests "the same".

use crate::core::request::digest::{PartHasher, hex};
use crate::core::request::multipart::{self, FormPart};
use crate::core::text::json_pointer::JsonPointer;
use crate::core::text::json_read::canonical_without;

/// SHA-256 over the length-prefixed method, path and query, media type and
/// body of a request. The same key with another fingerprint is a
/// `key-reused` error (422).
///
/// A `multipart/form-data` body counts by its parts, so the same form sent
/// again with a new boundary, as every browser and HTTP client does, is the
/// same request:
///
/// ```
/// use oncekey::core::Fingerprint;
/// let a = Fingerprint::of("POST", "/api/orders", Some("application/json; charset=utf-8"), b"{}");
/// let b = Fingerprint::of("POST", "/api/orders", Some("Application/JSON"), b"{}");
/// assert_eq!(a, b);
/// assert_ne!(a, Fingerprint::of("POST", "/api/orders?x=1", Some("application/json"), b"{}"));
///
/// let form = |boundary: &str| {
///     let body = format!("--{boundary}\r\nContent-Disposition: form-data; name=\"item\"\r\n\r\ntea\r\n--{boundary}--\r\n");
///     Fingerprint::of("POST", "/api/orders", Some(&format!("multipart/form-data; boundary={boundary}")), body.as_bytes())
/// };
/// assert_eq!(form("----WebKitFormBoundaryhB1YZ2wjMqcHIjTf"), form("----formdata-undici-052474813917"));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Fingerprint(pub [u8; 32]);

/// The domain tags: a form's fingerprint hashes another stream than any
/// body's bytes, so the two can never be equal.
const BYTES: &str = "oncekey/fingerprint/1";
const FORM: &str = "oncekey/fingerprint/form/1";
const JSON: &str = "oncekey/fingerprint/json/1";

impl Fingerprint {
    /// Fingerprints a request. `path_and_query` is the request target as
    /// sent (`/api/orders?item=x`); `content_type` is the raw header, of
    /// which only the media type counts (parameters such as `charset` and
    /// letter case do not). Headers such as `Demo-Fault` are not part of it.
    ///
    /// The body counts as its bytes, except a `multipart/form-data` body
    /// with a boundary: then each part counts, in order, by its name,
    /// filename (and `filename*`), media type (`text/plain` when it has
    /// none), `Content-Transfer-Encoding` and content — not the boundary,
    /// the preamble or epilogue, header letter case, order or spacing. A
    /// body that does not read as such a form counts as its bytes.
    pub fn of(method: &str, path_and_query: &str, content_type: Option<&str>, body: &[u8]) -> Self {
        let content_type = content_type.unwrap_or("");
        let media_type = media_type(content_type);
        let form =
            multipart::parts(content_type, body).and_then(|parts| form(method, path_and_query, &media_type, parts));
        form.unwrap_or_else(|| {
            let mut hasher = PartHasher::new(BYTES);
            hasher
                .part(method.to_ascii_uppercase().as_bytes())
                .part(path_and_query.as_bytes())
                .part(media_type.as_bytes())
                .part(body);
            Self(hasher.finish())
        })
    }

    /// Fingerprints a request on a route whose fingerprint selection leaves
    /// the members `ignore` points at out (SPEC §13: a client timestamp
    /// that changes on every retry). With nothing to ignore this is
    /// [`Fingerprint::of`], so a route without a selection fingerprints as
    /// every request always has.
    ///
    /// A body that is JSON (UTF-8, one JSON value, whatever its
    /// `Content-Type` says) counts by its meaning with those members left
    /// out: its canonical form, members sorted by name, no white space,
    /// strings escaped one way, numbers as written (`1` and `1.0` differ).
    /// Method, path and query, and media type count as in
    /// [`Fingerprint::of`]. JSON is read strictly (SPEC §13): an unknown
    /// escape, a lone surrogate or a member given twice, anywhere in the
    /// body, makes it not JSON, so two different bodies never count as one.
    ///
    /// A body that is not JSON counts as [`Fingerprint::of`] counts it
    /// (its bytes, or a form's parts), not as a 400: it has no member to
    /// leave out, so the strict fingerprint is the only one that still
    /// tells two requests apart, and whether such a body is acceptable is
    /// the origin's to answer, not the layer's. It can never equal a JSON
    /// body's fingerprint (each is hashed under its own domain tag), so a
    /// retry that changes encoding is `key-reused`.
    ///
    /// ```
    /// use oncekey::core::{Fingerprint, JsonPointer};
    /// let ts: Vec<JsonPointer> = vec!["/ts".parse().unwrap()];
    /// let of = |body: &[u8]| Fingerprint::of_selected("POST", "/v1/payments", Some("application/json"), body, &ts);
    /// assert_eq!(of(br#"{"amount":1,"ts":5}"#), of(br#"{"ts":9, "amount":1}"#));
    /// assert_ne!(of(br#"{"amount":1,"ts":5}"#), of(br#"{"amount":2,"ts":5}"#));
    /// assert_eq!(
    ///     Fingerprint::of_selected("POST", "/v1/payments", None, b"{}", &[]),
    ///     Fingerprint::of("POST", "/v1/payments", None, b"{}"),
    /// );
    /// ```
    pub fn of_selected(
        method: &str,
        path_and_query: &str,
        content_type: Option<&str>,
        body: &[u8],
        ignore: &[JsonPointer],
    ) -> Self {
        let ignore: Vec<&JsonPointer> = ignore.iter().collect();
        let meaning = match ignore.is_empty() {
            true => None,
            false => std::str::from_utf8(body).ok().and_then(|text| canonical_without(text, &ignore)),
        };
        let Some(meaning) = meaning else { return Self::of(method, path_and_query, content_type, body) };
        let mut hasher = PartHasher::new(JSON);
        hasher
            .part(method.to_ascii_uppercase().as_bytes())
            .part(path_and_query.as_bytes())
            .part(media_type(content_type.unwrap_or("")).as_bytes())
            .part(meaning.as_bytes());
        Self(hasher.finish())
    }

    /// Lower-case hex, for logs.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }
}

/// The fingerprint of a well-formed form, or `None` if a part is malformed.
fn form<'a>(
    method: &str,
    path_and_query: &str,
    media_type: &str,
    parts: impl Iterator<Item = Result<FormPart<'a>, multipart::Malformed>>,
) -> Option<Fingerprint> {
    let mut hasher = PartHasher::new(FORM);
    hasher.part(method.to_ascii_uppercase().as_bytes()).part(path_and_query.as_bytes()).part(media_type.as_bytes());
    for part in parts {
        let part = part.ok()?;
        hasher.part(part.name);
        optional(&mut hasher, part.filename);
        optional(&mut hasher, part.filename_ext);
        hasher.part(&part.media_type.unwrap_or(b"text/plain").to_ascii_lowercase());
        optional(&mut hasher, part.transfer_encoding.map(<[u8]>::to_ascii_lowercase).as_deref());
        hasher.part(part.content);
    }
    Some(Fingerprint(hasher.finish()))
}

/// An absent value and an empty one differ (`filename=""` is a file input
/// left empty; no filename is a text field).
fn optional(hasher: &mut PartHasher, value: Option<&[u8]>) {
    match value {
        None => hasher.part(&[0]),
        Some(value) => hasher.part(&[1]).part(value),
    };
}

/// `Text/Plain; charset=UTF-8` → `text/plain`.
pub(crate) fn media_type(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn fp(method: &str, target: &str, ct: Option<&str>, body: &[u8]) -> Fingerprint {
        Fingerprint::of(method, target, ct, body)
    }

    #[test]
    fn each_part_counts() {
        let base = fp("POST", "/a?x=1", Some("application/json"), b"{}");
        assert_eq!(base, fp("post", "/a?x=1", Some("application/json"), b"{}"));
        assert_ne!(base, fp("PATCH", "/a?x=1", Some("application/json"), b"{}"));
        assert_ne!(base, fp("POST", "/b?x=1", Some("application/json"), b"{}"));
        assert_ne!(base, fp("POST", "/a?x=2", Some("application/json"), b"{}"));
        assert_ne!(base, fp("POST", "/a?x=1", Some("text/plain"), b"{}"));
        assert_ne!(base, fp("POST", "/a?x=1", None, b"{}"));
        assert_ne!(base, fp("POST", "/a?x=1", Some("application/json"), b"{ }"));
    }

    #[test]
    fn media_type_ignores_parameters_and_case() {
        assert_eq!(
            fp("POST", "/", Some("application/json"), b""),
            fp("POST", "/", Some(" Application/JSON ; charset=utf-8"), b"")
        );
        assert_eq!(fp("POST", "/", None, b""), fp("POST", "/", Some(""), b""));
    }

    #[test]
    fn parts_are_length_prefixed() {
        assert_ne!(fp("POST", "/ab", None, b"c"), fp("POST", "/a", None, b"bc"));
    }

    #[test]
    fn known_value_is_stable() {
        // Records outlive deployments: the fingerprint must not drift. This
        // value was checked with Python's hashlib over the same parts.
        let got = fp("POST", "/api/orders", Some("application/json"), b"{}").to_hex();
        assert_eq!(got, "6441ec292d740c79b0fdb28db58e53d0c1e6982f061cddd16c49f3c8467acc1a");
    }

    #[test]
    fn a_selection_reads_json_by_meaning_and_leaves_out_what_it_ignores() {
        let ignore: Vec<JsonPointer> = ["/ts", "/meta/sent_at"].iter().map(|p| p.parse().unwrap()).collect();
        let of = |ct: Option<&str>, body: &[u8]| Fingerprint::of_selected("POST", "/v1/payments", ct, body, &ignore);
        let json = Some("application/json");
        let base = of(json, br#"{"amount":1,"currency":"eur","ts":5,"meta":{"sent_at":"10:00"}}"#);
        // (body, same request)
        let rows: [(&[u8], bool); 9] = [
            (br#"{"ts":9, "currency":"eur", "amount":1, "meta":{"sent_at":"10:01"}}"#, true),
            (b"{\n  \"amount\": 1,\n  \"currency\": \"eur\",\n  \"meta\": {}\n}", true),
            (br#"{"amount":1,"currency":"eur"}"#, false),
            (br#"{"amount":2,"currency":"eur","ts":5,"meta":{"sent_at":"10:00"}}"#, false),
            (br#"{"amount":1.0,"currency":"eur","ts":5,"meta":{"sent_at":"10:00"}}"#, false),
            (br#"{"amount":1,"currency":"eur","ts":5,"meta":{"sent_at":"10:00","by":"x"}}"#, false),
            (br#"{"amount":1,"currency":"eur","ts":5,"meta":{"sent_at":"10:00"}"#, false),
            (b"amount=1&currency=eur", false),
            (b"", false),
        ];
        for (body, same) in rows {
            assert_eq!(of(json, body) == base, same, "{}", String::from_utf8_lossy(body));
        }
        // `{"amount":1,"currency":"eur"}` is the same with and without its
        // members pointed at; `{"amount":1,"currency":"eur","meta":{}}` is
        // not, as `meta` is still there.
        assert_eq!(
            of(json, br#"{"amount":1,"currency":"eur","ts":[1,2]}"#),
            of(json, br#"{"currency":"eur","amount":1}"#)
        );
        // The media type still counts; JSON is recognised by its content.
        assert_ne!(of(Some("text/plain"), br#"{"amount":1,"ts":5}"#), of(json, br#"{"amount":1,"ts":5}"#));
        assert_eq!(
            of(Some("text/plain"), br#"{"amount":1,"ts":5}"#),
            of(Some("text/plain"), br#"{"ts":6,"amount":1}"#)
        );
        // Not JSON: the strict fingerprint, never the same as a JSON one.
        assert_eq!(of(json, b"not json"), fp("POST", "/v1/payments", json, b"not json"));
        assert_ne!(of(json, b"{}"), fp("POST", "/v1/payments", json, b"{}"));
        // Nothing ignored: exactly `of`.
        let none = Fingerprint::of_selected("POST", "/v1/payments", json, br#"{"b":1, "a":2}"#, &[]);
        assert_eq!(none, fp("POST", "/v1/payments", json, br#"{"b":1, "a":2}"#));
    }

    #[test]
    fn a_selection_never_reads_two_bodies_as_one() {
        // SPEC §13, "Bodies read strictly": each pair once read as one
        // meaning (a lone surrogate as U+FFFD, an unknown escape as the
        // character, the last of a repeated member).
        let ignore: Vec<JsonPointer> = vec!["/ts".parse().unwrap()];
        let json = Some("application/json");
        let of = |body: &[u8]| Fingerprint::of_selected("POST", "/v1/payments", json, body, &ignore);
        // (body, another body)
        let pairs: [(&[u8], &[u8]); 5] = [
            (br#"{"to":"\uD800\u0041"}"#, br#"{"to":"\uD800\u0042"}"#),
            (br#"{"to":"\uD800\u0041"}"#, br#"{"to":"\uFFFD\u0041"}"#),
            (br#"{"to":"a\qb"}"#, br#"{"to":"aqb"}"#),
            (br#"{"amount":100,"amount":1}"#, br#"{"amount":1}"#),
            (br#"{"amount":100,"amount":1,"ts":5}"#, br#"{"amount":1,"ts":6}"#),
        ];
        for (body, other) in pairs {
            let (a, b) = (String::from_utf8_lossy(body), String::from_utf8_lossy(other));
            assert_ne!(of(body), of(other), "{a} and {b}");
            // What is not plain JSON counts as its bytes.
            let bytes = |body: &[u8]| fp("POST", "/v1/payments", json, body);
            assert_eq!(of(body), bytes(body), "{a}");
        }
        // A member left out must still be plain JSON, and named once.
        assert_ne!(of(br#"{"amount":1,"ts":"\q"}"#), of(br#"{"amount":1,"ts":"q"}"#));
        assert_ne!(of(br#"{"amount":1,"ts":1,"ts":2}"#), of(br#"{"amount":1,"ts":2}"#));
    }

    #[test]
    fn a_selection_s_known_value_is_stable() {
        // Checked with Python's hashlib over the same parts.
        let ignore: Vec<JsonPointer> = vec!["/ts".parse().unwrap()];
        let body = br#"{"currency": "eur", "ts": 1718000000, "amount": 1}"#;
        let got = Fingerprint::of_selected("post", "/v1/payments", Some("application/json"), body, &ignore).to_hex();
        assert_eq!(got, "356b026a42c12cab0a6e1f0c76bb46b6e6f81cbe7a7947205bdabb5d4e4d9a06");
    }

    /// The same form — a text field, a UTF-8 text field and a small PDF
    /// whose bytes hold a CRLF and dashes — as real clients encode it.
    /// `(client, content-type, body)`.
    const SAME_FORM: &[(&str, &str, &[u8])] = &[
        (
            // Captured: `new Response(formData)` in Node 20.20 (undici 6.24.1),
            // which `fetch` sends.
            "node 20 undici FormData",
            "multipart/form-data; boundary=----formdata-undici-049126979380",
            b"------formdata-undici-049126979380\r\n\
            Content-Disposition: form-data; name=\"title\"\r\n\r\n\
            Q3 report\r\n\
            ------formdata-undici-049126979380\r\n\
            Content-Disposition: form-data; name=\"note\"\r\n\r\n\
            d\xc3\xa9j\xc3\xa0 vu\r\n\
            ------formdata-undici-049126979380\r\n\
            Content-Disposition: form-data; name=\"file\"; filename=\"scan.pdf\"\r\n\
            Content-Type: application/pdf\r\n\r\n\
            %PDF-\r\n\x00\xff--\r\n\
            ------formdata-undici-049126979380--\r\n",
        ),
        (
            // Captured: a `<form enctype="multipart/form-data">` submitted by
            // Chromium 156 with a file chosen in its file input.
            "chromium form submit",
            "multipart/form-data; boundary=----WebKitFormBoundaryjQefmA0QuCUXH10B",
            b"------WebKitFormBoundaryjQefmA0QuCUXH10B\r\n\
            Content-Disposition: form-data; name=\"title\"\r\n\r\n\
            Q3 report\r\n\
            ------WebKitFormBoundaryjQefmA0QuCUXH10B\r\n\
            Content-Disposition: form-data; name=\"note\"\r\n\r\n\
            d\xc3\xa9j\xc3\xa0 vu\r\n\
            ------WebKitFormBoundaryjQefmA0QuCUXH10B\r\n\
            Content-Disposition: form-data; name=\"file\"; filename=\"scan.pdf\"\r\n\
            Content-Type: application/pdf\r\n\r\n\
            %PDF-\r\n\x00\xff--\r\n\
            ------WebKitFormBoundaryjQefmA0QuCUXH10B--\r\n",
        ),
        (
            // Captured: `fetch(url, { body: formData })` in Chromium 156.
            "chromium fetch(FormData)",
            "multipart/form-data; boundary=----WebKitFormBoundarysL4zSuxHinVYm9Y2",
            b"------WebKitFormBoundarysL4zSuxHinVYm9Y2\r\n\
            Content-Disposition: form-data; name=\"title\"\r\n\r\n\
            Q3 report\r\n\
            ------WebKitFormBoundarysL4zSuxHinVYm9Y2\r\n\
            Content-Disposition: form-data; name=\"note\"\r\n\r\n\
            d\xc3\xa9j\xc3\xa0 vu\r\n\
            ------WebKitFormBoundarysL4zSuxHinVYm9Y2\r\n\
            Content-Disposition: form-data; name=\"file\"; filename=\"scan.pdf\"\r\n\
            Content-Type: application/pdf\r\n\r\n\
            %PDF-\r\n\x00\xff--\r\n\
            ------WebKitFormBoundarysL4zSuxHinVYm9Y2--\r\n",
        ),
        (
            // The npm `form-data` package (axios in Node when given one), as
            // its lib/form_data.js writes it: 26 dashes and 24 hex digits,
            // the type looked up from the filename.
            "npm form-data",
            "multipart/form-data; boundary=--------------------------7e2f9a0c41d85b36f0a2c9e1",
            b"----------------------------7e2f9a0c41d85b36f0a2c9e1\r\n\
            Content-Disposition: form-data; name=\"title\"\r\n\r\n\
            Q3 report\r\n\
            ----------------------------7e2f9a0c41d85b36f0a2c9e1\r\n\
            Content-Disposition: form-data; name=\"note\"\r\n\r\n\
            d\xc3\xa9j\xc3\xa0 vu\r\n\
            ----------------------------7e2f9a0c41d85b36f0a2c9e1\r\n\
            Content-Disposition: form-data; name=\"file\"; filename=\"scan.pdf\"\r\n\
            Content-Type: application/pdf\r\n\r\n\
            %PDF-\r\n\x00\xff--\r\n\
            ----------------------------7e2f9a0c41d85b36f0a2c9e1--\r\n",
        ),
        (
            // axios 1.x in Node given a spec FormData, as its
            // helpers/formDataToStream.js writes it.
            "axios formDataToStream",
            "multipart/form-data; boundary=form-data-boundary-mwq0b9_kx3-zr1p8d2hj7v4e6s",
            b"--form-data-boundary-mwq0b9_kx3-zr1p8d2hj7v4e6s\r\n\
            Content-Disposition: form-data; name=\"title\"\r\n\r\n\
            Q3 report\r\n\
            --form-data-boundary-mwq0b9_kx3-zr1p8d2hj7v4e6s\r\n\
            Content-Disposition: form-data; name=\"note\"\r\n\r\n\
            d\xc3\xa9j\xc3\xa0 vu\r\n\
            --form-data-boundary-mwq0b9_kx3-zr1p8d2hj7v4e6s\r\n\
            Content-Disposition: form-data; name=\"file\"; filename=\"scan.pdf\"\r\n\
            Content-Type: application/pdf\r\n\r\n\
            %PDF-\r\n\x00\xff--\r\n\
            --form-data-boundary-mwq0b9_kx3-zr1p8d2hj7v4e6s--\r\n",
        ),
        (
            // Written by hand the way a careless client might: lower-case
            // names, other order and spacing, a preamble, padding, a quoted
            // boundary, `text/plain` spelled out, an epilogue.
            "by hand",
            "Multipart/Form-Data; charset=utf-8; boundary=\"x y'z\"",
            b"preamble\r\n\
            --x y'z \r\n\
            content-disposition: form-data;name=title\r\n\r\n\
            Q3 report\r\n\
            --x y'z\r\n\
            CONTENT-TYPE: Text/Plain; charset=utf-8\r\n\
            Content-Disposition:  Form-Data ; NAME=\"note\" ;\r\n\r\n\
            d\xc3\xa9j\xc3\xa0 vu\r\n\
            --x y'z\t\r\n\
            X-Extra: ignored\r\n\
            content-type: application/PDF\r\n\
            content-disposition: form-data; filename=\"scan.pdf\"; name=\"file\"\r\n\r\n\
            %PDF-\r\n\x00\xff--\r\n\
            --x y'z--\r\n\
            epilogue",
        ),
    ];

    #[test]
    fn the_same_form_from_every_client_is_one_request() {
        let want = fp("POST", "/v1/uploads", Some(SAME_FORM[0].1), SAME_FORM[0].2);
        for (client, content_type, body) in SAME_FORM {
            assert_eq!(fp("POST", "/v1/uploads", Some(content_type), body), want, "{client}");
            assert!(multipart::parts(content_type, body).unwrap().all(|p| p.is_ok()), "{client} reads as a form");
        }
        // Records outlive deployments: the form fingerprint must not drift
        // either. Checked with Python's hashlib over the same parts:
        // "oncekey/fingerprint/form/1", method, target, media type, then per
        // part name, filename (0, or 1 and the value), filename* (same),
        // part media type, transfer encoding (same), content.
        assert_eq!(want.to_hex(), "bffee5fee9376aab34623ded67f6de182b03911be489521663efb887ed4995da");
    }

    /// A part as `(disposition parameters, other part headers, content)`.
    type Part<'a> = (&'a str, &'a str, &'a [u8]);

    fn form(parts: &[Part<'_>]) -> Fingerprint {
        let mut body = Vec::new();
        for (params, headers, content) in parts {
            body.extend_from_slice(
                format!("--b\r\nContent-Disposition: form-data; {params}\r\n{headers}\r\n").as_bytes(),
            );
            body.extend_from_slice(content);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(b"--b--\r\n");
        fp("POST", "/v1/uploads", Some("multipart/form-data; boundary=b"), &body)
    }

    #[test]
    fn any_change_to_a_field_is_another_request() {
        const PDF: &str = "Content-Type: application/pdf\r\n";
        let title = ("name=\"title\"", "", &b"Q3"[..]);
        let file = ("name=\"file\"; filename=\"a.pdf\"", PDF, &b"%PDF"[..]);
        let want = form(&[title, file]);
        assert_eq!(form(&[title, file]), want);
        let changed: &[(&str, &[Part<'_>])] = &[
            ("a field's name", &[("name=\"Title\"", "", b"Q3"), file]),
            ("a field's value", &[("name=\"title\"", "", b"Q4"), file]),
            ("a value's trailing CRLF", &[("name=\"title\"", "", b"Q3\r\n"), file]),
            ("a text field made a file", &[("name=\"title\"; filename=\"\"", "", b"Q3"), file]),
            ("a filename", &[title, ("name=\"file\"; filename=\"b.pdf\"", PDF, b"%PDF")]),
            ("an empty filename", &[title, ("name=\"file\"; filename=\"\"", PDF, b"%PDF")]),
            (
                "a filename* added",
                &[title, ("name=\"file\"; filename=\"a.pdf\"; filename*=UTF-8''a.pdf", PDF, b"%PDF")],
            ),
            ("a part's media type", &[title, (file.0, "Content-Type: application/x-pdf\r\n", b"%PDF")]),
            (
                "a transfer encoding",
                &[title, (file.0, "Content-Type: application/pdf\r\nContent-Transfer-Encoding: 8bit\r\n", b"%PDF")],
            ),
            ("a file byte", &[title, (file.0, PDF, b"%PDG")]),
            ("the order of parts", &[file, title]),
            ("a part dropped", &[title]),
            ("a part repeated", &[title, file, file]),
            ("an empty part added", &[title, file, ("name=\"\"", "", b"")]),
            ("a name moved into the content", &[("name=\"titleQ3\"", "", b""), file]),
        ];
        for (what, parts) in changed {
            assert_ne!(form(parts), want, "{what}");
        }
        // A missing Content-Type is text/plain; its letter case and
        // parameters do not count, nor do other headers.
        let plain = form(&[("name=\"title\"", "", b"Q3")]);
        assert_eq!(plain, form(&[("name=\"title\"", "Content-Type: TEXT/plain; charset=utf-8\r\nX-Y: z\r\n", b"Q3")]));
        assert_ne!(plain, form(&[("name=\"title\"", "Content-Type: text/csv\r\n", b"Q3")]));
        // Method and target still count.
        let body = SAME_FORM[0].2;
        let content_type = Some(SAME_FORM[0].1);
        assert_ne!(fp("POST", "/v1/uploads", content_type, body), fp("PATCH", "/v1/uploads", content_type, body));
        assert_ne!(fp("POST", "/v1/uploads", content_type, body), fp("POST", "/v1/uploads?x=1", content_type, body));
    }

    /// The bytes formula, written out apart from [`Fingerprint::of`].
    fn bytes_fingerprint(method: &str, target: &str, media_type: &str, body: &[u8]) -> Fingerprint {
        let mut hasher = PartHasher::new("oncekey/fingerprint/1");
        hasher.part(method.as_bytes()).part(target.as_bytes()).part(media_type.as_bytes()).part(body);
        Fingerprint(hasher.finish())
    }

    #[test]
    fn what_does_not_read_as_a_form_counts_as_its_bytes() {
        let (_, content_type, body) = SAME_FORM[0];
        let truncated = &body[..body.len() - 4];
        let cases: &[(&str, &str, &[u8])] = &[
            ("no boundary parameter", "multipart/form-data", body),
            ("another boundary", "multipart/form-data; boundary=----formdata-undici-0", body),
            ("no close delimiter", content_type, truncated),
            ("garbage", content_type, b"\x00garbage\xff"),
            ("empty", content_type, b""),
            ("not a form", "multipart/mixed; boundary=----formdata-undici-049126979380", body),
        ];
        for (what, content_type, body) in cases {
            let got = fp("POST", "/v1/uploads", Some(content_type), body);
            assert_eq!(got, bytes_fingerprint("POST", "/v1/uploads", &media_type(content_type), body), "{what}");
            assert_eq!(got, fp("POST", "/v1/uploads", Some(content_type), body), "{what}: deterministic");
        }
        // A resend of a malformed body with another boundary is another request.
        let other = String::from_utf8_lossy(truncated).replace("049126979380", "149126979380");
        assert_ne!(
            fp("POST", "/v1/uploads", Some(content_type), truncated),
            fp("POST", "/v1/uploads", Some(&content_type.replace("0491", "1491")), other.as_bytes()),
        );
    }

    #[test]
    fn a_form_never_equals_its_bytes() {
        for (client, content_type, body) in SAME_FORM {
            let bytes = bytes_fingerprint("POST", "/v1/uploads", "multipart/form-data", body);
            assert_ne!(fp("POST", "/v1/uploads", Some(content_type), body), bytes, "{client}");
        }
        // The same parts hashed under the bytes tag are not the form's
        // fingerprint either: the tags keep the two streams apart.
        let empty_form = fp("POST", "/", Some("multipart/form-data; boundary=b"), b"--b--");
        assert_ne!(empty_form, bytes_fingerprint("POST", "/", "multipart/form-data", b""));
        let mut hasher = PartHasher::new("oncekey/fingerprint/form/1");
        hasher.part(b"POST").part(b"/").part(b"multipart/form-data");
        assert_eq!(empty_form, Fingerprint(hasher.finish()));
    }

    #[cfg(not(target_arch = "wasm32"))]
    mod form_properties {
        use super::*;
        use proptest::prelude::*;

        /// A field as an application sees it: `(name, filename, media type, content)`.
        type Field = (String, Option<String>, Option<String>, Vec<u8>);

        fn field() -> impl Strategy<Value = Field> {
            // Names and filenames as browsers send them: `"`, CR and LF are
            // %-escaped, so never appear; a backslash may, but not last.
            let text = "[a-zA-Z0-9 _.%\u{e9}-]{0,6}|[a-z]{1,3}\\\\[a-z]{1,3}";
            (
                text,
                proptest::option::of(text),
                proptest::option::of("[a-z]{1,5}/[a-z0-9.+-]{1,6}"),
                proptest::collection::vec(prop_oneof![any::<u8>(), Just(b'\r'), Just(b'\n'), Just(b'-')], 0..40),
            )
        }

        fn boundary() -> impl Strategy<Value = String> {
            "[0-9A-Za-z'()+_,./:=?-]{1,69}[0-9A-Za-z-]"
        }

        /// Two encodings that differ in every way that does not count.
        fn encode(fields: &[Field], boundary: &str, other_style: bool) -> (String, Vec<u8>) {
            let quote =
                |v: &str| match !v.is_empty() && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) {
                    true if other_style => v.to_owned(),
                    _ => format!("\"{v}\""),
                };
            let mut body = Vec::new();
            if other_style {
                body.extend_from_slice(b"preamble --");
            }
            for (name, filename, media_type, content) in fields {
                let mut head = String::new();
                let filename = filename.as_ref().map(|f| format!("filename={}", quote(f)));
                if other_style {
                    head += &format!("\r\n--{boundary} \t\r\nx-other: 1\r\n");
                    let media_type = media_type.as_deref().unwrap_or("text/plain").to_ascii_uppercase();
                    head += &format!("content-type: {media_type} ; charset=\"utf-8\"\r\n");
                    let filename = filename.map(|f| format!("{f} ;")).unwrap_or_default();
                    head += &format!("CONTENT-DISPOSITION:form-data;{filename}NAME={};\r\n\r\n", quote(name));
                } else {
                    if !body.is_empty() {
                        head += "\r\n";
                    }
                    head += &format!("--{boundary}\r\nContent-Disposition: form-data; name={}", quote(name));
                    if let Some(filename) = filename {
                        head += &format!("; {filename}");
                    }
                    head += "\r\n";
                    if let Some(media_type) = media_type {
                        head += &format!("Content-Type: {media_type}\r\n");
                    }
                    head += "\r\n";
                }
                body.extend_from_slice(head.as_bytes());
                body.extend_from_slice(content);
            }
            let close = match (fields.is_empty(), other_style) {
                (true, false) => format!("--{boundary}--\r\n"),
                _ => format!("\r\n--{boundary}--{}", if other_style { "\r\nepilogue" } else { "\r\n" }),
            };
            body.extend_from_slice(close.as_bytes());
            let content_type = match other_style {
                true => format!("Multipart/Form-Data; charset=utf-8; boundary=\"{boundary}\""),
                false if boundary.bytes().all(|b| b.is_ascii_alphanumeric() || b"'+_-.".contains(&b)) => {
                    format!("multipart/form-data; boundary={boundary}")
                }
                false => format!("multipart/form-data; boundary=\"{boundary}\""),
            };
            (content_type, body)
        }

        fn of(fields: &[Field], boundary: &str, other_style: bool) -> Fingerprint {
            let (content_type, body) = encode(fields, boundary, other_style);
            fp("POST", "/v1/uploads", Some(&content_type), &body)
        }

        /// What counts: media types in lower case, none as text/plain.
        fn meaning(fields: &[Field]) -> Vec<Field> {
            let media = |m: &Option<String>| Some(m.as_deref().unwrap_or("text/plain").to_ascii_lowercase());
            fields.iter().map(|(n, f, m, c)| (n.clone(), f.clone(), media(m), c.clone())).collect()
        }

        /// No content holds a delimiter, not even at its start right after
        /// the headers' empty line: a client picks its boundary that way.
        fn framable(fields: &[Field], boundaries: &[&str]) -> bool {
            boundaries.iter().all(|b| {
                let delimiter = format!("\r\n--{b}");
                fields.iter().all(|(.., c)| {
                    let line = [b"\r\n".as_slice(), c].concat();
                    !line.windows(delimiter.len()).any(|w| w == delimiter.as_bytes())
                })
            })
        }

        proptest! {
            #[test]
            fn prop_a_form_resent_with_another_boundary_is_the_same_request(
                fields in proptest::collection::vec(field(), 0..5),
                (b1, b2) in (boundary(), boundary()),
                (s1, s2) in (any::<bool>(), any::<bool>()),
            ) {
                prop_assume!(framable(&fields, &[&b1, &b2]));
                let (content_type, body) = encode(&fields, &b1, s1);
                prop_assert!(multipart::parts(&content_type, &body).unwrap().all(|p| p.is_ok()), "reads as a form");
                prop_assert_eq!(of(&fields, &b1, s1), of(&fields, &b2, s2));
                prop_assert_ne!(of(&fields, &b1, s1), bytes_fingerprint("POST", "/v1/uploads", "multipart/form-data", &body));
            }

            #[test]
            fn prop_forms_are_the_same_request_only_when_their_fields_are(
                a in proptest::collection::vec(field(), 0..4),
                edit in (0usize..8, any::<prop::sample::Index>(), any::<u8>(), "[a-z]{0,2}"),
                (b1, b2) in (boundary(), boundary()),
                (s1, s2) in (any::<bool>(), any::<bool>()),
            ) {
                let (kind, at, byte, text) = edit;
                let mut b = a.clone();
                if !b.is_empty() {
                    let i = at.index(b.len());
                    let j = (i + 1) % b.len();
                    match kind {
                        0 => b[i].0.push_str(&text),
                        1 => b[i].1 = match &b[i].1 { Some(_) => None, None => Some(text) },
                        2 => b[i].1.get_or_insert_with(String::new).push_str(&text),
                        3 => b[i].2 = Some(format!("x/{text}")),
                        4 => b[i].3.push(byte),
                        5 => { let n = b[i].3.len(); if n > 0 { b[i].3[at.index(n)] ^= byte | 1; } }
                        6 => b.swap(i, j),
                        _ => { b.remove(i); }
                    }
                } else {
                    b.push((text, None, None, vec![byte]));
                }
                prop_assume!(framable(&a, &[&b1]) && framable(&b, &[&b2]));
                prop_assert_eq!(of(&a, &b1, s1) == of(&b, &b2, s2), meaning(&a) == meaning(&b));
            }

            #[test]
            fn prop_any_body_has_one_fingerprint(
                body in proptest::collection::vec(any::<u8>(), 0..300),
                boundary in "[ -~]{0,8}",
            ) {
                let content_type = format!("multipart/form-data; boundary={boundary}");
                let got = fp("POST", "/", Some(&content_type), &body);
                prop_assert_eq!(got, fp("POST", "/", Some(&content_type), &body));
            }
        }
    }
}
