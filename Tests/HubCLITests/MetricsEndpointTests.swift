import Foundation
import HubTesting
import Testing

@Suite("/metrics over HTTP")
struct MetricsEndpointTests {
    /// Every `# TYPE` line's family, and whether a `# HELP` line of the same family comes right before it.
    static func families(_ text: String) -> [(name: String, hasHelp: Bool)] {
        let lines = text.split(separator: "\n").map(String.init)
        return lines.indices.compactMap { index in
            guard lines[index].hasPrefix("# TYPE ") else { return nil }
            let name = String(lines[index].dropFirst(7).split(separator: " ")[0])
            return (name, index > 0 && lines[index - 1].hasPrefix("# HELP \(name) "))
        }
    }

    static func value(_ name: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
    }

    @Test("every family has # HELP and # TYPE; process metrics come from /proc")
    func helpAndProcess() async throws {
        let hub = try await RunningHub.served()
        let http = HubHTTP(base: hub.baseURL)
        #expect(try await http.registerPolling(user: "alice", endpoint: "tablet") == 201)
        #expect(try await http.publish(user: "alice", id: "n1") == 201)
        _ = try await http.feedIDs(user: "alice")
        let metrics = try await http.request(.GET, "/metrics", bearer: "")
        #expect(metrics.status == 200)
        let families = Self.families(metrics.body)
        #expect(families.count >= 8, "\(metrics.body)")
        for family in families { #expect(family.hasHelp, "\(family.name) has no # HELP line") }
        for name in ["hub_publishes_total", "hub_http_requests_total", "hub_syncs_total", "hub_outbox_pending"] {
            #expect(families.contains { $0.name == name }, "\(name) missing")
        }
        let helpLines = metrics.body.split(separator: "\n").filter { $0.hasPrefix("# HELP ") }
        #expect(Set(helpLines).count == helpLines.count, "one # HELP per family")

        let rss = try #require(Self.value("process_resident_memory_bytes", in: metrics.body))
        #expect(rss > 1_000_000 && rss < 4_000_000_000)
        let fds = try #require(Self.value("process_open_fds", in: metrics.body))
        #expect(fds >= 4)
        #expect(try #require(Self.value("process_max_fds", in: metrics.body)) >= fds)
        let cpu = try #require(Self.value("process_cpu_seconds_total", in: metrics.body))
        #expect(cpu > 0 && cpu < 600)
        let start = try #require(Self.value("process_start_time_seconds", in: metrics.body))
        let now = Date().timeIntervalSince1970
        #expect(start <= now + 2 && start > now - 300, "the hub started moments ago: \(start) vs \(now)")
    }

    @Test("a batch publish counts every item in hub_publishes_total by its result, once per batch")
    func batchCounts() async throws {
        let hub = try await RunningHub.served()
        let http = HubHTTP(base: hub.baseURL)
        #expect(try await http.publish(user: "alice", id: "n1") == 201)
        let items = [
            #"{"userId":"alice","appNotificationId":"n1","payload":{"rawContent":"again"}}"#,
            #"{"userId":"bob","appNotificationId":"n1","payload":{"rawContent":"x"}}"#,
            #"{"userId":"carol","appNotificationId":"n1","payload":{"rawContent":"x"}}"#,
            #"{"appNotificationId":"n1","payload":{"rawContent":"x"}}"#,
            #"{"userId":"dave","appNotificationId":"n2","payload":{"rawContent":"x"}}"#,
        ]
        let batch = try await http.request(
            .POST, "/v1/apps/notes.contoso.com/notifications/batch", bearer: http.publisherKey,
            json: #"{"notifications":[\#(items.joined(separator: ","))]}"#)
        #expect(batch.status == 200, "\(batch.body)")
        let metrics = try await http.request(.GET, "/metrics", bearer: "")
        func count(_ result: String) -> Double? {
            Self.value(#"hub_publishes_total{app="notes.contoso.com",result=""# + result + #""}"#, in: metrics.body)
        }
        // The single publish and three of the batch created, one updated, one refused.
        #expect(count("created") == 4, "\(metrics.body)")
        #expect(count("updated") == 1, "\(metrics.body)")
        #expect(count("invalid") == 1, "\(metrics.body)")
    }

    @Test("server.metricsListen serves /metrics on a port of its own; the API port answers 404 there")
    func separateListener() async throws {
        let workspace = try makeWorkspace()
        let metricsPort = try FreePort.pick()
        try writeServeConfig(in: workspace)
        let config = workspace.appendingPathComponent("hub.yaml")
        try read(config).replacingOccurrences(
            of: "instanceId: test-hub }", with: "instanceId: test-hub, metricsListen: \"127.0.0.1:\(metricsPort)\" }"
        ).write(to: config, atomically: true, encoding: .utf8)
        let hub = try await RunningHub(directory: workspace)
        // The two listeners start side by side: the metrics line may follow "hub listening".
        let announced = "metrics listening on http://127.0.0.1:\(metricsPort)/metrics"
        #expect(await eventually { hub.log.contains(announced) }, "\(hub.log)")
        let api = HubHTTP(base: hub.baseURL)
        #expect(try await api.publish(user: "alice", id: "n1") == 201)
        #expect(try await api.request(.GET, "/metrics", bearer: "").status == 404)
        let scrape = HubHTTP(base: "http://127.0.0.1:\(metricsPort)")
        let metrics = try await scrape.request(.GET, "/metrics", bearer: "")
        #expect(metrics.status == 200)
        #expect(metrics.body.contains("hub_publishes_total{"), "the API's metrics, scraped on the other port")
        #expect(metrics.body.contains("# HELP process_open_fds"))
        #expect(try await scrape.request(.GET, "/v1/apps", bearer: api.adminToken).status == 404, "metrics only")
        hub.signal(SIGTERM)
        #expect(await hub.waitForExit() == 0, "\(hub.log)")
    }

    @Test("the Grafana dashboard in examples queries only metrics the hub records, with their types")
    func grafanaDashboard() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let data = try Data(contentsOf: root.appendingPathComponent("examples/grafana/notification-hub.json"))
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        let expressions = panels.flatMap {
            ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String }
        }
        #expect(expressions.count >= 10)

        let hub = try await RunningHub.served()
        let http = HubHTTP(base: hub.baseURL)
        #expect(try await http.publish(user: "alice", id: "n1") == 201)
        _ = try await http.request(.GET, "/healthz", bearer: "")
        let scrape = try await http.request(.GET, "/metrics", bearer: "").body
        let types = Dictionary(
            scrape.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map {
                let parts = $0.split(separator: " ")
                return (String(parts[2]), String(parts[3]))
            }, uniquingKeysWith: { first, _ in first })
        // Metrics recorded only on events a short run does not have (a delivery, a store error) must
        // at least be recorded by the code under those names.
        var sources = ""
        for folder in ["Sources", "Plugins"] {
            let enumerator = FileManager.default.enumerator(atPath: root.appendingPathComponent(folder).path)
            while let path = enumerator?.nextObject() as? String {
                guard path.hasSuffix(".swift") else { continue }
                sources +=
                    (try? String(
                        contentsOf: root.appendingPathComponent(folder).appendingPathComponent(path), encoding: .utf8))
                    ?? ""
            }
        }
        let pattern = try NSRegularExpression(pattern: "\\b(hub|process)_[a-z_]+")
        for expression in expressions {
            let range = NSRange(expression.startIndex..., in: expression)
            for match in pattern.matches(in: expression, range: range) {
                var name = String(expression[Range(match.range, in: expression)!])
                let histogram = name.hasSuffix("_bucket")
                if histogram { name.removeLast("_bucket".count) }
                if let type = types[name] {
                    if histogram { #expect(type == "histogram", "\(name) is a \(type)") }
                } else {
                    #expect(
                        !name.hasPrefix("process_") && sources.contains("label: \"\(name)\""),
                        "the dashboard queries \(name), which the hub does not record")
                }
            }
        }
        #expect(types["hub_http_request_duration_seconds"] == "histogram")
    }
}
