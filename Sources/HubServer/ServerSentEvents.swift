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
    func serverSentEvents(
        _ request: Request, app: CrossDeviceApp, user: String, after version: Int64, binding: EndpointBinding
    ) -> Response {
        HubMetrics.sync(app: app.id, mode: .sse)
        let headers: HTTPFields = [
            .contentType: "text/event-stream; charset=utf-8",
            .cacheControl: "no-cache",
            HTTPField.Name("X-Accel-Buffering")!: "no",
        ]
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

    /// The last event of a stream the server ends because it shuts down gracefully: the client
    /// reconnects after `retry` (1 s) with the last event ID it saw, here or on another instance.
    static let shutdownEvent = "retry: 1000\nevent: shutdown\ndata: {\"retryAfter\":1}\n\n"

    /// Writes events until cancelled (client gone) or graceful shutdown, which ends the stream
    /// with ``shutdownEvent``.
    func run(from start: Int64, into writer: inout any ResponseBodyWriter) async throws {
        let signals = api.hub.signals
        try await withGracefulShutdownHandler {
            var version = start
            try await writer.write(ByteBuffer(string: "retry: 3000\n\n"))
            while !Task.isCancelled && !signals.isShutDown {
                let page = try await api.sync(
                    app: app, user: user, after: version, limit: 100, wait: api.configuration.sseHeartbeat,
                    binding: binding)
                if Task.isCancelled { return }
                guard !page.changes.isEmpty else {
                    if signals.isShutDown { break }
                    try await writer.write(ByteBuffer(string: ": keepalive\n\n"))
                    continue
                }
                var buffer = ByteBuffer()
                for change in page.changes {
                    let data = try JSON.data(NotificationResource(change))
                    let cursor = api.tokens.cursor(version: change.changeVersion, app: app.id, user: user)
                    buffer.writeString("id: \(cursor)\nevent: notification\ndata: ")
                    buffer.writeBytes(data)
                    buffer.writeString("\n\n")
                }
                version = max(page.version, page.changes.last?.changeVersion ?? version)
                try await writer.write(buffer)
            }
            if !Task.isCancelled { try await writer.write(ByteBuffer(string: Self.shutdownEvent)) }
        } onGracefulShutdown: {
            // Ends this stream's wait (and every other one) at once rather than at the next heartbeat.
            signals.shutDown()
        }
    }
}
