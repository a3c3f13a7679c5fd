import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One HTTP/1.1 exchange over a plain socket, byte for byte: for requests an HTTP client would
/// refuse to send (heads over the server's limits) and to see exactly what the server answers.
struct RawHTTPResponse: Sendable {
    var status: Int
    /// Header names lowercased.
    var headers: [String: String]
    var body: String
    /// Whether the server closed the connection after the answer.
    var closed: Bool

    var problemType: String? {
        let object = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
        return (object?["type"] as? String)?.replacingOccurrences(
            of: "https://notificationhub.dev/problems/", with: "")
    }
}

enum RawHTTP {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Sends `request` to 127.0.0.1:`port` and reads one answer (until its `Content-Length`, or
    /// until the server closes), waiting at most `timeout` seconds.
    static func exchange(port: Int, _ request: [UInt8], timeout: Int = 10) async throws -> RawHTTPResponse {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try blockingExchange(port: port, request, timeout: timeout) })
            }
        }
    }

    /// A GET of `target` with extra header lines.
    static func get(port: Int, _ target: String, headers: [String] = []) async throws -> RawHTTPResponse {
        let head = (["GET \(target) HTTP/1.1", "Host: 127.0.0.1:\(port)"] + headers).joined(separator: "\r\n")
        return try await exchange(port: port, Array((head + "\r\n\r\n").utf8))
    }

    /// A TCP socket connected to 127.0.0.1:`port`, with send and receive timeouts of `timeout`
    /// seconds when given. The caller closes it.
    static func connectedSocket(port: Int, timeout: Int? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        if let timeout {
            var wait = timeval(tv_sec: timeout, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw Failure(description: "connect() failed: errno \(code)")
        }
        return fd
    }

    private static func blockingExchange(port: Int, _ request: [UInt8], timeout: Int) throws -> RawHTTPResponse {
        let fd = try connectedSocket(port: port, timeout: timeout)
        defer { close(fd) }
        // The server may answer and stop reading before all of it is sent: that is fine.
        var offset = 0
        while offset < request.count {
            let sent = request[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { break }
            offset += sent
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var closed = false
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 {
                closed = true
                break
            }
            if count < 0 {
                if errno == ECONNRESET { closed = true }
                break
            }
            received += buffer[..<count]
            if let response = parse(received), let length = Int(response.headers["content-length"] ?? ""),
                response.body.utf8.count >= length
            {
                // Wait briefly for the server's close after a complete answer.
                var short = timeval(tv_sec: 1, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &short, socklen_t(MemoryLayout<timeval>.size))
                let more = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                var answer = response
                answer.closed = more == 0 || (more < 0 && errno == ECONNRESET)
                return answer
            }
        }
        guard var response = parse(received) else {
            throw Failure(description: "no HTTP answer (\(received.count) bytes, closed: \(closed))")
        }
        response.closed = closed
        return response
    }

    private static func parse(_ bytes: [UInt8]) -> RawHTTPResponse? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let end = text.range(of: "\r\n\r\n") else { return nil }
        guard let (status, headers) = head(text[..<end.lowerBound]) else { return nil }
        return RawHTTPResponse(status: status, headers: headers, body: String(text[end.upperBound...]), closed: false)
    }

    /// The status and headers (names lower-cased) of a response head without its blank line.
    static func head(_ text: Substring) -> (status: Int, headers: [String: String])? {
        let lines = text.components(separatedBy: "\r\n")
        guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1.1 "),
            let status = Int(statusLine.dropFirst(9).prefix(3))
        else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        return (status, headers)
    }
}
