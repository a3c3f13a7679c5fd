/// A secret value (key, token, password) whose text never shows in logs, descriptions or dumps.
///
/// `description` prints where the secret came from (for example `env:WNS_SECRET`) and never the value.
/// Read the value with ``reveal()`` only at the place that needs it.
public struct Secret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    private let bytes: [UInt8]
    /// Where the value came from, safe to show: `env:NAME`, `file:path` or `inline`.
    public let source: String

    public init(_ value: String, source: String = "inline") {
        self.bytes = Array(value.utf8)
        self.source = source
    }

    public init(bytes: [UInt8], source: String) {
        self.bytes = bytes
        self.source = source
    }

    /// The secret's text. Call only where the value is used, never to log or print it.
    public func reveal() -> String { String(decoding: bytes, as: UTF8.self) }

    /// The secret's raw bytes (a PKCS#12 bundle, for example).
    public func revealBytes() -> [UInt8] { bytes }

    public var isEmpty: Bool { bytes.isEmpty }

    public var description: String { "<secret from \(source)>" }
    public var debugDescription: String { description }

    /// Compares with `other` in time that does not depend on where the first difference is.
    public func constantTimeEquals(_ other: String) -> Bool {
        let theirs = Array(other.utf8)
        var difference = UInt8(truncatingIfNeeded: bytes.count ^ theirs.count)
        let count = max(bytes.count, theirs.count)
        for index in 0..<count {
            let mine = index < bytes.count ? bytes[index] : 0
            let other = index < theirs.count ? theirs[index] : 0
            difference |= mine ^ other
        }
        return difference == 0
    }
}
