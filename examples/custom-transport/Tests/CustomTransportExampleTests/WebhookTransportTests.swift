import CustomTransportExample
import Foundation
import HubTesting
import HubTransportKit
import Logging
import Testing

@Suite("Webhook transport", .timeLimit(.minutes(2)))
struct WebhookTransportTests {
    static let app = CrossDeviceApp(
        id: "notes.contoso.com", name: "Contoso Notes", platforms: [.ios: ["com.contoso.notes"]])

    static func transport(_ receiver: WebhookReceiver, timeout: Duration = .seconds(5)) -> WebhookTransport {
        WebhookTransport(configuration: .init(url: receiver.url, secret: WebhookReceiver.secret, timeout: timeout))
    }

    static let quietLogger: Logger = {
        var logger = Logger(label: "embedded-hub")
        logger.logLevel = .critical
        return logger
    }()

    static func harness() -> TransportConformanceHarness {
        TransportConformanceHarness(
            app: app,
            workingEndpoint: {
                TransportConformance.endpoint(transport: WebhookTransport.transportID, token: "device-1")
            },
            deadEndpoint: { TransportConformance.endpoint(transport: WebhookTransport.transportID, token: "gone") },
            sendTimeLimit: .seconds(10))
    }

    @Test("passes the transport conformance suite", arguments: TransportConformance.all)
    func conformance(_ check: TransportConformance.Check) async throws {
        try await WebhookReceiver.run { receiver in
            try await check.run(Self.transport(receiver), Self.harness())
        }
    }

    @Test("posts a signed tap naming the app, user, endpoint and change; visible posts carry the visual")
    func signedTap() async throws {
        try await WebhookReceiver.run { receiver in
            let transport = Self.transport(receiver)
            let endpoint = TransportConformance.endpoint(id: "phone", transport: transport.id, token: "device-9")
            let tap = TransportConformance.delivery(.shoulderTap, to: endpoint, app: Self.app, sequence: 42)
            #expect(await transport.send(tap) == .accepted)
            #expect(
                await transport.send(TransportConformance.delivery(.visible, to: endpoint, app: Self.app)) == .accepted)

            let posts = receiver.received
            #expect(posts.count == 2)
            let allSigned = posts.allSatisfy { $0.signatureValid }
            #expect(allSigned)
            let first = try #require(posts.first)
            #expect(first.tap["app"] as? String == "notes.contoso.com")
            #expect(first.tap["user"] as? String == "alice")
            #expect(first.tap["endpoint"] as? String == "phone")
            #expect(first.tap["kind"] as? String == "shoulderTap")
            #expect(first.tap["changeVersion"] as? String == "42")
            #expect(first.tap["notification"] == nil, "a shoulder tap carries no content")
            #expect((posts.last?.tap["notification"] as? String)?.contains("Conformance 1") == true)
            #expect(
                !WebhookSignature.isValid(
                    signature: "sha256=00", timestamp: "\(Int(Date().timeIntervalSince1970))", body: first.body,
                    secret: WebhookReceiver.secret))
        }
    }

    @Test("maps the receiver's answers: 503 is a retry after Retry-After, silence a retry at the timeout, 401 suspends")
    func outcomes() async throws {
        try await WebhookReceiver.run { receiver in
            // The default timeout (5 s) for the answers, so a busy machine cannot turn the 503 into a
            // timeout; a short one only where the receiver stays silent.
            let transport = Self.transport(receiver)
            let busy = TransportConformance.endpoint(transport: transport.id, token: "busy")
            #expect(
                await transport.send(TransportConformance.delivery(.shoulderTap, to: busy, app: Self.app))
                    == .retry(after: .seconds(7), reason: "the receiver answered 503"))
            let impatient = Self.transport(receiver, timeout: .milliseconds(500))
            let slow = TransportConformance.endpoint(transport: transport.id, token: "slow")
            let start = ContinuousClock.now
            guard
                case .retry = await impatient.send(
                    TransportConformance.delivery(.shoulderTap, to: slow, app: Self.app))
            else {
                Issue.record("a receiver that does not answer must be retried")
                return
            }
            #expect(ContinuousClock.now - start < .seconds(5))
            let wrongSecret = WebhookTransport(
                configuration: .init(url: receiver.url, secret: Secret("not-the-receivers", source: "test")))
            #expect(
                await wrongSecret.send(
                    TransportConformance.delivery(
                        .shoulderTap, to: TransportConformance.endpoint(transport: transport.id, token: "device-1"),
                        app: Self.app)
                ).isSuspended,
                "a refused signature is a configuration fault: parked, not dropped")
            #expect(transport.problem(registering: busy, for: Self.app) == nil)
            var spaced = busy
            spaced.token = "two words"
            #expect(transport.problem(registering: spaced, for: Self.app) != nil)
        }
    }
}
