#!/usr/bin/env python3
"""Drives the hub's web console in headless Chromium (Debian's /usr/bin/chromium, through
Playwright for Python; no browser is downloaded).

HubCLITests.ConsoleBrowserTests runs it against a real `hub serve` whose app has devices on the
APNs and FCM emulators (one dead token, one retried delivery). It signs in with the keyboard,
checks that a wrong token and a missing cookie show no data, opens every page and checks what it
shows, submits a test send, checks that each page fits a 375 px wide screen, signs out, and saves
a screenshot of each page.

    python3 Tests/Browser/console_test.py --base http://127.0.0.1:8080 --token-file admin.token \\
        --app notes.contoso.com --user alice --dead-endpoint ipad --screenshots docs/screenshots

Prints one line per check; exits 1 at the first failed one.
"""

import argparse
import datetime
import os
import re
import sys

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("HUB_CHROMIUM", "/usr/bin/chromium")


class CheckFailed(Exception):
    pass


def check(condition, what):
    if not condition:
        raise CheckFailed(what)
    print("ok", what, flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--token-file", required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--app-ids", required=True, help="comma-separated platform app IDs the app page shows")
    parser.add_argument("--user", required=True)
    parser.add_argument("--endpoints", required=True, help="comma-separated active endpoint IDs")
    parser.add_argument("--dead-endpoint", required=True)
    parser.add_argument("--dead-reason", required=True)
    parser.add_argument("--notification", required=True, help="the appNotificationId whose deliveries are checked")
    parser.add_argument("--delivered", required=True, help="comma-separated endpoints it was delivered to")
    parser.add_argument("--retried", required=True, help="the endpoint whose first push was retried (FCM)")
    parser.add_argument("--polled", required=True, help="the endpoint that polls")
    parser.add_argument("--screenshots", required=True)
    args = parser.parse_args()
    token = open(args.token_file).read().strip()
    os.makedirs(args.screenshots, exist_ok=True)
    base = args.base.rstrip("/")
    app_path = f"{base}/console/apps/{args.app}"

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            run(browser, base, app_path, token, args)
        finally:
            browser.close()


def shot(page, args, name):
    path = os.path.join(args.screenshots, name + ".png")
    page.screenshot(path=path, full_page=True)
    print("screenshot", path, flush=True)


def has_focus(page, element_id):
    """Whether the element `element_id` gets the focus within 5 s: `autofocus` lands after the page
    loads, later on a busy machine (a check at once failed once under CI load)."""
    try:
        page.wait_for_function("id => document.activeElement && document.activeElement.id === id",
                               arg=element_id, timeout=5000)
        return True
    except PlaywrightTimeoutError:
        return False


def fits(page, width):
    """Whether the page has no horizontal scroll at `width` CSS pixels."""
    return page.evaluate("() => document.documentElement.scrollWidth") <= width


def run(browser, base, app_path, token, args):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, device_scale_factor=1)
    page = context.new_page()

    # Without a session every page ends on the sign-in form and shows no data.
    for path in ["/console", f"/console/apps/{args.app}", f"/console/apps/{args.app}/endpoints?state=inactive",
                 f"/console/apps/{args.app}/send", "/console/config", f"/console/apps/{args.app}/statistics",
                 f"/console/apps/{args.app}/deliveries?user={args.user}&id={args.notification}"]:
        page.goto(base + path)
        text = page.content()
        check("/console/login" in page.url and page.locator("h1").inner_text() == "Sign in to the console"
              and "Contoso Notes" not in text and args.dead_endpoint not in text and "check out" not in text
              and "Unregistered" not in text and "polyline" not in text,
              f"{path} without a session shows the sign-in page and no data")

    # Keyboard only: the token field has focus; type, Enter. A wrong token first.
    page.goto(base + "/console")
    check(has_focus(page, "token"), "the token field has focus")
    page.keyboard.type("not-the-admin-token")
    with page.expect_response(lambda r: r.url.endswith("/console/login") and r.request.method == "POST") as answer:
        page.keyboard.press("Enter")
    check(answer.value.status == 401, f"a wrong token is answered 401 (got {answer.value.status})")
    page.wait_for_load_state()
    check(page.get_by_role("alert").first.inner_text().find("not the admin token") >= 0,
          "a wrong token shows the error")
    check("Contoso Notes" not in page.content() and not context.cookies(), "a wrong token shows no data and sets no cookie")
    shot(page, args, "login-error")

    # Tab from the top reaches the skip link first.
    page.goto(base + "/console/login")
    shot(page, args, "login")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    page.evaluate("() => document.activeElement.blur()")
    page.keyboard.press("Tab")
    check(page.evaluate("() => document.activeElement.textContent") == "Skip to content",
          "Tab reaches the skip link first")
    page.keyboard.press("Tab")
    check(page.evaluate("() => document.activeElement.id") == "token", "then the token field")
    page.keyboard.type(token)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/console$"))
    cookies = context.cookies()
    check(len(cookies) == 1 and cookies[0]["httpOnly"] and cookies[0]["sameSite"] == "Strict"
          and cookies[0]["path"] == "/console" and not cookies[0]["secure"],
          "signed in: one HttpOnly, SameSite=Strict cookie for /console")
    check(page.evaluate("() => document.cookie") == "", "scripts cannot read the session cookie")

    # Apps.
    check(page.get_by_role("heading", level=1).inner_text() == "Apps", "the apps page")
    check(page.get_by_role("link", name="Contoso Notes").is_visible(), "lists the app")
    check(page.get_by_role("table", name="Apps").is_visible(), "in a table named by its caption")
    shot(page, args, "apps")

    # One app: its app IDs and credentials.
    page.get_by_role("link", name="Contoso Notes").click()
    page.wait_for_url(app_path)
    text = page.inner_text("main")
    for app_id in args.app_ids.split(","):
        check(app_id in text, f"the app page shows the app ID {app_id}")
    for transport in ["apns", "fcm"]:
        row = page.get_by_role("row").filter(has=page.get_by_role("rowheader", name=transport, exact=True))
        check("usable" in row.inner_text(), f"{transport} credentials are usable")
    check("not verified yet" in text, "domain verification status")
    shot(page, args, "app")

    # Endpoints by state.
    page.get_by_role("navigation", name=f"App {args.app}").get_by_role("link", name="Endpoints").click()
    page.wait_for_url(re.compile(r".*/endpoints$"))
    text = page.inner_text("main")
    for endpoint in args.endpoints.split(","):
        check(endpoint in text, f"active endpoint {endpoint} listed")
    check(args.dead_endpoint not in text, "the dead endpoint is not among the active ones")
    shot(page, args, "endpoints-active")
    page.get_by_role("link", name=re.compile(r"^Inactive")).click()
    page.wait_for_url(re.compile(r".*state=inactive$"))
    row = page.get_by_role("row").filter(has=page.get_by_role("rowheader", name=args.dead_endpoint, exact=True))
    check(args.dead_reason in row.inner_text(), f"the dead endpoint is inactive: {args.dead_reason}")
    check(row.locator("time").count() == 1, "with the time it became inactive")
    shot(page, args, "endpoints-inactive")

    # One notification's deliveries across alice's devices.
    page.get_by_role("navigation", name=f"App {args.app}").get_by_role("link", name="Deliveries").click()
    page.wait_for_url(re.compile(r".*/deliveries$"))
    page.get_by_label("User ID").fill(args.user)
    page.get_by_label("Notification ID or appNotificationId").fill(args.notification)
    page.get_by_label("Notification ID or appNotificationId").press("Enter")
    page.wait_for_url(re.compile(r".*/deliveries\?user=.*"))
    devices = page.get_by_role("table", name="Devices")
    def device_row(endpoint):
        return devices.get_by_role("row").filter(has=page.get_by_role("rowheader", name=endpoint, exact=True))
    dead = device_row(args.dead_endpoint).inner_text()
    check("gone" in dead and args.dead_reason in dead, f"the dead endpoint's delivery is gone: {dead}")
    for endpoint in args.delivered.split(","):
        row = device_row(endpoint).inner_text()
        check("delivered" in row, f"{endpoint} delivered: {row}")
    apns_id = re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", device_row("iphone").inner_text())
    check(apns_id is not None, "the iPhone's row shows the apns-id")
    check(re.search(r"projects/\S+/messages/\S+", device_row(args.retried).inner_text()) is not None,
          "the retried device's row shows FCM's message name")
    timeline = page.locator("ol.timeline").inner_text()
    check(f"{args.retried} (android, fcm): visible sent again, attempt 2" in timeline,
          f"the timeline shows the retry: {timeline}")
    check("wakes the device in process" in device_row(args.polled).inner_text(), "the polling device got no push")
    shot(page, args, "deliveries")

    # The notifications list: newest first, filtered by the form (Enter submits, no script), each
    # row opening the notification with its content, receipts and timeline (to the millisecond).
    page.get_by_role("navigation", name=f"App {args.app}").get_by_role("link", name="Notifications").click()
    page.wait_for_url(re.compile(r".*/notifications$"))
    table = page.get_by_role("table", name="Notifications, newest first")
    check(table.is_visible() and args.notification in table.inner_text(), "the notifications list shows the publish")
    page.get_by_label("User ID").fill(args.user)
    page.get_by_label("State").select_option("active")
    page.get_by_label("User ID").press("Enter")
    page.wait_for_url(re.compile(r".*/notifications\?user=.*status=active.*"))
    rows = page.get_by_role("table", name="Notifications, newest first").get_by_role("row")
    check(rows.count() >= 2, f"filtered by user and state: {rows.count() - 1} row(s)")
    wide = page.evaluate("() => [document.querySelector('main table').getBoundingClientRect().width, window.innerWidth]")
    check(wide[0] >= wide[1] - 120, f"the table uses the page width: {wide}")
    ids = page.evaluate("""() => [...document.querySelectorAll('table .id')].map(e => [e.textContent, e.title,
        getComputedStyle(e).whiteSpace, e.getClientRects().length])""")
    check(ids and all(text == title and space == "nowrap" and lines == 1 for text, title, space, lines in ids),
          f"IDs are never broken inside, their whole value in the tooltip: {ids[:3]}")
    shot(page, args, "notifications")
    page.get_by_role("link", name=args.notification, exact=True).first.click()
    page.wait_for_url(re.compile(r".*/deliveries\?user=.*"))
    facts = page.locator("dl.facts").inner_text()
    check("Welcome" in facts and "to Contoso Notes" in facts and "Targeting" in facts and "Expires" in facts,
          "the notification's content as stored")
    check(page.get_by_role("table", name="Devices").is_visible(), "its receipts, one row per device")
    times = page.locator("ol.timeline time").all_inner_texts()
    check(times and all(re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3} UTC", t) for t in times),
          f"timeline times to the millisecond: {times[:2]}")
    shot(page, args, "notification")

    # Recent failures: the dead token's delivery, grouped by transport and reason, linking to it.
    page.get_by_role("navigation", name=f"App {args.app}").get_by_role("link", name="Failures").click()
    page.wait_for_url(re.compile(r".*/failures$"))
    groups = page.get_by_role("table", name="Failures by transport, outcome and reason")
    gone = groups.get_by_role("row").filter(has=page.get_by_role("rowheader", name=args.dead_reason))
    check(gone.count() == 1 and "apns" in gone.inner_text() and "gone" in gone.inner_text(),
          f"the dead token's failure, grouped: {gone.all_inner_texts()}")
    section = page.locator("section", has=page.get_by_role("heading", name=re.compile(r"^apns · gone")))
    check(args.dead_endpoint in section.inner_text(), "the group lists the dead endpoint's delivery")
    section.get_by_role("link").first.click()
    page.wait_for_url(re.compile(r".*/deliveries\?user=.*"))
    check(args.notification in page.locator("dl.facts").inner_text(), "a failure opens its notification")
    page.go_back()
    shot(page, args, "failures")

    # Endpoints searched by the start of the user ID.
    page.goto(app_path + "/endpoints")
    page.get_by_label("User ID starts with").fill("bo")
    page.get_by_label("User ID starts with").press("Enter")
    page.wait_for_url(re.compile(r".*/endpoints\?.*user=bo.*"))
    text = page.get_by_role("table", name="Active endpoints").inner_text()
    check("bob" in text and args.user not in text, f"the search finds bob's endpoint only: {text}")

    # Statistics over time: the counts reach the store at the hub's next flush (every 5 s).
    page.get_by_role("navigation", name=f"App {args.app}").get_by_role("link", name="Statistics").click()
    page.wait_for_url(re.compile(r".*/statistics$"))
    for _ in range(40):
        numbers = page.get_by_role("table", name=re.compile(r"^Per transport"))
        if numbers.count() == 1 and "fcm" in numbers.inner_text() and "apns" in numbers.inner_text():
            fcm = numbers.get_by_role("row").filter(has=page.get_by_role("rowheader", name="fcm", exact=True))
            cells = fcm.get_by_role("cell").all_inner_texts()
            if cells and int(cells[0]) >= 1 and int(cells[1]) >= 1:
                break
        page.wait_for_timeout(500)
        page.reload()
    numbers = page.get_by_role("table", name=re.compile(r"^Per transport"))
    fcm_cells = numbers.get_by_role("row").filter(
        has=page.get_by_role("rowheader", name="fcm", exact=True)).get_by_role("cell").all_inner_texts()
    check(int(fcm_cells[0]) >= 1 and int(fcm_cells[1]) >= 1, f"FCM: delivered and retried counted: {fcm_cells}")
    apns_cells = numbers.get_by_role("row").filter(
        has=page.get_by_role("rowheader", name="apns", exact=True)).get_by_role("cell").all_inner_texts()
    check(int(apns_cells[2]) >= 1, f"APNs: the dead token counted as gone: {apns_cells}")
    check(page.get_by_role("img", name=re.compile(r"^Publishes and deliveries per minute")).count() == 1,
          "the volume chart is an image named for screen readers")
    check(page.locator("svg circle title").count() >= 2, "every point has a tooltip")
    caption, plot = page.evaluate("""() => { const f = document.querySelector('figure.chart#volume');
        return [f.querySelector('figcaption').getBoundingClientRect().bottom, f.querySelector(':scope > svg').getBoundingClientRect().top]; }""")
    check(caption <= plot, "title and legend above the chart")
    ticks = page.locator("figure#volume text.tick").all_text_contents()
    check(ticks and all(re.fullmatch(r"\d+", t) for t in ticks), f"whole-number ticks for counts: {ticks}")
    page.locator("figure#volume details.values summary").click()
    check(page.get_by_role("table", name=re.compile(r"^Publishes and deliveries per minute: buckets")).is_visible(),
          "the values in a table, opened without a script")
    shot(page, args, "statistics")
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0, tzinfo=None)
    start = now - datetime.timedelta(minutes=30)
    page.get_by_label("From (UTC)").fill(start.isoformat())
    page.get_by_label("To (UTC)").fill(now.isoformat())
    page.get_by_role("button", name="Show range").click()
    page.wait_for_url(re.compile(r".*/statistics\?from=.*"))
    heading = start.isoformat().replace("T", " ") + " to"
    check(page.get_by_role("heading", level=2, name=re.compile("^" + re.escape(heading))).count() == 1
          and page.locator("svg polyline").count() >= 1, f"a custom range: {heading}")

    # The config check report.
    page.get_by_role("link", name="Configuration").click()
    page.wait_for_url(re.compile(r".*/console/config$"))
    text = page.inner_text("main")
    check("hub.yaml" in text and "loads: 1 app(s)" in text, "the config check report")
    check(page.locator(".status-ok").count() >= 3, "checks with status ok")
    check(re.search(r"credentials\.apns\s+\S.*check out", text) is not None, "the APNs key checks out")
    check(token not in page.content(), "no secret in the report")
    shot(page, args, "config")

    # A test send: refused without a user, then sent.
    page.goto(app_path + "/send")
    page.get_by_label("Title").fill("Hello from the console")
    page.get_by_role("button", name="Send test notification").click()
    page.wait_for_load_state()
    check(page.locator("#user-error").is_visible(), "a send without a user shows the error at the field")
    check(page.get_by_label("User ID").get_attribute("aria-invalid") == "true", "the field is marked invalid")
    page.get_by_label("User ID").fill(args.user)
    page.get_by_label("Body").fill("Sent from the browser test")
    page.get_by_label("Priority").select_option("high")
    page.get_by_role("button", name="Send test notification").click()
    page.wait_for_load_state()
    check(page.get_by_role("heading", name="Sent").is_visible(), "the test send succeeded")
    check(page.inner_text("#sent-status") == "active", "the notification is active")
    check(re.fullmatch(r"[A-Za-z0-9_-]+", page.inner_text("#sent-id")) is not None, "with its ID")
    print("sent", page.inner_text("#sent-id"), flush=True)
    shot(page, args, "send")
    sent_id = page.inner_text("#sent-id")
    page.get_by_role("link", name="Follow its deliveries").click()
    page.wait_for_url(re.compile(r".*/deliveries\?user=.*"))
    check(sent_id in page.url and sent_id in page.inner_text("main")
          and "published" in page.locator("ol.timeline").inner_text(), "the sent notification's timeline opens")

    # No page loads a script: the policy says script-src 'none' on every answer, and no page has one.
    for path in ["/console", f"/console/apps/{args.app}", f"/console/apps/{args.app}/notifications",
                 f"/console/apps/{args.app}/failures", f"/console/apps/{args.app}/endpoints",
                 f"/console/apps/{args.app}/statistics", f"/console/apps/{args.app}/send", "/console/config",
                 f"/console/apps/{args.app}/deliveries?user={args.user}&id={args.notification}"]:
        response = page.goto(base + path)
        policy = response.headers.get("content-security-policy", "")
        check("script-src 'none'" in policy and page.evaluate("() => document.scripts.length") == 0,
              f"{path}: script-src 'none', no script")

    # A phone: 375 px wide, no horizontal scroll on any page.
    page.set_viewport_size({"width": 375, "height": 812})
    for name, path in [("apps", "/console"), ("app", f"/console/apps/{args.app}"),
                       ("endpoints", f"/console/apps/{args.app}/endpoints?state=inactive"),
                       ("send", f"/console/apps/{args.app}/send"), ("config", "/console/config"),
                       ("statistics", f"/console/apps/{args.app}/statistics"),
                       ("notifications", f"/console/apps/{args.app}/notifications"),
                       ("failures", f"/console/apps/{args.app}/failures"),
                       ("deliveries", f"/console/apps/{args.app}/deliveries?user={args.user}&id={args.notification}")]:
        page.goto(base + path)
        check(fits(page, 375), f"{name} fits 375 px without horizontal scroll")
        if name in ("apps", "endpoints"):
            shot(page, args, f"phone-{name}")

    # Signing out ends the session in this browser.
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(base + "/console")
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(re.compile(r".*/console/login$"))
    page.goto(base + "/console/config")
    check("/console/login" in page.url and "check out" not in page.content(), "signed out: no data")
    context.close()


if __name__ == "__main__":
    try:
        main()
    except CheckFailed as failure:
        print("FAILED", failure, file=sys.stderr, flush=True)
        sys.exit(1)
