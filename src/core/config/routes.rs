//! `IDEMPOTENCY_ROUTES` (SPEC §13): per-route policies, key sources,
//! fingerprint selections and webhooks, read and checked when the layer is
//! made, first match wins.
//!
//! ```json
//! [
//!   {"match": "POST /v1/payments/*", "ttlSeconds": 86400, "key": ["header:idempotency-key", "json:/request_id"],
//!    "fingerprint": {"ignore": ["/client_ts"]}},
//!   {"match": "POST /hooks/stripe", "webhook": "stripe", "secret": "STRIPE_WEBHOOK_SECRET"}
//! ]
//! ```

use std::fmt;

use crate::core::config::policy::{POLICY_OPTIONS, Policy};
use crate::core::config::variables::{Config, ConfigError, METHODS_RULE, Vars, method_list};
use crate::core::record::policy::RecordPolicy;
use crate::core::request::key_source::KeySource;
use crate::core::request::paths::{KeyRule, PathPattern};
use crate::core::request::target::CanonicalPath;
use crate::core::text::cut::replace_all;
use crate::core::text::json_pointer::JsonPointer;
use crate::core::text::json_read::Json;
use crate::core::webhook::secret::WebhookSecret;
use crate::core::webhook::sender::Sender;

/// The variable routes are read from.
pub const ROUTES: &str = "IDEMPOTENCY_ROUTES";

/// One route: the requests it matches and what they are held to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// Its place in `IDEMPOTENCY_ROUTES`, from 1: how errors and log lines
    /// name it, with its match.
    pub index: usize,
    /// The methods it matches, upper-case (its `match` before the space).
    pub methods: Vec<String>,
    /// The paths it matches (its `match` after the space, §6's syntax).
    pub path: PathPattern,
    /// Its policies: each it sets, and the variables' for the rest.
    pub policy: Policy,
    /// Where its key comes from, tried in order (`key`; the
    /// `Idempotency-Key` header when it gives none). Empty on a webhook
    /// route, whose key is the sender's delivery id.
    pub key: Vec<KeySource>,
    /// What its fingerprint leaves out (`fingerprint.ignore`): JSON
    /// pointers into the body ([`Fingerprint::of_selected`](crate::core::Fingerprint::of_selected)).
    pub ignore: Vec<JsonPointer>,
    /// Its webhook sender and secret, if it is a webhook route.
    pub webhook: Option<Webhook>,
    /// What is wrong with it, if anything (SPEC §6: a policy out of range,
    /// a key source or a secret it cannot have): its requests are refused
    /// `500 misconfigured`, fail closed, and every other request goes on.
    /// A route named a webhook route keeps that path whatever the method.
    pub problem: Option<String>,
}

/// A webhook route's sender and where its secrets are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Webhook {
    /// Who sends its deliveries (`webhook`).
    pub sender: Sender,
    /// The name of the wrangler secret that holds its signing secrets
    /// (`secret`): never the secret itself, which is read from that
    /// binding ([`Route::secrets`]).
    pub secret: String,
    /// The signing secrets, once a host has read them from the binding
    /// ([`Config::bind_webhook_secrets`]); empty until then, and a delivery
    /// to a route whose secrets were never read is refused as
    /// misconfigured, never checked against nothing.
    pub secrets: Vec<WebhookSecret>,
}

impl fmt::Display for Route {
    /// `route 2 (POST,PATCH /v1/orders/*)`: how errors name it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "route {} ({} {})", self.index, self.methods.join(","), self.path)
    }
}

impl Route {
    /// Whether a request with this method and path is this route's. A
    /// webhook route's path is its own whatever the method (SPEC §13): a
    /// POST is a delivery, anything else is refused
    /// ([`Route::takes_method`]), never passed through unverified.
    pub fn matches(&self, method: &str, path: &CanonicalPath) -> bool {
        (self.webhook.is_some() || self.takes_method(method)) && self.path.matches(path)
    }

    /// Whether the route's `match` names `method`.
    pub fn takes_method(&self, method: &str) -> bool {
        self.methods.iter().any(|m| m.eq_ignore_ascii_case(method))
    }

    /// What a request on this route needs: a route's requests are covered,
    /// and need a key when it is `required` or a webhook route.
    pub fn key_rule(&self) -> KeyRule {
        match self.policy.required || self.webhook.is_some() {
            true => KeyRule::Required,
            false => KeyRule::Optional,
        }
    }

    /// The request headers this route reads beyond the exchange's own
    /// ([`RequestHead::headers_read`](crate::core::RequestHead::headers_read)):
    /// its header key sources and its sender's signature headers.
    pub fn headers_read(&self) -> Vec<&str> {
        let sources = self.key.iter().filter_map(|source| match source {
            KeySource::Header(name) => Some(name.as_str()),
            _ => None,
        });
        let sender = self.webhook.iter().flat_map(|webhook| webhook.sender.headers().iter().copied());
        sources.chain(sender).collect()
    }

    /// This route's signing secrets, from the value of its secret binding
    /// (`None`: not bound). A route that is no webhook route has none.
    ///
    /// ```
    /// use oncekey::core::{CanonicalPath, Config};
    /// let routes = r#"[{"match": "POST /hooks/github", "webhook": "github", "secret": "GITHUB_SECRET"}]"#;
    /// let config = Config::from_vars(|name| (name == "IDEMPOTENCY_ROUTES").then(|| routes.to_owned())).unwrap();
    /// let route = config.route("POST", &CanonicalPath::of("/hooks/github")).unwrap();
    /// assert_eq!(route.secrets(Some("new,old")).unwrap().len(), 2);
    /// let unbound = route.secrets(None).unwrap_err();
    /// assert_eq!(unbound.to_string(), "IDEMPOTENCY_ROUTES: route 1 (POST /hooks/github): its webhook secret is not bound: `wrangler secret put` the name its `secret` gives");
    /// assert!(!unbound.to_string().contains("GITHUB_SECRET"), "never the name: it may be a value pasted in its place");
    /// ```
    ///
    /// # Errors
    /// A [`ConfigError`] of `IDEMPOTENCY_ROUTES` naming the route when its
    /// secret is not bound or an entry of it is not in its sender's form (by
    /// its place, never its value; nor the binding's name, which may be a
    /// value pasted in its place).
    pub fn secrets(&self, value: Option<&str>) -> Result<Vec<WebhookSecret>, ConfigError> {
        let Some(webhook) = &self.webhook else { return Ok(Vec::new()) };
        let Some(value) = value else {
            return Err(
                self.error("its webhook secret is not bound: `wrangler secret put` the name its `secret` gives".into())
            );
        };
        WebhookSecret::parse_list(webhook.sender, value)
            .map_err(|e| self.error(format!("its webhook secret (the one its `secret` names): {e}")))
    }

    fn error(&self, why: String) -> ConfigError {
        ConfigError { variable: ROUTES, reason: format!("{self}: {why}") }
    }
}

impl Config {
    /// The route a request with this method and path follows: a webhook
    /// route whose path it is, whatever its method (SPEC §13: refused
    /// unless it is a POST, never passed through), else the first route
    /// that matches it. `None`: the variables apply, as they do with no
    /// routes.
    ///
    /// ```
    /// use oncekey::core::{CanonicalPath, Config};
    /// let routes = r#"[
    ///     {"match": "POST /v1/payments/refunds", "ttlSeconds": 3600},
    ///     {"match": "POST,PATCH /v1/payments/*", "required": true}
    /// ]"#;
    /// let config = Config::from_vars(|name| (name == "IDEMPOTENCY_ROUTES").then(|| routes.to_owned())).unwrap();
    /// assert_eq!(config.route("POST", &CanonicalPath::of("/v1/payments/refunds")).unwrap().index, 1);
    /// assert_eq!(config.route("patch", &CanonicalPath::of("/v1/payments/pi_1")).unwrap().index, 2);
    /// assert_eq!(config.route("POST", &CanonicalPath::of("/v1/payments/pi_1")).unwrap().policy.records.ttl_ms, 86_400_000);
    /// assert!(config.route("GET", &CanonicalPath::of("/v1/payments/pi_1")).is_none());
    /// ```
    pub fn route(&self, method: &str, path: &CanonicalPath) -> Option<&Route> {
        self.route_place(method, path).map(|i| &self.routes[i])
    }

    /// [`Config::route`]'s place in [`Config::routes`].
    pub(crate) fn route_place(&self, method: &str, path: &CanonicalPath) -> Option<usize> {
        let webhook = self.routes.iter().position(|route| route.webhook.is_some() && route.path.matches(path));
        webhook.or_else(|| self.routes.iter().position(|route| route.matches(method, path)))
    }

    /// The path the rules read for a request with `method` (and the
    /// methods an override names: `X-HTTP-Method-Override`, `_method`) at
    /// the path `readings` ([`CanonicalPath::readings`]): the reading a
    /// rule governs — a route, or a key rule other than uncovered — when
    /// every such pair of method and reading has the same one (readings no
    /// rule governs take nothing from the rule, so they need not agree),
    /// else `None` (SPEC §13: `400 ambiguous-request`). With no rule
    /// anywhere, the canonical reading (the first).
    ///
    /// ```
    /// use oncekey::core::{CanonicalPath, Config};
    /// let routes = r#"[{"match": "POST /hooks/stripe", "webhook": "stripe", "secret": "S"},
    ///                  {"match": "DELETE /v1/accounts/*", "required": true}]"#;
    /// let config = Config::from_vars(|name| match name {
    ///     "IDEMPOTENCY_ROUTES" => Some(routes.to_owned()),
    ///     "IDEMPOTENCY_PATHS" => Some("/v1/*".to_owned()),
    ///     _ => None,
    /// })
    /// .unwrap();
    /// let read = |path| CanonicalPath::readings(path).unwrap();
    /// // Hono reads `/hooks/stripe;x`, which no rule covers here: the route governs.
    /// assert_eq!(config.governed("POST", &[], &read("/hooks/stripe;x")).unwrap().as_str(), "/hooks/stripe");
    /// assert!(config.governed("POST", &[], &read("/v1/x;y")).is_some(), "/v1/* both ways");
    /// assert!(config.governed("POST", &["DELETE"], &read("/v1/accounts/1")).is_none());
    /// assert!(config.governed("POST", &["GET"], &read("/v1/orders")).is_some());
    /// ```
    #[inline(never)]
    pub fn governed<'a>(
        &self,
        method: &str,
        overrides: &[&str],
        readings: &'a [CanonicalPath],
    ) -> Option<&'a CanonicalPath> {
        let mut governing: Option<(&CanonicalPath, (Option<usize>, KeyRule))> = None;
        for reading in readings {
            for method in std::iter::once(method).chain(overrides.iter().copied()) {
                let rule = match self.route_place(method, reading) {
                    Some(place) => (Some(place), self.routes[place].key_rule()),
                    None => (None, self.key_rule(method, reading)),
                };
                if rule == (None, KeyRule::Uncovered) {
                    continue;
                }
                match governing {
                    Some((_, held)) if held != rule => return None,
                    Some(_) => {}
                    None => governing = Some((reading, rule)),
                }
            }
        }
        governing.map(|(reading, _)| reading).or(readings.first())
    }

    /// The policy an admin release's tombstone is written with (SPEC §12):
    /// the variables', with the longest TTL they or any route set. The
    /// release names a record, not the request that made it, so it cannot
    /// tell the route; a tombstone that went before its record's own TTL
    /// would let a later retry run as attempt 1 again, the number the
    /// released attempt had.
    ///
    /// ```
    /// use oncekey::core::Config;
    /// let routes = r#"[{"match": "POST /v1/payouts", "ttlSeconds": 604800}]"#;
    /// let config = Config::from_vars(|name| (name == "IDEMPOTENCY_ROUTES").then(|| routes.to_owned())).unwrap();
    /// assert_eq!(config.release_policy().ttl_ms, 604_800_000);
    /// assert_eq!(Config::default().release_policy().ttl_ms, 86_400_000);
    /// ```
    pub fn release_policy(&self) -> RecordPolicy {
        let longest = self.routes.iter().map(|route| route.policy.records.ttl_ms).max().unwrap_or(0);
        RecordPolicy { ttl_ms: longest.max(self.policy.records.ttl_ms), ..self.policy.records.clone() }
    }

    /// The names of the secrets the webhook routes read: names in a
    /// worker's `env` that are the layer's own, never a typo of one of its
    /// variables ([`Config::unknown_variable`]), even when they start with
    /// `IDEMPOTENCY_`.
    pub fn secret_names(&self) -> impl Iterator<Item = &str> {
        self.routes.iter().filter_map(|route| route.webhook.as_ref()).map(|webhook| webhook.secret.as_str())
    }

    /// Reads every webhook route's secrets through `secret` (a secret
    /// binding's value by name; `None`: not bound) into the route: what a
    /// host does once, when the layer is made, before any delivery is
    /// checked. A route whose secret is not bound or not in its sender's
    /// form gets that as its [`Route::problem`] (SPEC §6): its deliveries
    /// are refused `500 misconfigured`, and every other request goes on.
    ///
    /// ```
    /// use oncekey::core::Config;
    /// let routes = r#"[{"match": "POST /hooks/github", "webhook": "github", "secret": "GITHUB_SECRET"}]"#;
    /// let mut config = Config::from_vars(|name| (name == "IDEMPOTENCY_ROUTES").then(|| routes.to_owned())).unwrap();
    /// let mut unbound = config.clone();
    /// unbound.bind_webhook_secrets(|_| None);
    /// assert!(unbound.routes[0].problem.as_deref().unwrap().contains("webhook secret is not bound"));
    /// config.bind_webhook_secrets(|name| (name == "GITHUB_SECRET").then(|| "new,old".to_owned()));
    /// assert_eq!(config.routes[0].webhook.as_ref().unwrap().secrets.len(), 2);
    /// ```
    pub fn bind_webhook_secrets(&mut self, secret: impl Fn(&str) -> Option<String>) {
        for route in self.routes.iter_mut().filter(|route| route.problem.is_none()) {
            let Some(webhook) = &route.webhook else { continue };
            match route.secrets(secret(&webhook.secret).as_deref()) {
                Ok(secrets) => route.webhook.as_mut().expect("a webhook route").secrets = secrets,
                Err(e) => route.problem = Some(e.reason),
            }
        }
    }

    /// What is wrong with each route that cannot be used (its
    /// [`Route::problem`]), in order: what `oncekey check` reports.
    pub fn route_problems(&self) -> impl Iterator<Item = String> + '_ {
        self.routes.iter().filter_map(|route| route.problem.as_ref().map(|why| format!("{ROUTES}: {why}")))
    }
}

/// What a webhook route releases the key on when it leaves `releaseOn` out,
/// whatever `IDEMPOTENCY_RELEASE_ON` says: every status outside 2xx (SPEC
/// §13). Every sender retries any answer outside 2xx — that is how a failed
/// delivery gets handled after all (Stripe retries for three days) — so a
/// stored 400 or 404 (a receiver's bug, fixed an hour later) would answer
/// every retry and every manual redelivery for the TTL, and the event would
/// never be handled. A route that sets `releaseOn` gets what it sets.
pub const WEBHOOK_RELEASE_ON: &str = "3xx,4xx,5xx";

/// Every member a route may have.
const MEMBERS: [&str; 13] = [
    "match",
    "ttlSeconds",
    "leaseSeconds",
    "originTimeoutSeconds",
    "inFlightWaitMs",
    "releaseOn",
    "required",
    "maxBodyBytes",
    "maxResponseBytes",
    "key",
    "fingerprint",
    "webhook",
    "secret",
];

/// `IDEMPOTENCY_ROUTES`, each route's policies over the variables `vars`
/// reads. Unset or empty: no routes. A route whose match reads but whose
/// rest breaks a rule is kept with its [`Route::problem`]: it fails alone.
///
/// # Errors
/// A [`ConfigError`] of `IDEMPOTENCY_ROUTES` whose reason names the route
/// (its place and its match) and the rule it breaks, when the variable is
/// not a list of routes, a route's match cannot be read, or a route can
/// never match.
pub(super) fn read_routes(vars: &Vars<'_>, variables: &Policy) -> Result<Vec<Route>, ConfigError> {
    let raw = vars.get(ROUTES).unwrap_or_default();
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    let error = |reason: String| ConfigError { variable: ROUTES, reason };
    // Repeated members are kept, for each route to refuse by name.
    let Some(Json::Array(items)) = Json::parse_keeping_repeats(&raw) else {
        return Err(error("is not a JSON array of routes (objects with a `match`; see docs/configuration.md)".into()));
    };
    let mut routes: Vec<Route> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        // A route whose match reads fails alone (SPEC §6); one whose match
        // does not could be any request's, so the whole variable fails.
        let mut route = match read_route(i + 1, item, vars, variables) {
            Ok(route) => route,
            Err(RouteError::Match(why)) => return Err(error(why)),
            Err(RouteError::Route(broken)) => *broken,
        };
        // A route that can never match is misconfigured, and fails alone:
        // no request is its, and `oncekey check` names it (SPEC §6, §13).
        if let Some(earlier) = shadowed_by(&routes, &route).filter(|_| route.problem.is_none()) {
            let (them, verb) = match earlier.as_slice() {
                [one] => (one.to_string(), "comes first and matches"),
                many => {
                    (many.iter().map(ToString::to_string).collect::<Vec<_>>().join(" and "), "come first and match")
                }
            };
            route.problem =
                Some(format!("{route} can never match: {them} {verb} every request it does (first match wins)"));
        }
        routes.push(route);
    }
    Ok(routes)
}

/// The earlier routes that take every request `route` would match, if, for
/// each of its methods, one of them matches every path it does. (A path
/// covered only by several earlier routes together is not looked for.)
fn shadowed_by<'r>(earlier: &'r [Route], route: &Route) -> Option<Vec<&'r Route>> {
    let mut by: Vec<&Route> = Vec::new();
    for method in &route.methods {
        let covering = earlier
            .iter()
            .find(|e| (e.webhook.is_some() || e.methods.contains(method)) && e.path.covers(&route.path))?;
        if !by.iter().any(|r| r.index == covering.index) {
            by.push(covering);
        }
    }
    Some(by)
}

/// Why a route could not be read.
enum RouteError {
    /// Its `match` is missing or unreadable: the reason, naming its place.
    Match(String),
    /// Something else is wrong: the route as far as it reads, its
    /// [`Route::problem`] saying what.
    Route(Box<Route>),
}

/// One route, at place `index`.
fn read_route(index: usize, item: &Json, vars: &Vars<'_>, variables: &Policy) -> Result<Route, RouteError> {
    let Json::Object(members) = item else {
        return Err(RouteError::Match(format!("route {index} is {}, not an object with a `match`", item.kind())));
    };
    // Until its match is read, a route is named by its place alone. Two
    // matches could be any request's: the whole variable fails.
    if members.iter().filter(|(name, _)| name == "match").count() > 1 {
        return Err(RouteError::Match(format!("route {index}: `match` is given twice")));
    }
    let (methods, path) = match members.iter().find(|(name, _)| name == "match") {
        Some((_, Json::String(written))) => {
            read_match(written).map_err(|why| RouteError::Match(format!("route {index}: `match` {why}")))?
        }
        Some((_, other)) => {
            return Err(RouteError::Match(format!("route {index}: `match` is {}, not a string", other.kind())));
        }
        None => return Err(RouteError::Match(format!("route {index} has no `match` (\"POST /v1/payments/*\")"))),
    };
    read_route_held(index, methods.clone(), path.clone(), members, vars).map_err(|problem| {
        // A route meant for webhooks keeps its path for any method (SPEC
        // §13), even broken: what is refused there is never passed through.
        let webhook = members.iter().any(|(name, _)| name == "webhook").then(|| Webhook {
            sender: Sender::Standard,
            secret: String::new(),
            secrets: Vec::new(),
        });
        RouteError::Route(Box::new(Route {
            index,
            methods,
            path,
            // Never applied: the route's requests are refused.
            policy: variables.clone(),
            key: Vec::new(),
            ignore: Vec::new(),
            webhook,
            problem: Some(problem),
        }))
    })
}

/// The rest of route `index` once its match is read; the error is what is
/// wrong with it, naming it.
fn read_route_held(
    index: usize,
    methods: Vec<String>,
    path: PathPattern,
    members: &[(String, Json)],
    vars: &Vars<'_>,
) -> Result<Route, String> {
    let name = format!("route {index} ({} {path})", methods.join(","));
    let named = |why: String| format!("{name}: {why}");
    for (i, (member, _)) in members.iter().enumerate() {
        if !MEMBERS.contains(&member.as_str()) {
            return Err(named(format!("unknown member `{member}` (a route takes {})", MEMBERS.join(", "))));
        }
        if members[..i].iter().any(|(earlier, _)| earlier == member) {
            return Err(named(format!("`{member}` is given twice")));
        }
    }
    let member = |name: &str| members.iter().find(|(n, _)| n == name).map(|(_, value)| value);
    let webhook = read_webhook(member("webhook"), member("secret")).map_err(named)?;
    let mut policy = read_policy(&member, vars, webhook.is_some()).map_err(named)?;
    // SPEC §13: a duplicate's wait ends while the sender still listens,
    // unless the route says how long to wait.
    if let Some(hook) = &webhook
        && member("inFlightWaitMs").is_none()
    {
        policy.in_flight_wait_ms = policy.in_flight_wait_ms.min(hook.sender.in_flight_wait_ms());
    }
    let ignore = read_ignore(member("fingerprint")).map_err(named)?;
    let key = match &webhook {
        None => read_key(member("key")).map_err(named)?,
        // The sender decides the key and what a delivery needs.
        Some(_) if member("key").is_some() => {
            return Err(named("a webhook route's key is the sender's delivery id: leave out `key`".into()));
        }
        Some(_) if member("required") == Some(&Json::Bool(false)) => {
            return Err(named("a webhook route always needs the delivery id: `required` cannot be false".into()));
        }
        Some(_) if methods != ["POST"] => {
            return Err(named("webhook senders deliver with POST: a webhook route matches POST only".into()));
        }
        Some(_) => Vec::new(),
    };
    Ok(Route { index, methods, path, policy, key, ignore, webhook, problem: None })
}

/// The route's policies: its values as the variables' text, over the
/// variables (but a webhook route's release set, [`WEBHOOK_RELEASE_ON`]),
/// read and checked by [`Policy::read`].
fn read_policy<'j>(
    member: &dyn Fn(&str) -> Option<&'j Json>,
    vars: &Vars<'_>,
    webhook: bool,
) -> Result<Policy, String> {
    let mut given: Vec<(&str, &str, String)> = Vec::new();
    for (option, variable) in POLICY_OPTIONS {
        let Some(value) = member(option) else { continue };
        let text = match (option, value) {
            ("required", Json::Bool(flag)) => flag.to_string(),
            ("required", other) => return Err(format!("`required` is {}, not true or false", other.kind())),
            ("releaseOn", Json::Array(statuses)) => {
                let numbers: Option<Vec<&str>> = statuses
                    .iter()
                    .map(|status| match status {
                        Json::Number(n) => Some(n.as_str()),
                        Json::String(class) if super::variables::status_class(class).is_some() => Some(class.as_str()),
                        _ => None,
                    })
                    .collect();
                numbers.ok_or("`releaseOn` must be a list of HTTP statuses (numbers) or classes (\"5xx\")")?.join(",")
            }
            ("releaseOn", other) => {
                return Err(format!("`releaseOn` is {}, not a list of HTTP statuses", other.kind()));
            }
            (_, Json::Number(number)) => number.clone(),
            (_, other) => return Err(format!("`{option}` is {}, not a number", other.kind())),
        };
        given.push((option, variable, text));
    }
    let layered = |variable: &str| match given.iter().find(|(_, v, _)| *v == variable) {
        Some((_, _, text)) => Some(text.clone()),
        None if webhook && variable == "IDEMPOTENCY_RELEASE_ON" => Some(WEBHOOK_RELEASE_ON.to_owned()),
        None => (vars.0)(variable),
    };
    Policy::read(&Vars(&layered)).map_err(|e| policy_reason(&e, &given))
}

/// `key`: the key sources, or the default.
fn read_key(key: Option<&Json>) -> Result<Vec<KeySource>, String> {
    match key {
        None => Ok(vec![KeySource::default_source()]),
        Some(Json::Array(sources)) if sources.is_empty() => {
            Err("`key` lists no key source (leave it out for the Idempotency-Key header)".into())
        }
        Some(Json::Array(sources)) => {
            let place = |i: usize| format!("`key` entry {} of {}", i + 1, sources.len());
            sources
                .iter()
                .enumerate()
                .map(|(i, source)| match source {
                    Json::String(source) => source.parse().map_err(|e| format!("{} {e}", place(i))),
                    other => Err(format!("{} is {}, not a string", place(i), other.kind())),
                })
                .collect()
        }
        Some(other) => Err(format!("`key` is {}, not a list of key sources", other.kind())),
    }
}

/// `fingerprint`: the pointers its `ignore` lists.
fn read_ignore(fingerprint: Option<&Json>) -> Result<Vec<JsonPointer>, String> {
    let selection = match fingerprint {
        None => return Ok(Vec::new()),
        Some(Json::Object(selection)) => selection,
        Some(other) => return Err(format!("`fingerprint` is {}, not an object with `ignore`", other.kind())),
    };
    if let Some((unknown, _)) = selection.iter().find(|(name, _)| name != "ignore") {
        return Err(format!("unknown member `{unknown}` of `fingerprint` (it takes `ignore`)"));
    }
    if selection.len() > 1 {
        return Err("`fingerprint.ignore` is given twice".into());
    }
    match selection.iter().find(|(name, _)| name == "ignore").map(|(_, value)| value) {
        None => Ok(Vec::new()),
        Some(Json::Array(pointers)) => {
            let place = |i: usize| format!("`fingerprint.ignore` entry {} of {}", i + 1, pointers.len());
            pointers
                .iter()
                .enumerate()
                .map(|(i, pointer)| match pointer {
                    Json::String(pointer) => pointer.parse().map_err(|e| format!("{}: {e}", place(i))),
                    other => Err(format!("{} is {}, not a JSON pointer", place(i), other.kind())),
                })
                .collect()
        }
        Some(other) => Err(format!("`fingerprint.ignore` is {}, not a list of JSON pointers", other.kind())),
    }
}

/// `webhook` and `secret`: the sender and its secret's name, both or none.
fn read_webhook(sender: Option<&Json>, secret: Option<&Json>) -> Result<Option<Webhook>, String> {
    let (sender, secret) = match (sender, secret) {
        (None, None) => return Ok(None),
        (None, Some(_)) => return Err("`secret` is only for a webhook route: name its sender in `webhook`".into()),
        (Some(_), None) => {
            return Err(
                "a webhook route needs `secret`, the name of the wrangler secret with its signing secret".into()
            );
        }
        (Some(sender), Some(secret)) => (sender, secret),
    };
    let sender = match sender {
        Json::String(sender) => sender.parse::<Sender>().map_err(|e| format!("`webhook` is {e}"))?,
        other => return Err(format!("`webhook` is {}, not a sender's name", other.kind())),
    };
    let secret = match secret {
        Json::String(name) if is_secret_name(name) => name.clone(),
        // Never quoted: what is not a name may be the secret itself.
        Json::String(_) => return Err(NOT_A_SECRET_NAME.into()),
        other => return Err(format!("`secret` is {}, not a secret's name", other.kind())),
    };
    Ok(Some(Webhook { sender, secret, secrets: Vec::new() }))
}

/// Why a route's `secret` string is refused: named by its place, never shown.
const NOT_A_SECRET_NAME: &str = "`secret` must be the name of a wrangler secret (letters, digits, `_`), not its value";

/// How secrets' values begin (not their names): Standard Webhooks' and
/// Stripe's signing secrets, Shopify's app secrets, Stripe's API keys,
/// GitHub's tokens — a value pasted where its name belongs.
const SECRET_VALUE_PREFIXES: [&str; 8] =
    ["whsec_", "shpss_", "sk_live_", "sk_test_", "rk_live_", "rk_test_", "ghp_", "github_pat_"];

/// Whether `name` is a wrangler secret's name (a binding name,
/// `[A-Za-z_][A-Za-z0-9_]*`: so no base64 `+`, `/` or `=`, no space) and not
/// a secret's value: it begins with none of [`SECRET_VALUE_PREFIXES`].
fn is_secret_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !SECRET_VALUE_PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

/// `POST,PATCH /v1/orders/*`: the methods and the path pattern.
fn read_match(written: &str) -> Result<(Vec<String>, PathPattern), String> {
    // A path pattern holds no white space: what comes before the last is
    // the methods (`POST, PATCH /v1/orders/*` too).
    let Some((methods, path)) = written.trim().rsplit_once(char::is_whitespace) else {
        return Err("is not methods, a space and a path pattern (\"POST /v1/payments/*\")".into());
    };
    let methods = method_list(methods).ok_or_else(|| format!("does not name its methods as {METHODS_RULE}"))?;
    if let Some(twice) = methods.iter().enumerate().find(|(i, m)| methods[..*i].contains(m)).map(|(_, m)| m) {
        return Err(format!("names {twice} twice"));
    }
    let path = path.parse::<PathPattern>().map_err(|e| format!("has a path pattern that {}", e.reason))?;
    Ok((methods, path))
}

/// A policy's error for a route: named by its option when the route may set
/// it, with the variable it takes when the route leaves it out; the
/// variables the route sets named by their options in the reason.
fn policy_reason(error: &ConfigError, given: &[(&str, &str, String)]) -> String {
    let mut reason = error.reason.clone();
    for (option, variable, _) in given {
        reason = replace_all(&reason, variable, option);
    }
    let option = POLICY_OPTIONS.iter().find(|(_, variable)| *variable == error.variable).map(|(option, _)| *option);
    match option {
        Some(option) if given.iter().any(|(o, ..)| *o == option) => format!("`{option}`: {reason}"),
        Some(option) => format!("`{option}` (unset here, so {}): {reason}", error.variable),
        None => format!("{}: {reason}", error.variable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::record::policy::RecordPolicy;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    /// The configuration with these routes and these other variables.
    fn with(routes: &str, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let routes = routes.to_owned();
        Config::from_vars(move |name| match name {
            ROUTES => Some(routes.clone()),
            _ => vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
        })
    }

    fn routes(routes: &str) -> Vec<Route> {
        with(routes, &[]).unwrap_or_else(|e| panic!("{routes}: {e}")).routes
    }

    fn pointer(p: &str) -> JsonPointer {
        p.parse().unwrap()
    }

    #[test]
    fn unset_or_empty_is_no_routes() {
        assert!(Config::default().routes.is_empty());
        assert!(routes("").is_empty() && routes("  ").is_empty() && routes("[]").is_empty());
    }

    #[test]
    fn a_route_reads_every_member() {
        let read = routes(
            r#"[{
                "match": "post, patch /v1/orders/*",
                "ttlSeconds": 3600, "leaseSeconds": 30, "originTimeoutSeconds": 20, "inFlightWaitMs": 2500,
                "releaseOn": [503, 429], "required": true, "maxBodyBytes": 2048, "maxResponseBytes": 4096,
                "key": ["header:X-Request-Id", "json:/request_id", "form:request_id"],
                "fingerprint": {"ignore": ["/client_ts", "/meta/sent_at"]}
            }]"#,
        );
        let policy = Policy {
            records: RecordPolicy { lease_ms: 30_000, ttl_ms: 3_600_000, release_on: vec![503, 429] },
            origin_timeout_ms: 20_000,
            in_flight_wait_ms: 2_500,
            store_timeout_ms: 5_000,
            required: true,
            max_body_bytes: 2048,
            max_response_bytes: 4096,
        };
        let key = ["header:x-request-id", "json:/request_id", "form:request_id"].map(|s| s.parse().unwrap()).to_vec();
        let route = Route {
            index: 1,
            methods: vec!["POST".into(), "PATCH".into()],
            path: "/v1/orders/*".parse().unwrap(),
            policy,
            key,
            ignore: vec![pointer("/client_ts"), pointer("/meta/sent_at")],
            webhook: None,
            problem: None,
        };
        assert_eq!(read, [route]);
        assert_eq!(read[0].to_string(), "route 1 (POST,PATCH /v1/orders/*)");
        assert_eq!(read[0].headers_read(), ["x-request-id"]);
        assert_eq!(read[0].key_rule(), KeyRule::Required);
    }

    #[test]
    fn what_a_route_leaves_out_is_the_variables() {
        let vars =
            [("IDEMPOTENCY_TTL_SECONDS", "7200"), ("IDEMPOTENCY_RELEASE_ON", "503"), ("IDEMPOTENCY_REQUIRED", "true")];
        let config = with(r#"[{"match": "POST /v1/payments/*", "leaseSeconds": 10}]"#, &vars).unwrap();
        let route = &config.routes[0];
        assert_eq!(route.policy.records, RecordPolicy { lease_ms: 10_000, ttl_ms: 7_200_000, release_on: vec![503] });
        // Derived as the variables derive them, from the route's lease.
        assert_eq!((route.policy.origin_timeout_ms, route.policy.store_timeout_ms), (5_000, 5_000));
        assert_eq!(route.policy.in_flight_wait_ms, 10_000);
        assert!(route.policy.required);
        assert_eq!(route.key, [KeySource::Header("idempotency-key".into())], "the default key source");
        assert_eq!(route.key_rule(), KeyRule::Required);
        // The variables' own values are untouched by the route.
        assert_eq!((config.policy.records.lease_ms, config.policy.origin_timeout_ms), (120_000, 100_000));
        let optional = routes(r#"[{"match": "POST /x", "required": false}]"#);
        assert_eq!(optional[0].key_rule(), KeyRule::Optional);
        let empty_release = routes(r#"[{"match": "POST /x", "releaseOn": []}]"#);
        assert!(empty_release[0].policy.records.release_on.is_empty(), "an empty list releases on nothing");
    }

    #[test]
    fn a_webhook_route_releases_on_every_status_outside_2xx_unless_it_says_otherwise() {
        let vars = [("IDEMPOTENCY_RELEASE_ON", "503")];
        let config = with(
            r#"[
                {"match": "POST /hooks/a", "webhook": "github", "secret": "A"},
                {"match": "POST /hooks/b", "webhook": "github", "secret": "B", "releaseOn": [503]},
                {"match": "POST /hooks/c", "webhook": "github", "secret": "C", "releaseOn": ["5xx", 409]},
                {"match": "POST /v1/*"}
            ]"#,
            &vars,
        )
        .unwrap();
        let release_on: Vec<&[u16]> = config.routes.iter().map(|r| r.policy.records.release_on.as_slice()).collect();
        assert_eq!(release_on, [&[3, 4, 5][..], &[503], &[5, 409], &[503]]);
        let hook = &config.routes[0].policy.records;
        for status in [301, 400, 404, 409, 422, 500, 501, 599] {
            assert!(hook.releases(status), "a receiver's {status} is retried by its sender");
        }
        for status in [200, 201, 202, 204, 299] {
            assert!(!hook.releases(status), "{status} is the delivery handled");
        }
        let problem = |route: &str| {
            let config = with(&format!("[{route}]"), &[]).unwrap();
            config.route_problems().next().unwrap_or_default()
        };
        assert!(problem(r#"{"match": "POST /x", "releaseOn": ["6xx"]}"#).contains("or classes (\"5xx\")"));
        assert!(!problem(r#"{"match": "POST /x", "releaseOn": ["5xx,200"]}"#).is_empty(), "one status per member");
    }

    #[test]
    fn a_duplicate_delivery_s_wait_ends_before_its_sender_stops_listening() {
        let config = with(
            r#"[
                {"match": "POST /hooks/github", "webhook": "github", "secret": "G"},
                {"match": "POST /hooks/shopify", "webhook": "shopify", "secret": "S"},
                {"match": "POST /hooks/standard", "webhook": "standard", "secret": "W"},
                {"match": "POST /hooks/stripe", "webhook": "stripe", "secret": "T", "inFlightWaitMs": 12000},
                {"match": "POST /v1/*"}
            ]"#,
            &[("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "20000"), ("IDEMPOTENCY_LEASE_SECONDS", "60")],
        )
        .unwrap();
        let waits: Vec<u64> = config.routes.iter().map(|r| r.policy.in_flight_wait_ms).collect();
        // GitHub 10 s, Shopify 5 s, Svix 15 s, each less 1.5 s; a route's
        // own value wins; other routes keep the variable.
        assert_eq!(waits, [8_500, 3_500, 13_500, 12_000, 20_000]);
        let wait = |route: &str, vars: &[(&str, &str)]| {
            with(&format!("[{route}]"), vars).unwrap().routes[0].policy.in_flight_wait_ms
        };
        let github = r#"{"match": "POST /hooks/github", "webhook": "github", "secret": "G"}"#;
        assert_eq!(wait(github, &[("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "1000")]), 1_000, "a shorter wait stands");
        let short = r#"{"match": "POST /hooks/github", "webhook": "github", "secret": "G", "leaseSeconds": 2}"#;
        assert_eq!(wait(short, &[]), 2_000, "the lease still bounds it");
    }

    #[test]
    fn first_match_wins() {
        let config = with(
            r#"[
                {"match": "POST /v1/payments/refunds", "ttlSeconds": 3600},
                {"match": "POST,PATCH /v1/payments/*", "ttlSeconds": 86400},
                {"match": "PUT /v1/payments/*", "ttlSeconds": 600},
                {"match": "POST /hooks/stripe", "webhook": "stripe", "secret": "STRIPE_WEBHOOK_SECRET"}
            ]"#,
            &[],
        )
        .unwrap();
        // (method, path, route)
        let rows = [
            ("POST", "/v1/payments/refunds", Some(1)),
            ("POST", "/v1/payments/refunds/x", Some(2)),
            ("post", "/v1/payments", Some(2)),
            ("PATCH", "/v1/payments/refunds", Some(2)),
            ("PUT", "/v1/payments/refunds", Some(3)),
            ("DELETE", "/v1/payments/pi_1", None),
            ("POST", "/v1/paymentsX", None),
            ("POST", "/hooks/stripe", Some(4)),
            // Every spelling of a path is the path, and a webhook route's
            // path is its own whatever the method (SPEC §13).
            ("POST", "/hooks/stripe/", Some(4)),
            ("POST", "/Hooks//%73tripe;x", Some(4)),
            ("GET", "/hooks/stripe", Some(4)),
            ("PATCH", "/V1/Payments/refunds/", Some(2)),
        ];
        for (method, path, index) in rows {
            assert_eq!(config.route(method, &CanonicalPath::of(path)).map(|r| r.index), index, "{method} {path}");
        }
        let hook = config.route("POST", &CanonicalPath::of("/hooks/stripe")).unwrap();
        assert_eq!(
            hook.webhook,
            Some(Webhook { sender: Sender::Stripe, secret: "STRIPE_WEBHOOK_SECRET".into(), secrets: Vec::new() })
        );
        assert_eq!(hook.policy.records.release_on, [3, 4, 5], "whatever is not 2xx is retried");
        assert!(hook.key.is_empty(), "the delivery id is the key");
        assert_eq!((hook.key_rule(), hook.headers_read()), (KeyRule::Required, vec!["stripe-signature"]));
    }

    #[test]
    fn bad_routes_are_misconfigured_naming_the_route_and_the_rule() {
        let one = |route: &str| format!("[{route}]");
        let methods = "a comma-separated list of HTTP methods: GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, \
                       TRACE or PATCH";
        let not_methods = format!("route 1: `match` does not name its methods as {methods}");
        let members = "match, ttlSeconds, leaseSeconds, originTimeoutSeconds, inFlightWaitMs, releaseOn, required, \
                       maxBodyBytes, maxResponseBytes, key, fingerprint, webhook, secret";
        let unknown = format!("route 1 (POST /x): unknown member `ttl` (a route takes {members})");
        let not_routes = "is not a JSON array of routes (objects with a `match`; see docs/configuration.md)";
        let first = "(first match wins)";
        // (IDEMPOTENCY_ROUTES, the reason)
        let rows: Vec<(String, String)> = vec![
            ("{".into(), not_routes.into()),
            (r#"{"match": "POST /x"}"#.into(), not_routes.into()),
            ("[1]".into(), "route 1 is a number, not an object with a `match`".into()),
            (one("{}"), "route 1 has no `match` (\"POST /v1/payments/*\")".into()),
            (one(r#"{"match": ["POST", "/x"]}"#), "route 1: `match` is an array, not a string".into()),
            (
                one(r#"{"match": "/x"}"#),
                "route 1: `match` is not methods, a space and a path pattern (\"POST /v1/payments/*\")".into(),
            ),
            (one(r#"{"match": "FETCH /x"}"#), not_methods.clone()),
            (one(r#"{"match": ", /x"}"#), not_methods),
            (one(r#"{"match": "POST,post /x"}"#), "route 1: `match` names POST twice".into()),
            (one(r#"{"match": "POST x"}"#), "route 1: `match` has a path pattern that must start with `/`".into()),
            (
                one(r#"{"match": "POST /v1/*/x"}"#),
                "route 1: `match` has a path pattern that may have `*` only as its last character".into(),
            ),
            (one(r#"{"match": "POST /x", "ttl": 60}"#), unknown),
            (
                one(r#"{"match": "POST /x", "ttlSeconds": 60, "ttlSeconds": 120}"#),
                "route 1 (POST /x): `ttlSeconds` is given twice".into(),
            ),
            (
                one(r#"{"match": "POST /x", "ttlSeconds": "3600"}"#),
                "route 1 (POST /x): `ttlSeconds` is a string, not a number".into(),
            ),
            (
                one(r#"{"match": "POST /x", "ttlSeconds": 2592001}"#),
                "route 1 (POST /x): `ttlSeconds`: not a whole number from 60 to 2592000".into(),
            ),
            (
                one(r#"{"match": "POST /x", "ttlSeconds": 3600.5}"#),
                "route 1 (POST /x): `ttlSeconds`: not a whole number from 60 to 2592000".into(),
            ),
            (
                one(r#"{"match": "POST /x", "ttlSeconds": 60}"#),
                "route 1 (POST /x): `ttlSeconds`: must be at least IDEMPOTENCY_LEASE_SECONDS: a released key keeps \
                 its last attempt number for the TTL, and an attempt may still finish until its lease ends"
                    .into(),
            ),
            (
                one(r#"{"match": "POST /x", "leaseSeconds": 901}"#),
                "route 1 (POST /x): `leaseSeconds`: not a whole number from 1 to 900".into(),
            ),
            (
                one(r#"{"match": "POST /x", "leaseSeconds": 2, "inFlightWaitMs": 2001}"#),
                "route 1 (POST /x): `inFlightWaitMs`: not a whole number from 0 to 2000".into(),
            ),
            (
                one(r#"{"match": "POST /x", "leaseSeconds": 10, "originTimeoutSeconds": 10}"#),
                "route 1 (POST /x): `originTimeoutSeconds`: must be below leaseSeconds: the lease covers the origin \
                 call and its finish. A shorter lease needs a shorter origin timeout too (the root wrangler.toml \
                 sets it to 100 s); see docs/configuration.md"
                    .into(),
            ),
            (
                one(r#"{"match": "POST /x", "releaseOn": [99]}"#),
                "route 1 (POST /x): `releaseOn`: not an HTTP status from 100 to 599, or a class from 1xx to 5xx".into(),
            ),
            (
                one(r#"{"match": "POST /x", "releaseOn": ["503"]}"#),
                "route 1 (POST /x): `releaseOn` must be a list of HTTP statuses (numbers) or classes (\"5xx\")".into(),
            ),
            (
                one(r#"{"match": "POST /x", "releaseOn": 503}"#),
                "route 1 (POST /x): `releaseOn` is a number, not a list of HTTP statuses".into(),
            ),
            (
                one(r#"{"match": "POST /x", "required": "true"}"#),
                "route 1 (POST /x): `required` is a string, not true or false".into(),
            ),
            (
                one(r#"{"match": "POST /x", "maxResponseBytes": 1572865}"#),
                "route 1 (POST /x): `maxResponseBytes`: not a whole number from 0 to 1572864".into(),
            ),
            (
                one(r#"{"match": "POST /x", "key": []}"#),
                "route 1 (POST /x): `key` lists no key source (leave it out for the Idempotency-Key header)".into(),
            ),
            (
                one(r#"{"match": "POST /x", "key": "header:x"}"#),
                "route 1 (POST /x): `key` is a string, not a list of key sources".into(),
            ),
            (
                one(r#"{"match": "POST /x", "key": ["header:x", "cookie:session"]}"#),
                "route 1 (POST /x): `key` entry 2 of 2 is not `header:<name>`, `json:<JSON pointer>` or \
                 `form:<field>`"
                    .into(),
            ),
            (
                one(r#"{"match": "POST /x", "key": ["json:request_id"]}"#),
                "route 1 (POST /x): `key` entry 1 of 1 names no member: a JSON pointer must start with `/`".into(),
            ),
            (
                one(r#"{"match": "POST /x", "key": [1]}"#),
                "route 1 (POST /x): `key` entry 1 of 1 is a number, not a string".into(),
            ),
            (
                one(r#"{"match": "POST /x", "fingerprint": {"ignore": ["/ts", "ts"]}}"#),
                "route 1 (POST /x): `fingerprint.ignore` entry 2 of 2: a JSON pointer must start with `/`".into(),
            ),
            (
                one(r#"{"match": "POST /x", "fingerprint": {"ignore": [""]}}"#),
                "route 1 (POST /x): `fingerprint.ignore` entry 1 of 1: a JSON pointer must start with `/`".into(),
            ),
            (
                one(r#"{"match": "POST /x", "fingerprint": {"exclude": ["/ts"]}}"#),
                "route 1 (POST /x): unknown member `exclude` of `fingerprint` (it takes `ignore`)".into(),
            ),
            (
                one(r#"{"match": "POST /x", "fingerprint": {"ignore": ["/ts"], "ignore": []}}"#),
                "route 1 (POST /x): `fingerprint.ignore` is given twice".into(),
            ),
            (
                one(r#"{"match": "POST /x", "key": ["json:/a\qb"]}"#),
                "is not a JSON array of routes (objects with a `match`; see docs/configuration.md)".into(),
            ),
            (
                one(r#"{"match": "POST /x", "fingerprint": ["/ts"]}"#),
                "route 1 (POST /x): `fingerprint` is an array, not an object with `ignore`".into(),
            ),
            (
                one(r#"{"match": "POST /x", "fingerprint": {"ignore": "/ts"}}"#),
                "route 1 (POST /x): `fingerprint.ignore` is a string, not a list of JSON pointers".into(),
            ),
            (
                one(r#"{"match": "POST /x", "webhook": "svix", "secret": "S"}"#),
                "route 1 (POST /x): `webhook` is not a webhook sender: `standard`, `github`, `stripe` or `shopify`"
                    .into(),
            ),
            (
                one(r#"{"match": "POST /x", "webhook": "github"}"#),
                "route 1 (POST /x): a webhook route needs `secret`, the name of the wrangler secret with its \
                 signing secret"
                    .into(),
            ),
            (
                one(r#"{"match": "POST /x", "secret": "S"}"#),
                "route 1 (POST /x): `secret` is only for a webhook route: name its sender in `webhook`".into(),
            ),
            (
                one(r#"{"match": "POST /x", "webhook": "github", "secret": "MY SECRET"}"#),
                format!("route 1 (POST /x): {NOT_A_SECRET_NAME}"),
            ),
            (
                one(r#"{"match": "POST /x", "webhook": "stripe", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}"#),
                format!("route 1 (POST /x): {NOT_A_SECRET_NAME}"),
            ),
            (
                one(r#"{"match": "POST /x", "webhook": "shopify", "secret": "c2VjcmV0LXZhbHVl+/="}"#),
                format!("route 1 (POST /x): {NOT_A_SECRET_NAME}"),
            ),
            (
                one(r#"{"match": "POST /x", "webhook": "github", "secret": 1}"#),
                "route 1 (POST /x): `secret` is a number, not a secret's name".into(),
            ),
            (
                one(r#"{"match": "POST /x", "webhook": "github", "secret": "S", "key": ["json:/id"]}"#),
                "route 1 (POST /x): a webhook route's key is the sender's delivery id: leave out `key`".into(),
            ),
            (
                one(r#"{"match": "POST /x", "webhook": "github", "secret": "S", "required": false}"#),
                "route 1 (POST /x): a webhook route always needs the delivery id: `required` cannot be false".into(),
            ),
            (
                one(r#"{"match": "POST,PUT /x", "webhook": "github", "secret": "S"}"#),
                "route 1 (POST,PUT /x): webhook senders deliver with POST: a webhook route matches POST only".into(),
            ),
            (
                r#"[{"match": "POST /x"}, {"match": "POST /x", "ttlSeconds": 600}]"#.into(),
                format!(
                    "route 2 (POST /x) can never match: route 1 (POST /x) comes first and matches every request it does {first}"
                ),
            ),
            (
                r#"[{"match": "POST /v1/*"}, {"match": "POST /v1/payments"}]"#.into(),
                format!(
                    "route 2 (POST /v1/payments) can never match: route 1 (POST /v1/*) comes first and matches every request it does {first}"
                ),
            ),
            (
                r#"[{"match": "POST /v1/pay*"}, {"match": "POST /v1/payments/*"}]"#.into(),
                format!(
                    "route 2 (POST /v1/payments/*) can never match: route 1 (POST /v1/pay*) comes first and matches every request it does {first}"
                ),
            ),
            (
                r#"[{"match": "POST /a/*"}, {"match": "PATCH /*"}, {"match": "PATCH,POST /a/b"}]"#.into(),
                format!(
                    "route 3 (PATCH,POST /a/b) can never match: route 2 (PATCH /*) and route 1 (POST /a/*) come first and match every request it does {first}"
                ),
            ),
            (
                r#"[{"match": "POST /ok"}, {"match": "PUT /x", "leaseSeconds": 0}]"#.into(),
                "route 2 (PUT /x): `leaseSeconds`: not a whole number from 1 to 900".into(),
            ),
        ];
        for (value, reason) in rows {
            assert_eq!(problem(&value, &[]), reason, "{value}");
        }
    }

    /// What is wrong with `routes` over `vars`: the variable's error, or
    /// the first route's that fails alone.
    fn problem(routes: &str, vars: &[(&str, &str)]) -> String {
        match with(routes, vars) {
            Err(err) => {
                assert_eq!(err.variable, ROUTES, "{routes}");
                err.reason
            }
            Ok(config) => config.routes.iter().find_map(|r| r.problem.clone()).unwrap_or_else(|| panic!("{routes}")),
        }
    }

    #[test]
    fn a_route_whose_match_reads_fails_alone_and_keeps_its_path() {
        // SPEC §6: a route's own problem fails that route's requests only;
        // one whose match cannot be read could be anyone's, and fails all.
        let routes = r#"[
            {"match": "POST /v1/payouts", "ttlSeconds": 5},
            {"match": "POST /hooks/github", "webhook": "github", "secret": "whsec_pasted_value_not_a_name"},
            {"match": "POST /v1/orders"}
        ]"#;
        let config = with(routes, &[]).unwrap();
        let problems: Vec<String> = config.route_problems().collect();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with("IDEMPOTENCY_ROUTES: route 1 (POST /v1/payouts): `ttlSeconds`"));
        assert!(!problems[1].contains("whsec_pasted"), "a value pasted as a name is never quoted: {}", problems[1]);
        let place = |method, path| config.route_place(method, &CanonicalPath::of(path));
        assert_eq!(place("POST", "/v1/payouts"), Some(0));
        assert_eq!(place("PATCH", "/Hooks/GitHub/"), Some(1), "a broken webhook route keeps its path for any method");
        assert_eq!(place("POST", "/v1/orders"), Some(2));
        assert!(config.routes[2].problem.is_none(), "the rest go on");
        // A route that can never match fails alone too: no request is its.
        let shadowed =
            with(r#"[{"match": "POST /v1/*"}, {"match": "POST /V1/Pay/"}, {"match": "GET /x"}]"#, &[]).unwrap();
        assert_eq!(shadowed.route_problems().count(), 1);
        assert_eq!(shadowed.route_place("GET", &CanonicalPath::of("/x")), Some(2), "the rest go on");
        let whole = [
            r#"[{"match": "POST"}]"#,
            r#"[{"ttlSeconds": 60}]"#,
            r#"[{"match": 1}]"#,
            r#"[{"match": "POST /v1/pay", "match": "POST /v1/other", "required": true}]"#,
        ];
        for whole in whole {
            assert_eq!(with(whole, &[]).unwrap_err().variable, ROUTES, "{whole}");
        }
    }

    #[test]
    fn an_inherited_value_that_breaks_a_route_s_rule_is_named_as_inherited() {
        let vars = [("IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS", "100")];
        assert_eq!(
            problem(r#"[{"match": "POST /quick", "leaseSeconds": 30}]"#, &vars),
            "route 1 (POST /quick): `originTimeoutSeconds` (unset here, so IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS): must \
             be below leaseSeconds: the lease covers the origin call and its finish. A shorter lease needs a shorter \
             origin timeout too (the root wrangler.toml sets it to 100 s); see docs/configuration.md"
        );
        let vars = [("IDEMPOTENCY_STORE_TIMEOUT_MS", "5000")];
        let err = problem(r#"[{"match": "POST /quick", "leaseSeconds": 6, "originTimeoutSeconds": 5}]"#, &vars);
        assert!(err.starts_with("route 1 (POST /quick): IDEMPOTENCY_STORE_TIMEOUT_MS: leaves no room"), "{err}");
        assert!(err.contains("leaseSeconds less originTimeoutSeconds"), "{err}");
        // A bad variable is named as the variable, before any route is read.
        let err =
            with(r#"[{"match": "POST /x", "leaseSeconds": 30}]"#, &[("IDEMPOTENCY_TTL_SECONDS", "59")]).unwrap_err();
        assert_eq!(err.variable, "IDEMPOTENCY_TTL_SECONDS");
    }

    #[test]
    fn routes_that_can_match_are_kept() {
        let kept = [
            r#"[{"match": "POST /v1/payments"}, {"match": "POST /v1/*"}]"#,
            r#"[{"match": "POST /v1/*"}, {"match": "PATCH /v1/payments"}]"#,
            r#"[{"match": "POST /v1/payments/*"}, {"match": "POST /v1/payments*"}]"#,
            r#"[{"match": "POST /v1/payments/*"}, {"match": "POST,PATCH /v1/payments/x"}]"#,
            r#"[{"match": "POST /v1/payments"}, {"match": "POST /v1/payments/*"}]"#,
            r#"[{"match": "POST /a"}, {"match": "POST /b"}]"#,
        ];
        for value in kept {
            assert_eq!(routes(value).len(), 2, "{value}");
        }
    }

    #[test]
    fn one_pattern_covers_another_only_when_it_matches_all_its_paths() {
        // (outer, inner, covers)
        let rows = [
            ("/*", "/anything/*", true),
            ("/*", "/", true),
            ("/v1/*", "/v1/*", true),
            ("/v1/*", "/v1", true),
            ("/v1/*", "/v1/x/*", true),
            ("/v1/*", "/v1*", false),
            ("/v1*", "/v1/*", true),
            ("/v1/x", "/v1/x", true),
            ("/v1/x", "/v1/x/*", false),
            ("/v1/x", "/v1/y", false),
            ("/v1/x/*", "/v1/*", false),
            ("/v1/pay*", "/v1/payments/*", true),
            ("/v1/payments/*", "/v1/pay*", false),
        ];
        for (outer, inner, expected) in rows {
            let (o, i): (PathPattern, PathPattern) = (outer.parse().unwrap(), inner.parse().unwrap());
            assert_eq!(o.covers(&i), expected, "{outer} covers {inner}");
        }
    }

    #[test]
    fn a_webhook_route_s_secrets_are_read_by_name_never_shown() {
        let config = with(
            r#"[
                {"match": "POST /hooks/stripe", "webhook": "stripe", "secret": "STRIPE_WEBHOOK_SECRET"},
                {"match": "POST /v1/*"},
                {"match": "POST /hooks/svix", "webhook": "standard", "secret": "SVIX_SECRET"}
            ]"#,
            &[],
        )
        .unwrap();
        let bound = |name: &str| match name {
            "STRIPE_WEBHOOK_SECRET" => Some("whsec_new, whsec_old".to_owned()),
            "SVIX_SECRET" => Some("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned()),
            _ => None,
        };
        let bind = |secret: &dyn Fn(&str) -> Option<String>| {
            let mut config = config.clone();
            config.bind_webhook_secrets(secret);
            config
        };
        let secrets = bind(&bound);
        let counts = secrets.routes.iter().map(|r| r.webhook.as_ref().map_or(0, |w| w.secrets.len()));
        assert_eq!(counts.collect::<Vec<_>>(), [2, 0, 1]);
        assert_eq!(secrets.route_problems().count(), 0);
        // A route whose secret is unbound, or not in its sender's form, fails alone (SPEC §6).
        let unbound = bind(&|name| bound(name).filter(|_| name != "SVIX_SECRET"));
        assert_eq!(
            unbound.route_problems().collect::<Vec<_>>(),
            [
                "IDEMPOTENCY_ROUTES: route 3 (POST /hooks/svix): its webhook secret is not bound: `wrangler secret put` the name its `secret` gives"
            ]
        );
        assert_eq!(unbound.routes[0].webhook.as_ref().unwrap().secrets.len(), 2, "the others still read theirs");
        let wrong_form = bind(&|name| Some(format!("sk_live_{name}_hunter2")));
        let problems: Vec<String> = wrong_form.route_problems().collect();
        assert_eq!(
            problems[0],
            "IDEMPOTENCY_ROUTES: route 1 (POST /hooks/stripe): its webhook secret (the one its `secret` names): the secret is not a Stripe \
             signing secret (`whsec_…`)"
        );
        assert!(!problems.join(" ").contains("hunter2"));
        assert_eq!(config.routes[1].secrets(Some("anything")), Ok(Vec::new()), "no webhook, no secrets");
        assert_eq!(config.routes[2].headers_read(), Sender::Standard.headers());
    }
}
