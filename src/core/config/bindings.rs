//! The bindings the layer uses (SPEC §6, §10, §11, §12): their default
//! names, the kind each must be, how a host tells that kind from another,
//! and what is wrong when one is missing or of another kind. Both hosts
//! read these; neither writes a binding's name or probe of its own.

/// Default name of the coordinator's Durable Object namespace.
pub const COORDINATOR_BINDING: &str = "IDEMPOTENCY_DO";
/// Default name of the KV namespace (copies of answers, or KV-only mode).
pub const KV_BINDING: &str = "IDEMPOTENCY_KV";
/// Default name of the Analytics Engine dataset.
pub const METRICS_BINDING: &str = "IDEMPOTENCY_METRICS";
/// The name of the service binding that makes another Worker the proxy's
/// origin.
pub const ORIGIN_BINDING: &str = "ORIGIN";

/// The kind of a binding the layer checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindingKind {
    /// A Durable Object namespace (the coordinator's).
    DurableObjects,
    /// A Workers KV namespace.
    Kv,
    /// A service binding (another Worker).
    Service,
}

impl BindingKind {
    /// The method every binding of this kind has: a host probes for it to
    /// tell this kind from another (`idFromName`, `put`, `fetch`).
    ///
    /// ```
    /// use oncekey::core::BindingKind;
    /// assert_eq!(BindingKind::DurableObjects.method(), "idFromName");
    /// ```
    pub const fn method(self) -> &'static str {
        match self {
            Self::DurableObjects => "idFromName",
            Self::Kv => "put",
            Self::Service => "fetch",
        }
    }

    /// What the kind is called in a problem's text.
    const fn noun(self) -> &'static str {
        match self {
            Self::DurableObjects => "Durable Object namespace (class IdempotencyCoordinator)",
            Self::Kv => "KV namespace",
            Self::Service => "service",
        }
    }
}

/// How a host found a binding the layer uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindingFound {
    /// Nothing is bound under the name.
    Absent,
    /// Something is, but not the kind the layer needs.
    WrongKind,
    /// The right kind is bound.
    Bound,
}

impl crate::core::Config {
    /// What is wrong with the bindings the host found, named as bound
    /// (SPEC §11): the coordinator's Durable Object namespace (needed unless
    /// KV-only) and the KV namespace (needed in KV-only mode and for KV
    /// copies). A binding that is missing or of the wrong kind is a
    /// configuration error — never a 503 telling clients to retry.
    ///
    /// ```
    /// use oncekey::core::{BindingFound, Config};
    /// let config = Config::default();
    /// let ok = (("IDEMPOTENCY_DO", BindingFound::Bound), ("IDEMPOTENCY_KV", BindingFound::Bound));
    /// assert_eq!(config.binding_problem(ok.0, ok.1), None);
    /// let typo = config.binding_problem(("NOPE", BindingFound::Absent), ok.1).unwrap();
    /// assert!(typo.starts_with("NOPE: no Durable Object namespace"));
    /// ```
    pub fn binding_problem(&self, coordinator: (&str, BindingFound), kv: (&str, BindingFound)) -> Option<String> {
        use crate::core::Consistency;
        let durable = self.consistency == Consistency::Durable;
        let needs_kv = !durable || self.kv_replay.writes_copies();
        let coordinator = durable.then(|| Self::consumer_binding_problem(coordinator));
        coordinator.flatten().or_else(|| needs_kv.then(|| binding_check(kv, BindingKind::Kv)).flatten())
    }

    /// What is wrong with a queue consumer's one binding, its coordinator
    /// namespace (SPEC §11): a consumer keeps its records in the objects and
    /// uses no KV, so it needs no KV binding.
    ///
    /// ```
    /// use oncekey::core::{BindingFound, Config};
    /// assert_eq!(Config::consumer_binding_problem(("IDEMPOTENCY_DO", BindingFound::Bound)), None);
    /// assert!(Config::consumer_binding_problem(("IDEMPOTENCY_DO", BindingFound::Absent)).is_some());
    /// ```
    pub fn consumer_binding_problem(coordinator: (&str, BindingFound)) -> Option<String> {
        binding_check(coordinator, BindingKind::DurableObjects)
    }
}

/// Why binding `name`, found as `found`, is not of the `kind` needed.
fn binding_check((name, found): (&str, BindingFound), kind: BindingKind) -> Option<String> {
    let kind = kind.noun();
    match found {
        BindingFound::Absent => Some(format!("{name}: no {kind} is bound under this name")),
        BindingFound::WrongKind => Some(format!("{name}: the binding is not a {kind}")),
        BindingFound::Bound => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Config;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn each_binding_found_and_what_is_wrong_with_it() {
        let kv_copies = Config::default();
        let kv_only = Config::from_vars(|n| (n == "IDEMPOTENCY_CONSISTENCY").then(|| "kv".to_owned())).unwrap();
        let do_ = |found| ("IDEMPOTENCY_DO", found);
        let kv = |found| ("IDEMPOTENCY_KV", found);
        use BindingFound::{Absent, Bound, WrongKind};
        let cases: [(&Config, _, _, Option<&str>); 6] = [
            (&kv_copies, Bound, Bound, None),
            (
                &kv_copies,
                Absent,
                Bound,
                Some(
                    "IDEMPOTENCY_DO: no Durable Object namespace (class IdempotencyCoordinator) is bound under this name",
                ),
            ),
            (
                &kv_copies,
                WrongKind,
                Bound,
                Some("IDEMPOTENCY_DO: the binding is not a Durable Object namespace (class IdempotencyCoordinator)"),
            ),
            (&kv_only, Absent, Bound, None),
            (&kv_only, Bound, WrongKind, Some("IDEMPOTENCY_KV: the binding is not a KV namespace")),
            (&kv_only, Bound, Absent, Some("IDEMPOTENCY_KV: no KV namespace is bound under this name")),
        ];
        for (config, coordinator, found_kv, expected) in cases {
            let problem = config.binding_problem(do_(coordinator), kv(found_kv));
            assert_eq!(problem.as_deref(), expected, "{coordinator:?} {found_kv:?}");
        }
    }

    #[test]
    fn each_kind_is_probed_by_its_own_method() {
        let kinds = [BindingKind::DurableObjects, BindingKind::Kv, BindingKind::Service];
        let methods: Vec<_> = kinds.iter().map(|k| k.method()).collect();
        assert_eq!(methods, ["idFromName", "put", "fetch"]);
    }
}
