//! Learning that the caller went away: the client request's `signal`
//! aborts when the client disconnects (compatibility flag
//! `enable_request_signal`). Without the flag the signal never aborts, and
//! the origin call keeps its own time limit only.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_channel::oneshot;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use worker::web_sys;

/// Resolves once the client's request signal aborts; never, if it does not.
/// Its listener goes with it.
pub(crate) struct CallerGone {
    signal: web_sys::AbortSignal,
    listener: Closure<dyn FnMut()>,
    gone: oneshot::Receiver<()>,
}

impl CallerGone {
    /// Watches `request`'s signal.
    pub(crate) fn of(request: &web_sys::Request) -> Self {
        let signal = request.signal();
        let (tell, gone) = oneshot::channel();
        let mut tell = Some(tell);
        if signal.aborted()
            && let Some(tell) = tell.take()
        {
            let _ = tell.send(());
        }
        let listener = Closure::<dyn FnMut()>::new(move || {
            if let Some(tell) = tell.take() {
                let _ = tell.send(());
            }
        });
        let _ = signal.add_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
        Self { signal, listener, gone }
    }
}

impl Future for CallerGone {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match Pin::new(&mut self.gone).poll(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(()),
            // The listener is held as long as this is: its end is no abort.
            Poll::Ready(Err(_)) | Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for CallerGone {
    fn drop(&mut self) {
        let _ = self.signal.remove_event_listener_with_callback("abort", self.listener.as_ref().unchecked_ref());
    }
}
