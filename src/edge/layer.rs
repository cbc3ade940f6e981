//! The library API: [`Idempotency`] wraps any async handler with the
//! protection of SPEC §1–5. The decisions come from the core; this file
//! only moves values between the request, the stores and the origin.

use std::future::Future;
use std::rc::Rc;

use futures_channel::oneshot;
use worker::{Context, Env, Headers, Method, Request, RequestInit, Response, ResponseBuilder, Result};

use crate::core::{
    Completed, Config, ConfigError, Consistency, Decision, Finished, Fingerprint, IdempotencyKey, Outcome, Problem,
    RecordName, Step, Store, StoredResponse, Write, begin, finish, replay_from_copy,
};

use super::deadline::within;
use super::durable_store::{DurableStore, StoreError};
use super::http::{self, Timing, now_ms};
use super::kv_replay::KvReplay;
use super::log::DecisionLog;
use super::origin::{OriginError, with_timeout};

/// Binding name of the coordinator Durable Object namespace.
pub const COORDINATOR_BINDING: &str = "IDEMPOTENCY_DO";
/// Binding name of the KV namespace.
pub const KV_BINDING: &str = "IDEMPOTENCY_KV";

/// The origin handler [`Idempotency::handle`] takes, named once for the
/// functions that pass it along: called at most once, with the request to
/// forward.
trait OriginCall: 'static {
    type Answer: Future<Output = std::result::Result<Response, OriginError>> + 'static;
    fn call(self, req: Request) -> Self::Answer;
}

impl<F, Fut> OriginCall for F
where
    F: FnOnce(Request) -> Fut + 'static,
    Fut: Future<Output = std::result::Result<Response, OriginError>> + 'static,
{
    type Answer = Fut;
    fn call(self, req: Request) -> Fut {
        self(req)
    }
}

/// The idempotency layer, configured once.
///
/// ```ignore
/// use oncekey::edge::{Idempotency, OriginError};
/// use worker::*;
///
/// #[event(fetch)]
/// async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
///     let layer = match Idempotency::from_env(&env) {
///         Ok(layer) => layer,
///         Err(problem) => return oncekey::edge::problem_response(&problem),
///     };
///     layer.handle(req, &env, &ctx, |req| async move { my_handler(req).await }).await
/// }
/// ```
#[derive(Clone, Debug)]
pub struct Idempotency {
    config: Rc<Config>,
}

impl Idempotency {
    /// A layer with a configuration built in code.
    pub fn new(config: Config) -> Self {
        Self { config: Rc::new(config) }
    }

    /// A layer configured from the worker's variables (SPEC §6).
    ///
    /// # Errors
    /// [`Problem::Misconfigured`] naming the first variable with a bad value.
    pub fn from_env(env: &Env) -> std::result::Result<Self, Problem> {
        let config = Config::from_vars(|name| env.var(name).ok().map(|v| v.to_string()))
            .map_err(|e: ConfigError| Problem::Misconfigured(e.to_string()))?;
        Ok(Self::new(config))
    }

    /// The layer configured from the worker's variables, read and checked
    /// once per isolate: variables are fixed for an isolate's life (a new
    /// deployment starts new isolates). For a worker with one configuration,
    /// such as the proxy; [`Idempotency::from_env`] reads them every time.
    ///
    /// # Errors
    /// As [`Idempotency::from_env`]; a bad configuration is checked again on
    /// the next request.
    pub fn for_isolate(env: &Env) -> std::result::Result<Self, Problem> {
        thread_local! {
            static LAYER: std::cell::OnceCell<Idempotency> = const { std::cell::OnceCell::new() };
        }
        if let Some(layer) = LAYER.with(|layer| layer.get().cloned()) {
            return Ok(layer);
        }
        let layer = Self::from_env(env)?;
        Ok(LAYER.with(|cached| cached.get_or_init(|| layer).clone()))
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Protects one request: `origin` is called at most once per key while
    /// the key is remembered, under `waitUntil` so a client that goes away
    /// does not leave the key in flight.
    ///
    /// # Errors
    /// Only for failures of the runtime itself (building a response); every
    /// failure of the protocol is answered as problem+json.
    pub async fn handle<F, Fut>(&self, req: Request, env: &Env, ctx: &Context, origin: F) -> Result<Response>
    where
        F: FnOnce(Request) -> Fut + 'static,
        Fut: Future<Output = std::result::Result<Response, OriginError>> + 'static,
    {
        let config = &self.config;
        let cors = http::cors_origin(&req, config);
        let mut log = DecisionLog { tier: "layer", ..DecisionLog::default() };
        let mut timing = Timing::default();

        if let Some(allowed) = cors.as_deref().filter(|_| http::is_preflight_for_covered(&req, config)) {
            log.outcome = "preflight";
            log.status = 204;
            log.emit(&timing);
            return http::preflight_response(&req, config, allowed);
        }
        let method = req.method();
        let key_header = req.headers().get("Idempotency-Key")?;
        let rule = config.key_rule(method.as_ref(), &req.path());
        let key = match rule.key(key_header.as_deref().map(str::as_bytes)) {
            Ok(None) => return self.pass_through(req, origin, timing, cors, "pass-through", None).await,
            Err(problem) => return self.refuse(problem, &mut log, timing, cors.as_deref()),
            Ok(Some(key)) => key,
        };

        let body = match http::read_body(&req, config.max_body_bytes).await? {
            Ok(body) => body,
            Err(problem) => return self.refuse(problem, &mut log, timing, cors.as_deref()),
        };
        let url = req.url()?;
        let path_and_query = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        // Only the headers the fingerprint and the record name read, not all
        // of them across the boundary.
        let wanted: Vec<&str> =
            std::iter::once("content-type").chain(config.scope.iter().map(|source| source.header())).collect();
        let headers = http::headers_named(req.headers(), &wanted);
        let lookup = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        let fingerprint = Fingerprint::of(method.as_ref(), &path_and_query, lookup("content-type"), &body);
        let name = RecordName::new(url.host_str().unwrap_or(""), &config.scope, lookup, &key);
        log.record = Some(name.to_hex()[..16].to_owned());

        // KV-only mode keeps its records there, whatever IDEMPOTENCY_KV_REPLAY says.
        let kv = if config.kv_replay.writes_copies() || config.consistency == Consistency::Kv {
            env.kv(super::layer::KV_BINDING).ok().map(KvReplay::new)
        } else {
            None
        };

        // `read-first`: a copy in KV answers before the object is asked. A
        // read leaves nothing in flight, so it runs before the `waitUntil`
        // below; a miss, an expired copy or a KV error goes on to the object.
        let read_first = config.kv_replay.reads_first() && config.consistency == Consistency::Durable;
        if let Some(kv) = kv.as_ref().filter(|_| read_first) {
            match read_copy(kv, &name, fingerprint, config.store_timeout_ms, &mut timing).await {
                Ok(Some(completed)) => {
                    log.outcome = "replay";
                    log.tier = "kv";
                    return finish_replay(&completed, &mut log, timing, cors.as_deref());
                }
                Ok(None) => {}
                Err(e) => log.error = Some(e),
            }
        }

        let forward = Forward { url: url.to_string(), method, headers: req.headers().clone(), key, body };
        let attempt_ctx = AttemptContext { config: self.config.clone(), name, kv, cors: cors.clone() };

        // From the first store call on, the work runs under `waitUntil`: a
        // client that goes away cancels its handler, and a handler cancelled
        // between `begin` and `finish` would leave the key in flight until
        // its lease ends. The caller gets its answer through a channel as
        // soon as there is one; copying it to KV happens after.
        let (reply, answered) = oneshot::channel::<Result<Response>>();
        let layer = self.clone();
        let env = env.clone();
        ctx.wait_until(async move {
            let (response, after) = layer.protect(forward, fingerprint, attempt_ctx, &env, origin, log, timing).await;
            let _ = reply.send(response);
            if let Some(copy) = after {
                copy.write().await;
            }
        });
        match answered.await {
            Ok(response) => response,
            Err(_) => http::problem_response(&Problem::OriginUnreachable),
        }
    }

    /// The protected path for a keyed request past the KV replay tier: the
    /// coordinator's decision, and the attempt it allows.
    #[allow(clippy::too_many_arguments)]
    async fn protect<O: OriginCall>(
        &self,
        forward: Forward,
        fingerprint: Fingerprint,
        attempt_ctx: AttemptContext,
        env: &Env,
        origin: O,
        mut log: DecisionLog,
        mut timing: Timing,
    ) -> (Result<Response>, Option<KvCopy>)
    {
        let config = &self.config;
        let cors = attempt_ctx.cors.clone();
        let name = attempt_ctx.name;
        if config.consistency == Consistency::Kv {
            return self.handle_kv_only(forward, fingerprint, attempt_ctx, origin, log, timing).await;
        }

        let store = match env.durable_object(COORDINATOR_BINDING) {
            Ok(ns) => DurableStore::new(ns, config.records.clone(), config.store_timeout_ms),
            Err(e) => {
                let error = StoreError::Failed(e.to_string());
                return (self.object_failed(error, forward, fingerprint, &attempt_ctx, origin, log, timing).await, None);
            }
        };
        let started = now_ms();
        let decision = store.begin(&name, fingerprint, started).await;
        Timing::add(&mut timing.durable, now_ms() - started);
        log.tier = "do";
        match decision {
            Err(e) => (self.object_failed(e, forward, fingerprint, &attempt_ctx, origin, log, timing).await, None),
            Ok(Decision::InFlight { .. }) => {
                log.outcome = "in-flight";
                (self.refuse(Problem::KeyInFlight, &mut log, timing, cors.as_deref()), None)
            }
            Ok(Decision::Mismatch) => {
                log.outcome = "key-reused";
                (self.refuse(Problem::KeyReused, &mut log, timing, cors.as_deref()), None)
            }
            Ok(Decision::Replay(completed)) => {
                log.outcome = "replay";
                let response = finish_replay(&completed, &mut log, timing, cors.as_deref());
                // Read first and still here: the KV copy is missing (written
                // late, or evicted), so put it back. With `fallback` every
                // replay comes here, and the copy written at completion stands.
                let after =
                    attempt_ctx.kv.filter(|_| config.kv_replay.reads_first()).map(|kv| KvCopy { kv, name, completed });
                (response, after)
            }
            Ok(Decision::Execute { attempt, reclaimed }) => {
                log.outcome = if reclaimed { "execute-reclaimed" } else { "execute" };
                log.attempt = Some(attempt);
                let finisher = Finisher::Durable(store);
                execute(forward, attempt, finisher, attempt_ctx, origin, log, timing).await
            }
        }
    }

    /// `IDEMPOTENCY_CONSISTENCY=kv`: replay only. The core decides on the
    /// copy KV returns; nothing marks the key in flight, so two concurrent
    /// duplicates can both run.
    #[allow(clippy::too_many_arguments)]
    async fn handle_kv_only<O: OriginCall>(
        &self,
        forward: Forward,
        fingerprint: Fingerprint,
        attempt_ctx: AttemptContext,
        origin: O,
        mut log: DecisionLog,
        mut timing: Timing,
    ) -> (Result<Response>, Option<KvCopy>)
    {
        let cors = attempt_ctx.cors.clone();
        log.tier = "kv";
        let Some(kv) = attempt_ctx.kv.clone() else {
            let e = StoreError::Failed(format!("no KV namespace bound as {KV_BINDING}"));
            return (self.store_failed(e, forward, origin, log, timing, cors).await, None);
        };
        let started = now_ms();
        let found = kv.read(&attempt_ctx.name, started).await;
        Timing::add(&mut timing.kv, now_ms() - started);
        let found = match found {
            Ok(found) => found,
            Err(e) => {
                let error = StoreError::Failed(e.to_string());
                return (self.store_failed(error, forward, origin, log, timing, cors).await, None);
            }
        };
        let Step { answer, write } = begin(found, fingerprint, now_ms(), &self.config.records);
        match answer {
            Decision::Replay(completed) => {
                log.outcome = "replay";
                (finish_replay(&completed, &mut log, timing, cors.as_deref()), None)
            }
            Decision::Mismatch => {
                log.outcome = "key-reused";
                (self.refuse(Problem::KeyReused, &mut log, timing, cors.as_deref()), None)
            }
            Decision::InFlight { .. } => {
                log.outcome = "in-flight";
                (self.refuse(Problem::KeyInFlight, &mut log, timing, cors.as_deref()), None)
            }
            Decision::Execute { attempt, .. } => {
                let Write::Put(reserved) = write else { unreachable!("begin reserves on Execute") };
                log.outcome = "execute";
                log.attempt = Some(attempt);
                let finisher = Finisher::Local { reserved, policy: self.config.records.clone() };
                execute(forward, attempt, finisher, attempt_ctx, origin, log, timing).await
            }
        }
    }

    /// The object failed or did not answer in time. With a KV replay mode
    /// other than `off`, a live copy of this request's answer is replayed
    /// (safe: a copy exists only for a committed answer); otherwise, as
    /// [`Self::store_failed`].
    #[allow(clippy::too_many_arguments)]
    async fn object_failed<O: OriginCall>(
        &self,
        error: StoreError,
        forward: Forward,
        fingerprint: Fingerprint,
        attempt_ctx: &AttemptContext,
        origin: O,
        mut log: DecisionLog,
        mut timing: Timing,
    ) -> Result<Response>
    {
        let config = &self.config;
        let cors = attempt_ctx.cors.clone();
        let Some(kv) = attempt_ctx.kv.as_ref().filter(|_| config.kv_replay.falls_back()) else {
            return self.store_failed(error, forward, origin, log, timing, cors).await;
        };
        match read_copy(kv, &attempt_ctx.name, fingerprint, config.store_timeout_ms, &mut timing).await {
            Ok(Some(completed)) => {
                log.outcome = "replay";
                log.tier = "kv";
                log.error = Some(format!("store: {error}"));
                finish_replay(&completed, &mut log, timing, cors.as_deref())
            }
            Ok(None) => self.store_failed(error, forward, origin, log, timing, cors).await,
            Err(kv_error) => {
                self.store_failed(format!("{error}; {kv_error}"), forward, origin, log, timing, cors).await
            }
        }
    }

    /// The store failed: 503, or the request forwarded unprotected when
    /// failing open.
    async fn store_failed<O: OriginCall>(
        &self,
        error: impl std::fmt::Display,
        forward: Forward,
        origin: O,
        mut log: DecisionLog,
        timing: Timing,
        cors: Option<String>,
    ) -> Result<Response>
    {
        let error = error.to_string();
        if self.config.fail_open {
            let req = forward.request(None)?;
            return self.pass_through(req, origin, timing, cors, "fail-open", Some(error)).await;
        }
        log.outcome = "store-unavailable";
        log.error = Some(error);
        self.refuse(Problem::StoreUnavailable, &mut log, timing, cors.as_deref())
    }

    /// A request the layer does not protect: forwarded as it is, minus any
    /// client-sent `Idempotency-Attempt`.
    async fn pass_through<O: OriginCall>(
        &self,
        req: Request,
        origin: O,
        mut timing: Timing,
        cors: Option<String>,
        outcome: &'static str,
        error: Option<String>,
    ) -> Result<Response>
    {
        let req = if req.headers().has("Idempotency-Attempt")? { without_attempt(req)? } else { req };
        let started = now_ms();
        let answer = with_timeout(origin.call(req), self.config.origin_timeout_ms).await;
        Timing::add(&mut timing.origin, now_ms() - started);
        let mut log = DecisionLog { outcome, tier: "origin", error, ..DecisionLog::default() };
        let response = match answer {
            Ok(response) => {
                let headers = http::copy_headers(response.headers())?;
                http::decorate(&headers, &timing, cors.as_deref())?;
                response.with_headers(headers)
            }
            Err(e) => {
                log.error = Some(e.to_string());
                let response = http::problem_response(&Problem::OriginUnreachable)?;
                http::decorate(response.headers(), &timing, cors.as_deref())?;
                response
            }
        };
        log.status = response.status_code();
        // The baseline path logs only failures and fail-open forwards.
        if outcome != "pass-through" || log.error.is_some() {
            log.emit(&timing);
        }
        Ok(response)
    }

    /// One of the layer's own errors.
    fn refuse(&self, problem: Problem, log: &mut DecisionLog, timing: Timing, cors: Option<&str>) -> Result<Response> {
        if log.outcome.is_empty() {
            log.outcome = problem.code();
        }
        log.status = problem.status();
        log.emit(&timing);
        let response = http::problem_response(&problem)?;
        http::decorate(response.headers(), &timing, cors)?;
        Ok(response)
    }
}

/// Reads this request's answer from its KV copy, within the store time
/// limit: the core's [`replay_from_copy`] decides whether the copy found may
/// answer. The error is a short description for the log.
async fn read_copy(
    kv: &KvReplay,
    name: &RecordName,
    fingerprint: Fingerprint,
    timeout_ms: u64,
    timing: &mut Timing,
) -> std::result::Result<Option<Completed>, String>
{
    let started = now_ms();
    let found = within(timeout_ms, kv.read(name, started)).await;
    let now = now_ms();
    Timing::add(&mut timing.kv, now - started);
    match found {
        Some(Ok(found)) => Ok(replay_from_copy(found, fingerprint, now)),
        Some(Err(e)) => Err(format!("kv read: {e}")),
        None => Err(format!("kv read: no answer within {timeout_ms} ms")),
    }
}

/// The replay answer, logged.
fn finish_replay(completed: &Completed, log: &mut DecisionLog, timing: Timing, cors: Option<&str>) -> Result<Response> {
    log.attempt = Some(completed.attempt);
    log.status = completed.response.status;
    log.emit(&timing);
    let response = http::replay_response(completed)?;
    http::decorate(response.headers(), &timing, cors)?;
    Ok(response)
}

/// The parts of the keyed request kept to build the origin's request.
struct Forward {
    url: String,
    method: Method,
    headers: Headers,
    key: IdempotencyKey,
    body: Vec<u8>,
}

impl Forward {
    /// The origin's request: the client's, without its `Idempotency-Attempt`;
    /// with the unquoted key and our attempt number when protected.
    fn request(self, attempt: Option<u32>) -> Result<Request> {
        let headers = http::copy_headers(&self.headers)?;
        headers.delete("Idempotency-Attempt")?;
        if let Some(attempt) = attempt {
            headers.set("Idempotency-Key", self.key.as_str())?;
            headers.set("Idempotency-Attempt", &attempt.to_string())?;
        }
        let mut init = RequestInit::new();
        init.with_method(self.method).with_headers(headers);
        if !self.body.is_empty() {
            init.with_body(Some(worker::js_sys::Uint8Array::from(self.body.as_slice()).into()));
        }
        Request::new_with_init(&self.url, &init)
    }
}

/// A copy of `req` without the `Idempotency-Attempt` header.
fn without_attempt(req: Request) -> Result<Request> {
    let headers = http::copy_headers(req.headers())?;
    headers.delete("Idempotency-Attempt")?;
    let mut init = RequestInit::new();
    init.with_method(req.method()).with_headers(headers).with_body(req.inner().body().map(Into::into));
    Request::new_with_init(req.url()?.as_ref(), &init)
}

/// What an attempt needs after the origin answers.
struct AttemptContext {
    config: Rc<Config>,
    name: RecordName,
    kv: Option<KvReplay>,
    cors: Option<String>,
}

/// Where an attempt's outcome is recorded.
enum Finisher {
    /// In the coordinator object, atomically.
    Durable(DurableStore),
    /// KV-only mode: the core's `finish` on the reservation made locally.
    Local { reserved: crate::core::Record, policy: crate::core::RecordPolicy },
}

/// Pauses before each repeat of a failed `finish`, in ms.
const FINISH_RETRY_PAUSES_MS: [u64; 2] = [100, 400];

impl Finisher {
    /// Records how attempt `attempt` ended. A failed call to the object is
    /// repeated twice: an outcome that is known but not recorded would hold
    /// the key for a whole lease. Repeating is safe: once the first call has
    /// landed, a repeat finds no attempt `attempt` in flight and writes
    /// nothing.
    async fn finish(self, name: &RecordName, attempt: u32, outcome: Outcome) -> std::result::Result<Finished, StoreError> {
        match self {
            Self::Durable(store) => {
                let mut result = store.finish(name, attempt, outcome.clone(), now_ms()).await;
                for pause in FINISH_RETRY_PAUSES_MS {
                    if result.is_ok() {
                        break;
                    }
                    worker::Delay::from(std::time::Duration::from_millis(pause)).await;
                    result = store.finish(name, attempt, outcome.clone(), now_ms()).await;
                }
                result
            }
            Self::Local { reserved, policy } => Ok(finish(Some(reserved), attempt, outcome, now_ms(), &policy).answer),
        }
    }
}

/// Calls the origin and finishes the attempt (the caller runs this under
/// `waitUntil`). The answer is returned once the outcome is recorded, with
/// the KV copy still to write.
#[allow(clippy::too_many_arguments)]
async fn execute<O: OriginCall>(
    forward: Forward,
    attempt: u32,
    finisher: Finisher,
    attempt_ctx: AttemptContext,
    origin: O,
    mut log: DecisionLog,
    mut timing: Timing,
) -> (Result<Response>, Option<KvCopy>)
{
    let config = attempt_ctx.config.clone();
    let name = attempt_ctx.name;
    let req = match forward.request(Some(attempt)) {
        Ok(req) => req,
        // Nothing was sent: give the key back rather than hold it for a lease.
        Err(e) => {
            let _ = finisher.finish(&name, attempt, Outcome::NotSent).await;
            return (Err(e), None);
        }
    };
    let started = now_ms();
    // The time limit covers the whole answer, body included: a finish must
    // come while the attempt can still own the key (the limit is below the
    // lease), never after its record was forgotten.
    let call = async {
        let response = origin.call(req).await?;
        Ok(read_answer(response, config.max_response_bytes).await)
    };
    let (client, outcome) = match with_timeout(call, config.origin_timeout_ms).await {
        Ok(read) => read,
        Err(e) => {
            log.error = Some(e.to_string());
            let outcome = match e {
                OriginError::NotSent(_) => Outcome::NotSent,
                OriginError::NoAnswer(_) => Outcome::Unknown,
            };
            (http::problem_response(&Problem::OriginUnreachable), outcome)
        }
    };
    Timing::add(&mut timing.origin, now_ms() - started);

    let started = now_ms();
    let durable = matches!(finisher, Finisher::Durable(_));
    let finished = finisher.finish(&name, attempt, outcome).await;
    if durable {
        Timing::add(&mut timing.durable, now_ms() - started);
    }
    let stored = match finished {
        Ok(Finished::Stored(completed)) => {
            log.finish = Some("stored");
            Some(completed)
        }
        Ok(Finished::Released) => {
            log.finish = Some("released");
            None
        }
        Ok(Finished::LeaseKept) => {
            log.finish = Some("lease-kept");
            None
        }
        Ok(Finished::Stale) => {
            log.finish = Some("stale");
            None
        }
        Err(e) => {
            log.finish = Some("store-failed");
            log.error = Some(e.to_string());
            None
        }
    };
    let client = client.and_then(|response| {
        http::decorate(response.headers(), &timing, attempt_ctx.cors.as_deref())?;
        Ok(response)
    });
    log.status = client.as_ref().map(Response::status_code).unwrap_or(500);
    log.emit(&timing);
    let after = match (stored, attempt_ctx.kv) {
        (Some(completed), Some(kv)) => Some(KvCopy { kv, name, completed }),
        _ => None,
    };
    (client, after)
}

/// A completed answer still to be copied to KV, after the caller has it.
struct KvCopy {
    kv: KvReplay,
    name: RecordName,
    completed: Completed,
}

impl KvCopy {
    /// Writes the copy; a KV error never fails the request (the object
    /// holds the answer).
    async fn write(self) {
        let _ = self.kv.write(&self.name, &self.completed, now_ms()).await;
    }
}

/// Reads the origin's answer in full: the response for the caller and the
/// outcome to record (body kept only up to `max_body`).
async fn read_answer(response: Response, max_body: usize) -> (Result<Response>, Outcome) {
    let status = response.status_code();
    let headers = http::header_pairs(response.headers());
    let body = match http::response_bytes(&response).await {
        Ok(body) => body,
        // The head arrived but the body broke off: no complete answer.
        Err(e) => {
            worker::console_warn!("oncekey: origin body failed: {e}");
            return (http::problem_response(&Problem::OriginUnreachable), Outcome::Unknown);
        }
    };
    let client = http::copy_headers(response.headers())
        .map(|h| http::with_body(ResponseBuilder::new().with_status(status).with_headers(h), body.clone()));
    (client, Outcome::Answered(StoredResponse::capture(status, headers, body, max_body)))
}
