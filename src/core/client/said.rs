//! What an answer says ([`Said`]): a few fields found with the core's small
//! JSON reader.

use crate::core::text::json_read::Reader;

/// What a JSON answer says, as far as the rules read it: its `type`, its
/// `error.code`, and its messages (`title`, `detail` and `message`, at the
/// top or in an `error` object; `error` as a string; the whole body as a
/// JSON string). A small reader, not a JSON parser, which the package's
/// size budget has no room for (serde_json's adds about 10 KB gzip): it reads
/// valid JSON as serde_json does (a property test checks) and is lenient
/// with the rest, such as the draft's own example with its trailing comma.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Said {
    /// `type`.
    pub(super) kind: Option<String>,
    /// `error.code`.
    pub(super) code: Option<String>,
    /// `title`, `detail`, `message` (top level or in `error`), `error` as a string.
    pub(super) messages: Vec<String>,
}

impl Said {
    /// What `body` says; `None` when it is not a JSON object or string.
    pub(super) fn read(body: &str) -> Option<Said> {
        let mut r = Reader::lenient(body);
        let mut said = Said::default();
        match r.next_token()? {
            b'"' => said.messages.push(r.string()?),
            b'{' => object(&mut r, &mut said, false)?,
            _ => return None,
        }
        Some(said)
    }
}

/// An object's fields into `said`; `in_error` inside `"error": {…}`.
fn object(r: &mut Reader<'_>, said: &mut Said, in_error: bool) -> Option<()> {
    r.eat(b'{')?;
    loop {
        match r.next_token()? {
            b'}' => return r.eat(b'}'),
            b',' => {
                r.bump();
                continue;
            }
            _ => {}
        }
        let key = r.string()?;
        r.eat(b':')?;
        let next = r.next_token()?;
        match (key.as_str(), next, in_error) {
            ("type", b'"', false) => said.kind = Some(r.string()?),
            ("code", b'"', true) => said.code = Some(r.string()?),
            ("title" | "detail" | "message", b'"', _) | ("error", b'"', false) => said.messages.push(r.string()?),
            ("error", b'{', false) => object(r, said, true)?,
            _ => r.skip()?,
        }
    }
}
