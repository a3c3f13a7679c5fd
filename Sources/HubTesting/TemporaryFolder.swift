public import Foundation
import Synchronization

/// Folders for test files under the system's temporary folder, removed when the test process
/// exits (a full run used to leave ~140 of them behind, with SQLite databases and keys).
public enum TemporaryFolder {
    private static let made = Mutex<[URL]>([])
    private static let cleanup: Void = {
        atexit { TemporaryFolder.removeAll() }
    }()

    /// A new, empty folder `<prefix>-<UUID>` in the temporary folder, removed at exit.
    public static func make(_ prefix: String) throws -> URL {
        _ = cleanup
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        made.withLock { $0.append(folder) }
        return folder
    }

    /// The path of `file` in a new folder `<prefix>-<UUID>` (see ``make(_:)``): a SQLite database
    /// there keeps its `-wal`, `-shm` and key files beside it, and all go with the folder.
    public static func path(_ prefix: String, file: String = "hub.sqlite") throws -> String {
        try make(prefix).appendingPathComponent(file).path
    }

    private static func removeAll() {
        for folder in made.withLock({ $0 }) { try? FileManager.default.removeItem(at: folder) }
    }
}
