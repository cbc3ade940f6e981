//! JSON objects written member by member, for the layer's own documents
//! (the log line, problem bodies): their members are known, so nothing is
//! built as a `serde_json::Value` first — a map, its sorting and its
//! serializer are a large part of a small wasm. Strings are escaped by
//! `serde_json`.

/// A JSON object being written; members come out in the order given.
///
/// ```
/// use oncekey::core::JsonObject;
/// let json = JsonObject::new().string("a", "x\"y").number("b", Some(2)).number("c", None).end();
/// assert_eq!(json, r#"{"a":"x\"y","b":2,"c":null}"#);
/// ```
#[derive(Debug)]
pub struct JsonObject(String);

impl JsonObject {
    /// An object with no member yet.
    pub fn new() -> Self {
        Self(String::from("{"))
    }

    /// A member whose value is written as given (already JSON).
    fn member(mut self, name: &str, value: &str) -> Self {
        if self.0.len() > 1 {
            self.0.push(',');
        }
        self.0.push('"');
        self.0.push_str(name);
        self.0.push_str("\":");
        self.0.push_str(value);
        self
    }

    /// A string member.
    pub fn string(self, name: &str, value: &str) -> Self {
        let quoted = serde_json::to_string(value).unwrap_or_default();
        self.member(name, &quoted)
    }

    /// A string member, or `null`.
    pub fn string_or_null(self, name: &str, value: Option<&str>) -> Self {
        match value {
            Some(value) => self.string(name, value),
            None => self.member(name, "null"),
        }
    }

    /// A `true` or `false` member.
    pub fn boolean(self, name: &str, value: bool) -> Self {
        self.member(name, if value { "true" } else { "false" })
    }

    /// A whole-number member, or `null`.
    pub fn number(self, name: &str, value: Option<u64>) -> Self {
        match value {
            Some(value) => self.member(name, &value.to_string()),
            None => self.member(name, "null"),
        }
    }

    /// A member that is an object.
    pub fn object(self, name: &str, value: JsonObject) -> Self {
        self.member(name, &value.end())
    }

    /// The object's text.
    pub fn end(mut self) -> String {
        self.0.push('}');
        self.0
    }
}

impl Default for JsonObject {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn members_are_valid_json_whatever_the_strings_hold() {
        let text = "quote \" backslash \\ newline \n nul \u{0} é 🦀";
        let json = JsonObject::new()
            .string("s", text)
            .string_or_null("n", None)
            .number("u", Some(u64::MAX))
            .object("o", JsonObject::new().string("k", "v"))
            .end();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["s"], text);
        assert!(value["n"].is_null());
        assert_eq!(value["u"], u64::MAX);
        assert_eq!(value["o"]["k"], "v");
        assert_eq!(JsonObject::new().end(), "{}");
    }
}
