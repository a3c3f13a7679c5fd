import Foundation
import HubServer
import HubTesting

#if canImport(Glibc)
    import Glibc
#endif

/// Raw request bytes replayed over one connection, split into two TCP segments, then the client's
/// FIN; and what a server answered, response by response. For the framing tests against llhttp
/// (`HTTPFramingDifferentialTests`) and the mutation fuzz (`HTTPFramingFuzzTests`).
enum FramingReplay {
    /// What came back over one connection.
    struct Exchange: Sendable {
        var responses: [Response]
        /// The server neither answered in full nor closed within the timeout.
        var hung: Bool
        /// Bytes after the last whole response.
        var leftover: Int
    }

    /// A response: its status and header fields (names lowercased).
    struct Response: Sendable {
        var status: Int
        var headers: [String: String]
    }

    /// Sends `bytes` to 127.0.0.1:`port`, the first `split` of them in a segment of their own
    /// (a millisecond before the rest, with Nagle off, so that the server reads them apart), then
    /// half-closes and reads until the server closes or `timeout` seconds pass.
    static func replay(port: Int, _ bytes: [UInt8], split: Int? = nil, timeout: Int = 10) async throws -> Exchange {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result { try blocking(port: port, bytes, split: split, timeout: timeout) })
            }
        }
    }

    private static func blocking(port: Int, _ bytes: [UInt8], split: Int?, timeout: Int) throws -> Exchange {
        let fd = try RawHTTP.connectedSocket(port: port, timeout: timeout)
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let cut = min(max(split ?? bytes.count, 0), bytes.count)
        send(fd, bytes[..<cut])
        if cut < bytes.count {
            // Only to make separate segments likely; the outcome must not depend on it.
            usleep(1000)
            send(fd, bytes[cut...])
        }
        shutdown(fd, Int32(SHUT_WR))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var hung = false
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += buffer[..<count]
                continue
            }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { hung = true }
            break
        }
        let (responses, leftover) = parse(received)
        return Exchange(responses: responses, hung: hung, leftover: leftover)
    }

    private static func send(_ fd: Int32, _ bytes: ArraySlice<UInt8>) {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent <= 0 { return }  // the server stopped reading (it refused something): fine
            offset += sent
        }
    }

    /// The responses in `bytes` (1xx included), and how many bytes follow the last whole one.
    static func parse(_ bytes: [UInt8]) -> ([Response], Int) {
        var responses: [Response] = []
        var index = 0
        while let end = find([13, 10, 13, 10], in: bytes, from: index) {
            let head = String(decoding: bytes[index..<end], as: UTF8.self).components(separatedBy: "\r\n")
            guard let line = head.first, line.hasPrefix("HTTP/1."), let status = Int(line.dropFirst(9).prefix(3)) else {
                break
            }
            var headers: [String: String] = [:]
            for field in head.dropFirst() {
                guard let colon = field.firstIndex(of: ":") else { continue }
                headers[field[..<colon].lowercased()] = field[field.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
            var next = end + 4
            let answersHead = headers["x-echo"]?.hasPrefix("HEAD ") == true
            if (100..<200).contains(status) || status == 204 || status == 304 || answersHead {
                // no body
            } else if let length = headers["content-length"].flatMap({ Int($0) }) {
                guard next + length <= bytes.count else { break }
                next += length
            } else if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
                guard let after = skipChunked(bytes, from: next) else { break }
                next = after
            } else {
                next = bytes.count
            }
            responses.append(Response(status: status, headers: headers))
            index = next
        }
        return (responses, bytes.count - index)
    }

    private static func skipChunked(_ bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while let lineEnd = find([13, 10], in: bytes, from: index) {
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText, radix: 16) else { return nil }
            index = lineEnd + 2
            if size == 0 {
                guard let end = find([13, 10, 13, 10], in: bytes, from: index - 2) else { return nil }
                return end + 4
            }
            index += size + 2
        }
        return nil
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard start >= 0, bytes.count >= needle.count else { return nil }
        var index = start
        while index + needle.count <= bytes.count {
            if bytes[index] == needle[0] && bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
