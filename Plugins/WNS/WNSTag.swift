import HubCore

/// An `X-WNS-Tag` or `X-WNS-Group` value: 1–16 ASCII letters and digits, as WNS requires.
///
/// ``init(deriving:)`` turns any identifier into a valid value: an identifier that already is
/// 1–16 ASCII letters and digits is used as is; any other (longer, or with `-`, `.`, spaces, non-ASCII)
/// becomes the 16 lower-case hex digits of its 64-bit FNV-1a hash over UTF-8. The mapping is stable
/// across processes and hub instances, so a republished notification replaces its toast.
public struct WNSTag: Sendable, Hashable, CustomStringConvertible {
    public let value: String

    /// The value itself, or `nil` when it is not 1–16 ASCII letters and digits.
    public init?(exactly value: String) {
        guard Self.isValid(value) else { return nil }
        self.value = value
    }

    /// A valid tag for any identifier (see the type's documentation).
    public init(deriving identifier: String) {
        if Self.isValid(identifier) {
            value = identifier
            return
        }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in identifier.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        value = String(repeating: "0", count: 16 - hex.count) + hex
    }

    public var description: String { value }

    static func isValid(_ value: String) -> Bool {
        (1...16).contains(value.utf8.count)
            && value.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))
            }
    }
}

/// Per-send options that apply to every notification type.
public struct WNSSendOptions: Sendable, Hashable {
    /// `X-WNS-TTL`: how long WNS keeps the notification; `nil` = no expiry.
    public var timeToLive: Duration?
    /// `X-WNS-PRIORITY`; `nil` = the type's default (toast high, tile and badge medium, raw low).
    public var priority: WNSPriority?
    /// `X-WNS-RequestForStatus: true`: ask WNS for the device's connection status.
    public var requestStatus: Bool

    public init(timeToLive: Duration? = nil, priority: WNSPriority? = nil, requestStatus: Bool = false) {
        self.timeToLive = timeToLive
        self.priority = priority
        self.requestStatus = requestStatus
    }
}

/// `X-WNS-PRIORITY`, 1 (high) to 4 (very low).
public struct WNSPriority: RawRepresentable, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = min(max(rawValue, 1), 4) }
    public static let high = WNSPriority(rawValue: 1)
    public static let medium = WNSPriority(rawValue: 2)
    public static let low = WNSPriority(rawValue: 3)
    public static let veryLow = WNSPriority(rawValue: 4)
}

/// XML text escaping for toast, tile and badge bodies.
enum WNSXML {
    /// Escapes `&`, `<`, `>`, `"` and `'`, and drops characters XML 1.0 forbids (controls but tab,
    /// line feed and carriage return).
    static func escape(_ text: String) -> String {
        MarkupEscaping.escape(text, apostrophe: "&apos;", droppingXMLForbidden: true)
    }
}
