extension FCMMessage {
    /// The exact `messages:send` body for this message: `{"message": {…}, "validate_only": true}`
    /// (`validate_only` only when asked), with FCM's snake_case field names and `data` keys sorted.
    ///
    /// Written by hand rather than with `JSONEncoder`: it runs once per send, and this is the
    /// transport's hot path.
    public func requestBody(validateOnly: Bool = false) -> [UInt8] {
        var json = JSONWriter()
        json.open()
        json.key("message")
        json.open()
        switch target {
        case .token(let token): json.field("token", token)
        case .topic(let topic): json.field("topic", topic)
        case .condition(let condition): json.field("condition", condition)
        }
        if !data.isEmpty {
            json.key("data")
            json.open()
            for (key, value) in data.sorted(by: { $0.key < $1.key }) { json.field(key, value) }
            json.close()
        }
        if let notification {
            json.key("notification")
            json.open()
            json.field("title", notification.title)
            json.field("body", notification.body)
            json.field("image", notification.image)
            json.close()
        }
        if let android {
            json.key("android")
            json.open()
            json.field("priority", android.priority?.rawValue)
            json.field("ttl", android.ttlText)
            json.field("collapse_key", android.collapseKey)
            json.field("restricted_package_name", android.restrictedPackageName)
            if let notification = android.notification {
                json.key("notification")
                json.open()
                json.field("tag", notification.tag)
                json.field("channel_id", notification.channelID)
                json.field("title_loc_key", notification.titleLocKey)
                json.strings("title_loc_args", notification.titleLocArgs)
                json.field("body_loc_key", notification.bodyLocKey)
                json.strings("body_loc_args", notification.bodyLocArgs)
                if let count = notification.notificationCount {
                    json.key("notification_count")
                    json.raw(String(count))
                }
                json.close()
            }
            json.close()
        }
        json.close()
        if validateOnly {
            json.key("validate_only")
            json.raw("true")
        }
        json.close()
        return json.bytes
    }
}

/// A minimal JSON object writer: objects, string fields and raw literals, with RFC 8259 escaping.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    /// Whether the object being written needs a comma before its next member.
    private var needsComma: [Bool] = []

    init() { bytes.reserveCapacity(512) }

    mutating func open() {
        bytes.append(UInt8(ascii: "{"))
        needsComma.append(false)
    }

    mutating func close() {
        bytes.append(UInt8(ascii: "}"))
        needsComma.removeLast()
        if !needsComma.isEmpty { needsComma[needsComma.count - 1] = true }
    }

    mutating func key(_ name: String) {
        if needsComma.last == true { bytes.append(UInt8(ascii: ",")) }
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    /// A string member; nothing when `value` is `nil`.
    mutating func field(_ name: String, _ value: String?) {
        guard let value else { return }
        key(name)
        string(value)
        needsComma[needsComma.count - 1] = true
    }

    /// An array of strings; nothing when `values` is empty.
    mutating func strings(_ name: String, _ values: [String]) {
        guard !values.isEmpty else { return }
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            string(value)
        }
        bytes.append(UInt8(ascii: "]"))
        needsComma[needsComma.count - 1] = true
    }

    /// A literal (`true`, a number) after ``key(_:)``.
    mutating func raw(_ literal: String) {
        bytes.append(contentsOf: literal.utf8)
        needsComma[needsComma.count - 1] = true
    }

    private mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
