/// How many endpoints one user of an app may have: the hub's one rule, which a store applies in
/// the same transaction as the insert of a new endpoint (so concurrent registrations cannot pass it
/// together). Refreshing an endpoint the user already has always works; only a new endpoint
/// ID counts against the limit, active and inactive endpoints alike.
///
/// A user's endpoints are what one publish fans out to: without a limit one user token could
/// register thousands of endpoints and make every publish to it as many provider sends.
public struct EndpointLimit: Sendable, Hashable {
    /// The most endpoints one user of the app may have; `nil`: no limit.
    public var maxPerUser: Int?

    /// No limit (stores' tests, tools that import endpoints).
    public static let unlimited = EndpointLimit(maxPerUser: nil)

    /// The default of ``HubConfiguration/maxEndpointsPerUser``.
    public static let defaultMaxPerUser = 50

    /// - Parameter maxPerUser: the most endpoints one user of the app may have; `nil`: no limit.
    public init(maxPerUser: Int?) {
        self.maxPerUser = maxPerUser.map { max(1, $0) }
    }

    /// Checks that a user who has `existing` other endpoints (not counting the one being registered,
    /// nor one whose token it takes over) may add the new endpoint `endpointID`.
    ///
    /// - Parameters:
    ///   - endpointID: the ID of the endpoint being registered (it is not stored yet).
    ///   - existing: the user's endpoints that stay stored after the registration.
    /// - Throws: ``HubError/Code/conflict`` naming the limit and how to make room.
    public func check(adding endpointID: String, existing: Int) throws(HubError) {
        guard let maxPerUser, existing >= maxPerUser else { return }
        throw HubError(
            .conflict,
            """
            This user already has \(existing) endpoints in this app, the most allowed \
            (limits.maxEndpointsPerUser = \(maxPerUser)); '\(endpointID)' was not registered. Delete an \
            endpoint the user no longer uses (DELETE …/me/endpoints/{endpointId}) or refresh an existing \
            one instead of registering a new ID.
            """)
    }
}

/// Where a page of endpoints starts: after this user's endpoint (listings are ordered by user,
/// then endpoint ID, both bytewise).
public struct EndpointPosition: Sendable, Hashable {
    public var userId: String
    public var endpointId: String

    /// - Parameters:
    ///   - userId: the user of the last endpoint of the previous page.
    ///   - endpointId: that endpoint's ID.
    public init(userId: String, endpointId: String) {
        self.userId = userId
        self.endpointId = endpointId
    }

    /// Whether `endpoint` comes after this position in listing order.
    /// - Parameter endpoint: an endpoint of the listing.
    public func precedes(_ endpoint: Endpoint) -> Bool {
        if endpoint.userId != userId { return userId.utf8.lexicographicallyPrecedes(endpoint.userId.utf8) }
        return endpointId.utf8.lexicographicallyPrecedes(endpoint.id.utf8)
    }
}

/// One page of an endpoint listing.
public struct EndpointPage: Sendable, Hashable {
    /// The endpoints, ordered by user, then ID.
    public var endpoints: [Endpoint]
    /// Where the next page starts; `nil` on the last page.
    public var next: EndpointPosition?

    /// The default number of endpoints on a page.
    public static let defaultSize = 100
    /// The most endpoints one page may hold.
    public static let maxSize = 1000

    /// - Parameters:
    ///   - endpoints: the page's endpoints, in listing order.
    ///   - next: where the next page starts; `nil` on the last page.
    public init(endpoints: [Endpoint], next: EndpointPosition?) {
        self.endpoints = endpoints
        self.next = next
    }

    /// The page of `limit` endpoints made from up to `limit + 1` read in listing order: the
    /// one past `limit` only says that there is a next page.
    /// - Parameters:
    ///   - endpoints: up to `limit + 1` endpoints, in listing order.
    ///   - limit: the most endpoints on the page.
    public init(reading endpoints: [Endpoint], limit: Int) {
        let page = Array(endpoints.prefix(limit))
        self.endpoints = page
        self.next =
            endpoints.count > limit ? page.last.map { EndpointPosition(userId: $0.userId, endpointId: $0.id) } : nil
    }
}
