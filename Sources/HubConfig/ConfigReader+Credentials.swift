import Foundation
import HubCore
import Yams

extension ConfigReader {
    /// An app's `credentials`: one section per transport plugin, each read by its plugin.
    mutating func readCredentials(_ node: Node, at path: String, platforms: [Platform: [String]]) -> PushCredentials {
        var credentials = PushCredentials()
        guard let entries = mapping(node, at: path, allowed: plugins.map(\.id.rawValue)) else { return credentials }
        for plugin in plugins {
            guard let value = entries[plugin.id.rawValue] else { continue }
            if !plugin.platforms.isEmpty && !plugin.platforms.contains(where: { platforms[$0] != nil }) {
                let names = plugin.platforms.map(\.rawValue).sorted()
                error(
                    entries.keys[plugin.id.rawValue],
                    "'\(path).\(plugin.id)' is given but the app does not select the \(names.joined(separator: " or ")) platform; add platforms.\(names[0]) or remove these credentials"
                )
            }
            let section = self.section(value, at: "\(path).\(plugin.id)")
            let read = plugin.readCredentials(section)
            diagnostics += section.diagnostics
            if let read, !section.hasErrors { credentials[transport: plugin.id] = read }
        }
        return credentials
    }

    /// `transports`: each plugin's settings, read by the plugin (its defaults when hub.yaml has no
    /// section for it). Keys that name no plugin of this build are errors.
    mutating func readTransports(_ node: Node?) -> [TransportID: any Sendable] {
        var entries: Entries?
        if let node { entries = mapping(node, at: "transports", allowed: plugins.map(\.id.rawValue)) }
        var settings: [TransportID: any Sendable] = [:]
        for plugin in plugins {
            let section = self.section(entries?[plugin.id.rawValue], at: "transports.\(plugin.id)")
            let read = plugin.readSettings(section)
            diagnostics += section.diagnostics
            if let read, !section.hasErrors { settings[plugin.id] = read }
        }
        return settings
    }

    /// A section of the document for a plugin to read.
    func section(_ node: Node?, at path: String) -> ConfigSection {
        ConfigSection(
            path: path, node: node.map(configNode), file: file, baseDirectory: baseDirectory, environment: environment)
    }

    /// `node` as a ``ConfigNode``, positions (or the overriding variable) included.
    func configNode(_ node: Node) -> ConfigNode {
        let location = location(of: node)
        switch node {
        case .scalar(let scalar):
            let isNull = scalar.style == .plain && ["", "~", "null", "Null", "NULL"].contains(scalar.string)
            return ConfigNode(.scalar(scalar.string, isNull: isNull), at: location)
        case .alias(let alias):
            return ConfigNode(.scalar("*" + alias.anchor.rawValue, isNull: false), at: location)
        case .sequence(let sequence):
            return ConfigNode(.sequence(sequence.map(configNode)), at: location)
        case .mapping(let mapping):
            return ConfigNode(
                .mapping(
                    mapping.map { pair in
                        (
                            key: pair.key.scalar?.string ?? "", keyLocation: self.location(of: pair.key),
                            value: configNode(pair.value)
                        )
                    }), at: location)
        }
    }

    func location(of node: Node) -> ConfigLocation {
        guard let mark = node.mark else { return ConfigLocation(file: file, line: 0, column: 0) }
        if let name = overrideName(line: mark.line) { return .environment(name) }
        return ConfigLocation(file: file, line: mark.line, column: mark.column)
    }
}
