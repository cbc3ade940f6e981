//! The request's parts (SPEC §1, §2, §5, §8, §12): its key, what makes two
//! requests the same, whose key it is, which requests are covered, a
//! form's key field, CORS, and the operator's paths.
//!
//! - `key.rs`: the `Idempotency-Key` header;
//! - `key_source.rs`: where a route's key comes from (a header, a JSON
//!   member, a form field);
//! - `fingerprint.rs`, `digest.rs`, `multipart.rs`: the request fingerprint,
//!   and a route's selection of it;
//! - `scope.rs`: the record's name (host, identity, key);
//! - `target.rs`: the canonical path every rule reads;
//! - `paths.rs`: which requests are covered, which need a key;
//! - `provenance.rs`: where a key came from, and whose requests it may key;
//! - `form_field.rs`: the `idempotency_key` field of a form post;
//! - `cors.rs`: which callers' origins are echoed, which headers allowed;
//! - `admin.rs`: the operator's paths.

pub(super) mod admin;
pub(super) mod cors;
pub(super) mod digest;
pub(super) mod fingerprint;
pub(super) mod form_field;
pub(super) mod key;
pub(super) mod key_source;
pub(super) mod multipart;
pub(super) mod paths;
pub(super) mod provenance;
pub(super) mod scope;
pub(super) mod target;

pub use admin::{ADMIN_PREFIX, AdminRefusal, AdminRequest, AdminToken};
pub use cors::{DEFAULT_ALLOW_HEADERS, is_serialized_origin, never_an_origin, preflight_allow_headers};
pub use fingerprint::Fingerprint;
pub use form_field::KEY_FIELD;
pub use key::{IdempotencyKey, KeyError, KeyRefusal, MAX_KEY_LEN};
pub use key_source::{DEFAULT_KEY_SOURCE, KeyLookup, KeySource, KeySourceError, find_key};
pub use paths::{KeyRule, PathPattern, PathPatternError};
pub use provenance::{Provenance, from_own_origin};
pub use scope::{RecordName, ScopeSource, ScopeSourceError};
pub use target::{Ambiguity, CanonicalPath, DotSegment};
