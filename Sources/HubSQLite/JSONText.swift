import HubCore

/// JSON text for the arrays the store binds to `json_each(?)`: a list of IDs or rows becomes one
/// parameter of one cached statement, whatever its length (set-based statements without SQL
/// rebuilt per call). Only strings, integers and null: times are bound as parameters, so they
/// keep every bit of their `Double`.
enum JSONText {
    static func array(_ items: [String]) -> String { "[" + items.joined(separator: ",") + "]" }

    static func number(_ value: Int64) -> String { String(value) }

    /// `value` as a JSON string literal (RFC 8259 escapes; other characters as UTF-8), as the
    /// hub's other JSON writers quote strings.
    static func string(_ value: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(value.utf8.count + 2)
        JSONEscaping.appendQuoted(value, escapingSlashes: false, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}
