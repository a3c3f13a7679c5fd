import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One event of a `text/event-stream`.
struct ServerSentEvent: Sendable, Hashable {
    /// The last event ID the stream set (`id:`), which a reconnect sends as `Last-Event-ID`.
    var id: String?
    /// The `event:` type; `nil` means `message`.
    var type: String?
    /// The `data:` lines, joined with newlines.
    var data: String
}

/// Parses a `text/event-stream` as its bytes arrive, in chunks split anywhere (WHATWG HTML,
/// "Server-sent events": LF, CR or CRLF line ends; `field: value` lines; a blank line dispatches;
/// `:` starts a comment such as the hub's `: keepalive`).
struct ServerSentEventParser: Sendable {
    private var line: [UInt8] = []
    private var afterCR = false
    private var dataLines: [String] = []
    private var type: String?
    private var lastEventID: String?
    /// The reconnection delay the stream asked for (`retry:`), in milliseconds.
    private(set) var retry: Int?

    /// Consumes a chunk; returns the events it completed.
    mutating func push(_ bytes: some Sequence<UInt8>) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            if afterCR {
                afterCR = false
                if byte == UInt8(ascii: "\n") { continue }  // the LF of a CRLF
            }
            switch byte {
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                afterCR = byte == UInt8(ascii: "\r")
                if let event = process(String(decoding: line, as: UTF8.self)) { events.append(event) }
                line.removeAll(keepingCapacity: true)
            default:
                line.append(byte)
            }
        }
        return events
    }

    /// Handles one complete line; a blank line returns the event it ends, if any.
    private mutating func process(_ line: String) -> ServerSentEvent? {
        if line.isEmpty { return dispatch() }
        if line.hasPrefix(":") { return nil }
        let field: Substring
        var value: Substring
        if let colon = line.firstIndex(of: ":") {
            field = line[..<colon]
            value = line[line.index(after: colon)...]
            if value.hasPrefix(" ") { value = value.dropFirst() }
        } else {
            field = line[...]
            value = ""
        }
        switch field {
        case "data": dataLines.append(String(value))
        case "event": type = String(value)
        case "id" where !value.contains("\0"): lastEventID = String(value)
        case "retry": if let milliseconds = Int(value), milliseconds >= 0 { retry = milliseconds }
        default: break
        }
        return nil
    }

    private mutating func dispatch() -> ServerSentEvent? {
        defer {
            dataLines.removeAll()
            type = nil
        }
        guard !dataLines.isEmpty else { return nil }
        return ServerSentEvent(id: lastEventID, type: type, data: dataLines.joined(separator: "\n"))
    }
}

/// One streaming HTTP response: its head, then its body in chunks as they arrive.
///
/// `URLSession.bytes(for:)` is not available everywhere Foundation is (Linux), so this uses a data
/// delegate on a session of its own, invalidated when the stream ends or its reader goes away.
final class StreamingResponse: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    enum Part: Sendable {
        case head(HTTPURLResponse)
        case body(Data)
    }

    /// The head first, then body chunks; ends with the response, throws when the exchange fails.
    let parts: AsyncThrowingStream<Part, any Error>
    private let continuation: AsyncThrowingStream<Part, any Error>.Continuation

    init(_ request: URLRequest, configuration: URLSessionConfiguration) {
        (parts, continuation) = AsyncThrowingStream.makeStream(of: Part.self)
        super.init()
        // No URL cache whatever the client's session has (see HubClient.uncachedConfiguration()).
        let configuration = HubClient.withoutCache(configuration)
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
        continuation.onTermination = { termination in
            // A finished exchange has nothing to cancel: cancelling a completed task is what traps.
            if case .finished = termination {
                session.finishTasksAndInvalidate()
            } else {
                session.invalidateAndCancel()
            }
        }
        session.dataTask(with: request).resume()
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        if let response = response as? HTTPURLResponse {
            continuation.yield(.head(response))
            completionHandler(.allow)
        } else {
            continuation.finish(throwing: HubClientError(.invalidResponse, "The hub did not answer with HTTP."))
            completionHandler(.cancel)
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        continuation.yield(.body(data))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let error {
            continuation.finish(throwing: Requester.transportError(error))
        } else {
            continuation.finish()
        }
    }
}
