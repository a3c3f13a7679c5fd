import Foundation
import HTTPTypes
import HubTesting
import Hummingbird
import HummingbirdCore
import HummingbirdTesting
import NIOCore
import Testing

@testable import HubServer

/// `ResponseRelay` on the hub's server: a response whose route returned goes out at once; one
/// whose route is still writing streams, part by part, while the route writes.
@Suite("Response relay")
struct ResponseRelayTests {
    @Test("a body still being written streams: its first part arrives while the route waits for the second")
    func streamsWhileWriting() async throws {
        let gate = Gate()
        let router = Router()
        router.get("stream") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/plain"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "first part\n"))
                    await gate.pass()
                    try await writer.write(ByteBuffer(string: "second part\n"))
                    try await writer.finish(nil)
                })
        }
        router.get("quick") { _, _ -> String in "quick answer" }
        let app = Application(router: router, server: .hubHTTP1)
        try await app.test(.live) { client in
            let port = try #require(client.port)
            defer { gate.open() }
            let socket = try OpenSocket(port: port)
            try socket.send(
                "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"
                    + "GET /quick HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            // The route waits at the gate: what arrives now was streamed while it writes.
            let early = await socket.read(until: "first part")
            #expect(early.contains("HTTP/1.1 200"), "\(early)")
            #expect(early.contains("first part"), "\(early)")
            #expect(!early.contains("second part"), "\(early)")
            #expect(gate.waiting == 1, "the route is still waiting for the gate")
            gate.open()
            let rest = await socket.read(until: "quick answer")
            #expect((early + rest).contains("second part"), "\(early + rest)")
            #expect(rest.contains("quick answer"), "the pipelined request after the stream is answered: \(rest)")
        }
    }

    @Test("a response whose route returned goes out at once, and its connection takes the next request")
    func quickResponses() async throws {
        let router = Router()
        router.get("quick") { _, _ -> String in "quick answer" }
        let app = Application(router: router, server: .hubHTTP1)
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let requests =
                String(repeating: "GET /quick HTTP/1.1\r\nHost: x\r\n\r\n", count: 5)
                + "GET /quick HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            let socket = try OpenSocket(port: port)
            try socket.send(requests)
            let text = await socket.readToEnd()
            #expect(text.components(separatedBy: "HTTP/1.1 200").count == 7, "\(text)")
            #expect(text.components(separatedBy: "quick answer").count == 7, "\(text)")
        }
    }
}
