import Foundation

/// Files and folders the hub creates for itself (the SQLite database and its folders, the cursor
/// key): private to the user the hub runs as, folders 0700 and files 0600, whatever the process
/// umask. Existing files and folders are left as they are: the operator chose their modes.
package enum OwnerOnlyFiles {
    /// Creates each missing folder of `path` (and `path` itself) with mode 0700.
    /// - Throws: a `CocoaError` naming the folder that could not be created.
    package static func createDirectories(_ path: String) throws {
        var missing: [String] = []
        var current = URL(fileURLWithPath: path).standardizedFileURL.path
        var isDirectory: ObjCBool = false
        while !current.isEmpty, current != "/",
            !FileManager.default.fileExists(atPath: current, isDirectory: &isDirectory)
        {
            missing.append(current)
            current = (current as NSString).deletingLastPathComponent
        }
        for folder in missing.reversed() {
            // mkdir applies the umask; chmod then sets exactly 0700.
            if mkdir(folder, 0o700) != 0 && errno != EEXIST {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: folder])
            }
            guard chmod(folder, 0o700) == 0 else {
                throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: folder])
            }
        }
    }

    /// Creates the file `path` with mode 0600 holding `contents`.
    /// - Returns: `false` when the file already exists (it is left unchanged).
    /// - Throws: a `CocoaError` naming the file when it could not be created or written.
    @discardableResult
    package static func createFile(_ path: String, contents: [UInt8] = []) throws -> Bool {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if descriptor < 0 {
            if errno == EEXIST { return false }
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
        defer { close(descriptor) }
        // open applies the umask; fchmod then sets exactly 0600 before any byte is written.
        guard fchmod(descriptor, 0o600) == 0 else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path])
        }
        let written = contents.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == contents.count else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
        return true
    }
}
