import Foundation
import HubCore
import HubEmulators
import Testing

@testable import HubWebPush

@Suite("Web Push transport over the wire against the emulator", .serialized)
struct WebPushSendTests {
    @Test("a shoulder tap is accepted over HTTP/2, decrypts to the tap JSON, with TTL, Urgency and the tap Topic")
    func tap() async throws {
        try await WebPushFixture.with { fixture in
            let subscription = fixture.subscription()
            let outcome = await fixture.transport.send(fixture.outbound(subscription, version: 42))
            #expect(outcome == .accepted)
            let message = try #require(fixture.emulator.received(by: subscription).first)
            let fields = try JSONSerialization.jsonObject(with: Data(message.plaintext)) as? [String: String]
            #expect(fields == ["hub": "tap", "app": WebPushFixture.appID, "v": "42"])
            #expect(message.timeToLive == 86_400)
            #expect(message.urgency == "normal")
            #expect(message.topic == "hubtap")
            #expect(message.subject == WebPushFixture.subject)
            #expect(message.vapidKey == fixture.vapid.key.publicKeyBase64URL)
            #expect(message.httpVersion == "HTTP/2.0", "push services speak HTTP/2")
        }
    }

    @Test("a visible delivery carries title, body and tag; TTL until expiry, Urgency high, Topic from the ID")
    func visible() async throws {
        try await WebPushFixture.with { fixture in
            let subscription = fixture.subscription()
            let notification = WebPushFixture.notification(appNotificationId: "lunch-2026/11/24", lifetime: 7200)
            let outcome = await fixture.transport.send(
                fixture.outbound(subscription, kind: .visible, priority: .high, notification: notification))
            #expect(outcome == .accepted)
            let message = try #require(fixture.emulator.received(by: subscription).first)
            let fields = try JSONSerialization.jsonObject(with: Data(message.plaintext)) as? [String: String]
            #expect(fields?["hub"] == "visible")
            #expect(fields?["title"] == "Lunch?")
            #expect(fields?["body"] == "At noon")
            #expect(fields?["tag"] == "lunch-2026/11/24")
            #expect(fields?["id"] == "n-1")
            #expect((7190...7200).contains(message.timeToLive))
            #expect(message.urgency == "high")
            #expect(message.topic == WebPushTopic(deriving: "lunch-2026/11/24").value)
            #expect(message.topic?.count == 32)
        }
    }

    @Test("a visible notification expiring in 30 days is sent with TTL 2,419,200 (FCM's maximum), and accepted")
    func timeToLiveCapped() async throws {
        try await WebPushFixture.with { fixture in
            let subscription = fixture.subscription()
            let notification = WebPushFixture.notification(lifetime: 30 * 86_400)
            let outcome = await fixture.transport.send(
                fixture.outbound(subscription, kind: .visible, notification: notification))
            #expect(outcome == .accepted)
            #expect(fixture.emulator.refusals.isEmpty)
            let message = try #require(fixture.emulator.received(by: subscription).first)
            #expect(message.timeToLive == 2_419_200)
        }
    }

    @Test("low priority → Urgency low; fallback → high")
    func urgency() async throws {
        try await WebPushFixture.with { fixture in
            let subscription = fixture.subscription()
            _ = await fixture.transport.send(fixture.outbound(subscription, priority: .low))
            _ = await fixture.transport.send(
                fixture.outbound(
                    subscription, kind: .fallback, priority: .low, notification: WebPushFixture.notification()))
            #expect(fixture.emulator.received(by: subscription).map(\.urgency) == ["low", "high"])
        }
    }

    @Test("a visual too large for one record is cut short to fit, and still decrypts")
    func tooLarge() async throws {
        try await WebPushFixture.with { fixture in
            let subscription = fixture.subscription()
            let body = String(repeating: "ž\"", count: 3000)
            let notification = WebPushFixture.notification(title: String(repeating: "T", count: 600), body: body)
            let outcome = await fixture.transport.send(
                fixture.outbound(subscription, kind: .visible, notification: notification))
            #expect(outcome == .accepted)
            let message = try #require(fixture.emulator.received(by: subscription).first)
            #expect(message.plaintext.count <= WebPushEncryption.maximumPlaintextSize)
            #expect(message.plaintext.count > WebPushEncryption.maximumPlaintextSize - 64)
            let fields = try JSONSerialization.jsonObject(with: Data(message.plaintext)) as? [String: String]
            #expect(fields?["title"] == String(repeating: "T", count: 600))
            #expect(fields?["body"]?.hasSuffix("…") == true)
            #expect(body.hasPrefix(String(fields?["body"]?.dropLast() ?? "x")))
        }
    }

    @Test("the one rule: emoji sequences stay whole, and a title too long alone is cut after the body is left out")
    func oneTrimmingRule() async throws {
        try await WebPushFixture.with { fixture in
            let subscription = fixture.subscription()
            let family = "👨‍👩‍👧‍👦"
            let body = String(repeating: family, count: 400)
            _ = await fixture.transport.send(
                fixture.outbound(
                    subscription, kind: .visible,
                    notification: WebPushFixture.notification(title: "Family", body: body)))
            let longTitle = String(repeating: "T", count: 5000)
            _ = await fixture.transport.send(
                fixture.outbound(
                    subscription, kind: .visible,
                    notification: WebPushFixture.notification(title: longTitle, body: "short")))
            let messages = fixture.emulator.received(by: subscription)
            #expect(messages.count == 2)
            let fields = try messages.map {
                try JSONSerialization.jsonObject(with: Data($0.plaintext)) as? [String: String] ?? [:]
            }
            let cut = try #require(fields.first?["body"])
            #expect(cut.hasSuffix("…") && cut.dropLast().allSatisfy { $0 == Character(family) })
            #expect(messages.first.map { $0.plaintext.count > WebPushEncryption.maximumPlaintextSize - 30 } == true)
            #expect(fields.last?["body"] == nil, "the body is left out before the title is cut")
            #expect(fields.last?["title"]?.hasSuffix("T…") == true)
        }
    }

    @Test("a payload past 3,993 bytes is refused by the client before sending")
    func clientRefusesOversized() async throws {
        try await WebPushFixture.with { fixture in
            let subscription = try WebPushSubscription(token: fixture.subscription().json)
            await #expect(throws: WebPushError.self) {
                _ = try await fixture.transport.client.send(
                    WebPushMessage(payload: Array(repeating: 1, count: 3994), timeToLive: 60), to: subscription,
                    vapid: fixture.vapid)
            }
            #expect(fixture.emulator.received.isEmpty)
        }
    }

    @Test("404 and 410 → endpoint gone")
    func gone() async throws {
        try await WebPushFixture.with { fixture in
            let expired = fixture.subscription()
            fixture.emulator.expire(expired)
            #expect(await fixture.transport.send(fixture.outbound(expired)).isGone)
            let removed = fixture.subscription()
            fixture.emulator.remove(removed)
            #expect(await fixture.transport.send(fixture.outbound(removed)).isGone)
            #expect(fixture.emulator.refusals.map(\.status) == [410, 404])
        }
    }

    @Test("scripted answers: 413 → rejected, 429 with Retry-After → retry after it, 500/503 → retry, 404/410 → gone")
    func scripted() async throws {
        try await WebPushFixture.with { fixture in
            let subscription = fixture.subscription()
            func send() async -> DeliveryOutcome { await fixture.transport.send(fixture.outbound(subscription)) }
            fixture.emulator.failNextSends(1, status: 413)
            #expect(await send().isRejected)
            fixture.emulator.failNextSends(1, status: 429, retryAfter: 30)
            #expect(await send().retryDelay == .some(.seconds(30)))
            fixture.emulator.failNextSends(1, status: 500)
            #expect(await send().retryDelay == .some(nil))
            fixture.emulator.failNextSends(1, status: 503, retryAfter: 5)
            #expect(await send().retryDelay == .some(.seconds(5)))
            fixture.emulator.failNextSends(1, status: 410)
            #expect(await send().isGone)
            fixture.emulator.failNextSends(1, status: 404)
            #expect(await send().isGone)
            #expect(await send() == .accepted)
        }
    }

    @Test("a VAPID key other than the one the page subscribed with (403) → suspended, not dropped")
    func wrongKey() async throws {
        try await WebPushFixture.with { fixture in
            let subscription = fixture.emulator.makeSubscription(applicationServerKey: VAPIDKey.generate().publicKey)
            let outcome = await fixture.transport.send(fixture.outbound(subscription))
            #expect(outcome.isSuspended)
            #expect(outcome.reason.contains("403"))
            #expect(fixture.emulator.refusals.last?.reason == "VapidPkHashMismatch")
        }
    }

    @Test("an app without a VAPID key → suspended; its endpoints are refused at registration")
    func noCredentials() async throws {
        try await WebPushFixture.with(withCredentials: false) { fixture in
            let subscription = fixture.subscription()
            #expect(await fixture.transport.send(fixture.outbound(subscription)).isSuspended)
            let problem = fixture.transport.problem(registering: fixture.endpoint(subscription), for: fixture.app)
            #expect(problem?.contains("no VAPID key") == true)
            #expect(fixture.emulator.received.isEmpty)
        }
    }

    @Test("the emulator refuses tokens for another origin, expired or too far ahead, and bad subjects (401)")
    func emulatorChecksTokens() async throws {
        try await WebPushFixture.with { fixture in
            let subscription = fixture.subscription()
            let parsed = try WebPushSubscription(token: subscription.json)
            let now = Date()
            for (audience, expires, subject) in [
                ("https://127.0.0.1:1", now.addingTimeInterval(3600), "mailto:ops@contoso.com"),
                (fixture.emulator.origin, now.addingTimeInterval(-60), "mailto:ops@contoso.com"),
                (fixture.emulator.origin, now.addingTimeInterval(25 * 3600), "mailto:ops@contoso.com"),
            ] {
                let credentials = VAPIDCredentials(unchecked: fixture.vapid.key, subject: subject)
                let token = try VAPIDSigner.sign(credentials, audience: audience, expires: expires)
                let status = try await RawPost.send(
                    to: parsed.endpoint, trust: fixture.emulator.trustRootPEM,
                    authorization: "vapid t=\(token), k=\(fixture.vapid.key.publicKeyBase64URL)",
                    body: try WebPushEncryption.encrypt([1], for: parsed))
                #expect(status == 401, "\(audience) \(expires)")
            }
            let badSubject = VAPIDCredentials(unchecked: fixture.vapid.key, subject: "ops@contoso.com")
            let token = try VAPIDSigner.sign(badSubject, audience: fixture.emulator.origin, expires: now + 3600)
            let status = try await RawPost.send(
                to: parsed.endpoint, trust: fixture.emulator.trustRootPEM,
                authorization: "vapid t=\(token), k=\(fixture.vapid.key.publicKeyBase64URL)",
                body: try WebPushEncryption.encrypt([1], for: parsed))
            #expect(status == 401)
            let good = try VAPIDSigner.sign(fixture.vapid, audience: fixture.emulator.origin, expires: now + 3600)
            let missingTTL = try await RawPost.send(
                to: parsed.endpoint, trust: fixture.emulator.trustRootPEM,
                authorization: "vapid t=\(good), k=\(fixture.vapid.key.publicKeyBase64URL)",
                body: try WebPushEncryption.encrypt([1], for: parsed), ttl: nil)
            #expect(missingTTL == 400)
            let garbage = try await RawPost.send(
                to: parsed.endpoint, trust: fixture.emulator.trustRootPEM,
                authorization: "vapid t=\(good), k=\(fixture.vapid.key.publicKeyBase64URL)",
                body: Array(repeating: 7, count: 200))
            #expect(garbage == 400)
            let oversized = try await RawPost.send(
                to: parsed.endpoint, trust: fixture.emulator.trustRootPEM,
                authorization: "vapid t=\(good), k=\(fixture.vapid.key.publicKeyBase64URL)",
                body: Array(repeating: 7, count: 4097))
            #expect(oversized == 413)
            #expect(fixture.emulator.received.isEmpty)
        }
    }

    @Test("registration refuses tokens that are not subscriptions and endpoints outside the policy")
    func registration() async throws {
        try await WebPushFixture.with { fixture in
            let subscription = fixture.subscription()
            #expect(fixture.transport.problem(registering: fixture.endpoint(subscription), for: fixture.app) == nil)
            var endpoint = fixture.endpoint(subscription)
            endpoint.token = "abc"
            #expect(
                fixture.transport.problem(registering: endpoint, for: fixture.app)?.contains("PushSubscription") == true
            )
            endpoint.token = subscription.json.replacingOccurrences(of: fixture.emulator.host, with: "10.0.0.1")
            #expect(fixture.transport.problem(registering: endpoint, for: fixture.app)?.contains("private") == true)
        }
    }
}
