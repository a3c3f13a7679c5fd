// @ts-check
/**
 * The service worker's side: the hub's pushes, notification clicks and closes, and push
 * subscription renewal.
 *
 * ```js
 * // sw.js (a module service worker)
 * import { installServiceWorker } from './notification-hub/service-worker.js';
 * installServiceWorker(self, { client: () => clientFromSavedSettings(), vapidPublicKey: '…' });
 * ```
 */
import { applicationServerKey, webPushRegistration } from './web-push.js';

/**
 * @typedef {import('./client.js').HubClient} HubClient
 * @typedef {import('./client.js').HubNotification} HubNotification
 */

/**
 * The parts of a service worker's `self` (`ServiceWorkerGlobalScope`) the helper uses.
 * @typedef {object} ServiceWorkerScope
 * @property {ServiceWorkerRegistration} registration
 * @property {{ matchAll(options?: object): Promise<readonly WindowClientLike[]>, openWindow(url: string): Promise<unknown> }} clients
 * @property {(type: string, listener: (event: any) => void) => void} addEventListener
 */

/**
 * A window of the app, as `clients.matchAll({ type: 'window' })` lists it.
 * @typedef {{ url: string, postMessage(message: unknown): void, navigate(url: string): Promise<WindowClientLike | null>,
 *   focus(): Promise<unknown> }} WindowClientLike
 */

/**
 * A push the hub sent, decrypted by the browser.
 * @typedef {object} HubPushMessage
 * @property {'tap' | 'visible' | 'fallback'} hub a shoulder tap (sync the feed), or a notification to show
 * @property {string} [app] the app it is for
 * @property {string} [id] the notification's hub ID (visible and fallback)
 * @property {string} [v] the feed version it announces
 * @property {string} [tag] the `appNotificationId` (visible and fallback)
 * @property {string} [title]
 * @property {string} [body]
 */

/**
 * @typedef {object} ServiceWorkerOptions
 * @property {() => HubClient | undefined | Promise<HubClient | undefined>} client the signed-in user's client
 *   (give it a `storeKey` of its own: the page's position is the page's), `undefined` when signed out
 * @property {string} [vapidPublicKey] the app's VAPID public key, to subscribe again on
 *   `pushsubscriptionchange` when the browser gives no new subscription (and the old one has no
 *   key); without it the key is asked of the hub (`client.webPushKey()`)
 * @property {string} [appId] the web app ID the hub maps (the worker's origin by default)
 * @property {string} [appDisplayName] a name for this browser in the user's device list
 * @property {(notification: { id: string, appNotificationId?: string }) => string} [appURL] where a click
 *   goes; by default the worker's scope with `?notification=<id>`
 */

/** The message the worker posts to the app's windows after a sync: `{ type, changes }`. */
export const CHANGES_MESSAGE = 'notificationhub:changes';

/**
 * The message the worker posts to the app's windows after an erasure tap (`{ type }`): the app's
 * operator erased the user's data on the hub (docs/privacy.md), so every local copy goes.
 */
export const ERASED_MESSAGE = 'notificationhub:erased';

/**
 * Whether a push is the hub's erasure tap: a tap announcing feed version `"0"`, which no real
 * change has. The hub sends it to every device of a user right before it erases their data.
 * @param {any} push
 * @returns {boolean}
 */
export function isErasureTap(push) {
  return push?.hub === 'tap' && String(push.v) === '0';
}

/**
 * Handles the hub's pushes, notification clicks and closes and subscription changes in a service
 * worker:
 *
 * - a **tap** syncs the feed, closes the notifications read or dismissed elsewhere, posts the
 *   changes to the app's windows and shows the newest unread change (browsers allow no silent push);
 * - a **visible** (or fallback) payload does the same and shows the payload's title and body,
 *   unless the sync says the notification is read or dismissed already;
 * - a **click** marks the notification read and activated, and opens the app's URL (focusing or
 *   navigating a window of the app when one is open);
 * - a **close** by the user dismisses the notification on every device;
 * - **pushsubscriptionchange** registers the new subscription as the same endpoint.
 * @param {ServiceWorkerScope} worker `self`
 * @param {ServiceWorkerOptions} options
 * @returns {ServiceWorkerHandlers} the handlers, also callable directly
 */
export function installServiceWorker(worker, options) {
  const handlers = serviceWorkerHandlers(worker, options);
  worker.addEventListener('push', (event) => {
    /** @type {any} */
    let message;
    try {
      message = event.data?.json();
    } catch {
      message = undefined;
    }
    event.waitUntil(handlers.push(message));
  });
  worker.addEventListener('notificationclick', (event) => event.waitUntil(handlers.click(event.notification)));
  worker.addEventListener('notificationclose', (event) => event.waitUntil(handlers.close(event.notification)));
  worker.addEventListener('pushsubscriptionchange', (/** @type {any} */ event) =>
    event.waitUntil(handlers.subscriptionChange(event.oldSubscription, event.newSubscription)),
  );
  return handlers;
}

/**
 * @typedef {object} ServiceWorkerHandlers
 * @property {(message: unknown) => Promise<HubNotification[] | undefined>} push handles a decrypted
 *   push; `undefined` when it is not the hub's or not for this app, else the changes synced
 * @property {(notification: Notification) => Promise<void>} click handles a click on a notification
 * @property {(notification: Notification) => Promise<void>} close handles a notification the user closed
 * @property {(oldSubscription?: PushSubscription | null, newSubscription?: PushSubscription | null) => Promise<any>}
 *   subscriptionChange registers the browser's new push subscription
 */

/**
 * The handlers `installServiceWorker` installs, without installing them.
 * @param {ServiceWorkerScope} worker
 * @param {ServiceWorkerOptions} options
 * @returns {ServiceWorkerHandlers}
 */
export function serviceWorkerHandlers(worker, options) {
  const registration = worker.registration;

  /** @param {{ id: string, appNotificationId?: string }} notification */
  const appURL = (notification) => {
    if (options.appURL) return new URL(options.appURL(notification), registration.scope).href;
    const url = new URL(registration.scope);
    url.searchParams.set('notification', notification.id);
    return url.href;
  };

  /** @param {HubNotification} change */
  const gone = (change) =>
    change.status !== 'active' || change.readState === 'read' || change.userActionState === 'dismissed';

  /**
   * @param {string} title
   * @param {{ body?: string, id: string, appNotificationId: string, app: string }} what
   */
  const show = (title, what) =>
    registration.showNotification(title, {
      body: what.body,
      tag: what.appNotificationId,
      data: { hub: { id: what.id, appNotificationId: what.appNotificationId, app: what.app } },
    });

  return {
    async push(message) {
      if (!message || typeof message !== 'object') return undefined;
      const push = /** @type {HubPushMessage} */ (unwrapDeclarative(message));
      if (!['tap', 'visible', 'fallback'].includes(push.hub)) return undefined;
      const client = await options.client();
      if (!client || (push.app !== undefined && push.app !== client.app)) return undefined;
      await applyBadge(/** @type {any} */ (worker).navigator ?? globalThis.navigator, push);
      if (isErasureTap(push)) {
        // Drop the position and every shown notification instead of syncing: nothing is left.
        await client.reset();
        for (const shown of await registration.getNotifications()) shown.close();
        for (const window of await worker.clients.matchAll({ type: 'window', includeUncontrolled: true })) {
          window.postMessage({ type: ERASED_MESSAGE });
        }
        await registration.showNotification('Notifications removed', { tag: 'hub-sync', silent: true });
        return [];
      }
      /** @type {HubNotification[]} */
      let changes = [];
      try {
        changes = await client.sync();
      } catch (error) {
        // Offline or signed out: a visible push still shows; the next push or page syncs.
        console.warn('notification hub: sync after a push failed', error);
      }
      for (const change of changes.filter(gone)) {
        for (const shown of await registration.getNotifications({ tag: change.appNotificationId })) shown.close();
      }
      for (const window of await worker.clients.matchAll({ type: 'window', includeUncontrolled: true })) {
        window.postMessage({ type: CHANGES_MESSAGE, changes });
      }
      if (push.hub === 'visible' || push.hub === 'fallback') {
        const latest = changes.filter((change) => change.id === push.id).pop();
        if (push.id && push.tag && !(latest && gone(latest))) {
          await show(push.title ?? '', { body: push.body, id: push.id, appNotificationId: push.tag, app: client.app });
        }
        return changes;
      }
      const newest = changes.filter((change) => !gone(change) && change.payload?.visualContent).pop();
      const visual = newest?.payload.visualContent;
      if (newest && visual) {
        await show(visual.title ?? '', {
          body: visual.body,
          id: newest.id,
          appNotificationId: newest.appNotificationId,
          app: client.app,
        });
      }
      return changes;
    },

    async click(notification) {
      notification.close();
      const data = notification.data?.hub;
      if (!data?.id) return;
      const client = await options.client();
      const url = appURL(data);
      const reported = client
        ?.update(data.id, { readState: 'read', userActionState: 'activated' })
        .catch((error) => console.warn('notification hub: reporting a click failed', error));
      const path = new URL(url).pathname;
      const windows = await worker.clients.matchAll({ type: 'window', includeUncontrolled: true });
      const open = windows.find((window) => new URL(window.url).pathname === path);
      /** @type {WindowClientLike | null | undefined} */
      let shown = open;
      if (open && open.url !== url) {
        // Only a window this worker controls can be navigated; another gets a window of its own.
        shown = await open.navigate(url).catch(() => undefined);
      }
      if (shown) await shown.focus().catch(() => {});
      else await worker.clients.openWindow(url);
      await reported;
    },

    async close(notification) {
      const data = notification.data?.hub;
      if (!data?.id) return;
      const client = await options.client();
      await client?.dismiss(data.id);
    },

    async subscriptionChange(oldSubscription, newSubscription) {
      const client = await options.client();
      if (!client) return undefined;
      const subscription =
        newSubscription ??
        (await registration.pushManager.subscribe({
          userVisibleOnly: true,
          applicationServerKey:
            oldSubscription?.options?.applicationServerKey ??
            applicationServerKey(options.vapidPublicKey ?? (await client.webPushKey())),
        }));
      return client.register(webPushRegistration(subscription, options));
    },
  };
}

/**
 * The hub's fields of a declarative push message (`{"web_push": 8030, "notification": {…, "data":
 * {hub, app, id, v}}}`, sent to Safari or to a subscription registered with `declarative: true`), as
 * the classic payload carries them; any other message as it is. A browser with Declarative Web
 * Push shows such a message itself; one without it hands it to the worker.
 * @param {any} message
 * @returns {any}
 */
export function unwrapDeclarative(message) {
  const shown = message?.web_push === 8030 ? message.notification : undefined;
  if (!shown || typeof shown !== 'object') return message;
  return { ...(shown.data ?? {}), title: shown.title, body: shown.body, tag: shown.tag };
}

/**
 * Sets the app icon's badge to the hub's unread count a push carries (`"badge": "<count>"`, sent
 * when the app shows the hub's badge, `delivery.badge: unread`; 0 clears it), where the browser
 * has the Badging API. A push without a count leaves the badge alone.
 * @param {{ setAppBadge?(count: number): Promise<void>, clearAppBadge?(): Promise<void> } | undefined} navigatorLike
 * @param {any} push a decrypted push message, classic (declarative ones carry `app_badge`, which
 *   the browser applies itself)
 * @returns {Promise<boolean>} whether a badge was set or cleared
 */
export async function applyBadge(navigatorLike, push) {
  const count = Number(push?.badge);
  if (push?.badge === undefined || !Number.isInteger(count) || count < 0) return false;
  if (!navigatorLike?.setAppBadge || !navigatorLike.clearAppBadge) return false;
  try {
    await (count > 0 ? navigatorLike.setAppBadge(count) : navigatorLike.clearAppBadge());
    return true;
  } catch {
    return false; // not allowed here (no notification permission): the badge is a hint only
  }
}
