//! Routes (SPEC §13) as the exchange applies them: the route a request
//! follows, found once when it starts (first match wins); the policy it is
//! held to — its route's, or the variables' when no route matches; where
//! its key comes from — the route's key sources, tried in order, or a
//! webhook delivery's id once its signature verifies; its fingerprint (the
//! route's selection) and its record's name.

use std::borrow::Cow;

use super::head::RequestHead;
use super::log::DeliveryLog;
use super::machine::Exchange;
use crate::core::{
    Config, Fingerprint, IdempotencyKey, KeyLookup, KeyRule, Policy, Problem, ROUTES, RecordName, Route,
    claimed_delivery, find_key, verify_delivery,
};

/// The policy of the request whose route is at place `route` of
/// `config`'s routes: the route's, or the variables' (`None`): for code
/// that holds part of the exchange borrowed.
pub(super) fn policy_of(config: &Config, route: Option<usize>) -> &Policy {
    route.and_then(|i| config.routes.get(i)).map_or(&config.policy, |route| &route.policy)
}

impl Exchange {
    /// The route this request follows, if one matched it.
    pub(super) fn route(&self) -> Option<&Route> {
        self.route.and_then(|i| self.config.routes.get(i))
    }

    /// The one policy the request is held to (SPEC §13): its route's, or
    /// the variables' when no route matched. Every limit of the exchange
    /// reads it, so no rule can read another.
    pub(super) fn policy(&self) -> &Policy {
        policy_of(&self.config, self.route)
    }

    /// What the request needs: its route's rule, or the variables'.
    pub(super) fn key_rule(&self, head: &RequestHead) -> KeyRule {
        match self.route() {
            Some(route) => route.key_rule(),
            None => self.config.key_rule(&head.method, &self.target),
        }
    }

    /// The key the request's head holds, before its body is read: the
    /// `Idempotency-Key` header, or on a route its key sources in order
    /// (`NeedsBody` when a body source comes next). A webhook route's key
    /// is the delivery's, known once its whole body is read and its
    /// signature checked ([`Exchange::delivery_key`]).
    ///
    /// # Errors
    /// The problem of a malformed key, or of a missing one where a key is
    /// required.
    pub(super) fn key_in_head(&self, head: &RequestHead) -> Result<KeyLookup, Problem> {
        let Some(route) = self.route() else {
            let key = self.key_rule(head).key(head.key.as_deref())?;
            return Ok(key.map_or(KeyLookup::Absent, KeyLookup::Found));
        };
        if route.webhook.is_some() {
            return Ok(KeyLookup::NeedsBody);
        }
        let raw = head.key.as_deref().map(String::from_utf8_lossy);
        Ok(find_key(&route.key, route.key_rule(), |name| header(head, raw.as_ref(), name), None)?)
    }

    /// The key a route's body sources find in `body` once it is read (the
    /// header sources were tried first): `None` when none holds one, or
    /// when no route applies.
    ///
    /// # Errors
    /// The problem of a malformed key.
    pub(super) fn key_in_body(&self, head: &RequestHead, body: &[u8]) -> Result<Option<IdempotencyKey>, Problem> {
        let Some(route) = self.route().filter(|route| route.webhook.is_none()) else { return Ok(None) };
        let raw = head.key.as_deref().map(String::from_utf8_lossy);
        // Whether a key is required is decided once every source had its say.
        match find_key(&route.key, KeyRule::Optional, |name| header(head, raw.as_ref(), name), Some(body))? {
            KeyLookup::Found(key) => Ok(Some(key)),
            KeyLookup::Absent | KeyLookup::NeedsBody => Ok(None),
        }
    }

    /// Whether the request is a delivery to a webhook route.
    pub(super) fn is_delivery(&self) -> bool {
        self.route().is_some_and(|route| route.webhook.is_some())
    }

    /// A webhook delivery's key, its sender's delivery id, once its whole
    /// `body` is read and its signature verifies under the route's
    /// secrets at `now_ms` (SPEC §13) — before any store call, so a forged
    /// delivery can never plant an answer under a real delivery's id.
    ///
    /// # Errors
    /// [`Problem::WebhookSignature`] naming the check the delivery failed;
    /// [`Problem::Misconfigured`] if the host never read the route's
    /// secrets (no delivery is checked against nothing).
    pub(super) fn delivery_key(&self, head: &RequestHead, body: &[u8], now_ms: u64) -> Result<IdempotencyKey, Problem> {
        let Some((route, webhook)) = self.route().and_then(|route| Some((route, route.webhook.as_ref()?))) else {
            return Err(Problem::Misconfigured("a delivery checked on a route that is no webhook route".into()));
        };
        if webhook.secrets.is_empty() {
            return Err(Problem::Misconfigured(format!("{ROUTES}: {route}: its webhook secret was not read")));
        }
        verify_delivery(webhook.sender, &webhook.secrets, |name| head.header(name), body, now_ms)
            .map_err(|refusal| Problem::WebhookSignature(refusal.to_string()))
    }

    /// What the log line says of a delivery (SPEC §12): the id and event
    /// type it carries, `verified` once its signature was checked.
    pub(super) fn delivery_log(&self, head: &RequestHead, body: &[u8], verified: bool) -> Option<DeliveryLog> {
        let webhook = self.route()?.webhook.as_ref()?;
        let (id, event) = claimed_delivery(webhook.sender, |name| head.header(name), body);
        Some(DeliveryLog { id, event, verified })
    }

    /// The request's fingerprint: on a route, with the members its
    /// selection ignores left out. A webhook delivery's reads its endpoint's
    /// canonical path, without the query: the same delivery resent to
    /// another spelling of the endpoint is the same request (SPEC §13).
    pub(super) fn fingerprint(&self, head: &RequestHead, body: &[u8]) -> Fingerprint {
        let content_type = head.header("content-type");
        let path = match self.is_delivery() {
            true => self.target.endpoint().to_owned(),
            false => head.path_and_query(),
        };
        match self.route() {
            Some(route) => Fingerprint::of_selected(&head.method, &path, content_type, body, &route.ignore),
            None => Fingerprint::of(&head.method, &path, content_type, body),
        }
    }

    /// The name of `key`'s record: a webhook delivery's names its endpoint
    /// and, when its sender's signature leaves the id out, its body
    /// ([`RecordName::of_delivery`]); any other's its host and its caller's
    /// scope.
    pub(super) fn record_name(&self, head: &RequestHead, key: &IdempotencyKey, body: &[u8]) -> RecordName {
        match self.route().and_then(|route| route.webhook.as_ref()) {
            Some(webhook) => RecordName::of_delivery(&self.target, key, (!webhook.sender.signs_id()).then_some(body)),
            None => RecordName::new(&head.host, &self.config.scope, |n| head.header(n), key),
        }
    }
}

/// Header `name` of `head` as a key source reads it: `Idempotency-Key` is
/// the head's own `key` (`raw`, as text), any other one of the headers the
/// routes read.
fn header<'a>(head: &'a RequestHead, raw: Option<&'a Cow<'a, str>>, name: &str) -> Option<&'a str> {
    match name {
        "idempotency-key" => raw.map(AsRef::as_ref),
        _ => head.header(name),
    }
}
