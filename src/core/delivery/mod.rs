//! One queue message's whole delivery as a sans-IO protocol object (SPEC
//! §11), beside the request's [`Exchange`](crate::core::Exchange): the host
//! starts it with the message, then performs each [`DeliveryAction`] it
//! returns — a store call, the handler's run, the ack or retry, the log
//! line — and reports the result back, until [`DeliveryAction::Done`].
//! Every step is decided here: the key from the strategy, the `begin`, what
//! a completed, running or released record means for the message, the
//! handler's time limit, the `finish`, ack or retry and with which delay,
//! the counters. A host only moves messages, bytes and calls.
//!
//! ```
//! use oncekey::core::{
//!     ConsumerConfig, Decision, DeliveryAction, DeliveryExchange, HandlerRun, Message, MessageBody, RecordPolicy,
//!     encode_decision,
//! };
//!
//! let config = ConsumerConfig::new("loyalty", RecordPolicy::default());
//! let message = Message { id: "m-1".into(), body: Ok(MessageBody::Value(b"{}".to_vec())), timestamp_ms: 0 };
//! let (mut delivery, action) = DeliveryExchange::start(&config, message, None);
//! assert!(matches!(action, DeliveryAction::Store { .. }));
//! let begun = encode_decision(&Decision::Execute { attempt: 1, reclaimed: false });
//! let DeliveryAction::RunHandler { event, .. } = delivery.store_answered(Ok(begun), 1) else { panic!() };
//! assert_eq!((event.key.as_str(), event.attempt), ("m-1", 1));
//! assert!(matches!(delivery.handler_ended(HandlerRun::Done, None), DeliveryAction::Store { .. }));
//! ```

//!
//! - `exchange.rs`: the delivery exchange, its actions and the consumer's
//!   configuration;
//! - `event.rs`: the rules it decides by: the key from the strategy, what a
//!   record means for a message, the retry delays, the counters.

pub(super) mod event;
pub(super) mod exchange;

pub use event::{
    ConsumerStats, Delivery, EVENT_FINGERPRINT, EventKeyStrategy, HandlerRun, MessageBody, Settle, content_key,
    event_record_name, handler_outcome, settle,
};
pub use exchange::{
    ConsumerConfig, ConsumerSetting, DEFAULT_MAX_RETRY_DELAY_SECS, DeliveryAction, DeliveryExchange, Event,
    MAX_CONCURRENCY, Message, batch_lanes,
};

#[cfg(test)]
mod tests;
