import Foundation
public import HubCore

// A batch publish (`Hub.publish(app:batch:)`: the batch route, a broadcast's chunk) is written in
// one transaction whatever its size, by the statements of concurrent publishes
// (`PostgresStore+Publish.swift`): lock the feeds, read, write every notification and delivery
// in one statement. Those statements take one publish per feed and number what they write in the
// order of their publishes, so a batch runs in request order as HubCore's batch rule
// (`OutboxMachine.batchSegments`) splits it: consecutive requests of distinct feeds share a
// statement pair, and a request to a feed its segment already has starts the next one, which
// reads what the segments before it wrote (a later request for the same notification updates
// it). Versions and the rows' numbers (the claim order's last tie-break) are then those of
// publishing the requests one by one, as on SQLite. Every feed of the batch is locked by the
// first segment's statement, in the sweep's order; the later segments lock nothing more, so a
// batch never deadlocks with the sweep or with concurrent publishes. A batch of distinct feeds
// is one segment: four round trips (BEGIN, lock and read, write, COMMIT), and two more for each
// further segment.
extension PostgresStore {
    /// Publishes `requests` in one transaction, each as ``publish(_:)`` would, in request order;
    /// see the comment at the top of this file. The batch commits whole or not at all.
    public func publish(batch requests: [PublishRequest]) async throws -> [PublishResult] {
        guard requests.count > 1 else {
            return try await requests.asyncMapInOrder { try await publish($0) }
        }
        for request in requests { try Identifier.checkBeforeStoring(request) }
        // One hand-off owner per transaction, as for concurrent publishes; the requests of one
        // hub's batch all share its dispatcher's.
        guard Set(requests.compactMap(\.handOff?.owner)).count <= 1 else {
            return try await requests.asyncMapInOrder { try await publish($0) }
        }
        let keys = requests.map(\.key)
        let feeds = Self.sweepOrder(Array(Set(keys)))
        return try await transaction { db in
            var results: [PublishResult] = []
            results.reserveCapacity(requests.count)
            for (number, segment) in OutboxMachine.batchSegments(keys).enumerated() {
                results += try await Self.publish(Array(requests[segment]), locking: number == 0 ? feeds : [], db)
            }
            return results
        }
    }
}

extension Array where Element: Sendable {
    /// `transform` of each element, one after the other.
    fileprivate func asyncMapInOrder<T>(_ transform: (Element) async throws -> T) async throws -> [T] {
        var results: [T] = []
        results.reserveCapacity(count)
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
