import Foundation
import Testing

@Suite("hub bench")
struct BenchCommandTests {
    @Test("bench rss starts `hub serve`, reads its resident memory from /proc and needs a clean SIGTERM exit")
    func rss() throws {
        let workspace = try makeWorkspace()
        try writeServeConfig(in: workspace)
        let output = try HubProcess.run(["bench", "rss", "--runs", "1", "--idle", "1"], in: workspace)
        #expect(output.status == 0, "\(output.stdout)\n\(output.stderr)")
        let reading = output.stdout.split(separator: "\n").first { $0.hasPrefix("run 1: VmRSS ") }
        let megabytes = reading.flatMap { Double($0.dropFirst("run 1: VmRSS ".count).prefix { $0 != " " }) }
        // A debug build of the hub, dynamically linked: more than 5 MB, far less than a gigabyte.
        #expect(megabytes.map { (5...1_000).contains($0) } == true, "\(output.stdout)")
        #expect(output.stdout.contains("idle RSS: min"), "\(output.stdout)")

        // A configuration that cannot start is reported, not measured.
        try "apps: [".write(to: workspace.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
        let broken = try HubProcess.run(["bench", "rss", "--runs", "1", "--idle", "1"], in: workspace)
        #expect(broken.status != 0)
        #expect(broken.stderr.contains("did not report listening"), "\(broken.stderr)")
    }
}
