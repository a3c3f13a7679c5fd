import Foundation
import HubClient
import Testing

@Suite("HubClient tokens and registration", .serialized, .timeLimit(.minutes(2)))
struct AuthenticationTests {
    static let polling = EndpointRegistration.polling(platform: .ios, appId: TestHub.iosAppID)

    @Test("an expired token is refreshed once through the provider, then the request succeeds")
    func expiredTokenRefreshedOnce() async throws {
        try await TestHub.run { hub in
            let tokens = TokenLog { reason in
                try await hub.token(user: "alice", expiresIn: reason == .initial ? -3600 : 600)
            }
            let device = try await makeDevice(hub, tokens: tokens)
            let endpoint = try await device.register(Self.polling)
            #expect(endpoint.id == device.endpointID)
            #expect(tokens.asked == [.initial, .invalidated])
            // The fresh token is kept: later requests do not ask again.
            _ = try await device.notificationChannel.createReader().readBatch()
            #expect(tokens.asked == [.initial, .invalidated])
        }
    }

    @Test("a provider that keeps returning a refused token fails with unauthorized after one retry")
    func refusedTokenFailsTyped() async throws {
        try await TestHub.run { hub in
            let tokens = TokenLog { _ in try await hub.forgedToken(user: "alice") }
            let device = try await makeDevice(hub, tokens: tokens)
            let error = try await #require(throws: HubClientError.self) {
                try await device.register(Self.polling)
            }
            #expect(error.code == .unauthorized)
            #expect(error.status == 401)
            #expect(error.problemType == "https://notificationhub.dev/problems/unauthorized")
            #expect(tokens.asked == [.initial, .invalidated])
            guard case .failed(let failure) = device.registrationState else {
                Issue.record("expected a failed registration, got \(device.registrationState)")
                return
            }
            #expect(failure.code == .unauthorized)
        }
    }

    @Test("a provider that throws fails the request with tokenUnavailable and the provider's error")
    func providerFailure() async throws {
        struct SignedOut: Error {}
        try await TestHub.run { hub in
            let device = try await makeDevice(hub, tokens: TokenLog { _ in throw SignedOut() })
            let error = try await #require(throws: HubClientError.self) {
                try await device.notificationChannel.createReader().readBatch()
            }
            #expect(error.code == .tokenUnavailable)
            #expect(error.underlying is SignedOut)
        }
    }

    @Test("a refused registration is an invalidRequest error listing the hub's field errors")
    func invalidRegistration() async throws {
        try await TestHub.run { hub in
            let device = try await makeDevice(hub)
            let error = try await #require(throws: HubClientError.self) {
                try await device.register(.polling(platform: .ios, appId: "com.example.unknown"))
            }
            #expect(error.code == .invalidRequest)
            #expect(error.status == 400)
            #expect(error.fieldErrors.map(\.field) == ["appId"])
            #expect(error.message.contains("com.example.unknown"))
        }
    }

    @Test("registration state is observable: not registered, registered, then not registered again")
    func registrationStates() async throws {
        try await TestHub.run { hub in
            let storage = InMemoryHubClientStorage()
            let device = try await makeDevice(hub, storage: storage)
            var states = device.registrationStates.makeAsyncIterator()
            guard case .notRegistered? = await states.next() else {
                Issue.record("a new client starts not registered")
                return
            }
            let endpoint = try await device.register(Self.polling)
            guard case .registered(let registered)? = await states.next() else {
                Issue.record("register() publishes the registered state")
                return
            }
            #expect(registered == endpoint)
            #expect(endpoint.transport == .polling && endpoint.state == .active)
            #expect(try await device.endpoints().map(\.id) == [device.endpointID])
            #expect(try await device.refreshRegistrationState().endpoint?.id == device.endpointID)
            _ = await states.next()  // the refresh's state

            try await device.unregister()
            guard case .notRegistered? = await states.next() else {
                Issue.record("unregister() publishes notRegistered")
                return
            }
            #expect(try await device.endpoints().isEmpty)
            guard case .notRegistered = try await device.refreshRegistrationState() else {
                Issue.record("the hub no longer knows the endpoint")
                return
            }
            // The endpoint ID names the install and survives.
            #expect(try await makeDevice(hub, storage: storage).endpointID == device.endpointID)
        }
    }

    @Test("save() sends only the properties changed, so it never undoes another device's change")
    func saveSendsOnlyEdits() async throws {
        try await TestHub.run { hub in
            let phone = try await makeDevice(hub)
            let laptop = try await makeDevice(hub)
            try await hub.publish("report", to: "alice")
            var onPhone = try #require(try await phone.notificationChannel.createReader().readBatch().first)
            var onLaptop = try #require(try await laptop.notificationChannel.createReader().readBatch().first)
            #expect(!onPhone.hasUnsavedChanges)
            try await onPhone.save()  // nothing changed: no request, nothing recorded

            onLaptop.readState = .read
            try await onLaptop.save()
            onPhone.userActionState = .dismissed  // the phone's copy still says unread
            #expect(onPhone.hasUnsavedChanges)
            try await onPhone.save()
            #expect(onPhone.readState == .read, "the hub's answer carries the laptop's change")
            #expect(onPhone.userActionState == .dismissed)
        }
    }
}
