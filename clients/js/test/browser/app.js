// The feed page of the browser test (Tests/Browser/web_client_test.py): one HubClient, its
// changes() rendered as a list. Everything it received is kept in window.received, every event
// stream it opened (with its Last-Event-ID) in window.streams.
import { HubClient } from '../../src/index.js';

const params = new URLSearchParams(location.search);
/** @type {{ id: string, v: number, state: string }[]} */
const received = [];
/** @type {{ lastEventId: string | null, at: number }[]} */
const streams = [];
Object.assign(window, { received, streams, failure: null });

/** @type {typeof fetch} */
const recordingFetch = (input, init) => {
  const headers = /** @type {Record<string, string>} */ (init?.headers ?? {});
  if (headers.Accept === 'text/event-stream') streams.push({ lastEventId: headers['Last-Event-ID'] ?? null, at: Date.now() });
  return fetch(input, init);
};

const client = new HubClient({
  baseURL: params.get('hub') ?? '',
  app: params.get('app') ?? '',
  endpointId: params.get('endpoint') ?? '',
  token: () => params.get('token') ?? '',
  fetch: recordingFetch,
  initialRetryDelay: 200,
  maxRetryDelay: 2000,
});
Object.assign(window, { hubClient: client });

const feed = /** @type {HTMLUListElement} */ (document.querySelector('#feed'));
(async () => {
  for await (const change of client.changes()) {
    received.push({ id: change.appNotificationId, v: change.changeVersion, state: change.userActionState });
    feed.querySelector(`li[data-id="${CSS.escape(change.appNotificationId)}"]`)?.remove();
    if (change.status !== 'active' || change.userActionState === 'dismissed') continue;
    const item = document.createElement('li');
    item.dataset.id = change.appNotificationId;
    item.textContent = change.payload?.visualContent?.title ?? change.appNotificationId;
    feed.append(item);
  }
})().catch((error) => Object.assign(window, { failure: String(error) }));
