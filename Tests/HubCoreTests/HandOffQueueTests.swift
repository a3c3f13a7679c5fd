import Foundation
import Testing

@testable import HubCore

@Suite("delivery pipeline: a lane's hand-off queue")
struct HandOffQueueTests {
    private func items(_ ids: Range<Int64>) -> [ClaimedDelivery] {
        let created = Date(timeIntervalSince1970: 1000)
        let endpoint = Endpoint(
            id: "e", appId: "a", userId: "u", platform: .ios, platformAppId: "com.a.b", transport: .apns,
            registeredAt: created)
        return ids.map { id in
            ClaimedDelivery(
                delivery: Delivery(
                    id: id, appId: "a", userId: "u", endpointId: "e", kind: .shoulderTap, notificationId: "n",
                    changeVersion: 1, priority: .none, createdAt: created, dueAt: created),
                endpoint: endpoint, notification: nil)
        }
    }

    @Test("takes in arrival order across appends, partial takes and compaction; never more than asked")
    func order() {
        var queue = HandOffQueue()
        #expect(queue.take(5).isEmpty)
        queue.append(items(0..<10))
        #expect(queue.take(3).map(\.delivery.id) == [0, 1, 2])
        #expect(queue.count == 7)
        queue.append(items(10..<12))
        #expect(queue.take(6).map(\.delivery.id) == [3, 4, 5, 6, 7, 8])
        // More than half was taken: the next append drops the taken ones first.
        queue.append(items(12..<15))
        #expect(queue.count == 6)
        #expect(queue.take(0).isEmpty)
        #expect(queue.take(100).map(\.delivery.id) == [9, 10, 11, 12, 13, 14])
        #expect(queue.count == 0)
        queue.append(items(15..<17))
        #expect(queue.take(Int.max).map(\.delivery.id) == [15, 16])
    }
}
