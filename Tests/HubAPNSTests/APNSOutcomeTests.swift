import Foundation
import HubCore
import HubEmulators
import Testing

@testable import HubAPNS

@Suite("APNs answers: every reason maps to the right outcome")
struct APNSOutcomeTests {
    enum Expected: Sendable, CustomStringConvertible {
        case gone, retry, rejected, suspended, acceptedAfterReconnect
        var description: String {
            switch self {
            case .gone: "endpointGone"
            case .retry: "retry"
            case .rejected: "rejected"
            case .suspended: "suspended"
            case .acceptedAfterReconnect: "accepted after one retry on a new connection"
            }
        }
    }

    static let table: [(Int, String, Expected)] = [
        (410, "Unregistered", .gone), (410, "ExpiredToken", .gone), (400, "BadDeviceToken", .gone),
        (400, "DeviceTokenNotForTopic", .gone),
        (429, "TooManyRequests", .retry), (500, "InternalServerError", .retry), (503, "ServiceUnavailable", .retry),
        (503, "Shutdown", .acceptedAfterReconnect), (400, "IdleTimeout", .acceptedAfterReconnect),
        (403, "UnrelatedKeyIdInToken", .acceptedAfterReconnect),
        (400, "BadTopic", .suspended), (400, "TopicDisallowed", .suspended), (400, "MissingTopic", .suspended),
        (403, "InvalidProviderToken", .suspended), (403, "MissingProviderToken", .suspended),
        (403, "BadCertificate", .suspended), (403, "BadCertificateEnvironment", .suspended),
        (403, "BadEnvironmentKeyIdInToken", .suspended), (403, "BadEnvironmentKeyInToken", .suspended),
        (403, "Forbidden", .suspended), (403, "SomethingNewFromApple", .suspended), (400, "BadCollapseId", .rejected),
        (400, "BadExpirationDate", .rejected),
        (400, "BadMessageId", .rejected), (400, "BadPriority", .rejected), (400, "DuplicateHeaders", .rejected),
        (400, "InvalidPushType", .rejected), (400, "MissingDeviceToken", .rejected), (400, "PayloadEmpty", .rejected),
        (413, "PayloadTooLarge", .rejected), (404, "BadPath", .rejected), (405, "MethodNotAllowed", .rejected),
        (400, "SomethingNewFromApple", .rejected), (503, "SomethingNewFromApple", .retry),
    ]

    @Test("each reason of Apple's table", arguments: table)
    func mapping(status: Int, reason: String, expected: Expected) async throws {
        try await APNSHarness.with { harness in
            harness.emulator.fail(status: status, reason: reason)
            let outcome = await harness.send(APNSHarness.token(1))
            switch expected {
            case .gone:
                guard case .endpointGone = outcome else { Issue.record("\(reason) gave \(outcome)"); return }
            case .retry:
                #expect(outcome.isRetry, "\(reason) gave \(outcome)")
            case .rejected:
                #expect(outcome.isRejected, "\(reason) gave \(outcome)")
            case .suspended:
                #expect(outcome.isSuspended, "\(reason) gave \(outcome)")
            case .acceptedAfterReconnect:
                #expect(outcome == .accepted, "\(reason) gave \(outcome)")
                #expect(harness.emulator.statistics.connectionsAccepted == 2)
            }
            #expect(outcome.reasonText.contains(APNSError.Reason(rawValue: reason).rawValue) || outcome.isAccepted)
        }
    }

    @Test("410 Unregistered carries the token's timestamp into endpointGone(since:)")
    func unregisteredTimestamp() async throws {
        try await APNSHarness.with { harness in
            let when = Date(timeIntervalSince1970: 1_700_000_123.456)
            harness.emulator.markUnregistered(token: APNSHarness.token(1), at: when)
            let outcome = await harness.send(APNSHarness.token(1))
            guard case .endpointGone(let since, let reason) = outcome else {
                Issue.record("got \(outcome)")
                return
            }
            #expect(abs((since?.timeIntervalSince1970 ?? 0) - when.timeIntervalSince1970) < 0.002)
            #expect(reason == "410 Unregistered")
        }
    }

    @Test("Retry-After is honoured, in seconds or as an HTTP date")
    func retryAfter() async throws {
        // One clock for both ends: the provider token's iat is checked by the emulator's clock.
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        try await APNSHarness.with(emulator: { $0.now = { clock.now } }, transport: { $0.now = { clock.now } }) {
            harness in
            harness.emulator.throttle(token: APNSHarness.token(1), retryAfter: "120")
            #expect(await harness.send(APNSHarness.token(1)).retryAfter == .seconds(120))
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            let date = formatter.string(from: clock.now.addingTimeInterval(900))
            harness.emulator.fail(status: 503, reason: "ServiceUnavailable", retryAfter: date)
            #expect(await harness.send(APNSHarness.token(2)).retryAfter == .seconds(900))
            harness.emulator.fail(status: 500, reason: "InternalServerError")
            let plain = await harness.send(APNSHarness.token(3))
            #expect(plain.isRetry && plain.retryAfter == nil)
        }
    }

    @Test("a configuration error is logged once per credentials and reason, not per delivery")
    func logOnce() async throws {
        try await APNSHarness.with { harness in
            harness.emulator.fail(next: 5, status: 400, reason: "TopicDisallowed")
            for index in 1...5 { #expect(await harness.send(APNSHarness.token(index)).isSuspended) }
            harness.emulator.fail(next: 2, status: 403, reason: "InvalidProviderToken")
            for index in 6...7 { #expect(await harness.send(APNSHarness.token(index)).isSuspended) }
            #expect(harness.logs.count("TopicDisallowed", atLeast: .error) == 1)
            #expect(harness.logs.count("InvalidProviderToken", atLeast: .error) == 1)
            #expect(harness.logs.count("team \(harness.key.teamID)", atLeast: .error) == 0, "the label is metadata")
        }
    }

    @Test(
        "the emulator's own checks: an unknown bundle is TopicDisallowed, an unknown key InvalidProviderToken; both suspend"
    )
    func realConfigurationErrors() async throws {
        try await APNSHarness.with { harness in
            let other = APNSRequest(
                deviceToken: APNSHarness.token(1), environment: .production, bundleID: "com.other.app",
                payload: .background())
            let disallowed = await harness.transport.send(other, credentials: harness.credentials)
            #expect(disallowed.isSuspended && disallowed.reasonText.contains("TopicDisallowed"))
            let stranger = APNSTestKey(keyID: "STRANGER01", teamID: harness.key.teamID)
            let invalid = await harness.transport.send(
                harness.request(APNSHarness.token(2)), credentials: stranger.credentials())
            #expect(invalid.isSuspended && invalid.reasonText.contains("InvalidProviderToken"))
        }
    }

    @Test("a key replaced in Apple's portal (same key ID, another private key) is InvalidProviderToken: suspended")
    func replacedKeySuspends() async throws {
        try await APNSHarness.with { harness in
            let revoked = APNSTestKey(keyID: harness.key.keyID, teamID: harness.key.teamID)
            for index in 1...3 {
                let outcome = await harness.transport.send(
                    harness.request(APNSHarness.token(index)), credentials: revoked.credentials())
                #expect(outcome.isSuspended, "got \(outcome)")
                #expect(outcome.reasonText.contains("InvalidProviderToken") && outcome.reasonText.contains("keyId"))
            }
            #expect(
                harness.emulator.requests.map(\.reason) == Array(repeating: "InvalidProviderToken", count: 3),
                "APNs itself refused each push signed with the old key")
            #expect(harness.logs.count("InvalidProviderToken", atLeast: .error) == 1, "\(harness.logs.all)")
            #expect(await harness.send(APNSHarness.token(4)) == .accepted, "the current key still works")
        }
    }

    @Test(
        "BadDeviceToken names the environment; a streak of distinct tokens warns about a sandbox/production mix-up once and suspends"
    )
    func environmentMixUp() async throws {
        try await APNSHarness.with(transport: { $0.badDeviceTokenWarningThreshold = 3 }) { harness in
            for index in 1...5 {
                harness.emulator.registerDevice(
                    token: APNSHarness.token(index), bundleID: APNSHarness.bundleID, environment: .development)
            }
            // One dead token answered again and again never trips it: it is one token.
            for _ in 1...4 {
                let outcome = await harness.send(APNSHarness.token(1))
                guard case .endpointGone = outcome else {
                    Issue.record("the same token again must not count twice: got \(outcome)")
                    continue
                }
            }
            for index in 1...5 {
                let outcome = await harness.send(APNSHarness.token(index))
                if index < 3 {
                    // Below the threshold each token is taken as dead.
                    guard case .endpointGone(_, let reason) = outcome else {
                        Issue.record("got \(outcome)")
                        continue
                    }
                    #expect(reason.contains("BadDeviceToken") && reason.contains("production"))
                } else {
                    // Every token failing: the environment is suspect, not the tokens (PROVIDERS.md §1.5).
                    #expect(outcome.isSuspended && outcome.reasonText.contains("BadDeviceToken"), "got \(outcome)")
                }
            }
            #expect(harness.logs.count("wrong environment") == 1)
            harness.emulator.registerDevice(
                token: APNSHarness.token(6), bundleID: APNSHarness.bundleID, environment: .production)
            #expect(await harness.send(APNSHarness.token(6)) == .accepted)
            let after = await harness.send(APNSHarness.token(1))
            guard case .endpointGone = after else {
                Issue.record("an accepted push ends the streak: got \(after)")
                return
            }
        }
    }

    @Test("a payload over the limit is rejected before sending when trimming is off")
    func payloadRejectedLocally() async throws {
        try await APNSHarness.with(transport: { $0.trimsAlertBody = false }) { harness in
            let body = String(repeating: "b", count: 5000)
            let delivery = harness.delivery(
                .visible, token: APNSHarness.token(1), notification: APNSHarness.notification(body: body))
            let outcome = await harness.transport.send(delivery)
            #expect(outcome.isRejected && outcome.reasonText.contains("4096"))
            #expect(harness.emulator.requests.isEmpty)
        }
    }

    @Test("a malformed token in the store is gone without a request; broken credentials are rejected")
    func localFailures() async throws {
        try await APNSHarness.with { harness in
            guard case .endpointGone = await harness.transport.send(harness.delivery(.shoulderTap, token: "not-hex"))
            else {
                Issue.record("a malformed token should be gone")
                return
            }
            let broken = APNSCredentials(
                authentication: .token(keyID: "K", teamID: "T", privateKey: .init("not a key", source: "test")))
            #expect(throws: APNSError.self) { try harness.transport.validate(broken) }
            #expect(await harness.transport.send(harness.request(APNSHarness.token(1)), credentials: broken).isRejected)
            #expect(harness.emulator.requests.isEmpty)
        }
    }
}
