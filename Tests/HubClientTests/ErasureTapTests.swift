import Foundation
import HubClient
import Testing

/// The erasure tap (`DELETE /v1/apps/{app}/users/{userId}` taps the user's devices first): the
/// client forgets its registration and feed position instead of syncing.
@Suite("Erasure tap")
struct ErasureTapTests {
    @Test("an erasure tap, as the hub sends it before erasing, resets the client instead of syncing")
    func erasureTapResetsTheClient() async throws {
        try await TestHub.run { hub in
            let device = try await makeDevice(hub)
            try await device.register(
                .apns(appId: TestHub.iosAppID, deviceToken: Data([0xAB, 0x01, 0xFF]), environment: .development))
            try await hub.publish("before", to: "alice")
            let synced = try await device.handleShoulderTap([
                "aps": ["content-available": 1], "hub": ["app": TestHub.app],
            ])
            #expect(synced?.map(\.appNotificationId) == ["before"])
            guard case .registered = device.registrationState else {
                Issue.record("registered before the erasure: \(device.registrationState)")
                return
            }
            hub.apns.reset()

            let answer = try await hub.eraseUser("alice")
            #expect((answer["devices"] as? [String: Any])?["tapped"] as? Int == 1)
            let tap = try #require(hub.apns.deliveries.first, "the hub tapped the device before erasing")
            // The background push APNs carries for this delivery (`{"aps":…,"hub":{"app","v"}}`).
            let payload: [AnyHashable: Any] = [
                "aps": ["content-available": 1], "hub": ["app": tap.app.id, "v": Int(tap.delivery.changeVersion)],
            ]
            #expect(ShoulderTap(userInfo: payload)?.isErasure == true)
            #expect(ShoulderTap(userInfo: ["hub": "tap", "app": TestHub.app, "v": "0"])?.isErasure == true)  // FCM
            #expect(ShoulderTap(userInfo: ["hub": "tap", "app": TestHub.app, "v": "7"])?.isErasure == false)

            let changes = try await device.handleShoulderTap(payload)
            #expect(changes?.isEmpty == true, "nothing synced")
            guard case .notRegistered = device.registrationState else {
                Issue.record("the registration is forgotten: \(device.registrationState)")
                return
            }
        }
    }
}
