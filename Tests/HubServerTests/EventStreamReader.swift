import AsyncHTTPClient
import Foundation
import NIOCore

/// One server-sent event.
struct ServerSentEvent {
    var id: String?
    var event: String?
    var data: String
}

/// Reads a `text/event-stream` response over a real connection, event by event.
final class EventStreamReader {
    private let client = HTTPClient(eventLoopGroupProvider: .singleton)
    private var iterator: HTTPClientResponse.Body.AsyncIterator
    private var pending = ""
    private(set) var sawKeepalive = false

    init(port: Int, path: String, bearer: String, lastEventID: String? = nil, endpoint: String? = nil) async throws {
        var request = HTTPClientRequest(url: "http://localhost:\(port)\(path)")
        request.headers.add(name: "Accept", value: "text/event-stream")
        request.headers.add(name: "Authorization", value: "Bearer \(bearer)")
        if let lastEventID { request.headers.add(name: "Last-Event-ID", value: lastEventID) }
        if let endpoint { request.headers.add(name: "X-Hub-Endpoint", value: endpoint) }
        do {
            let response = try await client.execute(request, timeout: .seconds(10))
            guard response.status == .ok,
                response.headers.first(name: "Content-Type")?.hasPrefix("text/event-stream") == true
            else { throw StreamError.notAStream(Int(response.status.code)) }
            iterator = response.body.makeAsyncIterator()
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    enum StreamError: Error {
        case notAStream(Int)
        case ended
    }

    /// The next event; comment-only blocks (keepalives) and `retry:` are skipped.
    func nextEvent() async throws -> ServerSentEvent {
        while true {
            guard let block = try await nextBlock() else { throw StreamError.ended }
            var event = ServerSentEvent(data: "")
            var isEvent = false
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix(":") {
                    sawKeepalive = sawKeepalive || line.contains("keepalive")
                } else if line.hasPrefix("id: ") {
                    event.id = String(line.dropFirst(4))
                    isEvent = true
                } else if line.hasPrefix("event: ") {
                    event.event = String(line.dropFirst(7))
                    isEvent = true
                } else if line.hasPrefix("data: ") {
                    event.data += String(line.dropFirst(6))
                    isEvent = true
                }
            }
            if isEvent { return event }
        }
    }

    /// Reads until a keepalive comment arrives.
    func waitForKeepalive() async throws -> Bool {
        while !sawKeepalive {
            guard let block = try await nextBlock() else { return false }
            if block.split(separator: "\n").contains(where: { $0.hasPrefix(": keepalive") }) { sawKeepalive = true }
        }
        return true
    }

    /// Reads until `count` more keepalive comments arrived; `false` if the stream ended first.
    func readKeepalives(_ count: Int) async throws -> Bool {
        var seen = 0
        while seen < count {
            guard let block = try await nextBlock() else { return false }
            if block.split(separator: "\n").contains(where: { $0.hasPrefix(": keepalive") }) { seen += 1 }
        }
        return true
    }

    private func nextBlock() async throws -> String? {
        while true {
            if let range = pending.range(of: "\n\n") {
                let block = String(pending[..<range.lowerBound])
                pending.removeSubrange(..<range.upperBound)
                return block
            }
            guard let chunk = try await iterator.next() else { return nil }
            pending += String(buffer: chunk)
        }
    }

    func close() async throws {
        try await client.shutdown()
    }
}
