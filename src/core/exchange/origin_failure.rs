//! What became of an origin call that did not bring the origin's own
//! answer (SPEC §3): whether the request reached the origin's application.
//! Only what the platform says counts, never a guess. Cloudflare answers
//! for an origin it could not use with its own `52x` statuses, marked as
//! its own (`Server: cloudflare`): some say the request never reached the
//! origin (release the key, a retry runs at once), two that it did but no
//! usable answer came (the outcome is unknown). An unmarked `52x` is the
//! origin's own answer, stored like any other.

/// What an answer from Cloudflare's edge, rather than the origin, says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeAnswer {
    /// The origin was not reached: `521` (refused), `522` (connection timed
    /// out), `523` (unreachable), `525` (TLS handshake failed), `526`
    /// (invalid certificate), `530` (its DNS failed).
    NotReached,
    /// The origin got the request but gave no usable answer: `520` (an
    /// empty or broken answer), `524` (it did not answer in time).
    NoUsableAnswer,
}

impl EdgeAnswer {
    /// Whether an answer with `status` and `headers` is Cloudflare's own for
    /// an origin it could not use, and what it says; `None` for the
    /// origin's own answers, `52x` included when unmarked.
    ///
    /// ```
    /// use oncekey::core::EdgeAnswer;
    /// let edge = [("server".to_owned(), "cloudflare".to_owned())];
    /// assert_eq!(EdgeAnswer::of(521, &edge), Some(EdgeAnswer::NotReached));
    /// assert_eq!(EdgeAnswer::of(524, &edge), Some(EdgeAnswer::NoUsableAnswer));
    /// assert_eq!(EdgeAnswer::of(521, &[]), None, "the origin's own 521");
    /// assert_eq!(EdgeAnswer::of(502, &edge), None);
    /// ```
    pub fn of(status: u16, headers: &[(String, String)]) -> Option<Self> {
        let answer = match status {
            521 | 522 | 523 | 525 | 526 | 530 => Self::NotReached,
            520 | 524 => Self::NoUsableAnswer,
            _ => return None,
        };
        let marked = headers.iter().any(|(name, value)| {
            name.eq_ignore_ascii_case("server") && value.trim().eq_ignore_ascii_case("cloudflare")
        });
        marked.then_some(answer)
    }

    /// The log line's words for it.
    pub(crate) fn describe(self, status: u16) -> String {
        match self {
            Self::NotReached => format!("Cloudflare answered {status}: the origin was not reached"),
            Self::NoUsableAnswer => format!("Cloudflare answered {status}: the origin gave no usable answer"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn each_52x_with_and_without_the_edge_s_mark() {
        let marked = [("Server".to_owned(), " Cloudflare ".to_owned()), ("cf-ray".to_owned(), "8f-LHR".to_owned())];
        let origin_s = [("server".to_owned(), "nginx".to_owned())];
        for status in [521, 522, 523, 525, 526, 530] {
            assert_eq!(EdgeAnswer::of(status, &marked), Some(EdgeAnswer::NotReached), "{status}");
            assert_eq!(EdgeAnswer::of(status, &origin_s), None, "{status}: the origin's own");
        }
        for status in [520, 524] {
            assert_eq!(EdgeAnswer::of(status, &marked), Some(EdgeAnswer::NoUsableAnswer), "{status}");
            assert_eq!(EdgeAnswer::of(status, &[]), None, "{status}");
        }
        for status in [200, 500, 502, 503, 504, 527, 529] {
            assert_eq!(EdgeAnswer::of(status, &marked), None, "{status}: an answer like any other");
        }
    }
}
