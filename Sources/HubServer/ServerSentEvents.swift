import HTTPTypes
import HubCore
import HubPolling
import Hummingbird
import NIOCore

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
    /// The stream waits without a task (``ParkedEventStream``); a connection that cannot park (a
    /// server built without ``GuardedHTTP1Channel``) is answered 503 (``Problem/cannotWait``).
    func serverSentEvents(
        _ request: Request, context: HubRequestContext, app: CrossDeviceApp, user: String, after version: Int64,
        binding: EndpointBinding, start: UInt64
    ) throws -> Response {
        guard let parked = ParkedResponse.make(on: context.channel), let signals = hub.waitingRoom else {
            throw Problem.cannotWait
        }
        HubMetrics.sync(app: app.id, mode: .sse)
        let headers: HTTPFields = [
            .contentType: "text/event-stream; charset=utf-8",
            .cacheControl: "no-cache",
            HTTPField.Name("X-Accel-Buffering")!: "no",
        ]
        let stream = ParkedEventStream(
            api: self, signals: signals,
            feed: ParkedLongPoll.Feed(app: app, user: user, version: version, limit: 100, binding: binding),
            response: parked,
            log: ParkedRequestLog(request, context: context, api: self, app: app.id, start: start),
            connection: context.connection)
        stream.start(headers: headers)
        return Response(status: .ok, headers: parked.placeholderHeaders)
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
