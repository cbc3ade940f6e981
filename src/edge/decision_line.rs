//! Where a decision's log line goes (SPEC §5): through `tracing` when the
//! crate's `tracing` feature is on and the Worker has installed a
//! subscriber, else to the console (`console.log`), as Workers Logs reads
//! it.

/// Writes `line` (one decision's JSON) where the Worker's logs go.
pub(crate) fn write(line: &str) {
    #[cfg(feature = "tracing")]
    if tracing::dispatcher::get_default(|dispatch| !dispatch.is::<tracing::subscriber::NoSubscriber>()) {
        tracing::info!(target: "oncekey", "{line}");
        return;
    }
    worker::console_log!("{line}");
}
