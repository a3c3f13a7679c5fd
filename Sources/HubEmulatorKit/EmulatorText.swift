import Foundation

/// What the emulators' HTTP endpoints share: OAuth token endpoints (FCM's and WNS's) answer and read
/// the same forms, and every emulator makes random tokens and IDs.
package enum EmulatorText {
    /// An OAuth error body, `{"error", "error_description"}`.
    package static func oauthError(_ status: Int, _ error: String, _ description: String) -> EmulatorResponse {
        .json(status, #"{"error":\#(jsonString(error)),"error_description":\#(jsonString(description))}"#)
    }

    /// Decodes an `application/x-www-form-urlencoded` body.
    package static func parseForm(_ body: [UInt8]) -> [String: String] {
        var form: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) -> String {
                text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(text)
            }
            form[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return form
    }

    /// `text` as a JSON string literal.
    package static func jsonString(_ text: String) -> String {
        let data = try? JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])
        let array = data.map { String(decoding: $0, as: UTF8.self) } ?? "[\"\"]"
        return String(array.dropFirst().dropLast())
    }

    /// `bytes` random bytes as lower-case hex.
    package static func randomHex(_ bytes: Int) -> String {
        (0..<bytes).map { _ in
            let byte = UInt8.random(in: 0...255)
            return (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
    }
}
