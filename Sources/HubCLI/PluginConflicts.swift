import HubCore

/// What two transport plugins of one command line must not share, checked before any command runs
/// (``HubCLI/run(plugins:arguments:errors:)``): an ID, a `map-app` flag (`--<id>-<field>`, which
/// must not be one of `map-app`'s own options either) or an emulator's name (which must not be one
/// `hub emulate` keeps for itself). ArgumentParser would otherwise hand a shared flag to whichever
/// comes first, silently.
enum PluginConflicts {
    /// What `hub emulate <name>` takes for itself: its own subcommand, ArgumentParser's `help`, and
    /// nothing at all.
    static let reservedEmulatorNames: Set<String> = ["", "plugin", "help"]

    /// One sentence per conflict, naming the plugins and what to rename; empty when there is none.
    /// - Parameters:
    ///   - plugins: the command line's plugins, in order.
    ///   - mapAppOptions: `map-app`'s own options (`--app`, `--dry-run`, …).
    static func problems(_ plugins: [any TransportPlugin], mapAppOptions: Set<String>) -> [String] {
        var problems: [String] = []
        var ids: [TransportID: Int] = [:]
        var unique: [any TransportPlugin] = []
        for (index, plugin) in plugins.enumerated() {
            if let first = ids[plugin.id] {
                problems.append(
                    "transport plugins #\(first + 1) and #\(index + 1) both have the ID '\(plugin.id)'; give the command line one plugin per transport ID"
                )
            } else {
                ids[plugin.id] = index
                unique.append(plugin)
            }
        }
        var flags: [String: (plugin: TransportID, field: String)] = [:]
        var emulators: [String: TransportID] = [:]
        for plugin in unique {
            guard let onboarding = plugin.onboarding else { continue }
            for field in onboarding.fields {
                let flag = "--\(plugin.id.rawValue)-\(field.name)"
                if mapAppOptions.contains(flag) {
                    problems.append(
                        "the \(plugin.id) plugin's field '\(field.name)' makes the flag \(flag), which is a map-app option already; rename the field"
                    )
                } else if let first = flags[flag] {
                    let who =
                        first.plugin == plugin.id
                        ? "the \(plugin.id) plugin declares the field '\(field.name)' twice"
                        : "the \(first.plugin) plugin's field '\(first.field)' and the \(plugin.id) plugin's field '\(field.name)' both make the map-app flag \(flag)"
                    problems.append("\(who); rename one")
                } else {
                    flags[flag] = (plugin.id, field.name)
                }
            }
            if let emulator = onboarding.emulator {
                if reservedEmulatorNames.contains(emulator.name) || emulator.name.hasPrefix("-") {
                    problems.append(
                        "the \(plugin.id) plugin's emulator is named '\(emulator.name)', which hub emulate cannot run by name; rename it"
                    )
                } else if let first = emulators[emulator.name] {
                    problems.append(
                        "the \(first) and \(plugin.id) plugins both bring an emulator named '\(emulator.name)' (hub emulate \(emulator.name)); rename one"
                    )
                } else {
                    emulators[emulator.name] = plugin.id
                }
            }
        }
        return problems
    }
}
