// @ts-check
/** NotificationHub's web client. See README.md. */
export { HubClient, sleep } from './client.js';
export { HubError, parseRetryAfter } from './errors.js';
export { EventStreamParser } from './events.js';
export { IndexedDBStore, MemoryStore, defaultStore } from './stores.js';
export { applicationServerKey, registerWebPush, webPushRegistration } from './web-push.js';
export {
  applyBadge,
  CHANGES_MESSAGE,
  ERASED_MESSAGE,
  installServiceWorker,
  isErasureTap,
  serviceWorkerHandlers,
  unwrapDeclarative,
} from './service-worker.js';
