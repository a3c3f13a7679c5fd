// The service worker: the SDK's helper turns the hub's pushes into a sync and a notification,
// a click into the app's URL (marked read and activated), a close into a dismiss on every
// device, and renews the endpoint when the browser renews the push subscription.
import { HubClient, IndexedDBStore, installServiceWorker } from '../../clients/js/src/index.js';

const settings = new IndexedDBStore('notification-hub-example', 'settings');

installServiceWorker(/** @type {any} */ (self), {
  client: async () => {
    const saved = await settings.get('settings');
    if (!saved) return undefined;
    return new HubClient({
      baseURL: saved.hub,
      app: saved.app,
      endpointId: saved.endpointId,
      // The token the page saved; a real app refreshes it here through its sign-in.
      token: () => saved.token,
      // The worker's own position: the page's list follows the page's.
      storeKey: `service-worker/${saved.app}/${saved.endpointId}`,
    });
  },
});
