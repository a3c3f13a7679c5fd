import Dispatch
import HTTPTypes
import HubCore
import HubPolling
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// What a parked request needs to write its access-log line and metrics when it is answered.
///
/// It keeps the request's ID, not the request's logger: Hummingbird gives each request a copy of
/// the server's logger with `hb.request.id` in its metadata (~450 B with its handler and metadata
/// storage), and thousands of requests wait. ``logger`` puts the ID back on the logger all parked
/// requests of the server share.
struct ParkedRequestLog: Sendable {
    private static let requestIDKey = "hb.request.id"
    private let base: Logger
    private let requestID: Logger.MetadataValue?
    let method: String
    let route: String?
    let app: String
    let start: UInt64

    init(_ request: Request, context: HubRequestContext, api: HubAPI, app: String, start: UInt64) {
        self.requestID = context.logger[metadataKey: Self.requestIDKey]
        self.base = api.sharedLogger(like: context.logger, without: Self.requestIDKey)
        self.method = request.method.rawValue
        self.route = context.endpointPath
        self.app = app
        self.start = start
    }

    /// The request's logger, as its route had it.
    var logger: Logger {
        var logger = base
        if let requestID { logger[metadataKey: Self.requestIDKey] = requestID }
        return logger
    }

    func answered(_ status: HTTPResponse.Status) {
        AccessLogMiddleware<HubRequestContext>.log(
            logger, method: method, route: route, status: status.code, start: start, app: app)
        RequestMetricsMiddleware<HubRequestContext>.record(route: route, status: status, start: start)
    }
}

/// A long-poll that found nothing and waits without a task: a ``FeedSignals`` waiter with a
/// callback, a close callback of its connection, and its answer held by the connection's
/// ``ParkingHandler``. Woken (or at its deadline) it reads the feed in a task of its own and
/// answers; its client leaving releases the waiter; a graceful shutdown answers 503 at once.
final class ParkedLongPoll: Sendable {
    struct Feed: Sendable {
        let app: CrossDeviceApp
        let user: String
        let version: Int64
        let limit: Int
        let binding: HubAPI.EndpointBinding
    }

    private let api: HubAPI
    /// The hub's waiting room, where the poll waits.
    private let signals: FeedSignals
    private let feed: Feed
    private let response: ParkedResponse
    private let log: ParkedRequestLog
    private let connection: ObjectIdentifier

    private struct State {
        var parking: FeedSignals.Parking?
        var closeRegistration: UInt64?
        /// Set once by whichever comes first: the wake-up (or deadline) or the client leaving.
        var ended = false
    }
    private let state = Mutex(State())

    init(
        api: HubAPI, signals: FeedSignals, feed: Feed, response: ParkedResponse, log: ParkedRequestLog,
        connection: ObjectIdentifier
    ) {
        self.api = api
        self.signals = signals
        self.feed = feed
        self.response = response
        self.log = log
        self.connection = connection
    }

    /// Waits for a wake-up after `ticket` of the feed (or of the polling endpoint), at most `wait`.
    func park(after ticket: UInt64, wait: Duration) {
        let signals = self.signals
        let registration = ConnectionCloseCallbacks.shared.register(connection, quiescing: { signals.shutDown() }) {
            [self] in clientLeft()
        }
        state.withLock { $0.closeRegistration = registration }
        let key = FeedKey(appId: feed.app.id, userId: feed.user)
        let endpoint: String? = if case .polling(let endpoint, _) = feed.binding { endpoint } else { nil }
        let parking = signals.park(key, endpoint: endpoint, after: ticket, timeout: wait) { [self] woken in
            resume(woken: woken)
        }
        let stillWaiting = state.withLock { state -> Bool in
            if !state.ended { state.parking = parking }
            return !state.ended
        }
        // The client left while it was being parked.
        if !stillWaiting { signals.unpark(parking) }
    }

    /// Marks the poll ended; `false` if it already was.
    private func end() -> Bool {
        let registration = state.withLock { state -> UInt64?? in
            if state.ended { return nil }
            state.ended = true
            return .some(state.closeRegistration)
        }
        guard let registration else { return false }
        if let registration { ConnectionCloseCallbacks.shared.remove(connection, registration) }
        return true
    }

    private func clientLeft() {
        guard end() else { return }
        if let parking = state.withLock({ $0.parking }) { signals.unpark(parking) }
        response.abandon()
        log.answered(HTTPResponse.Status(code: 499, reasonPhrase: "Client Closed Request"))
    }

    /// The 503 of a long-poll that a graceful shutdown ended, rendered once: a shutdown ends
    /// thousands of them at once, on the thread that shut the signals down.
    private static let shutdownAnswer = Problem.shuttingDown.rendered

    private func resume(woken: Bool) {
        guard end() else { return }
        // Shut down with nothing new: answer without reading.
        if !woken && signals.isShutDown {
            answerShutDown()
            return
        }
        Task { await answerWithFeed() }
    }

    private func answerShutDown() {
        let (headers, body) = Self.shutdownAnswer
        let log = self.log
        let status = Problem.shuttingDown.kind.status
        response.answer(status: status, headers: headers, body: body) { log.answered(status) }
    }

    private func answerWithFeed() async {
        do {
            let page = try await api.sync(
                app: feed.app, user: feed.user, after: feed.version, limit: feed.limit, binding: feed.binding
            )
            if page.changes.isEmpty && signals.isShutDown {
                answerShutDown()
                return
            }
            HubMetrics.sync(app: feed.app.id, mode: .longpoll)
            let body = JSON.data(api.pageResource(page, app: feed.app, user: feed.user))
            response.answer(
                status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: ByteBuffer(bytes: body))
            log.answered(.ok)
        } catch {
            answer(ProblemMiddleware<HubRequestContext>.problem(for: error, logger: log.logger, path: log.route))
        }
    }

    private func answer(_ problem: Problem) {
        let (headers, body) = problem.rendered
        response.answer(status: problem.kind.status, headers: headers, body: body)
        log.answered(problem.kind.status)
    }
}
