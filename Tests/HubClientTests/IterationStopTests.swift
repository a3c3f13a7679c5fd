import Foundation
import HubTesting
import Synchronization
import Testing

@testable import HubClient

/// The update loop's page that arrives after the last iteration of `changes` stopped: no one got
/// its changes, so they must not move the feed position (the restart gap of issue 19).
@Suite("HubClient when the last iteration stops", .serialized, .timeLimit(.minutes(2)))
struct IterationStopTests {
    @Test(
        "a page the update loop gets after the last iteration stopped reaches the next iteration and a restarted client",
        arguments: [FeedUpdates.longPolling, .serverSentEvents])
    func pageAfterLastIteration(updates: FeedUpdates) async throws {
        try await TestHub.run(sseHeartbeat: .milliseconds(300)) { hub in
            let storage = InMemoryHubClientStorage()
            let device = try await makeDevice(hub, storage: storage, updates: updates)
            try await device.register(SyncTests.phone)
            let first = ChangeRecorder(device.notificationChannel.createReader())
            try await hub.publish("one", to: "alice")
            #expect(await first.wait { $0.map(\.appNotificationId) == ["one"] })
            await first.stop()
            let handedOut = await device.feed.position.version

            // The loop's request for the next page, answered after the last iteration stopped: the
            // race made certain by running the loop's path with no iteration at all.
            try await hub.publish("two", to: "alice")
            let finished = Finished()
            let stray = Task {
                defer { finished.set() }
                if updates == .serverSentEvents {
                    try await device.feed.streamEvents()
                } else {
                    _ = try await device.feed.longPoll()
                }
            }
            // The path either gives up on the page (fixed) or moves the position (the gap).
            _ = await eventually {
                if finished.value { return true }
                return await device.feed.position.version != handedOut
            }
            stray.cancel()
            _ = await stray.result
            #expect(await device.feed.position.version == handedOut, "the position moved past changes no one got")

            // A client created again on the storage (the app restarted) resumes before the change.
            let restarted = try await makeDevice(hub, storage: storage, updates: updates)
            let resumed = ChangeRecorder(restarted.notificationChannel.createReader())
            #expect(await resumed.wait { $0.contains { $0.appNotificationId == "two" } })
            #expect(resumed.changes.map(\.appNotificationId) == ["two"])
            #expect(resumed.error == nil)
            await resumed.stop()

            // The same client's next iteration (its position in memory) gets the change as well.
            let next = ChangeRecorder(device.notificationChannel.createReader())
            #expect(await next.wait { $0.contains { $0.appNotificationId == "two" } })
            #expect(next.changes.map(\.appNotificationId) == ["two"])
            await next.stop()
        }
    }
}

/// Whether a task finished, for a test that polls it.
private final class Finished: Sendable {
    private let state = Mutex(false)
    var value: Bool { state.withLock { $0 } }
    func set() { state.withLock { $0 = true } }
}
