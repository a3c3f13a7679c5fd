import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension FeedSynchronizer {
    /// Reads the feed as server-sent events (`Accept: text/event-stream`) from the position,
    /// handing out each change as its event arrives, until the stream ends.
    ///
    /// The position's cursor goes in `Last-Event-ID`, and every event's ID is the cursor after its
    /// change, so a dropped stream resumes exactly where it stopped.
    ///
    /// - Throws: always: a transient ``HubClientError`` carrying the stream's `retry:` delay when
    ///   the hub ended the stream, so the loop reconnects after it; ``FeedSynchronizer/NoIterationLeft`` when
    ///   no iteration is left to take a change; the failure otherwise.
    func streamEvents() async throws {
        var (token, generation) = try await requester.tokens.current()
        var refreshed = false
        while true {
            var request = HubRequest(method: "GET", path: ["me", "feed"])
            request.headers["Accept"] = "text/event-stream"
            request.headers["X-Hub-Endpoint"] = endpointID
            if let cursor = position.cursor { request.headers["Last-Event-ID"] = cursor }
            // The hub writes a keepalive comment every 15 s by default; silence far longer than that
            // means the connection is gone.
            request.timeout = max(TimeInterval(configuration.longPollWait.components.seconds) * 2, 60)
            let response = StreamingResponse(
                requester.urlRequest(request, token: token), configuration: session.configuration)
            var parts = response.parts.makeAsyncIterator()
            guard case .head(let head)? = try await parts.next() else {
                throw HubClientError(.transport, "The event stream closed before the hub answered.")
            }
            if head.statusCode == 401 && !refreshed {
                refreshed = true
                (token, generation) = try await requester.tokens.replacing(generation: generation)
                continue
            }
            guard (200..<300).contains(head.statusCode) else {
                var body = Data()
                while case .body(let chunk)? = try await parts.next() { body += chunk }
                throw Requester.error(status: head.statusCode, body: body, headers: head)
            }
            var parser = ServerSentEventParser()
            while case .body(let chunk)? = try await parts.next() {
                for event in parser.push(chunk) { try receive(event) }
            }
            try Task.checkCancellation()
            throw HubClientError(
                .transport, "The hub ended the event stream; reconnecting.",
                retryAfter: .milliseconds(parser.retry ?? 3000))
        }
    }

    /// Hands out the change of one `notification` event to the iterations; other events are
    /// ignored.
    /// - Throws: ``FeedSynchronizer/NoIterationLeft`` when no iteration is left to take the change.
    private func receive(_ event: ServerSentEvent) throws {
        guard event.type == nil || event.type == "notification" else { return }
        let change: NotificationResource
        do {
            change = try HubJSON.decoder.decode(NotificationResource.self, from: Data(event.data.utf8))
        } catch {
            throw HubClientError(.invalidResponse, "An event of the feed is not a notification.", underlying: error)
        }
        _ = try apply([change], cursor: event.id, for: .subscribers)
    }
}
