/// What WNS said about one send: the HTTP status and the `X-WNS-*` response headers.
public struct WNSResponse: Sendable, Hashable, CustomStringConvertible {
    public var status: Int
    /// `X-WNS-Status` (older name `X-WNS-NotificationStatus`): `received`, `dropped` or `channelthrottled`.
    public var notificationStatus: String?
    /// `X-WNS-Msg-ID`, to quote to Microsoft.
    public var messageID: String?
    public var errorDescription: String?
    public var debugTrace: String?
    /// `X-WNS-DeviceConnectionStatus`, only when requested.
    public var deviceConnectionStatus: String?
    /// `MS-CV`, the correlation vector.
    public var correlationVector: String?
    /// `Retry-After` (or the older `X-WNS-CONTINUE-AFTER`).
    public var retryAfter: Duration?

    public init(
        status: Int, notificationStatus: String? = nil, messageID: String? = nil, errorDescription: String? = nil,
        debugTrace: String? = nil, deviceConnectionStatus: String? = nil, correlationVector: String? = nil,
        retryAfter: Duration? = nil
    ) {
        self.status = status
        self.notificationStatus = notificationStatus
        self.messageID = messageID
        self.errorDescription = errorDescription
        self.debugTrace = debugTrace
        self.deviceConnectionStatus = deviceConnectionStatus
        self.correlationVector = correlationVector
        self.retryAfter = retryAfter
    }

    /// For example `410; X-WNS-Status: dropped; X-WNS-Error-Description: …; X-WNS-Msg-ID: 1A2B…`.
    public var description: String {
        var parts = [String(status)]
        if let notificationStatus { parts.append("X-WNS-Status: \(notificationStatus)") }
        if let errorDescription { parts.append("X-WNS-Error-Description: \(errorDescription)") }
        if let messageID { parts.append("X-WNS-Msg-ID: \(messageID)") }
        if let debugTrace { parts.append("X-WNS-Debug-Trace: \(debugTrace)") }
        if let correlationVector { parts.append("MS-CV: \(correlationVector)") }
        return parts.joined(separator: "; ")
    }
}

/// Why a WNS send failed. Codes are WNS's HTTP statuses plus the hub's own for failures before WNS
/// answers; a struct with static members, so a status WNS adds later is kept as it came.
public struct WNSErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The code of an HTTP status WNS answered with.
    public init(status: Int) {
        self.init(rawValue: "HTTP_\(status)")
    }

    /// 400: a header is wrong or headers conflict. Fix, do not resend as is.
    public static let badRequest = WNSErrorCode(status: 400)
    /// 401: the access token is invalid or expired. Get a new one and resend once.
    public static let unauthorized = WNSErrorCode(status: 401)
    /// 403: the token's app does not own this channel. Fix the credentials or the app mapping.
    public static let forbidden = WNSErrorCode(status: 403)
    /// 404: the channel URI is invalid or unknown to WNS. Drop the channel.
    public static let channelNotFound = WNSErrorCode(status: 404)
    /// 405: the method is not allowed. Fix.
    public static let methodNotAllowed = WNSErrorCode(status: 405)
    /// 406: the sender exceeded its throttle limit. Retry after `Retry-After`.
    public static let throttled = WNSErrorCode(status: 406)
    /// 410: the channel expired (or the sending domain is blocked). Drop the channel.
    public static let channelExpired = WNSErrorCode(status: 410)
    /// 413: the body is larger than 5000 bytes. Fix.
    public static let payloadTooLarge = WNSErrorCode(status: 413)
    /// 500: WNS failed internally. Retry with back-off.
    public static let internalServerError = WNSErrorCode(status: 500)
    /// 503: WNS is unavailable. Retry after `Retry-After`, else back off.
    public static let serviceUnavailable = WNSErrorCode(status: 503)

    /// The channel URI is not on WNS or an allowed host; nothing was sent.
    public static let channelNotAllowed = WNSErrorCode(rawValue: "HUB_CHANNEL_NOT_ALLOWED")
    /// The body exceeds ``WNSNotification/payloadLimit``; nothing was sent.
    public static let bodyTooLarge = WNSErrorCode(rawValue: "HUB_PAYLOAD_TOO_LARGE")
    /// The hub could not get an access token (wrong SID, secret, tenant or client ID).
    public static let authenticationFailed = WNSErrorCode(rawValue: "HUB_AUTHENTICATION_FAILED")
    /// The token endpoint failed transiently (429 or 5xx). Retry.
    public static let authenticationUnavailable = WNSErrorCode(rawValue: "HUB_AUTHENTICATION_UNAVAILABLE")
    /// No answer: connection, TLS or timeout failure. Retry.
    public static let networkFailure = WNSErrorCode(rawValue: "HUB_NETWORK_FAILURE")

    public var description: String { rawValue }
}

/// A failed WNS send: the code to act on, WNS's answer when there was one, and what to do.
public struct WNSError: Error, Sendable, CustomStringConvertible {
    public var code: WNSErrorCode
    /// WNS's answer with its `X-WNS-*` headers, when WNS answered.
    public var response: WNSResponse?
    /// What went wrong and what to do about it.
    public var message: String
    /// The lower-level error (network, TLS), if any.
    public var underlying: (any Error & Sendable)?

    public init(
        code: WNSErrorCode, response: WNSResponse? = nil, message: String, underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.response = response
        self.message = message
        self.underlying = underlying
    }

    /// When to try again, as WNS said.
    public var retryAfter: Duration? { response?.retryAfter }

    /// WNS's status and headers, then the message; never contains tokens or secrets.
    public var description: String {
        if let response { return "\(response) — \(message)" }
        return "\(code.rawValue): \(message)"
    }
}
