// The service worker: woken by a push, it syncs the feed and shows what is new.
//
// A push from the hub is JSON, decrypted by the browser:
// - shoulder tap: {"hub":"tap","app":…,"v":"<feed version>"} — content-free; sync the feed;
// - visible or fallback: {"hub":"visible"|"fallback","app":…,"id":…,"v":…,"tag":…,"title":…,"body":…};
// - both with "badge":"<count>" when the app has `delivery.badge: unread` in hub.yaml: the user's
//   unread count, which the worker puts on the installed app's icon (Badging API).
// Browsers require every push to show a notification (userVisibleOnly), so a tap shows the newest
// unread change, and a change that was read or dismissed elsewhere closes its notification here
// (universal dismiss).
import { load, sync } from './hub.js';

/// Shows the hub's count on the app icon where the Badging API exists (installed web apps).
async function applyBadge(message) {
  const count = Number.parseInt(message.badge ?? '', 10);
  if (Number.isNaN(count) || !('setAppBadge' in navigator)) return;
  try {
    await (count > 0 ? navigator.setAppBadge(count) : navigator.clearAppBadge());
  } catch {
    // Not installed, or badges not allowed: the notifications still show.
  }
}

async function handle(message) {
  await applyBadge(message);
  const settings = await load('settings');
  const changes = settings ? await sync(settings) : [];
  for (const client of await self.clients.matchAll({ type: 'window' })) client.postMessage({ changes });

  for (const change of changes) {
    if (change.status !== 'active' || change.readState === 'read' || change.userActionState === 'dismissed') {
      for (const shown of await self.registration.getNotifications({ tag: change.appNotificationId })) shown.close();
    }
  }
  if (message.hub === 'visible' || message.hub === 'fallback') {
    return self.registration.showNotification(message.title, { body: message.body, tag: message.tag, data: message });
  }
  const unread = changes.filter((c) => c.status === 'active' && c.readState === 'unread' && c.payload?.visualContent);
  const newest = unread[unread.length - 1];
  if (newest) {
    const visual = newest.payload.visualContent;
    return self.registration.showNotification(visual.title, { body: visual.body, tag: newest.appNotificationId });
  }
  return self.registration.showNotification('Notifications are up to date', { tag: 'hub-sync', silent: true });
}

self.addEventListener('push', (event) => {
  let message = {};
  try { message = event.data ? event.data.json() : {}; } catch { message = {}; }
  event.waitUntil(handle(message));
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  event.waitUntil(self.clients.openWindow('./'));
});
