// The browser entry's types in a Node project without the DOM lib (only
// @types/node): idempotentFetch and the errors are usable, a misuse is an
// error, and protectForm — forms exist only in a page — takes nothing.
import { OutcomeUnknownError, idempotentFetch, isReplayed, newKey, protectForm } from 'oncekey';

async function order(): Promise<boolean> {
  const headers = new Headers({ 'content-type': 'application/json' });
  try {
    const res: Response = await idempotentFetch(
      'https://api.example.com/orders',
      { method: 'POST', headers, body: '{}' },
      { key: newKey(), retry: { limit: 3, waitUnknown: false } },
    );
    await idempotentFetch(new URL('https://api.example.com/orders'));
    await idempotentFetch(new Request('https://api.example.com/orders', { method: 'PATCH' }));
    return isReplayed(res);
  } catch (e) {
    if (e instanceof OutcomeUnknownError) console.log(e.key, e.retryAfterMs, e.response.status);
    throw e;
  }
}

// @ts-expect-error not a request: the input is Request | string | URL, never `any`
idempotentFetch({ nonsense: true });
// @ts-expect-error no DOM, no form
protectForm({});

console.log(order);
