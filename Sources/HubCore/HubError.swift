public import HubWire

/// The one error type of the hub's operations. `code` is stable (the HTTP API maps it to a status
/// and a problem `type`); `message` says what to do.
public struct HubError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The request is malformed; see ``HubError/fieldErrors``.
        public static let invalidRequest = Code(rawValue: "invalid-request")
        public static let notFound = Code(rawValue: "not-found")
        /// The app, platform or app ID is not configured.
        public static let notConfigured = Code(rawValue: "not-configured")
        public static let payloadTooLarge = Code(rawValue: "payload-too-large")
        public static let conflict = Code(rawValue: "conflict")
        /// The store or a dependency is not available; retry later.
        public static let unavailable = Code(rawValue: "unavailable")
        /// The store or a plugin does not offer this (a third-party store without statistics).
        public static let unsupported = Code(rawValue: "unsupported")
        public var description: String { rawValue }
    }

    /// One problem with one field of a request body (the wire type HubClient reads back).
    public typealias FieldError = RequestFieldError

    public var code: Code
    public var message: String
    public var fieldErrors: [FieldError]

    public init(_ code: Code, _ message: String, fieldErrors: [FieldError] = []) {
        self.code = code
        self.message = message
        self.fieldErrors = fieldErrors
    }

    public static func invalid(_ errors: [FieldError]) -> HubError {
        let summary = errors.map { "\($0.field): \($0.message)" }.joined(separator: "; ")
        return HubError(
            .invalidRequest, "The request has \(errors.count) invalid field(s): \(summary)", fieldErrors: errors)
    }

    public var description: String { "\(code): \(message)" }
}
