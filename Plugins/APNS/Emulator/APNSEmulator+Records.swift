public import struct Foundation.Date

extension APNSEmulator {
    /// One request the emulator answered (held requests are recorded too, with the status they
    /// would have had).
    public struct Request: Sendable {
        /// Which connection it came on (1, 2, … in accept order).
        public var connectionID: Int
        public var deviceToken: String
        /// Header fields by lower-case name, pseudo-headers (`:path`, …) included.
        public var headers: [String: String]
        public var payload: [UInt8]
        public var status: Int
        /// Apple's reason for an error answer.
        public var reason: String?
        /// What exactly the emulator objected to, or `scripted failure`.
        public var note: String?
        /// By the emulator's clock.
        public var receivedAt: Date
        /// Names of the fields the client sent as HPACK literals without indexing or never indexed
        /// (RFC 7541 §6.2.2–6.2.3), in order: what Apple's HPACK guidance is checked against.
        public var unindexedHeaders: [String] = []

        public func header(_ name: String) -> String? { headers[name.lowercased()] }

        /// The payload parsed, or `nil` when it is not JSON.
        public var json: JSON? { JSON.parse(payload) }
    }

    /// Counters over the emulator's life.
    public struct Statistics: Sendable, Hashable {
        public var connectionsAccepted: Int
        public var openConnections: Int
        /// The most streams any one connection had open at once.
        public var maxConcurrentStreams: Int
        public var pingsReceived: Int
        public var requests: Int
        public var responsesByStatus: [Int: Int]
    }

    /// Every recorded request, in arrival order.
    public var requests: [Request] { state.withLock { $0.records } }

    /// The recorded requests to one device token.
    public func requests(to token: String) -> [Request] { requests.filter { $0.deviceToken == token } }

    /// How many requests each device token got, counting only those answered with `status`.
    public func requestCounts(status: Int? = nil) -> [String: Int] {
        state.withLock { state in
            var counts: [String: Int] = [:]
            for request in state.records where status == nil || request.status == status {
                counts[request.deviceToken, default: 0] += 1
            }
            return counts
        }
    }

    public var statistics: Statistics {
        let (snapshot, connections) = state.withLock { state in
            (
                Statistics(
                    connectionsAccepted: state.connectionsAccepted, openConnections: 0, maxConcurrentStreams: 0,
                    pingsReceived: state.pingsReceived, requests: state.requestCount,
                    responsesByStatus: state.statusCounts),
                Array(state.connections.values)
            )
        }
        var statistics = snapshot
        for connection in connections {
            let (open, maximum) = connection.state.withLock { (!$0.isClosed, $0.maxActiveStreams) }
            if open { statistics.openConnections += 1 }
            statistics.maxConcurrentStreams = max(statistics.maxConcurrentStreams, maximum)
        }
        return statistics
    }

    /// The most streams each connection had open at once, by connection ID.
    public var maxConcurrentStreamsByConnection: [Int: Int] {
        let connections = state.withLock { Array($0.connections.values) }
        return Dictionary(uniqueKeysWithValues: connections.map { ($0.id, $0.state.withLock { $0.maxActiveStreams }) })
    }

    /// Forgets the recorded requests (counters keep counting).
    public func clearRecords() { state.withLock { $0.records.removeAll() } }
}
