//! Configuration (SPEC §6): wrangler `[vars]` parsed once into typed values.
//!
//! A bad value is an error naming the variable, answered as 500
//! `misconfigured`; it is never replaced by a default.

use crate::core::config::log_sample::LogSample;
use crate::core::config::origin::OriginUrl;
use crate::core::config::policy::Policy;
use crate::core::config::seal_keys::{SEAL_KEYS, SealKeys};
use crate::core::request::admin::AdminToken;
use crate::core::request::paths::{KeyRule, PathPattern};
use crate::core::request::scope::ScopeSource;
use crate::core::request::target::CanonicalPath;

/// Where records live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consistency {
    /// The Durable Object decides atomically; KV only holds replay copies.
    Durable,
    /// Replay only, from KV: no in-flight reservation, so two concurrent
    /// duplicates can both run (SPEC §4).
    Kv,
}

/// How completed answers are copied to Workers KV and read back
/// (`IDEMPOTENCY_KV_REPLAY`, SPEC §4), with the Durable Object deciding.
/// A copy is only ever trusted to say "here is the answer"
/// ([`replay_from_copy`](crate::core::replay_from_copy)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvReplayMode {
    /// `fallback`: copies are written after the object commits an answer;
    /// KV is read only when the object fails or does not answer in time.
    Fallback,
    /// `read-first`: as `fallback`, and KV is also read before the object
    /// (for keyed traffic that is mostly retries from many regions).
    ReadFirst,
    /// `off`: no copies, no reads.
    Off,
}

impl KvReplayMode {
    /// Whether completed answers are copied to KV.
    pub fn writes_copies(self) -> bool {
        self != Self::Off
    }

    /// Whether KV is read before the object is asked.
    pub fn reads_first(self) -> bool {
        self == Self::ReadFirst
    }

    /// Whether a KV copy may answer when the object fails or times out.
    pub fn falls_back(self) -> bool {
        self != Self::Off
    }
}

/// The validated configuration of the layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `ORIGIN_URL`: the proxy's origin, unless a service binding takes
    /// precedence ([`Origin::choose`](crate::core::Origin::choose)); unused by a
    /// layer that wraps its own handler.
    pub origin_url: Option<OriginUrl>,
    /// What a request no route matches is held to: lease, TTL and release
    /// set, time limits, whether a key is required, body limits
    /// (`IDEMPOTENCY_LEASE_SECONDS` and the rest of [`POLICY_OPTIONS`]'s
    /// variables). A route's [`Policy`] replaces it for the route's
    /// requests; each request is held to one, resolved once.
    ///
    /// [`POLICY_OPTIONS`]: crate::core::POLICY_OPTIONS
    pub policy: Policy,
    /// `IDEMPOTENCY_METHODS`: covered methods, upper-case.
    pub methods: Vec<String>,
    /// `IDEMPOTENCY_PATHS`: covered paths (never empty).
    pub paths: Vec<PathPattern>,
    /// `IDEMPOTENCY_REQUIRED_PATHS`: paths where a key is required; they
    /// are covered too, listed in `IDEMPOTENCY_PATHS` or not.
    pub required_paths: Vec<PathPattern>,
    /// `IDEMPOTENCY_ROUTES` (SPEC §13): routes with their own policies, key
    /// sources, fingerprint selections or webhook senders, first match
    /// wins ([`Config::route`]). A route's requests are covered whatever
    /// `IDEMPOTENCY_METHODS` and `IDEMPOTENCY_PATHS` say; a request no route
    /// matches follows the variables.
    pub routes: Vec<crate::core::config::routes::Route>,
    /// `IDEMPOTENCY_SCOPE`: where the caller's identity comes from.
    pub scope: Vec<ScopeSource>,
    /// `IDEMPOTENCY_CONSISTENCY`.
    pub consistency: Consistency,
    /// `IDEMPOTENCY_KV_REPLAY`: how completed answers are copied to KV and
    /// read back. `IDEMPOTENCY_CONSISTENCY=kv` uses KV as its store whatever
    /// this says.
    pub kv_replay: KvReplayMode,
    /// `IDEMPOTENCY_KV_COPY=always`: a completed answer's KV copy is written
    /// at completion. Unset (`on-retry`), it is written once the key is
    /// asked for again — its first replay, or a duplicate that waited — so
    /// a key never retried costs no KV write (SPEC §4).
    pub kv_copy_always: bool,
    /// `IDEMPOTENCY_FAIL_OPEN`: forward unprotected when the store fails.
    pub fail_open: bool,
    /// `IDEMPOTENCY_CORS_ORIGINS`: allowed cross-origin callers (`*` allowed).
    pub cors_origins: Vec<String>,
    /// `IDEMPOTENCY_CORS_CREDENTIALS`: allowed callers may send credentials
    /// (cookies): the layer's CORS answers carry
    /// `Access-Control-Allow-Credentials: true`, always with the caller's
    /// own origin, never a wildcard.
    pub cors_credentials: bool,
    /// `IDEMPOTENCY_FORMS=inject`: HTML answers' post forms get a hidden
    /// `idempotency_key` field, and a form post with no header takes its
    /// key from it (SPEC §8, [`page_form_keys`](crate::core::page_form_keys)).
    pub inject_forms: bool,
    /// `IDEMPOTENCY_ADMIN_TOKEN` (a secret): the bearer token of the admin
    /// paths (SPEC §12). Unset or empty, there are none: those paths go to
    /// the origin like any other.
    pub admin_token: Option<AdminToken>,
    /// `IDEMPOTENCY_SEAL_KEYS` (a secret): the keys stored answers are
    /// sealed with at rest (SPEC §4); none, sealing is off.
    pub seal_keys: SealKeys,
    /// `IDEMPOTENCY_LOG_SAMPLE` (SPEC §5): the share of routine decisions
    /// (a first execution whose answer was stored, a replay) whose line is
    /// logged; every other decision's always is.
    pub log_sample: LogSample,
}

/// A configuration variable with a bad value: its name and the rule the
/// value breaks — never the value itself, which may be an internal URL or
/// a secret, since this text is what every caller of a misconfigured
/// worker reads (SPEC §6).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {reason}")]
pub struct ConfigError {
    /// The variable's name, such as `IDEMPOTENCY_TTL_SECONDS`.
    pub variable: &'static str,
    /// The rule its value breaks, without the value.
    pub reason: String,
}

/// Every variable [`Config::from_vars`] reads.
pub const VARIABLES: [&str; 25] = [
    "ORIGIN_URL",
    "IDEMPOTENCY_TTL_SECONDS",
    "IDEMPOTENCY_LEASE_SECONDS",
    "IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS",
    "IDEMPOTENCY_IN_FLIGHT_WAIT_MS",
    "IDEMPOTENCY_METHODS",
    "IDEMPOTENCY_PATHS",
    "IDEMPOTENCY_REQUIRED",
    "IDEMPOTENCY_REQUIRED_PATHS",
    "IDEMPOTENCY_ROUTES",
    "IDEMPOTENCY_SCOPE",
    "IDEMPOTENCY_MAX_BODY_BYTES",
    "IDEMPOTENCY_MAX_RESPONSE_BYTES",
    "IDEMPOTENCY_RELEASE_ON",
    "IDEMPOTENCY_CONSISTENCY",
    "IDEMPOTENCY_KV_REPLAY",
    "IDEMPOTENCY_KV_COPY",
    "IDEMPOTENCY_STORE_TIMEOUT_MS",
    "IDEMPOTENCY_FAIL_OPEN",
    "IDEMPOTENCY_CORS_ORIGINS",
    "IDEMPOTENCY_CORS_CREDENTIALS",
    "IDEMPOTENCY_FORMS",
    "IDEMPOTENCY_ADMIN_TOKEN",
    "IDEMPOTENCY_SEAL_KEYS",
    "IDEMPOTENCY_LOG_SAMPLE",
];

/// The first of `names` (a worker's variables and bindings) that looks like
/// one of the layer's variables (`IDEMPOTENCY_…`) but is none of
/// [`VARIABLES`] and none of the layer's `bindings`: a typo, whose value
/// would otherwise be ignored in silence. The reason names it, and the
/// variable it may have meant.
///
/// ```
/// use oncekey::core::unknown_variable;
/// let bindings = ["IDEMPOTENCY_DO", "IDEMPOTENCY_KV"];
/// assert_eq!(unknown_variable(["IDEMPOTENCY_TTL_SECONDS", "IDEMPOTENCY_DO", "ORIGIN"], &bindings), None);
/// let typo = unknown_variable(["IDEMPOTENCY_TTL"], &bindings).unwrap();
/// assert!(typo.contains("IDEMPOTENCY_TTL_SECONDS"), "{typo}");
/// ```
pub fn unknown_variable<'a>(names: impl IntoIterator<Item = &'a str>, bindings: &[&str]) -> Option<String> {
    names.into_iter().find(|name| is_typo(name, bindings)).map(typo_problem)
}

impl Config {
    /// [`unknown_variable`] for a worker with this configuration: besides
    /// the layer's `bindings`, the secrets its webhook routes read
    /// ([`Config::secret_names`]) are the worker's own, never a typo, even
    /// when they start with `IDEMPOTENCY_`. Every host checks a worker's
    /// `env` through this, the queue consumer's too.
    ///
    /// ```
    /// use oncekey::core::Config;
    /// let routes = r#"[{"match": "POST /hooks/github", "webhook": "github", "secret": "IDEMPOTENCY_GITHUB"}]"#;
    /// let config = Config::from_vars(|n| (n == "IDEMPOTENCY_ROUTES").then(|| routes.to_string())).unwrap();
    /// assert_eq!(config.unknown_variable(["IDEMPOTENCY_GITHUB", "IDEMPOTENCY_DO"], &["IDEMPOTENCY_DO"]), None);
    /// assert!(Config::default().unknown_variable(["IDEMPOTENCY_GITHUB"], &[]).is_some());
    /// ```
    pub fn unknown_variable<'a>(&self, names: impl IntoIterator<Item = &'a str>, bindings: &[&str]) -> Option<String> {
        unknown_variable(names, &self.own_names(bindings))
    }

    /// [`unknown_variables`] for a worker with this configuration, as
    /// [`Config::unknown_variable`] reads its names.
    pub fn unknown_variables<'a>(&self, names: impl IntoIterator<Item = &'a str>, bindings: &[&str]) -> Vec<String> {
        unknown_variables(names, &self.own_names(bindings))
    }

    /// `bindings` and the webhook routes' secret names.
    fn own_names<'s>(&'s self, bindings: &[&'s str]) -> Vec<&'s str> {
        bindings.iter().copied().chain(self.secret_names()).collect()
    }
}

/// Every one of `names` that [`unknown_variable`] would name, in order, each
/// with its reason (for `oncekey check`, which lists every problem).
///
/// ```
/// use oncekey::core::unknown_variables;
/// let typos = unknown_variables(["IDEMPOTENCY_TTL", "IDEMPOTENCY_DO", "IDEMPOTENCY_LEASE"], &["IDEMPOTENCY_DO"]);
/// assert_eq!(typos.len(), 2);
/// assert!(typos[1].starts_with("IDEMPOTENCY_LEASE:"), "{typos:?}");
/// ```
pub fn unknown_variables<'a>(names: impl IntoIterator<Item = &'a str>, bindings: &[&str]) -> Vec<String> {
    names.into_iter().filter(|name| is_typo(name, bindings)).map(typo_problem).collect()
}

/// Whether `name` looks like one of the layer's variables but is none of
/// them and none of its `bindings`.
fn is_typo(name: &str, bindings: &[&str]) -> bool {
    name.starts_with("IDEMPOTENCY_") && !VARIABLES.contains(&name) && !bindings.contains(&name)
}

/// Why `name` is a typo, and the variable it may have meant.
fn typo_problem(name: &str) -> String {
    let meant = VARIABLES.iter().find(|v| v.starts_with(name) || name.starts_with(*v));
    match meant {
        Some(meant) => format!("{name}: not a variable of the layer (did you mean {meant}?)"),
        None => format!("{name}: not a variable of the layer"),
    }
}

/// The largest stored response body: a Durable Object value holds 2 MB.
pub const MAX_RESPONSE_BYTES_LIMIT: usize = 1_572_864;

impl Default for Config {
    /// The defaults of SPEC §6.
    fn default() -> Self {
        // Not `expect`: its message would format the error with `Debug`,
        // pulling `str`'s escaping into the wasm (src/core/text/cut.rs).
        Self::from_vars(|_| None).unwrap_or_else(|_| unreachable!("the defaults are valid"))
    }
}

impl Config {
    /// Reads every variable through `var` (unset is `None`) and validates
    /// them, including the rules that tie two variables together.
    ///
    /// ```
    /// use oncekey::core::Config;
    /// let err = Config::from_vars(|name| (name == "IDEMPOTENCY_TTL_SECONDS").then(|| "ten".to_string()))
    ///     .unwrap_err();
    /// assert_eq!(err.variable, "IDEMPOTENCY_TTL_SECONDS");
    /// ```
    ///
    /// # Errors
    /// The first [`ConfigError`] found, naming its variable.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Self::read(&Vars(&var))
    }

    /// [`Config::from_vars`] behind a `dyn` reader: one copy of the parser
    /// in a wasm build, however many hosts call it.
    fn read(vars: &Vars<'_>) -> Result<Self, ConfigError> {
        let policy = Policy::read(vars)?;
        Ok(Self {
            origin_url: vars.origin_url()?,
            // The policies a route may set too: one reader for both (policy.rs).
            policy: policy.clone(),
            methods: vars.methods()?,
            // Nothing covered would be a silent hole; no required path is a choice.
            paths: vars.paths("IDEMPOTENCY_PATHS", "/*", None)?,
            required_paths: vars.paths("IDEMPOTENCY_REQUIRED_PATHS", "", Some(Vec::new()))?,
            routes: super::routes::read_routes(vars, &policy)?,
            scope: vars.scope()?,
            consistency: match vars.get("IDEMPOTENCY_CONSISTENCY").as_deref() {
                None | Some("durable") => Consistency::Durable,
                Some("kv") => Consistency::Kv,
                Some(other) => return Err(vars.bad("IDEMPOTENCY_CONSISTENCY", other, "`durable` or `kv`")),
            },
            kv_replay: match vars.get("IDEMPOTENCY_KV_REPLAY").as_deref() {
                None | Some("fallback") => KvReplayMode::Fallback,
                Some("read-first") => KvReplayMode::ReadFirst,
                Some("off") => KvReplayMode::Off,
                Some(other) => {
                    return Err(vars.bad("IDEMPOTENCY_KV_REPLAY", other, "`fallback`, `read-first` or `off`"));
                }
            },
            kv_copy_always: match vars.get("IDEMPOTENCY_KV_COPY").as_deref() {
                None | Some("on-retry") => false,
                Some("always") => true,
                Some(other) => return Err(vars.bad("IDEMPOTENCY_KV_COPY", other, "`on-retry` or `always`")),
            },
            fail_open: vars.flag("IDEMPOTENCY_FAIL_OPEN", false)?,
            cors_origins: vars.cors_origins()?,
            cors_credentials: vars.cors_credentials()?,
            inject_forms: match vars.get("IDEMPOTENCY_FORMS").as_deref() {
                None | Some("off") => false,
                Some("inject") => true,
                Some(other) => return Err(vars.bad("IDEMPOTENCY_FORMS", other, "`off` or `inject`")),
            },
            admin_token: vars.admin_token()?,
            seal_keys: SealKeys::parse(&vars.get(SEAL_KEYS).unwrap_or_default())?,
            log_sample: vars.log_sample()?,
        })
    }

    /// Whether this method is in `IDEMPOTENCY_METHODS`. Whether a request
    /// is covered also depends on its path: see [`Config::key_rule`].
    pub fn covers(&self, method: &str) -> bool {
        self.methods.iter().any(|m| m.eq_ignore_ascii_case(method))
    }

    /// What a request with this method and path needs
    /// (SPEC §1). Covered: the method is in `IDEMPOTENCY_METHODS` and the path
    /// matches `IDEMPOTENCY_PATHS` or `IDEMPOTENCY_REQUIRED_PATHS` (a path
    /// that requires a key is protected too). Required: covered, and
    /// `IDEMPOTENCY_REQUIRED` is on or the path matches
    /// `IDEMPOTENCY_REQUIRED_PATHS`.
    ///
    /// ```
    /// use oncekey::core::{CanonicalPath, Config, KeyRule};
    /// let config = Config::from_vars(|name| match name {
    ///     "IDEMPOTENCY_PATHS" => Some("/v1/*".into()),
    ///     "IDEMPOTENCY_REQUIRED_PATHS" => Some("/v1/charges".into()),
    ///     _ => None,
    /// })
    /// .unwrap();
    /// let rule = |method, path| config.key_rule(method, &CanonicalPath::of(path));
    /// assert_eq!(rule("POST", "/v1/charges"), KeyRule::Required);
    /// assert_eq!(rule("POST", "/V1//Charges/"), KeyRule::Required, "any spelling of the path");
    /// assert_eq!(rule("POST", "/v1/refunds"), KeyRule::Optional);
    /// assert_eq!(rule("GET", "/v1/charges"), KeyRule::Uncovered);
    /// assert_eq!(rule("POST", "/health"), KeyRule::Uncovered);
    /// ```
    pub fn key_rule(&self, method: &str, path: &CanonicalPath) -> KeyRule {
        let matched = |patterns: &[PathPattern]| patterns.iter().any(|p| p.matches(path));
        let required_path = matched(&self.required_paths);
        if !self.covers(method) || !(required_path || matched(&self.paths)) {
            KeyRule::Uncovered
        } else if self.policy.required || required_path {
            KeyRule::Required
        } else {
            KeyRule::Optional
        }
    }

    /// Whether a cross-origin caller from `origin` is allowed: one listed
    /// exactly, or with `*` any value that is a serialized origin
    /// ([`is_serialized_origin`](crate::core::is_serialized_origin)).
    pub fn allows_origin(&self, origin: &str) -> bool {
        self.cors_origins.iter().any(|o| o == origin || (o == "*" && crate::core::is_serialized_origin(origin)))
    }
}

/// The raw variables, with one parser per kind of value.
pub(super) struct Vars<'a>(pub(super) &'a dyn Fn(&str) -> Option<String>);

impl Vars<'_> {
    /// A set variable's value, trimmed. An empty value counts as set: an
    /// empty number is an error, not a default.
    pub(super) fn get(&self, name: &str) -> Option<String> {
        (self.0)(name).map(|v| v.trim().to_owned())
    }

    /// A value that is not what `variable` takes; the value is left out
    /// of the reason (SPEC §6: answers never quote it).
    pub(super) fn bad(&self, variable: &'static str, _value: &str, expected: &str) -> ConfigError {
        ConfigError { variable, reason: format!("not {expected}") }
    }

    pub(super) fn int(&self, name: &'static str, default: u64, min: u64, max: u64) -> Result<u64, ConfigError> {
        let Some(raw) = self.get(name) else { return Ok(default) };
        match raw.parse::<u64>() {
            Ok(v) if (min..=max).contains(&v) => Ok(v),
            _ => Err(self.bad(name, &raw, &format!("a whole number from {min} to {max}"))),
        }
    }

    pub(super) fn flag(&self, name: &'static str, default: bool) -> Result<bool, ConfigError> {
        match self.get(name).as_deref() {
            None => Ok(default),
            Some("true") => Ok(true),
            Some("false") => Ok(false),
            Some(other) => Err(self.bad(name, other, "`true` or `false`")),
        }
    }

    fn list(&self, name: &str) -> Vec<String> {
        self.get(name)
            .map(|v| v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// `IDEMPOTENCY_CORS_ORIGINS`: `*`, or origins as a browser sends them
    /// (SPEC §5). An entry no browser's `Origin` could ever equal — a path,
    /// a trailing slash, capitals, a default port — is an error, never a
    /// silent miss.
    fn cors_origins(&self) -> Result<Vec<String>, ConfigError> {
        const NAME: &str = "IDEMPOTENCY_CORS_ORIGINS";
        let origins = self.list(NAME);
        for origin in &origins {
            if let Some(why) = crate::core::request::cors::never_an_origin(origin) {
                let raw = self.get(NAME).unwrap_or_default();
                let reason = entry_reason(&raw, origin, &format!("could never match: {why}"));
                return Err(ConfigError { variable: NAME, reason });
            }
        }
        Ok(origins)
    }

    /// `IDEMPOTENCY_CORS_CREDENTIALS`: only for origins listed by name. With
    /// `*` every website could read every signed-in answer.
    fn cors_credentials(&self) -> Result<bool, ConfigError> {
        const NAME: &str = "IDEMPOTENCY_CORS_CREDENTIALS";
        let credentials = self.flag(NAME, false)?;
        let origins = self.list("IDEMPOTENCY_CORS_ORIGINS");
        let reason = if !credentials {
            return Ok(false);
        } else if origins.is_empty() {
            "allows credentialed calls from no origin: list the sites in IDEMPOTENCY_CORS_ORIGINS"
        } else if origins.iter().any(|o| o == "*") {
            "cannot be true with IDEMPOTENCY_CORS_ORIGINS=*: every website could then read every signed-in \
             answer; list the sites allowed by name"
        } else {
            return Ok(true);
        };
        Err(ConfigError { variable: NAME, reason: reason.into() })
    }

    pub(super) fn statuses(&self, name: &'static str, default: &str) -> Result<Vec<u16>, ConfigError> {
        let raw = self.get(name).unwrap_or_else(|| default.to_owned());
        raw.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| match (s.parse::<u16>(), status_class(s)) {
                (Ok(code), _) if (100..=599).contains(&code) => Ok(code),
                (_, Some(class)) => Ok(class),
                _ => Err(self.bad(name, s, "an HTTP status from 100 to 599, or a class from 1xx to 5xx")),
            })
            .collect()
    }

    /// `IDEMPOTENCY_LOG_SAMPLE` ([`LogSample::parse`]).
    fn log_sample(&self) -> Result<LogSample, ConfigError> {
        const NAME: &str = "IDEMPOTENCY_LOG_SAMPLE";
        match self.get(NAME) {
            None => Ok(LogSample::default()),
            Some(raw) => LogSample::parse(&raw).ok_or_else(|| self.bad(NAME, &raw, LogSample::RULE)),
        }
    }

    /// `IDEMPOTENCY_METHODS` ([`method_list`]).
    fn methods(&self) -> Result<Vec<String>, ConfigError> {
        const NAME: &str = "IDEMPOTENCY_METHODS";
        let raw = self.get(NAME).unwrap_or_else(|| "POST,PATCH".to_owned());
        method_list(&raw).ok_or_else(|| self.bad(NAME, &raw, METHODS_RULE))
    }

    /// A list of path patterns; an empty value is `when_empty` (an error
    /// when `None`).
    fn paths(
        &self,
        name: &'static str,
        default: &str,
        when_empty: Option<Vec<PathPattern>>,
    ) -> Result<Vec<PathPattern>, ConfigError> {
        let raw = self.get(name).unwrap_or_else(|| default.to_owned());
        match when_empty {
            _ if !raw.is_empty() => PathPattern::parse_list(&raw)
                .map_err(|e| ConfigError { variable: name, reason: entry_reason(&raw, &e.pattern, e.reason) }),
            Some(patterns) => Ok(patterns),
            None => Err(ConfigError {
                variable: name,
                reason: "is empty and covers no path: list at least one (`/*` is every path)".into(),
            }),
        }
    }

    fn scope(&self) -> Result<Vec<ScopeSource>, ConfigError> {
        const NAME: &str = "IDEMPOTENCY_SCOPE";
        let raw = self.get(NAME).unwrap_or_else(|| "header:authorization".to_owned());
        if raw.is_empty() {
            // An empty scope means "everyone is anonymous": allowed, but explicit.
            return Ok(Vec::new());
        }
        raw.split(',')
            .map(|entry| {
                entry.parse().map_err(|e: crate::core::request::scope::ScopeSourceError| ConfigError {
                    variable: NAME,
                    reason: entry_reason(&raw, e.0.trim(), "is not `header:<name>` or `cookie:<name>`"),
                })
            })
            .collect()
    }

    /// The admin token: never echoed in an error, which is logged and
    /// answered.
    fn admin_token(&self) -> Result<Option<AdminToken>, ConfigError> {
        const NAME: &str = "IDEMPOTENCY_ADMIN_TOKEN";
        match self.get(NAME) {
            None => Ok(None),
            Some(token) if token.is_empty() => Ok(None),
            Some(token) => AdminToken::new(&token).map(Some).ok_or(ConfigError {
                variable: NAME,
                reason: "the token must be visible ASCII with no spaces (its value is not shown)".into(),
            }),
        }
    }

    fn origin_url(&self) -> Result<Option<OriginUrl>, ConfigError> {
        const NAME: &str = "ORIGIN_URL";
        match self.get(NAME) {
            None => Ok(None),
            Some(url) if url.is_empty() => Ok(None),
            Some(url) if url == "request" => Ok(Some(OriginUrl::Request)),
            Some(url) => {
                let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
                match rest {
                    Some(host) if !host.is_empty() && !host.starts_with('/') && !url.contains(char::is_whitespace) => {
                        Ok(Some(OriginUrl::Fixed(url.trim_end_matches('/').to_owned())))
                    }
                    _ => Err(self.bad(NAME, &url, "an http:// or https:// URL, or `request`")),
                }
            }
        }
    }
}

/// What a list of methods must be (`IDEMPOTENCY_METHODS`, a route's
/// `match`).
pub(super) const METHODS_RULE: &str = "a comma-separated list of HTTP methods: GET, HEAD, POST, PUT, DELETE, \
                                       CONNECT, OPTIONS, TRACE or PATCH";

/// A comma-separated list of methods, each trimmed and upper-cased; `None`
/// when one is not among [`METHODS_RULE`]'s (an empty entry included).
///
/// Only the methods of RFC 9110 §9 and PATCH: an extension method such as
/// `PROPFIND` would be accepted and then never matched, because the Workers
/// runtime binding reads methods it does not know as `GET`.
pub(super) fn method_list(list: &str) -> Option<Vec<String>> {
    const KNOWN: [&str; 9] = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"];
    let methods: Vec<String> = list.split(',').map(str::trim).map(str::to_ascii_uppercase).collect();
    methods.iter().all(|m| KNOWN.contains(&m.as_str())).then_some(methods)
}

/// Why one entry of a comma-separated list is refused, naming the entry by
/// its place rather than quoting it: "entry 2 of 3 is empty".
fn entry_reason(list: &str, entry: &str, why: &str) -> String {
    let entries: Vec<&str> = list.split(',').map(str::trim).collect();
    match entries.iter().position(|e| *e == entry) {
        Some(_) if entries.len() == 1 => format!("the entry {why}"),
        Some(i) => format!("entry {} of {} {why}", i + 1, entries.len()),
        None => format!("an entry {why}"),
    }
}

/// `IDEMPOTENCY_STORE_TIMEOUT_MS` when unset and the lease has room for it.
pub const DEFAULT_STORE_TIMEOUT_MS: u64 = 5000;

/// The origin time limit when `IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS` is unset,
/// with the default store time limit ([`origin_timeout_within`]).
///
/// ```
/// use oncekey::core::default_origin_timeout_ms;
/// assert_eq!(default_origin_timeout_ms(120_000), 100_000);
/// assert_eq!(default_origin_timeout_ms(30_000), 15_000, "a finish with two retries fits after it");
/// assert_eq!(default_origin_timeout_ms(1_000), 500);
/// ```
pub fn default_origin_timeout_ms(lease_ms: u64) -> u64 {
    origin_timeout_within(lease_ms, DEFAULT_STORE_TIMEOUT_MS)
}

/// The origin time limit that leaves the rest of a lease to the attempt's
/// `finish` (SPEC §3): 100 s (Cloudflare's own limit), or less, so that
/// every `finish` try (`store_timeout_ms` each) and the pauses between them
/// ([`FINISH_RETRY_PAUSES_MS`](crate::core::FINISH_RETRY_PAUSES_MS)) fit before
/// the lease ends — but never under half the lease: a short lease gives
/// `finish` the other half, and fewer retries.
pub fn origin_timeout_within(lease_ms: u64, store_timeout_ms: u64) -> u64 {
    lease_ms.saturating_sub(finish_time_ms(store_timeout_ms)).min(100_000).max(lease_ms / 2)
}

/// The longest an attempt's `finish` can take: every try at the store's
/// time limit, and the pauses between them.
///
/// ```
/// assert_eq!(oncekey::core::finish_time_ms(5_000), 15_500);
/// ```
pub fn finish_time_ms(store_timeout_ms: u64) -> u64 {
    let pauses: u64 = crate::core::FINISH_RETRY_PAUSES_MS.iter().sum();
    let tries = crate::core::FINISH_RETRY_PAUSES_MS.len() as u64 + 1;
    tries.saturating_mul(store_timeout_ms).saturating_add(pauses)
}

/// A class of statuses written `4xx` (any case): its first digit, as
/// [`RecordPolicy::releases`](crate::core::RecordPolicy::releases) reads it.
pub(super) fn status_class(text: &str) -> Option<u16> {
    match text.as_bytes() {
        [digit @ b'1'..=b'5', x, y] if x.eq_ignore_ascii_case(&b'x') && y.eq_ignore_ascii_case(&b'x') => {
            Some(u16::from(digit - b'0'))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::record::policy::RecordPolicy;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn with(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_vars(move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    #[test]
    fn variables_lists_exactly_what_is_read() {
        let asked = std::cell::RefCell::new(Vec::new());
        Config::from_vars(|name| {
            asked.borrow_mut().push(name.to_owned());
            None
        })
        .unwrap();
        let mut asked = asked.into_inner();
        asked.sort();
        asked.dedup();
        let mut listed: Vec<String> = VARIABLES.iter().map(|v| v.to_string()).collect();
        listed.sort();
        assert_eq!(asked, listed);
    }

    #[test]
    fn defaults_match_the_spec() {
        let c = Config::default();
        assert_eq!(c.origin_url, None);
        assert_eq!(c.policy.records.ttl_ms, 86_400_000);
        assert_eq!(c.policy.records.lease_ms, 120_000);
        assert_eq!(c.policy.records.release_on, vec![408, 425, 429, 503]);
        assert_eq!(c.policy.in_flight_wait_ms, 10_000);
        assert_eq!(c.policy.origin_timeout_ms, 100_000);
        assert_eq!(c.methods, vec!["POST", "PATCH"]);
        assert_eq!(c.paths, vec!["/*".parse::<PathPattern>().unwrap()]);
        assert!(!c.policy.required);
        assert!(c.required_paths.is_empty());
        assert_eq!(c.scope, vec![ScopeSource::Header("authorization".into())]);
        assert_eq!(c.policy.max_body_bytes, 1_048_576);
        assert_eq!(c.policy.max_response_bytes, 1_048_576);
        assert_eq!(c.consistency, Consistency::Durable);
        assert_eq!(c.kv_replay, KvReplayMode::Fallback);
        assert!(!c.kv_copy_always, "copies on retry");
        assert_eq!(c.policy.store_timeout_ms, 5000);
        assert!(!c.fail_open);
        assert!(c.cors_origins.is_empty());
        assert_eq!(c.admin_token, None);
        assert!(c.covers("post") && c.covers("PATCH") && !c.covers("PUT") && !c.covers("GET"));
        assert_eq!(c.key_rule("POST", &CanonicalPath::of("/any/path")), KeyRule::Optional);
        assert_eq!(c.key_rule("GET", &CanonicalPath::of("/any/path")), KeyRule::Uncovered);
    }

    #[test]
    fn reads_every_variable() {
        let c = with(&[
            ("ORIGIN_URL", "https://api.example.com/"),
            ("IDEMPOTENCY_TTL_SECONDS", "900"),
            ("IDEMPOTENCY_LEASE_SECONDS", "900"),
            ("IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS", "899"),
            ("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "900000"),
            ("IDEMPOTENCY_METHODS", "post, put ,DELETE"),
            ("IDEMPOTENCY_PATHS", " /v1/charges , /v1/payments/* "),
            ("IDEMPOTENCY_REQUIRED", "true"),
            ("IDEMPOTENCY_REQUIRED_PATHS", "/v1/refunds"),
            ("IDEMPOTENCY_SCOPE", "header:X-Api-Key,cookie:session"),
            ("IDEMPOTENCY_MAX_BODY_BYTES", "10"),
            ("IDEMPOTENCY_MAX_RESPONSE_BYTES", "1572864"),
            ("IDEMPOTENCY_RELEASE_ON", "503"),
            ("IDEMPOTENCY_CONSISTENCY", "kv"),
            ("IDEMPOTENCY_KV_REPLAY", "off"),
            ("IDEMPOTENCY_STORE_TIMEOUT_MS", "250"),
            ("IDEMPOTENCY_FAIL_OPEN", "true"),
            ("IDEMPOTENCY_CORS_ORIGINS", "https://a.example, https://b.example"),
            ("IDEMPOTENCY_ADMIN_TOKEN", " s3cret "),
        ])
        .unwrap();
        assert_eq!(c.admin_token, crate::core::AdminToken::new("s3cret"));
        assert_eq!(c.origin_url, Some(OriginUrl::Fixed("https://api.example.com".into())));
        assert_eq!(c.policy.records, RecordPolicy { lease_ms: 900_000, ttl_ms: 900_000, release_on: vec![503] });
        assert_eq!(c.policy.in_flight_wait_ms, 900_000);
        assert_eq!(c.policy.origin_timeout_ms, 899_000);
        assert_eq!(c.methods, vec!["POST", "PUT", "DELETE"]);
        let paths = PathPattern::parse_list("/v1/charges,/v1/payments/*").unwrap();
        assert_eq!(c.paths, paths);
        assert_eq!(c.required_paths, vec!["/v1/refunds".parse::<PathPattern>().unwrap()]);
        assert!(c.policy.required && c.fail_open);
        assert_eq!(c.kv_replay, KvReplayMode::Off);
        assert_eq!(c.scope, vec![ScopeSource::Header("x-api-key".into()), ScopeSource::Cookie("session".into())]);
        assert_eq!((c.policy.max_body_bytes, c.policy.max_response_bytes), (10, 1_572_864));
        assert_eq!(c.consistency, Consistency::Kv);
        assert_eq!(c.policy.store_timeout_ms, 250);
        assert!(c.allows_origin("https://b.example") && !c.allows_origin("https://c.example"));
        let any = with(&[("IDEMPOTENCY_CORS_ORIGINS", "*")]).unwrap();
        assert!(any.allows_origin("https://any.example"));
        assert!(!any.allows_origin("null") && !any.allows_origin("h\u{fffd}\u{fffd}"), "* echoes only origins");
    }

    #[test]
    fn bad_values_name_their_variable() {
        let cases = [
            ("ORIGIN_URL", "ftp://x"),
            ("ORIGIN_URL", "https://"),
            ("IDEMPOTENCY_TTL_SECONDS", "59"),
            ("IDEMPOTENCY_TTL_SECONDS", "119"),
            ("IDEMPOTENCY_TTL_SECONDS", "2592001"),
            ("IDEMPOTENCY_TTL_SECONDS", "1h"),
            ("IDEMPOTENCY_TTL_SECONDS", ""),
            ("IDEMPOTENCY_LEASE_SECONDS", "0"),
            ("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "120001"),
            ("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "10s"),
            ("IDEMPOTENCY_LEASE_SECONDS", "901"),
            ("IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS", "120"),
            ("IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS", "-1"),
            ("IDEMPOTENCY_METHODS", "POST,,PATCH"),
            ("IDEMPOTENCY_METHODS", "PO ST"),
            ("IDEMPOTENCY_METHODS", "POST,PROPFIND"),
            ("IDEMPOTENCY_PATHS", ""),
            ("IDEMPOTENCY_PATHS", " "),
            ("IDEMPOTENCY_PATHS", "/v1/charges,,/v1/refunds"),
            ("IDEMPOTENCY_PATHS", "/v1/charges,"),
            ("IDEMPOTENCY_PATHS", "v1/charges"),
            ("IDEMPOTENCY_PATHS", "*"),
            ("IDEMPOTENCY_PATHS", "/v1/*/charges"),
            ("IDEMPOTENCY_PATHS", "/v1/**"),
            ("IDEMPOTENCY_PATHS", "/v1/charges?x=1"),
            ("IDEMPOTENCY_PATHS", "/v1/charges#top"),
            ("IDEMPOTENCY_PATHS", "/v1/my charges"),
            ("IDEMPOTENCY_PATHS", "/v1/\u{1}"),
            ("IDEMPOTENCY_PATHS", "/café"),
            ("IDEMPOTENCY_REQUIRED_PATHS", "/v1/charges,,/v1/refunds"),
            ("IDEMPOTENCY_REQUIRED_PATHS", ",/v1/charges"),
            ("IDEMPOTENCY_REQUIRED_PATHS", "v1/charges"),
            ("IDEMPOTENCY_REQUIRED_PATHS", "/v1/*/charges"),
            ("IDEMPOTENCY_REQUIRED_PATHS", "/v1/charges?x"),
            ("IDEMPOTENCY_REQUIRED_PATHS", "/v1/charges#x"),
            ("IDEMPOTENCY_REQUIRED_PATHS", "/v1/a b"),
            ("IDEMPOTENCY_REQUIRED_PATHS", "/v1/\tx"),
            ("IDEMPOTENCY_REQUIRED", "yes"),
            ("IDEMPOTENCY_SCOPE", "authorization"),
            ("IDEMPOTENCY_MAX_BODY_BYTES", "lots"),
            ("IDEMPOTENCY_MAX_RESPONSE_BYTES", "1572865"),
            ("IDEMPOTENCY_RELEASE_ON", "503,abc"),
            ("IDEMPOTENCY_RELEASE_ON", "99"),
            ("IDEMPOTENCY_CONSISTENCY", "eventual"),
            ("IDEMPOTENCY_KV_REPLAY", "1"),
            ("IDEMPOTENCY_KV_REPLAY", "true"),
            ("IDEMPOTENCY_KV_REPLAY", "false"),
            ("IDEMPOTENCY_KV_REPLAY", "Fallback"),
            ("IDEMPOTENCY_KV_REPLAY", "read_first"),
            ("IDEMPOTENCY_KV_REPLAY", ""),
            ("IDEMPOTENCY_STORE_TIMEOUT_MS", "0"),
            ("IDEMPOTENCY_FAIL_OPEN", "TRUE "),
            ("IDEMPOTENCY_FORMS", "true"),
            ("IDEMPOTENCY_FORMS", "Inject"),
            ("IDEMPOTENCY_KV_COPY", "on-demand"),
            ("IDEMPOTENCY_KV_COPY", "true"),
            ("IDEMPOTENCY_CORS_ORIGINS", "https://a.example/"),
            ("IDEMPOTENCY_CORS_ORIGINS", "https://a.example, https://B.example"),
            ("IDEMPOTENCY_CORS_ORIGINS", "https://a.example:443"),
            ("IDEMPOTENCY_CORS_ORIGINS", "a.example"),
            ("IDEMPOTENCY_CORS_CREDENTIALS", "true"),
        ];
        for (variable, value) in cases {
            let err = with(&[(variable, value)]).expect_err(&format!("{variable}={value:?} must fail"));
            assert_eq!(err.variable, variable, "{value:?}");
            assert!(err.to_string().starts_with(variable));
            // SPEC §6: what a caller reads never quotes the value.
            for part in value.trim().split(',').map(str::trim).filter(|v| !v.is_empty()) {
                assert!(!err.to_string().contains(&format!("\"{part}\"")), "{variable}={value:?} quoted in {err}");
            }
        }
    }

    #[test]
    fn credentialed_cors_is_only_for_origins_listed_by_name() {
        let err = with(&[("IDEMPOTENCY_CORS_ORIGINS", "*"), ("IDEMPOTENCY_CORS_CREDENTIALS", "true")]).unwrap_err();
        assert_eq!(err.variable, "IDEMPOTENCY_CORS_CREDENTIALS");
        assert!(err.reason.contains("every website"), "{err}");
        let mixed = [("IDEMPOTENCY_CORS_ORIGINS", "https://a.example,*"), ("IDEMPOTENCY_CORS_CREDENTIALS", "true")];
        assert_eq!(with(&mixed).unwrap_err().variable, "IDEMPOTENCY_CORS_CREDENTIALS");
        let none = with(&[("IDEMPOTENCY_CORS_CREDENTIALS", "true")]).unwrap_err();
        assert!(none.reason.contains("no origin"), "{none}");
        let listed = [("IDEMPOTENCY_CORS_ORIGINS", "https://a.example"), ("IDEMPOTENCY_CORS_CREDENTIALS", "true")];
        assert!(with(&listed).unwrap().cors_credentials);
    }

    #[test]
    fn a_bad_entry_is_named_by_its_place() {
        let err = with(&[("IDEMPOTENCY_CORS_ORIGINS", "https://a.example, https://b.example/")]).unwrap_err();
        assert!(err.reason.starts_with("entry 2 of 2 could never match"), "{err}");
        let err = with(&[("IDEMPOTENCY_PATHS", "/v1/a,/v1/*/b")]).unwrap_err();
        assert!(err.reason.starts_with("entry 2 of 2 "), "{err}");
        let err = with(&[("ORIGIN_URL", "ftp://10.1.2.3/internal")]).unwrap_err();
        assert!(!err.to_string().contains("10.1.2.3"), "{err}");
    }

    #[test]
    fn forms_are_off_unless_inject() {
        assert!(!Config::default().inject_forms);
        assert!(!with(&[("IDEMPOTENCY_FORMS", "off")]).unwrap().inject_forms);
        assert!(with(&[("IDEMPOTENCY_FORMS", "inject")]).unwrap().inject_forms);
    }

    #[test]
    fn kv_replay_takes_three_values() {
        // (value, mode, writes copies, reads first, falls back)
        let rows = [
            ("fallback", KvReplayMode::Fallback, true, false, true),
            (" read-first ", KvReplayMode::ReadFirst, true, true, true),
            ("off", KvReplayMode::Off, false, false, false),
        ];
        for (value, mode, writes, first, falls_back) in rows {
            let c = with(&[("IDEMPOTENCY_KV_REPLAY", value)]).unwrap();
            assert_eq!(c.kv_replay, mode, "{value:?}");
            assert_eq!(
                (mode.writes_copies(), mode.reads_first(), mode.falls_back()),
                (writes, first, falls_back),
                "{value:?}"
            );
        }
    }

    #[test]
    fn key_rule_follows_methods_paths_and_requirements() {
        use KeyRule::{Optional, Required, Uncovered};
        let paths = [("IDEMPOTENCY_PATHS", "/v1/charges,/v1/payments/*")];
        let required_paths = [
            ("IDEMPOTENCY_PATHS", "/v1/payments/*"),
            ("IDEMPOTENCY_REQUIRED_PATHS", "/v1/payments/pi_1/capture*,/v2/*"),
        ];
        let everywhere_required = [("IDEMPOTENCY_PATHS", "/v1/charges"), ("IDEMPOTENCY_REQUIRED", "true")];
        let both = [("IDEMPOTENCY_REQUIRED", "true"), ("IDEMPOTENCY_REQUIRED_PATHS", "/v1/charges")];
        let no_required_paths = [("IDEMPOTENCY_REQUIRED_PATHS", "")];
        type Row<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str, KeyRule);
        let rows: Vec<Row> = vec![
            (&[], "POST", "/", Optional),
            (&[], "patch", "/anything", Optional),
            (&[], "PUT", "/anything", Uncovered),
            (&no_required_paths, "POST", "/anything", Optional),
            (&paths, "POST", "/v1/charges", Optional),
            (&paths, "POST", "/v1/charges/ch_1", Uncovered),
            // Every spelling of a path is the path (SPEC §13).
            (&paths, "POST", "/v1/Charges", Optional),
            (&paths, "POST", "/v1//charges/", Optional),
            (&paths, "POST", "/v1/x/../charges", Optional),
            (&paths, "POST", "/v1/payments", Optional),
            (&paths, "POST", "/v1/payments/pi_1", Optional),
            (&paths, "POST", "/v1/paymentsX", Uncovered),
            (&paths, "GET", "/v1/charges", Uncovered),
            (&paths, "POST", "/health", Uncovered),
            (&required_paths, "POST", "/v1/payments/pi_1", Optional),
            (&required_paths, "POST", "/v1/payments/pi_1/capture", Required),
            (&required_paths, "POST", "/v1/payments/pi_1/capture/x", Required),
            // A required path outside IDEMPOTENCY_PATHS is covered too.
            (&required_paths, "POST", "/v2/refunds", Required),
            (&required_paths, "POST", "/v2", Required),
            (&required_paths, "GET", "/v2/refunds", Uncovered),
            (&required_paths, "POST", "/v3/refunds", Uncovered),
            (&everywhere_required, "POST", "/v1/charges", Required),
            (&everywhere_required, "POST", "/v1/refunds", Uncovered),
            (&everywhere_required, "DELETE", "/v1/charges", Uncovered),
            (&both, "POST", "/v1/charges", Required),
            (&both, "POST", "/v1/refunds", Required),
        ];
        for (vars, method, path, rule) in rows {
            let c = with(vars).unwrap();
            assert_eq!(c.key_rule(method, &CanonicalPath::of(path)), rule, "{vars:?} {method} {path}");
        }
    }

    #[test]
    fn origin_url_is_a_url_request_or_unset() {
        assert_eq!(with(&[("ORIGIN_URL", "")]).unwrap().origin_url, None);
        assert_eq!(
            with(&[("ORIGIN_URL", "http://127.0.0.1:9000")]).unwrap().origin_url,
            Some(OriginUrl::Fixed("http://127.0.0.1:9000".into()))
        );
        assert_eq!(with(&[("ORIGIN_URL", " request ")]).unwrap().origin_url, Some(OriginUrl::Request));
        for bad in ["Request", "requests", "127.0.0.1:3000", "//api.example.com"] {
            assert_eq!(with(&[("ORIGIN_URL", bad)]).unwrap_err().variable, "ORIGIN_URL", "{bad}");
        }
    }

    #[test]
    fn a_bad_admin_token_is_named_but_never_shown() {
        assert_eq!(with(&[("IDEMPOTENCY_ADMIN_TOKEN", "")]).unwrap().admin_token, None, "empty is unset");
        let err = with(&[("IDEMPOTENCY_ADMIN_TOKEN", "my secret")]).unwrap_err();
        assert_eq!(err.variable, "IDEMPOTENCY_ADMIN_TOKEN");
        assert!(!err.to_string().contains("secret"), "{err}");
        let config = with(&[("IDEMPOTENCY_ADMIN_TOKEN", "hunter2")]).unwrap();
        assert!(!format!("{config:?}").contains("hunter2"));
    }

    #[test]
    fn the_in_flight_wait_is_at_most_the_lease() {
        assert_eq!(with(&[("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "0")]).unwrap().policy.in_flight_wait_ms, 0);
        let short = with(&[("IDEMPOTENCY_LEASE_SECONDS", "2")]).unwrap();
        assert_eq!(short.policy.in_flight_wait_ms, 2_000, "unset, it follows a lease shorter than 10 s down");
        let err = with(&[("IDEMPOTENCY_LEASE_SECONDS", "2"), ("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "2001")]).unwrap_err();
        assert_eq!(err.variable, "IDEMPOTENCY_IN_FLIGHT_WAIT_MS");
    }

    #[test]
    fn origin_timeout_must_stay_below_the_lease() {
        assert!(with(&[("IDEMPOTENCY_LEASE_SECONDS", "10"), ("IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS", "9")]).is_ok());
        let err =
            with(&[("IDEMPOTENCY_LEASE_SECONDS", "10"), ("IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS", "10")]).unwrap_err();
        assert_eq!(err.variable, "IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS");
        // Unset, the timeout follows a short lease down, leaving the rest to finish.
        assert_eq!(with(&[("IDEMPOTENCY_LEASE_SECONDS", "10")]).unwrap().policy.origin_timeout_ms, 5_000);
        assert_eq!(with(&[("IDEMPOTENCY_LEASE_SECONDS", "1")]).unwrap().policy.origin_timeout_ms, 500);
    }

    #[test]
    fn the_lease_covers_the_origin_call_and_the_finish() {
        let c = with(&[]).unwrap();
        let pauses: u64 = crate::core::FINISH_RETRY_PAUSES_MS.iter().sum();
        assert!(
            c.policy.origin_timeout_ms + 3 * c.policy.store_timeout_ms + pauses <= c.policy.records.lease_ms,
            "defaults: every try fits"
        );
        let derived = with(&[("IDEMPOTENCY_LEASE_SECONDS", "30")]).unwrap();
        assert_eq!((derived.policy.origin_timeout_ms, derived.policy.store_timeout_ms), (15_000, 5_000));
        // An explicit origin limit: the store limit follows down into the room left.
        let tight = with(&[("IDEMPOTENCY_LEASE_SECONDS", "2"), ("IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS", "1")]).unwrap();
        assert_eq!(tight.policy.store_timeout_ms, 1_000);
        let no_room = with(&[
            ("IDEMPOTENCY_LEASE_SECONDS", "30"),
            ("IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS", "29"),
            ("IDEMPOTENCY_STORE_TIMEOUT_MS", "5000"),
        ])
        .unwrap_err();
        assert_eq!(no_room.variable, "IDEMPOTENCY_STORE_TIMEOUT_MS");
        for named in ["IDEMPOTENCY_LEASE_SECONDS", "IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS", "finish"] {
            assert!(no_room.reason.contains(named), "{}", no_room.reason);
        }
        let shorter = with(&[("IDEMPOTENCY_LEASE_SECONDS", "30"), ("IDEMPOTENCY_STORE_TIMEOUT_MS", "1000")]).unwrap();
        assert_eq!(shorter.policy.origin_timeout_ms, 26_500, "a shorter store limit leaves the origin more");
    }
}
