import ArgumentParser
import Foundation
import HubCore
import HubEmulatorKit

/// `hub emulate apns`: Apple's HTTP/2 provider API on 127.0.0.1, enforcing what APNs enforces
/// (provider tokens, headers, topics, payloads), for developing against a hub without Apple.
struct APNSEmulatorCommand: EmulatorCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub emulate apns",
        abstract: "Run an APNs emulator (HTTP/2 over TLS) on 127.0.0.1 that checks what Apple checks.",
        discussion: """
            Registers the token keys (.p8) and iOS bundle IDs of the apps in --config, or makes a \
            development key when none has one. Writes the emulator's CA certificate, prints how to point \
            the hub at it, then prints every request it answers until interrupted (Ctrl-C).
            """)

    @Option(help: "Path of hub.yaml.") var config = "hub.yaml"
    @Option(help: "Port on 127.0.0.1; 0 picks a free one.") var port = 0
    @Option(help: "Folder for ca.pem (and a generated AuthKey .p8).") var directory = ".hub-emulator/apns"
    @Option(help: "The environment it plays: production or development.") var environment = "production"
    @Option(help: "SETTINGS_MAX_CONCURRENT_STREAMS after a connection's first valid request.")
    var maxConcurrentStreams = 1000
    @Option(
        help: """
            A device token that answers 410 Unregistered (repeatable), with the time of its first request \
            as the time the app was uninstalled, or TOKEN@TIME for another (ISO 8601, e.g. \
            2026-11-25T09:00:00Z; a hub keeps a token registered again after it).
            """)
    var unregistered: [String] = []
    @Option(help: "A PEM CA file that client certificates (.p12 credentials) must chain to.") var clientCA: String?
    @Flag(help: "Do not print each request.") var quiet = false

    func run(in context: EmulatorContext) async throws {
        guard let environment = APNSEnvironment.known.first(where: { $0.rawValue == self.environment }) else {
            throw ValidationError("--environment must be production or development")
        }
        let folder = URL(fileURLWithPath: directory, isDirectory: true).standardizedFileURL
        try EmulatorFiles.createDirectory(folder)
        var settings = APNSEmulator.Configuration()
        settings.environment = environment
        settings.port = port
        settings.maxConcurrentStreams = maxConcurrentStreams
        settings.recordsRequests = false
        if let clientCA {
            settings.clientCertificateTrustRootsPEM = [try String(contentsOfFile: clientCA, encoding: .utf8)]
        }
        if !quiet {
            settings.onRequest = { request in
                let token = "\(request.deviceToken.prefix(8))…(\(request.deviceToken.count))"
                let outcome = request.reason.map { "\(request.status) \($0)" } ?? "\(request.status)"
                let note = request.note.map { " — \($0)" } ?? ""
                EmulatorConsole.emit(
                    "\(outcome) \(request.header("apns-push-type") ?? "-") \(request.header("apns-topic") ?? "-") "
                        + "→ \(token) (\(request.payload.count) bytes)\(note)")
            }
        }
        let dead = try unregistered.map(Self.unregisteredToken)
        let emulator = try await APNSEmulator.start(settings)
        for (token, since) in dead {
            if let since {
                emulator.markUnregistered(token: token, at: since)
            } else {
                emulator.markUnregisteredFromFirstSend(token: token)
            }
        }
        let caPath = folder.appendingPathComponent("ca.pem").path
        try emulator.certificateAuthority.writeCertificatePEM(to: caPath)
        try EmulatorFiles.restrict(caPath)
        let registered = try register(on: emulator, folder: folder, context: context)

        let banner =
            ("""
            APNs emulator (\(environment)) on https://127.0.0.1:\(emulator.port)
              CA certificate  \(caPath)
            \(registered.joined(separator: "\n"))

            Point a hub at it (both environments go to the emulator):
                HUB_TRANSPORTS_APNS_SERVER=127.0.0.1:\(emulator.port) HUB_TRANSPORTS_APNS_TRUST_ROOTS=\(caPath) hub serve --config \(config)

            Requests follow (Ctrl-C or SIGTERM stops the emulator).
            """)
        try await EmulatorConsole.runUntilTerminated(banner: banner) {}
        await emulator.shutdown()
    }

    /// Registers the token keys of hub.yaml's apps, or a new development key; returns lines to print.
    private func register(on emulator: APNSEmulator, folder: URL, context: EmulatorContext) throws -> [String] {
        var apps: [CrossDeviceApp] = []
        var referenced: Set<String> = []
        if FileManager.default.fileExists(atPath: config) {
            let read = context.apps(config)
            apps = read ?? []
            referenced = EmulatorFiles.referencedFiles(inConfig: config)
            if read == nil {
                context.printError(
                    "\(config) has errors (above): its apps' keys are not registered until they are fixed")
            }
        }
        var lines: [String] = []
        for app in apps {
            let bundles = app.platforms[.ios] ?? []
            switch app.credentials.apns?.authentication {
            case .token(let keyID, let teamID, let privateKey):
                let key = try APNSTestKey(keyID: keyID, teamID: teamID, privateKeyPEM: privateKey.reveal())
                emulator.register(key, bundleIDs: bundles)
                lines.append("  \(app.id): team \(teamID), key \(keyID) → \(bundles.joined(separator: ", "))")
            case .certificate:
                let how = clientCA == nil ? "pass --client-ca with the CA of its certificate" : "via --client-ca"
                lines.append("  \(app.id): certificate credentials (\(how))")
            case nil:
                continue
            }
        }
        guard lines.isEmpty else { return lines }
        let keyPath = folder.appendingPathComponent("AuthKey_EMULATOR01.p8").path
        // A development key made before is reused, never replaced: hub.yaml may point at it.
        let key: APNSTestKey
        let made: String
        if let existing = FileManager.default.contents(atPath: keyPath) {
            key = try APNSTestKey(
                keyID: "EMULATOR01", teamID: "EMULATORTM", privateKeyPEM: String(decoding: existing, as: UTF8.self))
            made = "reusing the development key \(keyPath)"
        } else if referenced.contains(keyPath) {
            throw ValidationError(
                "\(config) refers to \(keyPath), which is missing; restore it or fix hub.yaml")
        } else {
            key = APNSTestKey(keyID: "EMULATOR01", teamID: "EMULATORTM")
            try EmulatorFiles.create(keyPath, contents: Data(key.privateKeyPEM.utf8))
            made = "made a development key"
        }
        let bundles = apps.flatMap { $0.platforms[.ios] ?? [] }
        let bundleIDs = bundles.isEmpty ? ["com.example.app"] : bundles
        emulator.register(key, bundleIDs: bundleIDs)
        return [
            "  no app in \(config) has a token key; \(made) for \(bundleIDs.joined(separator: ", ")):",
            "    credentials: { apns: { teamId: \(key.teamID), keyId: \(key.keyID), privateKey: file:\(keyPath) } }",
        ]
    }

    /// `TOKEN` (uninstalled at its first request) or `TOKEN@TIME` (uninstalled at TIME, ISO 8601).
    static func unregisteredToken(_ text: String) throws -> (token: String, since: Date?) {
        guard let at = text.lastIndex(of: "@") else { return (text, nil) }
        let time = String(text[text.index(after: at)...])
        guard let since = try? Date.ISO8601FormatStyle().parse(time) else {
            throw ValidationError(
                "--unregistered \(text): '\(time)' is not an ISO 8601 time such as 2026-11-25T09:00:00Z")
        }
        return (String(text[..<at]), since)
    }
}
