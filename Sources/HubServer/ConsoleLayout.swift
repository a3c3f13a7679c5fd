import Foundation
import HTTPTypes
import HubCore
import Hummingbird
import NIOCore

/// The console's navigation. A new page adds one item here and one file with its route and
/// render function (`ConsolePage+….swift`), wired in `Console+Routes.swift`.
enum ConsoleNav {
    /// A link of the navigation.
    struct Item: Sendable, Hashable {
        /// Names the page a ``ConsoleView/section`` marks as current.
        var id: String
        var title: String
        /// The path after `/console` (hub-wide) or after `/console/apps/{app}` (per app).
        var suffix: String
    }

    /// The hub-wide pages, in the header.
    static let hub: [Item] = [
        Item(id: "apps", title: "Apps", suffix: ""),
        Item(id: "config", title: "Configuration", suffix: "/config"),
    ]

    /// The pages of one app, shown under its name on its pages.
    static let app: [Item] = [
        Item(id: "app", title: "Overview", suffix: ""),
        Item(id: "notifications", title: "Notifications", suffix: "/notifications"),
        Item(id: "failures", title: "Failures", suffix: "/failures"),
        Item(id: "endpoints", title: "Endpoints", suffix: "/endpoints"),
        Item(id: "statistics", title: "Statistics", suffix: "/statistics"),
        Item(id: "deliveries", title: "Deliveries", suffix: "/deliveries"),
        Item(id: "broadcasts", title: "Broadcasts", suffix: "/broadcasts"),
        Item(id: "webhooks", title: "Webhooks", suffix: "/webhooks"),
        Item(id: "send", title: "Test send", suffix: "/send"),
    ]
}

/// Paths of the console, with IDs percent-encoded as one path segment.
enum ConsolePaths {
    static let root = "/console"
    static let login = "/console/login"
    static let logout = "/console/logout"

    /// An app's page: `/console/apps/{app}` and `suffix`.
    static func app(_ id: String, _ suffix: String = "") -> String {
        "/console/apps/\(HTTPText.pathSegment(id))\(suffix)"
    }
}

/// What a page handler returns: its title and content; the layout adds the rest.
struct ConsoleView: Sendable {
    var title: String
    /// The ``ConsoleNav/Item/id`` of the page, marked `aria-current="page"`.
    var section: String
    /// The app the page is about: its sections are shown.
    var app: CrossDeviceApp?
    var status: HTTPResponse.Status = .ok
    var content: HTML
}

/// Renders whole pages: document head, skip link, header with sign-out, navigation, `main`.
enum ConsoleLayout {
    /// A signed-in page. `csrfToken` goes into the sign-out form.
    static func page(_ view: ConsoleView, csrfToken: String) -> Response {
        let hubLinks = ConsoleNav.hub.html { item in
            link(item.title, to: ConsolePaths.root + item.suffix, current: view.app == nil && view.section == item.id)
        }
        var appNav = HTML.empty
        if let app = view.app {
            let links = ConsoleNav.app.html { item in
                link(item.title, to: ConsolePaths.app(app.id, item.suffix), current: view.section == item.id)
            }
            appNav = """
                <nav class="sections" aria-label="App \(app.id)"><ul>\
                <li class="app-name">\(app.name)</li>\(links)</ul></nav>
                """
        }
        let body: HTML = """
            <header class="top">
            <a class="brand" href="\(ConsolePaths.root)">NotificationHub console</a>
            <form method="post" action="\(ConsolePaths.logout)">\
            <input type="hidden" name="csrf" value="\(csrfToken)">\
            <button type="submit" class="link">Sign out</button></form>
            </header>
            <nav class="sections" aria-label="Hub"><ul>\(hubLinks)</ul></nav>
            \(appNav)
            <main id="main" tabindex="-1">
            <h1>\(view.title)</h1>
            \(view.content)
            </main>
            """
        return document(title: view.title, body: body, status: view.status)
    }

    /// A page of its own (sign-in, errors before signing in, console off).
    static func document(title: String, body: HTML, status: HTTPResponse.Status) -> Response {
        let html: HTML = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="referrer" content="same-origin">
            <title>\(title) · NotificationHub</title>
            <link rel="stylesheet" href="\(ConsoleStylesheet.path)">
            </head>
            <body>
            <a class="skip-link" href="#main">Skip to content</a>
            \(body)
            </body>
            </html>

            """
        return Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: html.rendered)))
    }

    /// A list item linking to `path`, marked `aria-current="page"` when it is the current one
    /// (navigation, tabs).
    static func link(_ title: String, to path: String, current: Bool) -> HTML {
        current
            ? "<li><a href=\"\(path)\" aria-current=\"page\">\(title)</a></li>"
            : "<li><a href=\"\(path)\">\(title)</a></li>"
    }

    // MARK: Pieces the pages share

    /// A status in words, coloured: `ok`, `warning`, `error` or `off`.
    static func status(_ text: String, _ kind: String) -> HTML {
        "<span class=\"status status-\(kind)\">\(text)</span>"
    }

    /// A time, readable and machine-readable; `milliseconds` shows them (timelines, where events
    /// follow each other within a second).
    static func time(_ date: Date, milliseconds: Bool) -> HTML {
        let iso = date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: milliseconds))
        let shown = iso.replacingOccurrences(of: "T", with: " ").replacingOccurrences(of: "Z", with: " UTC")
        return "<time datetime=\"\(iso)\">\(shown)</time>"
    }

    /// A time to the second.
    static func time(_ date: Date) -> HTML { time(date, milliseconds: false) }

    /// An ID (user, endpoint, notification, provider message): never broken inside; a long one is
    /// cut with an ellipsis, the whole value in its tooltip, and copying it copies all of it.
    static func id(_ value: String) -> HTML {
        "<span class=\"id\" title=\"\(value)\">\(value)</span>"
    }

    /// A table in a box that scrolls sideways on narrow screens (so the page itself never does).
    static func table(caption: String, headers: [String], rows: [HTML]) -> HTML {
        let head = headers.html { "<th scope=\"col\">\($0)</th>" }
        return """
            <div class="table-wrap"><table>
            <caption>\(caption)</caption>
            <thead><tr>\(head)</tr></thead>
            <tbody>\(HTML.joined(rows, separator: "\n"))</tbody>
            </table></div>
            """
    }

    /// A notice: `kind` is `ok`, `error` or empty.
    static func notice(_ content: HTML, kind: String = "", role: String = "status") -> HTML {
        "<div class=\"notice \(kind)\" role=\"\(role)\">\(content)</div>"
    }
}
