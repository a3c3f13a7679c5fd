import Foundation

extension HubClient {
    /// Where this device's registration stands now.
    public var registrationState: RegistrationState { registrations.value }

    /// The registration state as it changes: each iteration starts with the current state, then
    /// gets every change (Graph's `notificationRegistrationStateChanged`).
    ///
    /// ```swift
    /// for await state in client.registrationStates {
    ///     if case .inactive = state { requestNewPushToken() }
    /// }
    /// ```
    public var registrationStates: AsyncStream<RegistrationState> { registrations.stream() }

    /// Registers this app install with the hub, or refreshes its registration
    /// (`PUT /v1/apps/{app}/me/endpoints/{endpointID}`), and keeps the result in ``storage``.
    ///
    /// Call it at every start and whenever the push token changes: registering is idempotent,
    /// and re-registering revives an endpoint a push provider reported dead.
    ///
    /// - Returns: the endpoint as the hub keeps it; ``registrationState`` becomes `registered`
    ///   (or `inactive`, if the hub still considers the token dead).
    /// - Throws: ``HubClientError`` (``HubClientError/Code/invalidRequest`` lists what the hub
    ///   refused, such as an app ID the app does not map); ``registrationState`` becomes `failed`.
    @discardableResult
    public func register(_ registration: EndpointRegistration) async throws -> Endpoint {
        do {
            var request = HubRequest(method: "PUT", path: ["me", "endpoints", endpointID])
            request.body = try HubJSON.encoder.encode(
                RegistrationBody(
                    platform: registration.platform, appId: registration.appId, transport: registration.transport,
                    token: registration.token, environment: registration.environment,
                    appDisplayName: registration.appDisplayName))
            let endpoint = try await requester.send(request, as: Endpoint.self)
            // A failed save only means the next start reports `notRegistered` until it registers.
            try? storage.setData(try HubJSON.encoder.encode(endpoint), forKey: StorageKeys(app: app).endpoint)
            registrations.send(RegistrationState(endpoint))
            await feed.registrationChanged()
            return endpoint
        } catch let error as HubClientError {
            registrations.send(.failed(error))
            throw error
        }
    }

    /// Removes this app install's endpoint from the hub
    /// (`DELETE /v1/apps/{app}/me/endpoints/{endpointID}`); the hub stops tapping it. An endpoint
    /// the hub does not know counts as removed.
    public func unregister() async throws {
        do {
            _ = try await requester.send(HubRequest(method: "DELETE", path: ["me", "endpoints", endpointID]))
        } catch let error as HubClientError where error.code == .notFound {
            // Already gone.
        }
        try? storage.setData(nil, forKey: StorageKeys(app: app).endpoint)
        registrations.send(.notRegistered)
        await feed.registrationChanged()
    }

    /// Asks the hub how this endpoint stands (`GET …/me/endpoints/{endpointID}`) and updates
    /// ``registrationState``: `inactive` when a push provider reported the token dead,
    /// `notRegistered` when the hub does not know the endpoint.
    @discardableResult
    public func refreshRegistrationState() async throws -> RegistrationState {
        let state: RegistrationState
        do {
            state = RegistrationState(
                try await requester.send(
                    HubRequest(method: "GET", path: ["me", "endpoints", endpointID]), as: Endpoint.self))
        } catch let error as HubClientError where error.code == .notFound {
            state = .notRegistered
        }
        registrations.send(state)
        return state
    }

    /// Every endpoint of the signed-in user in this app, their other devices' too
    /// (`GET /v1/apps/{app}/me/endpoints`).
    public func endpoints() async throws -> [Endpoint] {
        try await requester.send(HubRequest(method: "GET", path: ["me", "endpoints"]), as: EndpointList.self).endpoints
    }
}

/// A current value that can be observed as an `AsyncStream`: every new stream starts with the
/// current value, then receives each change.
final class Broadcast<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Value
    private var continuations: [UUID: AsyncStream<Value>.Continuation] = [:]

    init(_ initial: Value) {
        current = initial
    }

    var value: Value { lock.withLock { current } }

    func send(_ value: Value) {
        lock.withLock {
            current = value
            for continuation in continuations.values { continuation.yield(value) }
        }
    }

    func stream() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        lock.withLock {
            continuations[id] = continuation
            continuation.yield(current)
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.lock.withLock { self.continuations.removeValue(forKey: id) }
        }
        return stream
    }
}
