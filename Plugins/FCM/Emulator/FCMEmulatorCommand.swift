import ArgumentParser
import Foundation
import HubCore
import HubEmulatorKit

/// `hub emulate fcm`: Google's OAuth token endpoint and FCM HTTP v1 `messages:send` on 127.0.0.1,
/// enforcing what the real services enforce, with a ready service-account key file for the hub.
struct FCMEmulatorCommand: EmulatorCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub emulate fcm",
        abstract: "Run an FCM HTTP v1 emulator (OAuth token endpoint and messages:send) on 127.0.0.1.",
        discussion: """
            Writes the emulator's CA certificate and a service-account key file whose token_uri is the \
            emulator, prints how to point the hub at it, then prints every message it accepts until \
            interrupted (Ctrl-C).
            """)

    @Option(help: "Port on 127.0.0.1; 0 picks a free one.") var port = 0
    @Option(help: "Folder for ca.pem and service-account.json.") var directory = ".hub-emulator/fcm"
    @Flag(help: "Serve HTTP/1.1 only (no h2 by ALPN).") var http1Only = false
    @Option(help: "A registration token that answers 404 UNREGISTERED (repeatable).") var unregistered: [String] = []
    @Option(help: "A registration token that answers 403 SENDER_ID_MISMATCH (repeatable).")
    var senderMismatch: [String] = []
    @Option(
        help: "A registration token that answers 400 INVALID_ARGUMENT, not a valid FCM registration token (repeatable)."
    )
    var invalidToken: [String] = []
    @Option(help: "Sends allowed per project per rolling minute; over it, 429 QUOTA_EXCEEDED.") var quotaPerMinute: Int?
    @Option(help: "Answer the first N sends with 503 UNAVAILABLE (a hub retries them).") var failFirst = 0
    @Option(help: "Retry-After seconds for the --fail-first sends.") var retryAfter: Int?

    func run(in context: EmulatorContext) async throws {
        let emulator = try await FCMEmulator.start(port: port, http2: !http1Only)
        let account = FCMTestServiceAccount.primary
        try await emulator.register(account)
        for token in unregistered { emulator.setFailure(.unregistered, forToken: token) }
        for token in senderMismatch { emulator.setFailure(.senderIDMismatch, forToken: token) }
        for token in invalidToken { emulator.setFailure(.invalidArgument, forToken: token) }
        emulator.setQuota(perMinute: quotaPerMinute)
        if failFirst > 0 { emulator.failNextSends(failFirst, retryAfter: retryAfter) }

        let folder = URL(fileURLWithPath: directory, isDirectory: true).standardizedFileURL
        try EmulatorFiles.createDirectory(folder)
        let caPath = folder.appendingPathComponent("ca.pem").path
        let accountPath = folder.appendingPathComponent("service-account.json").path
        try emulator.authority.writeCertificatePEM(to: caPath)
        try EmulatorFiles.restrict(caPath)
        // The account's token URI names this run's port, so the file is rewritten, but only when it
        // is the emulator's own account: a file hub.yaml points at with another key is left alone.
        try EmulatorFiles.replaceIfOwn(
            accountPath, contents: Data(account.serviceAccountJSON(tokenURI: emulator.tokenURI).utf8),
            marker: account.clientEmail)

        let banner =
            ("""
            FCM emulator on \(emulator.baseURL) (\(http1Only ? "HTTP/1.1" : "h2 and HTTP/1.1"))
              token endpoint   \(emulator.tokenURI)
              messages:send    \(emulator.baseURL)/v1/projects/\(account.projectID)/messages:send
              CA certificate   \(caPath)
              service account  \(accountPath) (project \(account.projectID), \(account.clientEmail))

            Point a hub at it: in hub.yaml, give the app
                credentials: { fcm: { serviceAccount: file:\(accountPath) } }
            and start it with
                HUB_TRANSPORTS_FCM_SEND_URL=\(emulator.baseURL) HUB_TRANSPORTS_FCM_TRUST_ROOTS=\(caPath) hub serve --config hub.yaml

            Accepted messages follow (Ctrl-C or SIGTERM stops the emulator).
            """)
        try await EmulatorConsole.printUntilTerminated(banner: banner, { emulator.messages }) { message in
            let target = message.token.map { "token \($0)" } ?? message.topic.map { "topic \($0)" } ?? "?"
            let data = message.data.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            let title = message.notificationTitle.map { " notification \"\($0)\"" } ?? ""
            return "\(message.validateOnly ? "validated" : "accepted") \(target) [\(data)]\(title) "
                + "priority \(message.androidPriority ?? "-") ttl \(message.androidTTL ?? "-") \(message.httpVersion)"
        }
        try await emulator.shutdown()
    }
}
