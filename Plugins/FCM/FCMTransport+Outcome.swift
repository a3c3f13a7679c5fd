import HubCore

extension FCMTransport {
    /// What the dispatcher should do after `error` (PROVIDERS.md §2.4 and §6).
    ///
    /// The code of the `FcmError` detail decides first; the HTTP status decides for answers without one.
    /// The reason keeps the HTTP status, Google's status, the code and message, so it is stored with
    /// the delivery.
    func outcome(for error: FCMError, app: CrossDeviceApp) -> DeliveryOutcome {
        let reason = error.description
        switch error.code {
        case .unregistered, .senderIDMismatch:
            return .endpointGone(since: nil, reason: reason)
        case .invalidArgument, .payloadTooLarge:
            return .rejected(reason: reason)
        case .quotaExceeded:
            return .retry(after: max(error.retryAfter ?? .zero, configuration.minimumQuotaRetry), reason: reason)
        case .unavailable, .internal, .networkFailure:
            return .retry(after: error.retryAfter, reason: reason)
        case .thirdPartyAuthError:
            reportOnce(
                error, app: app,
                advice: "the APNs or Web Push credentials uploaded to this Firebase project are invalid or missing; "
                    + "fix them in the Firebase console (Project settings → Cloud Messaging)")
            return .rejected(reason: reason)
        case .authenticationFailed:
            reportOnce(error, app: app, advice: "check credentials.fcm.serviceAccount and the server clock")
            return .rejected(reason: reason)
        default:
            return outcome(forStatus: error, app: app)
        }
    }

    /// The outcome of an answer without a known `FcmError` code, by HTTP status.
    private func outcome(forStatus error: FCMError, app: CrossDeviceApp) -> DeliveryOutcome {
        let reason = error.description
        switch error.httpStatus ?? 0 {
        case 401:
            // Refused twice within one send, the second time with a fresh token: try later.
            return .retry(after: error.retryAfter, reason: reason)
        case 403:
            reportOnce(
                error, app: app,
                advice: "the service account may not send for project \(app.credentials.fcm?.projectID ?? "?"): "
                    + "grant it the Firebase Cloud Messaging API Admin role and enable the FCM API")
            return .rejected(reason: reason)
        case 429:
            return .retry(after: max(error.retryAfter ?? .zero, configuration.minimumQuotaRetry), reason: reason)
        case 500...599:
            return .retry(after: error.retryAfter, reason: reason)
        default:
            return .rejected(reason: reason)
        }
    }
}
