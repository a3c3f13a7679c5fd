import Foundation
import HubServer
import HubTesting
import Logging
import Testing

/// A bounded, seeded mutation fuzz of the hub's HTTP/1.1 server (issue 37): messages of the
/// framing corpus and requests to real routes, mutated (bytes flipped, inserted, dropped, doubled;
/// CR, LF, NUL, whitespace, digits, `;`, `:` and quotes put in; line ends swapped; messages
/// spliced), each sent split at a random point and then closed by the client, to the hub's real
/// routes over real connections. Any 5xx, any exchange that neither ends nor closes (a hang), a
/// server that stops answering, or an error-level log fails. It runs `HUB_FUZZ_SECONDS` seconds
/// (60 when `CI=true`, 5 otherwise) from seed `HUB_FUZZ_SEED` (37); a failure names the seed and
/// the iteration, and the bytes.
@Suite("HTTP/1.1 mutation fuzz")
struct HTTPFramingFuzzTests {
    static var seconds: Double {
        Double(ProcessInfo.processInfo.environment["HUB_FUZZ_SECONDS"] ?? "")
            ?? (ProcessInfo.processInfo.environment["CI"] == "true" ? 60 : 5)
    }

    static var seed: UInt64 { UInt64(ProcessInfo.processInfo.environment["HUB_FUZZ_SEED"] ?? "") ?? 37 }

    /// Requests that reach real routes: publishing (a JSON body, framed both ways), reading, probes.
    static let routeMessages: [String] = {
        let body = notification("fuzz-1")
        let publish =
            "POST /v1/apps/\(Harness.notes)/users/alice/notifications HTTP/1.1\r\nHost: h\r\n"
            + "Authorization: Bearer \(Harness.notesKey)\r\nContent-Type: application/json\r\n"
        return [
            publish + "Content-Length: \(body.utf8.count)\r\n\r\n" + body,
            publish + "Transfer-Encoding: chunked\r\n\r\n" + String(body.utf8.count, radix: 16) + ";x=1\r\n" + body
                + "\r\n0\r\nX-T: t\r\n\r\n",
            publish + "Expect: 100-continue\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body,
            "GET /healthz HTTP/1.1\r\nHost: h\r\n\r\nHEAD /healthz HTTP/1.1\r\nHost: h\r\n\r\n",
            "GET /v1/apps/\(Harness.notes)/me/feed?wait=1 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer x.y.z\r\n\r\n",
            "OPTIONS /v1/apps/\(Harness.notes)/me/feed HTTP/1.1\r\nHost: h\r\nOrigin: https://notes.contoso.com\r\n"
                + "Access-Control-Request-Method: GET\r\n\r\n",
            "PATCH /v1/apps/\(Harness.notes)/me/notifications/n1 HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\n"
                + #"{"readState":"x"}"#,
        ]
    }()

    @Test("mutated requests never get a 5xx, never hang the connection, never stop the server")
    func mutationFuzz() async throws {
        let harness = try await Harness()
        let logs = LogCapture()
        let seeds = FramingCorpus.cases.map(\.bytes) + Self.routeMessages.map { Array($0.utf8) }
        let seed = Self.seed
        let deadline = ContinuousClock.now + .seconds(Self.seconds)
        let failures = try await harness.run(
            .live, logger: logs.logger(label: "fuzz", level: .info),
            connections: ConnectionLimits(maxConnectionsPerClient: 10_000)
        ) { client in
            let port = try #require(client.port)
            let found = try await withThrowingTaskGroup(of: [String].self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        var found: [String] = []
                        var iteration = 0
                        while ContinuousClock.now < deadline && found.count < 5 {
                            let label = "seed \(seed), worker \(worker), iteration \(iteration)"
                            var generator = SeededGenerator(
                                seed: seed &* 1_000_003 &+ UInt64(worker) << 40 &+ UInt64(iteration))
                            iteration += 1
                            let bytes = Mutator.mutate(seeds, using: &generator)
                            let split = bytes.count > 1 ? Int.random(in: 1..<bytes.count, using: &generator) : nil
                            let exchange = try await FramingReplay.replay(port: port, bytes, split: split, timeout: 15)
                            let statuses = exchange.responses.map(\.status)
                            if exchange.hung || statuses.contains(where: { $0 >= 500 }) {
                                let what = exchange.hung ? "hung" : "answered \(statuses)"
                                found.append(
                                    "\(label): \(what), split after \(split ?? 0): \(String(decoding: bytes, as: UTF8.self).debugDescription)"
                                )
                            }
                        }
                        return found
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            // The server still answers.
            let healthy = try await RawHTTP.get(port: port, "/healthz")
            #expect(healthy.status == 200)
            return found
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        #expect(logs.messages(atLeast: .error).isEmpty, "\(logs.messages(atLeast: .error).prefix(10))")
    }
}

/// Mutations of raw HTTP messages.
enum Mutator {
    private static let interesting: [[UInt8]] = [
        [13], [10], [13, 10], [0], [32], [9], [0x7F], [0x80], [0xFF], Array(";".utf8), Array(":".utf8),
        Array("\"".utf8), Array("\\".utf8), Array("0".utf8), Array("f".utf8), Array("=".utf8), Array(",".utf8),
        Array("\r\n\r\n".utf8), Array("0\r\n\r\n".utf8), Array("Transfer-Encoding: chunked\r\n".utf8),
        Array("Content-Length: 3\r\n".utf8), Array("Expect: 100-continue\r\n".utf8), Array("Host: h\r\n".utf8),
        Array("GET / HTTP/1.1\r\nHost: h\r\n\r\n".utf8), Array("ffffffff".utf8),
    ]

    static func mutate(_ seeds: [[UInt8]], using generator: inout SeededGenerator) -> [UInt8] {
        var bytes = seeds.randomElement(using: &generator)!
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            let at = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &generator)
            switch Int.random(in: 0..<8, using: &generator) {
            case 0 where !bytes.isEmpty:
                bytes[at] = UInt8.random(in: 0...255, using: &generator)
            case 1:
                bytes.insert(contentsOf: interesting.randomElement(using: &generator)!, at: at)
            case 2 where !bytes.isEmpty:
                bytes.removeSubrange(at..<min(bytes.count, at + Int.random(in: 1...8, using: &generator)))
            case 3 where !bytes.isEmpty:
                let end = min(bytes.count, at + Int.random(in: 1...32, using: &generator))
                bytes.insert(contentsOf: bytes[at..<end], at: end)
            case 4:
                // CRLF to LF or LF to CRLF, once.
                if let cr = bytes[at...].firstIndex(of: 13) {
                    bytes.remove(at: cr)
                } else if let lf = bytes[at...].firstIndex(of: 10) {
                    bytes.insert(13, at: lf)
                }
            case 5:
                bytes = Array(bytes.prefix(at))
            case 6:
                bytes += seeds.randomElement(using: &generator)!
            default:
                if let digit = bytes[at...].firstIndex(where: { (48...57).contains($0) }) {
                    bytes[digit] = Array("0123456789abcdefF".utf8).randomElement(using: &generator)!
                }
            }
        }
        return bytes
    }
}
