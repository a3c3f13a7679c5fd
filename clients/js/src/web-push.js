// @ts-check
/** Web Push: subscribe a service worker's registration and register it with the hub. */

/** @typedef {import('./client.js').HubClient} HubClient */

/**
 * The URL-safe base64 VAPID public key as the bytes `pushManager.subscribe` takes.
 * @param {string} base64url
 * @returns {Uint8Array}
 */
export function applicationServerKey(base64url) {
  const base64 = base64url.replace(/-/g, '+').replace(/_/g, '/');
  const padded = base64 + '='.repeat((4 - (base64.length % 4)) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}

/**
 * @param {ArrayBuffer | null | undefined} key
 * @param {Uint8Array} expected
 */
function sameKey(key, expected) {
  if (!key) return false;
  const bytes = new Uint8Array(key);
  return bytes.length === expected.length && bytes.every((byte, index) => byte === expected[index]);
}

/**
 * The endpoint registration of a push subscription: the `web` platform, transport `webpush`, and
 * the subscription's JSON (endpoint URL, p256dh and auth keys) as the token.
 * @param {PushSubscription} subscription
 * @param {{ appId?: string, appDisplayName?: string }} [options] `appId` is the page's origin by default
 */
export function webPushRegistration(subscription, options = {}) {
  return {
    platform: /** @type {'web'} */ ('web'),
    appId: options.appId ?? globalThis.location.origin,
    transport: 'webpush',
    token: JSON.stringify(subscription.toJSON()),
    ...(options.appDisplayName ? { appDisplayName: options.appDisplayName } : {}),
  };
}

/**
 * Subscribes `registration` to Web Push with the app's VAPID public key (a subscription with
 * another key is replaced) and registers it as this client's endpoint. Browsers allow no silent
 * push (`userVisibleOnly`): the service worker shows a notification for every push
 * (see `service-worker.js`), and renews the registration on `pushsubscriptionchange`.
 * @param {ServiceWorkerRegistration} registration the service worker's registration
 * @param {HubClient} client the user's client
 * @param {object} [options]
 * @param {string} [options.vapidPublicKey] the app's VAPID public key, URL-safe base64 (`hub map-app`
 *   prints it); without it the key is asked of the hub (`client.webPushKey()`)
 * @param {string} [options.appId] the web app ID the hub maps (the page's origin by default)
 * @param {string} [options.appDisplayName] a name for this browser in the user's device list
 * @returns {Promise<any>} the endpoint the hub registered
 */
export async function registerWebPush(registration, client, options = {}) {
  const key = applicationServerKey(options.vapidPublicKey ?? (await client.webPushKey()));
  let subscription = await registration.pushManager.getSubscription();
  if (subscription && !sameKey(subscription.options?.applicationServerKey, key)) {
    await subscription.unsubscribe();
    subscription = null;
  }
  subscription ??= await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
  return client.register(webPushRegistration(subscription, options));
}
