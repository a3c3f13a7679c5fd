extension APNSEmulator {
    /// A decoded JSON value of a received payload. Booleans and numbers stay distinct, so
    /// `"content-available": true` is told apart from `1` as APNs does.
    public enum JSON: Sendable, Hashable, Decodable {
        case bool(Bool)
        case integer(Int64)
        case number(Double)
        case string(String)
        case array([JSON])
        case object([String: JSON])
        case null

        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let flag = try? container.decode(Bool.self) {
                self = .bool(flag)
            } else if let integer = try? container.decode(Int64.self) {
                self = .integer(integer)
            } else if let number = try? container.decode(Double.self) {
                self = .number(number)
            } else if let text = try? container.decode(String.self) {
                self = .string(text)
            } else if let elements = try? container.decode([JSON].self) {
                self = .array(elements)
            } else {
                self = .object(try container.decode([String: JSON].self))
            }
        }

        /// Parses `bytes` (RFC 8259, any value at the top), or `nil` when they are not JSON.
        ///
        /// A parser of its own rather than `JSONDecoder`: decoding this enum through `Decodable` tries
        /// each type in turn and throws for every miss, which made JSON most of the emulator's cost
        /// per request. It accepts what `JSONDecoder` accepts: numbers without a fraction or exponent
        /// that fit 64 bits are integers, the first of duplicate keys wins, nesting stops at 512.
        public static func parse(_ bytes: [UInt8]) -> JSON? {
            bytes.withUnsafeBufferPointer { buffer in
                var parser = APNSEmulatorJSONParser(buffer)
                return parser.parseDocument()
            }
        }

        /// The member `key` of an object.
        public subscript(key: String) -> JSON? {
            if case .object(let members) = self { return members[key] }
            return nil
        }

        public var stringValue: String? {
            if case .string(let text) = self { return text }
            return nil
        }

        /// The value of an integer, or of a number with no fraction.
        public var integerValue: Int64? {
            switch self {
            case .integer(let value): value
            case .number(let value) where value == value.rounded(): Int64(exactly: value)
            default: nil
            }
        }

        public var doubleValue: Double? {
            switch self {
            case .integer(let value): Double(value)
            case .number(let value): value
            default: nil
            }
        }

        public var objectValue: [String: JSON]? {
            if case .object(let members) = self { return members }
            return nil
        }

        public var arrayValue: [JSON]? {
            if case .array(let elements) = self { return elements }
            return nil
        }
    }
}
