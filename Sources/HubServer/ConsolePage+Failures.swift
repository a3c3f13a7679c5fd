import Foundation
import HubCore
import Hummingbird

/// `/console/apps/{app}/failures?range=1h|24h|7d|30d` (or `from` and `to`, UTC): the deliveries
/// that ended `gone`, `rejected` or `gaveUp`, or were suspended for a configuration fault, in the
/// range (``Hub/consoleFailures(app:from:to:limit:)``): a table of groups by transport, outcome
/// and reason with their counts, then each group's latest deliveries, each linking to its
/// notification.
extension Console {
    /// How many single failures the page lists, across its groups.
    static let failuresShown = 200

    func addFailuresPage(to router: RouterGroup<HubRequestContext>) {
        page(router, "apps/:app/failures") { request, context, _ in
            let app = try hub.app(try context.pathParameter("app"))
            var query = ConsoleQuery(request)
            let now = hub.now()
            let range = query.text("range").flatMap(StatisticsRange.init(rawValue:)) ?? .day
            var from = query.time("from") ?? now.addingTimeInterval(-range.seconds)
            var to = query.time("to") ?? now
            let custom = query.text("from") != nil || query.text("to") != nil
            if from >= to {
                query.fail("to", "must be after from")
                (from, to) = (now.addingTimeInterval(-range.seconds), now)
            }
            let header = Self.rangePicker(
                app: app.id, page: "failures", range: range, custom: custom, query: query, from: from, to: to)
            guard query.errors.isEmpty else {
                return ConsoleView(
                    title: "Recent failures", section: "failures", app: app, status: .badRequest,
                    content: "\(query.notice)\n\(header)")
            }
            let (groups, latest) = try await hub.consoleFailures(
                app: app.id, from: from, to: to, limit: Self.failuresShown)
            let span: HTML = "\(ConsoleLayout.time(from)) to \(ConsoleLayout.time(to))"
            guard !groups.isEmpty else {
                return ConsoleView(
                    title: "Recent failures", section: "failures", app: app,
                    content: "\(header)\n<section><p>No delivery failed from \(span).</p></section>")
            }
            let summary = ConsoleLayout.table(
                caption: "Failures by transport, outcome and reason",
                headers: ["Transport", "Outcome", "Reason", "Deliveries", "Latest"],
                rows: groups.enumerated().map { index, group in
                    """
                    <tr><td>\(group.transport.rawValue)</td>\
                    <td>\(ConsoleLayout.status(group.outcome.rawValue, group.outcome == .suspended ? "warning" : "error"))</td>\
                    <th scope="row"><a href="#group-\(index)">\(group.reason ?? "no reason given")</a></th>\
                    <td>\(group.count)</td><td>\(ConsoleLayout.time(group.latest))</td></tr>
                    """
                })
            let sections = groups.enumerated().html { index, group in
                let members = latest.filter {
                    $0.transport == group.transport && $0.outcome == group.outcome && $0.reason == group.reason
                }
                let rows = members.map { failure -> HTML in
                    let notification: HTML =
                        failure.notificationId.map { id in
                            let open = ConsoleQuery.link(
                                ConsolePaths.app(app.id, "/deliveries"), [("user", failure.userId), ("id", id)])
                            return "<a href=\"\(open)\">\(ConsoleLayout.id(id))</a>"
                        } ?? "a shoulder tap (no notification)"
                    return """
                        <tr><td>\(ConsoleLayout.time(failure.at, milliseconds: true))</td>\
                        <td>\(ConsoleLayout.id(failure.userId))</td><td>\(ConsoleLayout.id(failure.endpointId))</td>\
                        <td>\(failure.kind == .shoulderTap ? "tap" : failure.kind.rawValue)</td>\
                        <td>\(notification)</td></tr>
                        """
                }
                let shown = members.count < group.count ? " (the latest \(members.count) of \(group.count))" : ""
                return """
                    <section id="group-\(index)" aria-labelledby="group-\(index)-title">\
                    <h2 id="group-\(index)-title">\(group.transport.rawValue) · \(group.outcome.rawValue): \
                    \(group.reason ?? "no reason given")</h2>\
                    \(ConsoleLayout.table(
                        caption: "\(group.count) deliveries\(shown)",
                        headers: ["When", "User", "Endpoint", "Kind", "Notification"], rows: rows))</section>
                    """
            }
            return ConsoleView(
                title: "Recent failures", section: "failures", app: app,
                content: """
                    \(header)
                    <section aria-labelledby="groups"><h2 id="groups">From \(span)</h2>\(summary)</section>
                    \(sections)
                    """)
        }
    }

    /// The range picker of an app's page over time (`failures`, `statistics`): a tab for each
    /// ``StatisticsRange`` (`range` marked current unless the range is `custom`), then a form for a
    /// custom range (`from`, `to`, UTC).
    static func rangePicker(
        app: String, page: String, range: StatisticsRange, custom: Bool, query: ConsoleQuery, from: Date, to: Date
    ) -> HTML {
        let tabs = StatisticsRange.allCases.html { option in
            ConsoleLayout.link(
                option.title, to: ConsolePaths.app(app, "/\(page)?range=\(option.rawValue)"),
                current: !custom && option == range)
        }
        func field(_ name: String, _ title: String, _ value: Date) -> HTML {
            """
            <p><label for="\(name)">\(title)</label> <input id="\(name)" name="\(name)" type="datetime-local" \
            step="1" value="\(query.text(name) ?? ConsoleQuery.fieldValue(value))"\(query.invalid(name))>\
            \(query.fieldError(name))</p>
            """
        }
        let action = ConsolePaths.app(app, "/\(page)")
        let form: HTML = """
            <form method="get" action="\(action)" class="inline-form" aria-label="Range of \(page)">\
            \(field("from", "From (UTC)", from))\(field("to", "To (UTC)", to))\
            <p><button type="submit">Show range</button></p></form>
            """
        return "<nav class=\"tabs\" aria-label=\"Range\"><ul>\(tabs)</ul></nav>\n\(form)"
    }
}
