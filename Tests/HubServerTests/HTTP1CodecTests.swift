import Foundation
import HTTPTypes
import HubTesting
import Logging
import Testing

@testable import HubServer

/// The hub's own HTTP/1.1 parsing (`HTTP1HeadParser`, `HTTP1ServerCodec`): what a head may be,
/// the ambiguities request smuggling lives on, chunked bodies cut anywhere, and what the client is
/// told when its head is refused.
@Suite("HTTP/1.1 codec")
struct HTTP1CodecTests {
    private static func parse(_ head: String) -> Result<HTTP1RequestHead, HTTP1HeadError> {
        Array(head.utf8).withUnsafeBytes { HTTP1HeadParser.parse($0) }
    }

    @Test("a valid head: method, path, authority from Host, fields in order, framing")
    func validHead() throws {
        let head = try Self.parse(
            "POST /v1/x?y=1 HTTP/1.1\r\nHost: hub.example\r\nContent-Type:application/json \r\n"
                + "Content-Length: 12\r\nX-A: 1\r\nx-a:\t2\r\n"
        ).get()
        #expect(head.request.method == .post)
        #expect(head.request.path == "/v1/x?y=1")
        #expect(head.request.authority == "hub.example")
        #expect(head.request.headerFields[.contentType] == "application/json")
        #expect(head.request.headerFields[values: HTTPField.Name("X-A")!] == ["1", "2"])
        #expect(!head.request.headerFields.contains { $0.name.canonicalName == "host" })
        #expect(head.framing == .length(12))
        #expect(try Self.parse("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n").get().framing == .chunked)
        #expect(try Self.parse("GET / HTTP/1.1\r\nHost: x\r\n").get().framing == HTTP1BodyFraming.none)
        #expect(try Self.parse("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0005\r\n").get().framing == .length(5))
    }

    @Test("HTTP/1.0 closes after its answer unless it asks to keep the connection; absolute-form targets")
    func versionsAndTargets() throws {
        let closing = try Self.parse("GET / HTTP/1.0\r\n").get()
        #expect(closing.request.headerFields[.connection] == "close")
        let keeping = try Self.parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n").get()
        #expect(keeping.request.headerFields[.connection] == "Keep-Alive")
        #expect(try Self.parse("GET / HTTP/1.1\r\nHost: x\r\n").get().request.headerFields[.connection] == nil)
        #expect(HTTP1HeadParser.path(of: "http://hub.example/v1/x?y") == "/v1/x?y")
        #expect(HTTP1HeadParser.path(of: "https://hub.example") == "/")
        #expect(HTTP1HeadParser.path(of: "http://hub.example?q") == "/?q")
        #expect(HTTP1HeadParser.path(of: "/plain") == "/plain")
    }

    @Test("the hub's stand-in marker is stripped from what a client sends")
    func markerStripped() throws {
        let head = try Self.parse("GET / HTTP/1.1\r\nHost: x\r\nX-Hub-Head-Error: 431\r\nX-Other: 1\r\n").get()
        #expect(head.request.headerFields[RequestHeadLimits.marker] == nil)
        #expect(head.request.headerFields[HTTPField.Name("X-Other")!] == "1")
    }

    @Test(
        "heads that are refused with 400, each with its reason",
        arguments: [
            ("GET / HTTP/1.1\nHost: x\r\n", "bare LF"),
            ("GET / HTTP/1.1\r\nHost: x\rY: z\r\n", "bare CR"),
            ("GET / HTTP/1.1\r\nX: a\r\n  folded\r\n", "folding"),
            ("GET / HTTP/1.1\r\nAccept: */*\r\n", "Host"),
            ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n", "more than one Host"),
            ("GET / HTTP/1.1\r\nX : a\r\n", "whitespace before its colon"),
            ("GET / HTTP/1.1\r\nX\u{0}Y: a\r\n", "token"),
            ("GET / HTTP/1.1\r\nX: a\u{1}b\r\n", "control character"),
            ("GET / HTTP/1.1\r\nX: a\u{7F}\r\n", "control character"),
            ("GET / HTTP/1.1\r\nnocolon\r\n", "colon"),
            ("GET / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n", "both"),
            ("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n", "both"),
            ("GET / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n", "more than one Content-Length"),
            ("GET / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 5\r\n", "more than one Content-Length"),
            ("FOO / HTTP/1.1\r\nHost: x\r\n", "not one this server knows"),
            ("CONNECT h:443 HTTP/1.1\r\nHost: x\r\n", "not one this server knows"),
            ("GET / HTTP/1.1\r\nContent-Length: +5\r\n", "decimal"),
            ("GET / HTTP/1.1\r\nContent-Length: 5, 5\r\n", "decimal"),
            ("GET / HTTP/1.1\r\nContent-Length: 0x10\r\n", "decimal"),
            ("GET / HTTP/1.1\r\nContent-Length: 1234567890123456789\r\n", "decimal"),
            ("GET / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n", "chunked"),
            ("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "chunked"),
            ("GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n", "HTTP/1.0"),
            ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n", "more than one Host"),
            ("GET / HTTP/2.0\r\n", "version"),
            ("GET / http/1.1\r\n", "version"),
            ("GET  / HTTP/1.1\r\n", "method, space, target"),
            ("GET /a b HTTP/1.1\r\n", "version"),
            ("GET /\u{1}x HTTP/1.1\r\n", "visible ASCII"),
            ("GET /caf\u{E9} HTTP/1.1\r\n", "visible ASCII"),
            ("G(T / HTTP/1.1\r\n", "method"),
            (" GET / HTTP/1.1\r\n", "method"),
        ])
    func refused(head: String, reason: String) {
        guard case .failure(.invalid(let message)) = Self.parse(head) else {
            Issue.record("accepted: \(head.debugDescription)")
            return
        }
        #expect(message.contains(reason), "\(head.debugDescription): \(message)")
    }

    @Test("more than 1,000 header fields is 431")
    func tooManyFields() {
        let head = "GET / HTTP/1.1\r\n" + String(repeating: "X: y\r\n", count: 1001)
        guard case .failure(.fieldsTooLarge) = Self.parse(head) else {
            Issue.record("not refused as too large")
            return
        }
    }

    @Test("request smuggling: Content-Length with Transfer-Encoding is refused and what follows is never a request")
    func smuggling() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let attempts = [
                "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
                "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\nContent-Length: 4\r\n\r\n"
                    + "abcdGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
                "POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n"
                    + "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
            ]
            for attempt in attempts {
                let answer = try await RawConnection.exchange(port: port, [Array(attempt.utf8)])
                #expect(answer.statuses == [400], "\(answer.text.prefix(600))")
                #expect(answer.text.contains("invalid-request"))
                #expect(answer.closed)
            }
        }
    }

    @Test("a refused head is told what is wrong, as problem+json, and the connection closes")
    func refusedOverTheWire() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let answer = try await RawHTTP.exchange(
                port: port, Array("GET /healthz HTTP/1.1\r\nHost: x\r\nBad Name: 1\r\n\r\n".utf8))
            #expect(answer.status == 400)
            #expect(answer.problemType == "invalid-request")
            #expect(answer.body.contains("whitespace before its colon"), "\(answer.body)")
            #expect(answer.closed)
        }
    }

    @Test("a chunked body cut anywhere (size lines, data, CRLFs), with extensions and trailers, arrives whole")
    func chunkedBodyInPieces() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let body = Array(notification("chunked-1").utf8)
            let first = body.prefix(10)
            let second = body.dropFirst(10)
            let head =
                "\r\nPOST /v1/apps/\(Harness.notes)/users/alice/notifications HTTP/1.1\r\nHost: x\r\n"
                + "Authorization: Bearer \(Harness.notesKey)\r\nContent-Type: application/json\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n"
            var stream = Array(head.utf8)
            stream += Array("\(String(first.count, radix: 16));name=value\r\n".utf8) + first + Array("\r\n".utf8)
            stream += Array("\(String(second.count, radix: 16, uppercase: true))\r\n".utf8) + second
            stream += Array("\r\n0\r\nX-Trailer: t\r\n\r\n".utf8)
            stream += Array("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)
            // Cut inside the head's end, a size line, the data, a CRLF and the trailer.
            let cuts = [
                head.utf8.count - 1, head.utf8.count + 2, head.utf8.count + 30, stream.count - 70, stream.count - 50,
            ]
            var pieces: [[UInt8]] = []
            var start = 0
            for cut in cuts {
                pieces.append(Array(stream[start..<cut]))
                start = cut
            }
            pieces.append(Array(stream[start...]))
            let answer = try await RawConnection.exchange(port: port, pieces)
            #expect(answer.statuses == [201, 200], "\(answer.text.prefix(800))")
            #expect(answer.closed)
        }
    }

    @Test("HTTP/1.0: closed after the answer, unless keep-alive; empty lines before a request are skipped")
    func http10() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let once = try await RawConnection.exchange(
                port: port, [Array("GET /healthz HTTP/1.0\r\n\r\nGET /healthz HTTP/1.0\r\n\r\n".utf8)])
            #expect(once.statuses == [200], "\(once.text.prefix(600))")
            #expect(once.closed)
            let kept = try await RawConnection.exchange(
                port: port,
                [
                    Array(
                        ("GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n\r\n\r\n"
                            + "GET /healthz HTTP/1.1\r\nHost: hub\r\nConnection: close\r\n\r\n").utf8)
                ])
            #expect(kept.statuses == [200, 200], "\(kept.text.prefix(600))")
        }
    }

    @Test("Expect: 100-continue gets 100 Continue before the body is sent, then the answer")
    func expectContinue() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let body = notification("continue-1")
            let head =
                "POST /v1/apps/\(Harness.notes)/users/alice/notifications HTTP/1.1\r\nHost: x\r\n"
                + "Authorization: Bearer \(Harness.notesKey)\r\nContent-Type: application/json\r\n"
                + "Expect: 100-continue\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
            let answer = try await RawConnection.exchange(port: port, [Array(head.utf8), Array(body.utf8)])
            #expect(answer.statuses == [100, 201], "\(answer.text.prefix(600))")
            #expect(answer.text.hasPrefix("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201"))
        }
    }

    @Test("the answer to HEAD has no body (a 404 problem included), so a pipelined request after it is read right")
    func headHasNoBody() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let requests =
                "HEAD /nowhere HTTP/1.1\r\nHost: x\r\n\r\n" + "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            let answer = try await RawConnection.exchange(port: port, [Array(requests.utf8)])
            let responses = answer.text.components(separatedBy: "HTTP/1.1 ").dropFirst()
            #expect(answer.statuses.count == 3, "\(answer.text)")
            #expect(answer.statuses.last == 200, "\(answer.text)")
            // Each HEAD answer ends with its head: the next status line follows the empty line.
            for response in responses.dropLast() {
                #expect(response.hasSuffix("\r\n\r\n"), "\(response)")
            }
            #expect(responses.last?.hasSuffix(#"{"status":"ok"}"#) == true, "\(answer.text)")
        }
    }
}

/// Issue 37: where the codec framed differently from llhttp (Node's parser) and nginx, each case
/// over a real connection to the hub's real routes.
extension HTTP1CodecTests {
    private static let publishHead =
        "POST /v1/apps/\(Harness.notes)/users/alice/notifications HTTP/1.1\r\nHost: x\r\n"
        + "Authorization: Bearer \(Harness.notesKey)\r\nContent-Type: application/json\r\n"

    /// A publish whose body goes chunked in one chunk, without its last chunk.
    private static func chunkedPublish(_ id: String) -> String {
        let body = notification(id)
        return publishHead + "Transfer-Encoding: chunked\r\n\r\n" + String(body.utf8.count, radix: 16) + "\r\n" + body
            + "\r\n"
    }

    @Test("a chunked terminator split across segments (0 CRLF, then CRLF) is answered at once, POST and GET")
    func splitTerminator() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let post = try await RawConnection.exchange(
                port: port,
                [
                    Array((Self.chunkedPublish("split-1") + "0\r\n").utf8),
                    Array("\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8),
                ], timeout: 10)
            #expect(post.statuses == [201, 200], "\(post.text.prefix(600))")
            let get = try await RawConnection.exchange(
                port: port,
                [
                    Array("GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n".utf8),
                    Array("\r\n".utf8),
                    Array("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8),
                ], timeout: 10)
            #expect(get.statuses == [200, 200], "\(get.text.prefix(600))")
            #expect(get.closed)
            // The final CRLF itself split.
            let crlf = try await RawConnection.exchange(
                port: port,
                [
                    Array((Self.chunkedPublish("split-2") + "0\r\n\r").utf8),
                    Array("\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8),
                ], timeout: 10)
            #expect(crlf.statuses == [201, 200], "\(crlf.text.prefix(600))")
        }
    }

    @Test(
        "bare CR and bare LF in chunked framing and trailers are refused with 400, and the connection closes",
        arguments: [
            ("a bare LF as the empty line that ends the trailers", "0\r\nX-T: t\r\n\n"),
            ("a bare LF as the empty line after the last chunk", "0\r\n\n"),
            ("a trailer field ending in a bare LF", "0\r\nX-T: t\n\r\n"),
            ("a bare CR in a trailer field", "0\r\nX-T: a\rb\r\n\r\n"),
            ("a bare CR in a chunk extension", "0;name=a\rb\r\n\r\n"),
            ("a bare LF ending a chunk-size line", "0\n\r\n"),
            ("a bare LF after a chunk's data", "1\r\na\n0\r\n\r\n"),
            ("a bare CR after a chunk's data", "1\r\na\r0\r\n\r\n"),
            ("whitespace after a chunk size", "0 \r\n\r\n"),
            ("Content-Length as a trailer field", "0\r\nContent-Length: 5\r\n\r\n"),
        ])
    func bareLineEndsInChunkedFraming(what: String, framing: String) async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            // A second request follows: it must not be answered (no client sends it after a refusal).
            let request =
                "POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + framing
                + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            let answer = try await RawConnection.exchange(port: port, [Array(request.utf8)], timeout: 10)
            #expect(answer.statuses == [400], "\(what): \(answer.text.prefix(600))")
            #expect(answer.closed, "\(what)")
        }
    }

    @Test(
        "request smuggling: a GET whose chunked body ends in a bare-LF trailer line, then a request, is one request, refused"
    )
    func bareLFTrailerSmuggling() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let request =
                "GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: t\n\r\n"
                + "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
            let answer = try await RawConnection.exchange(port: port, [Array(request.utf8)], timeout: 10)
            #expect(answer.statuses == [400], "\(answer.text.prefix(600))")
            #expect(!answer.text.contains("404"), "the smuggled request was answered")
            #expect(answer.closed)
        }
    }

    @Test(
        "a malformed chunked body of a publish is a 400 problem saying what is wrong, not a 500, and logs no error",
        arguments: [
            ("an invalid chunk size", ["zz\r\n"]),
            ("chunk data without its CRLF, in a later segment", ["", "xy"]),
        ])
    func malformedChunkedPublish(what: String, rest: [String]) async throws {
        let harness = try await Harness()
        let logs = LogCapture()
        try await harness.run(.live, logger: logs.logger(label: "malformed-chunked", level: .debug)) { client in
            let port = try #require(client.port)
            let start = Self.publishHead + "Transfer-Encoding: chunked\r\n\r\n5\r\n{\"id\""
            let writes = ([start] + rest).map { Array($0.utf8) }.filter { !$0.isEmpty }
            let answer = try await RawConnection.exchange(port: port, writes, timeout: 10)
            #expect(answer.statuses == [400], "\(what): \(answer.text.prefix(600))")
            #expect(answer.text.contains("invalid-request"), "\(what): \(answer.text.prefix(600))")
            #expect(answer.text.contains("chunk"), "\(what): \(answer.text.prefix(600))")
            #expect(answer.closed, "\(what)")
        }
        #expect(logs.messages(atLeast: .error).isEmpty, "\(what): \(logs.messages(atLeast: .error))")
    }

    @Test(
        "a malformed chunk in the head's own segment, before the route has the request, is the same 400 problem"
    )
    func malformedChunkBeforeTheRoute() async throws {
        let harness = try await Harness()
        let logs = LogCapture()
        try await harness.run(.live, logger: logs.logger(label: "malformed-chunk-first", level: .debug)) { client in
            let port = try #require(client.port)
            // One segment: the dispatcher still collects the body when the codec refuses it.
            let request = Self.publishHead + "Transfer-Encoding: chunked\r\n\r\n5\r\n{\"id\"zz\r\n"
            let answer = try await RawConnection.exchange(port: port, [Array(request.utf8)], timeout: 10)
            #expect(answer.statuses == [400], "\(answer.text.prefix(600))")
            #expect(answer.text.contains("invalid-request"), "\(answer.text.prefix(600))")
            #expect(answer.text.contains("chunk"), "\(answer.text.prefix(600))")
            #expect(answer.closed)
        }
        #expect(logs.messages(atLeast: .error).isEmpty, "\(logs.messages(atLeast: .error))")
    }

    @Test(
        "a body cut short by the client's FIN is the client's fault: 400 or a silent close, never a 5xx, no error logged",
        arguments: [
            ("a Content-Length body", "Content-Length: 400\r\n\r\n{\"id\":\"cut\""),
            ("a chunked body in its data", "Transfer-Encoding: chunked\r\n\r\n40\r\n{\"id\":\"cut\""),
            ("a chunked body after a chunk", "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n"),
            ("a chunked body in its trailers", "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-T: t\r\n"),
        ])
    func bodyCutByFIN(what: String, rest: String) async throws {
        let harness = try await Harness()
        let logs = LogCapture()
        try await harness.run(.live, logger: logs.logger(label: "cut-by-fin", level: .debug)) { client in
            let port = try #require(client.port)
            let answer = try await RawConnection.exchange(
                port: port, [Array((Self.publishHead + rest).utf8)], halfClose: true, timeout: 10)
            #expect(answer.statuses.allSatisfy { $0 == 400 }, "\(what): \(answer.text.prefix(600))")
            #expect(answer.closed, "\(what)")
        }
        #expect(logs.messages(atLeast: .error).isEmpty, "\(what): \(logs.messages(atLeast: .error))")
    }

    @Test(
        "chunk-size lines are read as llhttp reads them",
        arguments: [
            ("3\r\n", 3, 3), ("00000000000000000003\r\n", 3, 22), ("aB;x\r\n", 0xAB, 6),
            ("1;a=b;c=\"d e\\\"\"\r\n", 1, 17),
            ("1;;a\r\n", 1, 6), ("1;=b\r\n", 1, 6), ("1;a=\r\n", 1, 6), ("1;a=b\"q\"\r\n", 1, 10),
        ])
    func chunkSizeLines(line: String, size: Int, length: Int) {
        let parsed = Array(line.utf8).withUnsafeBytes { HTTP1ServerCodec.chunkSizeLine($0) }
        #expect(parsed == .complete(size: size, length: length), "\(line.debugDescription)")
        let partial = Array(line.utf8.dropLast()).withUnsafeBytes { HTTP1ServerCodec.chunkSizeLine($0) }
        #expect(partial == .incomplete, "\(line.debugDescription)")
    }

    @Test(
        "chunk-size lines llhttp refuses are refused",
        arguments: [
            "3 \r\n", "3\t\r\n", " 3\r\n", ";a\r\n", "\r\n", "+3\r\n", "0x3\r\n", "3;\r\n", "3;a;\r\n", "3; a\r\n",
            "3;a =b\r\n",
            "3;a=b=c\r\n", "3;a=\"b\"x\r\n", "3;a\n", "3\n", "3\r\r\n", "3;a=\"b\rc\"\r\n", "ffffffffffffffffff\r\n",
        ])
    func refusedChunkSizeLines(line: String) {
        let parsed = Array(line.utf8).withUnsafeBytes { HTTP1ServerCodec.chunkSizeLine($0) }
        guard case .invalid = parsed else {
            Issue.record("accepted: \(line.debugDescription) as \(parsed)")
            return
        }
    }
}
