import NIOCore
import NIOHTTP2

public import struct Foundation.Date

/// Knobs that make the emulator behave as APNs does to real senders on bad days.
extension APNSEmulator {
    /// Answers `410 Unregistered` for `token` from now on, with `timestamp` as the time the app was
    /// uninstalled (the hub keeps a token registered again after it).
    public func markUnregistered(token: String, at timestamp: Date) {
        state.withLock {
            $0.unregistered[token] = timestamp
            $0.unregisteredAtFirstSend.remove(token)
        }
    }

    /// Answers `410 Unregistered` for `token` from its first request on, with that request's time
    /// as the timestamp: the app was uninstalled after the device registered with the hub, so the
    /// hub's 410 handling (drop the token unless it was registered again after the timestamp)
    /// drops it. A time fixed before the hub registered the token would rightly keep it.
    public func markUnregisteredFromFirstSend(token: String) {
        state.withLock {
            $0.unregistered[token] = nil
            $0.unregisteredAtFirstSend.insert(token)
        }
    }

    /// Answers the next `count` valid requests (to `token`, or to any token) with `status` and
    /// `reason`, such as `429 TooManyRequests`, `500 InternalServerError`, `503 ServiceUnavailable`,
    /// or any reason of Apple's table. A `410` gets the current time as its timestamp.
    public func fail(
        next count: Int = 1, status: Int, reason: String, retryAfter: String? = nil, token: String? = nil
    ) {
        state.withLock { state in
            state.failures.append(
                .init(status: status, reason: reason, retryAfter: retryAfter, remaining: count, token: token))
        }
    }

    /// Throttles one device: `429 TooManyRequests` for its next `count` requests.
    public func throttle(token: String, count: Int = 1, retryAfter: String? = nil) {
        fail(next: count, status: 429, reason: "TooManyRequests", retryAfter: retryAfter, token: token)
    }

    /// Never answers requests to `token` (they are recorded); for request-timeout tests.
    public func hold(token: String) { state.withLock { _ = $0.held.insert(token) } }

    /// Delays every answer by `delay` (`nil` answers at once), to build up concurrent streams.
    public func setResponseDelay(_ delay: Duration?) { state.withLock { $0.responseDelay = delay } }

    /// Closes every open connection at once, without GOAWAY: in-flight requests get no answer.
    public func resetConnections() {
        for connection in openConnections { connection.channel?.close(promise: nil) }
    }

    /// Sends GOAWAY (`NO_ERROR`, debug data `{"reason": …}`) on every open connection: streams
    /// already received are answered, then the connection closes; later streams are refused.
    public func sendGoAway(reason: String = "Shutdown") {
        for connection in openConnections {
            guard let channel = connection.channel else { continue }
            channel.eventLoop.execute {
                let lastStreamID = connection.state.withLock { state -> Int in
                    state.goingAway = true
                    return state.highestStreamID
                }
                let data = channel.allocator.buffer(string: "{\"reason\":\"\(reason)\"}")
                let frame = HTTP2Frame(
                    streamID: .rootStream,
                    payload: .goAway(
                        lastStreamID: HTTP2StreamID(lastStreamID), errorCode: .noError, opaqueData: data))
                channel.writeAndFlush(frame).whenComplete { _ in
                    if connection.state.withLock({ $0.activeStreams == 0 }) { channel.close(promise: nil) }
                }
            }
        }
    }

    /// Sets `SETTINGS_MAX_CONCURRENT_STREAMS` for connections after their first valid request, and
    /// announces it at once on every open connection that already passed that point.
    public func setMaxConcurrentStreams(_ limit: Int) {
        state.withLock { $0.maxConcurrentStreams = limit }
        for connection in openConnections where connection.state.withLock({ $0.raisedLimit }) {
            let frame = HTTP2Frame(
                streamID: .rootStream,
                payload: .settings(.settings([.init(parameter: .maxConcurrentStreams, value: limit)])))
            connection.channel?.writeAndFlush(frame, promise: nil)
        }
    }

    /// Drops every byte that arrives on the open connections: requests and PINGs go unanswered, as
    /// on a dead path. The connections still notice when the client closes them (turning reads off
    /// instead would leave a closed socket polled forever and starve the event loop).
    public func stallConnections() {
        for connection in openConnections {
            guard let channel = connection.channel else { continue }
            channel.eventLoop.execute {
                try? channel.pipeline.syncOperations.addHandler(APNSEmulatorBlackHole(), position: .first)
            }
        }
    }

    private var openConnections: [APNSEmulatorConnection] {
        state.withLock { Array($0.connections.values) }.filter { !$0.state.withLock(\.isClosed) }
    }
}

/// Swallows every inbound byte of a stalled connection; only the close gets through.
private final class APNSEmulatorBlackHole: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
