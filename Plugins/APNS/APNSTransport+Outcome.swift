import HubCore
import HubHTTP2

import struct Foundation.Data
import struct Foundation.Date
import class Foundation.JSONDecoder

/// The JSON body of an APNs error answer: `{"reason": …}`, plus `timestamp` (ms since 1970) for 410.
struct APNSResponseBody {
    var reason: APNSError.Reason?
    var timestamp: Date?

    init(_ bytes: [UInt8]) {
        struct Wire: Decodable {
            var reason: String?
            var timestamp: Double?
        }
        guard !bytes.isEmpty, let wire = try? JSONDecoder().decode(Wire.self, from: Data(bytes)) else { return }
        reason = wire.reason.map(APNSError.Reason.init(rawValue:))
        timestamp = wire.timestamp.map { Date(timeIntervalSince1970: $0 / 1000) }
    }
}

extension APNSTransport {
    /// Maps how a send ended to a delivery outcome (PROVIDERS.md §1.5, §6), logging configuration
    /// problems once per credentials and reason.
    ///
    /// Configuration faults — credentials APNs refuses (`InvalidProviderToken`,
    /// `MissingProviderToken`, `BadCertificate`, `BadCertificateEnvironment`,
    /// `BadEnvironmentKeyIdInToken`, `Forbidden`), a topic wrong for the app (`BadTopic`,
    /// `TopicDisallowed`, `MissingTopic`), `ExpiredProviderToken` again after a newly signed token
    /// (the host's clock), a key that does not sign, and `BadDeviceToken` for every token once
    /// ``APNSTransport/Configuration/badDeviceTokenWarningThreshold`` distinct tokens had it with no
    /// accepted push in between (the environment is wrong, not the tokens) — are ``HubCore/DeliveryOutcome/suspended(reason:)``:
    /// parked, not dropped, until the hub restarts with the configuration fixed.
    func outcome(
        of exchange: Exchange, request: APNSRequest, group: APNSCredentialGroup
    ) -> DeliveryOutcome {
        switch exchange {
        case .failed(let error):
            if error.code == .invalidCredentials {
                logOnce(group, error.code.rawValue, "APNs credentials cannot be used: \(error)")
                return .suspended(reason: error.description)
            }
            return .retry(after: error.retryAfter, reason: error.description)
        case .tokenTooYoungToRenew(let response, let age):
            logOnce(
                group, "clock",
                "APNs says the provider token expired although it was signed \(Int(age.seconds / 60)) min ago: "
                    + "this host's clock is off; fix it (NTP). Tokens are not re-signed within 20 minutes.")
            let wait = APNSTokenProvider.minimumInterval - age
            return .retry(after: max(wait, .seconds(1)), reason: "\(response.status) ExpiredProviderToken (clock skew)")
        case .answered(let response) where response.status == 200:
            group.streak(for: request.environment).end()
            return .accepted
        case .answered(let response):
            return outcome(of: response, request: request, group: group)
        }
    }

    private func outcome(
        of response: HTTP2Response, request: APNSRequest, group: APNSCredentialGroup
    ) -> DeliveryOutcome {
        let body = APNSResponseBody(Array(response.body.readableBytesView))
        let status = response.status
        let reason = body.reason ?? .unknown("HTTP \(status)")
        let label = "\(status) \(reason)"
        switch reason.action(status: status) {
        case .dropToken:
            guard reason == .badDeviceToken else {
                return .endpointGone(since: body.timestamp, reason: label)
            }
            let threshold = configuration.badDeviceTokenWarningThreshold
            let streak = group.streak(for: request.environment).record(request.deviceToken, limit: threshold)
            if streak.count >= threshold {
                // Every token failing at once: suspect the environment, not the tokens (PROVIDERS.md §1.5).
                if streak.reachedLimit {
                    let message =
                        "\(threshold) distinct APNs tokens in a row were BadDeviceToken on \(request.environment): the "
                        + "endpoints may have registered with the wrong environment (development builds need "
                        + "environment: development), or the credentials are for the other environment; "
                        + "suspending such deliveries until one is accepted again"
                    logger.warning("\(message)", metadata: ["credentials": "\(group.label)"])
                }
                return .suspended(
                    reason: "\(label) (\(request.environment)) for \(threshold) or more distinct tokens in a row: "
                        + "check the environment of the endpoints and of the credentials")
            }
            return .endpointGone(
                since: nil, reason: "\(label) (\(request.environment)): \(reason.advice)")
        case .renewToken:
            // Still expired with a newly signed token (the exchange renewed it once), or no token to renew.
            logOnce(group, reason.rawValue, "\(label) after signing a new provider token: \(reason.advice)")
            return .suspended(reason: "\(label): \(reason.advice)")
        case .retry, .reconnect:
            return .retry(after: retryAfter(response), reason: label)
        case .backOffTokenUpdates:
            logOnce(group, reason.rawValue, "\(label): \(reason.advice); backing off")
            return .retry(after: retryAfter(response) ?? .seconds(60), reason: label)
        case .fixConfiguration:
            logOnce(
                group, reason.rawValue,
                "APNs refuses these credentials (\(label)) for topic \(request.topic) on \(request.environment): "
                    + reason.advice + "; deliveries are suspended until the hub restarts with this fixed")
            return .suspended(reason: "\(label): \(reason.advice)")
        case .fixRequest:
            if reason != .payloadTooLarge && reason != .payloadEmpty {
                logOnce(group, reason.rawValue, "APNs refused a request (\(label)): \(reason.advice)")
            }
            return .rejected(reason: "\(label): \(reason.advice)")
        }
    }

    private func logOnce(_ group: APNSCredentialGroup, _ key: String, _ message: String) {
        problems.once("\(group.label)|\(key)") {
            logger.error("\(message)", metadata: ["credentials": "\(group.label)"])
        }
    }

    /// `Retry-After` as seconds or an HTTP date (HubCore's ``RetryAfter``, as the other transports).
    func retryAfter(_ response: HTTP2Response) -> Duration? {
        RetryAfter.parse(response.headers.first(name: "retry-after"), now: configuration.now())
    }
}
