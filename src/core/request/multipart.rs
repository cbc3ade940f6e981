//! `multipart/form-data` read as its parts (RFC 7578 over RFC 2046 §5.1),
//! so the fingerprint can see a form's fields rather than its framing
//! (SPEC §2).
//!
//! Zero-copy (every field is a slice of the body or the header), linear in
//! the body, never panics. Whatever is not a well-formed form with the
//! announced boundary is [`Malformed`], and the caller reads the body as
//! bytes instead.
//!
//! Names and filenames are kept as sent, escapes included: browsers and
//! undici write `"` as `%22` and a backslash bare, so decoding either would
//! let two different fields read as one. The backslash still escapes the
//! next byte when finding where a quoted value ends (RFC 9110 §5.6.4), as
//! Go's and other RFC-minded writers rely on.

/// One part of a form, as slices of the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FormPart<'a> {
    /// The `name` parameter of `Content-Disposition`, as sent.
    pub(crate) name: &'a [u8],
    /// The `filename` parameter, as sent; `None` for a plain field.
    pub(crate) filename: Option<&'a [u8]>,
    /// The `filename*` parameter (RFC 8187 `UTF-8''…`), as sent. RFC 7578
    /// forbids it, browsers never send it, some older clients do.
    pub(crate) filename_ext: Option<&'a [u8]>,
    /// The part's media type (`Content-Type` up to its parameters, trimmed,
    /// letter case as sent); `None` without the header, which means
    /// `text/plain` (RFC 7578 §4.4).
    pub(crate) media_type: Option<&'a [u8]>,
    /// `Content-Transfer-Encoding`, which RFC 7578 §4.7 deprecates but
    /// which would change what the content means.
    pub(crate) transfer_encoding: Option<&'a [u8]>,
    /// The part's bytes, without the CRLF that belongs to the next delimiter.
    pub(crate) content: &'a [u8],
    /// Where the part lies in the body with the delimiter before it, as
    /// `start..end` offsets: without these bytes the body is the same form
    /// less this part, every other byte as it was.
    pub(crate) span: (usize, usize),
}

/// The body is not a well-formed `multipart/form-data` with its boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed;

/// The parts of `body` if `content_type` is `multipart/form-data` with a
/// usable boundary (RFC 2046: 1–70 `bchars`, quoted or not); `None` if it
/// is not. The parts are read as the iterator advances: one that yields
/// `Err` stops there, and only a body that ends with the close delimiter
/// yields no error at all.
pub(crate) fn parts<'a>(content_type: &'a str, body: &'a [u8]) -> Option<Parts<'a>> {
    let content_type = content_type.as_bytes();
    let semicolon = content_type.iter().position(|&b| b == b';')?;
    if !trim(&content_type[..semicolon]).eq_ignore_ascii_case(b"multipart/form-data") {
        return None;
    }
    let mut boundary = None;
    params(&content_type[semicolon..], |name, value| {
        if !name.eq_ignore_ascii_case(b"boundary") {
            return Ok(());
        }
        match boundary.replace(value) {
            Some(_) => Err(Malformed),
            None => Ok(()),
        }
    })
    .ok()?;
    // bchars hold no CR, `"` or `\`: the delimiter search below stays linear,
    // and a quoted boundary's content is the boundary itself.
    let boundary = boundary
        .filter(|b| (1..=70).contains(&b.len()) && b.iter().all(|&c| is_bchar(c)) && b.last() != Some(&b' '))?;
    Some(Parts { body, boundary, next: Next::Start, delimiter: 0 })
}

/// The parts of a form, in order (see [`parts`]).
#[derive(Debug, Clone)]
pub(crate) struct Parts<'a> {
    body: &'a [u8],
    boundary: &'a [u8],
    next: Next,
    /// Where the delimiter before the next part starts (its CRLF, if any).
    delimiter: usize,
}

#[derive(Debug, Clone, Copy)]
enum Next {
    /// Before the first delimiter (there may be a preamble).
    Start,
    /// A part starts at this offset.
    Part(usize),
    /// After the close delimiter, or after an error.
    Done,
}

impl<'a> Iterator for Parts<'a> {
    type Item = Result<FormPart<'a>, Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        let result = self.advance().transpose();
        if let Some(Err(_)) = result {
            self.next = Next::Done;
        }
        result
    }
}

impl<'a> Parts<'a> {
    fn advance(&mut self) -> Result<Option<FormPart<'a>>, Malformed> {
        let after_previous = match self.next {
            Next::Done => return Ok(None),
            Next::Part(start) => Some(start),
            Next::Start => {
                // The first delimiter may open the body, without the CRLF
                // that every later one carries.
                let opening = self.body.strip_prefix(b"--").is_some_and(|b| b.starts_with(self.boundary));
                self.delimiter = if opening { 0 } else { self.delimiter_from(0)? };
                let end = self.delimiter + if opening { 2 } else { 4 } + self.boundary.len();
                self.after_delimiter(end)?
            }
        };
        let Some(start) = after_previous else {
            self.next = Next::Done;
            return Ok(None);
        };
        let end = self.delimiter_from(start)?;
        let part = FormPart { span: (self.delimiter, end), ..form_part(&self.body[start..end])? };
        self.delimiter = end;
        self.next = match self.after_delimiter(end + 4 + self.boundary.len())? {
            Some(start) => Next::Part(start),
            None => Next::Done,
        };
        Ok(Some(part))
    }

    /// Where the next `CRLF--boundary` at or after `from` starts.
    ///
    /// Linear: the delimiter's first byte (CR) occurs nowhere else in it,
    /// so a partial match never overlaps the next candidate and each byte is
    /// looked at no more than twice.
    fn delimiter_from(&self, from: usize) -> Result<usize, Malformed> {
        let mut at = from;
        while let Some(offset) = self.body.get(at..).and_then(|rest| rest.iter().position(|&b| b == b'\r')) {
            at += offset;
            let rest = &self.body[at..];
            if rest.get(1..4) == Some(b"\n--") && rest[4..].starts_with(self.boundary) {
                return Ok(at);
            }
            at += 1;
        }
        Err(Malformed)
    }

    /// What follows a delimiter that ends at `at`: `--` closes the form
    /// (the epilogue after it is ignored, RFC 2046), transport padding and
    /// CRLF start a part. `Ok(None)` when closed.
    fn after_delimiter(&self, at: usize) -> Result<Option<usize>, Malformed> {
        let rest = self.body.get(at..).ok_or(Malformed)?;
        if rest.starts_with(b"--") {
            return Ok(None);
        }
        let padding = rest.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
        if rest[padding..].starts_with(b"\r\n") { Ok(Some(at + padding + 2)) } else { Err(Malformed) }
    }
}

/// One part between two delimiters: header lines, an empty line, content.
fn form_part(bytes: &[u8]) -> Result<FormPart<'_>, Malformed> {
    let mut disposition = None;
    let mut media_type = None;
    let mut transfer_encoding = None;
    let mut rest = bytes;
    let content = loop {
        // RFC 2046 lets a part end after its headers with no empty line:
        // that is empty content.
        if rest.is_empty() {
            break rest;
        }
        if let Some(content) = rest.strip_prefix(b"\r\n") {
            break content;
        }
        let end = rest.windows(2).position(|w| w == b"\r\n").ok_or(Malformed)?;
        let line = &rest[..end];
        rest = &rest[end + 2..];
        let colon = line.iter().position(|&b| b == b':').ok_or(Malformed)?;
        let (name, value) = (&line[..colon], trim(&line[colon + 1..]));
        // Also refuses folded lines, which start with whitespace.
        if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
            return Err(Malformed);
        }
        let slot = if name.eq_ignore_ascii_case(b"content-disposition") {
            &mut disposition
        } else if name.eq_ignore_ascii_case(b"content-type") {
            &mut media_type
        } else if name.eq_ignore_ascii_case(b"content-transfer-encoding") {
            &mut transfer_encoding
        } else {
            continue;
        };
        if slot.replace(value).is_some() {
            return Err(Malformed);
        }
    };
    let disposition = disposition.ok_or(Malformed)?;
    let (kind, params_at) = match disposition.iter().position(|&b| b == b';') {
        Some(at) => (&disposition[..at], at),
        None => (disposition, disposition.len()),
    };
    if !trim(kind).eq_ignore_ascii_case(b"form-data") {
        return Err(Malformed);
    }
    let (mut name, mut filename, mut filename_ext) = (None, None, None);
    params(&disposition[params_at..], |param, value| {
        let slot = if param.eq_ignore_ascii_case(b"name") {
            &mut name
        } else if param.eq_ignore_ascii_case(b"filename") {
            &mut filename
        } else if param.eq_ignore_ascii_case(b"filename*") {
            &mut filename_ext
        } else {
            return Ok(());
        };
        match slot.replace(value) {
            Some(_) => Err(Malformed),
            None => Ok(()),
        }
    })?;
    let media_type = media_type.map(|value: &[u8]| match value.iter().position(|&b| b == b';') {
        Some(at) => trim(&value[..at]),
        None => value,
    });
    let name = name.ok_or(Malformed)?;
    Ok(FormPart { name, filename, filename_ext, media_type, transfer_encoding, content, span: (0, 0) })
}

/// Calls `each` with every `; name=value` parameter of a header value
/// from its first `;` on (RFC 9110 §5.6.6): whitespace around `;` and `=`
/// and empty parameters are tolerated; a quoted value is given as sent
/// between its quotes.
fn params<'a>(
    mut input: &'a [u8],
    mut each: impl FnMut(&'a [u8], &'a [u8]) -> Result<(), Malformed>,
) -> Result<(), Malformed> {
    loop {
        match trim_start(input).split_first() {
            None => return Ok(()),
            Some((b';', rest)) => input = trim_start(rest),
            Some(_) => return Err(Malformed),
        }
        if matches!(input.first(), None | Some(b';')) {
            continue;
        }
        let name_len = input.iter().take_while(|&&b| is_tchar(b)).count();
        if name_len == 0 {
            return Err(Malformed);
        }
        let name = &input[..name_len];
        let after_equals = trim_start(&input[name_len..]).strip_prefix(b"=").ok_or(Malformed)?;
        let (value, rest) = param_value(trim_start(after_equals))?;
        each(name, value)?;
        input = rest;
    }
}

/// A token, or a quoted string's content between its quotes (escapes kept);
/// then what follows it.
fn param_value(input: &[u8]) -> Result<(&[u8], &[u8]), Malformed> {
    let Some(quoted) = input.strip_prefix(b"\"") else {
        let len = input.iter().take_while(|&&b| is_tchar(b)).count();
        return match len {
            0 => Err(Malformed),
            _ => Ok(input.split_at(len)),
        };
    };
    let mut at = 0;
    while let Some(&b) = quoted.get(at) {
        match b {
            b'"' => return Ok((&quoted[..at], &quoted[at + 1..])),
            b'\\' => at += 2,
            _ => at += 1,
        }
    }
    Err(Malformed)
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// RFC 2046 `bchars`.
fn is_bchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"'()+_,-./:=? ".contains(&b)
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let skip = bytes.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    &bytes[skip..]
}

fn trim(bytes: &[u8]) -> &[u8] {
    let bytes = trim_start(bytes);
    let keep = bytes.len() - bytes.iter().rev().take_while(|&&b| b == b' ' || b == b'\t').count();
    &bytes[..keep]
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    const CT: &str = "multipart/form-data; boundary=XyZ";

    /// The parts, spans left out (the span tests read them).
    fn read<'a>(content_type: &'a str, body: &'a [u8]) -> Option<Result<Vec<FormPart<'a>>, Malformed>> {
        parts(content_type, body).map(|parts| parts.map(|part| part.map(|p| FormPart { span: (0, 0), ..p })).collect())
    }

    fn field<'a>(name: &'a str, content: &'a str) -> FormPart<'a> {
        FormPart {
            name: name.as_bytes(),
            filename: None,
            filename_ext: None,
            media_type: None,
            transfer_encoding: None,
            content: content.as_bytes(),
            span: (0, 0),
        }
    }

    /// The body without the part at `index`, by its span.
    fn without(content_type: &str, body: &[u8], index: usize) -> Vec<u8> {
        let part = parts(content_type, body).unwrap().nth(index).unwrap().unwrap();
        let (start, end) = part.span;
        [&body[..start], &body[end..]].concat()
    }

    #[test]
    fn a_part_without_its_span_leaves_the_same_form_less_that_part() {
        let body = b"preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n\
            --XyZ\r\nContent-Disposition: form-data; name=\"b\"\r\n\r\n2\r\n\
            --XyZ \t\r\nContent-Disposition: form-data; name=\"c\"\r\n\r\n3\r\n--XyZ--\r\nepilogue";
        let names = |body: &[u8]| -> Vec<Vec<u8>> {
            read(CT, body).unwrap().unwrap().iter().map(|p| [p.name, b"=", p.content].concat()).collect()
        };
        assert_eq!(names(&without(CT, body, 0)), [b"b=2".to_vec(), b"c=3".to_vec()]);
        assert_eq!(names(&without(CT, body, 1)), [b"a=1".to_vec(), b"c=3".to_vec()]);
        assert_eq!(names(&without(CT, body, 2)), [b"a=1".to_vec(), b"b=2".to_vec()]);
        // The preamble, the padding after a later delimiter and the epilogue stay.
        assert!(without(CT, body, 0).starts_with(b"preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"b\""));
        assert!(without(CT, body, 1).windows(7).any(|w| w == b"--XyZ \t"));
        assert!(without(CT, body, 2).ends_with(b"2\r\n--XyZ--\r\nepilogue"));
        // A body that opens with its delimiter, and a form's only part.
        let opening = b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n\
            --XyZ\r\nContent-Disposition: form-data; name=\"b\"\r\n\r\n2\r\n--XyZ--\r\n";
        assert_eq!(names(&without(CT, opening, 0)), [b"b=2".to_vec()]);
        let only = without(CT, &without(CT, opening, 0), 0);
        assert_eq!(only, b"\r\n--XyZ--\r\n");
        assert_eq!(read(CT, &only), Some(Ok(Vec::new())), "still a form, with no parts");
    }

    #[test]
    fn reads_fields_and_files_in_order() {
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n\
            --XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x.bin\"\r\n\
            Content-Type: application/octet-stream\r\n\r\n\x00\r\n--X\xff\r\n--XyZ--\r\n";
        let got = read(CT, body).unwrap().unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], field("a", "1"));
        assert_eq!(got[1].name, b"f");
        assert_eq!(got[1].filename, Some(&b"x.bin"[..]));
        assert_eq!(got[1].media_type, Some(&b"application/octet-stream"[..]));
        assert_eq!(got[1].content, b"\x00\r\n--X\xff", "a CRLF and dashes inside content are content");
    }

    #[test]
    fn only_forms_with_a_usable_boundary_are_read() {
        for content_type in [
            "multipart/form-data",
            "multipart/form-data;",
            "multipart/form-data; charset=utf-8",
            "multipart/mixed; boundary=XyZ",
            "application/x-www-form-urlencoded; boundary=XyZ",
            "multipart/form-data; boundary=",
            "multipart/form-data; boundary=\"\"",
            "multipart/form-data; boundary=XyZ; boundary=XyZ",
            "multipart/form-data; boundary=\"a\\\"b\"",
            "multipart/form-data; boundary=\"a b \"",
            "multipart/form-data; boundary=\"unterminated",
            "multipart/form-data; boundary=a;;x",
            "multipart/form-data; boundary=a b",
            "multipart/form-data; =a",
            "multipart/form-data; boundary='()+_,-./:=?",
        ] {
            assert_eq!(parts(content_type, b"").map(|p| p.boundary), None, "{content_type}");
        }
        let long = format!("multipart/form-data; boundary={}", "b".repeat(71));
        assert!(parts(&long, b"").is_none());
        for (content_type, want) in [
            ("Multipart/Form-Data ;Boundary=XyZ", "XyZ"),
            ("multipart/form-data; charset=\"a;b\"; boundary=\"x y\" ; ;", "x y"),
            ("multipart/form-data;boundary = \"'()+_,-./:=?\"", "'()+_,-./:=?"),
        ] {
            assert_eq!(parts(content_type, b"").map(|p| p.boundary), Some(want.as_bytes()), "{content_type}");
        }
        let longest = format!("multipart/form-data; boundary={}", "b".repeat(70));
        assert!(parts(&longest, b"").is_some());
    }

    #[test]
    fn preamble_padding_and_epilogue_are_framing() {
        let plain = read(CT, b"--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--XyZ--").unwrap();
        let framed = read(
            CT,
            b"preamble\r\n--XyZ \t\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--XyZ--\r\nepilogue\r\n--XyZ\r\n",
        )
        .unwrap();
        assert_eq!(plain, Ok(vec![field("a", "1")]));
        assert_eq!(framed, plain);
        assert_eq!(read(CT, b"\r\n--XyZ--").unwrap(), Ok(vec![]), "a form without fields");
    }

    #[test]
    fn headers_in_any_case_and_order_with_any_spacing() {
        let body = b"--XyZ\r\nX-Other: 1\r\ncontent-type:TEXT/CSV ; charset=utf-8\r\n\
            CONTENT-DISPOSITION:Form-Data;filename = \"a.csv\" ;NAME=\"f\";\r\n\r\nx\r\n--XyZ--";
        let got = read(CT, body).unwrap().unwrap();
        assert_eq!(got[0].name, b"f");
        assert_eq!(got[0].filename, Some(&b"a.csv"[..]));
        assert_eq!(got[0].media_type, Some(&b"TEXT/CSV"[..]));
    }

    #[test]
    fn quoted_values_are_kept_as_sent() {
        let body = br#"--XyZ
Content-Disposition: form-data; name="a\"b;c"; filename="q%22x\y"; filename*=UTF-8''%E2%82%AC.txt

v
--XyZ--"#;
        let body = String::from_utf8_lossy(body).replace('\n', "\r\n");
        let got = read(CT, body.as_bytes()).unwrap().unwrap();
        assert_eq!(got[0].name, br#"a\"b;c"#);
        assert_eq!(got[0].filename, Some(&br"q%22x\y"[..]));
        assert_eq!(got[0].filename_ext, Some(&b"UTF-8''%E2%82%AC.txt"[..]));
        let token = read(CT, b"--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XyZ--").unwrap().unwrap();
        let quoted =
            read(CT, b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--XyZ--").unwrap().unwrap();
        assert_eq!(token, quoted);
    }

    #[test]
    fn empty_content_with_or_without_the_empty_line() {
        let with = read(CT, b"--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\n\r\n--XyZ--").unwrap();
        let without = read(CT, b"--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\n--XyZ--").unwrap();
        assert_eq!(with, Ok(vec![field("a", "")]));
        assert_eq!(without, with);
    }

    #[test]
    fn malformed_forms() {
        let disposition = |value: &str| format!("--XyZ\r\nContent-Disposition: {value}\r\n\r\nv\r\n--XyZ--");
        let mut cases: Vec<(&str, String)> = vec![
            ("empty body", String::new()),
            ("no delimiter", "hello".into()),
            ("no close delimiter", "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nv".into()),
            ("no close, trailing delimiter", "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XyZ".into()),
            ("longer boundary", "--XyZW\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XyZ--".into()),
            ("junk after delimiter", "--XyZ x\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XyZ--".into()),
            ("bare LF", "--XyZ\nContent-Disposition: form-data; name=a\n\nv\n--XyZ--".into()),
            ("no headers", "--XyZ\r\n\r\nv\r\n--XyZ--".into()),
            ("header without colon", "--XyZ\r\nContent-Disposition form-data\r\n\r\nv\r\n--XyZ--".into()),
            ("folded header", "--XyZ\r\nContent-Disposition: form-data;\r\n name=a\r\n\r\nv\r\n--XyZ--".into()),
            ("space before colon", "--XyZ\r\nContent-Disposition : form-data; name=a\r\n\r\nv\r\n--XyZ--".into()),
            ("unterminated headers", "--XyZ\r\nContent-Disposition: form-data; name=a\r\n--XyZ--".into()),
            (
                "two content types",
                "--XyZ\r\nContent-Disposition: form-data; name=a\r\nContent-Type: a/b\r\ncontent-type: a/b\r\n\r\nv\r\n--XyZ--".into(),
            ),
            (
                "two dispositions",
                "--XyZ\r\nContent-Disposition: form-data; name=a\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XyZ--".into(),
            ),
            ("second part broken", "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XyZ\r\n\r\n\r\n--XyZ--".into()),
        ];
        for value in [
            "attachment; name=a",
            "form-data",
            "form-data; filename=a",
            "form-data; name=a; name=b",
            "form-data; name=a; filename=x; FILENAME=y",
            "form-data; name=\"a",
            "form-data; name=\"a\\\"",
            "form-data; name=\"a\" x",
            "form-data; name=a b",
            "form-data; name=",
            "form-data; name",
            "form-data name=a",
        ] {
            cases.push(("disposition", disposition(value)));
        }
        for (what, body) in &cases {
            let got = read(CT, body.as_bytes()).unwrap();
            assert_eq!(got, Err(Malformed), "{what}: {body:?}");
        }
    }

    #[test]
    fn the_iterator_stops_at_the_first_error() {
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XyZ\r\nbroken\r\n\r\nv\r\n--XyZ--";
        let mut parts = parts(CT, body).unwrap();
        assert_eq!(parts.next(), Some(Ok(FormPart { span: (0, 50), ..field("a", "v") })));
        assert_eq!(parts.next(), Some(Err(Malformed)));
        assert_eq!(parts.next(), None);
    }

    #[test]
    fn a_browser_name_ending_in_a_backslash_is_not_misread() {
        // Chromium sends `a\` bare: as a quoted string it never closes where
        // it should, and the form is read as bytes rather than wrongly.
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"a\\\"; filename=\"b.txt\"\r\n\r\nv\r\n--XyZ--";
        assert_eq!(read(CT, body).unwrap(), Err(Malformed));
    }

    #[test]
    fn adversarial_bodies_stay_linear() {
        // Near-misses of the delimiter back to back, and a long header.
        let boundary = "b".repeat(70);
        let content_type = format!("multipart/form-data; boundary={boundary}");
        let near = format!("\r\n--{}", &boundary[..69]).repeat(20_000);
        let body = format!("--{boundary}\r\nContent-Disposition: form-data; name=a\r\n\r\n{near}\r\n--{boundary}--");
        let got = read(&content_type, body.as_bytes()).unwrap().unwrap();
        assert_eq!(got[0].content, near.as_bytes());
        let params = "; x=\"y\"".repeat(100_000);
        let body = format!("--{boundary}\r\nContent-Disposition: form-data; name=a{params}\r\n\r\nv\r\n--{boundary}--");
        assert_eq!(read(&content_type, body.as_bytes()).unwrap(), Ok(vec![field("a", "v")]));
    }

    /// Every part read is a slice of the body, and an error ends the parts.
    #[cfg(not(target_arch = "wasm32"))]
    fn check(parts: Parts<'_>, body: &[u8]) -> Result<(), proptest::test_runner::TestCaseError> {
        let within = |slice: &[u8]| {
            body.as_ptr_range().start <= slice.as_ptr() && slice.as_ptr_range().end <= body.as_ptr_range().end
        };
        let mut errors = 0;
        for part in parts {
            proptest::prop_assert_eq!(errors, 0, "a part after an error");
            match part {
                Ok(part) => {
                    let fields =
                        [Some(part.name), part.filename, part.filename_ext, part.media_type, part.transfer_encoding];
                    proptest::prop_assert!(within(part.content) && fields.into_iter().flatten().all(within));
                }
                Err(Malformed) => errors += 1,
            }
        }
        Ok(())
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #[test]
        fn prop_any_bytes_and_boundary_never_panic(
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..400),
            boundary in "[ -~]{0,12}",
            quoted in proptest::bool::ANY,
        ) {
            let content_type = match quoted {
                true => format!("multipart/form-data; boundary=\"{boundary}\""),
                false => format!("multipart/form-data; boundary={boundary}"),
            };
            if let Some(parts) = parts(&content_type, &body) {
                check(parts, &body)?;
            }
        }

        #[test]
        fn prop_bodies_made_of_form_pieces_never_panic(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                "--b", "--b--", "\r\n", "\r", "\n", "--", " ", "\t", ":", ";", "=", "\"", "\\",
                "Content-Disposition: form-data", "content-type: a/b", "name=", "filename=", "filename*=",
                "x", "\u{e9}",
            ]), 0..60),
        ) {
            let body = pieces.concat();
            check(parts("multipart/form-data; boundary=b", body.as_bytes()).unwrap(), body.as_bytes())?;
        }
    }
}
