import ArgumentParser
public import Foundation

/// Files the emulators of `hub emulate` write: folders 0700 and files 0600 (private keys live
/// there), created without replacing what is already there.
public enum EmulatorFiles {
    /// Creates `folder` (and its parents) with mode 0700, or sets an existing one to 0700.
    public static func createDirectory(_ folder: URL) throws {
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: folder.path)
    }

    /// Sets `path` to mode 0600.
    public static func restrict(_ path: String) throws {
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }

    /// Creates `path` with mode 0600; fails instead of replacing an existing file.
    /// - Throws: `ValidationError` naming the file.
    public static func create(_ path: String, contents: Data) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else {
            throw ValidationError("\(path) could not be created: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let written = contents.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == contents.count else { throw ValidationError("\(path) could not be written") }
    }

    /// Writes `path` (0600) when it does not exist or holds `marker` (the emulator's own earlier
    /// output); refuses to replace any other file.
    /// - Throws: `ValidationError` naming the file when it is not the emulator's.
    public static func replaceIfOwn(_ path: String, contents: Data, marker: String) throws {
        if let existing = FileManager.default.contents(atPath: path) {
            guard String(decoding: existing, as: UTF8.self).contains(marker) else {
                throw ValidationError(
                    "\(path) exists and is not the emulator's; move it away or pass --directory with another folder")
            }
            try contents.write(to: URL(fileURLWithPath: path), options: .atomic)
            try restrict(path)
            return
        }
        try create(path, contents: contents)
    }

    /// Absolute paths of every `file:` reference in hub.yaml's text, read without loading it, so an
    /// unrelated error in the file does not hide them.
    public static func referencedFiles(inConfig config: String) -> Set<String> {
        guard let data = FileManager.default.contents(atPath: config) else { return [] }
        let base = URL(fileURLWithPath: config).deletingLastPathComponent().standardizedFileURL.path
        var paths: Set<String> = []
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            var rest = line[...]
            while let range = rest.range(of: "file:") {
                let path = rest[range.upperBound...].prefix { !" ,}]'\"#\t".contains($0) }
                rest = rest[range.upperBound...]
                guard !path.isEmpty else { continue }
                let absolute = path.hasPrefix("/") ? String(path) : base + "/" + path
                paths.insert(URL(fileURLWithPath: absolute).standardizedFileURL.path)
            }
        }
        return paths
    }
}
