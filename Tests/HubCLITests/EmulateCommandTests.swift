import Foundation
import HubAPNS
import HubCore
import HubFCM
import HubTesting
import HubWNS
import Logging
import Testing

/// `hub emulate …` as a developer runs it: started on port 0, used with what it prints, stopped by SIGTERM.
@Suite("hub emulate")
struct EmulateCommandTests {
    @Test(
        "apns: a token-auth push with the printed key and CA is accepted, dead tokens are gone (uninstalled at the first send, or at a given time), SIGTERM exits 0"
    )
    func apns() async throws {
        let workspace = try makeWorkspace()
        let dead = String(repeating: "d0", count: 32)
        let deadBefore = String(repeating: "e0", count: 32)
        // No hub.yaml in this folder: the command makes and prints a development key.
        let emulator = try await RunningEmulator(
            [
                "apns", "--config", "absent.yaml", "--port", "0", "--directory", "apns", "--unregistered", dead,
                "--unregistered", "\(deadBefore)@2026-01-02T03:04:05Z",
            ],
            in: workspace, readyWhen: "Requests follow")
        let started = Date()
        let banner = emulator.output
        let port = try #require(emulator.value(after: "on https://127.0.0.1:", in: banner).flatMap { Int($0) })
        let caPath = try #require(emulator.value(after: "CA certificate  ", in: banner))
        let keyPath = try #require(emulator.value(after: "privateKey: file:", in: banner))
        let teamID = try #require(emulator.value(after: "teamId: ", in: banner))
        let keyID = try #require(emulator.value(after: "keyId: ", in: banner))
        #expect(FileManager.default.fileExists(atPath: caPath))

        var configuration = APNSTransport.Configuration(
            productionHost: "127.0.0.1", developmentHost: "127.0.0.1", port: port, trustRoots: .pemFile(caPath))
        configuration.requestTimeout = .seconds(30)
        let transport = APNSTransport(configuration: configuration, logger: Logger(label: "emulate-test"))
        let credentials = APNSCredentials(
            authentication: .token(
                keyID: keyID, teamID: teamID, privateKey: Secret(try read(URL(fileURLWithPath: keyPath)))))
        let live = String(repeating: "a1", count: 32)
        let accepted = await transport.send(
            APNSRequest(
                deviceToken: live, environment: .production, bundleID: "com.example.app",
                payload: .alert(APNSAlertPayload(alert: APNSAlert(title: "Hello", body: "from the test")))),
            credentials: credentials)
        func background(_ token: String) async -> DeliveryOutcome {
            await transport.send(
                APNSRequest(
                    deviceToken: token, environment: .production, bundleID: "com.example.app",
                    payload: .background(APNSBackgroundPayload())),
                credentials: credentials)
        }
        let gone = await background(dead)
        let goneBefore = await background(deadBefore)
        await transport.shutdown()
        #expect(accepted == .accepted, "\(emulator.output)")
        // Uninstalled at its first send: after a hub registered the token, so a hub drops it.
        guard case .endpointGone(let since?, _) = gone else {
            Issue.record("a token given with --unregistered must be gone with a time, got \(gone)")
            return
        }
        #expect(since >= started.addingTimeInterval(-1), "\(since) is before the emulator started (\(started))")
        guard case .endpointGone(let sinceGiven?, _) = goneBefore else {
            Issue.record("a token given with --unregistered TOKEN@TIME must be gone with that time, got \(goneBefore)")
            return
        }
        #expect(sinceGiven == Date(timeIntervalSince1970: 1_767_323_045), "\(sinceGiven)")
        #expect(try await emulator.waitFor("410 Unregistered background com.example.app"))
        #expect(emulator.output.contains("200 alert com.example.app → a1a1a1a1…(64)"), "\(emulator.output)")

        emulator.signal(SIGTERM)
        #expect(await emulator.waitForExit() == 0, "\(emulator.output)\n\(emulator.errors)")
    }

    @Test("fcm: a send with the printed service account and CA is accepted and printed, SIGTERM exits 0")
    func fcm() async throws {
        let workspace = try makeWorkspace()
        let emulator = try await RunningEmulator(
            ["fcm", "--port", "0", "--directory", "fcm"], in: workspace, readyWhen: "Accepted messages follow")
        let banner = emulator.output
        let base = try #require(emulator.value(after: "FCM emulator on ", in: banner))
        let caPath = try #require(emulator.value(after: "CA certificate   ", in: banner))
        let accountPath = try #require(emulator.value(after: "service account  ", in: banner))
        let account = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: accountPath)))
                as? [String: Any])
        let credentials = FCMCredentials(
            projectID: try #require(account["project_id"] as? String),
            clientEmail: try #require(account["client_email"] as? String),
            privateKeyID: account["private_key_id"] as? String,
            privateKey: Secret(try #require(account["private_key"] as? String)),
            tokenURI: try #require(account["token_uri"] as? String))

        let transport = try FCMTransport(
            configuration: FCMConfiguration(sendBaseURL: base, trustRootsPEM: [try read(URL(fileURLWithPath: caPath))]),
            logger: Logger(label: "emulate-test"))
        let app = CrossDeviceApp(
            id: "notes.contoso.com", name: "Notes", platforms: [.android: ["com.contoso.notes"]],
            credentials: PushCredentials([credentials]))
        let outcome = await transport.send(
            Self.outbound(app: app, platform: .android, appID: "com.contoso.notes", transport: .fcm, token: "emulate-1")
        )
        try await transport.shutdown()
        #expect(outcome == .accepted, "\(emulator.output)")
        #expect(try await emulator.waitFor("accepted token emulate-1"))

        emulator.signal(SIGTERM)
        #expect(await emulator.waitForExit() == 0, "\(emulator.output)\n\(emulator.errors)")
    }

    @Test(
        "apns: aioapns (PyPI) pushes with the printed key and CA; an --unregistered token answers 410 with a time",
        .enabled(if: PythonScript.canImport("aioapns") || ProcessInfo.processInfo.environment["CI"] == "true"))
    func apnsWithAioapns() async throws {
        let workspace = try makeWorkspace()
        let dead = String(repeating: "d1", count: 32)
        let emulator = try await RunningEmulator(
            ["apns", "--config", "absent.yaml", "--port", "0", "--directory", "apns", "--unregistered", dead],
            in: workspace, readyWhen: "Requests follow")
        let banner = emulator.output
        let port = try #require(emulator.value(after: "on https://127.0.0.1:", in: banner))
        let caPath = try #require(emulator.value(after: "CA certificate  ", in: banner))
        let keyPath = try #require(emulator.value(after: "privateKey: file:", in: banner))
        let teamID = try #require(emulator.value(after: "teamId: ", in: banner))
        let keyID = try #require(emulator.value(after: "keyId: ", in: banner))
        // aioapns as an app server uses it, its production host and port pointed at the emulator.
        let script = """
            import asyncio, ssl, sys
            import aioapns.connection as connection
            from aioapns import APNs, NotificationRequest, PushType
            connection.APNsTLSClientProtocol.APNS_PORT = int(sys.argv[1])
            connection.APNsProductionClientProtocol.APNS_SERVER = '127.0.0.1'
            async def main():
                client = APNs(key=open(sys.argv[3]).read(), key_id=sys.argv[4], team_id=sys.argv[5],
                              topic='com.example.app', use_sandbox=False,
                              ssl_context=ssl.create_default_context(cafile=sys.argv[2]))
                live = await client.send_notification(NotificationRequest(
                    device_token='b2' * 32, message={'aps': {'alert': {'title': 'Hello', 'body': 'from aioapns'}}},
                    push_type=PushType.ALERT))
                print('live', live.is_successful, live.status)
                gone = await client.send_notification(NotificationRequest(
                    device_token=sys.argv[6], message={'aps': {'content-available': 1}},
                    push_type=PushType.BACKGROUND, priority=5))
                print('dead', gone.status, gone.description, gone.timestamp is not None)
            asyncio.run(main())
            """
        let output = try await PythonScript.run(script, arguments: [port, caPath, keyPath, keyID, teamID, dead])
        let lines = output.split(separator: "\n").map(String.init)
        #expect(lines.first == "live True 200", "\(output)")
        #expect(lines.last == "dead 410 Unregistered True", "\(output)")
        #expect(try await emulator.waitFor("410 Unregistered background com.example.app"), "\(emulator.output)")
        #expect(emulator.output.contains("200 alert com.example.app → b2b2b2b2…(64)"), "\(emulator.output)")

        emulator.signal(SIGTERM)
        #expect(await emulator.waitForExit() == 0, "\(emulator.output)\n\(emulator.errors)")
    }

    @Test(
        "fcm: firebase-admin (PyPI) sends with the printed service account and CA; an invalid token is refused",
        .enabled(if: PythonScript.canImport("firebase_admin") || ProcessInfo.processInfo.environment["CI"] == "true"))
    func fcmWithFirebaseAdmin() async throws {
        let workspace = try makeWorkspace()
        let emulator = try await RunningEmulator(
            ["fcm", "--port", "0", "--directory", "fcm", "--invalid-token", "not-a-token"], in: workspace,
            readyWhen: "Accepted messages follow")
        let banner = emulator.output
        let base = try #require(emulator.value(after: "FCM emulator on ", in: banner))
        let caPath = try #require(emulator.value(after: "CA certificate   ", in: banner))
        let accountPath = try #require(emulator.value(after: "service account  ", in: banner))
        // firebase-admin as an app server uses it: its service-account file (whose token_uri is the
        // emulator; google-auth still signs for Google's token URL) and its FCM URL, pointed here.
        let script = """
            import sys
            import firebase_admin
            from firebase_admin import credentials, exceptions, messaging
            messaging._MessagingService.FCM_URL = sys.argv[1] + '/v1/projects/{0}/messages:send'
            firebase_admin.initialize_app(credentials.Certificate(sys.argv[2]))
            def message(token):
                return messaging.Message(
                    token=token, data={'kind': 'tap'},
                    notification=messaging.Notification(title='Hello', body='from firebase-admin'),
                    android=messaging.AndroidConfig(priority='high', ttl=120))
            print(messaging.send(message('from-firebase-admin')))
            try:
                messaging.send(message('not-a-token'))
                print('accepted')
            except exceptions.InvalidArgumentError as error:
                print('refused:', error)
            """
        let output = try await PythonScript.run(
            script, arguments: [base, accountPath], environment: ["REQUESTS_CA_BUNDLE": caPath])
        let lines = output.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("projects/") == true && lines.first?.contains("/messages/") == true, "\(output)")
        #expect(
            lines.last?.hasPrefix("refused: The registration token is not a valid FCM registration token") == true,
            "\(output)")
        #expect(
            try await emulator.waitFor(
                "accepted token from-firebase-admin [kind=tap] notification \"Hello\" priority high ttl 120s"),
            "\(emulator.output)")

        emulator.signal(SIGTERM)
        #expect(await emulator.waitForExit() == 0, "\(emulator.output)\n\(emulator.errors)")
    }

    @Test("wns: a raw notification to a printed channel with the printed secret is accepted, SIGTERM exits 0")
    func wns() async throws {
        let workspace = try makeWorkspace()
        let emulator = try await RunningEmulator(
            ["wns", "--port", "0", "--directory", "wns", "--channels", "1"], in: workspace,
            readyWhen: "Accepted notifications follow")
        let banner = emulator.output
        let tokenURL = try #require(emulator.value(after: "classic token    ", in: banner))
        let sid = try #require(emulator.value(after: "package SID ", in: banner))
        let secret = try #require(emulator.value(after: "client secret    ", in: banner))
        let caPath = try #require(emulator.value(after: "CA certificate   ", in: banner))
        let channel = try #require(
            banner.split(separator: "\n").first { $0.hasPrefix("    https://") }.map {
                $0.trimmingCharacters(in: .whitespaces)
            })
        let host = try #require(URL(string: channel)?.host)

        let transport = try WNSTransport(
            configuration: WNSConfiguration(
                classicTokenURL: tokenURL, channelPolicy: WNSChannelPolicy(additionalHosts: [host]),
                trustRootsPEM: [try read(URL(fileURLWithPath: caPath))]))
        let app = CrossDeviceApp(
            id: "notes.contoso.com", name: "Notes", platforms: [.windows: ["Contoso.Notes_8wekyb3d8bbwe"]],
            credentials: PushCredentials([
                WNSCredentials(authentication: .packageSID(sid: sid, secret: Secret(secret)))
            ]))
        let outcome = await transport.send(
            Self.outbound(
                app: app, platform: .windows, appID: "Contoso.Notes_8wekyb3d8bbwe", transport: .wns, token: channel))
        try await transport.shutdown()
        #expect(outcome == .accepted, "\(emulator.output)")
        #expect(try await emulator.waitFor("accepted wns/raw"))

        emulator.signal(SIGTERM)
        #expect(await emulator.waitForExit() == 0, "\(emulator.output)\n\(emulator.errors)")
    }

    /// A shoulder tap to one endpoint of `app`.
    static func outbound(
        app: CrossDeviceApp, platform: Platform, appID: String, transport: TransportID, token: String
    ) -> OutboundDelivery {
        let endpoint = Endpoint(
            id: "device", appId: app.id, userId: "alice", platform: platform, platformAppId: appID,
            transport: transport, token: token, registeredAt: Date())
        return .fixture(.shoulderTap, to: endpoint, app: app, changeVersion: 1)
    }
}

/// A `hub emulate …` process, its standard output collected as it comes.
final class RunningEmulator: @unchecked Sendable {
    let process = Process()
    private let lock = NSLock()
    private var outText = ""
    private var errorText = ""

    /// Starts `hub emulate <arguments>` in `directory` and waits until its output contains `readyWhen`.
    init(_ arguments: [String], in directory: URL, readyWhen marker: String) async throws {
        process.executableURL = HubProcess.executable
        process.arguments = ["emulate"] + arguments
        process.currentDirectoryURL = directory
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        stdout.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.withLock { self.outText += String(decoding: data, as: UTF8.self) }
        }
        stderr.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.withLock { self.errorText += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
        _ = await eventually(timeout: .seconds(60)) { !process.isRunning || output.contains(marker) }
        guard output.contains(marker) else {
            process.terminate()
            throw EmulatorDidNotStart(output: output + errors)
        }
    }

    var output: String { lock.withLock { outText } }
    var errors: String { lock.withLock { errorText } }

    /// The text after `prefix` in `text`, up to the next space, comma or line end.
    func value(after prefix: String, in text: String) -> String? {
        guard let range = text.range(of: prefix) else { return nil }
        let value = text[range.upperBound...].prefix { !$0.isWhitespace && $0 != "," && $0 != ")" }
        return value.isEmpty ? nil : String(value)
    }

    /// Waits until the output contains `text` (the commands poll what they print).
    func waitFor(_ text: String) async throws -> Bool {
        await eventually { output.contains(text) }
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Waits for the process to exit, at most `timeout` seconds. - Returns: its status (negative
    /// after a death by signal), or nil.
    func waitForExit(timeout: TimeInterval = 20) async -> Int32? {
        await process.waitForExit(timeout: timeout)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

struct EmulatorDidNotStart: Error, CustomStringConvertible {
    let output: String
    var description: String { "hub emulate did not start:\n\(output)" }
}
