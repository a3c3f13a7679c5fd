public import Logging
import Synchronization

/// Keeps what a logger logs, for tests that check what is logged, how often, and that no secret is.
///
/// ```swift
/// let logs = LogCapture()
/// let transport = try APNSTransport(…, logger: logs.logger)
/// …
/// #expect(logs.count("InvalidProviderToken", atLeast: .error) == 1, "\(logs.all)")
/// ```
public final class LogCapture: Sendable {
    /// One log call: its level, message and metadata (the logger's, overridden by the call's).
    public struct Record: Sendable {
        public var level: Logger.Level
        public var message: String
        public var metadata: [String: String]

        /// The message, then the metadata as `key=value` in key order.
        public var text: String {
            guard !metadata.isEmpty else { return message }
            return message + " " + metadata.map { "\($0)=\($1)" }.sorted().joined(separator: " ")
        }
    }

    private let entries = Mutex<[Record]>([])

    public init() {}

    /// A logger whose records land here: every level, or from `level` up.
    public func logger(label: String = "test", level: Logger.Level? = nil) -> Logger {
        var logger = Logger(label: label) { _ in CapturingLogHandler(capture: self) }
        if let level { logger.logLevel = level }
        return logger
    }

    /// A logger (every level) whose records land here.
    public var logger: Logger { logger() }

    /// Every record so far, in order.
    public var records: [Record] { entries.withLock { $0 } }

    /// How many records at `level` or above have `text` in their message (not their metadata).
    public func count(_ text: String, atLeast level: Logger.Level = .warning) -> Int {
        records.filter { $0.level >= level && $0.message.contains(text) }.count
    }

    /// The ``Record/text`` of the records at exactly `level`.
    public func messages(at level: Logger.Level) -> [String] {
        records.filter { $0.level == level }.map(\.text)
    }

    /// The ``Record/text`` of the records at `level` or above.
    public func messages(atLeast level: Logger.Level) -> [String] {
        records.filter { $0.level >= level }.map(\.text)
    }

    /// Every record as `level text`, for failure messages.
    public var all: [String] { records.map { "\($0.level) \($0.text)" } }

    fileprivate func append(_ record: Record) { entries.withLock { $0.append(record) } }
}

/// The handler behind ``LogCapture/logger``.
public struct CapturingLogHandler: LogHandler {
    public let capture: LogCapture
    public var logLevel: Logger.Level = .trace
    public var metadata: Logger.Metadata = [:]

    public init(capture: LogCapture) { self.capture = capture }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, call in call }
        capture.append(
            LogCapture.Record(
                level: event.level, message: event.message.description, metadata: merged.mapValues { "\($0)" }))
    }
}
