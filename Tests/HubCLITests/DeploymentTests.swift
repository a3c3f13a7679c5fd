import Foundation
import HubTesting
import Testing
import Yams

/// The Dockerfile, compose.yaml and the systemd unit, checked by running what they set up.
@Suite("deployment artefacts")
struct DeploymentTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let databaseURL = ProcessInfo.processInfo.environment["HUB_TEST_DATABASE_URL"]

    /// What the Dockerfile's run stage sets: ENV, ENTRYPOINT + CMD, HEALTHCHECK's command, COPYs from the context.
    struct Image {
        var environment: [String: String] = [:]
        var entrypoint: [String] = []
        var command: [String] = []
        var healthcheck: [String] = []
        var copies: [(source: String, destination: String)] = []
        var user: String?

        init(dockerfile: String) throws {
            // The last stage only: everything after the last FROM.
            let stage = dockerfile.components(separatedBy: "\nFROM ").last ?? dockerfile
            for raw in stage.split(separator: "\n") {
                let line = raw.trimmingCharacters(in: .whitespaces)
                if line.hasPrefix("ENV ") {
                    let assignment = line.dropFirst(4)
                    guard let equals = assignment.firstIndex(of: "=") else { continue }
                    var value = String(assignment[assignment.index(after: equals)...])
                    if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                        value = String(value.dropFirst().dropLast())
                    }
                    environment[String(assignment[..<equals])] = value
                } else if line.hasPrefix("ENTRYPOINT ") {
                    entrypoint = try Self.array(line.dropFirst(11))
                } else if line.hasPrefix("CMD ") {
                    command = try Self.array(line.dropFirst(4))
                } else if line.hasPrefix("HEALTHCHECK "), let range = line.range(of: " CMD ") {
                    healthcheck = try Self.array(line[range.upperBound...])
                } else if line.hasPrefix("COPY "), !line.contains("--from") {
                    let parts = line.split(separator: " ")
                    copies.append((String(parts[1]), String(parts[2])))
                } else if line.hasPrefix("USER ") {
                    user = String(line.dropFirst(5))
                }
            }
        }

        static func array(_ json: Substring) throws -> [String] {
            try JSONDecoder().decode([String].self, from: Data(json.utf8))
        }
    }

    /// The compose file's hub service: environment and command.
    static func composeHub() throws -> (environment: [String: String], command: [String]) {
        let text = try String(contentsOf: root.appendingPathComponent("compose.yaml"), encoding: .utf8)
        let compose = try #require(try Yams.load(yaml: text) as? [String: Any])
        let services = try #require(compose["services"] as? [String: Any])
        let hub = try #require(services["hub"] as? [String: Any])
        let environment = (hub["environment"] as? [String: Any] ?? [:]).mapValues { "\($0)" }
        return (environment, hub["command"] as? [String] ?? [])
    }

    @Test(
        "the container's command line and environment (Dockerfile + compose.yaml) run a hub on PostgreSQL; its HEALTHCHECK passes",
        .enabled(if: databaseURL != nil))
    func containerOnPostgres() async throws {
        let image = try Image(
            dockerfile: String(contentsOf: Self.root.appendingPathComponent("Dockerfile"), encoding: .utf8))
        #expect(image.user == "hub", "the image runs as a non-root user")
        #expect(image.entrypoint.first == "/usr/local/bin/hub")
        #expect(image.healthcheck.prefix(2) == ["/usr/local/bin/hub", "health"])
        let compose = try Self.composeHub()

        // The container's file system, under a temporary folder: its COPYs and its volume.
        let workspace = try makeWorkspace()
        func local(_ text: String) -> String {
            text.replacingOccurrences(of: "/etc/hub", with: workspace.path + "/etc/hub")
                .replacingOccurrences(of: "/var/lib/hub", with: workspace.path + "/var/lib/hub")
        }
        for copy in image.copies {
            let destination = URL(fileURLWithPath: local(copy.destination))
            try FileManager.default.createDirectory(
                at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: Self.root.appendingPathComponent(copy.source), to: destination)
        }
        try FileManager.default.createDirectory(
            at: workspace.appendingPathComponent("var/lib/hub"), withIntermediateDirectories: true)

        // Compose's values win over the image's; the database is the local one, the ports free ones.
        let apiPort = try FreePort.pick()
        let metricsPort = try FreePort.pick()
        var environment = image.environment.merging(compose.environment) { $1 }.mapValues {
            local($0).replacingOccurrences(of: ":8080", with: ":\(apiPort)")
                .replacingOccurrences(of: ":9464", with: ":\(metricsPort)")
        }
        #expect(environment["HUB_DATABASE_URL"]?.contains("@postgres:5432/") == true)
        environment["HUB_DATABASE_URL"] = Self.databaseURL  // the suite runs only when it is set
        let command = (compose.command.isEmpty ? image.command : compose.command).map(local)
        let hub = try await RunningHub(
            directory: workspace.appendingPathComponent("var/lib/hub"), environment: environment,
            command: Array(image.entrypoint.dropFirst()) + command)
        #expect(hub.port == apiPort)

        let health = try await HubProcess.run(
            Array(image.healthcheck.dropFirst()).map { $0.replacingOccurrences(of: ":8080", with: ":\(apiPort)") },
            in: workspace)
        #expect(health.status == 0, "\(health.stderr)")
        let key = try read(workspace.appendingPathComponent("etc/hub/examples/dev/publisher.key"))
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let http = HubHTTP(base: hub.baseURL)
        let published = try await http.request(
            .POST, "/v1/apps/notes.contoso.com/users/alice/notifications", bearer: key,
            json: #"{"appNotificationId":"from-compose","payload":{"visualContent":{"title":"Hi"}}}"#)
        #expect(published.status == 201 || published.status == 200, "\(published.body)")
        let metrics = try await HubHTTP(base: "http://127.0.0.1:\(metricsPort)").request(.GET, "/metrics", bearer: "")
        #expect(metrics.status == 200)

        // JSON logs, on PostgreSQL, and a quiet start: no warnings (ours or PostgresNIO's).
        let lines = hub.log.split(separator: "\n")
        #expect(lines.allSatisfy { $0.hasPrefix("{") }, "JSON logs: \(hub.log)")
        #expect(hub.log.contains(#""message":"store: postgres""#), "\(hub.log)")
        #expect(!hub.log.contains(#""level":"warning""#), "\(hub.log)")
        #expect(!hub.log.contains(try #require(Self.databaseURL)), "the URL holds the password")
        hub.signal(SIGTERM)
        #expect(await hub.waitForExit() == 0, "\(hub.log)")
    }

    @Test(
        "the systemd unit verifies with systemd-analyze and is hardened",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze")))
    func systemdUnit() async throws {
        let unit = try String(
            contentsOf: Self.root.appendingPathComponent("deploy/notification-hub.service"), encoding: .utf8)
        for setting in [
            "DynamicUser=yes", "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
            "CapabilityBoundingSet=", "StateDirectory=notification-hub", "KillSignal=SIGTERM",
        ] {
            #expect(unit.contains("\n\(setting)\n"), "\(setting) missing")
        }
        // The unit as installed, with ExecStart at the binary under test (verify needs it to exist).
        let folder = try makeWorkspace()
        let copy = folder.appendingPathComponent("notification-hub.service")
        try unit.replacingOccurrences(of: "/usr/local/bin/hub", with: HubProcess.executable.path)
            .write(to: copy, atomically: true, encoding: .utf8)
        let verify = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/systemd-analyze"), ["verify", copy.path])
        let output = verify.stdout + verify.stderr
        #expect(verify.status == 0 && output.isEmpty, "systemd-analyze verify: \(output)")
        // The unit's environment is hub.yaml overrides the hub accepts.
        let stored = unit.split(separator: "\n").filter { $0.hasPrefix("Environment=") }.map {
            $0.dropFirst("Environment=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        var environment: [String: String] = [:]
        for assignment in stored {
            let parts = assignment.split(separator: "=", maxSplits: 1).map(String.init)
            environment[parts[0]] = parts[1].replacingOccurrences(of: "/var/lib/notification-hub", with: folder.path)
        }
        #expect(environment["HUB_STORE"] != nil)
        try FileManager.default.copyItem(
            at: Self.root.appendingPathComponent("hub.yaml"), to: folder.appendingPathComponent("hub.yaml"))
        try FileManager.default.copyItem(
            at: Self.root.appendingPathComponent("examples"), to: folder.appendingPathComponent("examples"))
        let check = try await HubProcess.run(["config", "print"], in: folder, environment: environment)
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stdout.contains("path: \(folder.path)/hub.sqlite"), "\(check.stdout)")
    }
}
