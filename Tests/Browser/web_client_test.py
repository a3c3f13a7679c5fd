#!/usr/bin/env python3
"""The web client (clients/js) in headless Chromium (Debian's /usr/bin/chromium, through Playwright
for Python; no browser is downloaded), against a real `hub serve` on SQLite.

It serves the repository on a free loopback port (the page's origin, mapped in hub.yaml as the
app's web origin), starts `hub serve` on port 0 in a temporary folder, and checks:

- two browser contexts of one user (a laptop and a phone), each with the SDK's `changes()` on the
  event stream: a dismiss in one disappears from the other's list within a second;
- a context that goes offline while notifications are published and dismissed, then comes back,
  resumes from its cursor (`Last-Event-ID`): exactly the feed's changes since, none twice;
- the service-worker helper, with push messages delivered through CDP
  (`ServiceWorker.deliverPushMessage`, as no push service is reachable): a visible payload shows
  its notification, a tap syncs and shows the newest unread change, a tap after a dismiss elsewhere
  closes its notification; a click marks it read and activated and opens the app's URL; a close
  dismisses it on every device;
- examples/web loads with no error and shows the feed.

    python3 Tests/Browser/web_client_test.py --hub .build/debug/hub [--root .]

Prints one line per check; exits 1 at the first failed one. HubCLITests.WebClientTests runs it.
"""

import argparse
import base64
import functools
import hashlib
import hmac
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("HUB_CHROMIUM", "/usr/bin/chromium")
ROOT = None  # the repository, served to the browser: --root, or this file's
APP = "notes.contoso.com"
PUBLISHER_KEY = "fixture-publisher-key-0123456789"
USER_SECRET = "test-user-token-secret-0123456789"


class CheckFailed(Exception):
    pass


def check(condition, what):
    if not condition:
        raise CheckFailed(what)
    print("ok", what, flush=True)


def user_token(user):
    def encode(value):
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    now = int(time.time())
    body = encode({"alg": "HS256", "typ": "JWT"}) + "." + encode(
        {"iss": "https://login.contoso.com", "aud": "contoso-notes", "sub": user, "iat": now, "exp": now + 3600})
    signature = hmac.new(USER_SECRET.encode(), body.encode(), hashlib.sha256).digest()
    return body + "." + base64.urlsafe_b64encode(signature).rstrip(b"=").decode()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".js": "text/javascript"}

    def log_message(self, *args):
        pass

    def end_headers(self):
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


def serve_repository():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=ROOT))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


class Relay:
    """A TCP relay in front of the hub for one browser context: going offline cuts its open
    connections (the event stream too), as a lost network does; Chromium's offline emulation alone
    only refuses new requests."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connections = []
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            with self.lock:
                self.connections += [client, upstream]
            for source, target in [(client, upstream), (upstream, client)]:
                threading.Thread(target=self.pump, args=(source, target), daemon=True).start()

    @staticmethod
    def pump(source, target):
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        with self.lock:
            connections, self.connections = self.connections, []
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
                connection.close()
            except OSError:
                pass


class Hub:
    def __init__(self, binary, origin):
        self.directory = tempfile.mkdtemp(prefix="hub-web-client-")
        for name, value in [("admin.token", "test-admin-token-0123456789"), ("user.secret", USER_SECRET),
                            ("publisher.key", PUBLISHER_KEY)]:
            with open(os.path.join(self.directory, name), "w") as file:
                file.write(value)
        with open(os.path.join(self.directory, "hub.yaml"), "w") as file:
            file.write(f"""server: {{ listen: "127.0.0.1:0", adminToken: file:admin.token, instanceId: web-client-test }}
store: {{ sqlite: {{ path: data/hub.sqlite }} }}
apps:
  - id: {APP}
    platforms:
      web: {{ appIds: ["{origin}"] }}
    identity:
      - {{ issuer: "https://login.contoso.com", audiences: [contoso-notes], secret: file:user.secret }}
    publishers: [ {{ name: backend, key: file:publisher.key }} ]
""")
        self.log_path = os.path.join(self.directory, "hub.log")
        self.log_file = open(self.log_path, "w")
        self.process = subprocess.Popen([binary, "serve", "--config", "hub.yaml"], cwd=self.directory,
                                        stdout=self.log_file, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            match = re.search(r"hub listening on (http://[0-9.]+:\d+)", self.log())
            if match:
                self.url = match.group(1)
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise CheckFailed("hub serve did not start:\n" + self.log())

    def log(self):
        with open(self.log_path) as file:
            return file.read()

    def call(self, method, path, body=None, bearer=PUBLISHER_KEY):
        request = urllib.request.Request(self.url + path, method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Authorization": "Bearer " + bearer,
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    def publish(self, user, notification_id, title):
        return self.call("POST", f"/v1/apps/{APP}/users/{user}/notifications",
                         {"appNotificationId": notification_id,
                          "payload": {"visualContent": {"title": title, "body": title + " body"}}})

    def notification(self, user, notification_id):
        return self.call("GET", f"/v1/apps/{APP}/users/{user}/notifications/{notification_id}")

    def stop(self):
        self.process.terminate()
        status = self.process.wait(timeout=30)
        self.log_file.close()
        return status


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hub", required=True, help="the hub binary")
    parser.add_argument("--root", help="the repository (by default the one this file is in)")
    args = parser.parse_args()
    global ROOT
    ROOT = os.path.abspath(args.root) if args.root else os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    server, origin = serve_repository()
    hub = Hub(os.path.abspath(args.hub), origin)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
            try:
                run(browser, hub, origin)
            finally:
                browser.close()
    except CheckFailed as failure:
        print("FAILED", failure, flush=True)
        print(hub.log(), file=sys.stderr)
        hub.stop()
        sys.exit(1)
    check(hub.stop() == 0, "hub serve exits 0 on SIGTERM")
    server.shutdown()


def feed_page(context, hub_url, origin, endpoint, token):
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    query = urllib.parse.urlencode({"hub": hub_url, "app": APP, "endpoint": endpoint, "token": token})
    page.goto(f"{origin}/clients/js/test/browser/app.html?{query}")
    page.errors = errors
    return page


def listed(page):
    return page.eval_on_selector_all("#feed li", "items => items.map(item => item.dataset.id)")


def wait_listed(page, expected, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if listed(page) == expected:
            return True
        page.wait_for_timeout(25)
    return False


def run(browser, hub, origin):
    token = user_token("alice")
    laptop_context = browser.new_context()
    phone_context = browser.new_context()
    relay = Relay(int(hub.url.rsplit(":", 1)[1]))
    laptop = feed_page(laptop_context, hub.url, origin, "laptop", token)
    phone = feed_page(phone_context, relay.url, origin, "phone", token)
    for index in range(1, 4):
        hub.publish("alice", f"n{index}", f"Note {index}")
    check(wait_listed(laptop, ["n1", "n2", "n3"]) and wait_listed(phone, ["n1", "n2", "n3"]),
          "both contexts list the three notifications")

    # A dismiss on the laptop disappears from the phone within a second.
    started = time.monotonic()
    laptop.evaluate("() => hubClient.dismiss('n2')")
    phone.wait_for_selector('#feed li[data-id="n2"]', state="detached", timeout=5000)
    elapsed = time.monotonic() - started
    print(f"dismiss on the laptop gone from the phone after {elapsed * 1000:.0f} ms", flush=True)
    check(elapsed < 1.0, f"a dismiss in one context leaves the other's list within a second ({elapsed:.3f} s)")
    check(wait_listed(laptop, ["n1", "n3"]), "and the laptop's own list")

    # The phone goes offline; meanwhile notifications are published and one dismissed on the laptop.
    phone_received = phone.evaluate("() => received.length")
    phone_streams = phone.evaluate("() => streams.length")
    cursor = phone.evaluate("async () => (await hubClient.position()).cursor")
    phone_context.set_offline(True)
    relay.cut()
    phone.wait_for_timeout(300)
    hub.publish("alice", "n4", "Note 4")
    hub.publish("alice", "n5", "Note 5")
    laptop.evaluate("() => hubClient.dismiss('n4')")
    hub.publish("alice", "n6", "Note 6")
    check(wait_listed(laptop, ["n1", "n3", "n5", "n6"]), "the laptop sees the changes while the phone is offline")
    phone.wait_for_timeout(500)
    offline_list = listed(phone)
    check("n5" not in offline_list and "n6" not in offline_list, f"the phone, offline, has none of them ({offline_list})")
    phone_context.set_offline(False)
    check(wait_listed(phone, ["n1", "n3", "n5", "n6"], timeout=15),
          f"back online, the phone's list is the laptop's ({listed(phone)})")
    since = phone.evaluate(f"() => received.slice({phone_received})")
    expected = hub.call("GET", f"/v1/apps/{APP}/me/feed?cursor={urllib.parse.quote(cursor)}", bearer=token)["changes"]
    check([(c["id"], c["v"]) for c in since] == [(c["appNotificationId"], c["changeVersion"]) for c in expected],
          f"it resumed from its cursor with no gap and no duplicate: {since}")
    streams = phone.evaluate(f"() => streams.slice({phone_streams})")
    check(len(streams) >= 1 and streams[-1]["lastEventId"] == cursor,
          f"the stream reopened with Last-Event-ID = the cursor before going offline ({len(streams)} reconnections)")
    check(not laptop.errors and not phone.errors and not laptop.evaluate("() => failure")
          and not phone.evaluate("() => failure"), f"no page errors ({laptop.errors}, {phone.errors})")

    # The phone's page reloads: its client starts from the cursor saved in IndexedDB, so it gets
    # what is new and nothing it had.
    saved = phone.evaluate("async () => (await hubClient.position()).cursor")
    phone.reload()
    check(phone.evaluate("async () => (await hubClient.position()).cursor") == saved,
          "after a reload the client's position comes from IndexedDB")
    hub.publish("alice", "n7", "Note 7")
    phone.wait_for_selector('#feed li[data-id="n7"]', timeout=10000)
    phone.wait_for_timeout(300)
    check([c["id"] for c in phone.evaluate("() => received")] == ["n7"],
          f"and it gets only the new change ({phone.evaluate('() => received')})")

    run_service_worker(browser, hub, origin, token)
    run_example(browser, hub, origin, token)


def run_service_worker(browser, hub, origin, token):
    context = browser.new_context()
    context.grant_permissions(["notifications"], origin=origin)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    registrations = []
    cdp = context.new_cdp_session(page)
    cdp.on("ServiceWorker.workerRegistrationUpdated",
           lambda event: registrations.extend(event.get("registrations", [])))
    cdp.send("ServiceWorker.enable")
    query = urllib.parse.urlencode({"hub": hub.url, "app": APP, "endpoint": "browser-worker", "token": token})
    page.goto(f"{origin}/clients/js/test/browser/worker.html?{query}")
    scope = page.evaluate("() => ready")
    deadline = time.time() + 10
    while not any(r["scopeURL"] == scope for r in registrations) and time.time() < deadline:
        page.wait_for_timeout(50)
    registration_id = next((r["registrationId"] for r in registrations if r["scopeURL"] == scope), None)
    check(registration_id is not None, f"the service worker is registered for {scope}")
    # A second store in the same IndexedDB database (the worker's settings are in the first).
    shared = page.evaluate("""async () => {
        const other = new IndexedDBStore('notification-hub-test', 'other');
        await other.set('key', { value: 1 });
        const settings = await new IndexedDBStore('notification-hub-test', 'settings').get('settings');
        return { other: await other.get('key'), endpoint: settings && settings.endpointId };
    }""")
    check(shared == {"other": {"value": 1}, "endpoint": "browser-worker"},
          f"two IndexedDB stores share one database ({shared})")

    def push(message):
        cdp.send("ServiceWorker.deliverPushMessage",
                 {"origin": origin, "registrationId": registration_id, "data": json.dumps(message)})

    def shown(tag, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            found = [n for n in page.evaluate("() => notifications()") if n["tag"] == tag]
            if found:
                return found[0]
            page.wait_for_timeout(50)
        return None

    # A visible payload shows its title and body.
    visible = hub.publish("alice", "v1", "Visible one")
    push({"hub": "visible", "app": APP, "id": visible["id"], "v": str(visible["changeVersion"]), "tag": "v1",
          "title": "Visible one", "body": "Visible one body"})
    notification = shown("v1")
    check(notification is not None and notification["title"] == "Visible one"
          and notification["body"] == "Visible one body", f"a visible push shows its notification ({notification})")

    # A tap syncs the feed and shows the newest unread change; the page hears of the changes.
    tapped_one = hub.publish("alice", "t1", "Tapped one")
    push({"hub": "tap", "app": APP, "v": str(tapped_one["changeVersion"])})
    notification = shown("t1")
    check(notification is not None and notification["title"] == "Tapped one",
          f"a tap syncs and shows the newest unread change ({notification})")
    deadline = time.time() + 10
    while time.time() < deadline and not any(
            any(c["appNotificationId"] == "t1" for c in m.get("changes", [])) for m in page.evaluate("() => messages")):
        page.wait_for_timeout(50)
    check(any(m.get("type") == "notificationhub:changes" and any(c["appNotificationId"] == "t1" for c in m["changes"])
              for m in page.evaluate("() => messages")), "the worker posts the synced changes to the app's windows")

    # A push for another app is not the client's: nothing is shown for it.
    push({"hub": "visible", "app": "other.example.com", "id": "x", "tag": "other", "title": "Other"})
    page.wait_for_timeout(500)
    check(shown("other", timeout=0.2) is None, "a push for another app shows nothing")

    # Dismissed on another device: the next tap closes its notification here.
    hub.call("PATCH", f"/v1/apps/{APP}/me/notifications/v1", {"userActionState": "dismissed"}, bearer=token)
    push({"hub": "tap", "app": APP})
    deadline = time.time() + 10
    while time.time() < deadline and shown("v1", timeout=0.1) is not None:
        page.wait_for_timeout(50)
    check(shown("v1", timeout=0.1) is None, "a tap after a dismiss elsewhere closes that notification")

    # A click: read and activated on the hub, the app's open window navigated to the notification.
    inbox = context.new_page()
    inbox.goto(f"{origin}/clients/js/test/browser/inbox.html")
    tapped = hub.notification("alice", "t1")
    answer = page.evaluate("() => command({ command: 'click', tag: 't1' })")
    check(answer.get("ok"), f"the click handler ran ({answer})")
    inbox.wait_for_url(re.compile(r".*inbox\.html\?notification=" + re.escape(urllib.parse.quote(tapped["id"]))),
                       timeout=10000)
    check(True, "a click navigates the app's window to the notification's URL")
    after = hub.notification("alice", "t1")
    check(after["readState"] == "read" and after["userActionState"] == "activated",
          f"a click marks it read and activated on the hub ({after['readState']}, {after['userActionState']})")

    # The user closes a notification: dismissed on every device.
    closing = hub.publish("alice", "c1", "Closed one")
    push({"hub": "visible", "app": APP, "id": closing["id"], "tag": "c1", "title": "Closed one", "body": ""})
    check(shown("c1") is not None, "the notification to close is shown")
    answer = page.evaluate("() => command({ command: 'close', tag: 'c1' })")
    check(answer.get("ok"), f"the close handler ran ({answer})")
    check(hub.notification("alice", "c1")["userActionState"] == "dismissed", "a close dismisses it on the hub")

    # The erasure tap (a tap for version "0", sent before the operator erases the user's data):
    # every notification closes, the windows hear of it, and no sync runs.
    kept = hub.publish("alice", "k1", "Kept until erased")
    push({"hub": "visible", "app": APP, "id": kept["id"], "tag": "k1", "title": "Kept until erased", "body": ""})
    check(shown("k1") is not None, "a notification is shown before the erasure")
    push({"hub": "tap", "app": APP, "v": "0"})
    deadline = time.time() + 10
    while time.time() < deadline and not any(m.get("type") == "notificationhub:erased"
                                             for m in page.evaluate("() => messages")):
        page.wait_for_timeout(50)
    check(any(m.get("type") == "notificationhub:erased" for m in page.evaluate("() => messages")),
          "the erasure tap tells the app's windows")
    remaining = [n["tag"] for n in page.evaluate("() => notifications()")]
    check("k1" not in remaining and all(tag == "hub-sync" for tag in remaining),
          f"the erasure tap closes every notification ({remaining})")
    check(not errors, f"no page errors ({errors})")
    context.close()


def run_example(browser, hub, origin, token):
    context = browser.new_context()
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.goto(f"{origin}/examples/web/index.html")
    page.fill("input[name=hub]", hub.url)
    page.fill("input[name=app]", APP)
    page.fill("input[name=token]", token)
    page.click("#connect")
    page.wait_for_selector('#feed li[data-id="n7"]', timeout=10000)
    check(page.locator('#feed li[data-id="n4"]').count() == 0, "examples/web connects and lists the feed without the dismissed")
    hub.publish("alice", "e1", "From the example")
    page.wait_for_selector('#feed li[data-id="e1"]', timeout=10000)
    check(True, "examples/web shows a publish live")
    page.click('#feed li[data-id="e1"] button.dismiss')
    page.wait_for_selector('#feed li[data-id="e1"]', state="detached", timeout=10000)
    check(hub.notification("alice", "e1")["userActionState"] == "dismissed", "examples/web dismisses on the hub")
    check(not errors, f"examples/web has no errors ({errors})")
    context.close()


if __name__ == "__main__":
    main()
