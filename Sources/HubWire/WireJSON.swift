package import Foundation

/// The API's JSON conventions, for the hub and its clients alike: camelCase keys sorted, `nil`
/// members left out, `/` unescaped, times written as `2025-01-31T12:00:00.000Z` and read with or
/// without fractional seconds, `Z` or an offset.
package enum WireJSON {
    /// How times are written.
    package static let dateStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// An encoder that writes the API's JSON.
    package static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.formatted(dateStyle))
        }
        return encoder
    }

    /// A decoder that reads the API's JSON (unknown keys are ignored).
    package static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = date(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "'\(text)' is not an ISO 8601 date-time")
            }
            return date
        }
        return decoder
    }

    /// Parses an ISO 8601 date-time, with or without fractional seconds, `Z` or an offset.
    package static func date(_ text: String) -> Date? {
        (try? dateStyle.parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text))
    }
}
