//! The demo's page with no script at all (SPEC §7, §8): a classic
//! post/redirect/get order form, protected by the layer's form keys alone
//! (`IDEMPOTENCY_FORMS=inject`). `GET /classic` renders the form; `POST
//! /classic/orders` validates it (a 422 re-renders it, with its error) and
//! places the order, then redirects (303) to `GET /classic/orders/:id`,
//! the confirmation. tests/edge/js-host/classic.js is the same page on the
//! JavaScript host, answer for answer.

use serde_json::Value;
use worker::{Env, FormEntry, Headers, Method, Request, Response, ResponseBuilder, Result, Url};

/// Serves `/classic` and what is under it.
pub async fn serve(mut req: Request, env: &Env) -> Result<Response> {
    let path = req.path();
    match (req.method(), path.as_str()) {
        (Method::Get, "/classic") => html(200, &form_page("", "", "", "")),
        (Method::Post, "/classic/orders") => {
            let form = req.form_data().await?;
            let field = |name: &str| match form.get(name) {
                Some(FormEntry::Field(value)) => value.trim().to_owned(),
                _ => String::new(),
            };
            let (item, quantity, amount) = (field("item"), field("quantity"), field("amountCents"));
            let error = if item.is_empty() {
                "Name the item."
            } else if !quantity.parse::<u64>().is_ok_and(|q| q > 0) {
                "Quantity must be a whole number above 0."
            } else if !amount.parse::<u64>().is_ok_and(|a| a > 0) {
                "Amount must be a whole number of cents above 0."
            } else {
                ""
            };
            if !error.is_empty() {
                return html(422, &form_page(&item, &quantity, &amount, error));
            }
            let attempt = req.headers().get("Idempotency-Attempt")?.and_then(|a| a.parse::<u32>().ok());
            let (quantity, amount) = (quantity.parse().unwrap_or(1), amount.parse().unwrap_or(1));
            let order = super::shop::place(env, &item, quantity, amount, None, attempt).await?;
            let id = order["orderId"].as_str().unwrap_or_default();
            let mut location = Url::parse(&format!("https://demo.invalid/classic/orders/{id}"))?;
            location.query_pairs_mut().append_pair("item", &item);
            let headers = Headers::new();
            headers.set("Location", &location[worker::url::Position::BeforePath..])?;
            Ok(ResponseBuilder::new().with_status(303).with_headers(headers).empty())
        }
        (Method::Get, path) if path.starts_with("/classic/orders/") => {
            let id = &path["/classic/orders/".len()..];
            let url = req.url()?;
            let item = url.query_pairs().find(|(k, _)| k == "item").map(|(_, v)| v.into_owned()).unwrap_or_default();
            let list: Value = super::shop::orders_of(env, &item).await?.json().await?;
            let order = list["orders"].as_array().into_iter().flatten().find(|o| o["orderId"] == id);
            match order {
                Some(order) => html(200, &confirmation(order)),
                None => html(404, &page("No such order", "<p>No such order.</p>")),
            }
        }
        _ => html(404, &page("Not found", "<p>No such page.</p>")),
    }
}

fn html(status: u16, body: &str) -> Result<Response> {
    let headers = Headers::new();
    headers.set("Content-Type", "text/html; charset=utf-8")?;
    Ok(ResponseBuilder::new().with_status(status).with_headers(headers).fixed(body.as_bytes().to_vec()))
}

fn page(title: &str, main: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{title} · oncekey demo</title>\
         <link rel=\"stylesheet\" href=\"/style.css\"></head><body class=\"classic\"><header class=\"site\">\
         <a class=\"brand\" href=\"/\">Ridgeline <span>Coffee</span></a></header><main>{main}</main>\
         <footer class=\"site\">A demo shop: no coffee is shipped, no card charged.</footer></body></html>"
    )
}

fn form_page(item: &str, quantity: &str, amount: &str, error: &str) -> String {
    let error = if error.is_empty() { String::new() } else { format!("<p role=\"alert\">{}</p>", as_html(error)) };
    page(
        "Order, no script",
        &format!(
            "<h1>Order coffee, no JavaScript</h1>\
             <p>This page has no script: the edge gives its form a key, so a double click, the back button or a \
             reload sends one order.</p>{error}\
             <form method=\"post\" action=\"/classic/orders\" id=\"order\">\
             <label>Item <input name=\"item\" value=\"{}\"></label>\
             <label>Quantity <input name=\"quantity\" inputmode=\"numeric\" value=\"{}\"></label>\
             <label>Amount (cents) <input name=\"amountCents\" inputmode=\"numeric\" value=\"{}\"></label>\
             <button type=\"submit\">Place order</button></form>\
             <p><a href=\"/\">The page with JavaScript</a></p>",
            as_html(item),
            as_html(quantity),
            as_html(amount),
        ),
    )
}

fn confirmation(order: &Value) -> String {
    let text = |name: &str| as_html(&order[name].as_str().map_or_else(|| order[name].to_string(), str::to_owned));
    page(
        "Order placed",
        &format!(
            "<h1>Order placed</h1><p id=\"order\">Order <code>{}</code>: {} × {}, {} cents.</p>\
             <p><a href=\"/classic\">Place another order</a></p>",
            text("orderId"),
            text("quantity"),
            text("item"),
            text("amountCents"),
        ),
    )
}

/// Text as HTML: what a user typed never becomes markup.
fn as_html(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
