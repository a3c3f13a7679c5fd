import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOSSL
import X509

import struct Foundation.Date
import struct Foundation.UUID

/// One request as the emulator received it.
struct APNSEmulatorIncoming {
    /// Every header field in order, pseudo-headers included, names in lower case.
    var fields: [(name: String, value: String)]
    var body: [UInt8]
    /// Bundle IDs of the client certificate; empty without one.
    var certificateBundleIDs: [String]
    /// Names of the fields sent as HPACK literals without indexing or never indexed, in order;
    /// gathered only when requests are recorded.
    var unindexed: [String] = []

    func first(_ name: String) -> String? { fields.first { $0.name == name }?.value }
}

/// How the emulator answers one request.
struct APNSEmulatorVerdict {
    var status: Int
    var reason: String?
    var timestamp: Date?
    var retryAfter: String?
    var apnsID: String
    /// The first valid request of the connection: raise its stream limit before answering.
    var raiseLimit = false
    /// Never answer (the `hold` knob).
    var hold = false
    var delay: Duration?
}

/// Reads the requests of every stream of one connection, has the emulator judge each, and writes
/// the answers.
///
/// It sits right after `NIOHTTP2Handler`, with no stream multiplexer: a channel and pipeline per
/// stream was most of the emulator's cost per request. So it does what the multiplexer did: it
/// keeps each stream's headers and body until END_STREAM, returns flow-control credit for the DATA
/// it reads (the stream's, and the connection's in batches), and forgets streams the client resets.
/// Answers written while reading go out in one flush when the read ends.
final class APNSEmulatorStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// A request still being read, or judged and waiting for its answer to be written.
    private struct Stream {
        var headers: HPACKHeaders?
        var body: [UInt8] = []
        var processed = false
        /// DATA bytes read and not yet returned to the stream's window.
        var unacknowledged = 0
    }

    /// Credit is returned once this much is used, as NIO's multiplexer does (half the default window).
    private static let windowUpdateThreshold = 32_768

    private let emulator: APNSEmulator
    private let connection: APNSEmulatorConnection
    private var streams: [HTTP2StreamID: Stream] = [:]
    private var connectionUnacknowledged = 0
    private var reading = false
    private var needsFlush = false

    init(emulator: APNSEmulator, connection: APNSEmulatorConnection) {
        self.emulator = emulator
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        reading = true
        let frame = unwrapInboundIn(data)
        let id = frame.streamID
        switch frame.payload {
        case .headers(let headers):
            guard id != .rootStream else { break }
            if streams[id] == nil { streams[id] = Stream() }
            if streams[id]?.headers == nil { streams[id]?.headers = headers.headers }
            if headers.endStream { process(id, context: context) }
        case .data(let payload):
            let length = payload.data.readableBytes + (payload.paddingBytes.map { $0 + 1 } ?? 0)
            acknowledge(length, on: id, endStream: payload.endStream, context: context)
            if case .byteBuffer(let buffer) = payload.data {
                streams[id]?.body.append(contentsOf: buffer.readableBytesView)
            }
            if payload.endStream { process(id, context: context) }
        case .rstStream:
            streams[id] = nil
        case .ping(_, ack: false):
            emulator.state.withLock { $0.pingsReceived += 1 }
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        reading = false
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let created = event as? NIOHTTP2StreamCreatedEvent {
            connection.streamCreated(created.streamID)
        } else if let closed = event as? StreamClosedEvent {
            streams[closed.streamID] = nil
            connection.streamClosed(closed.streamID)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// Returns the flow-control credit of `length` DATA bytes, in batches.
    private func acknowledge(_ length: Int, on id: HTTP2StreamID, endStream: Bool, context: ChannelHandlerContext) {
        guard length > 0 else { return }
        connectionUnacknowledged += length
        if connectionUnacknowledged >= Self.windowUpdateThreshold {
            write(
                HTTP2Frame(
                    streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: connectionUnacknowledged)),
                context: context)
            connectionUnacknowledged = 0
        }
        // A stream that ended needs no more credit.
        guard !endStream, var stream = streams[id] else { return }
        stream.unacknowledged += length
        if stream.unacknowledged >= Self.windowUpdateThreshold {
            write(
                HTTP2Frame(streamID: id, payload: .windowUpdate(windowSizeIncrement: stream.unacknowledged)),
                context: context)
            stream.unacknowledged = 0
        }
        streams[id]?.unacknowledged = stream.unacknowledged
    }

    private func process(_ id: HTTP2StreamID, context: ChannelHandlerContext) {
        guard var stream = streams[id], !stream.processed else { return }
        stream.processed = true
        let fields = (stream.headers ?? HPACKHeaders()).map { (name: $0.name.lowercased(), value: $0.value) }
        var incoming = APNSEmulatorIncoming(
            fields: fields, body: stream.body, certificateBundleIDs: certificateBundleIDs(context: context))
        if emulator.configuration.recordsRequests, let headers = stream.headers {
            incoming.unindexed = headers.compactMap { $0.indexable == .indexable ? nil : $0.name.lowercased() }
        }
        stream.headers = nil
        stream.body = []
        streams[id] = stream
        let verdict = emulator.evaluate(incoming, on: connection)
        if verdict.raiseLimit {
            let limit = emulator.state.withLock { $0.maxConcurrentStreams }
            let settings = HTTP2Frame(
                streamID: .rootStream,
                payload: .settings(.settings([.init(parameter: .maxConcurrentStreams, value: limit)])))
            write(settings, context: context)
        }
        if verdict.hold { return }
        if let delay = verdict.delay {
            context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(delay)) { [self] in
                // The client may have reset the stream meanwhile.
                guard streams[id] != nil else { return }
                respond(id, verdict, context: context)
                flushUnlessReading(context: context)
            }
        } else {
            respond(id, verdict, context: context)
            flushUnlessReading(context: context)
        }
    }

    /// Writes now; the flush comes when the read ends, or at once outside a read.
    private func write(_ frame: HTTP2Frame, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(frame), promise: nil)
        needsFlush = true
    }

    private func flushUnlessReading(context: ChannelHandlerContext) {
        guard !reading, needsFlush else { return }
        needsFlush = false
        context.flush()
    }

    private func respond(_ id: HTTP2StreamID, _ verdict: APNSEmulatorVerdict, context: ChannelHandlerContext) {
        // IDs differ per answer: kept out of the HPACK dynamic table, which they would only churn.
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: String(verdict.status))
        headers.add(name: "apns-id", value: verdict.apnsID, indexing: .nonIndexable)
        if verdict.status == 200 && emulator.configuration.environment == .development {
            headers.add(name: "apns-unique-id", value: UUID().uuidString.lowercased(), indexing: .nonIndexable)
        }
        if let retryAfter = verdict.retryAfter { headers.add(name: "retry-after", value: retryAfter) }
        guard let reason = verdict.reason else {
            write(
                HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: true))), context: context)
            return
        }
        var json = "{\"reason\":\"\(reason)\""
        if let timestamp = verdict.timestamp {
            json += ",\"timestamp\":\(Int64(timestamp.timeIntervalSince1970 * 1000))"
        }
        json += "}"
        headers.add(name: "content-type", value: "application/json")
        write(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers))), context: context)
        let buffer = context.channel.allocator.buffer(string: json)
        write(
            HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(buffer), endStream: true))),
            context: context)
    }

    /// The bundle IDs of the connection's client certificate: its subject's UID (Apple puts the
    /// bundle ID there), read once per connection.
    private func certificateBundleIDs(context: ChannelHandlerContext) -> [String] {
        if let known = connection.state.withLock({ $0.certificateBundleIDs }) { return known }
        var bundles: [String] = []
        if let handler = try? context.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self),
            let peer = handler.peerCertificate, let der = try? peer.toDERBytes(),
            let certificate = try? Certificate(derEncoded: der)
        {
            for name in certificate.subject {
                for attribute in name where attribute.type.description == "0.9.2342.19200300.100.1.1" {
                    if let bundle = String(attribute.value) { bundles.append(bundle) }
                }
            }
        }
        connection.state.withLock { $0.certificateBundleIDs = bundles }
        return bundles
    }
}
