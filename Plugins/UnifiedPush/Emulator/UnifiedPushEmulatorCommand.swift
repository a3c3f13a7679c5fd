import ArgumentParser
import Foundation
import HubCore
import HubEmulatorKit
import HubWebPush

/// `hub emulate unifiedpush`: a UnifiedPush distributor's push server on 127.0.0.1 that answers
/// the endpoint check, decrypts the pushes it accepts (RFC 8291) and prints them.
struct UnifiedPushEmulatorCommand: EmulatorCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub emulate unifiedpush",
        abstract: "Run a UnifiedPush distributor emulator (endpoint check, aes128gcm, optional VAPID) on 127.0.0.1.",
        discussion: """
            Writes the emulator's CA certificate, creates endpoints as a UnifiedPush connector hands them to \
            an app (with their Web Push keys), prints how to point the hub at it, then prints every push it \
            accepts, decrypted, until interrupted (Ctrl-C). A GET of an endpoint answers \
            {"unifiedpush":{"version":1}} unless --check-status or --check-body says otherwise; \
            --fail-first makes pushes answer 404, 410 or 429.
            """)

    @Option(help: "Port on 127.0.0.1; 0 picks a free one.") var port = 0
    @Option(help: "Folder for ca.pem.") var directory = ".hub-emulator/unifiedpush"
    @Option(help: "Endpoints to create.") var endpoints = 3
    @Option(help: "A VAPID private key file pushes must be signed with; none: VAPID is optional.")
    var vapidKey: String?
    @Option(help: "Answer endpoint checks (GET) with this status instead of 200 and the UnifiedPush JSON.")
    var checkStatus: Int?
    @Option(help: "Answer endpoint checks (GET) with 200 and this body instead of the UnifiedPush JSON.")
    var checkBody: String?
    @Option(help: "Answer the first N pushes with --fail-status (404, 410, 413, 429, 500, 503).") var failFirst = 0
    @Option(help: "The status of the first --fail-first pushes.") var failStatus = 429
    @Option(help: "Retry-After seconds for the failing pushes.") var retryAfter: Int?

    func run(in context: EmulatorContext) async throws {
        let folder = URL(fileURLWithPath: directory, isDirectory: true).standardizedFileURL
        try EmulatorFiles.createDirectory(folder)
        var publicKey: [UInt8]?
        if let vapidKey {
            guard let pem = FileManager.default.contents(atPath: vapidKey),
                let key = WebPushEmulator.vapidPublicKey(fromPEM: String(decoding: pem, as: UTF8.self))
            else { throw ValidationError("\(vapidKey) is not a readable P-256 private key PEM") }
            publicKey = key
        }
        let emulator = try await WebPushEmulator.start(port: port, distributor: true)
        if let checkStatus { emulator.answerChecks(.status(checkStatus)) }
        if let checkBody { emulator.answerChecks(.body(checkBody)) }
        if failFirst > 0 { emulator.failNextSends(failFirst, status: failStatus, retryAfter: retryAfter) }
        let made = (0..<max(endpoints, 0)).map { _ in emulator.makeSubscription(applicationServerKey: publicKey) }
        let caPath = folder.appendingPathComponent("ca.pem").path
        try emulator.authority.writeCertificatePEM(to: caPath)
        try EmulatorFiles.restrict(caPath)

        let banner =
            ("""
            UnifiedPush distributor emulator on \(emulator.origin) (HTTP/2 and HTTP/1.1)
              CA certificate   \(caPath)
              VAPID            \(publicKey.map { "required, key \(WebPushEmulator.base64URLString($0))" } ?? "optional")
              endpoints (register each as the token of an endpoint with transport unifiedpush, any platform):
            \(made.map { "    \($0.json)" }.joined(separator: "\n"))

            Point a hub at it: in hub.yaml, add the transport
                transports: { unifiedpush: { allowedHosts: ["\(emulator.host)"], trustRoots: file:\(caPath) } }

            Accepted pushes follow, decrypted (Ctrl-C or SIGTERM stops the emulator).
            """)
        try await EmulatorConsole.printUntilTerminated(banner: banner, { emulator.received }) { message in
            "accepted on \(message.subscriptionID) ttl \(message.timeToLive) urgency \(message.urgency ?? "-") "
                + "vapid \(message.subject.isEmpty ? "-" : message.subject): \(message.text.prefix(200))"
        }
        try await emulator.shutdown()
    }
}
