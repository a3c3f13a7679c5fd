import Foundation
import HTTPTypes
import HubCore
import HubTesting
import HummingbirdTesting
import Synchronization
import Testing

/// `scheduledDateTime` over HTTP: out of feeds and taps until its time, visible to the publisher
/// as scheduled, cancelled by DELETE.
@Suite("Scheduled send")
struct ScheduledSendTests {
    @Test("held from devices until its time, shown to the publisher as scheduled, then released and tapped")
    func heldThenReleased() async throws {
        let clock = ReadViewTests.Clock()
        let harness = try await Harness(now: { clock.now })
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            try await ReadViewTests.register(
                "pixel", platform: "android", transport: "recording", token: alice, on: client)
            // Whole seconds: a time with milliseconds may read back 1 ms earlier (see the note of
            // this change: the writer truncates what the parser's Double holds).
            let at = JSONDateText.format(
                Date(timeIntervalSince1970: (clock.now.timeIntervalSince1970 + 300).rounded(.down)))
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
            try await Task.sleep(for: .milliseconds(300))
            #expect(harness.custom.deliveries(to: "pixel").isEmpty, "no tap before its time")

            clock.advance(by: 300)
            #expect(await eventually { harness.custom.deliveries(to: "pixel").count == 1 }, "tapped at its time")
            let after = try await client.send(.get, me + "/feed?cursor=\(cursor)", bearer: alice)
            #expect(ReadViewTests.ids(after, "changes") == ["later"], "in the feed after the cursor read before")
            #expect(after.object.objects("changes").first?.string("status") == "active")
        }
    }

    @Test("DELETE before its time cancels it: never tapped, never in a device's feed")
    func cancelled() async throws {
        let clock = ReadViewTests.Clock()
        let harness = try await Harness(now: { clock.now })
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            try await ReadViewTests.register(
                "pixel", platform: "android", transport: "recording", token: alice, on: client)
            let at = JSONDateText.format(clock.now.addingTimeInterval(600))
            let published = try await client.publish(
                notification("never", extra: #","scheduledDateTime":"\#(at)""#), user: "alice")
            #expect(published.object.string("status") == "scheduled")
            let deleted = try await client.send(
                .delete, "/v1/apps/\(Harness.notes)/users/alice/notifications/never", bearer: Harness.notesKey)
            #expect(deleted.status == .noContent)
            clock.advance(by: 600)
            try await Task.sleep(for: .milliseconds(1500))
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
