/// The one grammar of the hub's identifiers: app IDs, user IDs, `appNotificationId`s, the hub's
/// notification IDs, endpoint IDs and `groupName`s.
///
/// An identifier is **1 to 256 bytes of UTF-8 text** without:
/// - C0 controls (U+0000–U+001F, NUL included), DEL (U+007F) and C1 controls (U+0080–U+009F);
/// - bidirectional controls: U+061C, U+200E, U+200F, U+202A–U+202E and U+2066–U+2069.
///
/// Everything else is allowed, spaces and any script included. Identifiers are **opaque**: the hub
/// does not normalise them (no Unicode normalisation, case folding or trimming) and compares them
/// byte for byte, so an app server always gets back exactly the bytes it sent, and two IDs that
/// look alike but differ in their bytes (`é` as one scalar or as `e` + U+0301) are two IDs.
/// Refusing controls instead of stripping them means no two different inputs can ever name the
/// same user or notification.
///
/// In a URL path an identifier is percent-encoded; ``decodingPercentEscapes(_:)`` refuses a
/// malformed escape (`%zz`, a lone `%`) and escapes that decode to invalid UTF-8 (`%ff`), then
/// checks the result. The HTTP API answers a refused path or body value with 400 naming the field,
/// and a refused user claim of a token with 401. The stores check every identifier again before
/// binding it to SQL (SQLite would cut a text value at its first NUL), so a value this grammar
/// refuses can never reach a query.
///
/// ```swift
/// Identifier.violation(in: "auth0|42")        // nil: valid
/// Identifier.violation(in: "bob\u{0}evil")    // .forbiddenCharacter
/// try Identifier.check("bob", field: "userId")  // throws HubError 400 naming `userId` when refused
/// ```
public enum Identifier {
    /// The longest identifier, in UTF-8 bytes.
    public static let maxBytes = 256

    /// Why a value is not an identifier.
    public struct Violation: Error, Sendable, Hashable, CustomStringConvertible {
        /// A stable code: `empty`, `too-long`, `forbidden-character`, `invalid-percent-escape`,
        /// `invalid-utf8`.
        public var code: String
        /// What is wrong, for a field error: never echoes the value.
        public var message: String

        public static let empty = Violation(code: "empty", message: "must not be empty")
        public static let invalidPercentEscape = Violation(
            code: "invalid-percent-escape",
            message: "has a malformed percent escape ('%' must be followed by two hex digits)")
        public static let invalidUTF8 = Violation(
            code: "invalid-utf8", message: "is not valid UTF-8 after percent-decoding")

        static func tooLong(_ bytes: Int) -> Violation {
            Violation(code: "too-long", message: "is \(bytes) bytes of UTF-8; the limit is \(Identifier.maxBytes)")
        }

        static func forbidden(_ scalar: Unicode.Scalar, at offset: Int) -> Violation {
            let hex = String(scalar.value, radix: 16, uppercase: true)
            let name = String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            return Violation(
                code: "forbidden-character",
                message: "contains U+\(name) at position \(offset + 1); control and bidi characters are not allowed")
        }

        public var description: String { message }
    }

    /// Whether a scalar may never appear in an identifier: C0, DEL, C1 and bidi controls.
    public static func isForbidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// What is wrong with `value` as an identifier, or `nil` when it is one.
    public static func violation(in value: String) -> Violation? {
        let bytes = value.utf8.count
        if bytes == 0 { return .empty }
        if bytes > maxBytes { return .tooLong(bytes) }
        for (offset, scalar) in value.unicodeScalars.enumerated() where isForbidden(scalar) {
            return .forbidden(scalar, at: offset)
        }
        return nil
    }

    /// The identifier a percent-encoded path segment names.
    /// - Throws: ``Violation`` for a malformed escape, invalid UTF-8, or a decoded value that is
    ///   not an identifier.
    public static func decodingPercentEscapes(_ encoded: some StringProtocol) throws(Violation) -> String {
        guard encoded.utf8.contains(UInt8(ascii: "%")) else {
            // Nothing to decode (most segments): a String's bytes are valid UTF-8 already.
            let decoded = String(encoded)
            if let violation = violation(in: decoded) { throw violation }
            return decoded
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encoded.utf8.count)
        var iterator = encoded.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                throw .invalidPercentEscape
            }
            bytes.append(high << 4 | low)
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else { throw .invalidUTF8 }
        if let violation = violation(in: decoded) { throw violation }
        return decoded
    }

    /// Checks `value` for a request field.
    /// - Throws: ``HubError`` `invalid-request` with one field error naming `field`.
    public static func check(_ value: String, field: String) throws(HubError) {
        if let violation = violation(in: value) {
            throw HubError.invalid([.init(field: field, message: violation.message)])
        }
    }

    /// The stores' last guard: checks every named value before it is bound to SQL.
    /// - Throws: ``HubError`` `invalid-request` naming each refused field; the value never
    ///   reached the database.
    public static func checkBeforeStoring(_ values: KeyValuePairs<String, String?>) throws(HubError) {
        var errors: [HubError.FieldError] = []
        for case (let field, let value?) in values {
            if let violation = violation(in: value) { errors.append(.init(field: field, message: violation.message)) }
        }
        guard errors.isEmpty else {
            let fields = errors.map(\.field).joined(separator: ", ")
            throw HubError(
                .invalidRequest, "The store refused \(fields): not an identifier (\(errors[0].message)).",
                fieldErrors: errors)
        }
    }

    /// The store guard for a feed key and, optionally, an ID within it.
    public static func checkBeforeStoring(_ key: FeedKey, id: String? = nil) throws(HubError) {
        try checkBeforeStoring(["appId": key.appId, "userId": key.userId, "id": id])
    }

    /// The store guard for a publish: the feed, the `appNotificationId`, the new ID and the `groupName`.
    public static func checkBeforeStoring(_ request: PublishRequest) throws(HubError) {
        try checkBeforeStoring([
            "appId": request.key.appId, "userId": request.key.userId,
            "appNotificationId": request.draft.appNotificationId, "id": request.newId,
            "groupName": request.draft.groupName,
        ])
    }

    /// The store guard for a state change: the feed, the notification and the changing endpoint.
    public static func checkBeforeStoring(_ change: StateChange) throws(HubError) {
        try checkBeforeStoring([
            "appId": change.key.appId, "userId": change.key.userId, "id": change.id,
            "endpointId": change.exceptEndpoint,
        ])
    }

    /// The store guard for an endpoint: its IDs, and its token free of control characters (a
    /// token is not an identifier, but SQLite would cut it at a NUL all the same).
    public static func checkBeforeStoring(_ endpoint: Endpoint) throws(HubError) {
        try checkBeforeStoring(["appId": endpoint.appId, "userId": endpoint.userId, "endpointId": endpoint.id])
        if let token = endpoint.token, !isPrintable(token) {
            throw HubError(
                .invalidRequest, "The store refused token: it contains control or bidi characters.",
                fieldErrors: [.init(field: "token", message: "contains control or bidi characters")])
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension Identifier {
    /// Whether `value` (free text that is not an identifier, such as a push token or a display
    /// name) is free of the characters ``isForbidden(_:)`` refuses.
    public static func isPrintable(_ value: String) -> Bool {
        !value.unicodeScalars.contains(where: isForbidden)
    }
}
