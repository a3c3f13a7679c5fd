import HTTPTypes
import HubCore
import Hummingbird
import NIOCore
import ServiceLifecycle

extension HubAPI {
    /// `GET …/me/feed` with `Accept: text/event-stream`: the feed as server-sent events.
    ///
    /// Every change is one event, `id: <cursor>`, `event: notification`, `data: <Notification
    /// JSON>`; a client resumes after the last event it saw by sending its ID as `Last-Event-ID`
    /// (or `cursor=`). When nothing changes for ``HubServerConfiguration/sseHeartbeat`` the stream
    /// writes a `: keepalive` comment, so proxies keep the connection open. The stream ends when
    /// the client goes away, or when the server shuts down gracefully, with a last
    /// `event: shutdown` (`retry: 1000`, `data: {"retryAfter":1}`).
    ///
    /// On the hub's own server the stream waits without a task (``ParkedEventStream``); elsewhere
    /// (a router test) in the response body's task.
    func serverSentEvents(
        _ request: Request, context: HubRequestContext, app: CrossDeviceApp, user: String, after version: Int64,
        binding: EndpointBinding, start: UInt64
    ) -> Response {
        HubMetrics.sync(app: app.id, mode: .sse)
        let headers: HTTPFields = [
            .contentType: "text/event-stream; charset=utf-8",
            .cacheControl: "no-cache",
            HTTPField.Name("X-Accel-Buffering")!: "no",
        ]
        if let parked = ParkedResponse.make(on: context.channel) {
            let stream = ParkedEventStream(
                api: self,
                feed: ParkedLongPoll.Feed(app: app, user: user, version: version, limit: 100, binding: binding),
                response: parked,
                log: ParkedRequestLog(request, context: context, api: self, app: app.id, start: start),
                connection: context.connection)
            stream.start(headers: headers)
            return Response(status: .ok, headers: parked.placeholderHeaders)
        }
        let stream = EventStream(api: self, app: app, user: user, binding: binding)
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                do {
                    try await request.body.consumeWithCancellationOnInboundClose { _ in
                        try await stream.run(from: version, into: &writer)
                    }
                    try await writer.finish(nil)
                } catch is CancellationError {
                    // The client went away; nothing is left to write to.
                }
            })
    }
}

/// One client's event stream: loops on the feed, waiting up to the heartbeat for each change.
private struct EventStream: Sendable {
    let api: HubAPI
    let app: CrossDeviceApp
    let user: String
    let binding: HubAPI.EndpointBinding

    /// Writes events until cancelled (client gone) or graceful shutdown, which ends the stream
    /// with ``EventStreamText/shutdown``.
    ///
    /// The store is read at the start and after each wake-up of the feed, never for a heartbeat:
    /// a wait that times out writes `: keepalive` and waits again with the ticket taken before
    /// the last read, so a wake-up in between is not lost. (A polling endpoint is not woken by its
    /// own state changes; its stream shows them with the next change.) When the signals forgot
    /// wake-ups (a relay to other instances was down: ``FeedSignals/epoch`` moved), it reads once.
    func run(from start: Int64, into writer: inout any ResponseBodyWriter) async throws {
        let signals = api.hub.signals
        let key = FeedKey(appId: app.id, userId: user)
        let wakeEndpoint: String? = if case .polling(let endpoint, _) = binding { endpoint } else { nil }
        let heartbeat = api.configuration.sseHeartbeat
        try await withGracefulShutdownHandler {
            var version = start
            try await writer.write(ByteBuffer(string: "retry: 3000\n\n"))
            var ticket = signals.ticket()
            var epoch = signals.epoch
            var read = true
            while !Task.isCancelled && !signals.isShutDown {
                if read {
                    ticket = signals.ticket()
                    epoch = signals.epoch
                    let page = try await api.sync(
                        app: app, user: user, after: version, limit: 100, wait: nil, binding: binding)
                    if Task.isCancelled { return }
                    if !page.changes.isEmpty {
                        try await writer.write(api.events(page.changes, app: app, user: user))
                        version = max(page.version, page.changes.last?.changeVersion ?? version)
                        if page.hasMore { continue }
                    }
                }
                let woken = await signals.wait(key, endpoint: wakeEndpoint, after: ticket, timeout: heartbeat)
                if Task.isCancelled { return }
                if signals.isShutDown { break }
                read = woken || signals.epoch != epoch
                if !read { try await writer.write(ByteBuffer(string: ": keepalive\n\n")) }
            }
            if !Task.isCancelled { try await writer.write(ByteBuffer(string: EventStreamText.shutdown)) }
        } onGracefulShutdown: {
            // Ends this stream's wait (and every other one) at once rather than at the next heartbeat.
            signals.shutDown()
        }
    }

}

extension HubAPI {
    /// One `notification` event per change, with the cursor after it as the event ID.
    func events(_ changes: [UserNotification], app: CrossDeviceApp, user: String) -> ByteBuffer {
        var buffer = ByteBuffer()
        for change in changes {
            let data = JSON.data(NotificationResource(change))
            let cursor = tokens.cursor(version: change.changeVersion, app: app.id, user: user)
            buffer.writeString("id: \(cursor)\nevent: notification\ndata: ")
            buffer.writeBytes(data)
            buffer.writeString("\n\n")
        }
        return buffer
    }
}
