//! A small JSON reader for what an answer says ([`Said`]): enough of JSON to
//! find a few fields, no more.

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
        let mut r = Reader { text: body, at: 0 };
        let mut said = Said::default();
        match r.next_token()? {
            b'"' => said.messages.push(r.string()?),
            b'{' => r.object(&mut said, false)?,
            _ => return None,
        }
        Some(said)
    }
}

struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl Reader<'_> {
    fn bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }

    /// The next byte after white space, not consumed.
    fn next_token(&mut self) -> Option<u8> {
        while self.bytes().get(self.at)?.is_ascii_whitespace() {
            self.at += 1;
        }
        self.bytes().get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.next_token()? == byte).then(|| self.at += 1)
    }

    /// An object's fields into `said`; `in_error` inside `"error": {…}`.
    fn object(&mut self, said: &mut Said, in_error: bool) -> Option<()> {
        self.eat(b'{')?;
        loop {
            match self.next_token()? {
                b'}' => return self.eat(b'}'),
                b',' => {
                    self.at += 1;
                    continue;
                }
                _ => {}
            }
            let key = self.string()?;
            self.eat(b':')?;
            let next = self.next_token()?;
            match (key.as_str(), next, in_error) {
                ("type", b'"', false) => said.kind = Some(self.string()?),
                ("code", b'"', true) => said.code = Some(self.string()?),
                ("title" | "detail" | "message", b'"', _) | ("error", b'"', false) => {
                    said.messages.push(self.string()?)
                }
                ("error", b'{', false) => self.object(said, true)?,
                _ => self.skip()?,
            }
        }
    }

    /// A string (at its opening quote), unescaped.
    fn string(&mut self) -> Option<String> {
        self.eat(b'"')?;
        let mut out = String::new();
        loop {
            // Quotes and backslashes are ASCII, so never inside a UTF-8
            // sequence: the run up to one is whole characters.
            let start = self.at;
            while !matches!(self.bytes().get(self.at)?, b'"' | b'\\') {
                self.at += 1;
            }
            out.push_str(self.text.get(start..self.at)?);
            self.at += 1;
            if self.bytes()[self.at - 1] == b'"' {
                return Some(out);
            }
            let escaped = *self.bytes().get(self.at)?;
            self.at += 1;
            out.push(match escaped {
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => self.unicode_escape()?,
                other => char::from(other),
            });
        }
    }

    /// The code point of `\uXXXX` (after the `u`), a surrogate pair's
    /// second half included; a lone or broken pair reads as U+FFFD.
    fn unicode_escape(&mut self) -> Option<char> {
        let hex = |r: &mut Self| {
            let digits = r.bytes().get(r.at..r.at + 4)?;
            let n = digits.iter().try_fold(0, |n, &d| Some(n * 16 + char::from(d).to_digit(16)?));
            r.at += 4;
            n
        };
        let high = hex(self)?;
        if (0xD800..0xDC00).contains(&high) && self.bytes().get(self.at..self.at + 2) == Some(&b"\\u"[..]) {
            self.at += 2;
            let low = hex(self)?;
            if (0xDC00..0xE000).contains(&low) {
                return char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00));
            }
        }
        Some(char::from_u32(high).unwrap_or('\u{FFFD}'))
    }

    /// Skips one value of any kind. Nesting is counted, not recursed into,
    /// so no body can exhaust the stack.
    fn skip(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.next_token()? {
                b'"' => {
                    self.string()?;
                }
                b'{' | b'[' => {
                    self.at += 1;
                    depth += 1;
                    continue;
                }
                b'}' | b']' if depth > 0 => {
                    self.at += 1;
                    depth -= 1;
                }
                b',' | b':' if depth > 0 => {
                    self.at += 1;
                    continue;
                }
                _ => {
                    // A number or literal: its run of characters.
                    let start = self.at;
                    while self.bytes().get(self.at).is_some_and(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b)) {
                        self.at += 1;
                    }
                    if self.at == start {
                        return None;
                    }
                }
            }
            if depth == 0 {
                return Some(());
            }
        }
    }
}
