import ArgumentParser
import Foundation
import HubCore
import JWTKit
import NIOCore
import NIOPosix
import Synchronization

/// A keep-alive publisher connection: times each request to the end of its response (responses
/// come in the order of the requests).
final class PublishConnection: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    private struct State {
        var sent: [ContinuousClock.Instant] = []
        var answered = 0
        var latencies: [Double] = []
        var refused = 0
        var bytes: [UInt8] = []
    }
    private let state = Mutex(State())
    private let channel = Mutex<(any Channel)?>(nil)

    static func open(port: Int) async throws -> PublishConnection {
        let connection = PublishConnection()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(connection) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        connection.channel.withLock { $0 = channel }
        return connection
    }

    /// Requests sent and not yet answered.
    var pending: Int { state.withLock { $0.sent.count - $0.answered } }
    var latencies: [Double] { state.withLock { $0.latencies } }
    var refused: Int { state.withLock { $0.refused } }

    /// Sends `text`; the instant it was sent.
    func send(_ text: String) -> ContinuousClock.Instant {
        let now = ContinuousClock.now
        state.withLock { $0.sent.append(now) }
        channel.withLock { $0 }?.writeAndFlush(ByteBuffer(string: text), promise: nil)
        return now
    }

    func close() { channel.withLock { $0 }?.close(promise: nil) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let now = ContinuousClock.now
        state.withLock { state in
            state.bytes.append(contentsOf: buffer.readableBytesView)
            while let (length, status) = Self.response(in: state.bytes), state.answered < state.sent.count {
                state.bytes.removeFirst(length)
                state.latencies.append((now - state.sent[state.answered]).seconds * 1000)
                state.answered += 1
                if !(200..<300).contains(status) { state.refused += 1 }
            }
        }
    }

    /// The length and status of the whole response at the start of `bytes`, if it has arrived.
    static func response(in bytes: [UInt8]) -> (length: Int, status: Int)? {
        guard bytes.count >= 4 else { return nil }
        var headEnd: Int?
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            headEnd = index + 4
            break
        }
        guard let headEnd else { return nil }
        let lines = String(decoding: bytes[..<headEnd], as: UTF8.self).split(separator: "\r\n")
        let status = lines.first?.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        var length = 0
        var chunked = false
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let name = parts[0].lowercased()
            let value = parts[1].trimmingCharacters(in: .whitespaces)
            if name == "content-length" { length = Int(value) ?? 0 }
            if name == "transfer-encoding" && value.lowercased().contains("chunked") { chunked = true }
        }
        guard chunked else { return bytes.count >= headEnd + length ? (headEnd + length, status) : nil }
        // A chunked body ends with a zero-length chunk.
        let terminator: [UInt8] = Array("0\r\n\r\n".utf8)
        guard bytes.count >= headEnd + terminator.count else { return nil }
        for index in headEnd...(bytes.count - terminator.count)
        where bytes[index..<(index + terminator.count)].elementsEqual(terminator) {
            return (index + terminator.count, status)
        }
        return nil
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}

/// A raw client connection: writes requests as given, notes when the first byte came back.
final class BenchConnection: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    private struct State {
        var firstByte: ContinuousClock.Instant?
        var closed = false
        var bytes = ByteBuffer()
        var repoll: String?
    }
    private let state = Mutex(State())
    private let channel = Mutex<(any Channel)?>(nil)

    static func open(port: Int) async throws -> BenchConnection {
        let connection = BenchConnection()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(connection) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        connection.channel.withLock { $0 = channel }
        return connection
    }

    var firstByte: ContinuousClock.Instant? { state.withLock { $0.firstByte } }
    var received: String { state.withLock { String(buffer: $0.bytes) } }

    func send(_ text: String) {
        channel.withLock { $0 }?.writeAndFlush(ByteBuffer(string: text), promise: nil)
    }

    func close() { channel.withLock { $0 }?.close(promise: nil) }

    /// Waits until a whole response arrived (at most 60 s).
    func waitForResponse() async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while PublishConnection.response(in: state.withLock { Array($0.bytes.readableBytesView) }) == nil {
            guard ContinuousClock.now < deadline else { throw ValidationError("no response within 60 s") }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Forgets what arrived so far: the first byte is the next one.
    func forget() {
        state.withLock { state in
            state.firstByte = nil
            state.bytes.clear()
        }
    }

    func waitForClose(timeout: Duration) async {
        let deadline = ContinuousClock.now + timeout
        while !state.withLock({ $0.closed }) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        let next = state.withLock { state -> String? in
            if state.firstByte == nil { state.firstByte = .now }
            // Keep little: a long-poll's answer or a scrape's text.
            if state.bytes.readableBytes < 1 << 20 { state.bytes.writeBuffer(&buffer) }
            // A device polling again after its answer, from the answer's cursor.
            guard let repoll = state.repoll,
                PublishConnection.response(in: Array(state.bytes.readableBytesView)) != nil
            else { return nil }
            state.repoll = nil
            let text = String(buffer: state.bytes)
            guard let range = text.range(of: #""cursor":""#) else { return nil }
            let cursor = text[range.upperBound...].prefix { $0 != "\"" }
            return repoll.replacingOccurrences(of: "CURSOR", with: String(cursor))
        }
        if let next { context.writeAndFlush(NIOAny(ByteBuffer(string: next)), promise: nil) }
    }

    /// After the next whole answer, sends `request` with its `CURSOR` replaced by the answer's cursor.
    func repollOnce(_ request: String) { state.withLock { $0.repoll = request } }

    func channelInactive(context: ChannelHandlerContext) {
        state.withLock { $0.closed = true }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}
