import ArgumentParser
import Foundation
import HubCore
import HubEmulatorKit

/// `hub emulate webpush`: a browser push service (RFC 8030) on 127.0.0.1 that verifies VAPID,
/// decrypts what it accepts (RFC 8291) and prints it, with subscriptions ready for web endpoints.
struct WebPushEmulatorCommand: EmulatorCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub emulate webpush",
        abstract: "Run a Web Push service emulator (VAPID, aes128gcm) on 127.0.0.1.",
        discussion: """
            Writes the emulator's CA certificate and, unless it exists, a VAPID key (vapid.pem), creates \
            subscriptions bound to that key as a browser's pushManager.subscribe would, prints how to \
            point the hub at it, then prints every message it accepts, decrypted, until interrupted (Ctrl-C).
            """)

    @Option(help: "Port on 127.0.0.1; 0 picks a free one.") var port = 0
    @Option(help: "Folder for ca.pem and vapid.pem.") var directory = ".hub-emulator/webpush"
    @Option(help: "Subscriptions to create.") var subscriptions = 3
    @Option(help: "The VAPID private key file subscriptions are bound to; vapid.pem in --directory by default.")
    var vapidKey: String?
    @Option(help: "Answer the first N sends with --fail-status (404, 410, 413, 429, 500, 503).") var failFirst = 0
    @Option(help: "The status of the first --fail-first sends.") var failStatus = 503
    @Option(help: "Retry-After seconds for the failing sends.") var retryAfter: Int?

    func run(in context: EmulatorContext) async throws {
        let folder = URL(fileURLWithPath: directory, isDirectory: true).standardizedFileURL
        try EmulatorFiles.createDirectory(folder)
        let keyPath = vapidKey ?? folder.appendingPathComponent("vapid.pem").path
        let publicKey: [UInt8]
        if let existing = FileManager.default.contents(atPath: keyPath) {
            guard let key = WebPushEmulator.vapidPublicKey(fromPEM: String(decoding: existing, as: UTF8.self)) else {
                throw ValidationError("\(keyPath) is not a P-256 private key PEM; move it away or pass --vapid-key")
            }
            publicKey = key
        } else {
            let key = WebPushEmulator.makeVAPIDKey()
            try EmulatorFiles.create(keyPath, contents: Data(key.privateKeyPEM.utf8))
            publicKey = key.publicKey
        }
        let emulator = try await WebPushEmulator.start(port: port)
        if failFirst > 0 { emulator.failNextSends(failFirst, status: failStatus, retryAfter: retryAfter) }
        let made = (0..<max(subscriptions, 0)).map { _ in emulator.makeSubscription(applicationServerKey: publicKey)
        }
        let caPath = folder.appendingPathComponent("ca.pem").path
        try emulator.authority.writeCertificatePEM(to: caPath)
        try EmulatorFiles.restrict(caPath)

        let banner =
            ("""
            Web Push emulator on \(emulator.origin) (HTTP/2 and HTTP/1.1; VAPID aud must be \(emulator.origin))
              VAPID key        \(keyPath) (public key / applicationServerKey \(WebPushEmulator.base64URLString(publicKey)))
              CA certificate   \(caPath)
              subscriptions bound to that key (register each as the token of a web endpoint, transport webpush):
            \(made.map { "    \($0.json)" }.joined(separator: "\n"))

            Point a hub at it: in hub.yaml, give the app
                credentials: { webpush: { vapidPrivateKey: file:\(keyPath), subject: "mailto:ops@example.com" } }
            and the transport
                transports: { webpush: { allowedHosts: ["\(emulator.host)"], trustRoots: file:\(caPath) } }

            Accepted messages follow, decrypted (Ctrl-C or SIGTERM stops the emulator).
            """)
        try await EmulatorConsole.printUntilTerminated(banner: banner, { emulator.received }) { message in
            "accepted on \(message.subscriptionID) ttl \(message.timeToLive) urgency \(message.urgency ?? "-") "
                + "topic \(message.topic ?? "-") sub \(message.subject)\(message.isDeclarative ? " declarative" : ""): "
                + "\(message.text.prefix(200))"
        }
        try await emulator.shutdown()
    }
}
