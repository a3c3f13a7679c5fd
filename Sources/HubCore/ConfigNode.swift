/// A value of hub.yaml with the position it was read from: what a ``TransportPlugin`` reads its
/// `transports.<id>` and `credentials.<id>` sections from, through a ``ConfigSection``.
///
/// HubConfig builds these from the YAML document (environment overrides applied), so a plugin
/// needs no YAML library and its diagnostics still carry file:line:column.
public struct ConfigNode: Sendable {
    public enum Value: Sendable {
        /// A scalar's text; `isNull` for an empty or `~`/`null` plain scalar.
        case scalar(String, isNull: Bool)
        case sequence([ConfigNode])
        /// Keys in document order, each with its own position.
        case mapping([(key: String, keyLocation: ConfigLocation, value: ConfigNode)])
    }

    public var value: Value
    public var location: ConfigLocation

    public init(_ value: Value, at location: ConfigLocation) {
        self.value = value
        self.location = location
    }

    /// A plain scalar, for building nodes in code and tests.
    public static func scalar(_ text: String, at location: ConfigLocation = .unknown) -> ConfigNode {
        ConfigNode(.scalar(text, isNull: false), at: location)
    }

    /// A mapping of plain scalars, for building sections in code and tests.
    public static func mapping(_ pairs: [(String, String)], at location: ConfigLocation = .unknown) -> ConfigNode {
        ConfigNode(.mapping(pairs.map { ($0.0, location, .scalar($0.1, at: location)) }), at: location)
    }

    /// `single value`, `list` or `mapping`, for messages.
    public var kindName: String {
        switch value {
        case .scalar: "single value"
        case .sequence: "list"
        case .mapping: "mapping"
        }
    }
}

/// Where a value of hub.yaml came from: a file position, or the environment variable that
/// overrides it.
public struct ConfigLocation: Sendable, Hashable {
    public var file: String
    /// 1-based; 0 when not tied to a position (an environment variable).
    public var line: Int
    /// 1-based, in Unicode scalars.
    public var column: Int
    /// The `HUB_…` variable whose value this is, when it overrides hub.yaml.
    public var variable: String?

    public init(file: String, line: Int, column: Int, variable: String? = nil) {
        self.file = file
        self.line = line
        self.column = column
        self.variable = variable
    }

    /// The value of environment variable `name`.
    public static func environment(_ name: String) -> ConfigLocation {
        ConfigLocation(file: "environment variable \(name)", line: 0, column: 0, variable: name)
    }

    /// No known position (sections built in code).
    public static let unknown = ConfigLocation(file: "hub.yaml", line: 0, column: 0)
}
