import Foundation
public import HubCore

// A batch publish (`Hub.publish(app:batch:)`: the batch route, a broadcast's chunk) is written in
// one transaction whatever its size, by the statements of concurrent publishes
// (`PostgresStore+Publish.swift`): lock the feeds, read, write every notification and delivery
// in one statement. Those statements take one publish per feed, so a batch that publishes to a
// feed more than once runs in rounds inside the transaction: round k holds each feed's k-th
// request and reads what the rounds before it wrote (a later request for the same notification
// updates it). Every feed of every round is locked by the first round, in the sweep's order, so a
// batch never deadlocks with the sweep or with concurrent publishes. A batch of distinct feeds is
// four round trips: BEGIN, lock and read, write, COMMIT.
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
        let rounds = Self.rounds(requests.map(\.key))
        return try await transaction { db in
            var results = [PublishResult?](repeating: nil, count: requests.count)
            for round in rounds {
                for (index, result) in zip(round, try await Self.publish(round.map { requests[$0] }, db)) {
                    results[index] = result
                }
            }
            return try results.map { result in
                guard let result else { throw PostgresStoreError(.server, "a batch publish left a request unanswered") }
                return result
            }
        }
    }

    /// The indices of `keys` in rounds of distinct feeds: round k holds each feed's k-th index, in
    /// order.
    static func rounds(_ keys: [FeedKey]) -> [[Int]] {
        var rounds: [[Int]] = []
        var seen: [FeedKey: Int] = [:]
        for (index, key) in keys.enumerated() {
            let round = seen[key, default: 0]
            seen[key] = round + 1
            if round == rounds.count { rounds.append([]) }
            rounds[round].append(index)
        }
        return rounds
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
