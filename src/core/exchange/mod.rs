//! One request's whole exchange as a sans-IO protocol object (SPEC §1–6),
//! in the style of quinn-proto's `Connection`: the host reads the request's
//! head into a [`RequestHead`], then performs each [`Action`] the
//! [`Exchange`] returns and reports its result back, until [`Action::Done`].
//! Every rule lives here — which requests are covered, when a missing key
//! is an error, which KV copy may be replayed, what each decision answers,
//! how an origin failure maps to an outcome, when a failed `finish` is
//! tried again, which headers an answer carries, what is logged — so the
//! Rust host and the JavaScript host perform the same decisions.
//!
//! ```
//! use std::rc::Rc;
//! use oncekey::core::{Action, BodyRead, Config, Decision, Exchange, RequestHead};
//!
//! let head = RequestHead {
//!     method: "POST".into(),
//!     host: "shop.example".into(),
//!     path: "/api/orders".into(),
//!     key: Some(b"order-1".to_vec()),
//!     ..RequestHead::default()
//! };
//! let (mut exchange, action) = Exchange::start(Rc::new(Config::default()), head, 0);
//! assert!(matches!(action, Action::ReadBody { .. }));
//! let action = exchange.body_read(BodyRead::Complete(b"{}".to_vec()), 1);
//! assert_eq!(action, Action::Detach);
//! let Action::Store { .. } = exchange.detached(1) else { panic!() };
//! let action = exchange.begun(Ok(Decision::Execute { attempt: 1, reclaimed: false }), 2);
//! assert!(matches!(action, Action::CallOrigin { attempt: 1, .. }));
//! ```

mod action;
mod admin;
mod answer_read;
mod head;
mod log;
mod machine;
pub(super) mod origin_failure;
mod reply;
mod route;
mod seal;

pub use action::{Action, BodyRead, CipherCall, CipherOp, HeaderEdit, OriginResult};
pub use answer_read::AnswerRead;
pub use head::RequestHead;
pub use log::{DecisionLog, DeliveryLog, FinishResult, Tier, Timing, Verdict};
pub use machine::{AFTER_DISCONNECT_MS, Exchange, FINISH_RETRY_PAUSES_MS};
pub use origin_failure::EdgeAnswer;
pub use reply::{FormRewrite, Reply, ReplyBody};

#[cfg(test)]
mod tests;
