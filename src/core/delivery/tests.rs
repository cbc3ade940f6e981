//! The delivery exchange's tables (each store answer and handler end, what
//! the message gets) and a model test: a queue that redelivers, publishes
//! twice, fails handlers and loses consumers, on a virtual clock, against
//! the real record rules in a [`MemoryStore`].

use std::collections::BTreeMap;

use super::*;
use crate::core::delivery::event::UNREADABLE_RETRY_SECS;
use crate::core::delivery::exchange::*;
use crate::core::record::store::now_or_never;
use crate::core::{Completed, MemoryStore, Store, StoreCall, StoredResponse, encode_decision, encode_finished};
use crate::core::{Decision, FINISH_RETRY_PAUSES_MS, Finished, RecordName, RecordPolicy};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

const LEASE_MS: u64 = 30_000;

fn config() -> ConsumerConfig {
    ConsumerConfig::new("loyalty", RecordPolicy { lease_ms: LEASE_MS, ..RecordPolicy::default() })
}

fn message(id: &str, body: &str, timestamp_ms: u64) -> Message {
    Message { id: id.into(), body: Ok(MessageBody::Value(body.as_bytes().to_vec())), timestamp_ms }
}

fn begun(decision: Decision) -> Result<Vec<u8>, String> {
    Ok(encode_decision(&decision))
}

fn completed() -> Decision {
    Decision::Replay(Completed {
        fingerprint: EVENT_FINGERPRINT,
        response: StoredResponse { status: 204, headers: vec![], body: None }.into(),
        attempt: 1,
        expires_at: u64::MAX,
        copied: false,
    })
}

fn line(action: DeliveryAction) -> serde_json::Value {
    let DeliveryAction::Log(line) = action else { panic!("expected the log line, got {action:?}") };
    serde_json::from_str(&line).unwrap()
}

#[test]
fn begin_goes_to_the_key_record_within_the_store_limit() {
    let config = ConsumerConfig { store_timeout_ms: 1234, ..config() };
    let (_, action) = DeliveryExchange::start(&config, message("m-1", "{}", 0), None);
    let DeliveryAction::Store { name, call: StoreCall::Begin { fingerprint, wait_ms, .. }, timeout_ms } = action else {
        panic!("{action:?}")
    };
    assert_eq!(name, event_record_name("loyalty", "m-1"));
    assert_eq!((fingerprint, wait_ms, timeout_ms), (EVENT_FINGERPRINT, 0, 1234));
}

#[test]
fn each_key_strategy_names_the_record() {
    let body = r#"{"orderId":"o1","at":"10:00"}"#;
    let cases = [
        (EventKeyStrategy::MessageId, None, "m-1".to_owned()),
        (
            EventKeyStrategy::ContentHash { ignore_fields: vec!["at".into()] },
            None,
            crate::core::content_key(&MessageBody::Value(body.as_bytes().to_vec()), &["at"]),
        ),
        (EventKeyStrategy::Custom, Some(Ok("OrderPlaced:o1".to_owned())), "OrderPlaced:o1".to_owned()),
        // A key given to a consumer that is not custom is not used.
        (EventKeyStrategy::MessageId, Some(Ok("other".to_owned())), "m-1".to_owned()),
    ];
    for (strategy, custom, key) in cases {
        let config = ConsumerConfig { strategy: strategy.clone(), ..config() };
        let (mut delivery, action) = DeliveryExchange::start(&config, message("m-1", body, 0), custom);
        let DeliveryAction::Store { name, call: StoreCall::Begin { fingerprint, .. }, .. } = action else { panic!() };
        assert_eq!(name, event_record_name("loyalty", &key), "{strategy:?}");
        // A key of the user's own carries the content: reused for other
        // content, it is told apart (SPEC §11).
        let content = strategy == EventKeyStrategy::Custom;
        assert_eq!(fingerprint != crate::core::EVENT_FINGERPRINT, content, "{strategy:?}");
        let run = delivery.store_answered(begun(Decision::Execute { attempt: 1, reclaimed: false }), 0);
        let DeliveryAction::RunHandler { event, .. } = run else { panic!() };
        assert_eq!(event.key, key);
    }
}

#[test]
fn a_message_with_no_key_is_retried_alone_never_taken_for_another() {
    // SPEC §11: (strategy, what the key function gave, body) → why there is no key.
    let custom = ConsumerConfig { strategy: EventKeyStrategy::Custom, ..config() };
    let hashed = ConsumerConfig { strategy: EventKeyStrategy::ContentHash { ignore_fields: vec![] }, ..config() };
    let unhashable = |id: &str| Message { id: id.into(), body: Err("a Map is not JSON".into()), timestamp_ms: 0 };
    type Case<'a> = (&'a ConsumerConfig, Message, Option<Result<String, String>>, &'a str);
    let cases: Vec<Case> = vec![
        (&custom, message("m-1", "{}", 0), Some(Err("TypeError: orderId of undefined".into())), "gave no key"),
        (&custom, message("m-2", "{}", 0), Some(Ok(String::new())), "is empty"),
        (&custom, message("m-3", "{}", 0), Some(Ok("two words".into())), "outside visible ASCII"),
        (&custom, message("m-4", "{}", 0), Some(Ok("é".into())), "outside visible ASCII"),
        (&custom, message("m-5", "{}", 0), Some(Ok("k".repeat(256))), "256 characters"),
        (&custom, message("m-6", "{}", 0), None, "not called"),
        (&hashed, unhashable("m-7"), None, "cannot be hashed: a Map is not JSON"),
    ];
    for (config, message, key, why) in cases {
        let id = message.id.clone();
        let (mut delivery, action) = DeliveryExchange::start(config, message, key);
        assert_eq!(action, DeliveryAction::Retry { delay_secs: 1 }, "{id}: retried, never acked, no store call");
        let logged = line(delivery.settled());
        assert_eq!((logged["delivery"].as_str(), logged["settle"].as_str()), (Some("no-key"), Some("retry")), "{id}");
        let error = logged["error"].as_str().unwrap();
        assert!(error.starts_with(&format!("message {id}: ")) && error.contains(why), "{id}: {error}");
        assert!(logged["record"].is_null(), "{id}: no record");
        assert_eq!(delivery.logged(), DeliveryAction::Done);
        assert!(delivery.stats().is_empty(), "{id}: counted as nothing");
    }
    // A body the content hash cannot read is no matter when nothing hashes it.
    let (_, action) = DeliveryExchange::start(&config(), unhashable("m-8"), None);
    assert!(matches!(action, DeliveryAction::Store { .. }), "{action:?}");
}

#[test]
fn a_batch_s_lanes_keep_one_key_s_deliveries_in_order_and_apart_from_keyless_ones() {
    let custom = ConsumerConfig { strategy: EventKeyStrategy::Custom, ..config() };
    let keys = [Some("a"), Some("b"), Some("a"), None, None, Some("b"), Some("c")];
    let records: Vec<Option<RecordName>> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| {
            let given = key.map(|k| Ok(k.to_owned())).unwrap_or_else(|| Err("no orderId".to_owned()));
            DeliveryExchange::start(&custom, message(&format!("m-{i}"), "{}", 0), Some(given)).0.record()
        })
        .collect();
    assert_eq!(records[0], Some(event_record_name("loyalty", "a")));
    assert_eq!(records[3], None, "a keyless message has no record");
    assert_eq!(batch_lanes(&records), vec![vec![0, 2], vec![1, 5], vec![3], vec![4], vec![6]]);
    assert!(batch_lanes::<RecordName>(&[]).is_empty());
}

#[test]
fn a_finish_the_store_fails_is_repeated_before_the_message_settles() {
    let (mut delivery, _) = DeliveryExchange::start(&config(), message("m-1", "{}", 0), None);
    delivery.store_answered(begun(Decision::Execute { attempt: 1, reclaimed: false }), 0);
    let finish = delivery.handler_ended(HandlerRun::Done, None);
    assert!(matches!(finish, DeliveryAction::Store { call: StoreCall::Finish { .. }, .. }));
    for ms in FINISH_RETRY_PAUSES_MS {
        assert_eq!(delivery.store_answered(Err("down".into()), 0), DeliveryAction::Pause { ms });
        assert_eq!(delivery.paused(), finish, "the same finish again");
    }
    let stored = Ok(encode_finished(&Finished::Stored(completed_record())));
    assert_eq!(delivery.store_answered(stored, 0), DeliveryAction::Ack);
    assert_eq!(line(delivery.settled())["finish"], "stored");
}

#[test]
fn what_each_begin_answer_does_with_the_message() {
    // (answer, message age in ms, action, delivery in the log, counts)
    let in_flight = |secs| Decision::InFlight { retry_after_secs: secs, outcome_unknown: false, attempt: 0 };
    let run = |attempt, reclaimed| DeliveryAction::RunHandler {
        event: Event { id: "m-1".into(), key: "m-1".into(), body: b"{}".to_vec(), attempt, reclaimed },
        timeout_ms: config().handler_timeout_ms,
    };
    let stats = |first_runs, duplicates_skipped, in_flight_conflicts, reclaims| ConsumerStats {
        first_runs,
        duplicates_skipped,
        in_flight_conflicts,
        releases: 0,
        reclaims,
        keys_reused: 0,
    };
    type Case = (Result<Vec<u8>, String>, u64, DeliveryAction, &'static str, ConsumerStats);
    let cases: Vec<Case> = vec![
        (begun(Decision::Execute { attempt: 1, reclaimed: false }), 0, run(1, false), "run", stats(1, 0, 0, 0)),
        (begun(Decision::Execute { attempt: 2, reclaimed: false }), 0, run(2, false), "run", stats(0, 0, 0, 0)),
        (begun(Decision::Execute { attempt: 3, reclaimed: true }), 0, run(3, true), "run-reclaimed", stats(0, 0, 0, 1)),
        (begun(completed()), 0, DeliveryAction::Ack, "duplicate", stats(0, 1, 0, 0)),
        // A key of the user's own, handled for other content: retried until
        // it dead-letters, counted, never acked (SPEC §11).
        (
            begun(Decision::Mismatch),
            9_500,
            DeliveryAction::Retry { delay_secs: 9 },
            "key-reused",
            ConsumerStats { keys_reused: 1, ..stats(0, 0, 0, 0) },
        ),
        // Another consumer holds the key: the delay grows with the
        // message's age, capped by the lease.
        (begun(in_flight(1)), 0, DeliveryAction::Retry { delay_secs: 1 }, "in-flight", stats(0, 0, 1, 0)),
        (begun(in_flight(1)), 9_500, DeliveryAction::Retry { delay_secs: 9 }, "in-flight", stats(0, 0, 1, 0)),
        (begun(in_flight(1)), 600_000, DeliveryAction::Retry { delay_secs: 30 }, "in-flight", stats(0, 0, 1, 0)),
        (
            begun(Decision::Unreadable),
            0,
            DeliveryAction::Retry { delay_secs: UNREADABLE_RETRY_SECS },
            "in-flight",
            stats(0, 0, 1, 0),
        ),
        // The store down, or a reply that is not one: fail closed.
        (Err("down".into()), 0, DeliveryAction::Retry { delay_secs: 1 }, "store-unavailable", stats(0, 0, 0, 0)),
        (Err("down".into()), 12_000, DeliveryAction::Retry { delay_secs: 12 }, "store-unavailable", stats(0, 0, 0, 0)),
        (Ok(b"garbage".to_vec()), 0, DeliveryAction::Retry { delay_secs: 1 }, "store-unavailable", stats(0, 0, 0, 0)),
    ];
    for (answer, age_ms, want, delivery_word, counts) in cases {
        let (mut delivery, _) = DeliveryExchange::start(&config(), message("m-1", "{}", 1_000), None);
        let action = delivery.store_answered(answer.clone(), 1_000 + age_ms);
        assert_eq!(action, want, "{answer:?} at age {age_ms}");
        assert_eq!(delivery.stats(), counts, "{answer:?}");
        if matches!(action, DeliveryAction::RunHandler { .. }) {
            continue;
        }
        let logged = line(delivery.settled());
        assert_eq!(logged["delivery"], delivery_word);
        assert_eq!(delivery.logged(), DeliveryAction::Done);
    }
}

#[test]
fn how_the_handler_ended_and_finish_answered_settle_the_message() {
    // (run, finish's answer, attempt, action, finish in the log, releases)
    type Case = (HandlerRun, Result<Finished, String>, u32, DeliveryAction, &'static str, u64);
    let cases: Vec<Case> = vec![
        (HandlerRun::Done, Ok(Finished::Stored(completed_record())), 1, DeliveryAction::Ack, "stored", 0),
        (HandlerRun::Done, Ok(Finished::Stale), 1, DeliveryAction::Ack, "stale", 0),
        // The work is done; the record's lease simply runs out.
        (HandlerRun::Done, Err("down".into()), 1, DeliveryAction::Ack, "store-failed", 0),
        (HandlerRun::Failed, Ok(Finished::Released), 1, DeliveryAction::Retry { delay_secs: 1 }, "released", 1),
        (HandlerRun::Failed, Ok(Finished::Released), 3, DeliveryAction::Retry { delay_secs: 4 }, "released", 1),
        (HandlerRun::Failed, Ok(Finished::Released), 20, DeliveryAction::Retry { delay_secs: 300 }, "released", 1),
        (HandlerRun::Failed, Err("down".into()), 2, DeliveryAction::Retry { delay_secs: 2 }, "store-failed", 0),
        (
            HandlerRun::StillRunning,
            Ok(Finished::LeaseKept),
            1,
            DeliveryAction::Retry { delay_secs: 1 },
            "lease-kept",
            0,
        ),
    ];
    for (run, finished, attempt, want, finish_word, releases) in cases {
        let (mut delivery, _) = DeliveryExchange::start(&config(), message("m-1", "{}", 0), None);
        delivery.store_answered(begun(Decision::Execute { attempt, reclaimed: false }), 0);
        let error = (run == HandlerRun::Failed).then(|| "card declined".to_owned());
        let DeliveryAction::Store { call: StoreCall::Finish { attempt: finishing, outcome, .. }, .. } =
            delivery.handler_ended(run, error)
        else {
            panic!("{run:?}: finish first")
        };
        assert_eq!((finishing, outcome), (attempt, handler_outcome(run)));
        let reply = finished.clone().map(|f| encode_finished(&f));
        if reply.is_err() {
            // Repeated first, as every failed finish is.
            for _ in FINISH_RETRY_PAUSES_MS {
                assert!(matches!(delivery.store_answered(reply.clone(), 0), DeliveryAction::Pause { .. }));
                delivery.paused();
            }
        }
        assert_eq!(delivery.store_answered(reply, 0), want, "{run:?} {finished:?}");
        assert_eq!(delivery.stats().releases, releases);
        let logged = line(delivery.settled());
        assert_eq!(logged["finish"], finish_word);
        assert_eq!(logged["attempt"], attempt);
        let error = logged["error"].as_str().unwrap_or_default().to_owned();
        match (run, &finished) {
            (HandlerRun::Failed, Ok(_)) => assert_eq!(error, "handler: card declined"),
            (HandlerRun::StillRunning, _) => assert!(error.starts_with("handler still running after"), "{error}"),
            (_, Err(e)) => assert_eq!(&error, e),
            _ => assert_eq!(error, ""),
        }
    }
}

fn completed_record() -> Completed {
    let Decision::Replay(completed) = completed() else { unreachable!() };
    completed
}

#[test]
fn the_log_line_names_the_record_never_the_key_or_body() {
    let (mut delivery, _) = DeliveryExchange::start(&config(), message("secret-id", r#"{"card":"4242"}"#, 0), None);
    delivery.store_answered(begun(completed()), 0);
    let text = {
        let DeliveryAction::Log(text) = delivery.settled() else { panic!() };
        text
    };
    assert!(!text.contains("secret-id") && !text.contains("4242"), "{text}");
    let logged: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(logged["oncekey"], "event");
    assert_eq!(logged["consumer"], "loyalty");
    assert_eq!(logged["record"], event_record_name("loyalty", "secret-id").to_hex());
    assert_eq!(logged["settle"], "ack");
    assert!(logged["delay_s"].is_null());
}

#[test]
fn log_sample_drops_only_routine_event_lines() {
    // SPEC §5 (issue 53): at 0, a message run once and a duplicate write no
    // line; a failed run, a reused key and a message with no key always do.
    let quiet = ConsumerConfig { log_sample: crate::core::LogSample::parse("0").unwrap(), ..config() };
    let settle = |delivery: &mut DeliveryExchange, action: DeliveryAction| match action {
        DeliveryAction::Ack | DeliveryAction::Retry { .. } => delivery.settled(),
        other => panic!("expected a settle, got {other:?}"),
    };
    let run = |handler: HandlerRun| {
        let (mut delivery, _) = DeliveryExchange::start(&quiet, message("m-1", "{}", 0), None);
        delivery.store_answered(begun(Decision::Execute { attempt: 1, reclaimed: false }), 0);
        delivery.handler_ended(handler, (handler == HandlerRun::Failed).then(|| "no".to_owned()));
        let finished = match handler {
            HandlerRun::Done => Finished::Stored(completed_record()),
            _ => Finished::Released,
        };
        let action = delivery.store_answered(Ok(encode_finished(&finished)), 0);
        settle(&mut delivery, action)
    };
    assert_eq!(run(HandlerRun::Done), DeliveryAction::Done, "run once: sampled away");
    assert!(matches!(run(HandlerRun::Failed), DeliveryAction::Log(_)), "a failed run is logged");
    let (mut duplicate, _) = DeliveryExchange::start(&quiet, message("m-2", "{}", 0), None);
    let action = duplicate.store_answered(begun(completed()), 0);
    assert_eq!(settle(&mut duplicate, action), DeliveryAction::Done, "a duplicate: sampled away");
    let (mut reused, _) = DeliveryExchange::start(&quiet, message("m-3", "{}", 0), None);
    let action = reused.store_answered(begun(Decision::Mismatch), 0);
    assert!(matches!(settle(&mut reused, action), DeliveryAction::Log(_)), "a reused key is logged");
    let mut custom = ConsumerConfig { strategy: EventKeyStrategy::Custom, ..quiet.clone() };
    custom.log_sample = quiet.log_sample;
    let (mut keyless, action) = DeliveryExchange::start(&custom, message("m-4", "{}", 0), Some(Err("none".into())));
    assert!(matches!(settle(&mut keyless, action), DeliveryAction::Log(_)), "no key: logged");
    // Unset, every line.
    let (mut all, _) = DeliveryExchange::start(&config(), message("m-5", "{}", 0), None);
    let action = all.store_answered(begun(completed()), 0);
    assert!(matches!(settle(&mut all, action), DeliveryAction::Log(_)));
}

#[test]
fn results_out_of_turn_end_the_delivery() {
    let (mut delivery, _) = DeliveryExchange::start(&config(), message("m-1", "{}", 0), None);
    assert_eq!(delivery.handler_ended(HandlerRun::Done, None), DeliveryAction::Done, "no run under way");
    assert_eq!(delivery.settled(), DeliveryAction::Done, "nothing settled yet");
    assert!(matches!(
        delivery.store_answered(begun(Decision::Execute { attempt: 1, reclaimed: false }), 0),
        DeliveryAction::RunHandler { .. }
    ));
}

/// Applies a store call to `store` as a coordinator would: the reply's bytes.
fn perform(store: &MemoryStore, name: &RecordName, call: StoreCall, now_ms: u64) -> Vec<u8> {
    match call {
        StoreCall::Begin { fingerprint, .. } => {
            let Ok(decision) = now_or_never(store.begin(name, fingerprint, now_ms));
            encode_decision(&decision)
        }
        StoreCall::Finish { attempt, outcome, .. } => {
            let Ok(finished) = now_or_never(store.finish(name, attempt, outcome, now_ms));
            encode_finished(&finished)
        }
        other => panic!("a consumer makes no {other:?} call"),
    }
}

/// How one delivery's handler behaves in the model.
#[derive(Clone, Copy, Debug)]
enum Handler {
    /// Does its work and returns `Ok`.
    Succeeds,
    /// Fails before doing any work.
    Fails,
    /// The consumer dies before the handler starts (the isolate is lost):
    /// nothing is settled, and the queue redelivers later.
    ConsumerDies,
    /// The store is down for this delivery's calls.
    StoreDown,
}

/// Delivers `sends` (event id, the message ids it was published under)
/// through a queue that retries as asked, with each delivery's handler
/// behaving as `behaviours` says in turn (then succeeding). Returns how many
/// times each event's work was done and the counts, after every message
/// is acknowledged.
fn run_model(sends: &[(u8, u8)], behaviours: &[Handler]) -> (BTreeMap<u8, u32>, ConsumerStats, usize) {
    let config =
        ConsumerConfig { strategy: EventKeyStrategy::ContentHash { ignore_fields: vec!["sentAt".into()] }, ..config() };
    let store = MemoryStore::new(config.policy.clone());
    let mut clock = 0u64;
    // (due at, message): a min-queue by due time, in send order.
    let mut queue: Vec<(u64, Message)> = sends
        .iter()
        .enumerate()
        .map(|(i, &(event, copy))| {
            let body = format!(r#"{{"event":{event},"sentAt":{i}}}"#);
            (0, message(&format!("m-{event}-{copy}-{i}"), &body, 0))
        })
        .collect();
    let mut done = BTreeMap::<u8, u32>::new();
    let mut stats = ConsumerStats::default();
    let mut next = behaviours.iter().copied();
    let mut deliveries = 0;
    while !queue.is_empty() {
        deliveries += 1;
        assert!(deliveries < 10_000, "the queue never drains");
        queue.sort_by_key(|(due, _)| *due);
        let (due, msg) = queue.remove(0);
        clock = clock.max(due);
        let behaviour = next.next().unwrap_or(Handler::Succeeds);
        let (mut delivery, mut action) = DeliveryExchange::start(&config, msg.clone(), None);
        loop {
            action = match action {
                DeliveryAction::Store { name, call, .. } => {
                    let reply = match behaviour {
                        Handler::StoreDown => Err("store down".to_owned()),
                        _ => Ok(perform(&store, &name, call, clock)),
                    };
                    delivery.store_answered(reply, clock)
                }
                DeliveryAction::RunHandler { event, .. } => match behaviour {
                    Handler::ConsumerDies => {
                        // Redelivered once the lease has run out (or sooner).
                        queue.push((clock + LEASE_MS + 1, msg.clone()));
                        break;
                    }
                    Handler::Fails => delivery.handler_ended(HandlerRun::Failed, Some("no".into())),
                    Handler::Succeeds | Handler::StoreDown => {
                        let event_id: u8 = serde_json::from_slice::<serde_json::Value>(&event.body).unwrap()["event"]
                            .as_u64()
                            .unwrap() as u8;
                        *done.entry(event_id).or_default() += 1;
                        clock += 5;
                        delivery.handler_ended(HandlerRun::Done, None)
                    }
                },
                DeliveryAction::Ack => delivery.settled(),
                DeliveryAction::Retry { delay_secs } => {
                    assert!(delay_secs >= 1 && delay_secs <= config.max_retry_delay_secs);
                    queue.push((clock + u64::from(delay_secs) * 1000, msg.clone()));
                    delivery.settled()
                }
                DeliveryAction::Pause { ms } => {
                    clock += ms;
                    delivery.paused()
                }
                DeliveryAction::Log(_) => delivery.logged(),
                DeliveryAction::Done => break,
            };
        }
        stats.add(&delivery.stats());
        clock += 1;
    }
    (done, stats, deliveries)
}

#[test]
fn the_consumer_settings_one_rule_for_both_hosts() {
    // The Rust builder clamps, the JavaScript options refuse: the same
    // bounds. Queues accept delays up to 12 hours; the Rust builder used to
    // let a cap past that through (and the queue refuse the retry).
    let delay = ConsumerSetting::MAX_RETRY_DELAY_SECS;
    let clamped =
        [(0, 1), (1, 1), (300, 300), (43_200, 43_200), (43_201, 43_200), (86_400, 43_200), (u32::MAX, 43_200)];
    for (given, set) in clamped {
        assert_eq!(delay.clamp(given), set, "clamp {given}");
    }
    let rule = "a whole number of seconds from 1 to 43200";
    let checked: [(f64, Result<u32, &str>); 9] = [
        (1.0, Ok(1)),
        (300.0, Ok(300)),
        (43_200.0, Ok(43_200)),
        (0.0, Err(rule)),
        (43_201.0, Err(rule)),
        (-5.0, Err(rule)),
        (1.5, Err(rule)),
        (f64::NAN, Err(rule)),
        (f64::INFINITY, Err(rule)),
    ];
    for (given, expected) in checked {
        assert_eq!(delay.check(given), expected.map_err(str::to_owned), "check {given}");
    }
    let concurrency = ConsumerSetting::CONCURRENCY;
    assert_eq!((concurrency.clamp(0), concurrency.clamp(7), concurrency.clamp(1_000)), (1, 7, MAX_CONCURRENCY as u32));
    assert_eq!(concurrency.check(100.0), Ok(100));
    assert_eq!(concurrency.check(101.0).unwrap_err(), "a whole number from 1 to 100");
}

#[test]
fn a_consumer_from_the_layer_s_variables_takes_its_records_and_time_limits() {
    let vars = [
        ("IDEMPOTENCY_LEASE_SECONDS", "60"),
        ("IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS", "20"),
        ("IDEMPOTENCY_STORE_TIMEOUT_MS", "750"),
        ("IDEMPOTENCY_TTL_SECONDS", "3600"),
    ];
    let layer = crate::core::Config::from_vars(|n| vars.iter().find(|(v, _)| *v == n).map(|(_, t)| (*t).to_owned()))
        .expect("valid");
    let consumer = ConsumerConfig::from_layer("loyalty", &layer);
    assert_eq!(consumer.name, "loyalty");
    assert_eq!(consumer.policy, layer.policy.records);
    assert_eq!((consumer.store_timeout_ms, consumer.handler_timeout_ms), (750, 20_000));
    let defaults = ConsumerConfig::new("loyalty", layer.policy.records.clone());
    assert_eq!(
        (consumer.strategy, consumer.max_retry_delay_secs, consumer.concurrency),
        (defaults.strategy, defaults.max_retry_delay_secs, defaults.concurrency)
    );
}

#[test]
fn the_model_runs_each_event_once_through_redeliveries_failures_and_deaths() {
    let sends = [(1, 0), (1, 1), (2, 0), (1, 2), (3, 0), (2, 1)];
    let behaviours = [Handler::Fails, Handler::ConsumerDies, Handler::StoreDown, Handler::Succeeds, Handler::Fails];
    let (done, stats, deliveries) = run_model(&sends, &behaviours);
    assert_eq!(done, BTreeMap::from([(1, 1), (2, 1), (3, 1)]));
    assert!(deliveries > sends.len(), "failures and the death were redelivered");
    assert_eq!(stats.releases, 2, "two failures released their key");
    assert_eq!(stats.reclaims, 1, "the death's lease was taken over");
}

#[cfg(not(target_arch = "wasm32"))]
proptest::proptest! {
    #[test]
    fn prop_every_event_is_handled_exactly_once(
        sends in proptest::collection::vec((0u8..4, 0u8..3), 1..12),
        behaviours in proptest::collection::vec(
            proptest::sample::select(vec![Handler::Succeeds, Handler::Fails, Handler::ConsumerDies, Handler::StoreDown]),
            0..16,
        ),
    ) {
        let (done, stats, _) = run_model(&sends, &behaviours);
        let events: std::collections::BTreeSet<u8> = sends.iter().map(|(event, _)| *event).collect();
        proptest::prop_assert_eq!(done.keys().copied().collect::<std::collections::BTreeSet<_>>(), events.clone());
        proptest::prop_assert!(done.values().all(|&n| n == 1), "{:?}", done);
        // Each event's first run counts once, whatever followed it (a
        // release or a reclaim and another run: those count as such).
        proptest::prop_assert_eq!(stats.first_runs, events.len() as u64);
    }
}
