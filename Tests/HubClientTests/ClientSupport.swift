import Foundation
import HubClient
import HubTesting
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Records the reasons a token provider was asked with, and hands out tokens from a script.
final class TokenLog: Sendable {
    private let reasons = Mutex<[TokenRequestReason]>([])
    private let script: @Sendable (TokenRequestReason) async throws -> String

    init(_ script: @escaping @Sendable (TokenRequestReason) async throws -> String) {
        self.script = script
    }

    var asked: [TokenRequestReason] { reasons.withLock { $0 } }

    var provider: TokenProvider {
        { reason in
            self.reasons.withLock { $0.append(reason) }
            return try await self.script(reason)
        }
    }
}

/// A device of the tests: a client of its own, with its own URL session and storage.
func makeDevice(
    _ hub: TestHub, user: String = "alice", storage: any HubClientStorage = InMemoryHubClientStorage(),
    updates: FeedUpdates = .automatic, tokens: TokenLog? = nil
) async throws -> HubClient {
    var configuration = HubClient.Configuration()
    configuration.feedUpdates = updates
    configuration.longPollWait = .seconds(10)
    configuration.initialRetryDelay = .milliseconds(100)
    let log = tokens ?? TokenLog { _ in try await hub.token(user: user) }
    return HubClient(
        baseURL: hub.baseURL, app: TestHub.app, storage: storage,
        session: URLSession(configuration: HubClient.uncachedConfiguration()),
        configuration: configuration, tokenProvider: log.provider)
}

/// Iterates a reader's `changes` in the background and keeps what arrives, for tests that wait
/// on the sequence with a time limit.
final class ChangeRecorder: Sendable {
    private let received = Mutex<[UserNotification]>([])
    private let failure = Mutex<(any Error)?>(nil)
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(_ reader: UserNotificationReader) {
        let started = Task { [self] in
            do {
                for try await change in reader.changes {
                    received.withLock { $0.append(change) }
                }
            } catch {
                failure.withLock { $0 = error }
            }
        }
        task.withLock { $0 = started }
    }

    var changes: [UserNotification] { received.withLock { $0 } }
    var error: (any Error)? { failure.withLock { $0 } }

    /// Waits until the changes received satisfy `condition`, for at most `timeout`.
    /// - Returns: whether they did in time.
    func wait(
        timeout: Duration = .seconds(20), until condition: @Sendable ([UserNotification]) -> Bool
    ) async -> Bool {
        await eventually(timeout: timeout) { condition(changes) }
    }

    /// The last change of the notification published as `appNotificationId`, waiting for one.
    func latest(_ appNotificationId: String, timeout: Duration = .seconds(20)) async -> UserNotification? {
        _ = await wait(timeout: timeout) { $0.contains { $0.appNotificationId == appNotificationId } }
        return changes.last { $0.appNotificationId == appNotificationId }
    }

    /// Ends the iteration and waits for it to finish.
    func stop() async {
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
    }
}
