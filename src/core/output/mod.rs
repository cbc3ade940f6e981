//! What the layer writes (SPEC §5, §8, §12): its problem answers, its
//! metrics, the keys it gives an HTML answer's forms, and the hosts' own
//! texts.
//!
//! - `problem.rs`: the layer's errors as RFC 9457 problem details;
//! - `metrics.rs`: one Analytics Engine data point per decision;
//! - `form_keys.rs`: which answers get their forms keys, and their headers;
//! - `page_forms.rs`: which of a page's forms get a key, and where;
//! - `noscript_text.rs`: whether a browser ends each `<noscript>` where the
//!   rewriter does;
//! - `host_text.rs`: what a host writes in its own words, one text for both.

pub(super) mod form_keys;
pub(super) mod host_text;
pub(super) mod metrics;
pub(super) mod noscript_text;
pub(super) mod page_forms;
pub(super) mod problem;

pub use form_keys::LONGEST_TAG_BYTES;
pub use host_text::HostText;
pub use metrics::DataPoint;
pub use noscript_text::noscript_ends_as_text;
pub use page_forms::{Placement, page_form_keys};
pub use problem::{PROBLEM_CONTENT_TYPE, Problem};
