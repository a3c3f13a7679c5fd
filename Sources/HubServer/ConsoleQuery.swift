import Foundation
import HubCore
import Hummingbird

/// The query parameters of the console's list pages (filters, time ranges, cursors), read with
/// every error collected for its field, and the links that keep them.
struct ConsoleQuery: Sendable {
    /// The parameters as sent; a parameter given twice keeps its first value.
    let values: [String: String]
    /// What is wrong, per parameter: shown next to its field, the page answered 400.
    private(set) var errors: [String: String] = [:]

    init(_ request: Request) {
        var values: [String: String] = [:]
        for (name, value) in request.uri.queryParameters where values[String(name)] == nil {
            values[String(name)] = String(value)
        }
        self.values = values
    }

    /// The parameter `name` without surrounding white space; `nil` when absent or empty.
    func text(_ name: String) -> String? {
        let value = values[name]?.trimmingCharacters(in: .whitespacesAndNewlines)
        return value?.isEmpty == false ? value : nil
    }

    /// The parameter `name` as an identifier (user, endpoint or notification ID).
    mutating func identifier(_ name: String) -> String? {
        guard let text = text(name) else { return nil }
        do {
            try Identifier.check(text, field: name)
            return text
        } catch {
            errors[name] = error.fieldErrors.first?.message ?? error.message
            return nil
        }
    }

    /// The parameter `name` as a UTC time from a `datetime-local` field (`2026-11-28T14:05`, seconds
    /// and milliseconds optional) or an ISO 8601 time with its zone.
    mutating func time(_ name: String) -> Date? {
        guard let text = text(name) else { return nil }
        if let date = Self.parseTime(text) { return date }
        errors[name] = "must be a time as YYYY-MM-DDTHH:MM (UTC), e.g. 2026-11-28T14:05"
        return nil
    }

    static func parseTime(_ text: String) -> Date? {
        var zoned = text
        if !(text.hasSuffix("Z") || text.range(of: #"[+-]\d{2}:\d{2}$"#, options: .regularExpression) != nil) {
            zoned += "Z"
        }
        if zoned.range(of: #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(Z|[+-])"#, options: .regularExpression) != nil {
            zoned.insert(contentsOf: ":00", at: zoned.index(zoned.startIndex, offsetBy: 16))
        }
        let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        return (try? Date(zoned, strategy: fractional)) ?? (try? Date(zoned, strategy: Date.ISO8601FormatStyle()))
    }

    /// A time as a `datetime-local` field shows it (UTC, to the second).
    static func fieldValue(_ date: Date) -> String {
        String(date.formatted(Date.ISO8601FormatStyle()).prefix(19))
    }

    /// The parameter `name` as a page size from 1 to `maximum`, `standard` when absent.
    mutating func limit(_ name: String = "limit", standard: Int, maximum: Int) -> Int {
        guard let text = text(name) else { return standard }
        guard let value = Int(text), (1...maximum).contains(value) else {
            errors[name] = "must be a whole number from 1 to \(maximum)"
            return standard
        }
        return value
    }

    /// Records an error of the parameter `name`.
    mutating func fail(_ name: String, _ message: String) {
        errors[name] = message
    }

    /// `path` with `parameters` (empty values left out) as its query.
    static func link(_ path: String, _ parameters: [(String, String?)]) -> String {
        let query = parameters.compactMap { name, value in
            value.flatMap { $0.isEmpty ? nil : "\(name)=\(HTTPText.queryValue($0))" }
        }
        return query.isEmpty ? path : path + "?" + query.joined(separator: "&")
    }

    // MARK: Cursors

    /// The cursor of a notification's place in the newest-first list: its creation time in
    /// seconds since 1970 (exactly as stored) and its hub ID, joined by `~`.
    static func cursor(_ position: ConsoleNotificationPosition) -> String {
        "\(position.createdDateTime.timeIntervalSince1970)~\(position.id)"
    }

    /// The parameter `name` as a notification list cursor.
    mutating func notificationPosition(_ name: String = "after") -> ConsoleNotificationPosition? {
        guard let text = text(name) else { return nil }
        if let tilde = text.firstIndex(of: "~"), let seconds = Double(text[..<tilde]), seconds.isFinite {
            let id = String(text[text.index(after: tilde)...])
            if !id.isEmpty {
                return ConsoleNotificationPosition(createdDateTime: Date(timeIntervalSince1970: seconds), id: id)
            }
        }
        errors[name] = "must be the cursor of a 'Next page' link; open the first page again"
        return nil
    }

    /// The parameter `name` as an endpoint list cursor (`<userId>/<endpointId>`).
    mutating func endpointPosition(_ name: String = "after") -> EndpointPosition? {
        guard let text = text(name) else { return nil }
        if let position = EndpointPaging.position(text) { return position }
        errors[name] = "must be the cursor of a 'Next page' link; open the first page again"
        return nil
    }

    // MARK: Errors on the page

    /// The errors as a notice listing each parameter's error, or nothing.
    var notice: HTML {
        guard !errors.isEmpty else { return .empty }
        let items = errors.sorted { $0.key < $1.key }.html { "<li><strong>\($0.key)</strong>: \($0.value)</li>" }
        return ConsoleLayout.notice("<p>The filter has errors:</p><ul>\(items)</ul>", kind: "error", role: "alert")
    }

    /// The error of `name`, to show under its field (`id="<name>-error"`).
    func fieldError(_ name: String) -> HTML {
        errors[name].map { "<p class=\"field-error\" id=\"\(name)-error\">\($0)</p>" } ?? .empty
    }

    /// ` aria-invalid="true" aria-describedby="<name>-error"` when `name` has an error.
    func invalid(_ name: String) -> HTML {
        errors[name] == nil ? .empty : " aria-invalid=\"true\" aria-describedby=\"\(name)-error\""
    }
}
