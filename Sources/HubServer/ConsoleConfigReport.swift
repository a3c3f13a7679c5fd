/// What `hub config check` says about the hub's configuration, for the console's configuration
/// page. HubServer does not read hub.yaml itself: `hub serve` sets
/// ``HubServerConfiguration/configReport`` to a closure that checks the file again each time the
/// page is opened, so edits made since the start show up.
///
/// Never put a secret in a check: name where it comes from (`env:NAME`, `file:path`) instead.
///
/// ```swift
/// server.configReport = {
///     ConsoleConfigReport(source: "hub.yaml", checks: [.init(.ok, "hub.yaml", "loads: 1 app(s)")])
/// }
/// ```
public struct ConsoleConfigReport: Sendable, Hashable {
    /// How a check came out. Growing set: a static member per status.
    public struct Status: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Fine.
        public static let ok = Status(rawValue: "ok")
        /// Works, but worth a look.
        public static let warning = Status(rawValue: "warning")
        /// Wrong: `hub serve` would not start with the file as it is now, or a feature cannot work.
        public static let error = Status(rawValue: "error")
        public var description: String { rawValue }
    }

    /// One finding.
    public struct Check: Sendable, Hashable {
        public var status: Status
        /// What was checked: `hub.yaml:12:7`, `app notes.contoso.com`, `credentials.apns`, ….
        public var subject: String
        /// What was found, and for a warning or an error, what to do.
        public var message: String

        public init(_ status: Status, _ subject: String, _ message: String) {
            self.status = status
            self.subject = subject
            self.message = message
        }
    }

    /// The file checked (`hub.yaml`'s path).
    public var source: String
    public var checks: [Check]

    public init(source: String, checks: [Check]) {
        self.source = source
        self.checks = checks
    }

    /// The worst status of the checks (``Status/ok`` when there are none).
    public var overall: Status {
        if checks.contains(where: { $0.status == .error }) { return .error }
        if checks.contains(where: { $0.status == .warning }) { return .warning }
        return .ok
    }
}
