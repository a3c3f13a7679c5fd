import HTTPTypes
import HubCore
import HubPolling
import NIOCore
import Synchronization

/// An event stream (``HubAPI/serverSentEvents(_:context:app:user:after:binding:start:)``) that
/// waits without a task: between wake-ups it is a ``FeedSignals`` waiter with a callback and a
/// close callback of its connection; its response goes out through the connection's
/// ``ParkingHandler``. A wake-up reads the feed and writes its events in a task that ends with
/// them; a heartbeat writes `: keepalive` from the callback, reading nothing.
///
/// It writes only after the client took what it was sent, so a client that stops reading stops
/// the stream (not the hub's memory) until it reads again; a wake-up meanwhile is not lost (the
/// stream waits again with the ticket taken before its last read).
final class ParkedEventStream: Sendable {
    private let api: HubAPI
    private let feed: ParkedLongPoll.Feed
    private let response: ParkedResponse
    private let log: ParkedRequestLog
    private let connection: ObjectIdentifier

    private struct State {
        var version: Int64
        /// Taken before the last read: a wake-up after it is one the stream has not read.
        var ticket: UInt64 = 0
        var epoch: UInt64 = 0
        var parking: FeedSignals.Parking?
        var closeRegistration: UInt64?
        var ended = false
    }
    private let state: Mutex<State>

    init(
        api: HubAPI, signals: FeedSignals, feed: ParkedLongPoll.Feed, response: ParkedResponse, log: ParkedRequestLog,
        connection: ObjectIdentifier
    ) {
        self.api = api
        self.signals = signals
        self.feed = feed
        self.response = response
        self.log = log
        self.connection = connection
        self.state = Mutex(State(version: feed.version))
    }

    /// The hub's waiting room, where the stream waits between wake-ups.
    private let signals: FeedSignals
    private var key: FeedKey { FeedKey(appId: feed.app.id, userId: feed.user) }

    /// Writes the head and reads the feed from the stream's start.
    func start(headers: HTTPFields) {
        let signals = self.signals
        let registration = ConnectionCloseCallbacks.shared.register(connection, quiescing: { signals.shutDown() }) {
            [self] in clientLeft()
        }
        state.withLock { $0.closeRegistration = registration }
        response.send([
            .head(HTTPResponse(status: .ok, headerFields: headers)), .body(ByteBuffer(string: "retry: 3000\n\n")),
        ])
        log.answered(.ok)
        Task { await read() }
    }

    /// Reads the feed and writes its changes until it has none left, then waits.
    private func read() async {
        do {
            while true {
                let (ticket, epoch) = (signals.ticket(), signals.epoch)
                let version = state.withLock { state in
                    state.ticket = ticket
                    state.epoch = epoch
                    return state.version
                }
                let page = try await api.sync(
                    app: feed.app, user: feed.user, after: version, limit: 100, binding: feed.binding)
                if page.changes.isEmpty { break }
                let events = api.events(page.changes, app: feed.app, user: feed.user)
                state.withLock { $0.version = max(page.version, page.changes.last?.changeVersion ?? version) }
                guard await write(events) else { return }
                if !page.hasMore { break }
            }
        } catch {
            log.logger.warning("event stream ended: reading the feed failed", metadata: ["error": "\(error)"])
            finish(with: nil)
            return
        }
        wait()
    }

    /// Waits for the next wake-up or heartbeat (or ends the stream when the server shuts down).
    private func wait() {
        if signals.isShutDown {
            finish(with: EventStreamText.shutdown)
            return
        }
        let (ticket, ended) = state.withLock { ($0.ticket, $0.ended) }
        if ended { return }
        let endpoint: String? = if case .polling(let endpoint, _) = feed.binding { endpoint } else { nil }
        let parking = signals.park(key, endpoint: endpoint, after: ticket, timeout: api.configuration.sseHeartbeat) {
            [self] woken in resume(woken: woken)
        }
        let stillOpen = state.withLock { state -> Bool in
            if !state.ended { state.parking = parking }
            return !state.ended
        }
        if !stillOpen { signals.unpark(parking) }
    }

    private func resume(woken: Bool) {
        let epoch = state.withLock { state -> UInt64? in
            state.parking = nil
            return state.ended ? nil : state.epoch
        }
        guard let epoch else { return }
        if signals.isShutDown {
            finish(with: EventStreamText.shutdown)
        } else if woken || signals.epoch != epoch {
            Task { await read() }
        } else {
            // A heartbeat: nothing read, nothing new to wait for.
            response.send([.body(ByteBuffer(string: ": keepalive\n\n"))]) { [self] written in
                if written { wait() } else { clientLeft() }
            }
        }
    }

    /// Writes `events`; `false` when the connection closed.
    private func write(_ events: ByteBuffer) async -> Bool {
        await withCheckedContinuation { continuation in
            response.send([.body(events)]) { continuation.resume(returning: $0) }
        }
    }

    /// Ends the stream with a last `text` (if any) and the response's end.
    private func finish(with text: String?) {
        guard let registration = end() else { return }
        if let registration { ConnectionCloseCallbacks.shared.remove(connection, registration) }
        var parts: [ParkingHandler.Part] = []
        if let text { parts.append(.body(ByteBuffer(string: text))) }
        parts.append(.end)
        response.send(parts)
    }

    private func clientLeft() {
        guard let registration = end() else { return }
        if let registration { ConnectionCloseCallbacks.shared.remove(connection, registration) }
        response.abandon()
    }

    /// Marks the stream ended and releases its waiter; `nil` if it already was, else its close registration.
    private func end() -> UInt64?? {
        let ended = state.withLock { state -> (FeedSignals.Parking?, UInt64?)? in
            if state.ended { return nil }
            state.ended = true
            defer { state.parking = nil }
            return (state.parking, state.closeRegistration)
        }
        guard let ended else { return nil }
        let (parking, registration) = ended
        if let parking { signals.unpark(parking) }
        return .some(registration)
    }
}

/// The fixed texts of an event stream.
enum EventStreamText {
    /// The last event of a stream the server ends because it shuts down gracefully: the client
    /// reconnects after `retry` (1 s) with the last event ID it saw, here or on another instance.
    static let shutdown = "retry: 1000\nevent: shutdown\ndata: {\"retryAfter\":1}\n\n"
}
