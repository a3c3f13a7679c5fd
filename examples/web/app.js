import { applicationServerKey, load, register, save, sync } from './hub.js';

const form = document.querySelector('#settings');
const status = document.querySelector('#status');
const feed = document.querySelector('#feed');

function show(text) { status.textContent = text; }

function render(changes) {
  for (const change of changes) {
    document.getElementById(change.id)?.remove();
    if (change.status !== 'active') continue;
    const item = document.createElement('li');
    item.id = change.id;
    item.className = change.readState;
    const visual = change.payload?.visualContent;
    item.textContent = visual ? `${visual.title}${visual.body ? ` — ${visual.body}` : ''}` : change.appNotificationId;
    feed.prepend(item);
  }
}

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const settings = Object.fromEntries(new FormData(form));
  try {
    if (Notification.permission !== 'granted' && (await Notification.requestPermission()) !== 'granted') {
      throw new Error('notifications are not allowed for this page');
    }
    const worker = await navigator.serviceWorker.register('sw.js', { type: 'module' });
    await navigator.serviceWorker.ready;
    const subscription = await worker.pushManager.subscribe({
      userVisibleOnly: true, // browsers allow no silent pushes: the worker shows one for every push
      applicationServerKey: applicationServerKey(settings.vapidKey),
    });
    const endpointId = (await load('endpointId')) || `web-${crypto.randomUUID()}`;
    await save('settings', settings);
    await save('endpointId', endpointId);
    const endpoint = await register(settings, endpointId, subscription);
    show(`Registered as endpoint ${endpoint.id} (${endpoint.state}).`);
    render(await sync(settings));
  } catch (error) {
    show(`Failed: ${error.message}`);
  }
});

document.querySelector('#sync').addEventListener('click', async () => {
  const settings = await load('settings');
  if (settings) render(await sync(settings));
});

// The service worker tells open pages what a push brought.
navigator.serviceWorker?.addEventListener('message', (event) => render(event.data.changes || []));

(async () => {
  const settings = await load('settings');
  if (!settings) return;
  for (const [name, value] of Object.entries(settings)) if (form.elements[name]) form.elements[name].value = value;
  show(`Registered as endpoint ${await load('endpointId')}.`);
  render(await sync(settings));
})();
