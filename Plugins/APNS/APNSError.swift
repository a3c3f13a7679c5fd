public import struct Foundation.Date

/// Everything that can go wrong sending to APNs, in one type: a payload that cannot be built, an
/// answer of APNs, a connection that failed or a request that timed out.
///
/// ``code`` says which kind of problem it is; for answers of APNs ``reason`` carries Apple's reason
/// string (``Reason/unknown(_:)`` keeps strings this version does not know) and ``message`` says
/// what to do about it. The transport turns every error into a `DeliveryOutcome`; the error itself
/// is what gets logged.
public struct APNSError: Error, Sendable, CustomStringConvertible {
    /// The kind of problem. A growing set: new kinds are new static members.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The encoded payload is over the limit of its push type and could not be trimmed to fit.
        public static let payloadTooLarge = Code(rawValue: "payloadTooLarge")
        /// The payload cannot be encoded as APNs expects (a reserved key, a value out of range, …).
        public static let invalidPayload = Code(rawValue: "invalidPayload")
        /// The device token is not the hex text of an APNs token.
        public static let invalidDeviceToken = Code(rawValue: "invalidDeviceToken")
        /// The credentials cannot be used: a key that does not parse, a `.p12` that does not open, …
        public static let invalidCredentials = Code(rawValue: "invalidCredentials")
        /// APNs answered with an error status; see ``APNSError/reason``.
        public static let response = Code(rawValue: "response")
        /// No connection to APNs could be made or kept (DNS, TCP, TLS, HTTP/2).
        public static let connectionFailed = Code(rawValue: "connectionFailed")
        /// No answer arrived before the request's deadline.
        public static let timedOut = Code(rawValue: "timedOut")
        /// The transport is shutting down and sends nothing more.
        public static let shutdown = Code(rawValue: "shutdown")
        public var description: String { rawValue }
    }

    public var code: Code
    /// What went wrong and what to do about it, safe to log (it never contains key material).
    public var message: String
    /// The HTTP status of an APNs answer.
    public var status: Int?
    /// Apple's reason string of an APNs answer.
    public var reason: Reason?
    /// For `410`: when APNs learned the token stopped being valid for the topic.
    public var timestamp: Date?
    /// How long APNs asked to wait (`Retry-After`), or the back-off the transport chose.
    public var retryAfter: Duration?
    /// The `apns-id` of the request this error answers.
    public var apnsID: String?
    /// The lower-level error (NIO, TLS, JWT), when there is one.
    public var underlying: (any Error)?

    public init(
        _ code: Code, _ message: String, status: Int? = nil, reason: Reason? = nil, timestamp: Date? = nil,
        retryAfter: Duration? = nil, apnsID: String? = nil, underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.retryAfter = retryAfter
        self.apnsID = apnsID
        self.underlying = underlying
    }

    public var description: String {
        var text = status.map { "\($0) " } ?? ""
        if let reason { text += "\(reason): " }
        text += message
        if let underlying { text += " (\(underlying))" }
        return text
    }
}

extension APNSError {
    /// A reason string APNs returns in the `{"reason": …}` body of an error answer.
    ///
    /// The known reasons are static members with Apple's exact spelling; ``init(rawValue:)`` maps
    /// any string, unknown ones to ``unknown(_:)``, so a reason Apple adds later is kept, not lost.
    public struct Reason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        /// Maps Apple's string; the variant spelling `BadEnvironmentKeyInToken` (seen in APNSwift)
        /// becomes ``badEnvironmentKeyIdInToken``.
        public init(rawValue: String) {
            self.rawValue = rawValue == "BadEnvironmentKeyInToken" ? "BadEnvironmentKeyIdInToken" : rawValue
        }
        /// A reason this version does not list; the string is kept as sent.
        public static func unknown(_ text: String) -> Reason { Reason(rawValue: text) }
        /// Whether this is one of the reasons in Apple's table.
        public var isKnown: Bool { Self.all.contains(self) }
        public var description: String { rawValue }

        public static let badCollapseId = Reason(rawValue: "BadCollapseId")
        public static let badDeviceToken = Reason(rawValue: "BadDeviceToken")
        public static let badExpirationDate = Reason(rawValue: "BadExpirationDate")
        public static let badMessageId = Reason(rawValue: "BadMessageId")
        public static let badPriority = Reason(rawValue: "BadPriority")
        public static let badTopic = Reason(rawValue: "BadTopic")
        public static let deviceTokenNotForTopic = Reason(rawValue: "DeviceTokenNotForTopic")
        public static let duplicateHeaders = Reason(rawValue: "DuplicateHeaders")
        public static let idleTimeout = Reason(rawValue: "IdleTimeout")
        public static let invalidPushType = Reason(rawValue: "InvalidPushType")
        public static let missingDeviceToken = Reason(rawValue: "MissingDeviceToken")
        public static let missingTopic = Reason(rawValue: "MissingTopic")
        public static let payloadEmpty = Reason(rawValue: "PayloadEmpty")
        public static let topicDisallowed = Reason(rawValue: "TopicDisallowed")
        public static let badCertificate = Reason(rawValue: "BadCertificate")
        public static let badCertificateEnvironment = Reason(rawValue: "BadCertificateEnvironment")
        public static let expiredProviderToken = Reason(rawValue: "ExpiredProviderToken")
        public static let forbidden = Reason(rawValue: "Forbidden")
        public static let invalidProviderToken = Reason(rawValue: "InvalidProviderToken")
        public static let missingProviderToken = Reason(rawValue: "MissingProviderToken")
        public static let unrelatedKeyIdInToken = Reason(rawValue: "UnrelatedKeyIdInToken")
        public static let badEnvironmentKeyIdInToken = Reason(rawValue: "BadEnvironmentKeyIdInToken")
        public static let badPath = Reason(rawValue: "BadPath")
        public static let methodNotAllowed = Reason(rawValue: "MethodNotAllowed")
        public static let expiredToken = Reason(rawValue: "ExpiredToken")
        public static let unregistered = Reason(rawValue: "Unregistered")
        public static let payloadTooLarge = Reason(rawValue: "PayloadTooLarge")
        public static let tooManyProviderTokenUpdates = Reason(rawValue: "TooManyProviderTokenUpdates")
        public static let tooManyRequests = Reason(rawValue: "TooManyRequests")
        public static let internalServerError = Reason(rawValue: "InternalServerError")
        public static let serviceUnavailable = Reason(rawValue: "ServiceUnavailable")
        public static let shutdown = Reason(rawValue: "Shutdown")

        /// Every reason in Apple's table of HTTP/2 provider API responses.
        public static let all: Set<Reason> = [
            .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
            .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
            .missingTopic, .payloadEmpty, .topicDisallowed, .badCertificate, .badCertificateEnvironment,
            .expiredProviderToken, .forbidden, .invalidProviderToken, .missingProviderToken, .unrelatedKeyIdInToken,
            .badEnvironmentKeyIdInToken, .badPath, .methodNotAllowed, .expiredToken, .unregistered, .payloadTooLarge,
            .tooManyProviderTokenUpdates, .tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown,
        ]
    }
}
