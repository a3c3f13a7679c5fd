// The test service worker: the SDK's helper as an app installs it, plus a test hook that calls
// its click and close handlers with a notification it shows (a headless browser cannot click one).
import { HubClient, IndexedDBStore, installServiceWorker } from '../../src/index.js';

const settings = new IndexedDBStore('notification-hub-test', 'settings');
const worker = /** @type {any} */ (self);

const handlers = installServiceWorker(worker, {
  client: async () => {
    const saved = await settings.get('settings');
    if (!saved) return undefined;
    return new HubClient({
      baseURL: saved.hub,
      app: saved.app,
      endpointId: saved.endpointId,
      token: () => saved.token,
      storeKey: `service-worker/${saved.app}/${saved.endpointId}`,
    });
  },
  appURL: (notification) => `inbox.html?notification=${encodeURIComponent(notification.id)}`,
});

worker.addEventListener('install', () => worker.skipWaiting());
worker.addEventListener('activate', (/** @type {any} */ event) => event.waitUntil(worker.clients.claim()));
worker.addEventListener('message', (/** @type {any} */ event) => {
  const { command, tag } = event.data;
  const port = event.ports[0];
  event.waitUntil(
    (async () => {
      const [shown] = await worker.registration.getNotifications({ tag });
      if (!shown) return port.postMessage({ error: `no notification with tag ${tag}` });
      if (command === 'click') await handlers.click(shown);
      else if (command === 'close') {
        shown.close();
        await handlers.close(shown);
      }
      port.postMessage({ ok: true });
    })().catch((error) => port.postMessage({ error: String(error) })),
  );
});
