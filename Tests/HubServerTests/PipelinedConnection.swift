import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One client connection over a plain socket that writes requests when told, pipelined as they
/// are, and reads the answers as they come, in order: to see what a server answers to requests
/// that wait (parked long-polls) with others behind them on the same connection.
final class PipelinedConnection: Sendable {
    private let fd: Int32
    /// What was read and not yet taken as a response.
    private let received = Mutex<[UInt8]>([])

    init(port: Int) throws {
        // Reads time out every 100 ms so a read loop sees its own deadline.
        fd = try RawHTTP.connectedSocket(port: port)
        var wait = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Writes `text` whole.
    func write(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw RawHTTP.Failure(description: "send() failed: errno \(errno)") }
            offset += sent
        }
    }

    /// The next `count` responses, each framed by its `Content-Length`, in the order they came;
    /// fails when they did not all come within `timeout` seconds.
    func responses(_ count: Int, timeout: Int = 20) async throws -> [RawHTTPResponse] {
        try await blocking(timeout: timeout) { bytes in
            var responses: [RawHTTPResponse] = []
            var rest = bytes[...]
            while responses.count < count, let (response, length) = Self.response(in: rest) {
                responses.append(response)
                rest = rest.dropFirst(length)
            }
            guard responses.count == count else { return nil }
            return (responses, bytes.count - rest.count)
        }
    }

    /// Everything read until `done` holds for it (it is taken), or `timeout` seconds passed.
    func text(timeout: Int = 20, until done: @escaping @Sendable (String) -> Bool) async throws -> String {
        try await blocking(timeout: timeout) { bytes in
            let text = String(decoding: bytes, as: UTF8.self)
            return done(text) ? (text, bytes.count) : nil
        }
    }

    /// Reads on a thread of its own until `take` finds what it wants in what was read (and says
    /// how many bytes it took).
    private func blocking<Value: Sendable>(
        timeout: Int, _ take: @escaping @Sendable ([UInt8]) -> (Value, Int)?
    ) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { [self] in
                continuation.resume(with: Result { try read(timeout: timeout, take) })
            }
        }
    }

    private func read<Value>(timeout: Int, _ take: ([UInt8]) -> (Value, Int)?) throws -> Value {
        let deadline = ContinuousClock.now + .seconds(timeout)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let taken = received.withLock { received -> Value? in
                guard let (value, length) = take(received) else { return nil }
                received.removeFirst(length)
                return value
            }
            if let taken { return taken }
            guard ContinuousClock.now < deadline else {
                let text = received.withLock { String(decoding: $0, as: UTF8.self) }
                throw RawHTTP.Failure(description: "not answered within \(timeout) s; read: \(text.prefix(2000))")
            }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { throw RawHTTP.Failure(description: "the server closed the connection") }
            if count > 0 { received.withLock { $0 += buffer[..<count] } }
        }
    }

    /// The response at the start of `bytes` if all of it is there, and its length.
    private static func response(in bytes: ArraySlice<UInt8>) -> (RawHTTPResponse, Int)? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) else { return nil }
        guard let (status, headers) = RawHTTP.head(Substring(String(decoding: bytes[..<end], as: UTF8.self)))
        else { return nil }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        let bodyStart = end + 4
        guard bytes.endIndex - bodyStart >= length else { return nil }
        let body = String(decoding: bytes[bodyStart..<(bodyStart + length)], as: UTF8.self)
        return (
            RawHTTPResponse(status: status, headers: headers, body: body, closed: false),
            bodyStart + length - bytes.startIndex
        )
    }
}
