import Logging
import Synchronization
import Testing

@testable import HubCLI

@Suite("Log format")
struct LogFormatTests {
    /// Collects what a handler writes.
    final class Lines: TextOutputStream, @unchecked Sendable {
        private let text = Mutex("")
        func write(_ string: String) { text.withLock { $0 += string } }
        var value: String { text.withLock { $0 } }
    }

    /// A line without its leading time stamp (the two handlers may write in different seconds).
    static func untimed(_ text: String) -> [String] {
        text.split(separator: "\n").map { line in String(line.drop { $0 != " " }) }
    }

    @Test("Text lines are StreamLogHandler's: metadata set on the logger, given with the line, and both")
    func sameAsStreamLogHandler() {
        let stream = Lines()
        let lazy = Lines()
        var plain = Logger(label: "hub") { _ in StreamLogHandler(label: "hub", stream: stream, metadataProvider: nil) }
        var text = Logger(label: "hub") { _ in
            TextLogHandler(StreamLogHandler(label: "hub", stream: lazy, metadataProvider: nil))
        }
        for index in 0..<2 {
            plain.info("before any metadata")
            text.info("before any metadata")
            plain[metadataKey: "request"] = "r\(index)"
            text[metadataKey: "request"] = "r\(index)"
            plain[metadataKey: "app"] = .stringConvertible(index)
            text[metadataKey: "app"] = .stringConvertible(index)
            plain.warning("published", metadata: ["user": "alice", "app": "explicit wins"])
            text.warning("published", metadata: ["user": "alice", "app": "explicit wins"])
            plain.debug("below the level")
            text.debug("below the level")
            plain[metadataKey: "request"] = nil
            text[metadataKey: "request"] = nil
            plain.error("after removing one")
            text.error("after removing one")
            plain[metadataKey: "app"] = nil
            text[metadataKey: "app"] = nil
        }
        #expect(text[metadataKey: "app"] == nil)
        text[metadataKey: "k"] = "v"
        #expect(text[metadataKey: "k"] == "v")
        #expect(stream.value.contains("app=explicit wins request=r1 user=alice"), "\(stream.value)")
        #expect(Self.untimed(lazy.value) == Self.untimed(stream.value))
        #expect(Self.untimed(lazy.value).count == 6)
    }
}
