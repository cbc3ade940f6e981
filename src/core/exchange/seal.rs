//! Sealing at rest, as the exchange runs it (SPEC §4): an answer to keep
//! is sealed, part by part, after the caller has it and before `finish`
//! carries it to the object (or, in KV-only mode, before its copy is
//! written); a sealed answer is opened before it is replayed. The host runs
//! each [`CipherCall`] with the runtime's Web Crypto; what is sealed, with
//! which key, bound to what, and what an answer no key opens means are
//! decided here.

use std::collections::VecDeque;
use std::rc::Rc;

use super::action::{Action, CipherCall, CipherOp};
use super::machine::{Exchange, Keyed, Stage};
use super::route::policy_of;
use crate::core::{
    Consistency, Outcome, Problem, RecordName, SEAL_OVERHEAD, SealKey, SealedAnswer, SealedPart, StoredAnswer,
    StoredResponse, opened, plaintext_parts,
};

/// An answer's parts being sealed.
#[derive(Clone, Debug)]
pub(crate) struct Sealing {
    key: SealKey,
    /// The parts still to seal, in order, each with its plaintext.
    parts: VecDeque<(SealedPart, Vec<u8>)>,
    /// The length the pending seal must return.
    expected: usize,
    /// The parts sealed so far.
    sealed: Vec<Vec<u8>>,
}

/// A sealed answer being opened for a replay.
#[derive(Clone, Debug)]
pub(crate) struct Opening {
    /// Its record: the parts are bound to it.
    name: RecordName,
    sealed: SealedAnswer,
    key: SealKey,
    /// The parts opened so far.
    opened: Vec<Vec<u8>>,
    /// A KV copy read before the object: the request, to take to the
    /// object if the copy does not open.
    object_next: Option<Keyed>,
}

impl Exchange {
    /// The next seal of the attempt being finished, if its answer is to be
    /// kept and sealing is on; `None` once there is none left (the outcome
    /// then carries the sealed answer). An answer whose status releases the
    /// key is stored nowhere: it goes to the object as its status alone. In
    /// KV-only mode the copy is the record, and holds no cookies: only the
    /// answer part is sealed.
    pub(super) fn next_seal(&mut self) -> Option<Action> {
        let config = Rc::clone(&self.config);
        let records = &policy_of(&config, self.route).records;
        let Stage::Finishing(finishing) = &mut self.stage else { return None };
        if finishing.sealing.is_none() {
            let Outcome::Answered(StoredAnswer::Plain(response)) = &finishing.outcome else { return None };
            let key = config.seal_keys.sealing()?;
            if records.releases(response.status) {
                let status_only = StoredResponse { status: response.status, headers: Vec::new(), body: None };
                finishing.outcome = Outcome::Answered(status_only.into());
                return None;
            }
            let mut parts = plaintext_parts(response);
            if config.consistency == Consistency::Kv {
                // KV-only mode: the copy is the record, and never holds cookies.
                parts.truncate(1);
            }
            let parts = parts.into();
            finishing.sealing = Some(Sealing { key: key.clone(), parts, expected: 0, sealed: Vec::new() });
        }
        let sealing = finishing.sealing.as_mut()?;
        if let Some((part, data)) = sealing.parts.pop_front() {
            sealing.expected = data.len() + SEAL_OVERHEAD;
            let aad = part.associated_data(&finishing.name);
            return Some(Action::Cipher(CipherCall { op: CipherOp::Seal, key: sealing.key.clone(), aad, data }));
        }
        let Sealing { key, mut sealed, .. } = finishing.sealing.take()?;
        let cookies = (sealed.len() > 1).then(|| sealed.remove(1));
        let answer = sealed.pop().unwrap_or_default();
        finishing.outcome = Outcome::Answered(StoredAnswer::Sealed(SealedAnswer { key_id: key.id(), answer, cookies }));
        None
    }

    /// A sealed answer of record `name` to replay: opened with the key
    /// that sealed it, if that key is configured; else the request fails
    /// closed (SPEC §4) — or, for a KV copy read before the object
    /// (`object_next`), goes on to the object.
    pub(super) fn open(&mut self, name: RecordName, sealed: &SealedAnswer, object_next: Option<Keyed>) -> Action {
        let Some(key) = self.config.seal_keys.find(sealed.key_id) else {
            let why = format!(
                "the stored answer is sealed by key {}, which IDEMPOTENCY_SEAL_KEYS does not hold",
                sealed.key_id.to_hex()
            );
            if let Some(keyed) = object_next {
                return self.copy_unopened(keyed, why);
            }
            self.log.error = Some(why);
            return self.refuse(Problem::RecordSealed);
        };
        let (sealed, key) = (sealed.clone(), key.clone());
        self.stage = Stage::Opening(Opening { name, sealed, key, opened: Vec::new(), object_next });
        self.next_open()
    }

    /// The next part to open, or the replay once the parts it needs are
    /// open. The cookies part is opened only for a browser that could be
    /// their jar: a request from another site never gets them (SPEC §3).
    fn next_open(&mut self) -> Action {
        let Stage::Opening(opening) = &mut self.stage else { return Action::Done };
        // Each part's ciphertext is handed to the host once, not copied:
        // nothing needs it after its open.
        let (part, data) = match (opening.opened.len(), &mut opening.sealed.cookies) {
            (0, _) => (SealedPart::Answer, std::mem::take(&mut opening.sealed.answer)),
            (1, cookies @ Some(_)) if self.cookie_jar.is_some() => {
                (SealedPart::Cookies, cookies.take().unwrap_or_default())
            }
            _ => return self.replay_opened(),
        };
        let aad = part.associated_data(&opening.name);
        Action::Cipher(CipherCall { op: CipherOp::Open, key: opening.key.clone(), aad, data })
    }

    /// A part was opened (or failed to).
    fn opened_part(&mut self, result: Result<Vec<u8>, String>) -> Action {
        let Stage::Opening(opening) = &mut self.stage else { return Action::Done };
        match result {
            Ok(plaintext) => {
                opening.opened.push(plaintext);
                self.next_open()
            }
            Err(why) => self.unopenable(format!("open: {why}")),
        }
    }

    /// Every part it needs is open: the replay.
    fn replay_opened(&mut self) -> Action {
        let Stage::Opening(opening) = &mut self.stage else { return Action::Done };
        let mut parts = std::mem::take(&mut opening.opened).into_iter();
        let answer = parts.next().unwrap_or_default();
        match opened(&answer, parts.next().as_deref()) {
            Ok(response) => {
                self.stage = Stage::Answered;
                self.replay_answer(&response)
            }
            Err(e) => self.unopenable(format!("open: the opened answer does not decode: {e}")),
        }
    }

    /// The answer does not open: fail closed — or, a KV copy read before
    /// the object, ask the object.
    fn unopenable(&mut self, why: String) -> Action {
        if let Stage::Opening(Opening { object_next: Some(keyed), .. }) =
            std::mem::replace(&mut self.stage, Stage::Answered)
        {
            return self.copy_unopened(keyed, why);
        }
        self.log.error = Some(why);
        self.refuse(Problem::RecordSealed)
    }

    /// The host ran the pending [`Action::Cipher`]: its bytes, or why none
    /// came. A seal that fails leaves the outcome unknown (the origin did
    /// run; nothing unsealed is ever stored); an open that fails is an
    /// unreadable record (503, never "absent", never run again).
    pub fn ciphered(&mut self, result: Result<Vec<u8>, String>, now_ms: u64) -> Action {
        match &mut self.stage {
            Stage::Finishing(finishing) => {
                let Some(sealing) = finishing.sealing.as_mut() else { return Action::Done };
                match result {
                    Ok(bytes) if bytes.len() == sealing.expected => sealing.sealed.push(bytes),
                    failed => {
                        let why = failed.err().unwrap_or_else(|| "the seal returned a wrong length".to_owned());
                        self.log.error = Some(format!("seal: {why}"));
                        finishing.sealing = None;
                        finishing.outcome = Outcome::Unknown;
                    }
                }
                if let Some(action) = self.next_seal() {
                    return action;
                }
                self.since = now_ms;
                match self.config.consistency {
                    Consistency::Kv => self.kv_finish(now_ms),
                    Consistency::Durable => self.paused(now_ms),
                }
            }
            Stage::Opening(_) => self.opened_part(result),
            _ => Action::Done,
        }
    }
}
