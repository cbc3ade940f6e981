//! `Fingerprint::of` on `multipart/form-data` bodies. The first byte picks
//! a mode:
//! - even: the rest is a boundary line and a body, any bytes: a fingerprint,
//!   never a panic, the same one every time;
//! - odd: the rest is a list of fields, encoded twice as two different
//!   clients would (boundary, header case, order, spacing, preamble,
//!   epilogue): both encodings are one request, not the bytes of either, and
//!   one more content byte makes another request.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oncekey::core::Fingerprint;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else { return };
    if mode % 2 == 0 {
        any_body(data);
    } else {
        same_fields(mode, data);
    }
});

fn fingerprint(content_type: &str, body: &[u8]) -> Fingerprint {
    Fingerprint::of("POST", "/v1/uploads", Some(content_type), body)
}

fn any_body(data: &[u8]) {
    let (boundary, body) = match data.iter().position(|&b| b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let boundary = String::from_utf8_lossy(boundary);
    for content_type in
        [format!("multipart/form-data; boundary={boundary}"), format!("multipart/form-data; boundary=\"{boundary}\"")]
    {
        assert_eq!(fingerprint(&content_type, body), fingerprint(&content_type, body));
    }
}

/// A field as an application sees it.
struct Field<'a> {
    name: &'a [u8],
    filename: Option<&'a [u8]>,
    media_type: Option<&'static str>,
    content: Vec<u8>,
}

const MEDIA_TYPES: [&str; 3] = ["text/plain", "application/pdf", "image/png"];
const BOUNDARIES: [&str; 2] =
    ["----WebKitFormBoundaryhB1YZ2wjMqcHIjTf", "--------------------------7e2f9a0c41d85b36f0a2c9e1"];

/// Fields separated by 0xFE; in each, a flags byte, then `name=content`
/// or `name/filename=content`.
fn fields(data: &[u8]) -> Vec<Field<'_>> {
    data.split(|&b| b == 0xfe)
        .filter_map(|chunk| {
            let (&flags, rest) = chunk.split_first()?;
            let (head, content) = match rest.iter().position(|&b| b == b'=') {
                Some(at) => (&rest[..at], &rest[at + 1..]),
                None => (rest, &[][..]),
            };
            let (name, filename) = match head.iter().position(|&b| b == b'/') {
                Some(at) => (&head[..at], Some(&head[at + 1..])),
                None => (head, None),
            };
            let media_type = MEDIA_TYPES.get(usize::from(flags % 4)).copied();
            Some(Field { name, filename, media_type, content: content.to_vec() })
        })
        .collect()
}

/// A quoted-string as RFC-minded writers (Go's mime/multipart) escape it,
/// with CR and LF %-escaped as browsers do.
fn quoted(value: &[u8]) -> Vec<u8> {
    let mut out = vec![b'"'];
    for &b in value {
        match b {
            b'"' | b'\\' => out.extend_from_slice(&[b'\\', b]),
            b'\r' => out.extend_from_slice(b"%0D"),
            b'\n' => out.extend_from_slice(b"%0A"),
            _ => out.push(b),
        }
    }
    out.push(b'"');
    out
}

fn encode(fields: &[Field<'_>], boundary: &str, other_style: bool) -> (String, Vec<u8>) {
    let mut body = Vec::new();
    if other_style {
        body.extend_from_slice(b"a preamble\r\n");
    }
    for field in fields {
        let delimiter = match other_style {
            true => format!("\r\n--{boundary} \t\r\n"),
            false => format!("\r\n--{boundary}\r\n"),
        };
        body.extend_from_slice(delimiter.as_bytes());
        let mut disposition = b"form-data".to_vec();
        let name = [b"name=".as_slice(), &quoted(field.name)].concat();
        let filename = field.filename.map(|f| [b"filename=".as_slice(), &quoted(f)].concat());
        if other_style {
            body.extend_from_slice(b"x-other: 1\r\n");
            let media_type = field.media_type.unwrap_or("text/plain").to_ascii_uppercase();
            body.extend_from_slice(format!("content-type: {media_type}; charset=utf-8\r\n").as_bytes());
            for param in filename.iter().chain([&name]) {
                disposition.extend_from_slice(b" ;");
                disposition.extend_from_slice(param);
            }
            body.extend_from_slice(b"CONTENT-DISPOSITION:");
            body.extend_from_slice(&disposition);
            body.extend_from_slice(b"\r\n\r\n");
        } else {
            for param in [&name].into_iter().chain(&filename) {
                disposition.extend_from_slice(b"; ");
                disposition.extend_from_slice(param);
            }
            body.extend_from_slice(b"Content-Disposition: ");
            body.extend_from_slice(&disposition);
            body.extend_from_slice(b"\r\n");
            if let Some(media_type) = field.media_type {
                body.extend_from_slice(format!("Content-Type: {media_type}\r\n").as_bytes());
            }
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(&field.content);
    }
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    if other_style {
        body.extend_from_slice(b"an epilogue");
    }
    let content_type = match other_style {
        true => format!("Multipart/Form-Data; charset=utf-8; boundary=\"{boundary}\""),
        false => format!("multipart/form-data; boundary={boundary}"),
    };
    (content_type, body)
}

/// No content holds a delimiter, not even at its start right after the
/// headers' empty line: clients pick their boundary that way.
fn framable(fields: &[Field<'_>]) -> bool {
    BOUNDARIES.iter().all(|boundary| {
        let delimiter = format!("\r\n--{boundary}");
        fields.iter().all(|f| {
            let line = [b"\r\n".as_slice(), &f.content].concat();
            !line.windows(delimiter.len()).any(|w| w == delimiter.as_bytes())
        })
    })
}

fn same_fields(mode: u8, data: &[u8]) {
    let mut fields = fields(data);
    if !framable(&fields) {
        return;
    }
    let style = mode & 2 != 0;
    let (content_type, body) = encode(&fields, BOUNDARIES[0], style);
    let (other_type, other_body) = encode(&fields, BOUNDARIES[1], !style);
    let fp = fingerprint(&content_type, &body);
    assert_eq!(fp, fingerprint(&other_type, &other_body), "one form, two encodings");
    // A body read as its bytes: the same media type without a boundary.
    assert_ne!(fp, fingerprint("multipart/form-data", &body), "read as a form, not as bytes");

    let Some(last) = fields.last_mut() else { return };
    last.content.push(mode);
    if framable(&fields) {
        let (content_type, body) = encode(&fields, BOUNDARIES[0], style);
        assert_ne!(fp, fingerprint(&content_type, &body), "one more content byte");
    }
}
