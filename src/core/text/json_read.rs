//! The core's small JSON reader: enough of JSON to find a few fields of an
//! answer ([`Said`](crate::core::client::answer)) and to write a message body in one
//! canonical form ([`canonical`]), without a JSON parser, which the worker's
//! size budget has no room for (serde_json's parser, its `Value` and its
//! float formatting add about 18 KB gzip). It reads valid JSON as
//! serde_json does (property tests check both uses) and is lenient with
//! some invalid JSON, such as a trailing comma.

use crate::core::text::cut::cut;
use crate::core::text::json_pointer::JsonPointer;

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
    canonical_without(text, &[])
}

/// [`canonical`], with the values `ignore` points at left out: a member
/// of an object, or an element of an array (the elements after it move
/// up). A pointer to nothing in `text` leaves out nothing; one to the
/// whole text (`""`) is refused when routes are read, never passed here.
/// The values left out must still be JSON: `text` is read whole either way.
pub(crate) fn canonical_without(text: &str, ignore: &[&JsonPointer]) -> Option<String> {
    let ignore: Vec<&[String]> = ignore.iter().map(|pointer| pointer.tokens()).collect();
    let mut reader = Reader::new(text);
    let mut out = String::new();
    reader.canonical(&mut out, 0, &ignore)?;
    reader.next_token().is_none().then_some(out)
}

/// One JSON value, read whole: what the core reads of a text whose members
/// it walks (the `IDEMPOTENCY_ROUTES` variable, a body's member named by a
/// pointer). Numbers stay as written, and an object keeps its members in
/// order, repeated names included: the reader of a variable refuses a
/// repeated member, a pointer takes the last, as serde_json does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as written (`-1.50e3`).
    Number(String),
    /// A string, unescaped.
    String(String),
    /// An array.
    Array(Vec<Json>),
    /// An object's members, in order.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// `text` as one JSON value; `None` when it is not one (or nests
    /// deeper than serde_json reads).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let mut reader = Reader::new(text);
        let value = reader.value(0)?;
        reader.next_token().is_none().then_some(value)
    }

    /// The value `pointer` names in this one (RFC 6901): a member by its
    /// name (the last of a repeated name), an element by its index.
    pub(crate) fn pointer(&self, pointer: &JsonPointer) -> Option<&Self> {
        pointer.tokens().iter().try_fold(self, |value, token| match value {
            Self::Object(_) => value.member(token),
            Self::Array(items) => items.get(array_index(token)?),
            _ => None,
        })
    }

    /// This object's member `name` (the last of a repeated name); `None`
    /// for a value that is no object.
    pub(crate) fn member(&self, name: &str) -> Option<&Self> {
        match self {
            Self::Object(members) => members.iter().rev().find(|(n, _)| n == name).map(|(_, value)| value),
            _ => None,
        }
    }

    /// What kind of value this is, for a reason that names it.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool(_) => "a boolean",
            Self::Number(_) => "a number",
            Self::String(_) => "a string",
            Self::Array(_) => "an array",
            Self::Object(_) => "an object",
        }
    }
}

/// A pointer token as an array index: digits with no leading zero (RFC
/// 6901 §4), so `01` names no element.
fn array_index(token: &str) -> Option<usize> {
    let digits = !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit());
    (digits && (token == "0" || !token.starts_with('0'))).then(|| token.parse().ok()).flatten()
}

/// `text` as one JSON object: its members as [`canonical`] writes them,
/// name and canonical value each. `None` when `text` is not one JSON
/// object.
pub(crate) fn canonical_members(text: &str) -> Option<Vec<(String, String)>> {
    let mut reader = Reader::new(text);
    if reader.next_token()? != b'{' {
        return None;
    }
    let members = reader.members(0, &[])?;
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

    /// One value of any kind, read whole into a [`Json`].
    fn value(&mut self, depth: usize) -> Option<Json> {
        if depth > MAX_DEPTH {
            return None;
        }
        Some(match self.next_token()? {
            b'"' => Json::String(self.string()?),
            b'[' => {
                self.bump();
                let mut items = Vec::new();
                while self.next_token()? != b']' {
                    if !items.is_empty() {
                        self.eat(b',')?;
                    }
                    items.push(self.value(depth + 1)?);
                }
                self.bump();
                Json::Array(items)
            }
            b'{' => {
                self.bump();
                let mut members = Vec::new();
                while self.next_token()? != b'}' {
                    if !members.is_empty() {
                        self.eat(b',')?;
                    }
                    let name = self.string()?;
                    self.eat(b':')?;
                    members.push((name, self.value(depth + 1)?));
                }
                self.bump();
                Json::Object(members)
            }
            _ => match self.word()? {
                "true" => Json::Bool(true),
                "false" => Json::Bool(false),
                "null" => Json::Null,
                number => Json::Number(number.to_owned()),
            },
        })
    }

    /// A number or a literal (at its first character), as written: `None`
    /// when it is neither.
    fn word(&mut self) -> Option<&'a str> {
        let start = self.at;
        while self.bytes().get(self.at).is_some_and(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b)) {
            self.at += 1;
        }
        let word = cut(self.text, start..self.at);
        let number = word.starts_with(|c: char| c == '-' || c.is_ascii_digit())
            && word.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
        (number || matches!(word, "true" | "false" | "null")).then_some(word)
    }

    /// An object's members (at its `{`), each value canonical, sorted by
    /// name, the last of a repeated name kept.
    fn members(&mut self, depth: usize, ignore: &[&[String]]) -> Option<Vec<(String, String)>> {
        self.eat(b'{')?;
        // Each member with its position, so that of a repeated name the last
        // is kept after sorting (without a scan per member).
        let mut members: Vec<(String, usize, String)> = Vec::new();
        let mut first = true;
        while self.next_token()? != b'}' {
            if !first {
                self.eat(b',')?;
            }
            first = false;
            let name = self.string()?;
            self.eat(b':')?;
            let inner = within(ignore, &name);
            let mut value = String::new();
            self.canonical(&mut value, depth + 1, &inner)?;
            if !inner.iter().any(|rest| rest.is_empty()) {
                members.push((name, members.len(), value));
            }
        }
        self.bump();
        // By name, the latest first within a name; then one per name.
        heap_sort_by(&mut members, |(a, at, _), (b, bt, _)| a.cmp(b).then(bt.cmp(at)));
        members.dedup_by(|later, kept| later.0 == kept.0);
        Some(members.into_iter().map(|(name, _, value)| (name, value)).collect())
    }

    /// One value, written canonically to `out`.
    /// `ignore`: what is left out below this value, each pointer's tokens
    /// from here on (an empty one would be this value itself, which the
    /// caller leaves out).
    fn canonical(&mut self, out: &mut String, depth: usize, ignore: &[&[String]]) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.next_token()? {
            b'"' => out.push_str(&serde_json::to_string(&self.string()?).ok()?),
            b'[' => {
                self.bump();
                out.push('[');
                let (mut index, mut written) = (0usize, 0usize);
                while self.next_token()? != b']' {
                    if index > 0 {
                        self.eat(b',')?;
                    }
                    let inner = if ignore.is_empty() { Vec::new() } else { within(ignore, &index.to_string()) };
                    let mut item = String::new();
                    self.canonical(&mut item, depth + 1, &inner)?;
                    if !inner.iter().any(|rest| rest.is_empty()) {
                        if written > 0 {
                            out.push(',');
                        }
                        out.push_str(&item);
                        written += 1;
                    }
                    index += 1;
                }
                self.bump();
                out.push(']');
            }
            b'{' => {
                out.push('{');
                for (i, (name, value)) in self.members(depth, ignore)?.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(name).ok()?);
                    out.push(':');
                    out.push_str(value);
                }
                out.push('}');
            }
            // A number or a literal, as written.
            _ => out.push_str(self.word()?),
        }
        Some(())
    }
}

/// Sorts `items` by `order` (a total order: no two items compare equal) in
/// O(n log n) and no allocation: a heap sort, a few dozen bytes of wasm
/// where the standard library's sorts cost the worker about 1 KB gzip.
fn heap_sort_by<T>(items: &mut [T], order: impl Fn(&T, &T) -> std::cmp::Ordering) {
    let sift = |items: &mut [T], mut root: usize, end: usize| {
        loop {
            let mut child = 2 * root + 1;
            if child >= end {
                break;
            }
            if child + 1 < end && order(&items[child], &items[child + 1]).is_lt() {
                child += 1;
            }
            if order(&items[root], &items[child]).is_ge() {
                break;
            }
            items.swap(root, child);
            root = child;
        }
    };
    for start in (0..items.len() / 2).rev() {
        sift(items, start, items.len());
    }
    for end in (1..items.len()).rev() {
        items.swap(0, end);
        sift(items, 0, end);
    }
}

/// The pointers of `ignore` that go on into the member or element named
/// `token`, each with its tokens after it.
fn within<'p>(ignore: &[&'p [String]], token: &str) -> Vec<&'p [String]> {
    ignore.iter().filter(|tokens| tokens.first().is_some_and(|t| t == token)).map(|tokens| &tokens[1..]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn heap_sort_orders_as_the_standard_sort_does() {
        let mut seed = 7u64;
        for len in 0..64 {
            let mut items: Vec<(u8, usize)> = (0..len)
                .map(|i| {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    ((seed >> 59) as u8, i)
                })
                .collect();
            let mut want = items.clone();
            want.sort_unstable();
            heap_sort_by(&mut items, Ord::cmp);
            assert_eq!(items, want, "{len} items");
        }
    }

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

    fn pointers(written: &[&str]) -> Vec<JsonPointer> {
        written.iter().map(|p| p.parse().unwrap()).collect()
    }

    #[test]
    fn canonical_without_leaves_out_what_is_pointed_at() {
        let text = r#"{"amount": 1, "ts": 5, "meta": {"at": 9, "by": "x"}, "items": [{"at": 1, "n": 2}, 3, 4]}"#;
        // (pointers, canonical form)
        let rows: [(&[&str], &str); 7] = [
            (&[], r#"{"amount":1,"items":[{"at":1,"n":2},3,4],"meta":{"at":9,"by":"x"},"ts":5}"#),
            (&["/ts"], r#"{"amount":1,"items":[{"at":1,"n":2},3,4],"meta":{"at":9,"by":"x"}}"#),
            (&["/ts", "/meta/at"], r#"{"amount":1,"items":[{"at":1,"n":2},3,4],"meta":{"by":"x"}}"#),
            (&["/items/0/at", "/items/2"], r#"{"amount":1,"items":[{"n":2},3],"meta":{"at":9,"by":"x"},"ts":5}"#),
            (&["/items/1"], r#"{"amount":1,"items":[{"at":1,"n":2},4],"meta":{"at":9,"by":"x"},"ts":5}"#),
            (
                &["/nothing", "/items/01", "/ts/x"],
                r#"{"amount":1,"items":[{"at":1,"n":2},3,4],"meta":{"at":9,"by":"x"},"ts":5}"#,
            ),
            (&["/meta", "/items", "/amount", "/ts"], "{}"),
        ];
        for (ignore, want) in rows {
            let ignore = pointers(ignore);
            let ignore: Vec<&JsonPointer> = ignore.iter().collect();
            assert_eq!(canonical_without(text, &ignore).as_deref(), Some(want), "{ignore:?}");
        }
        let ts = pointers(&["/ts"]);
        let ts: Vec<&JsonPointer> = ts.iter().collect();
        assert_eq!(canonical_without(r#"{"a":1,"ts":[1,,2]}"#, &ts), None, "a value left out must still be JSON");
        assert_eq!(canonical_without(r#"{"ts":1,"ts":2,"a":[]}"#, &ts).as_deref(), Some(r#"{"a":[]}"#));
        assert_eq!(canonical_without("[1, 2]", &ts).as_deref(), Some("[1,2]"));
    }

    #[test]
    fn a_value_reads_whole_and_its_pointers_find_members() {
        let value =
            Json::parse(r#" {"id": "evt_1", "n": -1.5e3, "ok": true, "a": [null, {"b~/": "x"}], "id": "evt_2"} "#)
                .unwrap();
        let at = |p: &str| value.pointer(&p.parse().unwrap()).cloned();
        assert_eq!(at("/id"), Some(Json::String("evt_2".into())), "the last of a repeated name");
        assert_eq!(at("/n"), Some(Json::Number("-1.5e3".into())));
        assert_eq!(at("/ok"), Some(Json::Bool(true)));
        assert_eq!(at("/a/0"), Some(Json::Null));
        assert_eq!(at("/a/1/b~0~1"), Some(Json::String("x".into())));
        for nowhere in ["/a/2", "/a/01", "/a/-", "/id/x", "/missing", "/a/x"] {
            assert_eq!(at(nowhere), None, "{nowhere}");
        }
        for bad in ["", "{", "[1,]x", "{} {}", "nul", "{\"a\" 1}", "[1 2]", "'a'", "{1:2}"] {
            assert_eq!(Json::parse(bad), None, "{bad}");
        }
        assert_eq!(Json::parse(&"[".repeat(200)), None, "too deep");
        assert_eq!(Json::parse("[]").map(|v| v.kind()), Some("an array"));
    }

    #[cfg(not(target_arch = "wasm32"))]
    mod props {
        use super::super::{Json, canonical};
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

        /// A [`Json`] as serde_json's value (numbers here are integers).
        fn serde(value: &Json) -> Value {
            match value {
                Json::Null => Value::Null,
                Json::Bool(b) => Value::from(*b),
                Json::Number(n) => serde_json::from_str(n).unwrap(),
                Json::String(s) => Value::from(s.as_str()),
                Json::Array(items) => Value::Array(items.iter().map(serde).collect()),
                Json::Object(members) => {
                    Value::Object(members.iter().map(|(name, v)| (name.clone(), serde(v))).collect())
                }
            }
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
                // The value reader takes exactly what the canonical writer takes.
                prop_assert_eq!(Json::parse(&text).is_some(), canonical(&text).is_some());
            }

            #[test]
            fn prop_a_value_reads_as_serde_json_reads_it(value in json(), pretty in any::<bool>()) {
                let text = if pretty { serde_json::to_string_pretty(&value).unwrap() } else { serde_json::to_string(&value).unwrap() };
                prop_assert_eq!(Json::parse(&text).map(|v| serde(&v)), Some(value));
            }
        }
    }
}
