//! Time limits and pauses on the runtime's timer, every one of them
//! registered so that a panic can clear them all.
//!
//! A panic in a handler aborts the wasm instance mid-call: no future of it
//! is polled again, nothing is dropped, and the caller's answer never
//! comes. The runtime answers such a request at once (its own `500`) only
//! when nothing is left that could still wake it; a pending timer of this
//! layer — the origin's time limit, 100 s by default — would hold the
//! caller until it fires. [`clear_on_panic`] makes a panic clear them.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use futures_util::future::{Either, select};
use worker::js_sys;
use worker::wasm_bindgen::JsCast;
use worker::wasm_bindgen::prelude::Closure;
use worker::web_sys::WorkerGlobalScope;

thread_local! {
    /// The ids of the timers set and not yet fired or dropped.
    static PENDING: RefCell<Vec<i32>> = const { RefCell::new(Vec::new()) };
    static HOOKED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `work` for at most `timeout_ms`: its output, or `None` when the
/// time ran out first (the work is dropped).
pub(crate) async fn within<F: Future>(timeout_ms: u64, work: F) -> Option<F::Output> {
    let work = std::pin::pin!(work);
    match select(work, sleep(timeout_ms)).await {
        Either::Left((output, _)) => Some(output),
        Either::Right(_) => None,
    }
}

/// A pause of `ms` milliseconds.
pub(crate) fn sleep(ms: u64) -> Timer {
    Timer { ms, set: None, fired: Rc::new(Cell::new(false)) }
}

/// Chains a panic hook, once per isolate, that clears every timer of this
/// layer before the previous hook (yours, or the default) runs, so that a
/// panicking handler's caller is answered at once by the runtime.
pub(crate) fn clear_on_panic() {
    if HOOKED.replace(true) {
        return;
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let global: WorkerGlobalScope = js_sys::global().unchecked_into();
        // Not borrowed unless the panic came from this file's own bookkeeping.
        let pending = PENDING
            .try_with(|p| p.try_borrow_mut().map(|mut p| std::mem::take(&mut *p)).unwrap_or_default())
            .unwrap_or_default();
        for id in pending {
            global.clear_timeout_with_handle(id);
        }
        previous(info);
    }));
}

/// A registered timeout (see [`sleep`]).
pub(crate) struct Timer {
    ms: u64,
    /// Its id and the callback the runtime holds, once set.
    set: Option<(i32, Closure<dyn FnMut()>)>,
    fired: Rc<Cell<bool>>,
}

impl Future for Timer {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.fired.get() {
            return Poll::Ready(());
        }
        if self.set.is_none() {
            let fired = Rc::clone(&self.fired);
            let waker = cx.waker().clone();
            let callback = Closure::<dyn FnMut()>::new(move || {
                fired.set(true);
                waker.wake_by_ref();
            });
            let global: WorkerGlobalScope = js_sys::global().unchecked_into();
            let ms = i32::try_from(self.ms).unwrap_or(i32::MAX);
            let Ok(id) =
                global.set_timeout_with_callback_and_timeout_and_arguments_0(callback.as_ref().unchecked_ref(), ms)
            else {
                // No timer to be had: never fire, as a time limit never reached.
                return Poll::Pending;
            };
            PENDING.with(|p| p.borrow_mut().push(id));
            self.set = Some((id, callback));
        }
        Poll::Pending
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        let Some((id, _)) = self.set else { return };
        PENDING.with(|p| p.borrow_mut().retain(|pending| *pending != id));
        if !self.fired.get() {
            let global: WorkerGlobalScope = js_sys::global().unchecked_into();
            global.clear_timeout_with_handle(id);
        }
    }
}
