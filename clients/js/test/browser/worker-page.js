// Registers the test service worker (sw.js) with the settings it needs, and gives the browser
// test a way to read its notifications and to send it commands.
import { IndexedDBStore } from '../../src/index.js';

const params = new URLSearchParams(location.search);
/** @type {any[]} */
const messages = [];
navigator.serviceWorker.addEventListener('message', (event) => messages.push(event.data));

async function start() {
  await new IndexedDBStore('notification-hub-test', 'settings').set('settings', {
    hub: params.get('hub'),
    app: params.get('app'),
    endpointId: params.get('endpoint'),
    token: params.get('token'),
  });
  await navigator.serviceWorker.register('sw.js', { type: 'module', scope: './' });
  const registration = await navigator.serviceWorker.ready;
  return registration.scope;
}

/** The notifications the worker shows: tag, title, body. */
async function notifications() {
  const registration = await navigator.serviceWorker.ready;
  return (await registration.getNotifications()).map((shown) => ({ tag: shown.tag, title: shown.title, body: shown.body }));
}

/**
 * Sends the worker a test command and waits for its answer.
 * @param {{ command: string, tag?: string }} message
 */
async function command(message) {
  const registration = await navigator.serviceWorker.ready;
  const channel = new MessageChannel();
  const answer = new Promise((resolve) => {
    channel.port1.onmessage = (event) => resolve(event.data);
  });
  registration.active?.postMessage(message, [channel.port2]);
  return answer;
}

Object.assign(window, { ready: start(), messages, notifications, command, IndexedDBStore });
