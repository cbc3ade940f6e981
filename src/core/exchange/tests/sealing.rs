//! Sealed at rest (SPEC §4): what is sealed, when, bound to what, and what
//! an answer no key opens does — against the coordinator, with the
//! stand-in cipher of `world/cipher.rs` (the hosts' Web Crypto is tested in
//! workerd by tests/edge/sealing.test.mjs).

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use super::*;
use crate::core::{Fingerprint, KeyId, SealKey, StoredAnswer};

/// Two keys, in standard base64.
const KEY_A: &str = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";
const KEY_B: &str = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=";

fn id(byte: u8) -> KeyId {
    SealKey::new([byte; 32]).id()
}

/// A signed-in answer whose body and cookie hold markers.
fn signed_in() -> OriginResult {
    OriginResult::Answered {
        status: 201,
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("set-cookie".into(), "sid=COOKIE-MARKER".into()),
            ("x-order".into(), "HEADER-MARKER".into()),
        ],
        body: br#"{"card":"BODY-MARKER"}"#.to_vec(),
    }
}

/// A keyed request from the page's own site, with its cookies.
fn from_browser(key: &str) -> RequestHead {
    let mut head = keyed(key);
    head.headers.push(("sec-fetch-site".into(), "same-origin".into()));
    head.headers.push(("cookie".into(), "csrf=1".into()));
    head
}

fn holds_a_marker(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    ["COOKIE-MARKER", "HEADER-MARKER", "BODY-MARKER", "x-order", "201"].iter().any(|m| text.contains(m))
}

fn answer_of(record: &Record) -> &StoredAnswer {
    let Record::Completed(completed) = record else { panic!("a stored answer: {record:?}") };
    &completed.response
}

#[test]
fn a_sealed_answer_is_stored_sealed_after_the_answer_and_replays_whole_to_its_browser() {
    let mut world = World::new(&[("IDEMPOTENCY_SEAL_KEYS", KEY_A)]);
    world.origin = Box::new(|_| signed_in());
    let first = world.run(from_browser("k1"), order());
    // The caller's answer first; both parts sealed after it, before `finish`.
    assert_eq!(
        first.steps,
        ["read-body", "detach", "begin", "call-origin", "respond", "pause", "seal", "seal", "finish", "log"]
    );
    assert_eq!(header(&first.reply, "set-cookie"), Some("sid=COOKIE-MARKER"));
    let (name, stored) = world.stored.iter().next().map(|(n, b)| (*n, b.clone())).unwrap();
    assert!(!holds_a_marker(&stored[..stored.len()]), "the object's storage reveals nothing");
    let record = Record::decode(&stored).unwrap();
    let StoredAnswer::Sealed(sealed) = answer_of(&record) else { panic!("sealed") };
    assert_eq!(sealed.key_id, id(1));
    assert!(sealed.cookies.is_some(), "the cookies apart");

    // The retry from the same browser: opened (both parts), replayed whole.
    let retry = world.run(from_browser("k1"), order());
    assert_eq!(retry.steps, ["read-body", "detach", "begin", "open", "open", "respond", "log", "write-copy"]);
    assert_eq!(world.calls, [1], "the origin ran once");
    assert_eq!(retry.reply.status, 201);
    assert_eq!(header(&retry.reply, "idempotent-replayed"), Some("true"));
    assert_eq!(header(&retry.reply, "set-cookie"), Some("sid=COOKIE-MARKER"), "its cookies, to its browser");
    assert_eq!(header(&retry.reply, "x-order"), Some("HEADER-MARKER"));
    assert_eq!(retry.reply.body, ReplyBody::Bytes(br#"{"card":"BODY-MARKER"}"#.to_vec()));

    // The KV copy: sealed, without the cookies part; nothing readable.
    let copy = world.kv.get(&name).unwrap();
    let StoredAnswer::Sealed(copied) = answer_of(copy) else { panic!("the copy is sealed") };
    assert_eq!(copied.cookies, None, "never cookies in KV");
    assert!(!holds_a_marker(&copy.encode()));

    // A request from another site gets no cookies: their part is not even opened.
    let mut cross_site = keyed("k1");
    cross_site.headers.push(("sec-fetch-site".into(), "cross-site".into()));
    let other = world.run(cross_site, order());
    assert_eq!(other.steps, ["read-body", "detach", "begin", "open", "respond", "log"]);
    assert_eq!(header(&other.reply, "set-cookie"), None);
    assert_eq!(header(&other.reply, "x-order"), Some("HEADER-MARKER"));
}

#[test]
fn the_kv_copy_replays_sealed_when_the_object_is_down_and_a_moved_copy_does_not_open() {
    let mut world = World::new(&[("IDEMPOTENCY_SEAL_KEYS", KEY_A)]);
    world.run(keyed("k1"), order());
    world.run(keyed("k1"), order());
    assert_eq!(world.kv.len(), 1, "the first retry wrote the copy");
    world.store_failures = 1;
    let fallback = world.run(keyed("k1"), order());
    assert_eq!((fallback.reply.status, fallback.log["tier"].as_str()), (201, Some("kv")));
    assert_eq!(fallback.reply.body, ReplyBody::Bytes(br#"{"orderId":"o1"}"#.to_vec()));

    // A copy moved under another record's name is bound to its own: it does
    // not open there, and the request fails closed instead of running.
    let copy = world.kv.values().next().unwrap().clone();
    world.run(keyed("k2"), order());
    let name_k2 = *world.stored.keys().find(|n| !world.kv.contains_key(n)).unwrap();
    let Record::Completed(mut planted) = copy else { unreachable!() };
    let Record::Completed(k2) = Record::decode(&world.stored[&name_k2]).unwrap() else { unreachable!() };
    planted.fingerprint = k2.fingerprint;
    world.kv.insert(name_k2, Record::Completed(planted));
    world.store_failures = 1;
    let moved = world.run(keyed("k2"), order());
    assert_eq!((moved.reply.status, code(&moved.reply)), (503, "record-unreadable".to_owned()));
    assert!(moved.log["error"].as_str().unwrap().contains("open:"), "{}", moved.log);
    assert_eq!(world.calls, [1, 1], "nothing ran again");
}

#[test]
fn keys_rotate_with_no_failed_replay_and_a_removed_key_fails_closed() {
    let mut world = World::new(&[("IDEMPOTENCY_SEAL_KEYS", KEY_A)]);
    world.run(keyed("old"), order());
    // The new key first: old records still open; new ones are sealed by it.
    world.config = configured(&[("IDEMPOTENCY_SEAL_KEYS", &format!("{KEY_B},{KEY_A}"))]);
    assert_eq!(world.run(keyed("old"), order()).reply.status, 201);
    world.run(keyed("new"), order());
    let sealed_by: Vec<Option<KeyId>> =
        world.stored.values().map(|bytes| answer_of(&Record::decode(bytes).unwrap()).sealed_by()).collect();
    assert!(sealed_by.contains(&Some(id(1))) && sealed_by.contains(&Some(id(2))), "{sealed_by:?}");
    // The old key removed: its records fail closed, never run again.
    world.config = configured(&[("IDEMPOTENCY_SEAL_KEYS", KEY_B), TOKEN]);
    let orphan = world.run(keyed("old"), order());
    assert_eq!((orphan.reply.status, code(&orphan.reply)), (503, "record-unreadable".to_owned()));
    assert!(orphan.log["error"].as_str().unwrap().contains(&id(1).to_hex()), "the log names the key id");
    assert_eq!(world.run(keyed("new"), order()).reply.status, 201);
    assert_eq!(world.calls, [1, 1], "each key ran once");

    // The operator sees which key sealed it and that it does not open, and
    // can release it; an answer that opens is not released.
    let record = orphan.log["record"].as_str().unwrap().to_owned();
    let path = format!("/.well-known/oncekey/records/{record}");
    let seen = json_body(&world.run(admin("GET", &path, Some("Bearer s3cret")), BodyRead::Incomplete).reply);
    assert_eq!(seen["sealed"]["keyId"].as_str(), Some(id(1).to_hex().as_str()));
    assert_eq!((seen["sealed"]["opens"].as_bool(), seen.get("status")), (Some(false), None));
    let released = world.run(admin("POST", &format!("{path}/release"), Some("Bearer s3cret")), BodyRead::Incomplete);
    assert_eq!(released.reply.status, 200, "{}", json_body(&released.reply));
    let rerun = world.run(keyed("old"), order());
    assert_eq!((rerun.reply.status, world.calls.clone()), (201, vec![1, 1, 2]), "the next attempt runs");

    let new_record = world.run(keyed("new"), order()).log["record"].as_str().unwrap().to_owned();
    let path = format!("/.well-known/oncekey/records/{new_record}/release");
    let kept = world.run(admin("POST", &path, Some("Bearer s3cret")), BodyRead::Incomplete);
    assert_eq!((kept.reply.status, code(&kept.reply)), (409, "not-in-flight".to_owned()));
}

#[test]
fn sealing_turned_off_leaves_sealed_records_unreadable_but_safe_and_plain_ones_replay() {
    let mut world = World::new(&[]);
    world.run(keyed("plain"), order());
    world.config = configured(&[("IDEMPOTENCY_SEAL_KEYS", KEY_A)]);
    assert_eq!(world.run(keyed("plain"), order()).reply.status, 201, "records from before sealing replay");
    world.run(keyed("sealed"), order());
    world.config = configured(&[]);
    let off = world.run(keyed("sealed"), order());
    assert_eq!((off.reply.status, code(&off.reply)), (503, "record-unreadable".to_owned()));
    assert_eq!(world.calls, [1, 1]);
}

#[test]
fn an_answer_that_releases_the_key_goes_to_the_object_as_its_status_alone() {
    let mut world = World::new(&[("IDEMPOTENCY_SEAL_KEYS", KEY_A)]);
    world.origin = Box::new(|attempt| match attempt {
        1 => OriginResult::Answered {
            status: 503,
            headers: vec![("x-order".into(), "HEADER-MARKER".into())],
            body: b"BODY-MARKER".to_vec(),
        },
        _ => created(),
    });
    let first = world.run(keyed("k1"), order());
    assert!(!first.steps.contains(&"seal"), "nothing is stored: nothing sealed");
    assert_eq!(first.log["finish"].as_str(), Some("released"));
    assert_eq!(world.run(keyed("k1"), order()).reply.status, 201, "the retry runs");
    assert_eq!(world.calls, [1, 2]);
}

#[test]
fn a_seal_that_fails_stores_nothing_readable_the_outcome_is_unknown() {
    let mut world = World::new(&[("IDEMPOTENCY_SEAL_KEYS", KEY_A), ("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "0")]);
    world.throw_at = vec!["seal"];
    let first = world.run(keyed("k1"), order());
    assert_eq!(first.reply.status, 201, "the caller has its answer");
    assert_eq!(first.log["finish"].as_str(), Some("lease-kept"));
    assert!(first.log["error"].as_str().unwrap().starts_with("seal:"), "{}", first.log);
    let retry = world.run(keyed("k1"), order());
    assert_eq!((retry.reply.status, code(&retry.reply)), (409, "outcome-unknown".to_owned()));
    assert_eq!(world.calls, [1]);
}

#[test]
fn kv_only_mode_seals_its_copy_before_the_answer() {
    let mut world = World::new(&[("IDEMPOTENCY_SEAL_KEYS", KEY_A), ("IDEMPOTENCY_CONSISTENCY", "kv")]);
    world.origin = Box::new(|_| signed_in());
    let first = world.run(keyed("k1"), order());
    assert_eq!(
        first.steps,
        ["read-body", "detach", "read-copy", "call-origin", "seal", "write-copy", "respond", "log"]
    );
    let copy = world.kv.values().next().unwrap();
    assert!(!holds_a_marker(&copy.encode()));
    let retry = world.run(keyed("k1"), order());
    assert_eq!(retry.reply.body, ReplyBody::Bytes(br#"{"card":"BODY-MARKER"}"#.to_vec()));
    assert_eq!(world.calls, [1]);
}

#[test]
fn without_keys_nothing_changes() {
    let mut world = World::new(&[]);
    let first = world.run(keyed("k1"), order());
    assert!(!first.steps.iter().any(|s| *s == "seal" || *s == "open"));
    let bytes = world.stored.values().next().unwrap();
    assert!(matches!(answer_of(&Record::decode(bytes).unwrap()), StoredAnswer::Plain(_)));
    assert!(matches!(bytes[3], 2 | 5), "a record kind of before sealing: {}", bytes[3]);
}

#[test]
fn read_first_a_copy_that_does_not_open_is_no_answer_the_object_is_asked() {
    let vars = [("IDEMPOTENCY_SEAL_KEYS", KEY_A), ("IDEMPOTENCY_KV_REPLAY", "read-first")];
    let mut world = World::new(&vars);
    world.run(keyed("k1"), order());
    world.run(keyed("k2"), order());
    let (name_k1, name_k2) = {
        let first = world.run(keyed("k1"), order()).log["record"].as_str().unwrap().to_owned();
        let names: Vec<RecordName> = world.kv.keys().copied().collect();
        let k1 = *names.iter().find(|n| n.to_hex() == first).unwrap();
        world.run(keyed("k2"), order());
        (k1, *world.kv.keys().find(|n| **n != k1).unwrap())
    };
    // k2's copy planted under k1's name (the same request body, so the same fingerprint).
    let planted = world.kv[&name_k2].clone();
    world.kv.insert(name_k1, planted);
    let run = world.run(keyed("k1"), order());
    assert_eq!(run.steps[..4], ["read-body", "read-copy", "open", "detach"], "{:?}", run.steps);
    assert_eq!((run.reply.status, header(&run.reply, "idempotent-replayed")), (201, Some("true")));
    assert_eq!(run.log["tier"].as_str(), Some("do"), "the object answered");
    assert!(run.log["error"].as_str().unwrap().starts_with("kv copy: open:"), "{}", run.log);
    // The object's answer put the right copy back (read first, a copy that
    // is not there is written again).
    assert!(world.run(keyed("k1"), order()).steps.contains(&"open"));
    assert_eq!(world.run(keyed("k1"), order()).log["tier"].as_str(), Some("kv"));
    // Planted again, with the object down: the copy fails closed.
    world.kv.insert(name_k1, world.kv[&name_k2].clone());
    world.store_failures = 1;
    let down = world.run(keyed("k1"), order());
    assert_eq!((down.reply.status, code(&down.reply)), (503, "record-unreadable".to_owned()), "{:?}", down.steps);
    assert_eq!(world.calls, [1, 1]);
}

/// The fingerprint `stored`'s record keeps.
fn kept_fingerprint(stored: &[u8]) -> Fingerprint {
    Record::decode(stored).unwrap().fingerprint().expect("a record of a request")
}

#[test]
fn a_sealed_record_keeps_a_keyed_fingerprint_no_body_can_be_found_from() {
    // SPEC §13, "Sealed means sealed": without sealing, a record keeps the
    // request's plain SHA-256, and an amount in a small body is found by
    // trying each; sealed, the fingerprint is an HMAC under a key derived
    // from the seal key, and the same search finds nothing.
    let amount = |cents: u32| format!(r#"{{"item":"tea","amountCents":{cents}}}"#);
    let plain = |cents: u32| Fingerprint::of("POST", "/api/orders", Some("application/json"), amount(cents).as_bytes());
    let search = |kept: Fingerprint| (0..5_000).find(|&cents| plain(cents) == kept);
    let mut open = World::new(&[]);
    open.run(keyed("k"), BodyRead::Complete(amount(4_242).into_bytes()));
    assert_eq!(search(kept_fingerprint(open.stored.values().next().unwrap())), Some(4_242), "the attack, unsealed");
    let mut sealed = World::new(&[("IDEMPOTENCY_SEAL_KEYS", KEY_A)]);
    sealed.run(keyed("k"), BodyRead::Complete(amount(4_242).into_bytes()));
    let kept = kept_fingerprint(sealed.stored.values().next().unwrap());
    assert_eq!(search(kept), None, "sealed, no body is found");
    assert_eq!(kept, SealKey::new([1; 32]).keyed(plain(4_242)));
    // The same request still replays; another body under the key is still 422.
    let again = sealed.run(keyed("k"), BodyRead::Complete(amount(4_242).into_bytes()));
    assert_eq!(header(&again.reply, "idempotent-replayed"), Some("true"));
    let other = sealed.run(keyed("k"), BodyRead::Complete(amount(1).into_bytes()));
    assert_eq!((other.reply.status, code(&other.reply)), (422, "key-reused".to_owned()));
    assert_eq!(sealed.calls, [1]);
}

#[test]
fn a_retry_across_a_key_rotation_or_sealing_turned_on_replays_and_another_body_is_still_422() {
    // Before sealing, under key A, then under B with A kept: each record
    // keeps the fingerprint of its time, and a retry finds it (one `begin`
    // per older fingerprint, only when the first does not match).
    let mut world = World::new(&[]);
    world.run(keyed("plain"), order());
    world.config = configured(&[("IDEMPOTENCY_SEAL_KEYS", KEY_A)]);
    world.run(keyed("under-a"), order());
    world.config = configured(&[("IDEMPOTENCY_SEAL_KEYS", &format!("{KEY_B},{KEY_A}"))]);
    for (key, begins) in [("under-a", 2), ("plain", 3)] {
        let retry = world.run(keyed(key), order());
        assert_eq!(header(&retry.reply, "idempotent-replayed"), Some("true"), "{key}");
        assert_eq!(retry.steps.iter().filter(|s| **s == "begin").count(), begins, "{key}: {:?}", retry.steps);
        let other = world.run(keyed(key), BodyRead::Complete(br#"{"item":"coffee"}"#.to_vec()));
        assert_eq!((other.reply.status, code(&other.reply)), (422, "key-reused".to_owned()), "{key}");
    }
    let new = world.run(keyed("under-b"), order());
    assert_eq!(new.steps.iter().filter(|s| **s == "begin").count(), 1, "a new record: one begin");
    assert_eq!(world.calls, [1, 1, 1], "each ran once");
}
