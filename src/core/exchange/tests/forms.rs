//! Forms with no JavaScript (SPEC §8, `IDEMPOTENCY_FORMS=inject`): a form
//! post takes its key from its `idempotency_key` field, which the origin
//! never sees, and HTML answers are marked for the host to give their
//! forms keys.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use super::*;

const INJECT: [(&str, &str); 1] = [("IDEMPOTENCY_FORMS", "inject")];

/// A form post with no `Idempotency-Key` header.
fn form_post(content_type: &str) -> RequestHead {
    RequestHead { key: None, headers: vec![("content-type".into(), content_type.into())], ..keyed("") }
}

fn urlencoded() -> RequestHead {
    form_post("application/x-www-form-urlencoded")
}

fn body(bytes: &str) -> BodyRead {
    BodyRead::Complete(bytes.as_bytes().to_vec())
}

fn page() -> OriginResult {
    OriginResult::Answered {
        status: 200,
        headers: vec![
            ("content-type".into(), "text/html; charset=utf-8".into()),
            ("content-length".into(), "40".into()),
            ("etag".into(), "\"v1\"".into()),
            ("cache-control".into(), "public, max-age=60, s-maxage=600".into()),
        ],
        body: b"<form method=post><button>Buy</button></form>".to_vec(),
    }
}

#[test]
fn a_form_post_is_keyed_by_its_field_which_the_origin_never_sees() {
    let mut world = World::new(&INJECT);
    let first = world.run(urlencoded(), body("item=tea&idempotency_key=k-1&qty=2"));
    assert_eq!(first.steps[..4], ["read-body", "detach", "begin", "call-origin"]);
    assert_eq!(first.origin_body.as_deref(), Some(&b"item=tea&qty=2"[..]), "every other byte as sent");
    assert_eq!(
        first.edits,
        [
            HeaderEdit::Set("Idempotency-Key", "k-1".into()),
            HeaderEdit::Set("Idempotency-Attempt", "1".into()),
            HeaderEdit::Remove("Content-Length"),
        ],
        "the key goes as the header; the client's length no longer fits the body"
    );
    // A double click or a reload-resubmit: the same page's key, one order.
    let again = world.run(urlencoded(), body("item=tea&idempotency_key=k-1&qty=2"));
    assert_eq!(header(&again.reply, "idempotent-replayed"), Some("true"));
    // The page served again has a new key: a new order.
    let next = world.run(urlencoded(), body("item=tea&idempotency_key=k-2&qty=2"));
    assert_eq!((next.reply.status, header(&next.reply, "idempotent-replayed")), (201, None));
    assert_eq!(world.calls, [1, 1]);
    // The same key with another form is another request.
    let edited = world.run(urlencoded(), body("item=tea&idempotency_key=k-1&qty=3"));
    assert_eq!((edited.reply.status, code(&edited.reply).as_str()), (422, "key-reused"));
}

#[test]
fn a_multipart_form_post_is_keyed_by_its_field_too() {
    let mut world = World::new(&INJECT);
    let head = form_post("multipart/form-data; boundary=XyZ");
    let form = "--XyZ\r\nContent-Disposition: form-data; name=\"item\"\r\n\r\ntea\r\n\
        --XyZ\r\nContent-Disposition: form-data; name=\"idempotency_key\"\r\n\r\nk-9\r\n--XyZ--\r\n";
    let run = world.run(head.clone(), body(form));
    assert_eq!(run.edits[0], HeaderEdit::Set("Idempotency-Key", "k-9".into()));
    let sent = run.origin_body.unwrap();
    assert_eq!(sent, b"--XyZ\r\nContent-Disposition: form-data; name=\"item\"\r\n\r\ntea\r\n--XyZ--\r\n");
    // Sent again with another boundary (a browser re-encoding the form): the same request.
    let reframed = form.replace("XyZ", "Other");
    let again = world.run(form_post("multipart/form-data; boundary=Other"), body(&reframed));
    assert_eq!(header(&again.reply, "idempotent-replayed"), Some("true"));
    assert_eq!(world.calls, [1]);
}

#[test]
fn field_cases_absent_twice_invalid_and_beside_a_header() {
    let mut world = World::new(&INJECT);
    // Absent: passed through with the body as read (it had to be read to look).
    let absent = world.run(urlencoded(), body("item=tea"));
    assert_eq!(absent.steps, ["read-body", "forward", "respond"]);
    assert_eq!(absent.forwarded_body, Some(Some(b"item=tea".to_vec())));
    // Twice, or not a key: refused as a bad header is.
    let twice = world.run(urlencoded(), body("idempotency_key=a&idempotency_key=b"));
    assert_eq!((twice.reply.status, code(&twice.reply).as_str()), (400, "invalid-key"));
    let invalid = world.run(urlencoded(), body("idempotency_key=not+a+key"));
    assert_eq!((invalid.reply.status, code(&invalid.reply).as_str()), (400, "invalid-key"));
    let empty = world.run(urlencoded(), body("idempotency_key=&item=tea"));
    assert_eq!(code(&empty.reply), "invalid-key");
    // A header wins; the field still never reaches the origin.
    let both =
        world.run(RequestHead { key: Some(b"from-header".to_vec()), ..urlencoded() }, body("a=1&idempotency_key=f"));
    assert_eq!(both.edits[0], HeaderEdit::Set("Idempotency-Key", "from-header".into()));
    assert_eq!(both.origin_body.as_deref(), Some(&b"a=1"[..]));
    assert_eq!(world.calls, [1]);
    // Required: a form post with neither is a 400 once its body is read.
    let mut world = World::new(&[INJECT[0], ("IDEMPOTENCY_REQUIRED", "true")]);
    let missing = world.run(urlencoded(), body("item=tea"));
    assert_eq!((missing.steps[0], code(&missing.reply).as_str()), ("read-body", "missing-key"));
    let keyed = world.run(urlencoded(), body("item=tea&idempotency_key=k"));
    assert_eq!(keyed.reply.status, 201);
}

#[test]
fn only_the_page_s_own_origin_may_key_a_request_by_its_field() {
    // SPEC §8: (Sec-Fetch-Site, Origin) → whether the field keys the request.
    // A sibling origin of the same site (a user-content subdomain) is
    // another origin: SameSite cookies travel with its posts.
    let own = "https://shop.example";
    let cases: [(Option<&str>, Option<&str>, bool); 11] = [
        (Some("same-origin"), Some(own), true),
        (Some("same-site"), Some("https://www.shop.example"), false),
        (Some("Same-Origin"), None, true),
        (Some("cross-site"), Some("https://evil.example"), false),
        (Some("cross-site"), Some(own), false),
        (Some("none"), None, false),
        (Some(""), None, false),
        (None, Some(own), true),
        (None, None, true),
        (None, Some("https://evil.example"), false),
        (None, Some("null"), false),
    ];
    for (site, origin, keyed) in cases {
        let mut world = World::new(&INJECT);
        let mut head = urlencoded();
        head.own_origin = own.into();
        head.origin = origin.map(Into::into);
        if let Some(site) = site {
            head.headers.push(("sec-fetch-site".into(), site.into()));
        }
        let first = world.run(head.clone(), body("item=tea&idempotency_key=k-1"));
        let again = world.run(head, body("item=tea&idempotency_key=k-1"));
        let case = format!("Sec-Fetch-Site {site:?}, Origin {origin:?}");
        if keyed {
            assert_eq!(first.edits[0], HeaderEdit::Set("Idempotency-Key", "k-1".into()), "{case}");
            assert_eq!(header(&again.reply, "idempotent-replayed"), Some("true"), "{case}");
            assert_eq!(world.calls, [1], "{case}");
        } else {
            // Passed on unkeyed, its field taken out, logged: nothing stored, nothing replayed.
            assert_eq!(first.steps, ["read-body", "forward", "respond", "log"], "{case}");
            assert_eq!(first.forwarded_body, Some(Some(b"item=tea".to_vec())), "{case}");
            assert!(first.edits.contains(&HeaderEdit::Remove("Content-Length")), "{case}");
            assert!(first.log["error"].as_str().unwrap().contains("another origin"), "{case}");
            assert_eq!(header(&again.reply, "idempotent-replayed"), None, "{case}");
            assert!(world.calls.is_empty(), "{case}: no attempt ran");
        }
    }
    // A key required: another site's form gets the 400 a keyless post gets.
    let mut world = World::new(&[INJECT[0], ("IDEMPOTENCY_REQUIRED", "true")]);
    let mut head = urlencoded();
    head.own_origin = own.into();
    head.headers.push(("sec-fetch-site".into(), "cross-site".into()));
    let refused = world.run(head, body("idempotency_key=k-1"));
    assert_eq!(code(&refused.reply), "missing-key");
}

#[test]
fn without_inject_or_on_uncovered_requests_the_field_is_not_read() {
    let mut world = World::new(&[]);
    let off = world.run(urlencoded(), body("idempotency_key=k"));
    assert_eq!((off.steps.as_slice(), &off.forwarded_body), (&["forward", "respond"][..], &Some(None)));
    let mut world = World::new(&INJECT);
    let get = world.run(RequestHead { method: "GET".into(), ..urlencoded() }, body("idempotency_key=k"));
    assert_eq!((get.steps.as_slice(), &get.forwarded_body), (&["forward", "respond"][..], &Some(None)));
    let json = world.run(form_post("application/json"), body("{}"));
    assert_eq!(json.steps, ["forward", "respond"], "not a form: nothing to look for");
    // A header keys any body as before, and a JSON body is never edited.
    let run = world.run(keyed("k1"), body(r#"{"idempotency_key":"x"}"#));
    assert_eq!(run.origin_body.as_deref(), Some(&br#"{"idempotency_key":"x"}"#[..]));
    assert_eq!(run.edits.len(), 2, "no Content-Length edit");
}

#[test]
fn only_a_page_that_could_hold_a_tag_too_long_for_the_rewriter_is_guarded() {
    let mut world = World::new(&INJECT);
    let get = || RequestHead { method: "GET".into(), key: None, ..keyed("") };
    let html = |len: Option<&str>| {
        let mut headers = vec![("content-type".to_owned(), "text/html".to_owned())];
        headers.extend(len.map(|n| ("content-length".to_owned(), n.to_owned())));
        headers
    };
    for (length, guarded) in [(Some("61440"), false), (Some("1048576"), false), (Some("1048577"), true), (None, true)] {
        world.forwarded_headers = html(length);
        let run = world.run(get(), order());
        let want = if guarded { crate::core::LONGEST_TAG_BYTES } else { 0 };
        assert_eq!(run.reply.form_keys.as_ref().map(|f| f.longest_tag), Some(want), "{length:?}");
        assert_eq!(header(&run.reply, "content-length"), None, "the length still goes");
    }
    // A stored answer's bytes are known: a small page's replay is not guarded.
    let page = html(None);
    world.origin = Box::new(move |_| OriginResult::Answered {
        status: 200,
        headers: page.clone(),
        body: b"<form method=post></form>".to_vec(),
    });
    world.run(keyed("k1"), order());
    assert_eq!(world.run(keyed("k1"), order()).reply.form_keys.map(|f| f.longest_tag), Some(0));
}

#[test]
fn html_answers_are_marked_for_form_keys_with_headers_for_a_body_new_each_time() {
    let mut world = World::new(&INJECT);
    world.forwarded_headers = vec![
        ("content-type".into(), "text/html".into()),
        ("etag".into(), "W/\"p\"".into()),
        ("last-modified".into(), "Tue, 24 Nov 2026 10:00:00 GMT".into()),
    ];
    let page_get =
        RequestHead { method: "GET".into(), key: None, own_origin: "https://shop.example".into(), ..keyed("") };
    let get = world.run(page_get, order());
    let page_origin = get.reply.form_keys.as_ref().map(|f| f.page_origin.as_str());
    assert_eq!(page_origin, Some("https://shop.example"), "the page's own origin: forms sending elsewhere get none");
    assert_eq!((header(&get.reply, "etag"), header(&get.reply, "last-modified")), (None, None));
    assert_eq!(header(&get.reply, "cache-control"), Some("private"));
    let head = world.run(RequestHead { method: "HEAD".into(), key: None, ..keyed("") }, order());
    assert!(head.reply.form_keys.is_none(), "a HEAD answer has no body");
    // A first answer and its replay each get new keys; what is stored is the origin's own.
    world.origin = Box::new(|_| page());
    let first = world.run(urlencoded(), body("idempotency_key=k&item=tea"));
    assert!(first.reply.form_keys.is_some());
    assert_eq!(header(&first.reply, "cache-control"), Some("private, max-age=60"));
    assert_eq!(header(&first.reply, "content-length"), None);
    let replay = world.run(urlencoded(), body("idempotency_key=k&item=tea"));
    assert!(replay.reply.form_keys.is_some() && header(&replay.reply, "idempotent-replayed") == Some("true"));
    assert_eq!(replay.reply.body, ReplyBody::Bytes(b"<form method=post><button>Buy</button></form>".to_vec()));
    // Not HTML, or no body: untouched.
    world.origin = Box::new(|_| created());
    let json = world.run(keyed("j1"), order());
    assert!(json.reply.form_keys.is_none());
    let refused = world.run(urlencoded(), body("idempotency_key=bad+key"));
    assert!(refused.reply.form_keys.is_none());
    world.origin = Box::new(|_| OriginResult::Answered {
        status: 204,
        headers: vec![("content-type".into(), "text/html".into())],
        body: Vec::new(),
    });
    assert!(world.run(keyed("n1"), order()).reply.form_keys.is_none());
    // With `IDEMPOTENCY_FORMS` off, nothing is.
    let mut off = World::new(&[]);
    off.origin = Box::new(|_| page());
    assert!(off.run(keyed("k1"), order()).reply.form_keys.is_none());
}
