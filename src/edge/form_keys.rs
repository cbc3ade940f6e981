//! Gives an HTML answer's post forms their keys as it streams (SPEC §8), for
//! the Rust host: the same `HTMLRewriter` glue as the JavaScript host
//! (src/shared/form_keys.js), bound here, with the core's [`key_input`](crate::core::key_input) deciding
//! what each form gets. The runtime's rewriter (lol_html inside workerd)
//! streams the body outside the wasm: nothing is copied in, and the wasm
//! carries no HTML parser.

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::{Closure, wasm_bindgen};
use worker::Response;
use worker::js_sys::{Array, Uint8Array};

use crate::shared::form_key_input::key_input_of;

#[wasm_bindgen(module = "/src/shared/form_keys.js")]
extern "C" {
    // `catch`: a throw comes back as an error, never unwinds through the
    // wasm (which would end the exchange before its `finish`).
    #[wasm_bindgen(js_name = withFormKeys, catch)]
    fn with_form_keys(
        response: &worker::web_sys::Response,
        key_input: &worker::js_sys::Function,
        longest_tag: u32,
    ) -> Result<worker::web_sys::Response, wasm_bindgen::JsValue>;
}

/// The signature `withFormKeys` calls: the form's `method`, its controls'
/// `formmethod`s, its `enctype` and `formenctype`s, whether it has the
/// field, the clock, random bytes.
type KeyInput = dyn Fn(Option<String>, Array, Array, bool, f64, Uint8Array) -> Option<String>;

thread_local! {
    /// One function for the isolate's life: made once, never per answer.
    static KEY_INPUT: Closure<KeyInput> = Closure::new(
        |method: Option<String>, submitters: Array, enctypes: Array, has_field: bool, now_ms: f64, random: Uint8Array| {
            key_input_of(method, &submitters, &enctypes, has_field, now_ms, &random)
        },
    );
}

/// `response` with its post forms given keys as its body streams; as the
/// origin sent it if the rewriter refuses it (SPEC §8: rewriting never
/// breaks an answer). `longest_tag`: the core's bound on a tag handed to the
/// rewriter, 0 when the body cannot hold a longer one.
pub(crate) fn with_keys(response: Response, longest_tag: u32) -> Response {
    let response: worker::web_sys::Response = response.into();
    let rewritten =
        KEY_INPUT.with(|key_input| with_form_keys(&response, key_input.as_ref().unchecked_ref(), longest_tag));
    match rewritten {
        Ok(rewritten) => Response::from(rewritten),
        Err(error) => {
            worker::console_warn!("oncekey: a page was answered without form keys: {error:?}");
            Response::from(response)
        }
    }
}
