import Foundation
import HubClient
import HubTesting
import Synchronization
import Testing

@Suite("HubClient against a running hub", .serialized, .timeLimit(.minutes(2)))
struct SyncTests {
    static let phone = EndpointRegistration.polling(platform: .ios, appId: TestHub.iosAppID, appDisplayName: "Phone")
    static let tablet = EndpointRegistration.polling(platform: .ios, appId: TestHub.iosAppID, appDisplayName: "Tablet")

    @Test("two devices of one user both get a publish, and a dismiss on one wakes the other's long-poll")
    func universalDismiss() async throws {
        try await TestHub.run { hub in
            let phone = try await makeDevice(hub)
            let tablet = try await makeDevice(hub)
            try await phone.register(Self.phone)
            try await tablet.register(Self.tablet)
            #expect(phone.endpointID != tablet.endpointID)
            let phoneChanges = ChangeRecorder(phone.notificationChannel.createReader())
            let tabletChanges = ChangeRecorder(tablet.notificationChannel.createReader())

            try await hub.publish("meeting", to: "alice", title: "Meeting at 10")
            var onPhone = try #require(await phoneChanges.latest("meeting"))
            let onTablet = try #require(await tabletChanges.latest("meeting"))
            #expect(onPhone.visualContent?.title == "Meeting at 10")
            #expect(onTablet.id == onPhone.id)
            #expect(onTablet.userActionState == .noInteraction)

            let start = ContinuousClock.now
            onPhone.userActionState = .dismissed
            try await onPhone.save()
            #expect(onPhone.userActionState == .dismissed)
            #expect(!onPhone.hasUnsavedChanges)
            #expect(onPhone.changeVersion > onTablet.changeVersion)
            // Half the tablet's long-poll wait (10 s, begun just before the dismiss), so only a wake by
            // the dismiss passes, with room for a busy machine that runs the suite in parallel.
            let seen = await tabletChanges.wait(timeout: .seconds(5)) { changes in
                changes.contains { $0.appNotificationId == "meeting" && $0.userActionState == .dismissed }
            }
            #expect(seen, "the tablet saw the dismiss after \(ContinuousClock.now - start)")
            #expect(tabletChanges.error == nil)
            await phoneChanges.stop()
            await tabletChanges.stop()
        }
    }

    @Test("a client created again with the same storage keeps its endpoint ID and resumes without duplicates")
    func restartResumes() async throws {
        try await TestHub.run { hub in
            let storage = InMemoryHubClientStorage()
            let first = try await makeDevice(hub, storage: storage)
            try await first.register(Self.phone)
            let before = ChangeRecorder(first.notificationChannel.createReader())
            try await hub.publish("one", to: "alice")
            try await hub.publish("two", to: "alice")
            #expect(await before.wait { $0.map(\.appNotificationId) == ["one", "two"] })
            await before.stop()

            try await hub.publish("three", to: "alice")  // while the app is not running
            let restarted = try await makeDevice(hub, storage: storage)
            #expect(restarted.endpointID == first.endpointID)
            #expect(restarted.registrationState.endpoint?.id == first.endpointID)
            let after = ChangeRecorder(restarted.notificationChannel.createReader())
            #expect(await after.wait { $0.contains { $0.appNotificationId == "three" } })
            try await hub.publish("four", to: "alice")
            #expect(await after.wait { $0.contains { $0.appNotificationId == "four" } })
            #expect(after.changes.map(\.appNotificationId) == ["three", "four"])
            await after.stop()
        }
    }

    @Test("readBatch returns the history, filtered by read state, action state and status")
    func history() async throws {
        try await TestHub.run { hub in
            let device = try await makeDevice(hub)
            let reader = device.notificationChannel.createReader()
            for id in ["a", "b", "c"] { try await hub.publish(id, to: "alice") }
            var all = try await reader.readBatch(maxSize: 10)
            #expect(all.map(\.appNotificationId) == ["c", "b", "a"])  // newest first
            all[0].readState = .read
            try await all[0].save()
            all[1].userActionState = .activated
            try await all[1].save()
            try await hub.delete("a", of: "alice")

            let unread = try await reader.readBatch(filter: UserNotificationFilter(readState: .unread))
            #expect(unread.map(\.appNotificationId) == ["b"])
            let activated = try await reader.readBatch(filter: UserNotificationFilter(userActionState: .activated))
            #expect(activated.map(\.appNotificationId) == ["b"])
            let deleted = try await reader.readBatch(filter: UserNotificationFilter(status: .deleted))
            #expect(deleted.map(\.appNotificationId) == ["a"])
            let everything = try await reader.readBatch(filter: UserNotificationFilter(status: nil))
            #expect(Set(everything.map(\.appNotificationId)) == ["a", "b", "c"])
            #expect(try await reader.readBatch(maxSize: 1).count == 1)
        }
    }

    @Test("server-sent events deliver changes and resume from the stored event ID")
    func serverSentEvents() async throws {
        try await TestHub.run(sseHeartbeat: .milliseconds(300)) { hub in
            let storage = InMemoryHubClientStorage()
            let device = try await makeDevice(hub, storage: storage, updates: .serverSentEvents)
            try await device.register(Self.phone)
            let stream = ChangeRecorder(device.notificationChannel.createReader())
            try await hub.publish("first", to: "alice")
            #expect(await stream.latest("first") != nil)
            try await hub.publish("second", to: "alice")
            #expect(await stream.latest("second") != nil)
            await stream.stop()

            try await hub.publish("third", to: "alice")
            let again = try await makeDevice(hub, storage: storage, updates: .serverSentEvents)
            let resumed = ChangeRecorder(again.notificationChannel.createReader())
            #expect(await resumed.wait { $0.contains { $0.appNotificationId == "third" } })
            #expect(resumed.changes.map(\.appNotificationId) == ["third"])
            #expect(resumed.error == nil)
            await resumed.stop()
        }
    }

    @Test("a tap's badge goes to Configuration.applyBadge before the sync; another app's tap's does not")
    func shoulderTapBadge() async throws {
        try await TestHub.run { hub in
            let applied = Mutex<[Int]>([])
            var configuration = HubClient.Configuration()
            configuration.feedUpdates = .shoulderTaps
            configuration.applyBadge = { count in applied.withLock { $0.append(count) } }
            let device = HubClient(
                baseURL: hub.baseURL, app: TestHub.app, storage: InMemoryHubClientStorage(),
                session: HubClient.defaultSession, configuration: configuration
            ) { _ in try await hub.token(user: "alice") }
            try await hub.publish("counted", to: "alice")
            let synced = try await device.handleShoulderTap(
                ["aps": ["badge": 1, "content-available": 1], "hub": ["app": TestHub.app]])
            #expect(synced?.map(\.appNotificationId) == ["counted"])
            #expect(try await device.handleShoulderTap(["hub": "tap", "app": TestHub.app, "badge": "0"]) != nil)
            #expect(
                try await device.handleShoulderTap(["hub": "tap", "app": "other.example.com", "badge": "9"]) == nil)
            #expect(applied.withLock { $0 } == [1, 0])
        }
    }

    @Test("saving a read answers this device's badge (it is not tapped for it) to Configuration.applyBadge")
    func saveAppliesBadge() async throws {
        try await TestHub.run(badges: true) { hub in
            let applied = Mutex<[Int]>([])
            var configuration = HubClient.Configuration()
            configuration.feedUpdates = .shoulderTaps
            configuration.applyBadge = { count in applied.withLock { $0.append(count) } }
            let device = HubClient(
                baseURL: hub.baseURL, app: TestHub.app, storage: InMemoryHubClientStorage(),
                session: HubClient.defaultSession, configuration: configuration
            ) { _ in try await hub.token(user: "alice") }
            try await device.register(Self.phone)
            try await hub.publish("first", to: "alice")
            try await hub.publish("second", to: "alice")
            var notifications = try await device.notificationChannel.createReader().readBatch(maxSize: 10)
            #expect(notifications.count == 2)
            notifications[0].readState = .read
            try await notifications[0].save()
            #expect(applied.withLock { $0 } == [1], "one of two left unread")
            notifications[1].userActionState = .dismissed
            try await notifications[1].save()
            #expect(applied.withLock { $0 } == [1, 0])
        }
    }

    @Test("a shoulder tap syncs a push endpoint's feed; other payloads are not taps")
    func shoulderTap() async throws {
        try await TestHub.run { hub in
            let device = try await makeDevice(hub)
            let token = Data([0xAB, 0x01, 0xFF, 0x00])
            try await device.register(.apns(appId: TestHub.iosAppID, deviceToken: token, environment: .development))
            let changes = ChangeRecorder(device.notificationChannel.createReader())
            try await hub.publish("tapped", to: "alice")
            #expect(await eventually { hub.apnsTokensTapped == ["ab01ff00"] }, "the hub tapped the apns endpoint")

            let tap: [AnyHashable: Any] = ["aps": ["content-available": 1], "hub": ["app": TestHub.app]]
            let synced = try #require(try await device.handleShoulderTap(tap))
            // The reader may have synced on its own before the tap was handled; either way the
            // notification arrives exactly once, and the tap's sync returns nothing else.
            #expect(synced.allSatisfy { $0.appNotificationId == "tapped" })
            #expect(await changes.wait { $0.map(\.appNotificationId) == ["tapped"] })
            #expect(try await device.handleShoulderTap(tap)?.isEmpty == true)  // nothing new

            #expect(try await device.handleShoulderTap(["aps": ["alert": "Hi"]]) == nil)
            #expect(try await device.handleShoulderTap(["hub": ["app": "other.example.com"]]) == nil)
            #expect(try await device.handleShoulderTap(["hub": "tap", "app": TestHub.app, "v": "9"]) != nil)  // FCM
            await changes.stop()
        }
    }
}
