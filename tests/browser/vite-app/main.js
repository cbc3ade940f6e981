import { newKey, protectForm, idempotentFetch, isReplayed, OnceKeyError } from "oncekey";

document.getElementById("key").textContent = newKey();
protectForm(document.getElementById("order"));
window.oncekeyReady = { idempotentFetch, isReplayed, OnceKeyError };
