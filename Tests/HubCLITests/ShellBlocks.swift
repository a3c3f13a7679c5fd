import Foundation

/// The shell code blocks of a Markdown file (fences ```` ```sh ````, `bash`, `shell`, `console`),
/// each with the HTML comment on the line just above its fence: what README.md and docs/*.md use
/// to say whether a block is pasted by a test (`<!-- paste block: run by SuiteName -->`) or not
/// meant to be pasted (`<!-- not a paste block: why -->`).
struct ShellBlock: Equatable {
    /// The file, relative to the package root.
    var file: String
    /// The line of the opening fence (1-based).
    var line: Int
    /// The text of the HTML comment on the line above the fence (between `<!--` and `-->`,
    /// trimmed), or `nil` when that line is not a one-line comment.
    var marker: String?
    /// The block's lines, without the fences and without the fence's indentation.
    var text: String

    static let languages: Set<String> = ["sh", "bash", "shell", "console"]

    /// The marker of a block a test pastes into a shell: `paste block: run by <suite>`.
    static func pastedMarker(by suite: String) -> String { "paste block: run by \(suite)" }

    /// The prefix of the marker of a block not meant to be pasted; a reason must follow.
    static let notPastedPrefix = "not a paste block:"

    /// The shell blocks of `markdown` (the text of `file`), in order.
    static func parse(_ markdown: String, file: String) -> [ShellBlock] {
        let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var blocks: [ShellBlock] = []
        var index = 0
        while index < lines.count {
            let trimmed = lines[index].trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("```") else {
                index += 1
                continue
            }
            let indent = lines[index].prefix { $0 == " " }.count
            let language = trimmed.dropFirst(3).trimmingCharacters(in: .whitespaces)
            var end = index + 1
            while end < lines.count, !lines[end].trimmingCharacters(in: .whitespaces).hasPrefix("```") { end += 1 }
            if languages.contains(language) {
                let body = lines[(index + 1)..<min(end, lines.count)].map { line in
                    String(line.dropFirst(min(indent, line.prefix { $0 == " " }.count)))
                }
                blocks.append(
                    ShellBlock(
                        file: file, line: index + 1, marker: index > 0 ? comment(lines[index - 1]) : nil,
                        text: body.joined(separator: "\n")))
            }
            index = end + 1
        }
        return blocks
    }

    private static func comment(_ line: String) -> String? {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("<!--"), trimmed.hasSuffix("-->") else { return nil }
        return trimmed.dropFirst(4).dropLast(3).trimmingCharacters(in: .whitespaces)
    }
}
