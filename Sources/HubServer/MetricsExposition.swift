import Foundation
public import HubCore
import HubPolling
public import Hummingbird
public import Logging
import Metrics
import NIOCore
public import Prometheus

/// The Prometheus text of `/metrics`: every family with `# HELP` and `# TYPE`, and the process
/// metrics of the standard client libraries (CPU seconds, resident memory, open file descriptors,
/// start time), read from `/proc` at scrape time.
public enum MetricsExposition {
    /// Help text of each family the hub records; a family of another library gets a generic line.
    static let help: [String: String] = [
        "hub_http_requests_total": "HTTP requests answered, by route template and status code.",
        "hub_http_request_duration_seconds": "Time to the response head of HTTP requests, by route template.",
        "hub_publishes_total":
            "Publish requests by app and result (created, updated, unauthorized, invalid, failed).",
        "hub_syncs_total": "Feed syncs by app and mode (poll, longpoll, sse).",
        "hub_deliveries_total": "Delivery attempts with an outcome, by transport and outcome.",
        "hub_delivery_duration_seconds": "Time of a transport's send, by transport.",
        "hub_outbox_pending": "Deliveries queued in the store's outbox, read at scrape time.",
        "hub_deliveries_suspended":
            "Deliveries parked for a configuration fault until the hub restarts, by app and transport, read at scrape time.",
        "hub_feed_waiters": "Long-polls and event streams waiting on this instance.",
        "hub_polling_wakes_total": "Waiting long-polls and event streams woken by a feed change.",
        "hub_store_errors_total": "Store operations of the dispatcher that failed, by operation.",
        "hub_postgres_round_trips_total":
            "Statements the PostgreSQL store sent and waited for, one round trip each (BEGIN and COMMIT included).",
        "process_cpu_seconds_total": "Total user and system CPU time spent in seconds.",
        "process_resident_memory_bytes": "Resident memory size in bytes.",
        "process_virtual_memory_bytes": "Virtual memory size in bytes.",
        "process_open_fds": "Number of open file descriptors.",
        "process_max_fds": "Maximum number of open file descriptors.",
        "process_start_time_seconds": "Start time of the process since unix epoch in seconds.",
    ]

    /// The registry's text with a `# HELP` line before each `# TYPE` line, then the process metrics.
    public static func render(_ registry: PrometheusCollectorRegistry) -> [UInt8] {
        var bytes: [UInt8] = []
        registry.emit(into: &bytes)
        var out = ""
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("# TYPE "), let name = line.dropFirst(7).split(separator: " ").first {
                out +=
                    "# HELP \(name) \(help[String(name)] ?? "Recorded by \(name.split(separator: "_").first ?? name).")\n"
            }
            if line.hasPrefix("# HELP ") { continue }  // ours replaces a library's, so each family has one
            out += line
            out += "\n"
        }
        while out.hasSuffix("\n\n") { out.removeLast() }
        out += ProcessMetrics.read().text
        return Array(out.utf8)
    }

    /// `hub_deliveries_suspended{app,transport}` for every configured app and transport of the
    /// hub (0 when nothing is parked, so a series drops back after a restart resumes them), and
    /// for parked deliveries of apps or transports no longer configured. Written to the registry
    /// that is rendered.
    static func recordSuspended(
        _ suspended: [SuspendedDeliveries], hub: Hub, registry: PrometheusCollectorRegistry
    ) {
        var counts: [[String]: Int] = [:]
        for app in hub.configuration.apps {
            for transport in hub.router.transportIDs { counts[[app.id, transport.rawValue]] = 0 }
        }
        for entry in suspended { counts[[entry.appId, entry.transport.rawValue], default: 0] += entry.count }
        // No unit suffix and no help text: the name and exposition (no `# HELP` line) as before.
        let name = MetricNameDescriptor(metricName: "hub_deliveries_suspended", unitName: "", helpText: "")
        for (labels, count) in counts {
            registry.makeGauge(
                descriptor: name, labels: [("app", labels[0]), ("transport", labels[1])]
            ).set(to: Double(count))
        }
    }

    /// The `/metrics` response: refreshes the gauges read at scrape time, then renders.
    static func response(hub: Hub, registry: PrometheusCollectorRegistry, logger: Logger) async -> Response {
        // Queue depth is read from the store at scrape time, so every instance reports the shared outbox.
        do {
            let statistics = try await hub.outboxDepth()
            Gauge(label: "hub_outbox_pending").record(statistics.pending)
            Gauge(label: "hub_feed_waiters").record(hub.waitingRoom?.waiterCount ?? 0)
            recordSuspended(statistics.suspended, hub: hub, registry: registry)
        } catch {
            logger.warning("reading the outbox depth failed", metadata: ["error": "\(error)"])
        }
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: render(registry))))
    }
}

/// This process's CPU, memory, descriptors and start time from `/proc/self` (Linux; empty elsewhere).
struct ProcessMetrics {
    var cpuSeconds: Double?
    var residentBytes: Int?
    var virtualBytes: Int?
    var openFDs: Int?
    var maxFDs: Int?
    var startTime: Double?

    static func read() -> ProcessMetrics {
        var metrics = ProcessMetrics()
        #if os(Linux)
            let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
            let page = sysconf(Int32(_SC_PAGESIZE))
            if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            {
                // Fields after "(comm)": state is field 3; utime 14, stime 15, starttime 22, vsize 23, rss 24.
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                func field(_ number: Int) -> Double? { fields.count > number - 3 ? Double(fields[number - 3]) : nil }
                if let user = field(14), let system = field(15), ticks > 0 {
                    metrics.cpuSeconds = (user + system) / ticks
                }
                if let vsize = field(23) { metrics.virtualBytes = Int(vsize) }
                if let rss = field(24) { metrics.residentBytes = Int(rss) * page }
                if let start = field(22), ticks > 0, let boot = bootTime() { metrics.startTime = boot + start / ticks }
            }
            metrics.openFDs = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.count
            var limit = rlimit()
            if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 {
                metrics.maxFDs = Int(clamping: limit.rlim_cur)
            }
        #endif
        return metrics
    }

    /// `btime` of /proc/stat: the boot time in seconds since the epoch.
    private static func bootTime() -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        return stat.split(separator: "\n").first { $0.hasPrefix("btime ") }.flatMap { Double($0.dropFirst(6)) }
    }

    var text: String {
        var out = ""
        func family(_ name: String, _ type: String, _ value: String?) {
            guard let value else { return }
            out += "# HELP \(name) \(MetricsExposition.help[name] ?? name)\n# TYPE \(name) \(type)\n\(name) \(value)\n"
        }
        family("process_cpu_seconds_total", "counter", cpuSeconds.map { "\($0)" })
        family("process_resident_memory_bytes", "gauge", residentBytes.map { "\($0)" })
        family("process_virtual_memory_bytes", "gauge", virtualBytes.map { "\($0)" })
        family("process_open_fds", "gauge", openFDs.map { "\($0)" })
        family("process_max_fds", "gauge", maxFDs.map { "\($0)" })
        family("process_start_time_seconds", "gauge", startTime.map { String(format: "%.2f", $0) })
        return out
    }
}

/// A listener of its own for `/metrics` (`server.metricsListen`), so Prometheus can scrape a port
/// the API's clients never reach. It serves `GET /metrics` only.
///
/// - Parameter onListening: called with the bound port once it accepts connections.
public func buildMetricsApplication(
    hub: Hub, metrics: PrometheusCollectorRegistry, host: String, port: Int, logger: Logger,
    onListening: @escaping @Sendable (_ port: Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let router = Hummingbird.Router(context: HubRequestContext.self)
    router.get(RouterPath(OperationPaths.metrics)) { _, context in
        await MetricsExposition.response(hub: hub, registry: metrics, logger: context.logger)
    }
    return Application(
        router: router, configuration: ApplicationConfiguration(address: .hostname(host, port: port)),
        onServerRunning: { channel in await onListening(channel.localAddress?.port ?? port) }, logger: logger)
}
