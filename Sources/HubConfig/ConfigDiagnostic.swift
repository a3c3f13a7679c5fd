public import HubCore

/// hub.yaml could not be loaded; `diagnostics` says every reason.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [ConfigDiagnostic]
    public init(diagnostics: [ConfigDiagnostic]) { self.diagnostics = diagnostics }
    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}
