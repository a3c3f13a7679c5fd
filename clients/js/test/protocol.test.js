// The SDK's protocol against a real `hub serve` (SQLite, loopback, port 0): pages and the stored
// cursor, read / dismiss / history, the event stream and its reconnection, the long-poll fallback,
// and every documented error answer (401, 400 invalid-cursor and 410, 429 and 503 with
// Retry-After). Run with `node --test clients/js/test/` after `swift build`.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { HubClient, HubError, MemoryStore, registerWebPush, serviceWorkerHandlers } from '../src/index.js';
import {
  APP, collect, eventually, startHub, startProxy, startWebPushEmulator, userToken,
} from './harness.js';

/** A client of `user` on `baseURL`, with short back-offs for tests. */
function clientOf(baseURL, user, options = {}) {
  return new HubClient({
    baseURL, app: APP, endpointId: options.endpointId ?? 'web-test', token: () => userToken(user),
    store: new MemoryStore(), initialRetryDelay: 50, maxRetryDelay: 500, longPollWait: 5, ...options,
  });
}

const visible = (id, title = id) => ({ appNotificationId: id, payload: { visualContent: { title, body: `${title} body` } } });
/** Follows `client.changes()` into an array until the test ends (passed or failed). */
function follow(t, client) {
  const received = [];
  const controller = new AbortController();
  const done = collect(client.changes({ signal: controller.signal }), received);
  t.after(() => { controller.abort(); return done; });
  return received;
}

/** A fault proxy in front of `url`, closed when the test ends. */
async function proxyFor(t, url) {
  const proxy = await startProxy(url);
  t.after(() => proxy.close());
  return proxy;
}

const ids = (changes) => changes.map((change) => change.appNotificationId);
const versions = (changes) => changes.map((change) => change.changeVersion);

describe('against hub serve', () => {
  let hub;
  before(async () => { hub = await startHub(); });
  after(async () => { assert.equal(await hub.stop(), 0, hub.log); });

  test('feed pages, sync with the stored cursor, read / dismiss / history', async (t) => {
    const store = new MemoryStore();
    const client = clientOf(hub.url, 'pages', { store, pageSize: 2 });
    for (const id of ['a', 'b', 'c', 'd', 'e']) await hub.publish('pages', visible(id));

    const first = await client.feed({ limit: 2 });
    assert.deepEqual(ids(first.changes), ['a', 'b']);
    assert.equal(first.hasMore, true);
    const second = await client.feed({ cursor: first.cursor, limit: 2 });
    assert.deepEqual(ids(second.changes), ['c', 'd']);

    // sync reads every page (pageSize 2: three pages) and saves the position.
    assert.deepEqual(ids(await client.sync()), ['a', 'b', 'c', 'd', 'e']);
    const saved = await store.get(client.storeKey);
    assert.equal(typeof saved.cursor, 'string');
    assert.equal(saved.version, (await client.position()).version);
    assert.deepEqual(await client.sync(), [], 'nothing new: nothing handed out again');

    const read = await client.markRead('b');
    assert.equal(read.readState, 'read');
    const dismissed = await client.dismiss('c');
    assert.equal(dismissed.userActionState, 'dismissed');
    assert.equal((await hub.get('pages', 'c')).userActionState, 'dismissed', 'the hub has the dismissal');
    assert.deepEqual(ids(await client.history({ readState: 'read' })), ['b']);
    assert.deepEqual(ids(await client.history({ userActionState: 'dismissed' })), ['c']);
    assert.equal((await client.notification('d')).appNotificationId, 'd');

    // A client created again on the same store resumes from the saved cursor: only the new changes.
    const again = clientOf(hub.url, 'pages', { store, pageSize: 2 });
    assert.deepEqual(ids(await again.sync()), ['b', 'c'], 'the read and the dismissal, nothing replayed');
    await hub.publish('pages', visible('f'));
    assert.deepEqual(ids(await again.sync()), ['f']);

    // This install's endpoint: registered, read back, refreshed, removed.
    const registration = { platform: 'web', appId: 'https://notes.contoso.com', transport: 'polling' };
    assert.equal((await client.register(registration)).id, 'web-test');
    assert.equal((await client.endpoint()).transport, 'polling');
    assert.equal((await client.register(registration)).state, 'active', 'refreshing works');
    await client.unregister();
    await assert.rejects(client.endpoint(), (error) => error.code === 'notFound' && error.status === 404);
    await assert.rejects(client.register({ ...registration, appId: 'https://elsewhere.example' }), (error) =>
      error.code === 'invalidRequest' && error.fieldErrors.some((field) => field.field === 'appId'));

    // A bad request names what to fix.
    await assert.rejects(client.update('a', { readState: 'sideways' }), (error) =>
      error instanceof HubError && error.code === 'invalidRequest' && error.status === 400 &&
      error.fieldErrors.some((field) => field.field === 'readState'));
    await assert.rejects(client.markRead('no-such'), (error) => error.code === 'notFound');
  });

  test('changes() streams events; a dropped stream resumes with Last-Event-ID, no gap, no duplicate', async (t) => {
    const proxy = await proxyFor(t, hub.url);
    const client = clientOf(proxy.url, 'stream', { updates: 'events' });
    const other = clientOf(hub.url, 'stream', { endpointId: 'phone' });
    const received = follow(t, client);
    await hub.publish('stream', visible('s1'));
    await hub.publish('stream', visible('s2'));
    assert.ok(await eventually(() => received.length === 2), `got ${ids(received)}`);
    await other.dismiss('s1');
    assert.ok(await eventually(() => received.length === 3), 'the dismissal on the other device arrives');
    assert.equal(received[2].appNotificationId, 's1');
    assert.equal(received[2].userActionState, 'dismissed');

    // The network drops; meanwhile two more publishes; the stream comes back with Last-Event-ID.
    const cursorBefore = (await client.position()).cursor;
    proxy.dropConnections();
    await hub.publish('stream', visible('s3'));
    await hub.publish('stream', visible('s4'));
    assert.ok(await eventually(() => received.length === 5), `got ${ids(received)}`);
    const streams = proxy.requests.filter((request) => request.headers.accept === 'text/event-stream');
    assert.ok(streams.length >= 2, 'reconnected');
    assert.equal(streams[0].headers['last-event-id'], undefined, 'the first stream starts at the feed start');
    assert.equal(streams.at(-1).headers['last-event-id'], cursorBefore, 'the reconnection resumes at the cursor');
    assert.deepEqual(ids(received), ['s1', 's2', 's1', 's3', 's4']);
    const seen = versions(received);
    assert.deepEqual([...seen].sort((a, b) => a - b), seen, 'in order');
    assert.equal(new Set(seen).size, seen.length, 'no duplicates');
  });

  test('where event streams are blocked, changes() falls back to long-polls', async (t) => {
    const proxy = await proxyFor(t, hub.url);
    // A proxy that rewrites Accept: the hub answers the stream request with a JSON page.
    const stripAccept = { forward: true, rewrite: (headers) => { headers.accept = 'application/json'; } };
    const isStream = (request) => request.headers.accept === 'text/event-stream';
    proxy.inject(isStream, stripAccept);
    proxy.inject(isStream, stripAccept);
    const client = clientOf(proxy.url, 'blocked');
    const received = follow(t, client);
    assert.ok(await eventually(() => proxy.requests.some((request) => request.url.includes('wait='))), 'long-polls');
    assert.equal(client.mode, 'long-poll');
    await hub.publish('blocked', visible('lp1'));
    await hub.publish('blocked', visible('lp2'));
    assert.ok(await eventually(() => received.length === 2), `got ${ids(received)}`);
    assert.deepEqual(ids(received), ['lp1', 'lp2']);
  });

  test('401: the token provider is asked again (invalidated), once for concurrent requests', async (t) => {
    const reasons = [];
    const client = clientOf(hub.url, 'refresh', {
      token: async (reason) => {
        reasons.push(reason);
        return userToken('refresh', { ttl: reason === 'initial' ? -3600 : 3600 });
      },
    });
    await hub.publish('refresh', visible('r1'));
    const [a, b] = await Promise.all([client.history(), client.history()]);
    assert.deepEqual(ids(a), ['r1']);
    assert.deepEqual(ids(b), ['r1']);
    assert.deepEqual(reasons, ['initial', 'invalidated'], 'one refresh for both refused requests');

    // The event stream refreshes the same way.
    const streaming = clientOf(hub.url, 'refresh', {
      endpointId: 'streamer',
      token: async (reason) => userToken('refresh', { ttl: reason === 'initial' ? -3600 : 3600 }),
    });
    const received = follow(t, streaming);
    assert.ok(await eventually(() => received.length === 1));

    // A fresh token refused too fails with `unauthorized`.
    const refused = clientOf(hub.url, 'refresh', { token: () => userToken('refresh', { secret: 'wrong-secret-0123456789abcdef' }) });
    await assert.rejects(refused.history(), (error) => error instanceof HubError && error.code === 'unauthorized');
    const failing = clientOf(hub.url, 'refresh', { token: () => { throw new Error('signed out'); } });
    await assert.rejects(failing.sync(), (error) => error.code === 'tokenUnavailable');
  });

  test('overlapping syncs (a push\'s sync while the stream runs) hand out each change once', async (t) => {
    const proxy = await proxyFor(t, hub.url);
    const client = clientOf(proxy.url, 'overlap', { updates: 'events' });
    const received = follow(t, client);
    await hub.publish('overlap', visible('o1'));
    assert.ok(await eventually(() => received.length === 1));
    // The sync's request leaves with the cursor before o2 and is held back while the stream
    // brings o2; its page then holds o2 again.
    proxy.inject((request) => request.method === 'GET' && request.headers.accept === 'application/json',
      { forward: true, delay: 500 });
    const syncing = client.sync();
    await hub.publish('overlap', visible('o2'));
    assert.ok(await eventually(() => received.length === 2), `got ${ids(received)}`);
    const synced = await syncing;
    assert.ok(proxy.requests.some((request) => request.url.includes('/me/feed?') && request.headers.accept === 'application/json'));
    assert.deepEqual(ids(synced), [], 'the sync hands out nothing the stream handed out');
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.deepEqual(ids(received), ['o1', 'o2'], 'the iteration got each change once');
  });

  test('400 invalid-cursor: a full resync from the feed start', async (t) => {
    await hub.publish('resync', visible('x1'));
    await hub.publish('resync', visible('x2'));
    // A cursor the hub issued for another user.
    await hub.publish('someone-else', visible('y1'));
    const foreign = (await clientOf(hub.url, 'someone-else').feed()).cursor;
    const store = new MemoryStore();
    let resyncs = 0;
    const client = clientOf(hub.url, 'resync', { store, onResync: () => { resyncs += 1; } });
    await store.set(client.storeKey, { cursor: foreign, version: 0 });
    assert.deepEqual(ids(await client.sync()), ['x1', 'x2']);
    assert.equal(resyncs, 1);
    assert.notEqual((await store.get(client.storeKey)).cursor, foreign);

    // The event stream with that cursor as Last-Event-ID: the same resync.
    const streamStore = new MemoryStore();
    const streaming = clientOf(hub.url, 'resync', { store: streamStore, updates: 'events', onResync: () => { resyncs += 1; } });
    await streamStore.set(streaming.storeKey, { cursor: foreign, version: 0 });
    const received = follow(t, streaming);
    assert.ok(await eventually(() => received.length === 2), `got ${ids(received)}`);
    assert.deepEqual(ids(received), ['x1', 'x2']);
    assert.equal(resyncs, 2);
  });

  test('410 on the event stream: a full resync, the stream reopened without Last-Event-ID', async (t) => {
    const proxy = await proxyFor(t, hub.url);
    await hub.publish('expired', visible('e1'));
    let resyncs = 0;
    const client = clientOf(proxy.url, 'expired', { updates: 'events', onResync: () => { resyncs += 1; } });
    const received = follow(t, client);
    assert.ok(await eventually(() => received.length === 1));
    proxy.inject((request) => request.headers.accept === 'text/event-stream', {
      status: 410, body: { type: 'https://notificationhub.dev/problems/cursor-expired', title: 'Cursor expired', status: 410 },
    });
    proxy.dropConnections();
    assert.ok(await eventually(() => resyncs === 1), 'resynced');
    assert.ok(await eventually(() => received.length === 2), `got ${ids(received)}`);
    assert.deepEqual(ids(received), ['e1', 'e1'], 'the feed read again from its start');
    const streams = proxy.requests.filter((request) => request.headers.accept === 'text/event-stream');
    assert.ok(streams.at(-2).headers['last-event-id'], 'the refused request had the cursor');
    assert.equal(streams.at(-1).headers['last-event-id'], undefined, 'the resync starts without one');
  });

  test('429 and 503 with Retry-After: the call waits that long and retries', async (t) => {
    const proxy = await proxyFor(t, hub.url);
    await hub.publish('busy', visible('b1'));
    const client = clientOf(proxy.url, 'busy');
    const isPatch = (request) => request.method === 'PATCH';
    proxy.inject(isPatch, { status: 429, headers: { 'Retry-After': '1' }, body: { type: 'https://notificationhub.dev/problems/rate-limited', status: 429 } });
    proxy.inject(isPatch, { status: 503, headers: { 'Retry-After': '1' }, body: { type: 'https://notificationhub.dev/problems/unavailable', status: 503 } });
    assert.equal((await client.markRead('b1')).readState, 'read');
    const patches = proxy.requests.filter(isPatch);
    assert.equal(patches.length, 3);
    assert.ok(patches[1].at - patches[0].at >= 950, `waited ${patches[1].at - patches[0].at} ms after the 429`);
    assert.ok(patches[2].at - patches[1].at >= 950, `waited ${patches[2].at - patches[1].at} ms after the 503`);

    // The changes() loop waits Retry-After too, then goes on.
    proxy.inject((request) => request.url.includes('/me/feed'), { status: 429, headers: { 'Retry-After': '1' }, body: {} });
    const started = Date.now();
    const received = follow(t, clientOf(proxy.url, 'busy', { endpointId: 'other' }));
    assert.ok(await eventually(() => received.length === 1), `got ${ids(received)}`);
    assert.equal(received[0].readState, 'read');
    assert.ok(Date.now() - started >= 950);

    // With retries spent, the error says how long to wait.
    const impatient = clientOf(proxy.url, 'busy', { maxRetries: 0 });
    proxy.inject(isPatch, { status: 429, headers: { 'Retry-After': '7' }, body: { type: 'https://notificationhub.dev/problems/rate-limited', status: 429 } });
    await assert.rejects(impatient.dismiss('b1'), (error) => error.code === 'rateLimited' && error.retryAfter === 7000);
  });

  test('webPushKey() of an app without Web Push credentials: notFound (not-configured); a given vapidPublicKey is used as is', async () => {
    const client = clientOf(hub.url, 'no-push');
    await assert.rejects(client.webPushKey(), (error) => error.code === 'notFound' && error.status === 404 &&
      error.problemType.endsWith('/not-configured') && error.message.includes('credentials.webpush'));
    // With the option the hub is not asked: registerWebPush subscribes with the given key.
    const keys = [];
    const registration = {
      pushManager: {
        getSubscription: async () => null,
        subscribe: async (options) => {
          keys.push(Buffer.from(options.applicationServerKey).toString('base64url'));
          return { toJSON: () => ({ endpoint: 'https://push.example/1', keys: {} }) };
        },
      },
    };
    const given = Buffer.from([4, ...Array(64).fill(7)]).toString('base64url');
    const offline = { webPushKey: async () => assert.fail('the hub was asked for the key'), register: async (body) => body };
    const registered = await registerWebPush(registration, /** @type {any} */ (offline), { vapidPublicKey: given, appId: 'https://notes.contoso.com' });
    assert.equal(registered.transport, 'webpush');
    assert.deepEqual(keys, [given]);
  });
});

test('the hub\'s own 429 (rateLimits.deviceToken): retried after Retry-After', async (t) => {
  const hub = await startHub({ top: 'rateLimits: { deviceToken: 2/s }' });
  t.after(() => hub.stop());
  try {
    await hub.publish('limited', visible('l1'));
    const client = clientOf(hub.url, 'limited');
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 5 }, () => client.history()));
    for (const answer of answers) assert.deepEqual(ids(answer), ['l1']);
    assert.ok(Date.now() - started >= 900, 'some calls waited for the limit to refill');
    const impatient = clientOf(hub.url, 'limited', { maxRetries: 0 });
    const errors = (await Promise.allSettled(Array.from({ length: 4 }, () => impatient.history())))
      .filter((result) => result.status === 'rejected').map((result) => result.reason);
    assert.ok(errors.length > 0 && errors.every((error) => error.code === 'rateLimited' && error.retryAfter >= 1000),
      `errors: ${errors.map(String)}`);
  } finally {
    assert.equal(await hub.stop(), 0);
  }
});

test('the hub restarts: the long-poll gets 503 Retry-After, the stream its shutdown event; both resume, losing and repeating nothing', async (t) => {
  const first = await startHub();
  t.after(() => first.stop());
  const statuses = [];
  const recording = async (input, init) => {
    const response = await fetch(input, init);
    statuses.push(response.status);
    return response;
  };
  const client = clientOf(first.url, 'restart', { updates: 'long-poll', fetch: recording });
  const received = follow(t, client);
  const streamed = follow(t, clientOf(first.url, 'restart', { updates: 'events', endpointId: 'streamer' }));
  await first.publish('restart', visible('p1'));
  assert.ok(await eventually(() => received.length === 1 && streamed.length === 1));
  await new Promise((resolve) => setTimeout(resolve, 200)); // the next long-poll is waiting
  assert.equal(await first.stop(), 0, first.log);
  assert.ok(await eventually(() => statuses.includes(503)), `the waiting long-poll got ${statuses}`);
  const second = await startHub({ directory: first.directory, listen: `127.0.0.1:${first.port}` });
  t.after(() => second.stop());
  try {
    await second.publish('restart', visible('p2'));
    await second.publish('restart', visible('p3'));
    assert.ok(await eventually(() => received.length === 3, 20000), `got ${ids(received)}`);
    assert.deepEqual(ids(received), ['p1', 'p2', 'p3']);
    assert.ok(await eventually(() => streamed.length === 3, 20000), `streamed ${ids(streamed)}`);
    assert.deepEqual(ids(streamed), ['p1', 'p2', 'p3'], 'the event stream (ended with event: shutdown) resumed too');
  } finally {
    assert.equal(await second.stop(), 0);
  }
});

test('registerWebPush and the service worker\'s pushsubscriptionchange, through the Web Push emulator', async (t) => {
  const push = await startWebPushEmulator(2);
  t.after(() => push.stop());
  const hub = await startHub({ top: push.top, app: push.app });
  t.after(() => hub.stop());
  try {
    const [firstSubscription, secondSubscription] = push.subscriptions;
    const asBrowserSubscription = (json) => ({ endpoint: json.endpoint, options: {}, toJSON: () => json, unsubscribe: async () => true });
    const keys = [];
    const registration = {
      scope: 'https://notes.contoso.com/',
      pushManager: {
        getSubscription: async () => null,
        subscribe: async (options) => {
          keys.push(Buffer.from(options.applicationServerKey).toString('base64url'));
          return asBrowserSubscription(keys.length === 1 ? firstSubscription : secondSubscription);
        },
      },
    };
    const client = clientOf(hub.url, 'pusher', { endpointId: 'web-push-1' });
    // No vapidPublicKey: the key is the hub's (GET /v1/apps/{app}/webpush).
    assert.equal(await client.webPushKey(), push.publicKey);
    const endpoint = await registerWebPush(registration, client, {
      appId: 'https://notes.contoso.com', appDisplayName: 'Test browser',
    });
    assert.equal(endpoint.transport, 'webpush');
    assert.equal(endpoint.state, 'active');
    assert.deepEqual(keys, [push.publicKey], 'subscribed with the app\'s VAPID key, as the hub serves it');

    const accepted = (subscription) => {
      const id = subscription.endpoint.split('/').pop();
      return push.log.split('\n').filter((line) => line.includes(`accepted on ${id}`));
    };
    await hub.publish('pusher', visible('w1'));
    assert.ok(await eventually(() => accepted(firstSubscription).length === 1), push.log);
    assert.match(accepted(firstSubscription)[0], /"hub":"tap"/);

    // The browser renewed the subscription: the worker registers the new one as the same endpoint.
    const worker = { registration, clients: { matchAll: async () => [], openWindow: async () => null }, addEventListener() {} };
    // Without vapidPublicKey (and no key on the old subscription), the worker asks the hub too.
    const handlers = serviceWorkerHandlers(worker, { client: () => client, appId: 'https://notes.contoso.com' });
    const renewed = await handlers.subscriptionChange(asBrowserSubscription(firstSubscription), null);
    assert.equal(renewed.id, 'web-push-1');
    assert.deepEqual(keys, [push.publicKey, push.publicKey], 'subscribed again with the hub\'s key');
    await hub.publish('pusher', visible('w2'));
    assert.ok(await eventually(() => accepted(secondSubscription).length === 1), push.log);
    assert.equal(accepted(firstSubscription).length, 1, 'the old subscription gets nothing more');
  } finally {
    assert.equal(await hub.stop(), 0);
    await push.stop();
  }
});
