import HubCore

/// A fragment of HTML that is safe to send: every value interpolated into it is escaped.
///
/// The console renders its pages in Swift with string templates. A template is an `HTML` literal;
/// interpolating a `String` (or anything else) escapes it, interpolating another `HTML` inserts it
/// as it is. So the only way to put unescaped markup into a page is to write it as a literal in
/// this module, and an app name, user ID or provider reason such as `<script>` always arrives as
/// text:
///
/// ```swift
/// let row: HTML = "<tr><th scope=\"row\">\(endpoint.id)</th><td>\(endpoint.inactiveReason ?? "")</td></tr>"
/// ```
///
/// Attribute values must be quoted with `"` in the template; the escaping covers `"` and `'` too.
struct HTML: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The markup.
    private(set) var rendered: String

    init(stringLiteral value: String) {
        rendered = value
    }

    init(stringInterpolation: Interpolation) {
        rendered = stringInterpolation.rendered
    }

    /// Markup written in this module, trusted as it is (never pass a value through here).
    private init(trusted: String) {
        rendered = trusted
    }

    /// Nothing.
    static let empty = HTML(stringLiteral: "")

    var description: String { rendered }

    /// `text` with the five characters that matter in HTML text and quoted attributes replaced by
    /// character references: `&`, `<`, `>`, `"` and `'`.
    static func escape(_ text: String) -> String {
        MarkupEscaping.escape(text, apostrophe: "&#39;")
    }

    /// The fragments one after another.
    static func joined(_ fragments: some Sequence<HTML>, separator: HTML = .empty) -> HTML {
        HTML(trusted: fragments.map(\.rendered).joined(separator: separator.rendered))
    }

    /// Builds an ``HTML`` value: literals as they are, every interpolated value escaped.
    struct Interpolation: StringInterpolationProtocol {
        fileprivate var rendered = ""

        init(literalCapacity: Int, interpolationCount: Int) {
            rendered.reserveCapacity(literalCapacity + interpolationCount * 16)
        }

        mutating func appendLiteral(_ literal: String) {
            rendered += literal
        }

        /// Markup made by another template: inserted as it is.
        mutating func appendInterpolation(_ html: HTML) {
            rendered += html.rendered
        }

        /// Text: escaped.
        mutating func appendInterpolation(_ text: String) {
            rendered += HTML.escape(text)
        }

        /// Anything else, by its description: escaped.
        mutating func appendInterpolation(_ value: some CustomStringConvertible) {
            rendered += HTML.escape(value.description)
        }
    }
}

extension Sequence {
    /// Each element's fragment, one after another.
    func html(_ fragment: (Element) throws -> HTML) rethrows -> HTML {
        HTML.joined(try map(fragment))
    }
}
