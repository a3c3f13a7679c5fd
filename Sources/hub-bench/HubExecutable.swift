import Foundation

/// The `hub` executable that the benchmarks measuring `hub serve` start: the one in hub-bench's own
/// build folder (`.build/release/hub` beside `.build/release/hub-bench`), so that both come from the
/// same sources and the same configuration.
enum HubExecutable {
    /// The `hub` beside this executable, resolved from `/proc/self/exe` (a symbolic link to
    /// hub-bench, as in an installed copy, leads to the folder it points into).
    ///
    /// - Throws: ``Missing`` when that folder has no executable `hub`.
    static func path() throws -> String {
        let own = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let hub = URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("hub").path
        guard FileManager.default.isExecutableFile(atPath: hub) else { throw Missing(path: hub) }
        return hub
    }

    /// No `hub` beside hub-bench: says where it was looked for and how to build it.
    struct Missing: Error, CustomStringConvertible {
        var path: String

        var description: String {
            "no hub executable at \(path): this benchmark runs `hub serve` from hub-bench's own build folder. "
                + "Build both in the same configuration, e.g. `swift build -c release` (or `swift build -c release "
                + "--product hub`) before `.build/release/hub-bench …`."
        }
    }
}
