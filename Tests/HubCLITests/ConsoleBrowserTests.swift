import Foundation
import HubTesting
import Testing

/// The web console in a real browser: `Tests/Browser/console_test.py` drives headless Chromium
/// (Debian's `chromium`, through Playwright for Python) against a real `hub serve` whose app has
/// devices on the APNs and FCM emulators (`hub emulate`): one APNs token is dead (its endpoint
/// turns inactive), one FCM delivery is answered 503 once and retried.
///
/// `.ci/run` installs Chromium and Playwright; elsewhere the test runs when both are there, and
/// always under `CI=true`, where a missing browser fails it. The screenshots go to
/// `HUB_CONSOLE_SCREENSHOTS` (`docs/screenshots` refreshes docs/operating.md's), else a temporary folder.
@Suite("console in a real browser", .serialized)
struct ConsoleBrowserTests {
    static let chromium = ProcessInfo.processInfo.environment["HUB_CHROMIUM"] ?? "/usr/bin/chromium"
    static let browserAvailable =
        FileManager.default.isExecutableFile(atPath: chromium) && PythonScript.canImport("playwright.sync_api")
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test(
        "sign-in, every page, a test send and screenshots in headless Chromium, on devices across the emulators",
        .enabled(
            if: browserAvailable || ProcessInfo.processInfo.environment["CI"] == "true",
            "needs /usr/bin/chromium and Playwright for Python (.ci/run installs both); never skipped with CI=true"),
        .timeLimit(.minutes(5)))
    func consoleInChromium() async throws {
        try #require(
            Self.browserAvailable,
            "the browser test needs \(Self.chromium) (apt-get install chromium) and Playwright for Python (pip install playwright); .ci/run installs both"
        )
        let workspace = try makeWorkspace()
        let dead = String(repeating: "de", count: 32)
        let apns = try await RunningEmulator(
            ["apns", "--config", "absent.yaml", "--port", "0", "--directory", "apns", "--unregistered", dead],
            in: workspace, readyWhen: "Requests follow")
        let fcm = try await RunningEmulator(
            ["fcm", "--port", "0", "--directory", "fcm", "--fail-first", "1", "--retry-after", "1"], in: workspace,
            readyWhen: "Accepted messages follow")
        let apnsPort = try #require(apns.value(after: "on https://127.0.0.1:", in: apns.output))
        let apnsCA = try #require(apns.value(after: "CA certificate  ", in: apns.output))
        let keyPath = try #require(apns.value(after: "privateKey: file:", in: apns.output))
        let teamID = try #require(apns.value(after: "teamId: ", in: apns.output))
        let keyID = try #require(apns.value(after: "keyId: ", in: apns.output))
        let fcmBase = try #require(fcm.value(after: "FCM emulator on ", in: fcm.output))
        let fcmCA = try #require(fcm.value(after: "CA certificate   ", in: fcm.output))
        let account = try #require(fcm.value(after: "service account  ", in: fcm.output))
        try Self.writeConfig(
            in: workspace,
            credentials:
                "credentials: { apns: { teamId: \(teamID), keyId: \(keyID), privateKey: file:\(keyPath) }, fcm: { serviceAccount: file:\(account) } }"
        )
        let hub = try await RunningHub(
            directory: workspace,
            environment: [
                "HUB_TRANSPORTS_APNS_SERVER": "127.0.0.1:\(apnsPort)", "HUB_TRANSPORTS_APNS_TRUST_ROOTS": apnsCA,
                "HUB_TRANSPORTS_FCM_SEND_URL": fcmBase, "HUB_TRANSPORTS_FCM_TRUST_ROOTS": fcmCA,
            ])
        let http = HubHTTP(base: hub.baseURL)

        // alice: an iPhone, an iPad whose token is dead, a Pixel (its first push is answered 503
        // and retried) and a Surface that polls; bob: a phone. One publish reaches alice's devices.
        let devices: [(user: String, id: String, json: String)] = [
            ("alice", "iphone", Self.apnsDevice(String(repeating: "a1", count: 32))),
            ("alice", "ipad", Self.apnsDevice(dead)),
            (
                "alice", "pixel",
                #"{"platform":"android","appId":"com.contoso.notes","transport":"fcm","token":"pixel-1"}"#
            ),
            (
                "alice", "surface",
                #"{"platform":"windows","appId":"Contoso.Notes_8wekyb3d8bbwe","transport":"polling"}"#
            ),
            ("bob", "phone", #"{"platform":"android","appId":"com.contoso.notes","transport":"fcm","token":"bob-1"}"#),
        ]
        for device in devices {
            let registered = try await http.request(
                .PUT, "/v1/apps/notes.contoso.com/me/endpoints/\(device.id)",
                bearer: try await http.userToken(device.user), json: device.json)
            #expect(registered.status == 201, "\(device.id): \(registered.body)")
        }
        let published = try await http.request(
            .POST, "/v1/apps/notes.contoso.com/users/alice/notifications", bearer: http.publisherKey,
            json:
                #"{"appNotificationId":"welcome","deliveryMode":"visible","payload":{"visualContent":{"title":"Welcome","body":"to Contoso Notes"}}}"#
        )
        #expect(published.status == 201, "\(published.body)")
        let settled = try await eventually(timeout: .seconds(30)) {
            let inactive = try await http.request(
                .GET, "/v1/apps/notes.contoso.com/endpoints?state=inactive", bearer: http.adminToken
            ).body
            return inactive.contains(#""id":"ipad""#) && fcm.output.contains("accepted token pixel-1")
                && apns.output.contains("200 alert com.example.app → a1a1a1a1")
        }
        #expect(settled, "\(hub.log)\n\(apns.output)\n\(fcm.output)")
        let metrics = try await http.request(.GET, "/metrics", bearer: "").body
        #expect(
            metrics.split(separator: "\n").contains {
                $0.hasPrefix("hub_deliveries_total") && $0.contains(#"outcome="retry""#)
                    && $0.contains(#"transport="fcm""#)
            }, "the Pixel's first push must have been retried:\n\(metrics)")

        let screenshots =
            ProcessInfo.processInfo.environment["HUB_CONSOLE_SCREENSHOTS"].map {
                URL(fileURLWithPath: $0, relativeTo: Self.root).path
            } ?? workspace.appendingPathComponent("screenshots").path
        let output: String
        do {
            output = try await PythonScript.run(
                try String(
                    contentsOf: Self.root.appendingPathComponent("Tests/Browser/console_test.py"), encoding: .utf8),
                arguments: [
                    "--base", hub.baseURL, "--token-file", workspace.appendingPathComponent("admin.token").path,
                    "--app", "notes.contoso.com",
                    "--app-ids", "com.example.app,com.contoso.notes,Contoso.Notes_8wekyb3d8bbwe",
                    "--user", "alice", "--endpoints", "iphone,pixel,surface,phone", "--dead-endpoint", "ipad",
                    "--dead-reason", "Unregistered", "--notification", "welcome", "--delivered", "iphone,pixel",
                    "--retried", "pixel", "--polled", "surface", "--screenshots", screenshots,
                ], environment: ["HUB_CHROMIUM": Self.chromium])
        } catch let failure as PythonScript.Failure {
            Issue.record("\(failure)\n\(hub.log)")
            throw failure
        }
        #expect(!output.contains("FAILED"), "\(output)")
        #expect(output.contains("ok the test send succeeded"), "\(output)")
        // The test send went through the hub to alice's devices.
        let sentID = try #require(
            output.split(separator: "\n").first { $0.hasPrefix("sent ") }.map { String($0.dropFirst(5)) })
        let history = try await http.request(
            .GET, "/v1/apps/notes.contoso.com/users/alice/notifications?status=active", bearer: http.publisherKey)
        #expect(history.body.contains(sentID), "\(history.body)")
        for page in ["login", "apps", "app", "endpoints-active", "endpoints-inactive", "config", "send", "phone-apps"] {
            #expect(FileManager.default.fileExists(atPath: "\(screenshots)/\(page).png"), "\(page).png")
        }
        #expect(!hub.log.contains("test-admin-token-0123456789"), "the admin token must never be logged")
        #expect(hub.log.contains("console sign-in failed"), "\(hub.log)")

        hub.signal(SIGTERM)
        #expect(await hub.waitForExit() == 0)
        apns.signal(SIGTERM)
        fcm.signal(SIGTERM)
        _ = await apns.waitForExit()
        _ = await fcm.waitForExit()
    }

    static func apnsDevice(_ token: String) -> String {
        #"{"platform":"ios","appId":"com.example.app","transport":"apns","token":"\#(token)","environment":"production"}"#
    }

    /// hub.yaml with one app on iOS (the emulator's development bundle ID), Android and Windows.
    static func writeConfig(in directory: URL, credentials: String) throws {
        try writeServeFiles(
            in: directory,
            yaml: """
                server: { listen: "127.0.0.1:0", adminToken: file:admin.token, instanceId: console-test }
                store: { sqlite: { path: data/hub.sqlite } }
                apps:
                  - id: notes.contoso.com
                    name: Contoso Notes
                    platforms:
                      ios: { appIds: [com.example.app] }
                      android: { appIds: [com.contoso.notes] }
                      windows: { appIds: [Contoso.Notes_8wekyb3d8bbwe] }
                    identity:
                      - { issuer: "https://login.contoso.com", audiences: [contoso-notes], secret: file:user.secret }
                    publishers: [ { name: backend, key: file:publisher.key } ]
                    domain: { verification: hub-verify=0123456789abcdef0123456789abcdef }
                    \(credentials)
                """)
    }
}
