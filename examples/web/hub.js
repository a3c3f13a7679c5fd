// The hub's device API as both the page and the service worker use it. Settings (hub URL, app,
// user token, endpoint ID, feed cursor) live in IndexedDB so the service worker can sync the feed
// when a push wakes it, with no page open.

const DB = 'notification-hub';
const STORE = 'settings';

function database() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

export async function load(key) {
  const db = await database();
  return new Promise((resolve, reject) => {
    const request = db.transaction(STORE).objectStore(STORE).get(key);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

export async function save(key, value) {
  const db = await database();
  return new Promise((resolve, reject) => {
    const transaction = db.transaction(STORE, 'readwrite');
    transaction.objectStore(STORE).put(value, key);
    transaction.oncomplete = () => resolve();
    transaction.onerror = () => reject(transaction.error);
  });
}

async function call(settings, method, path, body) {
  const response = await fetch(`${settings.hub}/v1/apps/${encodeURIComponent(settings.app)}${path}`, {
    method,
    headers: { Authorization: `Bearer ${settings.token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.status === 204 ? null : response.json();
}

/// Registers (or refreshes) this browser as a `webpush` endpoint of the web platform. The token is
/// the PushSubscription's JSON: endpoint URL, p256dh and auth.
export function register(settings, endpointId, subscription) {
  return call(settings, 'PUT', `/me/endpoints/${encodeURIComponent(endpointId)}`, {
    platform: 'web',
    appId: self.location.origin,
    transport: 'webpush',
    token: JSON.stringify(subscription.toJSON()),
    appDisplayName: 'Web client example',
  });
}

/// Reads every change since the stored cursor, stores the new cursor and returns the changes.
export async function sync(settings) {
  let cursor = (await load('cursor')) || '';
  const changes = [];
  for (;;) {
    const page = await call(settings, 'GET', `/me/feed?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    changes.push(...page.changes);
    cursor = page.cursor;
    if (!page.hasMore) break;
  }
  await save('cursor', cursor);
  return changes;
}

/// The URL-safe base64 VAPID key as the bytes `pushManager.subscribe` takes.
export function applicationServerKey(base64url) {
  const padded = base64url.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (base64url.length % 4)) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}
