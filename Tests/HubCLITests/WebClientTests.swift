import Foundation
import HubTesting
import Testing

/// The web client SDK (`clients/js`) end to end against the `hub` binary of this build:
///
/// - `clients/js/test/protocol.test.js` with node's own test runner (`node --test`): the feed's
///   pages and stored cursor, the event stream and its `Last-Event-ID` resumption, the long-poll
///   fallback, every documented error answer (401 refresh, 400 `invalid-cursor` and 410 resync,
///   429 and 503 with `Retry-After`), a hub restart, Web Push registration through `hub emulate
///   webpush`; each test starts its own `hub serve` on SQLite in a temporary folder on port 0;
/// - `Tests/Browser/web_client_test.py` in headless Chromium (Debian's, through Playwright for
///   Python): two contexts of one user, offline and back, the service-worker helper with pushes
///   delivered through CDP, and examples/web.
///
/// Both are real-time tests (a dismiss must reach the other context within a second): scripts/test
/// runs them after the parallel run. They run when node (and Chromium with Playwright) are there,
/// and always under `CI=true`, where a missing tool fails them; `.ci/run` installs all three.
@Suite("web client (clients/js): node and headless Chromium against hub serve", .serialized)
struct WebClientTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let ci = ProcessInfo.processInfo.environment["CI"] == "true"

    /// `node` on PATH.
    static var node: String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/node" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    @Test(
        "the SDK's protocol tests (node --test) against a real hub serve",
        .enabled(
            if: node != nil || ci, "needs node 20 or later on PATH (.ci/run installs it); never skipped with CI=true"),
        .timeLimit(.minutes(5)))
    func protocolTests() async throws {
        let node = try #require(Self.node, "node is not on PATH (apt-get install nodejs); .ci/run installs it")
        let result = try await ChildProcess.run(
            URL(fileURLWithPath: node),
            ["--test", "clients/js/test/protocol.test.js", "clients/js/test/declarative.test.js"], in: Self.root,
            environment: ["HUB_BINARY": HubProcess.executable.path])
        #expect(result.status == 0, "node --test failed:\n\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("# fail 0"), "\(result.stdout)")
        #expect(!result.stdout.contains("# pass 0"), "no test ran:\n\(result.stdout)")
    }

    @Test(
        "two contexts of one user, offline and back, the service worker and examples/web in headless Chromium",
        .enabled(
            if: ConsoleBrowserTests.browserAvailable || ci,
            "needs /usr/bin/chromium and Playwright for Python (.ci/run installs both); never skipped with CI=true"),
        .timeLimit(.minutes(5)))
    func browserTests() async throws {
        try #require(
            ConsoleBrowserTests.browserAvailable,
            "the browser test needs \(ConsoleBrowserTests.chromium) (apt-get install chromium) and Playwright for Python (pip install playwright); .ci/run installs both"
        )
        let output: String
        do {
            output = try await PythonScript.run(
                try String(
                    contentsOf: Self.root.appendingPathComponent("Tests/Browser/web_client_test.py"), encoding: .utf8),
                arguments: ["--hub", HubProcess.executable.path, "--root", Self.root.path],
                environment: ["HUB_CHROMIUM": ConsoleBrowserTests.chromium])
        } catch let failure as PythonScript.Failure {
            Issue.record("\(failure)")
            throw failure
        }
        #expect(!output.contains("FAILED"), "\(output)")
        for check in [
            "ok a dismiss in one context leaves the other's list within a second",
            "ok it resumed from its cursor with no gap and no duplicate",
            "ok a tap syncs and shows the newest unread change", "ok a close dismisses it on the hub",
            "ok examples/web has no errors", "ok hub serve exits 0 on SIGTERM",
        ] {
            #expect(output.contains(check), "missing \"\(check)\":\n\(output)")
        }
    }
}
