// Test harness: a real `hub serve` on SQLite in a temporary folder, on a free loopback port; the
// Web Push emulator (`hub emulate webpush`); user tokens; and a fault proxy that answers chosen
// requests itself (a 410, a 429 or 503 with Retry-After, a blocked event stream) and forwards the
// rest to the hub.
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const hubBinary = process.env.HUB_BINARY ?? join(root, '.build/debug/hub');
export const APP = 'notes.contoso.com';
export const PUBLISHER_KEY = 'fixture-publisher-key-0123456789';
const USER_SECRET = 'test-user-token-secret-0123456789';

/**
 * An HS256 user token for `user`, as the app's identity provider would sign it.
 * @param {string} user
 * @param {{ ttl?: number, secret?: string }} [options] `ttl` in seconds (negative: expired)
 */
export function userToken(user, options = {}) {
  const encode = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const body = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode({
    iss: 'https://login.contoso.com', aud: 'contoso-notes', sub: user, iat: now, exp: now + (options.ttl ?? 3600),
  })}`;
  const signature = createHmac('sha256', options.secret ?? USER_SECRET).update(body).digest('base64url');
  return `${body}.${signature}`;
}

/** Starts `executable arguments` in `cwd` and resolves once its output matches `ready`. */
function startProcess(arguments_, cwd, ready, name) {
  const child = spawn(hubBinary, arguments_, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  const process_ = { child, output: '' };
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start in 60 s:\n${process_.output}`)), 60000);
    const take = (chunk) => {
      process_.output += chunk;
      const match = ready.exec(process_.output);
      if (match) {
        clearTimeout(timer);
        resolvePromise({ ...process_, match, get log() { return process_.output; } });
      }
    };
    child.stdout.setEncoding('utf8').on('data', (chunk) => { take(chunk); });
    child.stderr.setEncoding('utf8').on('data', (chunk) => { take(chunk); });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited ${code} before it was ready:\n${process_.output}`));
    });
  }).then((started) => {
    // Keep collecting output after start.
    child.stdout.on('data', (chunk) => { started.output += chunk; });
    child.stderr.on('data', (chunk) => { started.output += chunk; });
    return started;
  });
}

/** Stops a started process with SIGTERM and waits for its exit code. */
function stop(child) {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolvePromise) => {
    child.once('exit', (code) => resolvePromise(code));
    child.kill('SIGTERM');
  });
}

/**
 * Starts `hub serve` with one app (web origins `origins`), an HS256 identity and a publisher key.
 * @param {{ top?: string, app?: string, origins?: string[], directory?: string, listen?: string }} [options]
 *   `top`: top-level hub.yaml lines; `app`: lines of the app's mapping (4-space indent)
 */
export async function startHub(options = {}) {
  const directory = options.directory ?? mkdtempSync(join(tmpdir(), 'hub-js-'));
  writeFileSync(join(directory, 'admin.token'), 'test-admin-token-0123456789');
  writeFileSync(join(directory, 'user.secret'), USER_SECRET);
  writeFileSync(join(directory, 'publisher.key'), PUBLISHER_KEY);
  const origins = (options.origins ?? ['https://notes.contoso.com']).map((origin) => JSON.stringify(origin));
  writeFileSync(join(directory, 'hub.yaml'), [
    `server: { listen: "${options.listen ?? '127.0.0.1:0'}", adminToken: file:admin.token, instanceId: js-test }`,
    'store: { sqlite: { path: data/hub.sqlite } }',
    options.top ?? '',
    'apps:',
    `  - id: ${APP}`,
    '    platforms:',
    `      web: { appIds: [${origins.join(', ')}] }`,
    '    identity:',
    '      - { issuer: "https://login.contoso.com", audiences: [contoso-notes], secret: file:user.secret }',
    '    publishers: [ { name: backend, key: file:publisher.key } ]',
    options.app ?? '',
    '',
  ].join('\n'));
  const started = await startProcess(['serve', '--config', 'hub.yaml'], directory,
    /hub listening on (http:\/\/[0-9.]+:(\d+))/, 'hub serve');
  const url = started.match[1];
  return {
    url, directory, port: Number(started.match[2]), child: started.child,
    get log() { return started.output; },
    stop: () => stop(started.child),
    /** Publishes to `user` as the app's backend; returns the notification. */
    async publish(user, body) {
      const response = await fetch(`${url}/v1/apps/${APP}/users/${encodeURIComponent(user)}/notifications`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${PUBLISHER_KEY}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      if (response.status !== 201) throw new Error(`publish: ${response.status} ${text}`);
      return JSON.parse(text);
    },
    /** The notification as the publisher sees it. */
    async get(user, id) {
      const response = await fetch(
        `${url}/v1/apps/${APP}/users/${encodeURIComponent(user)}/notifications/${encodeURIComponent(id)}`,
        { headers: { Authorization: `Bearer ${PUBLISHER_KEY}` } });
      return response.json();
    },
  };
}

/** Starts `hub emulate webpush` with `count` subscriptions; returns them and the lines to configure a hub. */
export async function startWebPushEmulator(count = 2) {
  const directory = mkdtempSync(join(tmpdir(), 'hub-js-webpush-'));
  const started = await startProcess(
    ['emulate', 'webpush', '--port', '0', '--directory', 'wp', '--subscriptions', String(count)], directory,
    /Accepted messages follow/, 'hub emulate webpush');
  const output = started.output;
  const host = /Web Push emulator on https:\/\/([0-9.:]+)/.exec(output)[1];
  const publicKey = /applicationServerKey ([A-Za-z0-9_-]+)/.exec(output)[1];
  const subscriptions = output.split('\n').filter((line) => line.trim().startsWith('{"endpoint"'))
    .map((line) => JSON.parse(line.trim()));
  const vapid = join(directory, 'wp', 'vapid.pem');
  const ca = join(directory, 'wp', 'ca.pem');
  return {
    host, publicKey, subscriptions,
    get log() { return started.output; },
    top: `transports: { webpush: { allowedHosts: ["${host}"], trustRoots: "file:${ca}", timeout: 10s } }`,
    app: `    credentials: { webpush: { vapidPrivateKey: "file:${vapid}", subject: "mailto:ops@contoso.com" } }`,
    stop: () => stop(started.child),
  };
}

/**
 * A proxy in front of the hub. `inject(matcher, answer)` queues an answer for the next request that
 * `matcher(request)` accepts: `{ status, headers, body }` is sent instead of forwarding; with
 * `{ forward: true, rewrite, delay }` the request is forwarded after `rewrite(headers)`, `delay` ms later. Every request is
 * recorded with its time.
 */
export async function startProxy(target) {
  const upstream = new URL(target);
  const rules = [];
  const requests = [];
  const server = createServer((request, response) => {
    requests.push({ method: request.method, url: request.url, headers: request.headers, at: Date.now() });
    const index = rules.findIndex((rule) => rule.matcher(request));
    const rule = index >= 0 ? rules.splice(index, 1)[0] : undefined;
    if (rule && !rule.answer.forward) {
      const { status, headers = {}, body = '' } = rule.answer;
      response.writeHead(status, { 'Content-Type': 'application/problem+json', ...headers });
      response.end(typeof body === 'string' ? body : JSON.stringify(body));
      return;
    }
    const headers = { ...request.headers, host: upstream.host };
    if (rule?.answer.rewrite) rule.answer.rewrite(headers);
    if (rule?.answer.delay) {
      const { delay } = rule.answer;
      rule.answer = { ...rule.answer, delay: 0 };
      setTimeout(() => forward(request, response, headers), delay);
      return;
    }
    forward(request, response, headers);
  });
  const forward = (request, response, headers) => {
    const forwarded = httpRequest({
      host: upstream.hostname, port: upstream.port, method: request.method, path: request.url, headers,
    }, (answer) => {
      response.writeHead(answer.statusCode, answer.headers);
      answer.pipe(response);
    });
    forwarded.on('error', () => response.destroy());
    request.pipe(forwarded);
    response.on('close', () => forwarded.destroy());
  };
  await new Promise((resolvePromise) => server.listen(0, '127.0.0.1', resolvePromise));
  const sockets = new Set();
  server.on('connection', (socket) => { sockets.add(socket); socket.on('close', () => sockets.delete(socket)); });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    inject(matcher, answer) { rules.push({ matcher, answer }); },
    /** Drops every open connection (a network that went away). */
    dropConnections() { for (const socket of sockets) socket.destroy(); },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolvePromise) => server.close(resolvePromise));
    },
  };
}

/** Waits until `condition()` is truthy, checking every 20 ms, for at most `timeout` ms. */
export async function eventually(condition, timeout = 10000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) return value;
    await new Promise((resolvePromise) => setTimeout(resolvePromise, 20));
  }
}

/** Collects an iteration's changes into `into` in the background until `signal` aborts. */
export function collect(iterable, into) {
  const done = (async () => {
    for await (const change of iterable) into.push(change);
  })();
  done.catch(() => {});
  return done;
}
