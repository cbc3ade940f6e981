//! Native microbenchmarks of the core (criterion): what one keyed request
//! costs the core before any I/O — key parse, fingerprint, record name and
//! the `begin` decision — for 1 KB and 64 KB bodies, and the record
//! encoding the Durable Object and KV store. `make bench-core`.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use oncekey::core::{
    Completed, Fingerprint, IdempotencyKey, Record, RecordName, RecordPolicy, ScopeSource, StoreCall, StoredResponse,
    begin, decode_decision,
};

const SIZES: [(&str, usize); 2] = [("1KB", 1024), ("64KB", 64 * 1024)];
const NOW: u64 = 1_760_000_000_000;
const KEY: &str = "0192f3c4-8d1e-7a2b-9c3d-4e5f60718293";

fn body(len: usize) -> Vec<u8> {
    let pattern = b"{\"item\":\"tea\",\"quantity\":1}";
    pattern.iter().copied().cycle().take(len).collect()
}

fn completed(fingerprint: Fingerprint, body_len: usize) -> Completed {
    Completed {
        fingerprint,
        attempt: 1,
        response: StoredResponse {
            status: 201,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("x-request-id".into(), "8f14e45f-ceea-467f-a0e6-3c5e9c5e7f0b".into()),
            ],
            body: Some(body(body_len)),
        }
        .into(),
        expires_at: NOW + 86_400_000,
        copied: false,
    }
}

/// Everything the core does for one keyed request, given the record found.
fn decide(body: &[u8], found: Option<Record>, scope: &[ScopeSource], policy: &RecordPolicy) -> bool {
    let key = IdempotencyKey::parse_bytes(KEY.as_bytes()).expect("valid key");
    let fingerprint = Fingerprint::of("POST", "/api/orders?src=bench", Some("application/json; charset=utf-8"), body);
    let name = RecordName::new("shop.example", scope, |_| Some("Bearer sk_test_4eC39HqLyjWDarjtT1zdp7dc"), &key);
    let step = begin(found, fingerprint, NOW, policy);
    black_box(name);
    matches!(step.answer, oncekey::core::Decision::Replay(_))
}

fn decision_and_fingerprint(c: &mut Criterion) {
    let policy = RecordPolicy::default();
    let scope = [ScopeSource::Header("authorization".into())];
    let mut group = c.benchmark_group("decision+fingerprint");
    for (label, len) in SIZES {
        let request = body(len);
        let fingerprint = Fingerprint::of("POST", "/api/orders?src=bench", Some("application/json"), &request);
        let stored = Record::Completed(completed(fingerprint, 512));
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_with_input(BenchmarkId::new("first execution", label), &request, |b, request| {
            b.iter(|| decide(black_box(request), None, &scope, &policy))
        });
        group.bench_with_input(BenchmarkId::new("replay", label), &request, |b, request| {
            b.iter(|| decide(black_box(request), Some(stored.clone()), &scope, &policy))
        });
    }
    group.finish();
}

fn record_encoding(c: &mut Criterion) {
    let mut group = c.benchmark_group("record");
    for (label, len) in SIZES {
        let record = Record::Completed(completed(Fingerprint([7; 32]), len));
        let bytes = record.encode();
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_with_input(BenchmarkId::new("encode", label), &record, |b, record| {
            b.iter(|| black_box(record).encode())
        });
        group.bench_with_input(BenchmarkId::new("decode", label), &bytes, |b, bytes| {
            b.iter(|| Record::decode(black_box(bytes)).expect("decodes"))
        });
    }
    // The coordinator's whole `begin` call as it crosses the wire: decode
    // the call, run it on a stored record, encode the reply, decode it.
    let policy = RecordPolicy::default();
    let call = StoreCall::Begin {
        policy,
        fingerprint: Fingerprint([7; 32]),
        wait_ms: 0,
        reservation: 1,
        open_keys: Some(Vec::new()),
    }
    .encode();
    let found = Record::Completed(completed(Fingerprint([7; 32]), 1024));
    group.throughput(Throughput::Elements(1));
    group.bench_function("begin call round trip (1KB stored)", |b| {
        b.iter(|| {
            let step = StoreCall::decode(black_box(&call)).expect("call").run(Some(found.clone()), NOW);
            decode_decision(&step.answer).expect("decision")
        })
    });
    group.finish();
}

criterion_group!(benches, decision_and_fingerprint, record_encoding);
criterion_main!(benches);
