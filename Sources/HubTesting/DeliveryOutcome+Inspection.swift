public import HubCore

/// What transport tests ask of an outcome, without a `switch` each time.
extension DeliveryOutcome {
    /// The retry delay, if this is a retry: `.some(nil)` for a retry without `Retry-After`.
    public var retryDelay: Duration?? {
        if case .retry(let after, _) = self { return .some(after) }
        return nil
    }

    /// The outcome's reason; empty for `accepted`.
    public var reason: String {
        switch self {
        case .accepted: ""
        case .retry(_, let reason), .endpointGone(_, let reason), .rejected(let reason), .suspended(let reason):
            reason
        }
    }

    public var isRejected: Bool {
        if case .rejected = self { return true }
        return false
    }

    public var isGone: Bool {
        if case .endpointGone = self { return true }
        return false
    }

    public var isSuspended: Bool {
        if case .suspended = self { return true }
        return false
    }
}
