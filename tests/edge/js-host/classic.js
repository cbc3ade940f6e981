// The demo's page with no script at all on the JavaScript host: a port of
// workers/demo/src/classic.rs, answer for answer. A classic
// post/redirect/get order form, protected by the layer's form keys alone.

import { ordersOf, place } from "./shop.js";

/** Serves `/classic` and what is under it. */
export async function serveClassic(request, env) {
  const url = new URL(request.url);
  const path = url.pathname;
  if (request.method === "GET" && path === "/classic") return html(200, formPage("", "", "", ""));
  if (request.method === "POST" && path === "/classic/orders") {
    const form = await request.formData();
    const field = (name) => {
      const value = form.get(name);
      return typeof value === "string" ? value.trim() : "";
    };
    const [item, quantity, amount] = [field("item"), field("quantity"), field("amountCents")];
    const whole = (text) => /^\d+$/.test(text) && Number(text) > 0;
    const error =
      item === ""
        ? "Name the item."
        : !whole(quantity)
          ? "Quantity must be a whole number above 0."
          : !whole(amount)
            ? "Amount must be a whole number of cents above 0."
            : "";
    if (error !== "") return html(422, formPage(item, quantity, amount, error));
    const attemptHeader = request.headers.get("idempotency-attempt");
    const attempt = attemptHeader === null ? undefined : Number(attemptHeader);
    const order = await place(env, { item, quantity: Number(quantity), amountCents: Number(amount), attempt });
    const location = `/classic/orders/${order.orderId}?${new URLSearchParams({ item })}`;
    return new Response(null, { status: 303, headers: { location } });
  }
  if (request.method === "GET" && path.startsWith("/classic/orders/")) {
    const id = path.slice("/classic/orders/".length);
    const list = await (await ordersOf(env, url.searchParams.get("item") ?? "")).json();
    const order = (list.orders ?? []).find((o) => o.orderId === id);
    return order === undefined
      ? html(404, page("No such order", "<p>No such order.</p>"))
      : html(200, confirmation(order));
  }
  return html(404, page("Not found", "<p>No such page.</p>"));
}

function html(status, body) {
  return new Response(body, { status, headers: { "content-type": "text/html; charset=utf-8" } });
}

function page(title, main) {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1"><title>${title} · oncekey demo</title>` +
    `<link rel="stylesheet" href="/style.css"></head><body class="classic"><header class="site">` +
    `<a class="brand" href="/">Ridgeline <span>Coffee</span></a></header><main>${main}</main>` +
    `<footer class="site">A demo shop: no coffee is shipped, no card charged.</footer></body></html>`
  );
}

function formPage(item, quantity, amount, error) {
  const alert = error === "" ? "" : `<p role="alert">${asHtml(error)}</p>`;
  return page(
    "Order, no script",
    "<h1>Order coffee, no JavaScript</h1>" +
      "<p>This page has no script: the edge gives its form a key, so a double click, the back button or a " +
      `reload sends one order.</p>${alert}` +
      '<form method="post" action="/classic/orders" id="order">' +
      `<label>Item <input name="item" value="${asHtml(item)}"></label>` +
      `<label>Quantity <input name="quantity" inputmode="numeric" value="${asHtml(quantity)}"></label>` +
      `<label>Amount (cents) <input name="amountCents" inputmode="numeric" value="${asHtml(amount)}"></label>` +
      '<button type="submit">Place order</button></form>' +
      '<p><a href="/">The page with JavaScript</a></p>',
  );
}

function confirmation(order) {
  const text = (name) => asHtml(String(order[name]));
  return page(
    "Order placed",
    `<h1>Order placed</h1><p id="order">Order <code>${text("orderId")}</code>: ${text("quantity")} × ${text("item")}, ` +
      `${text("amountCents")} cents.</p><p><a href="/classic">Place another order</a></p>`,
  );
}

/** Text as HTML: what a user typed never becomes markup. */
function asHtml(text) {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");
}
