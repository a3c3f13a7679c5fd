import Foundation
import HTTPTypes
import HubTesting
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

@testable import HubServer

/// The hub's HTTP/1.1 framing against llhttp, Node's parser (issue 37): a corpus of raw requests
/// (Content-Length and chunked framing, trailers, line endings, request lines, Host, Expect,
/// pipelining) replayed against the hub's real server (``HTTPServerBuilder/hubHTTP1``: its codec,
/// dispatcher and connection handling, over real connections) and against a Node HTTP server
/// (`Fixtures/llhttp/llhttp-echo.mjs`); both echo each request they accept (method, target, body
/// bytes). Every message is also replayed to the hub split into two segments at every byte
/// boundary (`HUB_FRAMING_SPLITS=all`, the default when `CI=true`) or at a seeded sample of them
/// (`HUB_FRAMING_SPLITS=<count>`, 6 by default). The request boundaries, the body bytes and
/// refusal against acceptance must agree; where the hub deliberately refuses what llhttp accepts,
/// the case says so and why. Skipped when `node` is missing, except with `CI=true`, where that fails.
@Suite(
    "HTTP/1.1 framing against llhttp",
    .enabled(
        if: NodeEcho.nodePath != nil || ProcessInfo.processInfo.environment["CI"] == "true",
        "node is not installed: the framing test against llhttp needs node (20 or later) on PATH")
)
struct HTTPFramingDifferentialTests {
    @Test("every corpus message is framed as llhttp frames it, whole and split at every byte boundary")
    func corpusAgreesWithLLHTTP() async throws {
        let node = try NodeEcho.start()
        defer { node.stop() }
        let server = EchoServer()
        try await server.run { hubPort in
            let cases = FramingCorpus.cases
            let expected = try await concurrently(cases, width: 8) { item in
                FramingOutcome(try await FramingReplay.replay(port: node.port, item.bytes))
            }
            var failures: [String] = []
            for (item, outcome) in zip(cases, expected) where outcome.hung {
                failures.append("\(item.name): node did not answer")
            }
            #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
            var jobs: [(index: Int, split: Int?)] = []
            var generator = SeededGenerator(seed: FramingCorpus.seed)
            for (index, item) in cases.enumerated() {
                jobs.append((index, nil))
                for split in FramingCorpus.splits(of: item.bytes.count, using: &generator) {
                    jobs.append((index, split))
                }
            }
            let outcomes = try await concurrently(jobs, width: 8) { job in
                FramingOutcome(
                    try await FramingReplay.replay(port: hubPort, cases[job.index].bytes, split: job.split))
            }
            // The first disagreement of each message, and at how many splits it disagreed.
            var disagreements: [Int: (first: String, splits: [Int])] = [:]
            var count = 0
            for (job, hub) in zip(jobs, outcomes) {
                let item = cases[job.index]
                guard let problem = item.disagreement(node: expected[job.index], hub: hub) else { continue }
                count += 1
                let at = job.split.map { "split after byte \($0)" } ?? "whole"
                disagreements[job.index, default: ("\(at): \(problem)", [])].splits.append(job.split ?? 0)
            }
            let report = disagreements.keys.sorted().map { index in
                let (first, splits) = disagreements[index]!
                let bytes = String(decoding: cases[index].bytes, as: UTF8.self).debugDescription
                return "\(cases[index].name) (\(splits.count) replays, \(first))\n    bytes: \(bytes)"
            }
            #expect(
                count == 0,
                "\(count) of \(jobs.count) replays (\(cases.count) messages) framed otherwise than llhttp:\n\(report.joined(separator: "\n"))"
            )
        }
    }
}

/// What a server made of one replay, for comparing framing.
struct FramingOutcome: Sendable, CustomStringConvertible {
    /// The requests it accepted, in order: method, path, body length, body bytes in hexadecimal.
    var echoes: [String]
    /// The status of the first answer that is not an echo (a refusal), if any; no more is read.
    var refusal: Int?
    /// llhttp's error code, when Node refused.
    var parseError: String?
    var hung: Bool

    init(_ exchange: FramingReplay.Exchange) {
        echoes = []
        hung = exchange.hung
        for response in exchange.responses where !(100..<200).contains(response.status) {
            guard let echo = response.headers["x-echo"] else {
                refusal = response.status
                parseError = response.headers["x-parse-error"]
                break
            }
            // Node echoes the target as sent; the hub's requests carry the path of an absolute-form one.
            var words = echo.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            if words.count == 3 { words[1] = HTTP1HeadParser.path(of: words[1]) }
            // The hub's routes see HEAD as GET (it is answered wherever GET is, without a body).
            if words.first == "HEAD" { words[0] = "GET" }
            echoes.append(words.joined(separator: " "))
        }
    }

    var description: String {
        let accepted = echoes.isEmpty ? "no request" : echoes.map { "[\($0)]" }.joined(separator: " ")
        let end =
            hung
            ? "then no answer and no close (hung)"
            : refusal.map { "then \($0)" + (parseError.map { " \($0)" } ?? "") } ?? "then closed"
        return "\(accepted) \(end)"
    }
}

/// One raw message of the corpus.
struct FramingCase: Sendable {
    var name: String
    var bytes: [UInt8]
    /// The hub deliberately refuses the request with this index (counting from 0) that llhttp
    /// accepts, with the reason.
    var hubRefuses: (request: Int, reason: String)?

    /// Why the hub's outcome differs from Node's, or `nil` when the framing agrees.
    func disagreement(node: FramingOutcome, hub: FramingOutcome) -> String? {
        if hub.hung { return "the hub hung (no answer, no close); llhttp: \(node)" }
        if let (index, reason) = hubRefuses {
            let expected = Array(node.echoes.prefix(index))
            if hub.echoes == expected && hub.refusal == 400 { return nil }
            return "the hub should refuse request \(index) (\(reason)): hub \(hub); llhttp \(node)"
        }
        guard hub.echoes == node.echoes else { return "hub \(hub); llhttp \(node)" }
        switch node.refusal {
        case nil:
            if hub.refusal == nil { return nil }
        case 400? where node.parseError == "HPE_INVALID_EOF_STATE" || node.parseError == "HPE_CLOSED_CONNECTION":
            // Bytes after the last message when the client closed: a 400 or a silent close.
            if hub.refusal == nil || hub.refusal == 400 { return nil }
        case let status?:
            if hub.refusal == status { return nil }
        }
        return "hub \(hub); llhttp \(node)"
    }
}

/// The corpus: each message as a client might send it (the client's FIN follows).
enum FramingCorpus {
    static let seed: UInt64 = UInt64(ProcessInfo.processInfo.environment["HUB_FRAMING_SEED"] ?? "") ?? 37

    /// The split points to replay a message of `count` bytes at: all, or a seeded sample.
    static func splits(of count: Int, using generator: inout SeededGenerator) -> [Int] {
        guard count > 1 else { return [] }
        let setting =
            ProcessInfo.processInfo.environment["HUB_FRAMING_SPLITS"]
            ?? (ProcessInfo.processInfo.environment["CI"] == "true" ? "all" : "6")
        let all = Array(1..<count)
        guard setting != "all", let sample = Int(setting), sample < all.count else { return all }
        return Array(all.shuffled(using: &generator).prefix(max(0, sample))).sorted()
    }

    private static func message(_ name: String, _ text: String, hubRefuses: (Int, String)? = nil) -> FramingCase {
        FramingCase(name: name, bytes: Array(text.utf8), hubRefuses: hubRefuses)
    }

    private static let get = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
    private static let chunkedPost = "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    private static func post(_ length: String) -> String {
        "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: \(length)\r\n\r\n"
    }

    static let cases: [FramingCase] =
        contentLength + chunked + trailers + lineEndings + requestLines + hostAndExpect
        + pipelining

    static let contentLength: [FramingCase] = [
        message("content-length", post("5") + "hello"),
        message("content-length zero", post("0")),
        message("content-length with leading zeros", post("0005") + "hello"),
        message("content-length with 21 digits of leading zeros", post("000000000000000000005") + "hello"),
        message(
            "content-length with whitespace around",
            "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: \t5 \t\r\n\r\nhello"),
        message(
            "content-length twice, equal",
            "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello"),
        message(
            "content-length twice, different",
            "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 3\r\n\r\nhello"),
        message("content-length as a list", post("5, 5") + "hello"),
        message("content-length with a sign", post("+5") + "hello"),
        message("content-length negative", post("-5") + "hello"),
        message("content-length in hexadecimal", post("0x5") + "hello"),
        message("content-length with a space inside", post("1 2") + "hello"),
        message("content-length empty", "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\r\n"),
        message("content-length overflowing", post("99999999999999999999999") + "hello"),
        message("content-length body cut short by FIN", post("10") + "hello"),
        message("content-length body holding a request", post("36") + "GET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n"),
        message("content-length on GET", "GET /g HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"),
        message(
            "content-length, then transfer-encoding",
            "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        message(
            "transfer-encoding, then content-length",
            "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"),
    ]

    static let chunked: [FramingCase] = [
        message("chunked", chunkedPost + "5\r\nhello\r\n0\r\n\r\n"),
        message("chunked, three chunks", chunkedPost + "1\r\na\r\n2\r\nbc\r\n3\r\ndef\r\n0\r\n\r\n"),
        message("chunked, upper-case hex", chunkedPost + "A\r\n0123456789\r\n0\r\n\r\n"),
        message("chunked, size with leading zeros", chunkedPost + "0000000000000000005\r\nhello\r\n000\r\n\r\n"),
        message("chunked, no chunks", chunkedPost + "0\r\n\r\n"),
        message(
            "chunked, value of Transfer-Encoding in capitals",
            "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: CHUNKED\r\n\r\n1\r\na\r\n0\r\n\r\n"),
        message(
            "chunked on GET", "GET /g HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"),
        message("chunk extension, token", chunkedPost + "5;name\r\nhello\r\n0;last\r\n\r\n"),
        message("chunk extension, name=value", chunkedPost + "5;name=value;other=x\r\nhello\r\n0\r\n\r\n"),
        message("chunk extension, quoted", chunkedPost + "5;name=\"a b;c\"\r\nhello\r\n0\r\n\r\n"),
        message("chunk extension, quoted pair", chunkedPost + "5;name=\"a\\\"b\"\r\nhello\r\n0\r\n\r\n"),
        message("chunk extension, empty value", chunkedPost + "5;name=\r\nhello\r\n0\r\n\r\n"),
        message("chunk extension, empty names", chunkedPost + "5;;name\r\nhello\r\n0\r\n\r\n"),
        message("chunk extension, empty at the end", chunkedPost + "5;\r\nhello\r\n0\r\n\r\n"),
        message("chunk extension, space after ;", chunkedPost + "5; name\r\nhello\r\n0\r\n\r\n"),
        message("chunk extension, space before =", chunkedPost + "5;name =x\r\nhello\r\n0\r\n\r\n"),
        message("chunk extension, two =", chunkedPost + "5;a=b=c\r\nhello\r\n0\r\n\r\n"),
        message("chunk extension, text after a quoted value", chunkedPost + "5;a=\"b\"c\r\nhello\r\n0\r\n\r\n"),
        message("chunk extension, bare CR", chunkedPost + "5;a=b\rc\r\nhello\r\n0\r\n\r\n"),
        message("chunk extension, bare LF", chunkedPost + "5;a\nhello\r\n0\r\n\r\n"),
        message("chunk extension, control character", chunkedPost + "5;a=\u{1}\r\nhello\r\n0\r\n\r\n"),
        message("chunk size, space after", chunkedPost + "5 \r\nhello\r\n0\r\n\r\n"),
        message("chunk size, tab after", chunkedPost + "5\t\r\nhello\r\n0\r\n\r\n"),
        message("chunk size, space before", chunkedPost + " 5\r\nhello\r\n0\r\n\r\n"),
        message("chunk size, missing", chunkedPost + "\r\nhello\r\n0\r\n\r\n"),
        message("chunk size, not hexadecimal", chunkedPost + "zz\r\nhello\r\n0\r\n\r\n"),
        message("chunk size, 0x prefix", chunkedPost + "0x5\r\nhello\r\n0\r\n\r\n"),
        message("chunk size, overflowing", chunkedPost + "fffffffffffffffffff\r\nhello\r\n0\r\n\r\n"),
        message("chunk size line, bare LF", chunkedPost + "5\nhello\r\n0\r\n\r\n"),
        message("chunk size line, bare CR", chunkedPost + "5\rhello\r\n0\r\n\r\n"),
        message("chunk data longer than its size", chunkedPost + "3\r\nhello\r\n0\r\n\r\n"),
        message("chunk data shorter than its size", chunkedPost + "7\r\nhello\r\n0\r\n\r\n"),
        message("chunk data, then bare LF", chunkedPost + "5\r\nhello\n0\r\n\r\n"),
        message("chunk data, then bare CR", chunkedPost + "5\r\nhello\r0\r\n\r\n"),
        message("last chunk missing, FIN", chunkedPost + "5\r\nhello\r\n"),
        message("final CRLF missing, FIN", chunkedPost + "5\r\nhello\r\n0\r\n"),
        message("final LF missing, FIN", chunkedPost + "5\r\nhello\r\n0\r\n\r"),
        message(
            "transfer-encoding twice",
            "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        message(
            "transfer-encoding chunked, chunked",
            "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n"),
        message(
            "transfer-encoding identity", "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n"),
        message(
            "transfer-encoding gzip, chunked",
            "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            hubRefuses: (
                0,
                "the hub decodes no transfer coding but chunked; RFC 9112 6.1 lets a server refuse one it does not understand"
            )),
        message(
            "transfer-encoding empty", "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n\r\n0\r\n\r\n",
            hubRefuses: (0, "Node 20's llhttp ignores an empty Transfer-Encoding; llhttp 9.3 since refuses it too")),
    ]

    static let trailers: [FramingCase] = [
        message("trailer field", chunkedPost + "5\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n"),
        message("trailer fields, two", chunkedPost + "0\r\nA: 1\r\nB: 2\r\n\r\n"),
        message("trailer field, empty value", chunkedPost + "0\r\nA:\r\n\r\n"),
        message("trailer field, whitespace around the value", chunkedPost + "0\r\nA: \tb \t\r\n\r\n"),
        message("trailer field, obs-text", chunkedPost + "0\r\nA: caf\u{E9}\r\n\r\n"),
        message("trailer field, Host", chunkedPost + "0\r\nHost: other\r\n\r\n"),
        message("trailer, bare LF as the last line", chunkedPost + "0\r\nA: 1\r\n\n"),
        message("trailer, bare LF after the last chunk", chunkedPost + "0\r\n\n"),
        message("trailer field ending in a bare LF", chunkedPost + "0\r\nA: 1\n\r\n"),
        message("trailer field with a bare CR", chunkedPost + "0\r\nA: 1\r2\r\n\r\n"),
        message("trailer field with NUL", chunkedPost + "0\r\nA: 1\u{0}2\r\n\r\n"),
        message("trailer field with DEL", chunkedPost + "0\r\nA: 1\u{7F}\r\n\r\n"),
        message("trailer field, space before the colon", chunkedPost + "0\r\nA : 1\r\n\r\n"),
        message("trailer field, folded", chunkedPost + "0\r\nA: 1\r\n 2\r\n\r\n"),
        message("trailer field, no colon", chunkedPost + "0\r\nA\r\n\r\n"),
        message("trailer field, no name", chunkedPost + "0\r\n: 1\r\n\r\n"),
        message("trailer Content-Length", chunkedPost + "0\r\nContent-Length: 5\r\n\r\n"),
        message("trailer Transfer-Encoding", chunkedPost + "0\r\nTransfer-Encoding: chunked\r\n\r\n"),
        message("trailers cut short by FIN", chunkedPost + "0\r\nA: 1\r\n"),
        message(
            "GET, chunked, bare-LF trailer line, then a request (smuggling)",
            "GET /g HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: 1\n\r\n"
                + "GET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n"),
        message(
            "GET, chunked, bare-LF end of trailers, then a request (smuggling)",
            "GET /g HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\n"
                + "GET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n"),
        message(
            "trailer Connection: close, then a request",
            chunkedPost + "0\r\nConnection: close\r\n\r\n" + get),
    ]

    static let lineEndings: [FramingCase] = [
        message("head, bare LF after the request line", "GET /a HTTP/1.1\nHost: h\r\n\r\n"),
        message("head, bare LF after a field", "GET /a HTTP/1.1\r\nHost: h\n\r\n"),
        message("head, bare LF as the empty line", "GET /a HTTP/1.1\r\nHost: h\r\n\n"),
        message("head, bare CR in a field", "GET /a HTTP/1.1\r\nHost: h\r\nA: 1\r2\r\n\r\n"),
        message("head, bare CR after the request line", "GET /a HTTP/1.1\rHost: h\r\n\r\n"),
        message("empty lines before a request", "\r\n\r\n" + get),
        message("bare LF before a request", "\n" + get),
        message("bare LF between requests", get + "\n" + get),
        message("CRLF between requests", post("1") + "x\r\n" + get),
        message(
            "bare CR before a request", "\r" + get,
            hubRefuses: (0, "a bare CR is refused everywhere (issue 37); llhttp skips it before a request line")),
        message("field value with NUL", "GET /a HTTP/1.1\r\nHost: h\r\nA: 1\u{0}\r\n\r\n"),
        message("field value with DEL", "GET /a HTTP/1.1\r\nHost: h\r\nA: 1\u{7F}\r\n\r\n"),
        message("field value with a control character", "GET /a HTTP/1.1\r\nHost: h\r\nA: \u{1}\r\n\r\n"),
        message("field value with obs-text", "GET /a HTTP/1.1\r\nHost: h\r\nA: caf\u{E9}\r\n\r\n"),
        message("field name with a space before the colon", "GET /a HTTP/1.1\r\nHost: h\r\nA : 1\r\n\r\n"),
        message("field folded", "GET /a HTTP/1.1\r\nHost: h\r\nA: 1\r\n 2\r\n\r\n"),
        message("field starting with whitespace", "GET /a HTTP/1.1\r\n Host: h\r\n\r\n"),
        message("field without colon", "GET /a HTTP/1.1\r\nHost: h\r\nA\r\n\r\n"),
        message("field name with a non-token character", "GET /a HTTP/1.1\r\nHost: h\r\nA(b: 1\r\n\r\n"),
        message("head cut short by FIN", "GET /a HTTP/1.1\r\nHost: h\r\n"),
        message("request line cut short by FIN", "GET /a HT"),
    ]

    static let requestLines: [FramingCase] = [
        message("query string", "GET /a?b=c&d=%20e HTTP/1.1\r\nHost: h\r\n\r\n"),
        message("absolute form", "GET http://h/a?b HTTP/1.1\r\nHost: h\r\n\r\n"),
        message("asterisk form", "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"),
        message("HEAD", "HEAD /a HTTP/1.1\r\nHost: h\r\n\r\n"),
        message("PATCH with a body", "PATCH /a HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}"),
        message("M-SEARCH (a method llhttp knows)", "M-SEARCH /a HTTP/1.1\r\nHost: h\r\n\r\n"),
        message("unknown method", "FOO /a HTTP/1.1\r\nHost: h\r\n\r\n"),
        message("method in lower case", "get /a HTTP/1.1\r\nHost: h\r\n\r\n"),
        message("HTTP/1.0", "GET /a HTTP/1.0\r\n\r\n"),
        message("HTTP/1.0 with keep-alive, then a request", "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + get),
        message("HTTP/1.0, then a request (closes)", "GET /a HTTP/1.0\r\n\r\n" + get),
        message("HTTP/1.2", "GET /a HTTP/1.2\r\nHost: h\r\n\r\n"),
        message("http/1.1 in lower case", "GET /a http/1.1\r\nHost: h\r\n\r\n"),
        message("space after the version", "GET /a HTTP/1.1 \r\nHost: h\r\n\r\n"),
        message(
            "no version", "GET /a\r\nHost: h\r\n\r\n",
            hubRefuses: (0, "llhttp reads it as HTTP/0.9; the hub serves HTTP/1.1 and 1.0 only")),
        message(
            "HTTP/2.0 in an HTTP/1 request line", "GET /a HTTP/2.0\r\nHost: h\r\n\r\n",
            hubRefuses: (0, "the hub speaks HTTP/1.1 and 1.0 on this port")),
        message(
            "two spaces before the target", "GET  /a HTTP/1.1\r\nHost: h\r\n\r\n",
            hubRefuses: (0, "RFC 9112 3: single spaces; lenient splitting is what request smuggling lives on")),
        message("space inside the target", "GET /a b HTTP/1.1\r\nHost: h\r\n\r\n"),
        message("leading space", " GET /a HTTP/1.1\r\nHost: h\r\n\r\n"),
        message("control character in the target", "GET /a\u{1}b HTTP/1.1\r\nHost: h\r\n\r\n"),
    ]

    static let hostAndExpect: [FramingCase] = [
        message("HTTP/1.1 without Host", "GET /a HTTP/1.1\r\n\r\n"),
        message(
            "two Host fields", "GET /a HTTP/1.1\r\nHost: h\r\nHost: i\r\n\r\n",
            hubRefuses: (0, "RFC 9112 3.2: a server MUST answer 400 to more than one Host")),
        message("empty Host", "GET /a HTTP/1.1\r\nHost:\r\n\r\n"),
        message(
            "Expect: 100-continue with a body",
            "POST /p HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello"),
        message(
            "Expect: 100-Continue (case)",
            "POST /p HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 5\r\n\r\nhello"),
        message(
            "Expect: 100-continue, chunked",
            "POST /c HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        ),
        message("Expect: 100-continue without a body", "GET /a HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n"),
    ]

    static let pipelining: [FramingCase] = [
        message("three GETs", get + get + get),
        message("GET, POST with a body, GET", get + post("5") + "hello" + get),
        message("HEAD, then GET", "HEAD /a HTTP/1.1\r\nHost: h\r\n\r\n" + get),
        message("chunked POST, then GET", chunkedPost + "5\r\nhello\r\n0\r\n\r\n" + get),
        message(
            "chunked POST with trailers, then POST", chunkedPost + "1\r\nx\r\n0\r\nA: 1\r\n\r\n" + post("2") + "yz"),
        message("Connection: close, then a request", "GET /a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n" + get),
        message("a request, then garbage", get + "XYZ\r\n\r\n"),
        message("a request, then part of one, FIN", get + "GET /b HTTP/1.1\r\nHo"),
        message(
            "a request, then a bad one, then a good one", get + "GET /a HTTP/1.1\r\nA : 1\r\nHost: h\r\n\r\n" + get),
    ]
}

/// The hub's real server (``HTTPServerBuilder/hubHTTP1``: codec, dispatcher, connection guard)
/// with a responder that echoes each request as `llhttp-echo.mjs` does; refused heads are answered
/// by the hub's own rule (``RequestHeadLimits``).
struct EchoServer {
    struct Responder: HTTPResponder {
        typealias Context = BasicRequestContext

        func respond(to request: Request, context: Context) async throws -> Response {
            if let problem = RequestHeadLimits.problem(for: request) { return problem.response }
            var body: [UInt8] = []
            do {
                for try await part in request.body { body += part.readableBytesView }
            } catch let error as HTTPError {
                // As the hub's router answers it (a malformed body, or one cut short).
                return Response(status: error.status, headers: [.contentLength: "0"])
            }
            let hex = body.map { String(format: "%02x", $0) }.joined()
            let echo = "\(request.method.rawValue) \(request.uri.description) \(body.count) \(hex)"
            return Response(status: .ok, headers: [HTTPField.Name("X-Echo")!: echo, .contentLength: "0"])
        }
    }

    /// Runs the server while `body` gets its port.
    func run(_ body: @Sendable @escaping (Int) async throws -> Void) async throws {
        let app = Application(
            responder: Responder(),
            server: .hubHTTP1(connections: ConnectionLimits(maxConnectionsPerClient: 10_000)),
            logger: Logger(label: "framing-echo"))
        try await app.test(.live) { client in
            try await body(try #require(client.port))
        }
    }
}

/// `llhttp-echo.mjs` in a node process of its own, on a port of its own.
final class NodeEcho: @unchecked Sendable {
    let port: Int
    private let process: Process
    private let input: Pipe

    /// `node` on PATH.
    static var nodePath: String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/node" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/llhttp/llhttp-echo.mjs").path
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private init(port: Int, process: Process, input: Pipe) {
        self.port = port
        self.process = process
        self.input = input
    }

    static func start() throws -> NodeEcho {
        guard let node = nodePath else {
            throw Failure(
                description:
                    "node is not installed, and CI=true: install node 20 or later (the framing test runs Fixtures/llhttp/llhttp-echo.mjs)"
            )
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: node)
        process.arguments = [script]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var line: [UInt8] = []
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            guard let first = byte.first, first != 10 else { break }
            line.append(first)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw Failure(description: "llhttp-echo.mjs printed no port: \(String(decoding: line, as: UTF8.self))")
        }
        return NodeEcho(port: port, process: process, input: input)
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        process.terminate()
        process.waitUntilExit()
    }
}

/// `body` for each of `items`, at most `width` at once, results in order.
func concurrently<Item: Sendable, Result: Sendable>(
    _ items: [Item], width: Int, _ body: @Sendable @escaping (Item) async throws -> Result
) async throws -> [Result] {
    try await withThrowingTaskGroup(of: (Int, Result).self) { group in
        var results = [Result?](repeating: nil, count: items.count)
        var next = 0
        while next < min(width, items.count) {
            let index = next
            group.addTask { (index, try await body(items[index])) }
            next += 1
        }
        while let (index, result) = try await group.next() {
            results[index] = result
            if next < items.count {
                let index = next
                group.addTask { (index, try await body(items[index])) }
                next += 1
            }
        }
        return results.map { $0! }
    }
}
