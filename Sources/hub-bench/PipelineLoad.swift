import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// What the publish load saw: answers by kind, accepted publishes per user.
final class PublishTally: Sendable {
    struct State {
        var accepted = 0
        /// Accepted before ``windowEnd``.
        var acceptedInWindow = 0
        /// Answers other than 2xx, by status.
        var refused: [Int: Int] = [:]
        /// Connections that failed or closed with a publish in flight.
        var failures = 0
        /// Publishes answered (any status) or lost with their connection.
        var completed = 0
        var publishesPerUser: [Int32]
    }

    private let state: Mutex<State>
    /// ``Monotonic`` ns after which accepted publishes no longer count as in the window.
    private let windowEnd = Atomic<UInt64>(.max)

    init(users: Int) {
        state = Mutex(State(publishesPerUser: Array(repeating: 0, count: users)))
    }

    /// Accepted publishes answered after `end` (``Monotonic`` ns) count only in ``State/accepted``.
    func closeWindow(at end: UInt64) { windowEnd.store(end, ordering: .relaxed) }

    func answered(user: Int, status: Int) {
        let inWindow = Monotonic.now() <= windowEnd.load(ordering: .relaxed)
        state.withLock { state in
            state.completed += 1
            if (200..<300).contains(status) {
                state.accepted += 1
                if inWindow { state.acceptedInWindow += 1 }
                state.publishesPerUser[user] += 1
            } else {
                state.refused[status, default: 0] += 1
            }
        }
    }

    func failed(publishesLost: Int) {
        state.withLock { state in
            state.failures += 1
            state.completed += publishesLost
        }
    }

    var snapshot: State { state.withLock { $0 } }
    var completed: Int { state.withLock { $0.completed } }
}

/// The users of the closed-loop load, in turn, until a deadline.
final class PublishSequence: Sendable {
    private let counter = Atomic<Int>(0)
    private let deadline = Atomic<UInt64>(0)
    let users: Int

    init(users: Int) { self.users = users }

    /// Publishing goes on until `end` (``Monotonic`` ns).
    func start(until end: UInt64) { deadline.store(end, ordering: .relaxed) }

    /// The user of the next publish (the first of the next `count` users, for a batch), or `nil`
    /// once the deadline has passed.
    func next(count: Int = 1) -> Int? {
        guard Monotonic.now() < deadline.load(ordering: .relaxed) else { return nil }
        return counter.wrappingAdd(count, ordering: .relaxed).oldValue % users
    }
}

/// Where publishes go: one hub instance, the app and the publisher key.
struct PublishTarget: Sendable {
    var port: Int
    var app: String
    var publisherKey: String
    /// When set, the connections ask `GET` this path instead of publishing (the HTTP ceiling).
    var probe: String?
    /// When set, each request is a batch publish of this many users, from the user it is given
    /// on, modulo ``userCount``.
    var batchSize: Int?
    var userCount = 1

    /// This target with requests of `size` users each (`nil`: single publishes).
    func batches(of size: Int?, users: Int) -> PublishTarget {
        var target = self
        target.batchSize = size
        target.userCount = users
        return target
    }

    /// This target's instance asked `GET /healthz` instead (the HTTP ceiling and floor).
    var healthProbe: PublishTarget {
        var probe = self
        probe.probe = "/healthz"
        return probe
    }
}

/// HTTP/1.1 keep-alive connections that publish to `hub serve`, one publish in flight each.
///
/// Closed loop (throughput): every connection asks `next` for a user after each answer, until it
/// says `nil`. Open loop (latency): ``submit(user:on:)`` queues a publish on one connection.
final class PublishLoad: Sendable {
    let channels: [any Channel]
    private let finished: [EventLoopFuture<Void>]

    private init(channels: [any Channel], finished: [EventLoopFuture<Void>]) {
        self.channels = channels
        self.finished = finished
    }

    /// Opens `connections` connections, spread over `targets` in turn.
    static func connect(
        _ connections: Int, to targets: [PublishTarget], group: any EventLoopGroup, tally: PublishTally,
        next: (@Sendable () -> Int?)?
    ) async throws -> PublishLoad {
        var channels: [any Channel] = []
        var finished: [EventLoopFuture<Void>] = []
        for index in 0..<max(1, connections) {
            let target = targets[index % targets.count]
            let promise = group.any().makePromise(of: Void.self)
            let channel = try await ClientBootstrap(group: group)
                .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(
                            PublishClientHandler(
                                connection: index, target: target, tally: tally, next: next, finished: promise))
                    }
                }
                .connect(host: "127.0.0.1", port: target.port)
                .get()
            channels.append(channel)
            finished.append(promise.futureResult)
        }
        return PublishLoad(channels: channels, finished: finished)
    }

    /// Closed loop: every connection sends its first publish.
    func start() {
        for channel in channels {
            channel.eventLoop.execute {
                try? channel.pipeline.syncOperations.handler(type: PublishClientHandler.self).sendNext()
            }
        }
    }

    /// Closed loop: returns when every connection has had `nil` from `next` and its last answer.
    func waitUntilFinished() async {
        for future in finished { try? await future.get() }
    }

    /// Open loop: queues a publish for `user` on connection `index` (modulo the count).
    func submit(user: Int, on index: Int) {
        let channel = channels[index % channels.count]
        channel.eventLoop.execute {
            try? channel.pipeline.syncOperations.handler(type: PublishClientHandler.self).enqueue(user)
        }
    }

    func close() async {
        for channel in channels { try? await channel.close() }
    }
}

/// One connection's publishes: writes a request, reads its answer, writes the next.
final class PublishClientHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let connection: Int
    private let target: PublishTarget
    private let tally: PublishTally
    private let next: (@Sendable () -> Int?)?
    private let finished: EventLoopPromise<Void>
    private let headers: HTTPHeaders
    private var context: ChannelHandlerContext?
    private var queue = CircularBuffer<Int>()
    private var inFlight: Int?
    private var status = 0
    /// The answer's body, kept for a batch (its items' statuses).
    private var answer: ByteBuffer?
    private var sequence = 0
    private var done = false

    init(
        connection: Int, target: PublishTarget, tally: PublishTally, next: (@Sendable () -> Int?)?,
        finished: EventLoopPromise<Void>
    ) {
        self.connection = connection
        self.target = target
        self.tally = tally
        self.next = next
        self.finished = finished
        headers = [
            "Host": "127.0.0.1:\(target.port)", "Authorization": "Bearer \(target.publisherKey)",
            "Content-Type": "application/json",
        ]
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// Closed loop: sends the publish `next` names, or finishes when it names none.
    func sendNext() {
        guard inFlight == nil, !done else { return }
        if let user = next?() {
            send(user)
        } else {
            finish()
        }
    }

    /// Open loop: sends at once when idle, else after the answers before it.
    func enqueue(_ user: Int) {
        guard !done else { return tally.failed(publishesLost: 1) }
        if inFlight == nil { send(user) } else { queue.append(user) }
    }

    private func send(_ user: Int) {
        guard let context else { return }
        inFlight = user
        sequence += 1
        if let probe = target.probe {
            let head = HTTPRequestHead(
                version: .http1_1, method: .GET, uri: probe, headers: ["Host": self.headers["Host"].first ?? ""])
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            return
        }
        let body: String
        let uri: String
        if let size = target.batchSize {
            body =
                #"{"notifications":["#
                + (0..<size).map { offset in
                    #"{"userId":"u\#((user + offset) % target.userCount)","appNotificationId":"c\#(connection)-\#(sequence)","payload":{"rawContent":"bench"}}"#
                }.joined(separator: ",") + "]}"
            uri = "/v1/apps/\(target.app)/notifications/batch"
        } else {
            body = #"{"appNotificationId":"c\#(connection)-\#(sequence)","payload":{"rawContent":"bench"}}"#
            uri = "/v1/apps/\(target.app)/users/u\(user)/notifications"
        }
        var headers = self.headers
        headers.add(name: "Content-Length", value: String(body.utf8.count))
        let head = HTTPRequestHead(version: .http1_1, method: .POST, uri: uri, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
            answer = nil
        case .body(var part):
            if target.batchSize != nil {
                if answer == nil { answer = part } else { answer?.writeBuffer(&part) }
            }
        case .end:
            guard let user = inFlight else { return }
            inFlight = nil
            if let size = target.batchSize {
                // Accepted items answer 201 or 200; a refused one its problem's status.
                let text = answer.map { String(buffer: $0) } ?? ""
                let accepted =
                    status == 200
                    ? text.components(separatedBy: #""status":201"#).count - 1
                        + text.components(separatedBy: #""status":200"#).count - 1 : 0
                for offset in 0..<size {
                    tally.answered(
                        user: (user + offset) % target.userCount, status: offset < accepted ? 201 : max(status, 1))
                }
            } else {
                tally.answered(user: user, status: status)
            }
            if next != nil {
                sendNext()
            } else if let queued = queue.popFirst() {
                send(queued)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done {
            let lost = (inFlight == nil ? 0 : 1) + queue.count
            if lost > 0 || next != nil { tally.failed(publishesLost: lost) }
            inFlight = nil
            queue.removeAll()
        }
        finish()
        context.fireChannelInactive()
    }

    private func finish() {
        guard !done else { return }
        done = true
        finished.succeed(())
    }
}
