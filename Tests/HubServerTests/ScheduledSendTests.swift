import Foundation
import HTTPTypes
import HubTesting
import HummingbirdTesting
import Synchronization
import Testing

@testable import HubCore

/// `scheduledDateTime` over HTTP: out of feeds and taps until its time, visible to the publisher
/// as scheduled, cancelled by DELETE.
@Suite("Scheduled send")
struct ScheduledSendTests {
    /// A hub on a manual clock, serving, with alice's Android device `pixel` on the recording transport.
    static func withAlicesPixel(
        _ test: @Sendable @escaping (ManualClock, Harness, String, any TestClientProtocol) async throws -> Void
    ) async throws {
        let clock = ManualClock()
        let harness = try await Harness(clock: clock)
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            try await ReadViewTests.register(
                "pixel", platform: "android", transport: "recording", token: alice, on: client)
            try await test(clock, harness, alice, client)
        }
    }

    @Test("held from devices until its time, shown to the publisher as scheduled, then released and tapped")
    func heldThenReleased() async throws {
        try await Self.withAlicesPixel { clock, harness, alice, client in
            // Whole seconds: a time with milliseconds may read back 1 ms earlier (see the note of
            // this change: the writer truncates what the parser's Double holds).
            let at = JSONDateText.format(
                Date(timeIntervalSince1970: (clock.date.timeIntervalSince1970 + 300).rounded(.down)))
            let published = try await client.publish(
                notification("later", extra: #","scheduledDateTime":"\#(at)""#), user: "alice")
            #expect(published.status == .created, "\(published.text)")
            #expect(published.object.string("status") == "scheduled")
            #expect(published.object.string("scheduledDateTime") == at)

            let me = "/v1/apps/\(Harness.notes)/me"
            let feed = try await client.send(.get, me + "/feed", bearer: alice)
            #expect(ReadViewTests.ids(feed, "changes") == [], "not in a device's feed before its time")
            let cursor = try #require(feed.object.string("cursor"))
            let all = try await client.send(.get, me + "/notifications?status=all", bearer: alice)
            #expect(ReadViewTests.ids(all, "notifications") == [])
            #expect(try await client.send(.get, me + "/notifications/later", bearer: alice).status == .notFound)
            let publisher = "/v1/apps/\(Harness.notes)/users/alice/notifications"
            let scheduled = try await client.send(.get, publisher + "?status=scheduled", bearer: Harness.notesKey)
            #expect(ReadViewTests.ids(scheduled, "notifications") == ["later"], "the publisher sees it")
            // The clock stands still: once the dispatcher is idle, nothing more can come due.
            #expect(await eventually { harness.hub.dispatcher.isIdle })
            #expect(harness.custom.deliveries(to: "pixel").isEmpty, "no tap before its time")

            clock.advance(by: .seconds(300))
            #expect(await eventually { harness.custom.deliveries(to: "pixel").count == 1 }, "tapped at its time")
            let after = try await client.send(.get, me + "/feed?cursor=\(cursor)", bearer: alice)
            #expect(ReadViewTests.ids(after, "changes") == ["later"], "in the feed after the cursor read before")
            #expect(after.object.objects("changes").first?.string("status") == "active")
        }
    }

    @Test("DELETE before its time cancels it: never tapped, never in a device's feed")
    func cancelled() async throws {
        try await Self.withAlicesPixel { clock, harness, alice, client in
            let at = JSONDateText.format(clock.date.addingTimeInterval(600))
            let published = try await client.publish(
                notification("never", extra: #","scheduledDateTime":"\#(at)""#), user: "alice")
            #expect(published.object.string("status") == "scheduled")
            let deleted = try await client.send(
                .delete, "/v1/apps/\(Harness.notes)/users/alice/notifications/never", bearer: Harness.notesKey)
            #expect(deleted.status == .noContent)
            clock.advance(by: .seconds(600))
            // The sweep its time would have released it in, then nothing left to send.
            #expect(await harness.hub.sweepOnce().isEmpty)
            #expect(await harness.hub.settled())
            #expect(harness.custom.deliveries(to: "pixel").isEmpty)
            let feed = try await client.send(.get, "/v1/apps/\(Harness.notes)/me/feed", bearer: alice)
            #expect(ReadViewTests.ids(feed, "changes") == [], "not even a tombstone")
        }
    }

    @Test("a bad scheduledDateTime is refused naming the field")
    func refused() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            let response = try await client.publish(
                notification("x", extra: #","scheduledDateTime":"tomorrow""#), user: "alice")
            #expect(response.errorFields == ["scheduledDateTime"])
            let far = JSONDateText.format(Date().addingTimeInterval(40 * 86_400))
            let tooFar = try await client.publish(
                notification("y", extra: #","scheduledDateTime":"\#(far)""#), user: "alice")
            #expect(tooFar.errorFields == ["scheduledDateTime"])
        }
    }
}
