import Foundation
import HubCore
import Hummingbird
import NIOCore

/// Any JSON value. Request bodies are decoded into this first, so that every field's type error
/// can be reported at once instead of the first one `Decodable` trips on.
enum JSONValue: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// What the value is, for messages.
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Reads typed fields from a JSON object and collects a ``HubError/FieldError`` for every field
/// of the wrong type, naming it by its JSON path (`payload.visualContent.title`).
///
/// Absent fields and explicit `null` read as `nil` without an error; requiredness is for the
/// caller (or ``Hub``'s validation) to check.
struct FieldReader {
    private(set) var errors: [HubError.FieldError] = []

    mutating func fail(_ field: String, _ message: String) {
        errors.append(HubError.FieldError(field: field, message: message))
    }

    /// Whether a decode error was already reported for `field` or a field inside it.
    func hasError(at field: String) -> Bool {
        errors.contains { $0.field == field || $0.field.hasPrefix(field + ".") || $0.field.hasPrefix(field + "[") }
            || errors.contains { field.hasPrefix($0.field + ".") || field.hasPrefix($0.field + "[") }
    }

    private func path(_ prefix: String, _ key: String) -> String {
        prefix.isEmpty ? key : "\(prefix).\(key)"
    }

    private func value(_ object: [String: JSONValue], _ key: String) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    mutating func string(_ object: [String: JSONValue], _ key: String, in prefix: String = "") -> String? {
        guard let value = value(object, key) else { return nil }
        guard case .string(let text) = value else {
            fail(path(prefix, key), "must be a string, not \(value.kind)")
            return nil
        }
        return text
    }

    /// A whole number, sent as a JSON number or as a numeric string (`"60"`, as Graph's own
    /// examples send `displayTimeToLive`; OData allows integers as strings).
    mutating func integer(_ object: [String: JSONValue], _ key: String, in prefix: String = "") -> Int? {
        guard let value = value(object, key) else { return nil }
        if case .string(let text) = value {
            guard let number = Self.wholeNumber(text) else {
                fail(path(prefix, key), "must be a whole number, not the string '\(text.prefix(40))'")
                return nil
            }
            return number
        }
        guard case .number(let number) = value, number.rounded() == number, abs(number) < 1e15 else {
            fail(
                path(prefix, key), "must be a whole number, not \(value.kind == "a number" ? "a fraction" : value.kind)"
            )
            return nil
        }
        return Int(number)
    }

    /// A boolean field; `nil` when absent or `null`, an error when of another type.
    mutating func bool(_ object: [String: JSONValue], _ key: String, in prefix: String = "") -> Bool? {
        guard let value = value(object, key) else { return nil }
        guard case .bool(let flag) = value else {
            fail(path(prefix, key), "must be true or false, not \(value.kind)")
            return nil
        }
        return flag
    }

    /// The value of a numeric string: an optional `-` and 1–15 ASCII digits, nothing else.
    static func wholeNumber(_ text: String) -> Int? {
        let digits = text.utf8.first == UInt8(ascii: "-") ? text.utf8.dropFirst() : text.utf8[...]
        guard (1...15).contains(digits.count), digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int(text)
    }

    mutating func object(_ object: [String: JSONValue], _ key: String, in prefix: String = "") -> [String: JSONValue]? {
        guard let value = value(object, key) else { return nil }
        guard case .object(let fields) = value else {
            fail(path(prefix, key), "must be an object, not \(value.kind)")
            return nil
        }
        return fields
    }

    /// The items of an array of strings; an item of another type is reported and read as `nil`,
    /// so later items keep their index.
    mutating func strings(_ object: [String: JSONValue], _ key: String, in prefix: String = "") -> [String?]? {
        guard let value = value(object, key) else { return nil }
        guard case .array(let items) = value else {
            fail(path(prefix, key), "must be an array of strings, not \(value.kind)")
            return nil
        }
        return items.enumerated().map { index, item in
            if case .string(let text) = item { return text }
            fail("\(path(prefix, key))[\(index)]", "must be a string, not \(item.kind)")
            return nil
        }
    }

    mutating func date(_ object: [String: JSONValue], _ key: String, in prefix: String = "") -> Date? {
        guard let text = string(object, key, in: prefix) else { return nil }
        guard let date = JSON.date(text) else {
            fail(path(prefix, key), "must be an ISO 8601 date-time such as 2025-01-31T12:00:00Z")
            return nil
        }
        return date
    }
}

extension Request {
    /// The 1-based line and column (in characters) of byte `offset` of `bytes`.
    static func lineAndColumn(of offset: Int, in bytes: some Collection<UInt8>) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        for byte in bytes.prefix(offset) {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1  // UTF-8 continuation bytes are not characters of their own
            }
        }
        return (line, column)
    }

    /// The body as a JSON object, after checking its media type and size.
    ///
    /// - Throws: ``Problem`` 415 `unsupported-media-type` for a declared non-JSON type, 413
    ///   `body-too-large` beyond `maxBytes`, 400 `invalid-request` when the body is empty, not
    ///   JSON, or not an object.
    mutating func jsonObject(maxBytes: Int) async throws -> [String: JSONValue] {
        if let contentType = headers.value(.contentType), !Self.isJSON(contentType) {
            throw Problem(
                .unsupportedMediaType,
                "Send the body as application/json (the request said '\(contentType.prefix(100))').")
        }
        if let length = headers.value(.contentLength).flatMap({ Int($0) }), length > maxBytes {
            throw Problem(
                .bodyTooLarge, "The request body is \(length) bytes; this server accepts at most \(maxBytes).")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await collectBody(upTo: maxBytes)
        } catch is NIOTooManyBytesError {
            throw Problem(.bodyTooLarge, "The request body is larger than the \(maxBytes) bytes this server accepts.")
        }
        guard buffer.readableBytes > 0 else {
            throw Problem(
                .invalidRequest, "The request needs a JSON body.",
                errors: [.init(field: "body", message: "is required")])
        }
        // JSON is UTF-8 (RFC 8259); checked here so that no decoder ever repairs two different
        // byte strings into the same identifier.
        guard String(validating: buffer.readableBytesView, as: UTF8.self) != nil else {
            throw Problem(
                .invalidRequest, "The request body is not valid UTF-8.",
                errors: [.init(field: "body", message: "is not valid UTF-8")])
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(buffer.readableBytesView)
        } catch {
            let (line, column) = Self.lineAndColumn(of: error.offset, in: buffer.readableBytesView)
            throw Problem(
                .invalidRequest,
                "The request body is not valid JSON: \(error.reason) at line \(line), column \(column) (byte \(error.offset)).",
                errors: [.init(field: "body", message: "is not valid JSON (line \(line), column \(column))")])
        }
        guard case .object(let object) = value else {
            throw Problem(
                .invalidRequest, "The request body must be a JSON object.",
                errors: [.init(field: "body", message: "must be a JSON object, not \(value.kind)")])
        }
        return object
    }

    /// `application/json` or any `+json` type, parameters ignored.
    static func isJSON(_ contentType: String) -> Bool {
        let type = contentType.split(separator: ";").first.map { HTTPText.trimmed($0).lowercased() }
        guard let type else { return false }
        return type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json"))
    }
}
