//! The core's small JSON reader: enough of JSON to find a few fields of an
//! answer ([`Said`](crate::core::client::answer)) and to write a message body in one
//! canonical form ([`canonical`]), without a JSON parser, which the worker's
//! size budget has no room for (serde_json's parser, its `Value` and its
//! float formatting add about 18 KB gzip).
//!
//! It reads strictly (SPEC §13, "Bodies read strictly"): a text is JSON
//! only if it is plain JSON (RFC 8259), so what serde_json refuses it
//! refuses (an unknown escape, a lone surrogate, a trailing comma, a
//! number out of a double's range, nesting past serde_json's limit), and
//! an object that gives a member's name twice too, which serde_json reads
//! as its last. A caller falls back to comparing bytes: two different
//! bodies are never read as one. Property tests hold both uses to
//! serde_json. Only a [`Reader::lenient`] reader, which finds an answer's
//! fields, reads an unknown escape or a lone surrogate.

use crate::core::text::cut::cut;
use crate::core::text::json_pointer::JsonPointer;

/// How deep arrays and objects may nest, as serde_json reads them (its
/// recursion limit of 128 refuses the 128th).
const MAX_NESTING: usize = 127;

/// `text` as one JSON value in canonical form: no white space, object
/// members sorted by name, strings escaped as serde_json escapes them,
/// numbers as written. For JSON whose numbers are integers this is exactly
/// serde_json's `Value::to_string`. `None` when `text` is not one JSON
/// value, or an object in it gives a name twice.
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
/// The values left out must still be JSON, and their names given once:
/// `text` is read whole either way.
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
/// order.
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
    /// deeper than serde_json reads), or an object in it gives a name
    /// twice.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        Self::parse_keeping_repeats(text).filter(|value| !value.repeats_a_name())
    }

    /// [`Json::parse`], but an object may give a name twice, each member
    /// kept in order: for a reader that refuses a repeated member itself,
    /// naming it (`IDEMPOTENCY_ROUTES`). Strict in every other way.
    pub(crate) fn parse_keeping_repeats(text: &str) -> Option<Self> {
        let mut reader = Reader::new(text);
        let value = reader.value(0)?;
        reader.next_token().is_none().then_some(value)
    }

    /// Whether an object in this value gives a name twice. Names are
    /// sorted, not compared pairwise, so no body costs a scan per member.
    fn repeats_a_name(&self) -> bool {
        match self {
            Self::Array(items) => items.iter().any(Self::repeats_a_name),
            Self::Object(members) => {
                let mut names: Vec<&str> = members.iter().map(|(name, _)| name.as_str()).collect();
                heap_sort_by(&mut names, Ord::cmp);
                names.windows(2).any(|pair| pair[0] == pair[1]) || members.iter().any(|(_, v)| v.repeats_a_name())
            }
            _ => false,
        }
    }

    /// The value `pointer` names in this one (RFC 6901): a member by its
    /// name, an element by its index.
    pub(crate) fn pointer(&self, pointer: &JsonPointer) -> Option<&Self> {
        pointer.tokens().iter().try_fold(self, |value, token| match value {
            Self::Object(_) => value.member(token),
            Self::Array(items) => items.get(array_index(token)?),
            _ => None,
        })
    }

    /// This object's member `name` (the last of a repeated name, which
    /// only [`Json::parse_keeping_repeats`] keeps); `None` for a value
    /// that is no object.
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
    /// Whether a string may hold an unknown escape (read as the character
    /// escaped), a lone surrogate (read as U+FFFD) or a control character:
    /// for an answer's fields, never a body's meaning.
    lenient: bool,
}

impl<'a> Reader<'a> {
    /// A strict reader at the start of `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        Self { text, at: 0, lenient: false }
    }

    /// A reader at the start of `text` that reads in a string what a
    /// strict one refuses (an unknown escape, a lone surrogate, a control
    /// character): what finds an answer's fields
    /// ([`Said`](crate::core::client::answer)).
    pub(crate) fn lenient(text: &'a str) -> Self {
        Self { text, at: 0, lenient: true }
    }

    /// Steps over the byte [`Reader::next_token`] saw.
    pub(crate) fn bump(&mut self) {
        self.at += 1;
    }

    fn bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }

    /// The next byte after white space (JSON's four), not consumed.
    pub(crate) fn next_token(&mut self) -> Option<u8> {
        while matches!(self.bytes().get(self.at)?, b' ' | b'\t' | b'\n' | b'\r') {
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
            loop {
                match *self.bytes().get(self.at)? {
                    b'"' | b'\\' => break,
                    0..0x20 if !self.lenient => return None,
                    _ => self.at += 1,
                }
            }
            out.push_str(self.text.get(start..self.at)?);
            self.at += 1;
            if self.bytes()[self.at - 1] == b'"' {
                return Some(out);
            }
            let escaped = *self.bytes().get(self.at)?;
            self.at += 1;
            out.push(match escaped {
                b'"' | b'\\' | b'/' => char::from(escaped),
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => self.unicode_escape()?,
                other if self.lenient => char::from(other),
                _ => return None,
            });
        }
    }

    /// The code point of `\uXXXX` (after the `u`), a surrogate pair's
    /// second half included. A lone surrogate is refused, or read as
    /// U+FFFD by a lenient reader; an escape after a lone high surrogate
    /// is not taken with it.
    fn unicode_escape(&mut self) -> Option<char> {
        let unit = self.hex_at(self.at)?;
        self.at += 4;
        if (0xD800..0xDC00).contains(&unit)
            && self.bytes().get(self.at..self.at + 2) == Some(&b"\\u"[..])
            && let Some(low @ 0xDC00..0xE000) = self.hex_at(self.at + 2)
        {
            self.at += 6;
            return char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00));
        }
        char::from_u32(unit).or(self.lenient.then_some('\u{FFFD}'))
    }

    /// The four hex digits at `at`, as a number.
    fn hex_at(&self, at: usize) -> Option<u32> {
        let digits = self.bytes().get(at..at + 4)?;
        digits.iter().try_fold(0, |n, &d| Some(n * 16 + char::from(d).to_digit(16)?))
    }

    /// Skips one value of any kind, leniently: what an answer's reader
    /// steps over. Nesting is counted, not recursed into, so no body can
    /// exhaust the stack.
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

    /// One value of any kind, read whole into a [`Json`], an object's
    /// members in order, repeated names included.
    fn value(&mut self, depth: usize) -> Option<Json> {
        Some(match self.next_token()? {
            b'[' | b'{' if depth >= MAX_NESTING => return None,
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
        (matches!(word, "true" | "false" | "null") || is_number(word.as_bytes())).then_some(word)
    }

    /// An object's members (at its `{`), each value canonical, sorted by
    /// name; `None` when a name is given twice, a member left out or not.
    fn members(&mut self, depth: usize, ignore: &[&[String]]) -> Option<Vec<(String, String)>> {
        self.eat(b'{')?;
        // Each member, with no value when it is left out.
        let mut members: Vec<(String, Option<String>)> = Vec::new();
        while self.next_token()? != b'}' {
            if !members.is_empty() {
                self.eat(b',')?;
            }
            let name = self.string()?;
            self.eat(b':')?;
            let inner = within(ignore, &name);
            let mut value = String::new();
            self.canonical(&mut value, depth + 1, &inner)?;
            let left_out = inner.iter().any(|rest| rest.is_empty());
            members.push((name, (!left_out).then_some(value)));
        }
        self.bump();
        // Sorted, a repeated name is next to itself (no scan per member).
        heap_sort_by(&mut members, |(a, _), (b, _)| a.cmp(b));
        if members.windows(2).any(|pair| pair[0].0 == pair[1].0) {
            return None;
        }
        Some(members.into_iter().filter_map(|(name, value)| Some((name, value?))).collect())
    }

    /// One value, written canonically to `out`.
    /// `ignore`: what is left out below this value, each pointer's tokens
    /// from here on (an empty one would be this value itself, which the
    /// caller leaves out).
    fn canonical(&mut self, out: &mut String, depth: usize, ignore: &[&[String]]) -> Option<()> {
        match self.next_token()? {
            b'[' | b'{' if depth >= MAX_NESTING => return None,
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

/// Whether `word` is a JSON number (RFC 8259 §6: a minus sign, an integer
/// part with no leading zero, a fraction, an exponent) that a double
/// holds: serde_json refuses one that overflows.
fn is_number(word: &[u8]) -> bool {
    let digits = |at: usize| word.get(at..).unwrap_or_default().iter().take_while(|d| d.is_ascii_digit()).count();
    let start = usize::from(word.first() == Some(&b'-'));
    let integer = start..start + digits(start);
    if integer.is_empty() || (integer.len() > 1 && word[start] == b'0') {
        return false;
    }
    let mut at = integer.end;
    let mut fraction = at..at;
    if word.get(at) == Some(&b'.') {
        fraction = at + 1..at + 1 + digits(at + 1);
        if fraction.is_empty() {
            return false;
        }
        at = fraction.end;
    }
    let mut exponent = 0i64;
    if matches!(word.get(at), Some(b'e' | b'E')) {
        let negative = word.get(at + 1) == Some(&b'-');
        at += 1 + usize::from(matches!(word.get(at + 1), Some(b'+' | b'-')));
        let written = at..at + digits(at);
        if written.is_empty() {
            return false;
        }
        at = written.end;
        // Past 2^32 an exponent says all it can.
        let size = word[written].iter().fold(0i64, |e, d| (e * 10 + i64::from(d - b'0')).min(1 << 32));
        exponent = if negative { -size } else { size };
    }
    at == word.len() && finite(&word[integer], &word[fraction], exponent)
}

/// Whether the number `integer`.`fraction` × 10^`exponent` (digits) is at
/// most the largest double, 0.17976931348623157 × 10^309, read digit by
/// digit: serde_json refuses one beyond it (within a last place of it,
/// where serde_json's reading of a double rounds, the two may differ).
fn finite(integer: &[u8], fraction: &[u8], exponent: i64) -> bool {
    const LARGEST: &[u8] = b"17976931348623157";
    let digits = || integer.iter().chain(fraction);
    let zeros = digits().take_while(|&&d| d == b'0').count();
    if zeros == integer.len() + fraction.len() {
        return true;
    }
    // The number is 0.d… × 10^scale, d its first digit other than 0.
    let scale = integer.len() as i64 - zeros as i64 + exponent;
    match scale.cmp(&309) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => digits().skip(zeros).le(LARGEST.iter().chain(std::iter::repeat(&b'0'))),
    }
}

/// Sorts `items` by `order` (items that compare equal end in either order) in
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
    use serde_json::Value;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    /// A [`Json`] as serde_json's value.
    fn serde(value: &Json) -> Value {
        match value {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::from(*b),
            Json::Number(n) => serde_json::from_str(n).unwrap(),
            Json::String(s) => Value::from(s.as_str()),
            Json::Array(items) => Value::Array(items.iter().map(serde).collect()),
            Json::Object(members) => Value::Object(members.iter().map(|(name, v)| (name.clone(), serde(v))).collect()),
        }
    }

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
        let text = r#" { "b": [1, "x\u0041\n"], "a": {"d": null, "c": true}, "e": -1.50e3 } "#;
        assert_eq!(canonical(text).unwrap(), r#"{"a":{"c":true,"d":null},"b":[1,"xA\n"],"e":-1.50e3}"#);
        assert_eq!(canonical(r#""x\u0041\n""#).unwrap(), r#""xA\n""#);
        for bad in ["", "{", "[1,]x", "{} {}", "nul", "{\"a\" 1}", "[1 2]", "'a'"] {
            assert_eq!(canonical(bad), None, "{bad}");
        }
        assert_eq!(canonical(&"[".repeat(200)), None, "too deep");
    }

    /// Texts that are not plain JSON, and why: each is "not JSON" to every
    /// strict entry point. serde_json refuses each too, but a repeated name.
    const NOT_JSON: &[(&str, &str)] = &[
        (r#""a\qb""#, "an unknown escape"),
        (r#"{"to":"a\qb"}"#, "an unknown escape in a member"),
        (r#""\x41""#, "an unknown escape"),
        (r#""\'""#, "an unknown escape"),
        (r#""\U0041""#, "an unknown escape (upper-case U)"),
        (r#""\""#, "an escape at the end"),
        (r#""\u12""#, "a short \\u escape"),
        (r#""\u12G4""#, "a \\u escape that is not hex"),
        (r#"{"to":"\uD800\u0041"}"#, "a high surrogate before an escape that is no low one"),
        (r#""\uD800""#, "a high surrogate at the end of a string"),
        (r#""\uD800x""#, "a high surrogate before a character"),
        (r#""\uD800\n""#, "a high surrogate before another escape"),
        (r#""\uDBFF\uDBFF""#, "two high surrogates"),
        (r#""\uDC00""#, "a lone low surrogate"),
        (r#""x\uDFFFy""#, "a lone low surrogate inside"),
        (r#""\uDE00\uD83D""#, "a pair the wrong way round"),
        ("\"a\tb\"", "a raw tab in a string"),
        ("\"a\nb\"", "a raw line feed in a string"),
        ("\"\u{0}\"", "a raw NUL in a string"),
        ("\"\u{1f}\"", "a raw control character in a string"),
        (r#"{"amount":100,"amount":1}"#, "a repeated name"),
        (r#"{"a":1,"b":2,"a":1}"#, "a repeated name, not next to itself"),
        (r#"{"":1,"":1}"#, "a repeated empty name"),
        (r#"{"a\u0062":1,"ab":2}"#, "a name repeated once unescaped"),
        (r#"[{"a":1},{"b":[{"c":1,"c":1}]}]"#, "a repeated name deep inside"),
        (r#"{"ts":1,"ts":1,"a":[]}"#, "a repeated name, even one left out"),
        ("[1,]", "a trailing comma in an array"),
        (r#"{"a":1,}"#, "a trailing comma in an object"),
        ("[,1]", "a leading comma"),
        ("[1,,2]", "two commas"),
        ("{,}", "a comma alone"),
        ("{'a':1}", "single quotes"),
        ("{a:1}", "a bare name"),
        ("01", "a leading zero"),
        ("-01", "a leading zero after a minus"),
        ("-", "a minus alone"),
        ("1.", "a point with no fraction"),
        (".5", "a fraction with no integer"),
        ("1e", "an exponent with no digits"),
        ("1e+", "a signed exponent with no digits"),
        ("+1", "a plus sign"),
        ("--1", "two minus signs"),
        ("1.5.2", "two points"),
        ("1e5e5", "two exponents"),
        ("0x10", "hex"),
        ("NaN", "NaN"),
        ("Infinity", "infinity"),
        ("-Infinity", "minus infinity"),
        ("1e309", "a number past the largest double"),
        ("2e308", "a number past the largest double"),
        ("-1.8e308", "a negative number past the largest double"),
        ("1.7976931348623159e308", "a number a place past the largest double"),
        ("0.1e310", "a number past the largest double, written small"),
        ("1e99999999999999999999", "an exponent past any integer"),
        ("\u{c}1", "a form feed as white space"),
        ("\u{a0}1", "a no-break space as white space"),
        ("\u{feff}1", "a byte order mark"),
        ("tru", "a cut literal"),
        ("True", "a literal in capitals"),
        ("nulll", "a literal run on"),
        ("1 2", "two values"),
        ("", "nothing"),
        (" ", "white space alone"),
    ];

    #[test]
    fn what_is_not_plain_json_is_not_json() {
        let ts: JsonPointer = "/ts".parse().unwrap();
        for (text, why) in NOT_JSON {
            let repeated = why.contains("repeated");
            assert_eq!(Json::parse(text), None, "{why}: {text}");
            assert_eq!(canonical(text), None, "{why}: {text}");
            assert_eq!(canonical_without(text, &[&ts]), None, "{why}: {text}");
            assert_eq!(canonical_members(text), None, "{why}: {text}");
            // serde_json takes the last of a repeated name; everything else
            // here it refuses too.
            assert_eq!(serde_json::from_str::<Value>(text).is_ok(), repeated, "serde_json, {why}: {text}");
            assert_eq!(Json::parse_keeping_repeats(text).is_some(), repeated, "{why}: {text}");
        }
        let digits = format!("1{}", "0".repeat(309));
        assert_eq!(Json::parse(&digits), None, "an integer of 310 digits");
        assert!(serde_json::from_str::<Value>(&digits).is_err());
    }

    #[test]
    fn plain_json_still_reads_as_serde_json_reads_it() {
        // (text, its canonical form)
        let rows = [
            (r#""\uD83D\uDE00""#, "\"\u{1F600}\""),
            (r#""\ud83d\ude00""#, "\"\u{1F600}\""),
            (r#""\uDBFF\uDFFF""#, "\"\u{10FFFF}\""),
            (r#""\" \\ \/ \b \f \n \r \t""#, r#""\" \\ / \b \f \n \r \t""#),
            (r#""\u0041\u00e9\u20AC\uFFFF\uE000""#, "\"A\u{e9}\u{20ac}\u{ffff}\u{e000}\""),
            (r#""\u0000\u001f""#, r#""\u0000\u001f""#),
            ("\"\u{7f}é😀\"", "\"\u{7f}é😀\""),
            (" \t\n\r[1]\r\n", "[1]"),
            ("0", "0"),
            ("-0", "-0"),
            ("-1.50e3", "-1.50e3"),
            ("1E5", "1E5"),
            ("1e+5", "1e+5"),
            ("1e-5", "1e-5"),
            ("0.0e0", "0.0e0"),
            ("1e308", "1e308"),
            ("-1.7976931348623157e308", "-1.7976931348623157e308"),
            ("179769313486231570e291", "179769313486231570e291"),
            ("1e-400", "1e-400"),
            ("0e99999999999999999999", "0e99999999999999999999"),
            ("123456789012345678901234567890", "123456789012345678901234567890"),
            (r#"{"a":{"a":1},"b":[{"a":1},{"a":2}]}"#, r#"{"a":{"a":1},"b":[{"a":1},{"a":2}]}"#),
            (r#"{"a":1,"A":2,"a ":3}"#, r#"{"A":2,"a":1,"a ":3}"#),
            ("[true,false,null,{},[],\"\"]", "[true,false,null,{},[],\"\"]"),
        ];
        for (text, want) in rows {
            assert_eq!(canonical(text).as_deref(), Some(want), "{text}");
            let value = Json::parse(text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(Some(serde(&value)), serde_json::from_str::<Value>(text).ok(), "{text}");
        }
        assert_eq!(
            canonical_members(r#"{"b":1,"a":"\uD83D\uDE00"}"#).unwrap(),
            [("a".to_owned(), "\"\u{1F600}\"".to_owned()), ("b".to_owned(), "1".to_owned())]
        );
    }

    #[test]
    fn nesting_ends_where_serde_jsons_does() {
        for (open, close) in [("[", "]"), (r#"{"a":"#, "}")] {
            for deep in [126, 127, 128, 200] {
                let text = format!("{}1{}", open.repeat(deep), close.repeat(deep));
                let serde_reads = serde_json::from_str::<Value>(&text).is_ok();
                assert_eq!(serde_reads, deep <= MAX_NESTING, "serde_json, {deep} deep");
                assert_eq!(Json::parse(&text).is_some(), serde_reads, "{deep} deep");
                assert_eq!(canonical(&text).is_some(), serde_reads, "{deep} deep");
            }
        }
    }

    #[test]
    fn a_lenient_reader_reads_what_a_strict_one_refuses_in_a_string() {
        // (string, as a lenient reader reads it)
        let rows = [
            (r#""a\qb""#, "aqb"),
            (r#""\uD800\u0041""#, "\u{FFFD}A"),
            (r#""\uD800""#, "\u{FFFD}"),
            (r#""\uDC00x""#, "\u{FFFD}x"),
            ("\"a\tb\"", "a\tb"),
            (r#""\uD83D\uDE00""#, "\u{1F600}"),
        ];
        for (text, want) in rows {
            assert_eq!(Reader::lenient(text).string().as_deref(), Some(want), "{text}");
            let strict = Reader::new(text).string();
            assert_eq!(strict.is_some(), want == "\u{1F600}", "{text}");
        }
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
        assert_eq!(canonical_without(r#"{"a":1,"ts":"\q"}"#, &ts), None, "a value left out must still be JSON");
        assert_eq!(canonical_without(r#"{"ts":1,"ts":2,"a":[]}"#, &ts), None, "its name given once");
        assert_eq!(canonical_without("[1, 2]", &ts).as_deref(), Some("[1,2]"));
    }

    #[test]
    fn a_value_reads_whole_and_its_pointers_find_members() {
        let value = Json::parse(r#" {"id": "evt_1", "n": -1.5e3, "ok": true, "a": [null, {"b~/": "x"}]} "#).unwrap();
        let at = |p: &str| value.pointer(&p.parse().unwrap()).cloned();
        assert_eq!(at("/id"), Some(Json::String("evt_1".into())));
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

    #[test]
    fn a_reader_that_names_a_repeated_member_gets_each_in_order() {
        let text = r#"[{"id": "evt_1", "n": 1, "id": "evt_2"}]"#;
        assert_eq!(Json::parse(text), None);
        let Some(Json::Array(items)) = Json::parse_keeping_repeats(text) else { panic!("{text}") };
        let Json::Object(members) = &items[0] else { panic!("{text}") };
        let names: Vec<&str> = members.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["id", "n", "id"]);
        assert_eq!(items[0].member("id"), Some(&Json::String("evt_2".into())), "the last of a repeated name");
        assert_eq!(Json::parse_keeping_repeats(r#"[{"a":"\q","a":1}]"#), None, "strict in every other way");
    }

    #[cfg(not(target_arch = "wasm32"))]
    mod props {
        use super::super::{Json, canonical};
        use super::serde;
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

        /// JSON texts, numbers with fractions and exponents among their
        /// values, with a few characters replaced by a piece that is often
        /// what makes a text not JSON.
        fn near_json() -> impl Strategy<Value = String> {
            let leaf =
                prop_oneof![json(), any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),];
            let value =
                leaf.prop_recursive(3, 16, 4, |inner| proptest::collection::vec(inner, 0..4).prop_map(Value::from));
            let piece = proptest::sample::select(vec![
                "",
                ",",
                "\\",
                "\\u",
                "\\uD800",
                "\\uDC00",
                "\\uD83D\\uDE00",
                "\\ud83d",
                "\\q",
                "\\/",
                "\\n",
                "\"",
                "0",
                "00",
                "-",
                ".",
                "e",
                "E+",
                "1e400",
                "1e308",
                "\u{1}",
                "\t",
                "\u{c}",
                " ",
                "[",
                "]",
                "{",
                "}",
                ":",
                "\"a\":1,",
                "true",
                "nul",
            ]);
            (value, any::<bool>(), any::<proptest::sample::Index>(), 0..3usize, piece).prop_map(
                |(value, pretty, at, len, piece)| {
                    let text =
                        if pretty { serde_json::to_string_pretty(&value) } else { serde_json::to_string(&value) };
                    let text = text.unwrap();
                    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
                    let from = at.index(bounds.len());
                    let to = bounds[(from + len).min(bounds.len() - 1)];
                    format!("{}{piece}{}", &text[..bounds[from]], &text[to..])
                },
            )
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
                prop_assert_eq!(Json::parse_keeping_repeats(&text).is_some(), serde_json::from_str::<Value>(&text).is_ok());
            }

            #[test]
            fn prop_strictness_is_serde_jsons_but_for_repeated_names(text in near_json()) {
                let theirs = serde_json::from_str::<Value>(&text).ok();
                let kept = Json::parse_keeping_repeats(&text);
                prop_assert_eq!(kept.is_some(), theirs.is_some(), "serde_json reads it: {}", theirs.is_some());
                let strict = Json::parse(&text);
                prop_assert_eq!(strict.is_some(), kept.is_some_and(|v| !v.repeats_a_name()));
                prop_assert_eq!(canonical(&text).is_some(), strict.is_some());
                if let Some(value) = strict {
                    prop_assert_eq!(Some(serde(&value)), theirs);
                }
            }

            #[test]
            fn prop_a_value_reads_as_serde_json_reads_it(value in json(), pretty in any::<bool>()) {
                let text = if pretty { serde_json::to_string_pretty(&value).unwrap() } else { serde_json::to_string(&value).unwrap() };
                prop_assert_eq!(Json::parse(&text).map(|v| serde(&v)), Some(value));
            }
        }
    }
}
