import CustomTransportExample
import Foundation
import HTTPTypes
import HubTransportKit
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A webhook receiver on 127.0.0.1 (a port the system picks) for the tests. It checks every
/// post's signature and answers by the endpoint token in the tap: `gone` → 410, `slow` → no answer
/// for 30 s, `busy` → 503 with `Retry-After: 7`, anything else → 204.
final class WebhookReceiver: Sendable {
    struct Post: Sendable {
        var body: Data
        var signatureValid: Bool
        /// The tap's `hub` object.
        var tap: [String: any Sendable]
        var token: String? { tap["token"] as? String }
    }

    static let secret = Secret("webhook-secret-for-tests-7c1e", source: "test")

    let url: URL
    private let shared: Shared

    private init(port: Int, shared: Shared) {
        self.url = URL(string: "http://127.0.0.1:\(port)/hook")!
        self.shared = shared
    }

    var received: [Post] { shared.posts.withLock { $0 } }

    /// Runs `body` with a receiver listening, then stops it.
    static func run<Value: Sendable>(_ body: @Sendable (WebhookReceiver) async throws -> Value) async throws -> Value {
        let shared = Shared()
        let router = Router()
        router.post("/hook") { request, _ -> Response in
            let buffer = try await request.body.collect(upTo: 1 << 20)
            let data = Data(buffer.readableBytesView)
            let valid = WebhookSignature.isValid(
                signature: request.headers[HTTPField.Name(WebhookSignature.signatureHeader)!],
                timestamp: request.headers[HTTPField.Name(WebhookSignature.timestampHeader)!], body: data,
                secret: secret)
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
            let tap = (object?["hub"] as? [String: Any] ?? [:]).mapValues { "\($0)" as any Sendable }
            let post = Post(body: data, signatureValid: valid, tap: tap)
            shared.record(post)
            switch post.token {
            case "gone": return Response(status: .gone)
            case "busy": return Response(status: .serviceUnavailable, headers: [.retryAfter: "7"])
            case "slow":
                try await Task.sleep(for: .seconds(30))
                return Response(status: .noContent)
            default: return Response(status: valid ? .noContent : .unauthorized)
            }
        }
        let app = Application(
            router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in shared.listening(on: channel.localAddress?.port ?? 0) },
            logger: Logger(label: "webhook-receiver"))
        let services = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [app], logger: Logger(label: "webhook-receiver")))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await services.run() }
            let receiver = WebhookReceiver(port: await shared.port(), shared: shared)
            let result: Result<Value, any Error>
            do {
                result = .success(try await body(receiver))
            } catch {
                result = .failure(error)
            }
            await services.triggerGracefulShutdown()
            try await group.waitForAll()
            return try result.get()
        }
    }

    /// What the route handler and the test share.
    private final class Shared: Sendable {
        let posts = Mutex<[Post]>([])
        private let bound = Mutex<(port: Int?, waiter: CheckedContinuation<Int, Never>?)>((nil, nil))

        func record(_ post: Post) { posts.withLock { $0.append(post) } }

        func listening(on port: Int) {
            let waiter = bound.withLock { state in
                state.port = port
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: port)
        }

        func port() async -> Int {
            await withCheckedContinuation { continuation in
                let port = bound.withLock { state in
                    if state.port == nil { state.waiter = continuation }
                    return state.port
                }
                if let port { continuation.resume(returning: port) }
            }
        }
    }
}
