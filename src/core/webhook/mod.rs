//! Webhook deliveries (SPEC §13): who sends them, the secrets they are
//! signed with, and the check of a delivery's signature that runs before
//! any reservation, giving its key, the sender's delivery id.
//!
//! - `sender.rs`: the senders ([`Sender`]) and the headers each signs with;
//! - `secret.rs`: a route's secrets, from its secret binding's value;
//! - `verify.rs`: a delivery checked ([`verify_delivery`]) or refused
//!   ([`WebhookRefusal`]);
//! - `claim.rs`: what a delivery says of itself, unchecked, for the log.

pub(super) mod claim;
pub(super) mod secret;
pub(super) mod sender;
pub(super) mod verify;

pub use claim::claimed_delivery;
pub use secret::{SecretError, WebhookSecret};
pub use sender::{Sender, UnknownSender};
pub use verify::{WebhookRefusal, verify_delivery};
