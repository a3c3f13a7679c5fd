public import struct Foundation.Date

/// The `apns-push-type` of a request, with the topic suffix and payload limit that come with it
/// (PROVIDERS.md §1.3). A growing set: Apple adds push types, so this is a struct with static members.
public struct APNSPushType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    /// What follows the bundle ID in `apns-topic` (`""` for alert and background pushes).
    public let topicSuffix: String
    /// The largest accepted body in bytes.
    public let payloadLimit: Int

    public init(rawValue: String) {
        self = Self.known.first { $0.rawValue == rawValue } ?? APNSPushType(rawValue, suffix: "")
    }

    init(_ rawValue: String, suffix: String, payloadLimit: Int = 4096) {
        self.rawValue = rawValue
        self.topicSuffix = suffix
        self.payloadLimit = payloadLimit
    }

    public static let alert = APNSPushType("alert", suffix: "")
    public static let background = APNSPushType("background", suffix: "")
    public static let voip = APNSPushType("voip", suffix: ".voip", payloadLimit: 5120)
    public static let complication = APNSPushType("complication", suffix: ".complication")
    public static let fileprovider = APNSPushType("fileprovider", suffix: ".pushkit.fileprovider")
    public static let liveactivity = APNSPushType("liveactivity", suffix: ".push-type.liveactivity")
    public static let location = APNSPushType("location", suffix: ".location-query")
    public static let pushtotalk = APNSPushType("pushtotalk", suffix: ".voip-ptt")
    public static let widgets = APNSPushType("widgets", suffix: ".push-type.widgets")
    public static let controls = APNSPushType("controls", suffix: ".push-type.controls")

    public static let known: [APNSPushType] = [
        .alert, .background, .voip, .complication, .fileprovider, .liveactivity, .location, .pushtotalk, .widgets,
        .controls,
    ]

    /// The `apns-topic` for an app: its bundle ID plus this type's suffix.
    public func topic(forBundleID bundleID: String) -> String { bundleID + topicSuffix }

    public var description: String { rawValue }
}

/// The `apns-priority` of a request.
public struct APNSPriority: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// `10`: deliver now. Only for pushes that show something.
    public static let immediate = APNSPriority(rawValue: 10)
    /// `5`: the device's power is considered; the only priority background pushes may use.
    public static let considerate = APNSPriority(rawValue: 5)
    /// `1`: the device's power comes first; never wakes the device.
    public static let powerSaving = APNSPriority(rawValue: 1)
    public var description: String { String(rawValue) }
}

/// The `apns-expiration` of a request: until when APNs stores it for an unreachable device.
public struct APNSExpiration: Hashable, Sendable, CustomStringConvertible {
    /// Seconds since 1970; `0` means try once and do not store.
    public let epochSeconds: Int64

    /// Try to deliver once; if the device is unreachable, drop it (`apns-expiration: 0`).
    public static let immediately = APNSExpiration(epochSeconds: 0)

    /// The longest APNs stores a notification: 30 days, in seconds.
    public static let maximumStorage: Double = 30 * 86_400

    /// Store and retry until `date` (APNs keeps at most 30 days), rounded down to the second.
    public static func at(_ date: Date) -> APNSExpiration {
        APNSExpiration(epochSeconds: max(1, Int64(date.timeIntervalSince1970.rounded(.down))))
    }

    public var description: String { String(epochSeconds) }
}

/// The `apns-collapse-id`: notifications with the same one replace each other on the device.
public struct APNSCollapseID: Hashable, Sendable, CustomStringConvertible {
    /// The header value, at most ``maxBytes`` bytes of UTF-8.
    public let value: String
    /// APNs' limit.
    public static let maxBytes = 64

    /// Uses `identifier` as is when it fits in 64 bytes and is a valid header value; otherwise keeps
    /// its first 47 bytes (cut on a character boundary, without control characters or leading
    /// whitespace) followed by `~` and a 16-digit hash of the whole, so two identifiers that share a
    /// prefix still collapse separately.
    public init(_ identifier: String) {
        if identifier.utf8.count <= Self.maxBytes, APNSRequest.fieldValueProblem("", identifier) == nil {
            value = identifier
            return
        }
        var prefix = ""
        var used = 0
        for character in identifier {
            let bytes = character.utf8
            if !bytes.allSatisfy(APNSRequest.isFieldByte) || (prefix.isEmpty && character.isWhitespace) { continue }
            if used + bytes.count > 47 { break }
            prefix.append(character)
            used += bytes.count
        }
        value = prefix + "~" + Self.fnv1a(identifier)
    }

    /// FNV-1a over the UTF-8 bytes, as 16 lowercase hex digits: stable across runs and machines.
    static func fnv1a(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    public var description: String { value }
}
