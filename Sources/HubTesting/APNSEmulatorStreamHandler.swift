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

/// Reads one request off its stream, has the emulator judge it, and writes the answer.
final class APNSEmulatorStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let emulator: APNSEmulator
    private let connection: APNSEmulatorConnection
    private var headers: HPACKHeaders?
    private var body: [UInt8] = []
    private var processed = false

    init(emulator: APNSEmulator, connection: APNSEmulatorConnection) {
        self.emulator = emulator
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            if headers == nil { headers = frame.headers }
            if frame.endStream { process(context: context) }
        case .data(let frame):
            if case .byteBuffer(let buffer) = frame.data { body.append(contentsOf: buffer.readableBytesView) }
            if frame.endStream { process(context: context) }
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func process(context: ChannelHandlerContext) {
        guard !processed else { return }
        processed = true
        let fields = (headers ?? HPACKHeaders()).map { (name: $0.name.lowercased(), value: $0.value) }
        let incoming = APNSEmulatorIncoming(
            fields: fields, body: body, certificateBundleIDs: certificateBundleIDs(context: context))
        let verdict = emulator.evaluate(incoming, on: connection)
        if verdict.raiseLimit, let parent = context.channel.parent {
            let limit = emulator.state.withLock { $0.maxConcurrentStreams }
            let settings = HTTP2Frame(
                streamID: .rootStream,
                payload: .settings(.settings([.init(parameter: .maxConcurrentStreams, value: limit)])))
            parent.writeAndFlush(settings, promise: nil)
        }
        if verdict.hold { return }
        if let delay = verdict.delay {
            context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(delay)) { [self] in
                respond(context: context, verdict)
            }
        } else {
            respond(context: context, verdict)
        }
    }

    private func respond(context: ChannelHandlerContext, _ verdict: APNSEmulatorVerdict) {
        // IDs differ per answer: kept out of the HPACK dynamic table, which they would only churn.
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: String(verdict.status))
        headers.add(name: "apns-id", value: verdict.apnsID, indexing: .nonIndexable)
        if verdict.status == 200 && emulator.configuration.environment == .development {
            headers.add(name: "apns-unique-id", value: UUID().uuidString.lowercased(), indexing: .nonIndexable)
        }
        if let retryAfter = verdict.retryAfter { headers.add(name: "retry-after", value: retryAfter) }
        guard let reason = verdict.reason else {
            context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: headers, endStream: true))), promise: nil)
            return
        }
        var json = "{\"reason\":\"\(reason)\""
        if let timestamp = verdict.timestamp {
            json += ",\"timestamp\":\(Int64(timestamp.timeIntervalSince1970 * 1000))"
        }
        json += "}"
        headers.add(name: "content-type", value: "application/json")
        context.write(wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
        let buffer = context.channel.allocator.buffer(string: json)
        context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(buffer), endStream: true))), promise: nil)
    }

    /// The bundle IDs of the connection's client certificate: its subject's UID (Apple puts the
    /// bundle ID there), read once per connection.
    private func certificateBundleIDs(context: ChannelHandlerContext) -> [String] {
        if let known = connection.state.withLock({ $0.certificateBundleIDs }) { return known }
        var bundles: [String] = []
        if let parent = context.channel.parent,
            let handler = try? parent.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self),
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
