// The page: a HubClient whose changes() keep the list in step (the event stream, long-polls where
// streams are blocked), read and dismiss buttons, and Web Push through the service worker (sw.js).
// A published app imports '@notificationhub/client' instead of the relative path.
import { HubClient, IndexedDBStore, registerWebPush } from '../../clients/js/src/index.js';

const form = /** @type {HTMLFormElement} */ (document.querySelector('#settings'));
const status = /** @type {HTMLElement} */ (document.querySelector('#status'));
const feed = /** @type {HTMLUListElement} */ (document.querySelector('#feed'));
// The settings the service worker reads when a push wakes it with no page open.
const settings = new IndexedDBStore('notification-hub-example', 'settings');

/** @type {HubClient | undefined} */
let client;
/** @type {AbortController | undefined} */
let running;

/** @param {string} text */
function show(text) {
  status.textContent = text;
}

/** @param {import('../../clients/js/src/client.js').HubNotification} change */
function render(change) {
  feed.querySelector(`li[data-id="${CSS.escape(change.appNotificationId)}"]`)?.remove();
  if (change.status !== 'active' || change.userActionState === 'dismissed') return;
  const item = document.createElement('li');
  item.dataset.id = change.appNotificationId;
  item.className = change.readState;
  const title = document.createElement('span');
  title.className = 'title';
  const visual = change.payload?.visualContent;
  title.textContent = visual ? `${visual.title ?? ''}${visual.body ? ` — ${visual.body}` : ''}` : change.appNotificationId;
  item.append(title);
  for (const [label, action] of /** @type {const} */ ([['Mark read', 'read'], ['Dismiss', 'dismiss']])) {
    if (action === 'read' && change.readState === 'read') continue;
    const button = document.createElement('button');
    button.type = 'button';
    button.className = action;
    button.textContent = label;
    button.addEventListener('click', () => {
      const done = action === 'read' ? client?.markRead(change.id) : client?.dismiss(change.id);
      done?.catch((error) => show(`${label} failed: ${error.message}`));
    });
    item.append(button);
  }
  feed.prepend(item);
}

/** Starts (or restarts) the client with the form's settings and follows the feed. */
async function connect() {
  const values = /** @type {Record<string, string>} */ (Object.fromEntries(new FormData(form)));
  const endpointId = (await settings.get('endpointId')) ?? `web-${crypto.randomUUID()}`;
  await settings.set('endpointId', endpointId);
  await settings.set('settings', { ...values, endpointId });
  running?.abort();
  client?.close();
  feed.replaceChildren();
  const current = new HubClient({
    baseURL: values.hub,
    app: values.app,
    endpointId,
    // A real app returns its sign-in's token here, and a refreshed one when reason is 'invalidated'.
    token: () => values.token,
    onResync: () => feed.replaceChildren(),
  });
  client = current;
  running = new AbortController();
  show(`Connected as endpoint ${endpointId}.`);
  try {
    for await (const change of current.changes({ signal: running.signal })) render(change);
  } catch (error) {
    show(`Stopped: ${/** @type {Error} */ (error).message}`);
  }
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  connect();
});

document.querySelector('#push')?.addEventListener('click', async () => {
  try {
    if (!client) throw new Error('connect first');
    const vapidPublicKey = String(new FormData(form).get('vapidKey') ?? '');
    if (!vapidPublicKey) throw new Error('fill in the VAPID public key');
    if (Notification.permission !== 'granted' && (await Notification.requestPermission()) !== 'granted') {
      throw new Error('notifications are not allowed for this page');
    }
    await navigator.serviceWorker.register('sw.js', { type: 'module' });
    const registration = await navigator.serviceWorker.ready;
    const endpoint = await registerWebPush(registration, client, {
      vapidPublicKey,
      appDisplayName: 'Web client example',
    });
    show(`Push enabled: endpoint ${endpoint.id} (${endpoint.state}).`);
  } catch (error) {
    show(`Push failed: ${/** @type {Error} */ (error).message}`);
  }
});

(async () => {
  const saved = await settings.get('settings');
  if (!saved) return;
  for (const [name, value] of Object.entries(saved)) {
    const input = form.elements.namedItem(name);
    if (input instanceof HTMLInputElement) input.value = String(value);
  }
})();
