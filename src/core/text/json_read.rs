//! The core's small JSON reader: enough of JSON to find a few fields of an
//! answer ([`Said`](crate::core::client::answer)) and to write a message body in one
//! canonical form ([`canonical`]), without a JSON parser, which the worker's
//! size budget has no room for (serde_json's parser, its `Value` and its
//! float formatting add about 18 KB gzip). It reads valid JSON as
//! serde_json does (property tests check both uses) and is lenient with
//! some invalid JSON, such as a trailing comma.

/// How deep arrays and objects may nest in [`canonical`], as serde_json's
/// own limit.
const MAX_DEPTH: usize = 128;

/// `text` as one JSON value in canonical form: no white space, object
/// members sorted by name (the last of a repeated name kept), strings
/// escaped as serde_json escapes them, numbers as written. For JSON whose
/// numbers are integers this is exactly serde_json's `Value::to_string`.
/// `None` when `text` is not one JSON value.
///
/// For example ` { "b": [1, "x"], "a": {"d": null, "c": true} } ` is
/// `{"a":{"c":true,"d":null},"b":[1,"x"]}` (the unit tests hold it).
pub(crate) fn canonical(text: &str) -> Option<String> {
    let mut reader = Reader::new(text);
    let mut out = String::new();
    reader.canonical(&mut out, 0)?;
    reader.next_token().is_none().then_some(out)
}

/// `text` as one JSON object: its members as [`canonical`] writes them,
/// name and canonical value each. `None` when `text` is not one JSON
/// object.
pub(crate) fn canonical_members(text: &str) -> Option<Vec<(String, String)>> {
    let mut reader = Reader::new(text);
    if reader.next_token()? != b'{' {
        return None;
    }
    let members = reader.members(0)?;
    reader.next_token().is_none().then_some(members)
}

/// A position in a JSON text.
pub(crate) struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        Self { text, at: 0 }
    }

    /// Steps over the byte [`Reader::next_token`] saw.
    pub(crate) fn bump(&mut self) {
        self.at += 1;
    }

    fn bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }

    /// The next byte after white space, not consumed.
    pub(crate) fn next_token(&mut self) -> Option<u8> {
        while self.bytes().get(self.at)?.is_ascii_whitespace() {
            self.at += 1;
        }
        self.bytes().get(self.at).copied()
    }

    pub(crate) fn eat(&mut self, byte: u8) -> Option<()> {
        (self.next_token()? == byte).then(|| self.at += 1)
    }

    /// A string (at its opening quote), unescaped.
    pub(crate) fn string(&mut self) -> Option<String> {
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
    pub(crate) fn skip(&mut self) -> Option<()> {
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

    /// An object's members (at its `{`), each value canonical, sorted by
    /// name, the last of a repeated name kept.
    fn members(&mut self, depth: usize) -> Option<Vec<(String, String)>> {
        self.eat(b'{')?;
        // Each member with its position, so that of a repeated name the last
        // is kept after sorting (without a scan per member).
        let mut members: Vec<(String, usize, String)> = Vec::new();
        while self.next_token()? != b'}' {
            if !members.is_empty() {
                self.eat(b',')?;
            }
            let name = self.string()?;
            self.eat(b':')?;
            let mut value = String::new();
            self.canonical(&mut value, depth + 1)?;
            members.push((name, members.len(), value));
        }
        self.bump();
        // By name, the latest first within a name; then one per name.
        members.sort_unstable_by(|(a, at, _), (b, bt, _)| a.cmp(b).then(bt.cmp(at)));
        members.dedup_by(|later, kept| later.0 == kept.0);
        Some(members.into_iter().map(|(name, _, value)| (name, value)).collect())
    }

    /// One value, written canonically to `out`.
    fn canonical(&mut self, out: &mut String, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.next_token()? {
            b'"' => out.push_str(&serde_json::to_string(&self.string()?).ok()?),
            b'[' => {
                self.bump();
                out.push('[');
                let mut first = true;
                while self.next_token()? != b']' {
                    if !first {
                        self.eat(b',')?;
                        out.push(',');
                    }
                    first = false;
                    self.canonical(out, depth + 1)?;
                }
                self.bump();
                out.push(']');
            }
            b'{' => {
                out.push('{');
                for (i, (name, value)) in self.members(depth)?.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(name).ok()?);
                    out.push(':');
                    out.push_str(value);
                }
                out.push('}');
            }
            _ => {
                // A number or a literal, as written.
                let start = self.at;
                while self.bytes().get(self.at).is_some_and(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b)) {
                    self.at += 1;
                }
                let word = &self.text[start..self.at];
                let number = word.starts_with(|c: char| c == '-' || c.is_ascii_digit())
                    && word.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
                if !(number || matches!(word, "true" | "false" | "null")) {
                    return None;
                }
                out.push_str(word);
            }
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn canonical_sorts_members_drops_space_and_keeps_numbers_as_written() {
        let text = r#" { "b": [1, "x\u0041\n"], "a": {"d": null, "c": true}, "e": -1.50e3, "b": 2 } "#;
        assert_eq!(canonical(text).unwrap(), r#"{"a":{"c":true,"d":null},"b":2,"e":-1.50e3}"#);
        assert_eq!(canonical(r#""x\u0041\n""#).unwrap(), r#""xA\n""#);
        for bad in ["", "{", "[1,]x", "{} {}", "nul", "{\"a\" 1}", "[1 2]", "'a'"] {
            assert_eq!(canonical(bad), None, "{bad}");
        }
        assert_eq!(canonical(&"[".repeat(200)), None, "too deep");
    }

    #[cfg(not(target_arch = "wasm32"))]
    mod props {
        use super::super::canonical;
        use proptest::prelude::*;
        use serde_json::Value;

        /// JSON values whose numbers are integers.
        fn json() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                any::<u64>().prop_map(Value::from),
                "\\PC{0,8}".prop_map(Value::from),
            ];
            leaf.prop_recursive(4, 32, 6, |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
                    proptest::collection::btree_map("[a-z\"\\\\é]{0,4}", inner, 0..6)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        proptest! {
            #[test]
            fn prop_canonical_is_serde_jsons_for_integer_json(value in json(), pretty in any::<bool>()) {
                let text = if pretty { serde_json::to_string_pretty(&value).unwrap() } else { serde_json::to_string(&value).unwrap() };
                prop_assert_eq!(canonical(&text), Some(value.to_string()));
            }

            #[test]
            fn prop_any_text_reads_or_not_without_panicking(text in "\\PC{0,64}") {
                if let Some(out) = canonical(&text) {
                    prop_assert!(serde_json::from_str::<Value>(&out).is_ok() || serde_json::from_str::<Value>(&text).is_err());
                }
            }
        }
    }
}
