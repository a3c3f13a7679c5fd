/// The hub's one rule for fitting a visible notification's text into a provider's size limit,
/// used by every transport that shows text (APNs, FCM, WNS, Web Push), so that a long body is
/// shortened the same way everywhere instead of making a device miss the notification.
///
/// The rule:
/// 1. Text that fits is left as it is.
/// 2. The body is cut first: its longest prefix of whole `Character`s (grapheme clusters, so never
///    inside a UTF-8 sequence, an emoji sequence or a letter with its combining marks) that fits
///    with the title, without trailing whitespace, followed by "…".
/// 3. When not even one character of the body and "…" fit beside the title, the body is left out
///    and the title is cut the same way.
/// 4. When not even one character of the title and "…" fit, nothing fits: the transport refuses
///    the delivery as too large (its other content is too big).
///
/// A transport computes the budget from its limit: the limit minus the size of everything else it
/// sends (its request encoded with an empty title and body). `cost` gives what one `Character`
/// takes in the transport's encoding; ``jsonCost(_:)`` and ``xmlCost(_:)`` never count less than a
/// JSON or XML escaping writer writes, so the result always fits.
///
/// ```swift
/// let base = encode(title: "", body: "").count
/// if let text = VisibleTextFit.fit(title: title, body: body, budget: 4096 - base, cost: VisibleTextFit.jsonCost) {
///     send(encode(title: text.title, body: text.body))
/// }
/// ```
public enum VisibleTextFit {
    /// What ends a cut text: U+2026 HORIZONTAL ELLIPSIS (3 bytes of UTF-8).
    public static let ellipsis: Character = "…"

    /// A title and body after fitting.
    public struct Text: Sendable, Hashable {
        public var title: String
        /// `nil` when there was no body, or when it had to be left out (step 3).
        public var body: String?
        public init(title: String, body: String?) {
            self.title = title
            self.body = body
        }
    }

    /// The title and body cut by the rule above to cost at most `budget` together.
    ///
    /// - Parameters:
    ///   - title: the title as published; cut only when the body alone cannot make room.
    ///   - body: the body as published, cut first.
    ///   - budget: the bytes the title and body may take together in the transport's encoding.
    ///   - cost: the bytes one `Character` takes in that encoding; its UTF-8 length by default.
    /// - Returns: the text that fits, or `nil` when not even "…" and one character of the title do.
    public static func fit(
        title: String, body: String?, budget: Int, cost: (Character) -> Int = utf8Cost
    ) -> Text? {
        let titleCost = self.cost(of: title, cost)
        let bodyCost = body.map { self.cost(of: $0, cost) } ?? 0
        if titleCost + bodyCost <= budget { return Text(title: title, body: body) }
        if let body, let cut = truncated(body, budget: budget - titleCost, cost: cost) {
            return Text(title: title, body: cut)
        }
        if titleCost <= budget { return Text(title: title, body: nil) }
        return truncated(title, budget: budget, cost: cost).map { Text(title: $0, body: nil) }
    }

    /// `text` unchanged when it costs at most `budget`; else its longest prefix of whole characters
    /// that fits with "…", trailing whitespace removed, followed by "…".
    /// - Parameters:
    ///   - text: the text to cut.
    ///   - budget: the bytes it may take in the transport's encoding, "…" included.
    ///   - cost: the bytes one `Character` takes in that encoding; its UTF-8 length by default.
    /// - Returns: `nil` when not even one character and "…" fit.
    public static func truncated(_ text: String, budget: Int, cost: (Character) -> Int = utf8Cost) -> String? {
        if self.cost(of: text, cost) <= budget { return text }
        let room = budget - cost(ellipsis)
        var used = 0
        var end = text.startIndex
        for index in text.indices {
            let next = cost(text[index])
            if used + next > room { break }
            used += next
            end = text.index(after: index)
        }
        var prefix = text[..<end]
        while let last = prefix.last, last.isWhitespace { prefix = prefix.dropLast() }
        guard !prefix.isEmpty else { return nil }
        return String(prefix) + String(ellipsis)
    }

    /// The bytes of `character` in UTF-8.
    public static func utf8Cost(_ character: Character) -> Int { character.utf8.count }

    /// The most bytes `character` takes inside a JSON string: `"`, `\` and `/` escaped with a
    /// backslash, control characters as `\u00XX`, everything else as UTF-8.
    public static func jsonCost(_ character: Character) -> Int {
        character.unicodeScalars.reduce(0) { total, scalar in
            switch scalar {
            case "\"", "\\", "/": total + 2
            case _ where scalar.value < 0x20: total + 6
            default: total + String(scalar).utf8.count
            }
        }
    }

    /// The most bytes `character` takes in XML text or an attribute: `&amp;`, `&lt;`, `&gt;`,
    /// `&quot;`, `&apos;` for the five special characters, everything else as UTF-8.
    public static func xmlCost(_ character: Character) -> Int {
        character.unicodeScalars.reduce(0) { total, scalar in
            switch scalar {
            case "&": total + 5
            case "<", ">": total + 4
            case "\"", "'": total + 6
            default: total + String(scalar).utf8.count
            }
        }
    }

    private static func cost(of text: String, _ cost: (Character) -> Int) -> Int {
        text.reduce(0) { $0 + cost($1) }
    }
}
