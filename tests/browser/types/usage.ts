// Uses the whole public API; `tsc --noEmit` checks it against the package's types.
import {
  HTTPError,
  LoadError,
  NetworkError,
  NotReadyError,
  OnceKeyError,
  OptionsError,
  OutcomeUnknownError,
  idempotentFetch,
  isReplayed,
  newKey,
  protectForm,
  ready,
  type ErrorDetail,
  type IdempotentFetchOptions,
  type PendingDetail,
  type ProtectFormEventMap,
  type ProtectFormOptions,
  type ProtectedForm,
  type RetryInfo,
  type RetryOptions,
  type SuccessDetail,
} from 'oncekey';

const loaded: Promise<void> = ready();
const key: string = newKey();

const retry: RetryOptions = {
  limit: 3,
  statusCodes: [408, 429, 503],
  delay: 300,
  backoffLimit: 5_000,
  jitter: true,
  maxRetryAfter: 10_000,
  maxInFlightWait: 120_000,
  waitUnknown: false,
};

const controller = new AbortController();
const options: IdempotentFetchOptions = {
  key,
  retry,
  signal: controller.signal,
  methods: ['POST', 'PATCH', 'PUT'],
  fetch: (input: Request, init?: RequestInit) => fetch(input, init),
  onRetry: ({ key, attempt, delay, response, error }: RetryInfo) => {
    console.log(key.length, attempt + delay, response?.status, error);
  },
};

async function order(): Promise<boolean> {
  try {
    const res: Response = await idempotentFetch(
      '/api/orders',
      { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' },
      options,
    );
    await idempotentFetch(new URL('https://example.com/x'), undefined, { retry: 0 });
    await idempotentFetch(new Request('https://example.com/x', { method: 'PATCH' }));
    return isReplayed(res);
  } catch (e) {
    if (e instanceof OutcomeUnknownError) {
      const wait: number | undefined = e.retryAfterMs;
      const answer: Response = e.response;
      console.log(wait, answer.status, e.key);
    } else if (e instanceof NetworkError) {
      const attempts: number = e.attempts;
      const k: string | null = e.key;
      console.log(attempts, k, e.cause);
    } else if (e instanceof OptionsError || e instanceof OnceKeyError) {
      console.log(e.message);
    }
    throw e;
  }
}

const form = document.querySelector('form')!;
const formOptions: ProtectFormOptions = {
  url: '/api/orders',
  headers: { 'content-type': 'application/json' },
  body: (data: FormData) => JSON.stringify(Object.fromEntries(data)),
  storage: sessionStorage,
  id: 'checkout',
  retry: { limit: 2 },
  onRetry: async (info) => { await Promise.resolve(info.delay); },
};
const guard: ProtectedForm = protectForm(form, formOptions);
protectForm(form, { storage: null });
protectForm(form);

form.addEventListener('oncekey:pending', ((e: ProtectFormEventMap['oncekey:pending']) => {
  const d: PendingDetail = e.detail;
  console.log(d.key, d.resumed);
}) as EventListener);
form.addEventListener('oncekey:retry', ((e: ProtectFormEventMap['oncekey:retry']) => {
  console.log(e.detail.attempt);
}) as EventListener);
form.addEventListener('oncekey:success', ((e: ProtectFormEventMap['oncekey:success']) => {
  const d: SuccessDetail = e.detail;
  console.log(d.response.status, d.replayed);
}) as EventListener);
form.addEventListener('oncekey:error', ((e: ProtectFormEventMap['oncekey:error']) => {
  const d: ErrorDetail = e.detail;
  if (d.error instanceof HTTPError) console.log(d.error.response.status, d.error.key);
}) as EventListener);

// The events are on HTMLElementEventMap and DocumentEventMap: no cast under `strict`.
form.addEventListener('oncekey:pending', (e) => {
  const resumed: boolean = e.detail.resumed;
  console.log(e.detail.key.length, resumed);
});
form.addEventListener('oncekey:retry', (e) => console.log(e.detail.attempt + e.detail.delay));
form.addEventListener('oncekey:success', (e) => {
  const response: Response = e.detail.response;
  const k: string | null = e.detail.key;
  console.log(response.status, e.detail.replayed, k);
});
form.addEventListener('oncekey:error', (e) => {
  const d: ErrorDetail = e.detail;
  if (d.error instanceof LoadError) console.warn('sent without a key:', d.error.message, d.error.cause);
});
document.addEventListener('oncekey:success', (e) => console.log(e.detail.response.ok));
document.body.addEventListener('oncekey:error', (e) => console.log(e.detail.error));
// @ts-expect-error a success detail has no `error`
form.addEventListener('oncekey:success', (e) => console.log(e.detail.error));
// @ts-expect-error the key may be null (sent without the wasm): not a plain string
form.addEventListener('oncekey:success', (e) => e.detail.key.length);

async function keyWhenReady(): Promise<string> {
  try {
    return newKey();
  } catch (e) {
    if (e instanceof NotReadyError) {
      await loaded;
      return newKey();
    }
    throw e;
  }
}

guard.detach();
void order();
void keyWhenReady();
