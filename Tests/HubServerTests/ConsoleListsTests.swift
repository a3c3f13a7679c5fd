import Foundation
import HTTPTypes
import HubCore
import HubTesting
import HummingbirdTesting
import Testing

@testable import HubServer

/// The console's lists across an app, signed in, through HTTP: notifications (filtered, paged by
/// cursor, each opening its content), recent failures grouped by transport and reason, endpoints
/// searched and paged; and the charts' reading aids.
@Suite("Console: notifications, failures, endpoints and charts")
struct ConsoleListsTests {
    static let hostileTitle = "<script>alert('title')</script>"

    /// The `href` of the link whose text is `text`, unescaped.
    static func link(_ text: String, in page: String) -> String? {
        guard let end = page.range(of: ">\(text)</a>") else { return nil }
        guard let start = page[..<end.lowerBound].range(of: "href=\"", options: .backwards),
            let close = page[start.upperBound...].firstIndex(of: "\"")
        else { return nil }
        return String(page[start.upperBound..<close]).replacingOccurrences(of: "&amp;", with: "&")
    }

    @Test("notifications: newest first, 50 a page with a working next link, filters, each row opens its content")
    func notifications() async throws {
        let harness = try await Harness(rateLimits: .off)
        try await harness.run { client in
            let cookie = try await ConsoleAuthTests.session(client)
            // 55 for alice and bob, one at a time, so their creation times differ.
            for index in 0..<55 {
                let user = index % 2 == 0 ? "alice" : "bob"
                let body =
                    #"{"appNotificationId":"n\#(index)","groupName":"g<b>","payload":{"rawContent":"{\"k\":\"<i>\#(index)</i>\"}","visualContent":{"title":"t\#(index)","body":"b"}},"targetPolicy":{"platformTypes":["android"]}}"#
                #expect(try await client.publish(body, user: user).status == .created)
            }
            #expect(
                try await client.publish(notification("hostile", title: Self.hostileTitle), user: "carol").status
                    == .created)
            let base = "/console/apps/\(Harness.notes)/notifications"
            let first = try await client.send(.get, base, headers: [.cookie: cookie])
            #expect(first.status == .ok)
            #expect(first.text.contains(#"aria-current="page">Notifications</a>"#))
            #expect(first.text.contains("&lt;script&gt;alert(&#39;title&#39;)&lt;/script&gt;"))
            #expect(!first.text.contains(Self.hostileTitle), "the title arrives as text")
            let rows = first.text.components(separatedBy: "<tr><td><time").count - 1
            #expect(rows == 50, "a page of 50")
            let newest = try #require(first.text.range(of: ">hostile<"))
            let older = try #require(first.text.range(of: ">n54<"))
            #expect(newest.lowerBound < older.lowerBound, "newest first")
            #expect(!first.text.contains(">n5<"), "the oldest are on the next page")

            let next = try #require(Self.link("Next page", in: first.text), "a next page link")
            let second = try await client.send(.get, next, headers: [.cookie: cookie])
            #expect(second.status == .ok)
            #expect(second.text.components(separatedBy: "<tr><td><time").count - 1 == 6)
            for index in 0..<6 { #expect(second.text.contains(">n\(index)<"), "n\(index) on page 2") }
            #expect(!second.text.contains(">n6<") && !second.text.contains("Next page"))

            let bob = try await client.send(.get, base + "?user=bob&status=active", headers: [.cookie: cookie])
            #expect(bob.text.components(separatedBy: "<tr><td><time").count - 1 == 27)
            #expect(!bob.text.contains(">n0<") && bob.text.contains(">n1<"))
            let byID = try await client.send(.get, base + "?appNotificationId=n7", headers: [.cookie: cookie])
            #expect(byID.text.components(separatedBy: "<tr><td><time").count - 1 == 1)
            let expired = try await client.send(.get, base + "?status=expired", headers: [.cookie: cookie])
            #expect(expired.text.contains("No notifications match."))
            let future = try await client.send(.get, base + "?from=2999-01-01T00:00", headers: [.cookie: cookie])
            #expect(future.text.contains("No notifications match."))

            let bad = try await client.send(
                .get, base + "?from=yesterday&status=gone&after=x", headers: [.cookie: cookie])
            #expect(bad.status == .badRequest)
            #expect(bad.text.contains(#"<p class="field-error" id="from-error">must be a time as YYYY-MM-DDTHH:MM"#))
            #expect(bad.text.contains(#"id="status-error">must be one of scheduled, active, expired, deleted"#))
            #expect(bad.text.contains("<strong>after</strong>: must be the cursor of a &#39;Next page&#39; link"))
            #expect(bad.text.contains(#"aria-invalid="true" aria-describedby="from-error""#))

            // A row opens the notification: its content as stored, escaped, its receipts and timeline.
            let open = try #require(Self.link(#"<span class="id" title="n7">n7</span>"#, in: first.text))
            #expect(open.hasPrefix("/console/apps/\(Harness.notes)/deliveries?user=bob&id="))
            let detail = try await client.send(.get, open, headers: [.cookie: cookie])
            #expect(detail.status == .ok)
            for expected in [
                "<dt>Title</dt><dd>t7</dd>", "<dt>Group</dt><dd>g&lt;b&gt;</dd>",
                #"<pre class="raw">{&quot;k&quot;:&quot;&lt;i&gt;7&lt;/i&gt;&quot;}</pre>"#,
                "<dt>Targeting</dt><dd>android</dd>", "<dt>Expires</dt>", #"<ol class="timeline">"#,
            ] {
                #expect(detail.text.contains(expected), "\(expected)")
            }
            let millisecond = try Regex(
                #"<li><time datetime="[^"]+">\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3} UTC</time> <strong>hub</strong>: published</li>"#
            )
            #expect(detail.text.contains(millisecond), "timeline times to the millisecond")
        }
    }

    @Test(
        "failures: gone, rejected and suspended deliveries grouped by transport and reason, linking to their notification"
    )
    func failures() async throws {
        let harness = try await Harness(rateLimits: .off)
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            let cookie = try await ConsoleAuthTests.session(client)
            for (id, token) in [
                ("good", "tok-live"), ("gone", "dead"), ("refused1", "rejected-1"), ("refused2", "rejected-2"),
            ] {
                try await client.registerRecording(id, token: token, bearer: alice)
            }
            #expect(try await client.publish(notification("f1"), user: "alice").status == .created)
            let base = "/console/apps/\(Harness.notes)/failures"
            let settled = await eventually {
                guard let page = try? await client.send(.get, base, headers: [.cookie: cookie]) else { return false }
                return page.text.contains("<td>2</td>") && page.text.contains("Unregistered")
            }
            let page = try await client.send(.get, base, headers: [.cookie: cookie])
            #expect(settled, "\(page.text)")
            #expect(page.status == .ok)
            #expect(page.text.contains(#"aria-current="page">Failures</a>"#))
            #expect(page.text.contains(#"aria-current="page">Last 24 hours</a>"#))
            let summary = try #require(page.text.range(of: "Failures by transport, outcome and reason"))
            let rejectedRow = try #require(
                page.text.range(of: ">\(HTML.escape(Harness.rejectedReason))</a></th><td>2</td>"))
            let goneRow = try #require(page.text.range(of: ">Unregistered</a></th><td>1</td>"))
            #expect(
                summary.lowerBound < rejectedRow.lowerBound && rejectedRow.lowerBound < goneRow.lowerBound,
                "the largest group first")
            #expect(page.text.contains("<h2 id=\"group-0-title\">recording · rejected: "))
            #expect(page.text.contains("<h2 id=\"group-1-title\">recording · gone: Unregistered</h2>"))
            #expect(!page.text.contains(">good<"), "delivered ones are not failures")
            let link = try #require(
                page.text.firstMatch(
                    of: try Regex(#"href="(/console/apps/[^"]+/deliveries\?user=alice&amp;id=[^"]+)""#)))
            let open = String(link.output[1].substring ?? "").replacingOccurrences(of: "&amp;", with: "&")
            let detail = try await client.send(.get, open, headers: [.cookie: cookie])
            #expect(
                detail.status == .ok
                    && detail.text.contains(
                        "<dt>appNotificationId</dt><dd><span class=\"id\" title=\"f1\">f1</span></dd>")
            )

            let past = try await client.send(
                .get, base + "?from=2020-01-01T00:00&to=2020-01-02T00:00", headers: [.cookie: cookie])
            #expect(past.text.contains("No delivery failed from"))
            #expect(!past.text.contains(#"aria-current="page">Last 24 hours</a>"#), "a custom range")
            let backwards = try await client.send(
                .get, base + "?from=2020-01-02T00:00&to=2020-01-01T00:00", headers: [.cookie: cookie])
            #expect(backwards.status == .badRequest && backwards.text.contains(#"id="to-error">must be after from"#))
        }
    }

    @Test("endpoints: searched by the start of user and endpoint IDs, 50 a page with a next link")
    func endpoints() async throws {
        let harness = try await Harness(rateLimits: .off, maxEndpointsPerUser: nil)
        try await harness.run { client in
            let cookie = try await ConsoleAuthTests.session(client)
            for index in 0..<52 {
                _ = try await harness.hub.registerEndpoint(
                    app: Harness.notes, user: "alice", id: String(format: "phone-%02d", index),
                    EndpointRegistration(platform: .web, appId: "https://notes.contoso.com", transport: .polling))
            }
            for user in ["alicia", "bob"] {
                _ = try await harness.hub.registerEndpoint(
                    app: Harness.notes, user: user, id: "tablet",
                    EndpointRegistration(platform: .web, appId: "https://notes.contoso.com", transport: .polling))
            }
            let base = "/console/apps/\(Harness.notes)/endpoints"
            let first = try await client.send(.get, base, headers: [.cookie: cookie])
            #expect(first.text.contains("Active (54)"))
            #expect(first.text.components(separatedBy: "<th scope=\"row\">").count - 1 == 50)
            let next = try #require(Self.link("Next page", in: first.text))
            let second = try await client.send(.get, next, headers: [.cookie: cookie])
            #expect(second.text.components(separatedBy: "<th scope=\"row\">").count - 1 == 4)
            for expected in ["phone-50", "phone-51", "alicia", "bob"] {
                #expect(second.text.contains(">\(expected)<"), "\(expected)")
            }
            let ali = try await client.send(.get, base + "?user=ali&endpoint=tab", headers: [.cookie: cookie])
            #expect(ali.text.components(separatedBy: "<th scope=\"row\">").count - 1 == 1)
            #expect(ali.text.contains(#"title="alicia">alicia</span>"#) && !ali.text.contains(">bob<"))
            #expect(ali.text.contains(#"<input id="user" name="user" value="ali""#))
            let none = try await client.send(.get, base + "?endpoint=watch", headers: [.cookie: cookie])
            #expect(none.text.contains("No active endpoints match."))
            let bad = try await client.send(.get, base + "?after=nope", headers: [.cookie: cookie])
            #expect(bad.status == .badRequest)
        }
    }

    @Test(
        "charts: title and legend above, integer ticks, tooltips and values, no drop at the running minute, latency lines, a custom range"
    )
    func charts() async throws {
        let clock = ManualClock()
        let harness = try await Harness(clock: clock, rateLimits: .off)
        let alice = try await harness.token(user: "alice", expiresIn: 100_000)
        try await harness.run { client in
            let cookie = try await ConsoleAuthTests.session(client)
            try await client.registerRecording("good", token: "tok-live", bearer: alice)
            // Two minutes with a publish each, then the next minute is running with one more.
            for minute in 0..<3 {
                #expect(try await client.publish(notification("c\(minute)"), user: "alice").status == .created)
                #expect(await eventually { harness.custom.deliveries.count == minute + 1 })
                try await harness.hub.flushStatistics()
                if minute < 2 { clock.advance(by: .seconds(60)) }
            }
            let page = try await client.send(
                .get, "/console/apps/\(Harness.notes)/statistics", headers: [.cookie: cookie])
            #expect(page.status == .ok)
            let volume = try #require(page.text.range(of: #"<figure class="chart" id="volume">"#))
            let caption = try #require(
                page.text.range(of: "<figcaption>", range: volume.upperBound..<page.text.endIndex))
            let plot = try #require(page.text.range(of: "<svg viewBox", range: volume.upperBound..<page.text.endIndex))
            #expect(caption.lowerBound < plot.lowerBound, "title and legend above the plot")
            let latency = try #require(page.text.range(of: #"<figure class="chart" id="latency">"#))
            // The counts' charts (latency may have fractions of a millisecond).
            let ticks = page.text[..<latency.lowerBound].matches(of: try Regex(#"class="tick">([^<]+)</text>"#)).map {
                String($0.output[1].substring ?? "")
            }
            #expect(!ticks.isEmpty && ticks.allSatisfy { Int($0) != nil }, "whole-number ticks: \(ticks)")
            #expect(page.text.contains(" · Published: 1</title></circle>"), "a tooltip per point")
            #expect(page.text.contains("<details class=\"values\"><summary>Values</summary>"))
            // The running minute has a publish, but is not drawn: the last drawn published point is the minute before.
            let published = page.text.matches(of: try Regex(#"<title>([^<]+) · Published: (\d+)</title>"#))
            let now = ConsoleChart.label(StatisticsResolution.minute.start(of: harness.hub.now()))
            #expect(!published.isEmpty)
            #expect(page.text.contains("<td>1 so far</td>"), "its value so far is in the values table")
            #expect(
                !published.contains { String($0.output[1].substring ?? "") == now }, "the running minute is left out")
            let latencyFigure = page.text[latency.lowerBound...]
            #expect(latencyFigure.contains("<polyline"), "latency drawn as a line")
            #expect(latencyFigure.contains(" ms</title>"), "latency tooltips in ms")

            let custom = try await client.send(
                .get,
                "/console/apps/\(Harness.notes)/statistics?from=\(ConsoleQuery.fieldValue(harness.hub.now().addingTimeInterval(-600)))&to=\(ConsoleQuery.fieldValue(harness.hub.now()))",
                headers: [.cookie: cookie])
            #expect(custom.status == .ok)
            #expect(custom.text.contains("Publishes and deliveries per minute"))
            #expect(!custom.text.contains(#"aria-current="page">Last hour</a>"#))
            let tooLong = try await client.send(
                .get, "/console/apps/\(Harness.notes)/statistics?from=2000-01-01T00:00&to=2000-03-01T00:00",
                headers: [.cookie: cookie])
            #expect(tooLong.status == .badRequest && tooLong.text.contains("a range covers at most 30 days"))
        }
    }
}
