//! Gives an HTML answer's forms their keys as it streams (SPEC §8), for
//! the Rust host: the same `HTMLRewriter` glue as the JavaScript host
//! (src/shared/form_keys.js), bound here, with the core's
//! [`page_form_keys`](crate::core::page_form_keys) deciding what each form
//! gets. The runtime's rewriter (lol_html inside workerd) streams the body
//! outside the wasm: nothing is copied in, and the wasm carries no HTML
//! parser.

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::{Closure, wasm_bindgen};
use worker::Response;
use worker::js_sys::Uint8Array;

use crate::shared::page_form_keys::page_form_keys_of;

#[wasm_bindgen(module = "/src/shared/form_keys.js")]
extern "C" {
    // `catch`: a throw comes back as an error, never unwinds through the
    // wasm (which would end the exchange before its `finish`).
    #[wasm_bindgen(js_name = withFormKeys, catch)]
    fn with_form_keys(
        response: &worker::web_sys::Response,
        page_origin: &str,
        page_form_keys: &worker::js_sys::Function,
        longest_tag: u32,
    ) -> Result<worker::web_sys::Response, wasm_bindgen::JsValue>;
}

/// The signature `withFormKeys` calls: the page's origin, the report, the
/// placement, the clock, random bytes.
type PageFormKeys = dyn Fn(String, String, String, f64, Uint8Array) -> Option<String>;

thread_local! {
    /// One function for the isolate's life: made once, never per answer.
    static PAGE_FORM_KEYS: Closure<PageFormKeys> = Closure::new(
        |page_origin: String, report: String, placement: String, now_ms: f64, random: Uint8Array| {
            page_form_keys_of(&page_origin, &report, &placement, now_ms, &random)
        },
    );
}

/// `response` with its forms given keys as its body streams, for a page on
/// `page_origin`; as the origin sent it if the rewriter refuses it (SPEC
/// §8: rewriting never breaks an answer). `longest_tag`: the core's bound
/// on a tag handed to the rewriter, 0 when the body cannot hold a longer
/// one.
pub(crate) fn with_keys(response: Response, page_origin: &str, longest_tag: u32) -> Response {
    let response: worker::web_sys::Response = response.into();
    let rewritten =
        PAGE_FORM_KEYS.with(|keys| with_form_keys(&response, page_origin, keys.as_ref().unchecked_ref(), longest_tag));
    match rewritten {
        Ok(rewritten) => Response::from(rewritten),
        Err(error) => {
            worker::console_warn!("oncekey: a page was answered without form keys: {error:?}");
            Response::from(response)
        }
    }
}
