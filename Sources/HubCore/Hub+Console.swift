public import Foundation

// What the operator console reads across an app (``ConsoleQueries``), for a configured app.
extension Hub {
    /// The store's console reads; `unsupported` when the store has none.
    private var consoleQueries: any ConsoleQueries {
        get throws(HubError) {
            guard let queries = store as? any ConsoleQueries else {
                throw HubError(
                    .unsupported, "this hub's store cannot list an app's notifications, failures or endpoints")
            }
            return queries
        }
    }

    /// One page of the app's notifications matching `filter`, newest first, each as a publisher
    /// reads it (an active one past its expiration shows as expired).
    /// - Parameters:
    ///   - appID: the configured app.
    ///   - filter: which notifications.
    ///   - after: the last notification of the previous page; `nil`: from the newest.
    ///   - limit: the most notifications on the page (at least 1).
    /// - Returns: the page, and whether more follow it.
    /// - Throws: ``HubError`` `not-found` for an unknown app, `unsupported` for a store without
    ///   ``ConsoleQueries``.
    public func consoleNotifications(
        app appID: String, filter: ConsoleNotificationFilter, after: ConsoleNotificationPosition?, limit: Int
    ) async throws -> (notifications: [UserNotification], hasMore: Bool) {
        let app = try app(appID)
        let limit = max(1, limit)
        let read = try await consoleQueries.consoleNotifications(
            appId: app.id, filter: filter, after: after, limit: limit + 1)
        let view = NotificationView(now: now(), reader: .publisher)
        return (read.prefix(limit).map { view.render($0) }, read.count > limit)
    }

    /// The app's failed deliveries in `from..<to`: counted by transport, outcome and reason, and
    /// the latest `limit` of them.
    /// - Parameters:
    ///   - appID: the configured app.
    ///   - from: the range's start.
    ///   - to: the range's end (exclusive).
    ///   - limit: the most single deliveries to return.
    /// - Throws: ``HubError`` `not-found` for an unknown app, `unsupported` for a store without
    ///   ``ConsoleQueries``.
    public func consoleFailures(
        app appID: String, from: Date, to: Date, limit: Int
    ) async throws -> (groups: [ConsoleFailureGroup], latest: [ConsoleFailure]) {
        let app = try app(appID)
        let queries = try consoleQueries
        async let groups = queries.consoleFailureGroups(appId: app.id, from: from, to: to)
        async let latest = queries.consoleFailures(appId: app.id, from: from, to: to, limit: max(0, limit))
        return (try await groups, try await latest)
    }

    /// One page of the app's endpoints in `state` whose user and endpoint IDs start with the
    /// given prefixes, ordered by user, then ID.
    /// - Parameters:
    ///   - appID: the configured app.
    ///   - state: active or inactive (the feedback list).
    ///   - userPrefix: the start of the user IDs; empty: any.
    ///   - endpointPrefix: the start of the endpoint IDs; empty: any.
    ///   - after: the last endpoint of the previous page; `nil`: the start.
    ///   - limit: the most endpoints on the page (1 to ``EndpointPage/maxSize``).
    /// - Throws: ``HubError`` `not-found` for an unknown app, `unsupported` for a store without
    ///   ``ConsoleQueries``.
    public func consoleEndpoints(
        app appID: String, state: EndpointState, userPrefix: String, endpointPrefix: String,
        after: EndpointPosition?, limit: Int
    ) async throws -> EndpointPage {
        let app = try app(appID)
        let limit = min(max(1, limit), EndpointPage.maxSize)
        let read = try await consoleQueries.consoleEndpoints(
            appId: app.id, state: state, userPrefix: userPrefix, endpointPrefix: endpointPrefix, after: after,
            limit: limit + 1)
        return EndpointPage(reading: read, limit: limit)
    }
}

// A wrapped store keeps the console's reads of the store it wraps, through the interceptor.
extension InterceptedStore: ConsoleQueries {
    private func console<T: Sendable>(
        _ name: String, _ body: @escaping @Sendable (any ConsoleQueries) async throws -> T
    ) async throws -> T {
        try await call(name) { base in
            guard let queries = base as? any ConsoleQueries else {
                throw HubError(
                    .unsupported, "this hub's store cannot list an app's notifications, failures or endpoints")
            }
            return try await body(queries)
        }
    }

    public func consoleNotifications(
        appId: String, filter: ConsoleNotificationFilter, after: ConsoleNotificationPosition?, limit: Int
    ) async throws -> [UserNotification] {
        try await console("consoleNotifications") {
            try await $0.consoleNotifications(appId: appId, filter: filter, after: after, limit: limit)
        }
    }

    public func consoleFailures(appId: String, from: Date, to: Date, limit: Int) async throws -> [ConsoleFailure] {
        try await console("consoleFailures") {
            try await $0.consoleFailures(appId: appId, from: from, to: to, limit: limit)
        }
    }

    public func consoleFailureGroups(appId: String, from: Date, to: Date) async throws -> [ConsoleFailureGroup] {
        try await console("consoleFailureGroups") {
            try await $0.consoleFailureGroups(appId: appId, from: from, to: to)
        }
    }

    public func consoleEndpoints(
        appId: String, state: EndpointState, userPrefix: String, endpointPrefix: String, after: EndpointPosition?,
        limit: Int
    ) async throws -> [Endpoint] {
        try await console("consoleEndpoints") {
            try await $0.consoleEndpoints(
                appId: appId, state: state, userPrefix: userPrefix, endpointPrefix: endpointPrefix, after: after,
                limit: limit)
        }
    }
}
