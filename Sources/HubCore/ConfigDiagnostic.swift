/// One problem found in hub.yaml, at a file position, saying what to do.
///
/// Printed as `hub.yaml:12:7: error: …`, the form editors and CI annotate.
public struct ConfigDiagnostic: Sendable, Hashable, CustomStringConvertible {
    public enum Severity: String, Sendable, Hashable {
        case error
        case warning
    }

    public var file: String
    /// 1-based; 0 when the problem is not tied to a position.
    public var line: Int
    /// 1-based, in Unicode scalars.
    public var column: Int
    public var severity: Severity
    public var message: String

    public init(file: String, line: Int, column: Int, severity: Severity, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.severity = severity
        self.message = message
    }

    public var description: String {
        line > 0 ? "\(file):\(line):\(column): \(severity): \(message)" : "\(file): \(severity): \(message)"
    }
}

/// Suggests the closest known word for a misspelt key.
package enum Suggestion {
    package static func closest(to word: String, in candidates: some Sequence<String>) -> String? {
        let lower = word.lowercased()
        var best: (String, Int)?
        for candidate in candidates {
            let distance = editDistance(lower, candidate.lowercased())
            let limit = max(1, min(3, candidate.count / 3))
            if distance <= limit, distance < (best?.1 ?? .max) { best = (candidate, distance) }
        }
        return best?.0
    }

    package static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previous[j - 1])  // transposition, approximated
                }
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
