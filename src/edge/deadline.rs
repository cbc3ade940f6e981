//! A time limit on any future, on the runtime's timer.

use std::future::Future;
use std::time::Duration;

use futures_util::future::{Either, select};
use worker::Delay;

/// Runs `work` for at most `timeout_ms`: its output, or `None` when the
/// time ran out first (the work is dropped).
pub(crate) async fn within<F: Future>(timeout_ms: u64, work: F) -> Option<F::Output> {
    let work = std::pin::pin!(work);
    match select(work, Delay::from(Duration::from_millis(timeout_ms))).await {
        Either::Left((output, _)) => Some(output),
        Either::Right(_) => None,
    }
}
