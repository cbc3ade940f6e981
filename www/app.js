// The demo shop's checkout: a plain form, protected by oncekey.
import { protectForm, isReplayed, NetworkError } from "./vendor/oncekey/oncekey.js";

const $ = (id) => document.getElementById(id);
const form = $("checkout");
const params = new URLSearchParams(location.search);
// `?item=` lets a test (or a curious visitor) start from a clean order count.
if (params.get("item")) $("item").value = params.get("item");
const item = $("item").value;
const unitCents = Number(form.elements.amountCents.value);
const money = (cents) => `$${(cents / 100).toFixed(2)}`;

// The flaky-network control survives a reload, so a resubmit after one is
// the same request (the slow mode is part of the URL, hence of the payload).
const FAULT = "demo:fault";
const faultInput = (v) => document.querySelector(`input[name=fault][value="${v}"]`);
faultInput(sessionStorage.getItem(FAULT) ?? "none")?.setAttribute("checked", "");
const fault = () => document.querySelector("input[name=fault]:checked").value;
const applyFault = () => {
  sessionStorage.setItem(FAULT, fault());
  form.action = fault() === "slow" ? "/api/orders?delay_ms=4000" : "/api/orders";
};
for (const el of document.querySelectorAll("input[name=fault]")) el.addEventListener("change", applyFault);
applyFault();

$("quantity").addEventListener("change", () => {
  $("total").textContent = money(unitCents * Number($("quantity").value));
});

async function refreshCount() {
  try {
    const res = await fetch(`/api/orders?item=${encodeURIComponent(item)}`);
    const { count } = await res.json();
    $("orders").textContent = count;
    $("cart-count").textContent = count;
  } catch {
    // The count is a nicety; the checkout works without it.
  }
}

const attempts = $("attempts");
let attempt = 0;
function logAttempt() {
  if (attempt === 0) attempts.replaceChildren();
  attempt += 1;
  const li = document.createElement("li");
  li.textContent = `POST ${fault() === "slow" ? "/api/orders?delay_ms=4000" : "/api/orders"} … `;
  attempts.append(li);
  return li;
}
function settle(li, status, text, note = "") {
  li.className = status === 0 ? "s0" : status === 409 ? "s409" : `s${String(status)[0]}`;
  li.textContent = text;
  if (note) li.append(" ", Object.assign(document.createElement("small"), { textContent: note }));
}

// Each attempt goes through here: it injects the chosen fault into the
// first answers and logs what came back.
async function demoFetch(request, init) {
  const req = new Request(request, init);
  const n = attempt + 1;
  const mode = fault();
  if (mode === "unavailable" && n <= 2) req.headers.set("Demo-Fault", "unavailable");
  if (mode === "drop" && n === 1) req.headers.set("Demo-Fault", "drop");
  const li = logAttempt();
  const started = performance.now();
  let res;
  try {
    res = await fetch(req);
  } catch (error) {
    settle(li, 0, `#${n} no answer`, error.message);
    throw error;
  }
  const ms = `${Math.round(performance.now() - started)} ms`;
  if (mode === "lost" && n === 1) {
    // The server did the work; the answer dies on the way back.
    res.body?.cancel();
    settle(li, 0, `#${n} answer lost on the way back`, `the server answered ${res.status} after ${ms}`);
    throw new TypeError("Network connection lost (simulated)");
  }
  const replay = isReplayed(res) ? " · replayed" : "";
  settle(li, res.status, `#${n} ${res.status} ${res.statusText || ""}${replay}`, ms);
  return res;
}

const status = $("status");
const say = (text, kind = "") => {
  status.textContent = text;
  status.className = `status ${kind}`;
};

protectForm(form, {
  fetch: demoFetch,
  headers: { "content-type": "application/json" },
  body: (data) =>
    JSON.stringify({
      item: data.get("item"),
      quantity: Number(data.get("quantity")),
      amountCents: unitCents * Number(data.get("quantity")),
      ...(data.get("customerId") ? { customerId: data.get("customerId") } : {}),
    }),
});
// For tests and the curious: the checkout is protected from here on.
form.dataset.protected = "";

form.addEventListener("oncekey:pending", (e) => {
  attempt = 0;
  $("key").textContent = e.detail.key;
  $("answer").textContent = "…";
  say(e.detail.resumed ? "Finishing the order you started before the reload…" : "Placing your order…", "wait");
});
form.addEventListener("oncekey:retry", (e) => {
  const { delay, response } = e.detail;
  const last = attempts.lastElementChild;
  last?.append(
    " ",
    Object.assign(document.createElement("small"), {
      textContent:
        response?.status === 409 ? `still running; asking again in ${delay} ms` : `retry in ${delay} ms, same key`,
    }),
  );
  say("The network hiccuped; retrying with the same key…", "wait");
});
form.addEventListener("oncekey:success", async (e) => {
  const { response, replayed } = e.detail;
  const order = await response.json();
  $("answer").textContent =
    `${response.status} · order ${order.orderId} (attempt ${order.attempt ?? "—"})${replayed ? " · replayed" : ""}`;
  say(`Thank you! ${order.quantity} × Guji Highlands, ${money(order.amountCents)}. Order ${order.orderId}.`, "ok");
  refreshCount();
});
form.addEventListener("oncekey:error", async (e) => {
  const { error, response } = e.detail;
  if (response) {
    const problem = await response.json().catch(() => ({}));
    $("answer").textContent = `${response.status} ${problem.title ?? ""}`;
    say(`We could not place the order: ${problem.detail ?? problem.title ?? response.status}.`, "bad");
  } else if (error instanceof NetworkError) {
    $("answer").textContent = "no answer";
    say("No connection. Your order may have gone through: press Buy again, it is safe (same key).", "bad");
  } else {
    say(`Something went wrong: ${error?.message ?? error}`, "bad");
  }
  refreshCount();
});

// A submission a reload interrupted is still saved (sessionStorage).
if (Object.keys(sessionStorage).some((k) => k.startsWith("oncekey:"))) {
  say("Your last order was interrupted. Press Buy now again to finish it: it will not be charged twice.", "wait");
}
refreshCount();
