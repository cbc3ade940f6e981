//! do-only in Rust: bench/peers/do-only.ts as a workers-rs user would
//! write it. The same rules (key validation, fingerprint, lease, 409 in
//! flight, 422 on a different request, replay, release on 408/425/429/503,
//! every other answer stored), the same records and log line. One Durable
//! Object per key, reached through its `fetch` (workers-rs has no RPC
//! stubs): `begin` takes the lock or answers, the worker calls the origin,
//! `finish` stores the answer, all before the caller's answer. No KV.
//! The control for oncekey's Rust host: what workers-rs charges for the
//! same work (bundle, cold start, CPU), beside the TypeScript do-only.

use futures_channel::oneshot;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use worker::{
    Context, Date, DurableObject, Env, Fetch, Headers, Method, Request, RequestInit, Response, Result, State,
    console_log, durable_object, event, wasm_bindgen::JsValue,
};

const LEASE_MS: u64 = 120_000;
const TTL_MS: u64 = 86_400_000;
const RELEASE_ON: [u16; 4] = [408, 425, 429, 503];
const NOT_STORED: [&str; 8] =
    ["connection", "content-length", "keep-alive", "set-cookie", "transfer-encoding", "upgrade", "te", "trailer"];
const MAX_BODY: usize = 1_048_576;

#[derive(Serialize, Deserialize, Clone)]
struct Stored {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
enum Rec {
    #[serde(rename_all = "camelCase")]
    InFlight { fp: String, attempt: u32, lease_until: u64, expires_at: u64 },
    #[serde(rename_all = "camelCase")]
    Completed { fp: String, attempt: u32, response: Stored, expires_at: u64 },
    #[serde(rename_all = "camelCase")]
    Released { last_attempt: u32, expires_at: u64 },
}

impl Rec {
    fn expires_at(&self) -> u64 {
        match self {
            Rec::InFlight { expires_at, .. } | Rec::Completed { expires_at, .. } | Rec::Released { expires_at, .. } => {
                *expires_at
            }
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum Decision {
    Execute { attempt: u32 },
    InFlight,
    Mismatch,
    Replay { response: Stored },
}

#[derive(Serialize, Deserialize)]
struct Finish {
    attempt: u32,
    response: Option<Stored>,
}

fn now() -> u64 {
    Date::now().as_millis()
}

/// One object per record name: decides and writes with no other await between.
#[durable_object]
pub struct Coordinator {
    state: State,
}

impl DurableObject for Coordinator {
    fn new(state: State, _env: Env) -> Self {
        Self { state }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        match req.path().as_str() {
            "/begin" => Response::from_json(&self.begin(req.text().await?).await?),
            "/finish" => {
                self.finish(req.json().await?).await?;
                Response::empty()
            }
            _ => Response::error("not found", 404),
        }
    }

    async fn alarm(&self) -> Result<Response> {
        let storage = self.state.storage();
        match storage.get::<Rec>("r").await? {
            Some(rec) if rec.expires_at() > now() => storage.set_alarm(rec.expires_at() as i64).await?,
            _ => storage.delete_all().await?,
        }
        Response::empty()
    }
}

impl Coordinator {
    async fn begin(&self, fp: String) -> Result<Decision> {
        let now = now();
        let storage = self.state.storage();
        let rec = storage.get::<Rec>("r").await?.filter(|rec| rec.expires_at() > now);
        let attempt = match rec {
            Some(Rec::Completed { fp: stored, response, .. }) => {
                return Ok(if stored == fp { Decision::Replay { response } } else { Decision::Mismatch });
            }
            Some(Rec::InFlight { fp: stored, .. }) if stored != fp => return Ok(Decision::Mismatch),
            Some(Rec::InFlight { lease_until, .. }) if now < lease_until => return Ok(Decision::InFlight),
            Some(Rec::InFlight { attempt, .. }) => attempt + 1,
            Some(Rec::Released { last_attempt, .. }) => last_attempt + 1,
            None => 1,
        };
        let expires_at = now + LEASE_MS + TTL_MS;
        storage.put("r", Rec::InFlight { fp, attempt, lease_until: now + LEASE_MS, expires_at }).await?;
        if storage.get_alarm().await?.is_none() {
            storage.set_alarm(expires_at as i64).await?;
        }
        Ok(Decision::Execute { attempt })
    }

    /// `response` none: the request was never sent (release). Only the attempt holding the lease lands.
    async fn finish(&self, Finish { attempt, response }: Finish) -> Result<()> {
        let now = now();
        let storage = self.state.storage();
        let fp = match storage.get::<Rec>("r").await? {
            Some(Rec::InFlight { fp, attempt: holder, lease_until, .. }) if holder == attempt && now < lease_until => {
                fp
            }
            _ => return Ok(()),
        };
        let next = match response {
            Some(response) if !RELEASE_ON.contains(&response.status) => {
                Rec::Completed { fp, attempt, response, expires_at: now + TTL_MS }
            }
            _ => Rec::Released { last_attempt: attempt, expires_at: now + TTL_MS },
        };
        storage.put("r", next).await
    }
}

/// SHA-256 of `parts`, each prefixed by its length, in hex.
fn sha256_hex(parts: &[&[u8]]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn problem(status: u16, code: &str, retry_after: Option<&str>) -> Result<Response> {
    let body = serde_json::json!({
        "type": format!("urn:oncekey:problem:{code}"), "title": code, "status": status, "detail": code,
    });
    let headers = Headers::new();
    headers.set("content-type", "application/problem+json")?;
    headers.set("cache-control", "no-store")?;
    if let Some(seconds) = retry_after {
        headers.set("retry-after", seconds)?;
    }
    Ok(Response::ok(body.to_string())?.with_status(status).with_headers(headers))
}

fn replay(stored: Stored) -> Result<Response> {
    let headers = Headers::from_iter(stored.headers);
    headers.set("idempotent-replayed", "true")?;
    headers.set("cache-control", "no-store")?;
    Ok(Response::ok(stored.body)?.with_status(stored.status).with_headers(headers))
}

fn log(kind: &str) {
    console_log!("{}", serde_json::json!({ "oncekey": kind, "tier": "do" }));
}

#[event(fetch)]
async fn fetch(mut req: Request, env: Env, ctx: Context) -> Result<Response> {
    let url = req.url()?;
    let path = format!("{}{}", url.path(), url.query().map(|q| format!("?{q}")).unwrap_or_default());
    // ORIGIN_URL with the request's path and query.
    let origin_url = format!("{}{path}", env.var("ORIGIN_URL")?);
    let raw = req.headers().get("idempotency-key")?;
    let (Method::Post | Method::Patch, Some(raw)) = (req.method(), raw) else {
        let headers = Headers::from_iter(req.headers().entries().filter(|(n, _)| n != "idempotency-attempt"));
        let mut init = RequestInit::new();
        init.with_method(req.method()).with_headers(headers).with_body(req.inner().body().map(JsValue::from));
        return Fetch::Request(Request::new_with_init(&origin_url, &init)?).send().await;
    };
    let key = raw.strip_prefix('"').and_then(|k| k.strip_suffix('"')).unwrap_or(&raw).to_owned();
    let valid = |c: char| matches!(c, '\x21' | '\x23'..='\x2b' | '\x2d'..='\x5b' | '\x5d'..='\x7e');
    if key.is_empty() || key.len() > 255 || !key.chars().all(valid) {
        return problem(400, "invalid-key", None);
    }
    let body = req.bytes().await?;
    if body.len() > MAX_BODY {
        return problem(413, "body-too-large", None);
    }
    let content_type = req.headers().get("content-type")?.unwrap_or_default();
    let media_type = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let method = req.method().to_string();
    let fp = sha256_hex(&[method.as_bytes(), path.as_bytes(), media_type.as_bytes(), &body]);
    let authorization = req.headers().get("authorization")?.unwrap_or_default();
    let name = sha256_hex(&[url.host_str().unwrap_or("").as_bytes(), authorization.as_bytes(), key.as_bytes()]);

    let stub = env.durable_object("IDEMPOTENCY_DO")?.id_from_name(&name)?.get_stub()?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_body(Some(JsValue::from_str(&fp)));
    let decision: Decision =
        stub.fetch_with_request(Request::new_with_init("https://do/begin", &init)?).await?.json().await?;
    let attempt = match decision {
        Decision::Execute { attempt } => attempt,
        Decision::InFlight => {
            log("in-flight");
            return problem(409, "key-in-flight", Some("1"));
        }
        Decision::Mismatch => {
            log("mismatch");
            return problem(422, "key-reused", None);
        }
        Decision::Replay { response } => {
            log("replay");
            return replay(response);
        }
    };
    log("execute");
    let headers = Headers::from_iter(req.headers().entries());
    headers.set("idempotency-key", &key)?;
    headers.set("idempotency-attempt", &attempt.to_string())?;
    let mut init = RequestInit::new();
    init.with_method(req.method())
        .with_headers(headers)
        .with_body(Some(worker::js_sys::Uint8Array::from(&body[..]).into()));
    let forward = Request::new_with_init(&origin_url, &init)?;
    // The origin and finish run under waitUntil: a client that goes away
    // does not leave the key in flight.
    let (answer, answered) = oneshot::channel();
    ctx.wait_until(async move {
        let _ = answer.send(execute(forward, stub, attempt).await);
    });
    answered.await.unwrap_or_else(|_| problem(502, "origin-unreachable", None))
}

/// The origin call and `finish`; the caller's answer.
async fn execute(forward: Request, stub: worker::Stub, attempt: u32) -> Result<Response> {
    let Ok(mut res) = Fetch::Request(forward).send().await else {
        // No answer: the outcome is unknown, the lease stays until it ends.
        return problem(502, "origin-unreachable", None);
    };
    let text = res.text().await?;
    let stored = Stored {
        status: res.status_code(),
        headers: res.headers().entries().filter(|(n, _)| !NOT_STORED.contains(&n.as_str())).collect(),
        body: text.clone(),
    };
    let finish = serde_json::to_string(&Finish { attempt, response: Some(stored) })?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_body(Some(JsValue::from_str(&finish)));
    stub.fetch_with_request(Request::new_with_init("https://do/finish", &init)?).await?;
    Ok(Response::ok(text)?.with_status(res.status_code()).with_headers(res.headers().clone()))
}
