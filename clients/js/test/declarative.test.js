// @ts-check
// The service-worker helper reads a declarative push message (Safari's format, or a subscription
// registered with declarative: true) as the classic payload it carries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyBadge, isErasureTap, unwrapDeclarative } from '../src/service-worker.js';

test('a declarative message yields the hub fields of its notification data', () => {
  const message = {
    web_push: 8030,
    notification: {
      title: 'Lunch',
      body: 'At noon',
      navigate: 'https://notes.contoso.com/',
      tag: 'lunch',
      data: { hub: 'visible', app: 'notes.contoso.com', id: 'n1', v: '7' },
    },
    app_badge: 3,
  };
  assert.deepEqual(unwrapDeclarative(message), {
    hub: 'visible', app: 'notes.contoso.com', id: 'n1', v: '7', title: 'Lunch', body: 'At noon', tag: 'lunch',
  });
});

test('a classic payload and anything else pass through unchanged', () => {
  const tap = { hub: 'tap', app: 'notes.contoso.com', v: '8' };
  assert.equal(unwrapDeclarative(tap), tap);
  assert.deepEqual(unwrapDeclarative({ web_push: 8030 }), { web_push: 8030 });
  assert.equal(unwrapDeclarative(undefined), undefined);
});

test('the erasure tap is a tap for feed version "0" only', () => {
  assert.equal(isErasureTap({ hub: 'tap', app: 'notes.contoso.com', v: '0' }), true);
  assert.equal(isErasureTap({ hub: 'tap', app: 'notes.contoso.com', v: '12' }), false);
  assert.equal(isErasureTap({ hub: 'visible', v: '0' }), false);
  assert.equal(isErasureTap(undefined), false);
});

test('a push with the hub badge count sets or clears the app badge', async () => {
  /** @type {Array<string | number>} */
  const calls = [];
  const navigatorLike = {
    setAppBadge: async (/** @type {number} */ count) => { calls.push(count); },
    clearAppBadge: async () => { calls.push('clear'); },
  };
  assert.equal(await applyBadge(navigatorLike, { hub: 'tap', v: '5', badge: '3' }), true);
  assert.equal(await applyBadge(navigatorLike, { hub: 'visible', v: '6', badge: '0' }), true);
  assert.equal(await applyBadge(navigatorLike, { hub: 'tap', v: '7' }), false);
  assert.equal(await applyBadge(navigatorLike, { hub: 'tap', v: '8', badge: 'x' }), false);
  assert.equal(await applyBadge(undefined, { hub: 'tap', v: '9', badge: '1' }), false);
  assert.deepEqual(calls, [3, 'clear']);
});
