//! The admin paths' stages of the exchange (SPEC §12): an operator's
//! `inspect` and `release`, asked of the coordinator — or, in KV-only mode,
//! answered from the KV copy.

use super::Action;
use super::machine::{Exchange, Stage};
use crate::core::exchange::log::{FinishResult, Tier, Timing, Verdict};
use crate::core::exchange::reply::Reply;
use crate::core::{
    AdminRequest, Consistency, Problem, Record, RecordName, RecordState, ReleaseAnswer, StoreCall, inspect,
};

/// Why an admin path found no record.
const NO_RECORD: &str =
    "No record is stored under this name: no request with this key reached this layer, or its record expired.";

impl Exchange {
    /// The store's answer to an admin path's `inspect` (`Err`: it failed
    /// or timed out).
    pub fn inspected(&mut self, state: Result<Option<RecordState>, String>, now_ms: u64) -> Action {
        let Stage::Admin(AdminRequest::Inspect(name)) = std::mem::replace(&mut self.stage, Stage::Answered) else {
            return Action::Done;
        };
        self.log.tier = Tier::Durable;
        Timing::add(&mut self.timing.durable, now_ms.saturating_sub(self.since));
        match state {
            Ok(state) => self.answer_inspect(&name, state),
            Err(error) => self.admin_store_failed(error),
        }
    }

    /// The store's answer to an admin path's `release` (`Err`: it failed
    /// or timed out; whether it released is unknown, and a repeat is safe).
    pub fn released(&mut self, answer: Result<ReleaseAnswer, String>, now_ms: u64) -> Action {
        let Stage::Admin(AdminRequest::Release { name, .. }) = std::mem::replace(&mut self.stage, Stage::Answered)
        else {
            return Action::Done;
        };
        self.log.tier = Tier::Durable;
        Timing::add(&mut self.timing.durable, now_ms.saturating_sub(self.since));
        match answer {
            Ok(answer) => self.answer_release(&name, answer),
            Err(error) => self.admin_store_failed(error),
        }
    }

    /// An admitted admin request: the store call it makes — or, with KV as
    /// the store, the KV copy it reads.
    pub(super) fn admin(&mut self, request: AdminRequest) -> Action {
        let name = request.name();
        self.log.outcome = match request {
            AdminRequest::Inspect(_) => Verdict::Inspect,
            AdminRequest::Release { .. } => Verdict::Release,
        };
        self.log.record = Some(name.to_hex());
        self.stage = Stage::Admin(request);
        if self.config.consistency == Consistency::Kv {
            return Action::ReadCopy { name, timeout_ms: self.config.policy.store_timeout_ms };
        }
        match request {
            AdminRequest::Inspect(name) => self.store(name, StoreCall::Inspect),
            AdminRequest::Release { name, force, completed } => {
                let open_keys = self.config.seal_keys.ids();
                let policy = self.config.release_policy();
                self.store(name, StoreCall::Release { policy, force, completed, open_keys })
            }
        }
    }

    /// An admin request answered from KV, the store of KV-only mode: it
    /// holds stored answers only, so nothing there is ever in flight.
    pub(super) fn admin_from_copy(
        &mut self,
        request: AdminRequest,
        found: Result<Option<Record>, String>,
        now_ms: u64,
    ) -> Action {
        self.log.tier = Tier::Kv;
        let state = match found {
            Ok(found) => inspect(found, now_ms).answer,
            Err(error) => return self.admin_store_failed(error),
        };
        match request {
            AdminRequest::Inspect(name) => self.answer_inspect(&name, state),
            AdminRequest::Release { name, .. } => {
                let answer = state.map_or(ReleaseAnswer::Absent, ReleaseAnswer::NotInFlight);
                self.answer_release(&name, answer)
            }
        }
    }

    pub(super) fn answer_inspect(&mut self, name: &RecordName, state: Option<RecordState>) -> Action {
        match state {
            Some(state) => {
                self.log.attempt = Some(state.attempt());
                self.respond(Reply::json(200, state.to_json(name, &self.config.seal_keys.ids())))
            }
            None => self.refuse(Problem::RecordNotFound(NO_RECORD.into())),
        }
    }

    pub(super) fn answer_release(&mut self, name: &RecordName, answer: ReleaseAnswer) -> Action {
        match answer {
            ReleaseAnswer::Released(state) => {
                self.log.attempt = Some(state.attempt());
                self.log.finish = Some(FinishResult::Released);
                self.respond(Reply::json(200, state.to_json(name, &self.config.seal_keys.ids())))
            }
            ReleaseAnswer::NotInFlight(state) => {
                self.log.attempt = Some(state.attempt());
                self.refuse(Problem::NotInFlight(state))
            }
            ReleaseAnswer::Running(state) => {
                self.log.attempt = Some(state.attempt());
                self.refuse(Problem::AttemptRunning(state))
            }
            ReleaseAnswer::Absent => self.refuse(Problem::RecordNotFound(NO_RECORD.into())),
        }
    }

    pub(super) fn admin_store_failed(&mut self, error: String) -> Action {
        self.log.error = Some(error);
        self.refuse(Problem::StoreUnavailable)
    }
}
