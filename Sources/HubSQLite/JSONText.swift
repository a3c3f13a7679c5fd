/// JSON text for the arrays the store binds to `json_each(?)`: a list of IDs or rows becomes one
/// parameter of one cached statement, whatever its length (set-based statements without SQL
/// rebuilt per call). Only strings, integers and null: times are bound as parameters, so they
/// keep every bit of their `Double`.
enum JSONText {
    static func array(_ items: [String]) -> String { "[" + items.joined(separator: ",") + "]" }

    static func number(_ value: Int64) -> String { String(value) }

    /// `value` as a JSON string literal (RFC 8259 escapes; other characters as UTF-8).
    static func string(_ value: String) -> String {
        var out = "\""
        out.reserveCapacity(value.utf8.count + 2)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
