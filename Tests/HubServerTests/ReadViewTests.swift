import Foundation
import HTTPTypes
import HubCore
import HubTesting
import HummingbirdTesting
import Synchronization
import Testing

/// What devices and publishers read: targetPolicy applies to feeds, history and single reads as
/// to taps; expiry is exact at read time; tombstones carry no payload.
@Suite("Reads: targeting and expiry")
struct ReadViewTests {
    static func register(
        _ id: String, platform: String, transport: String, token: String, on client: some TestClientProtocol
    ) async throws {
        let tokenField = transport == "polling" ? "" : #","token":"t-\#(id)""#
        let response = try await client.send(
            .put, "/v1/apps/\(Harness.notes)/me/endpoints/\(id)", bearer: token,
            json: #"{"platform":"\#(platform)","appId":"com.contoso.notes","transport":"\#(transport)"\#(tokenField)}"#)
        #expect(response.status == .created, "\(response.text)")
    }

    static func ids(_ response: TestResponse, _ key: String) -> [String] {
        response.object.objects(key).compactMap { $0.string("appNotificationId") }
    }

    @Test("an iOS-only notification is in no Android device's feed, history or reads, and taps no Android device")
    func targetPolicyAppliesToReads() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            try await Self.register("phone", platform: "ios", transport: "polling", token: alice, on: client)
            try await Self.register("pixel", platform: "android", transport: "recording", token: alice, on: client)
            let iosOnly = try await client.publish(
                notification("ios-only", extra: #","targetPolicy":{"platformTypes":["iOS"]}"#), user: "alice")
            #expect(iosOnly.status == .created)
            #expect(try await client.publish(notification("everyone"), user: "alice").status == .created)
            #expect(await eventually { harness.custom.deliveries(to: "pixel").count == 1 })

            let me = "/v1/apps/\(Harness.notes)/me"
            func get(_ path: String, as endpoint: String?) async throws -> TestResponse {
                try await client.send(
                    .get, me + path, bearer: alice,
                    headers: endpoint.map { [.hubEndpoint: $0] } ?? [:])
            }
            #expect(Self.ids(try await get("/feed", as: "pixel"), "changes") == ["everyone"])
            #expect(Self.ids(try await get("/feed", as: "phone"), "changes") == ["ios-only", "everyone"])
            #expect(
                Self.ids(try await get("/feed", as: nil), "changes") == ["ios-only", "everyone"], "a user-wide read")
            #expect(Self.ids(try await get("/notifications", as: "pixel"), "notifications") == ["everyone"])
            #expect(
                Self.ids(try await get("/notifications", as: "phone"), "notifications") == ["everyone", "ios-only"])
            #expect(try await get("/notifications/ios-only", as: "pixel").status == .notFound)
            #expect(try await get("/notifications/ios-only", as: "phone").status == .ok)
            // A later read of the Android device from its cursor gets nothing of the iOS-only dismissal.
            let cursor = try #require(try await get("/feed", as: "pixel").object.string("cursor"))
            let dismissed = try await client.send(
                .patch, me + "/notifications/ios-only", bearer: alice, json: #"{"userActionState":"dismissed"}"#,
                headers: [.hubEndpoint: "phone"])
            #expect(dismissed.status == .ok)
            let later = try await get("/feed?cursor=\(cursor)", as: "pixel")
            #expect(Self.ids(later, "changes") == [], "the dismissal of an iOS-only notification")
            #expect(await harness.hub.settled())
            #expect(harness.custom.deliveries(to: "pixel").count == 1, "no tap for an iOS-only change")
        }
    }

    @Test("past its expiration a notification reads as expired, without payload, before any sweep")
    func expiryExactAtReadTime() async throws {
        let clock = ManualClock()
        // No sweep while the clock passes the expiry (the sweeper's first one, at start, is
        // awaited below): what is read is the read-time view.
        let plug = StorePlug()
        let harness = try await Harness(plug: plug, clock: clock, sweepInterval: .seconds(3600))
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            let expiry = JSONDateText.format(clock.date.addingTimeInterval(60))
            let published = try await client.publish(
                #"{"appNotificationId":"soon","payload":{"rawContent":"secret","visualContent":{"title":"Hi"}},"expirationDateTime":"\#(expiry)"}"#,
                user: "alice")
            #expect(published.status == .created, "\(published.text)")
            let version = published.object["changeVersion"] as? Int
            let me = "/v1/apps/\(Harness.notes)/me"
            let before = try await client.send(.get, me + "/notifications/soon", bearer: alice)
            #expect(before.object.string("status") == "active")
            #expect((before.object["payload"] as? [String: Any])?["rawContent"] as? String == "secret")

            #expect(await eventually { plug.calls("sweep") == 1 })
            clock.advance(by: .seconds(60))
            let single = try await client.send(.get, me + "/notifications/soon", bearer: alice)
            #expect(single.object.string("status") == "expired")
            #expect((single.object["payload"] as? [String: Any])?.isEmpty == true, "\(single.text)")
            #expect(single.object["changeVersion"] as? Int == version, "read-time expiry, not the sweep's change")
            #expect(Self.ids(try await client.send(.get, me + "/notifications", bearer: alice), "notifications") == [])
            let expired = try await client.send(.get, me + "/notifications?status=expired", bearer: alice)
            #expect(Self.ids(expired, "notifications") == ["soon"])
            #expect(!expired.text.contains("secret"))
            let feed = try await client.send(.get, me + "/feed", bearer: alice)
            #expect(feed.object.objects("changes").map { $0.string("status") } == ["expired"])
            #expect(!feed.text.contains("secret"))
            let publisher = try await client.send(
                .get, "/v1/apps/\(Harness.notes)/users/alice/notifications/soon", bearer: Harness.notesKey)
            #expect(publisher.object.string("status") == "expired")
            #expect(!publisher.text.contains("secret"))
            #expect(plug.calls("sweep") == 1, "no sweep came between")
        }
    }
}

/// ISO 8601 with milliseconds, as publishers send it.
enum JSONDateText {
    static func format(_ date: Date) -> String {
        date.formatted(
            .iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
