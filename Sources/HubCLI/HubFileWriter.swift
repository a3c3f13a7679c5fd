import Foundation

/// Replaces a file atomically: writes a temporary file beside it, syncs it, renames it over.
enum HubFileWriter {
    static func write(_ text: String, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        guard FileManager.default.createFile(atPath: temporary.path, contents: Data(text.utf8), attributes: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: temporary.path])
        }
        do {
            if let permissions = attributes?[.posixPermissions] {
                try FileManager.default.setAttributes([.posixPermissions: permissions], ofItemAtPath: temporary.path)
            }
            let handle = try FileHandle(forWritingTo: temporary)
            try handle.synchronize()
            try handle.close()
            guard rename(temporary.path, path) == 0 else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
            }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
    }

    /// A unified diff of two texts, for `--dry-run`.
    static func diff(old: String, new: String, path: String) -> String {
        let a = old.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let b = new.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // Longest common subsequence table; config files are small.
        var lcs = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in stride(from: a.count - 1, through: 0, by: -1) {
            for j in stride(from: b.count - 1, through: 0, by: -1) {
                lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : max(lcs[i + 1][j], lcs[i][j + 1])
            }
        }
        var lines = ["--- \(path)", "+++ \(path) (new)"]
        var i = 0
        var j = 0
        var context: [String] = []
        func flushContext() {
            if context.count > 2 { lines.append("@@ line \(i + 1) @@") }
            lines += context.suffix(2).map { " \($0)" }
            context.removeAll()
        }
        while i < a.count || j < b.count {
            if i < a.count, j < b.count, a[i] == b[j] {
                context.append(a[i])
                i += 1
                j += 1
            } else if j < b.count, i == a.count || lcs[i][j + 1] >= lcs[i + 1][j] {
                flushContext()
                lines.append("+\(b[j])")
                j += 1
            } else {
                flushContext()
                lines.append("-\(a[i])")
                i += 1
            }
        }
        return lines.joined(separator: "\n")
    }
}
