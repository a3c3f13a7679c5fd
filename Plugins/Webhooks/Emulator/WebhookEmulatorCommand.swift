import ArgumentParser
import Foundation
import HubCore
import HubEmulatorKit

/// `hub emulate webhook`: an app server's webhook receiver on 127.0.0.1 that verifies each
/// request's signature and prints the events it receives.
struct WebhookEmulatorCommand: EmulatorCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub emulate webhook",
        abstract: "Run a webhook receiver on 127.0.0.1 that verifies signatures and prints events.",
        discussion: """
            Prints how to point an app's webhooks at it, then every request it receives: the event's \
            type, whether its signature verified, and its body, until interrupted (Ctrl-C). Requests \
            whose signature does not verify are answered 401.
            """)

    @Option(help: "Port on 127.0.0.1; 0 picks a free one.") var port = 0
    @Option(help: "The webhook secret (whsec_…) to verify with; by default a new one is made and printed.")
    var secret: String?
    @Option(help: "Answer the first N requests with --fail-status.") var failFirst = 0
    @Option(help: "The status of the first --fail-first requests.") var failStatus = 500

    func run(in context: EmulatorContext) async throws {
        let secret = secret ?? WebhookSignature.makeSecret()
        if let problem = WebhookSignature.secretProblem(secret) { throw ValidationError("--secret \(problem)") }
        let emulator = try await WebhookEmulator.start(port: port, secret: secret)
        if failFirst > 0 { emulator.failNext(failFirst, status: failStatus) }
        let banner = """
            Webhook receiver on \(emulator.url) (verifies webhook-signature with the secret below)
              secret   \(secret)

            Point a hub at it: put the secret in an environment variable (export HUB_WEBHOOK_SECRET=\(secret)),
            give the app
                webhooks: [ { url: "\(emulator.url)", events: [delivery.delivered, delivery.failed, endpoint.inactive, notification.read, notification.dismissed, broadcast.done], secret: env:HUB_WEBHOOK_SECRET } ]
            and allow the address (loopback, plain http):
                transports: { webhooks: { allowedHosts: ["\(emulator.host)"] } }

            Received events follow (Ctrl-C or SIGTERM stops the receiver).
            """
        try await EmulatorConsole.printUntilTerminated(banner: banner, { emulator.received }) { request in
            let verdict = request.problem.map { "NOT VERIFIED (\($0))" } ?? "signature ok"
            return "\(request.type) \(request.id) \(verdict) -> \(request.status): \(request.body.prefix(400))"
        }
        try await emulator.shutdown()
    }
}
