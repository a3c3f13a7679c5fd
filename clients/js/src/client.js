// @ts-check
import { HubError } from './errors.js';
import { EventStreamParser } from './events.js';
import { defaultStore } from './stores.js';

/**
 * @typedef {'initial' | 'invalidated'} TokenRequestReason why the client asks for a user token:
 *   `initial` for its first request (a cached token is fine), `invalidated` after the hub refused
 *   the last one (return a fresh one; the same token again fails the request with `unauthorized`)
 * @typedef {(reason: TokenRequestReason) => string | Promise<string>} TokenProvider
 * @typedef {import('./stores.js').KeyValueStore} KeyValueStore
 */

/**
 * A notification as the hub returns it (the `Notification` schema of openapi.yaml).
 * @typedef {object} HubNotification
 * @property {string} id the hub's ID
 * @property {string} appNotificationId the publisher's ID
 * @property {'unread' | 'read'} readState
 * @property {'noInteraction' | 'activated' | 'dismissed' | 'snoozed'} userActionState
 * @property {'active' | 'expired' | 'deleted' | 'scheduled'} status tombstones (`expired`, `deleted`) carry no payload
 * @property {number} changeVersion the feed position of its latest change
 * @property {{ visualContent?: { title?: string, body?: string }, rawContent?: string } & Record<string, any>} payload
 * @property {string} [groupName]
 * @property {string} expirationDateTime
 * @property {string} lastModifiedDateTime
 */

/** @typedef {{ changes: HubNotification[], cursor: string, hasMore: boolean }} FeedPage */
/** @typedef {{ cursor?: string, version: number }} FeedPosition */

/**
 * @typedef {object} HubClientOptions
 * @property {string} baseURL the hub's URL (`https://hub.contoso.com`)
 * @property {string} app the cross-device app's ID (its domain)
 * @property {string} endpointId this install's endpoint ID (`[A-Za-z0-9._-]{1,128}`, stable across runs)
 * @property {TokenProvider} token hands the client the signed-in user's token
 * @property {KeyValueStore} [store] where the feed position is kept; IndexedDB in browsers, memory elsewhere
 * @property {string} [storeKey] the position's key in `store`; give a page and its service worker different keys
 * @property {'auto' | 'events' | 'long-poll'} [updates] how `changes()` learns of changes: `auto` (the
 *   default) reads the event stream and falls back to long-polls where streams are blocked
 * @property {number} [pageSize] changes per feed page (1–1000, default 100)
 * @property {number} [longPollWait] seconds a long-poll waits (default 30)
 * @property {number} [initialRetryDelay] milliseconds before the first reconnection (default 1000)
 * @property {number} [maxRetryDelay] the longest back-off between reconnections, in milliseconds (default 30000)
 * @property {number} [maxRetries] how often one call is retried after 429 or 503 with `Retry-After` (default 3)
 * @property {number} [streamIdleTimeout] milliseconds of silence after which an event stream counts as
 *   dropped (default 45000: the hub sends a keepalive every 15 s)
 * @property {typeof fetch} [fetch] the `fetch` to use (default `globalThis.fetch`)
 * @property {() => void} [onResync] called when the hub refused the cursor and the feed is read again
 *   from its start: the changes that follow replace what the app showed
 */

/** An event stream that cannot work here: a proxy rewrote or buffered it. */
class StreamBlocked extends Error {}

/**
 * The hub's device API for one user on one app install: the feed with its cursor, live changes,
 * read and dismiss, history, endpoint registration.
 *
 * ```js
 * const client = new HubClient({ baseURL, app: 'notes.contoso.com', endpointId: 'web-1',
 *   token: (reason) => reason === 'invalidated' ? auth.refresh() : auth.current() });
 * for await (const change of client.changes()) render(change);
 * ```
 */
export class HubClient {
  /** @param {HubClientOptions} options */
  constructor(options) {
    for (const name of /** @type {const} */ (['baseURL', 'app', 'endpointId'])) {
      if (typeof options?.[name] !== 'string' || options[name] === '') {
        throw new TypeError(`HubClient: options.${name} must be a non-empty string`);
      }
    }
    if (!/^[A-Za-z0-9._-]{1,128}$/.test(options.endpointId)) {
      throw new TypeError('HubClient: options.endpointId must be 1–128 of A–Z, a–z, 0–9, ".", "_", "-"');
    }
    if (typeof options.token !== 'function') throw new TypeError('HubClient: options.token must be a function');
    this.baseURL = options.baseURL.replace(/\/+$/, '');
    this.app = options.app;
    this.endpointId = options.endpointId;
    this.store = options.store ?? defaultStore();
    this.storeKey = options.storeKey ?? `notification-hub/${options.app}/${options.endpointId}/position`;
    this.updates = options.updates ?? 'auto';
    this.pageSize = Math.min(Math.max(Math.trunc(options.pageSize ?? 100), 1), 1000);
    this.longPollWait = options.longPollWait ?? 30;
    this.initialRetryDelay = options.initialRetryDelay ?? 1000;
    this.maxRetryDelay = options.maxRetryDelay ?? 30000;
    this.maxRetries = options.maxRetries ?? 3;
    this.streamIdleTimeout = options.streamIdleTimeout ?? 45000;
    this.onResync = options.onResync;
    /** @type {typeof fetch} */
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.tokenProvider = options.token;
    /** @type {{ token?: string, generation: number, pending?: Promise<{ token: string, generation: number }> }} */
    this.tokens = { generation: 0 };
    /** @type {FeedPosition | undefined} */
    this.loadedPosition = undefined;
    /** @type {Promise<FeedPosition> | undefined} */
    this.loadingPosition = undefined;
    /** @type {Promise<void>} */
    this.saving = Promise.resolve();
    /** @type {Set<Subscriber>} */
    this.subscribers = new Set();
    /** @type {AbortController | undefined} */
    this.loop = undefined;
    /** The way the running `changes()` loop reads the feed: `events` or `long-poll`. */
    this.mode = this.updates === 'long-poll' ? 'long-poll' : 'events';
  }

  // MARK: Requests

  /**
   * The user token and its generation, asking the provider when there is none or when the hub
   * refused the one of `refused`. One refusal leads to one refresh, however many requests saw it.
   * @param {number} [refused] the generation of the token the hub refused
   * @returns {Promise<{ token: string, generation: number }>}
   */
  async currentToken(refused) {
    const tokens = this.tokens;
    if (tokens.token !== undefined && (refused === undefined || tokens.generation > refused)) {
      return { token: tokens.token, generation: tokens.generation };
    }
    tokens.pending ??= (async () => {
      try {
        const token = await this.tokenProvider(refused === undefined ? 'initial' : 'invalidated');
        if (typeof token !== 'string' || token === '') throw new TypeError('the token provider returned no token');
        tokens.token = token;
        tokens.generation += 1;
        return { token, generation: tokens.generation };
      } catch (error) {
        tokens.token = undefined;
        throw new HubError('tokenUnavailable', `The token provider failed: ${String(error)}`, { cause: error });
      } finally {
        tokens.pending = undefined;
      }
    })();
    return tokens.pending;
  }

  /**
   * `{baseURL}/v1/apps/{app}/{path…}?{query}`, every segment and value percent-encoded.
   * @param {string[]} path segments after `/v1/apps/{app}/`, unencoded
   * @param {Record<string, string | number | undefined>} [query]
   */
  url(path, query = {}) {
    const segments = ['v1', 'apps', this.app, ...path].map(encodeURIComponent).join('/');
    const pairs = Object.entries(query)
      .filter(([, value]) => value !== undefined)
      .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(String(value))}`);
    return `${this.baseURL}/${segments}${pairs.length ? `?${pairs.join('&')}` : ''}`;
  }

  /**
   * Sends one request of the device API with the user token. A 401 asks the token provider once
   * more (`invalidated`) and retries once; a 429 or 503 with `Retry-After` waits that long and
   * retries, up to `retries` times.
   * @param {string} method
   * @param {string[]} path segments after `/v1/apps/{app}/`
   * @param {object} [init]
   * @param {Record<string, string | number | undefined>} [init.query]
   * @param {Record<string, string>} [init.headers]
   * @param {unknown} [init.body] sent as JSON
   * @param {AbortSignal} [init.signal]
   * @param {number} [init.retries] retries after 429 / 503 (default `maxRetries`)
   * @returns {Promise<Response>} a 2xx response
   */
  async send(method, path, init = {}) {
    const what = `${method} ${path.join('/')}`;
    let { token, generation } = await this.currentToken();
    let refreshed = false;
    let retries = init.retries ?? this.maxRetries;
    for (;;) {
      /** @type {Record<string, string>} */
      const headers = { Accept: 'application/json', Authorization: `Bearer ${token}`, ...init.headers };
      if (init.body !== undefined) headers['Content-Type'] = 'application/json';
      const response = await this.exchange(this.url(path, init.query), {
        method,
        headers,
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        signal: init.signal,
      });
      if (response.ok) return response;
      if (response.status === 401 && !refreshed) {
        await response.body?.cancel();
        refreshed = true;
        ({ token, generation } = await this.currentToken(generation));
        continue;
      }
      const error = await HubError.fromResponse(response, what);
      if ((error.code === 'rateLimited' || error.code === 'unavailable') && error.retryAfter !== undefined && retries > 0) {
        retries -= 1;
        await sleep(error.retryAfter, init.signal);
        continue;
      }
      throw error;
    }
  }

  /**
   * `fetch`, with a failed connection as a `transport` HubError and an abort as `aborted`.
   * @param {string} url
   * @param {RequestInit} init
   */
  async exchange(url, init) {
    try {
      return await this.fetch(url, init);
    } catch (error) {
      if (init.signal?.aborted) throw abortError(init.signal);
      throw new HubError('transport', `The hub could not be reached: ${String(error)}`, { cause: error });
    }
  }

  /**
   * Sends a request and reads its JSON answer (`null` for 204).
   * @param {string} method
   * @param {string[]} path
   * @param {Parameters<HubClient['send']>[2]} [init]
   * @returns {Promise<any>}
   */
  async call(method, path, init) {
    const response = await this.send(method, path, init);
    if (response.status === 204) return null;
    try {
      return await response.json();
    } catch (error) {
      throw new HubError('invalidResponse', `The hub's answer to ${method} ${path.join('/')} is not JSON.`, {
        cause: error,
        status: response.status,
      });
    }
  }

  // MARK: Reading and changing notifications

  /**
   * One page of the feed (`GET …/me/feed`), without moving the client's position.
   * @param {object} [options]
   * @param {string} [options.cursor] the `cursor` of the previous page; the feed's start without one
   * @param {number} [options.limit] changes on the page (default `pageSize`)
   * @param {number} [options.wait] seconds to long-poll for a change when there is none
   * @param {AbortSignal} [options.signal]
   * @returns {Promise<FeedPage>}
   */
  feed(options = {}) {
    return this.call('GET', ['me', 'feed'], {
      query: { limit: options.limit ?? this.pageSize, cursor: options.cursor, wait: options.wait },
      headers: { 'X-Hub-Endpoint': this.endpointId },
      signal: options.signal,
    });
  }

  /**
   * Every change since the client's position, page by page; moves the position past them and
   * hands them to every running `changes()` iteration too. A cursor the hub refused (400
   * `invalid-cursor`, 410) starts over from the feed's start (`onResync` is called).
   * @param {{ signal?: AbortSignal }} [options]
   * @returns {Promise<HubNotification[]>} the changes, oldest first, each once
   */
  async sync(options = {}) {
    /** @type {HubNotification[]} */
    const handedOut = [];
    let restarted = false;
    for (;;) {
      const position = await this.position();
      /** @type {FeedPage} */
      let page;
      try {
        page = await this.feed({ cursor: position.cursor, signal: options.signal });
      } catch (error) {
        if (error instanceof HubError && error.needsResync && !restarted) {
          restarted = true;
          await this.restart();
          continue;
        }
        throw error;
      }
      handedOut.push(...this.apply(page.changes, page.cursor));
      if (!page.hasMore) return handedOut;
    }
  }

  /**
   * One notification by the hub's ID or its `appNotificationId`.
   * @param {string} id
   * @returns {Promise<HubNotification>}
   */
  notification(id) {
    return this.call('GET', ['me', 'notifications', id], { headers: { 'X-Hub-Endpoint': this.endpointId } });
  }

  /**
   * The user's notifications, newest first (`GET …/me/notifications`).
   * @param {object} [filter]
   * @param {'unread' | 'read'} [filter.readState]
   * @param {'noInteraction' | 'activated' | 'dismissed' | 'snoozed'} [filter.userActionState]
   * @param {'active' | 'expired' | 'deleted' | 'all'} [filter.status] `active` by default
   * @param {number} [filter.limit] at most this many (1–1000, default 100)
   * @returns {Promise<HubNotification[]>}
   */
  async history(filter = {}) {
    const list = await this.call('GET', ['me', 'notifications'], {
      query: { ...filter },
      headers: { 'X-Hub-Endpoint': this.endpointId },
    });
    return list.notifications;
  }

  /**
   * Changes a notification's read or action state; the user's other devices learn of it (and drop
   * it, for a dismiss). `X-Hub-Endpoint` keeps this device from being tapped back.
   * @param {string} id the hub's ID or the `appNotificationId`
   * @param {{ readState?: 'unread' | 'read', userActionState?: 'noInteraction' | 'activated' | 'dismissed' | 'snoozed' }} change
   * @returns {Promise<HubNotification>} the updated notification
   */
  update(id, change) {
    return this.call('PATCH', ['me', 'notifications', id], {
      body: change,
      headers: { 'X-Hub-Endpoint': this.endpointId },
    });
  }

  /**
   * Marks a notification read on every device of the user.
   * @param {string} id the hub's ID or the `appNotificationId`
   */
  markRead(id) {
    return this.update(id, { readState: 'read' });
  }

  /**
   * Marks a notification unread on every device of the user.
   * @param {string} id the hub's ID or the `appNotificationId`
   */
  markUnread(id) {
    return this.update(id, { readState: 'unread' });
  }

  /**
   * Dismisses a notification on every device of the user (universal dismiss).
   * @param {string} id the hub's ID or the `appNotificationId`
   */
  dismiss(id) {
    return this.update(id, { userActionState: 'dismissed' });
  }

  // MARK: Endpoint registration

  /**
   * Registers (201) or refreshes (200) this install as an endpoint of the user.
   * @param {{ platform: 'ios' | 'android' | 'windows' | 'web', appId: string, transport: string,
   *   token?: string, environment?: 'development' | 'production', appDisplayName?: string }} registration
   * @returns {Promise<any>} the endpoint (the push token is never returned)
   */
  register(registration) {
    return this.call('PUT', ['me', 'endpoints', this.endpointId], { body: registration });
  }

  /** Removes this install's endpoint and its pending deliveries. */
  async unregister() {
    await this.call('DELETE', ['me', 'endpoints', this.endpointId]);
  }

  /** This install's endpoint as the hub has it (`state` turns `inactive` when its push service refused it). */
  endpoint() {
    return this.call('GET', ['me', 'endpoints', this.endpointId]);
  }

  /**
   * The app's VAPID public key (`GET …/webpush`), URL-safe base64: what `pushManager.subscribe`
   * takes as `applicationServerKey`. An app without Web Push credentials: a `notFound` HubError
   * (404, problem type `…/not-configured`).
   * @returns {Promise<string>}
   */
  async webPushKey() {
    const answer = await this.call('GET', ['webpush']);
    return answer.applicationServerKey;
  }

  // MARK: The position

  /** Where the feed was read up to (loaded from the store once). @returns {Promise<FeedPosition>} */
  async position() {
    if (this.loadedPosition) return this.loadedPosition;
    this.loadingPosition ??= (async () => {
      /** @type {any} */
      let saved;
      try {
        saved = await this.store.get(this.storeKey);
      } catch {
        saved = undefined;
      }
      const position =
        saved && typeof saved === 'object' && typeof saved.version === 'number'
          ? { cursor: typeof saved.cursor === 'string' ? saved.cursor : undefined, version: saved.version }
          : { cursor: undefined, version: 0 };
      this.loadedPosition ??= position;
      return this.loadedPosition;
    })();
    return this.loadingPosition;
  }

  /**
   * Hands out the changes newer than the position and moves the position to `cursor`: overlapping
   * syncs (a tap while the stream runs) never hand out a change twice or out of order.
   * @param {HubNotification[]} changes
   * @param {string | undefined} cursor
   * @returns {HubNotification[]} the changes handed out
   */
  apply(changes, cursor) {
    const position = this.loadedPosition ?? { cursor: undefined, version: 0 };
    const fresh = changes.filter((change) => change.changeVersion > position.version);
    const last = fresh[fresh.length - 1];
    if (!last) return [];
    this.loadedPosition = { cursor: cursor ?? position.cursor, version: last.changeVersion };
    this.save();
    for (const subscriber of this.subscribers) subscriber.push(fresh);
    return fresh;
  }

  /** Saves the position, one save after another. */
  save() {
    const position = this.loadedPosition;
    this.saving = this.saving.then(() =>
      // A failed save costs at most a replay after a restart; the position in memory stays right.
      this.store.set(this.storeKey, position).catch(() => {}),
    );
  }

  /** Forgets the position: the hub refused the cursor, so the feed is read again from its start. */
  async restart() {
    this.loadedPosition = { cursor: undefined, version: 0 };
    this.save();
    await this.saving;
    this.onResync?.();
  }

  /** Forgets the position (sign-out); the next sync reads the feed from its start. */
  async reset() {
    this.loadedPosition = { cursor: undefined, version: 0 };
    this.save();
    await this.saving;
  }

  // MARK: Live changes

  /**
   * Every change after the position, as it happens, for as long as the iteration runs: the event
   * stream (resumed with `Last-Event-ID` after a drop), or long-polls where streams are blocked or
   * `updates` says so. Reconnects with exponential back-off and jitter, or after `Retry-After`;
   * a refused cursor starts over from the feed's start. Ends with the error when it cannot go on
   * (the user token refused twice, a request the hub rejects), or when `signal` aborts.
   *
   * Several iterations at once each get every change.
   * @param {{ signal?: AbortSignal }} [options]
   * @returns {AsyncGenerator<HubNotification, void, undefined>}
   */
  async *changes(options = {}) {
    const subscriber = new Subscriber();
    const onAbort = () => subscriber.fail(abortError(/** @type {AbortSignal} */ (options.signal)));
    if (options.signal?.aborted) return;
    options.signal?.addEventListener('abort', onAbort, { once: true });
    this.subscribers.add(subscriber);
    this.startLoop();
    try {
      for (;;) {
        const change = await subscriber.next();
        if (change === undefined) return;
        yield change;
      }
    } catch (error) {
      if (options.signal?.aborted) return;
      throw error;
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
      this.subscribers.delete(subscriber);
      if (this.subscribers.size === 0) this.stopLoop();
    }
  }

  /** Stops every `changes()` iteration. */
  close() {
    for (const subscriber of this.subscribers) subscriber.finish();
    this.subscribers.clear();
    this.stopLoop();
  }

  startLoop() {
    if (this.loop) return;
    const controller = new AbortController();
    this.loop = controller;
    this.run(controller.signal).finally(() => {
      if (this.loop === controller) this.loop = undefined;
    });
  }

  stopLoop() {
    this.loop?.abort();
    this.loop = undefined;
  }

  /** @param {AbortSignal} signal */
  async run(signal) {
    let failures = 0;
    let blocked = 0;
    this.mode = this.updates === 'long-poll' ? 'long-poll' : 'events';
    while (!signal.aborted && this.subscribers.size > 0) {
      try {
        await this.position();
        if (this.mode === 'events') {
          const { retry, received } = await this.streamEvents(signal);
          failures = 0;
          if (received) blocked = 0;
          await sleep(retry, signal, true);
        } else {
          await this.longPoll(signal);
          failures = 0;
        }
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof StreamBlocked) {
          blocked += 1;
          if (blocked >= 2 && this.updates === 'auto') this.mode = 'long-poll';
          if (blocked >= 2 && this.updates === 'events') {
            this.failAll(new HubError('transport', `The event stream is blocked: ${error.message}`));
            return;
          }
          continue;
        }
        if (!(error instanceof HubError)) {
          this.failAll(error);
          return;
        }
        if (error.needsResync) {
          await this.restart();
          continue;
        }
        if (!error.isTransient) {
          this.failAll(error);
          return;
        }
        failures += 1;
        try {
          await sleep(error.retryAfter ?? this.backoff(failures), signal, error.code === 'transport');
        } catch {
          return;
        }
      }
    }
  }

  /**
   * The delay after `failures` failures in a row: doubling from `initialRetryDelay`, capped at
   * `maxRetryDelay`, with ±20 % jitter.
   * @param {number} failures
   */
  backoff(failures) {
    const base = this.initialRetryDelay * 2 ** Math.min(failures - 1, 16);
    return Math.min(base, this.maxRetryDelay) * (0.8 + Math.random() * 0.4);
  }

  /** @param {unknown} error */
  failAll(error) {
    for (const subscriber of this.subscribers) subscriber.fail(error);
  }

  /**
   * Long-polls once from the position, then reads any pages after it.
   * @param {AbortSignal} signal
   */
  async longPoll(signal) {
    const position = await this.position();
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), (this.longPollWait + 30) * 1000);
    /** @type {FeedPage} */
    let page;
    try {
      page = await this.call('GET', ['me', 'feed'], {
        query: { limit: this.pageSize, cursor: position.cursor, wait: this.longPollWait },
        headers: { 'X-Hub-Endpoint': this.endpointId },
        signal: anySignal([signal, timeout.signal]),
        retries: 0,
      });
    } catch (error) {
      if (timeout.signal.aborted && !signal.aborted) {
        throw new HubError('transport', `The long-poll got no answer in ${this.longPollWait + 30} s.`, { cause: error });
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
    this.apply(page.changes, page.cursor);
    let more = page.hasMore;
    while (more && !signal.aborted) {
      const next = await this.call('GET', ['me', 'feed'], {
        query: { limit: this.pageSize, cursor: this.loadedPosition?.cursor },
        headers: { 'X-Hub-Endpoint': this.endpointId },
        signal,
        retries: 0,
      });
      this.apply(next.changes, next.cursor);
      more = next.hasMore;
    }
  }

  /**
   * Reads the feed as server-sent events from the position until the stream ends. Every event's ID
   * is the cursor after its change, so a dropped stream resumes exactly where it stopped.
   * @param {AbortSignal} signal
   * @returns {Promise<{ retry: number, received: boolean }>} when to reconnect (the stream's `retry:`)
   */
  async streamEvents(signal) {
    let { token, generation } = await this.currentToken();
    let refreshed = false;
    for (;;) {
      const position = await this.position();
      const controller = new AbortController();
      const stop = () => controller.abort();
      signal.addEventListener('abort', stop, { once: true });
      /** @type {ReturnType<typeof setTimeout> | undefined} */
      let idle;
      let idleFired = false;
      const arm = () => {
        clearTimeout(idle);
        idle = setTimeout(() => {
          idleFired = true;
          controller.abort();
        }, this.streamIdleTimeout);
      };
      const parser = new EventStreamParser();
      try {
        /** @type {Record<string, string>} */
        const headers = {
          Accept: 'text/event-stream',
          Authorization: `Bearer ${token}`,
          'X-Hub-Endpoint': this.endpointId,
        };
        if (position.cursor !== undefined) headers['Last-Event-ID'] = position.cursor;
        arm();
        const response = await this.exchange(this.url(['me', 'feed']), {
          method: 'GET',
          headers,
          signal: controller.signal,
          cache: 'no-store',
        });
        if (response.status === 401 && !refreshed) {
          await response.body?.cancel();
          refreshed = true;
          ({ token, generation } = await this.currentToken(generation));
          continue;
        }
        if (!response.ok) throw await HubError.fromResponse(response, 'GET me/feed (event stream)');
        const type = response.headers.get('Content-Type') ?? '';
        if (!type.startsWith('text/event-stream') || !response.body) {
          await response.body?.cancel();
          throw new StreamBlocked(`the hub's answer came as ${type || 'no content type'}, not text/event-stream`);
        }
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let retry = 3000;
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          arm();
          for (const event of parser.push(value)) {
            if (event.type === 'shutdown') {
              try {
                retry = Math.max(0, Number(JSON.parse(event.data).retryAfter) * 1000) || retry;
              } catch {
                // keep the default
              }
            } else if (event.type === undefined || event.type === 'notification') {
              /** @type {HubNotification} */
              let change;
              try {
                change = JSON.parse(event.data);
              } catch (error) {
                throw new HubError('invalidResponse', 'An event of the feed is not a notification.', { cause: error });
              }
              this.apply([change], event.id);
            }
          }
        }
        return { retry: parser.retry ?? retry, received: parser.receivedAnything };
      } catch (error) {
        if (signal.aborted) throw abortError(signal);
        if (idleFired && !parser.receivedAnything) {
          throw new StreamBlocked(`no byte of the event stream arrived in ${this.streamIdleTimeout} ms`);
        }
        if (error instanceof HubError || error instanceof StreamBlocked) throw error;
        throw new HubError('transport', `The event stream broke: ${String(error)}`, { cause: error });
      } finally {
        clearTimeout(idle);
        signal.removeEventListener('abort', stop);
      }
    }
  }
}

/** One `changes()` iteration's queue. */
class Subscriber {
  constructor() {
    /** @type {HubNotification[]} */
    this.queue = [];
    /** @type {{ error: unknown } | undefined} */
    this.failure = undefined;
    this.finished = false;
    /** @type {(() => void) | undefined} */
    this.wake = undefined;
  }

  /** @param {HubNotification[]} changes */
  push(changes) {
    this.queue.push(...changes);
    this.wake?.();
  }

  /** @param {unknown} error */
  fail(error) {
    this.failure ??= { error };
    this.wake?.();
  }

  finish() {
    this.finished = true;
    this.wake?.();
  }

  /** The next change; `undefined` when the iteration was closed. @returns {Promise<HubNotification | undefined>} */
  async next() {
    for (;;) {
      if (this.queue.length > 0) return this.queue.shift();
      if (this.failure) throw this.failure.error;
      if (this.finished) return undefined;
      await new Promise((resolve) => {
        this.wake = () => resolve(undefined);
      });
      this.wake = undefined;
    }
  }
}

/**
 * Waits `ms` milliseconds; rejects when `signal` aborts. With `wakeOnline`, a browser coming back
 * online ends the wait at once.
 * @param {number} ms
 * @param {AbortSignal} [signal]
 * @param {boolean} [wakeOnline]
 * @returns {Promise<void>}
 */
export function sleep(ms, signal, wakeOnline = false) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const target = /** @type {any} */ (globalThis);
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', aborted);
      if (wakeOnline) target.removeEventListener?.('online', done);
      resolve();
    };
    const aborted = () => {
      clearTimeout(timer);
      if (wakeOnline) target.removeEventListener?.('online', done);
      reject(abortError(/** @type {AbortSignal} */ (signal)));
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', aborted, { once: true });
    if (wakeOnline) target.addEventListener?.('online', done, { once: true });
  });
}

/** @param {AbortSignal} signal */
function abortError(signal) {
  return new HubError('aborted', 'The request was aborted.', { cause: signal.reason });
}

/**
 * A signal that aborts when any of `signals` does.
 * @param {AbortSignal[]} signals
 */
function anySignal(signals) {
  const controller = new AbortController();
  for (const signal of signals) {
    if (signal.aborted) controller.abort(signal.reason);
    else signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
  }
  return controller.signal;
}
