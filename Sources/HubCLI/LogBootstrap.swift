import Foundation
import HubConfig
import Logging

/// Sets up swift-log once for the executable: text (the default) or one JSON object per line.
enum LogBootstrap {
    static func bootstrap(_ settings: LoggingSettings) {
        let level = Logger.Level(rawValue: settings.level) ?? .info
        switch settings.format {
        case .text:
            LoggingSystem.bootstrap { label in
                var handler = TextLogHandler(StreamLogHandler.standardError(label: label))
                handler.logLevel = level
                return handler
            }
        case .json:
            LoggingSystem.bootstrap { label in JSONLogHandler(label: label, logLevel: level) }
        }
    }
}

/// swift-log's text format (`StreamLogHandler`), with metadata that costs nothing to set.
///
/// `StreamLogHandler` renders its metadata as text each time a key is set. Hummingbird sets a
/// request ID on a logger of its own for every request, so that rendering ran once per request
/// (~1% of a publish's CPU) for lines that are almost never written. This handler keeps the
/// metadata and hands it to the stream handler as the record's own metadata only when a line is
/// written: the same text, rendered once per line.
struct TextLogHandler: LogHandler {
    private var stream: StreamLogHandler
    var metadata: Logger.Metadata = [:]

    init(_ stream: StreamLogHandler) { self.stream = stream }

    var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        if !metadata.isEmpty {
            event.metadata = metadata.merging(event.metadata ?? [:]) { _, explicit in explicit }
        }
        stream.log(event: event)
    }
}

/// Writes each record as one JSON line on standard error: time, level, label, message, metadata.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    init(label: String, logLevel: Logger.Level) {
        self.label = label
        self.logLevel = logLevel
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var object: [String: Any] = [
            "time": ISO8601DateFormatter().string(from: Date()), "level": event.level.rawValue, "label": label,
            "message": event.message.description,
        ]
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        for (key, value) in merged { object[key] = value.description }
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        FileHandle.standardError.write(data + Data("\n".utf8))
    }
}
