import Foundation
import HubCore
import HubEmulators
import HubFCM
import HubTesting
import Testing

@Suite("FCM: every error code maps to the right outcome")
struct FCMOutcomeTests {
    @Test("UNREGISTERED and SENDER_ID_MISMATCH make the endpoint gone")
    func deadTokens() async throws {
        try await FCMFixture.with { fixture in
            fixture.emulator.setFailure(.unregistered, forToken: "gone")
            fixture.emulator.setFailure(.senderIDMismatch, forToken: "foreign")
            let gone = await fixture.transport.send(fixture.outbound(token: "gone"))
            let foreign = await fixture.transport.send(fixture.outbound(token: "foreign"))
            guard case .endpointGone(_, let reason) = gone, case .endpointGone(_, let other) = foreign else {
                Issue.record("expected endpointGone, got \(gone) and \(foreign)")
                return
            }
            #expect(reason.contains("404") && reason.contains("UNREGISTERED"))
            #expect(other.contains("403") && other.contains("SENDER_ID_MISMATCH"))
        }
    }

    @Test("INVALID_ARGUMENT about a field of the message is rejected, not a dead device")
    func invalidArgument() async throws {
        try await FCMFixture.with { fixture in
            fixture.emulator.setFailure(.invalidField, forToken: "some-device")
            let outcome = await fixture.transport.send(fixture.outbound(token: "some-device"))
            guard case .rejected(let reason) = outcome else {
                Issue.record("expected a rejection, got \(outcome)")
                return
            }
            #expect(reason.contains("INVALID_ARGUMENT"))
            #expect(reason.contains("message.android.ttl"))
        }
    }

    @Test("INVALID_ARGUMENT saying the registration token is not valid drops the token (PROVIDERS.md §2.4)")
    func invalidToken() async throws {
        try await FCMFixture.with { fixture in
            fixture.emulator.setFailure(.invalidArgument, forToken: "never-a-token")
            let outcome = await fixture.transport.send(fixture.outbound(token: "never-a-token"))
            guard case .endpointGone(_, let reason) = outcome else {
                Issue.record("expected the endpoint gone, got \(outcome)")
                return
            }
            #expect(reason.contains("INVALID_ARGUMENT"))
            #expect(reason.contains("not a valid FCM registration token"))
        }
    }

    @Test("QUOTA_EXCEEDED retries after Retry-After, and never sooner than a minute")
    func quota() async throws {
        try await FCMFixture.with { fixture in
            fixture.emulator.setQuota(perMinute: 2)
            #expect(await fixture.transport.send(fixture.outbound()) == .accepted)
            #expect(await fixture.transport.send(fixture.outbound()) == .accepted)
            let limited = await fixture.transport.send(fixture.outbound())
            let delay = try #require(limited.retryDelay ?? nil)
            #expect(delay >= .seconds(60))
            #expect(limited.reason.contains("429") && limited.reason.contains("QUOTA_EXCEEDED"))
        }
    }

    @Test("UNAVAILABLE honours Retry-After; INTERNAL retries with the dispatcher's back-off")
    func transientErrors() async throws {
        try await FCMFixture.with { fixture in
            fixture.emulator.failNextSends(1, retryAfter: 7)
            let unavailable = await fixture.transport.send(fixture.outbound())
            #expect(unavailable.retryDelay == .some(.seconds(7)))
            #expect(unavailable.reason.contains("503") && unavailable.reason.contains("UNAVAILABLE"))
            fixture.emulator.setFailure(.internalError, forToken: "flaky")
            let internalError = await fixture.transport.send(fixture.outbound(token: "flaky"))
            #expect(internalError.retryDelay == .some(nil))
            #expect(await fixture.transport.send(fixture.outbound()) == .accepted, "the burst is over")
        }
    }

    @Test("THIRD_PARTY_AUTH_ERROR is suspended and logged once per app, not once per delivery")
    func thirdPartyAuth() async throws {
        let logs = LogCapture()
        try await FCMFixture.with(logs: logs) { fixture in
            for index in 0..<3 {
                fixture.emulator.setFailure(.thirdPartyAuthError, forToken: "ios-via-fcm-\(index)")
                let outcome = await fixture.transport.send(fixture.outbound(token: "ios-via-fcm-\(index)"))
                #expect(outcome.reason.contains("THIRD_PARTY_AUTH_ERROR"))
                guard case .suspended = outcome else {
                    Issue.record("expected a suspension, got \(outcome)")
                    return
                }
            }
            #expect(fixture.emulator.tokenExchanges == 1, "a THIRD_PARTY_AUTH_ERROR 401 does not refresh the token")
            let errors = logs.messages(at: .error)
            #expect(errors.count == 1)
            #expect(errors.first?.contains("Firebase console") == true)
            #expect(errors.allSatisfy { !$0.contains("ya29.") && !$0.contains("PRIVATE KEY") }, "no secrets in logs")
        }
    }

    @Test("403 PERMISSION_DENIED without SENDER_ID_MISMATCH (service account of another project) is suspended")
    func permissionDenied() async throws {
        let logs = LogCapture()
        try await FCMFixture.with(logs: logs) { fixture in
            var app = fixture.app
            var credentials = fixture.credentials
            credentials.projectID = "someone-elses-project"
            app.credentials.fcm = credentials
            for index in 0..<2 {
                var outbound = fixture.outbound(token: "device-\(index)")
                outbound.app = app
                let outcome = await fixture.transport.send(outbound)
                #expect(outcome.isSuspended, "got \(outcome)")
                #expect(outcome.reason.contains("403") && outcome.reason.contains("PERMISSION_DENIED"))
            }
            #expect(fixture.emulator.messages.isEmpty)
            let errors = logs.messages(at: .error)
            #expect(errors.count == 1 && errors.first?.contains("Cloud Messaging API Admin") == true, "\(errors)")
            #expect(await fixture.transport.send(fixture.outbound()) == .accepted, "the right project still works")
        }
    }

    @Test("a provider that does not answer is a retry")
    func networkFailure() async throws {
        try await FCMFixture.with(configure: { $0.requestTimeout = .seconds(1) }) { fixture in
            // The first send also connects and fetches an access token: on a busy machine that can
            // take longer than the 1 s deadline, so warm up until one is accepted.
            #expect(await eventually { await fixture.transport.send(fixture.outbound()) == .accepted })
            try await fixture.emulator.shutdown()
            let outcome = await fixture.transport.send(fixture.outbound())
            #expect(outcome.retryDelay == .some(nil))
        }
    }

    @Test("error codes: known ones, the legacy APNS_AUTH_ERROR spelling, unknown strings kept")
    func errorCodes() {
        #expect(FCMErrorCode(parsing: "UNREGISTERED") == .unregistered)
        #expect(FCMErrorCode(parsing: "APNS_AUTH_ERROR") == .thirdPartyAuthError)
        #expect(FCMErrorCode(parsing: nil) == .unspecifiedError)
        let future = FCMErrorCode(parsing: "FID_REQUIRED")
        #expect(future == .unknown("FID_REQUIRED") && !future.isKnown)
        let error = FCMError(
            code: .quotaExceeded, httpStatus: 429, status: "RESOURCE_EXHAUSTED", message: "slow down",
            retryAfter: .seconds(61))
        #expect(error.description == "429 RESOURCE_EXHAUSTED QUOTA_EXCEEDED: slow down (Retry-After 61 s)")
    }
}
