import Foundation
import HubCore
import HubEmulators
import HubTesting
import Testing

@testable import HubAPNS

@Suite("APNs certificate authentication: the .p12 as TLS client certificate")
struct APNSCertificateTests {
    static let credentials = APNSCredentials(
        authentication: .certificate(
            p12: Secret(bytes: CertificateFixtures.p12, source: "fixture.p12"),
            password: Secret(CertificateFixtures.password, source: "fixture password")))

    @Test("a certificate client is accepted for its bundle ID and sends no authorization header")
    func accepted() async throws {
        try await APNSHarness.with(emulator: { $0.clientCertificateTrustRootsPEM = [CertificateFixtures.authorityPEM] })
        {
            harness in
            let request = harness.request(APNSHarness.token(1))
            #expect(await harness.transport.send(request, credentials: Self.credentials) == .accepted)
            let received = try #require(harness.emulator.requests.first)
            #expect(received.header("authorization") == nil)
            #expect(received.header("apns-topic") == APNSHarness.bundleID)
            let voip = APNSRequest(
                deviceToken: APNSHarness.token(2), environment: .production, bundleID: APNSHarness.bundleID,
                payload: .voip(APNSVoIPPayload(custom: ["call": "1"])))
            #expect(await harness.transport.send(voip, credentials: Self.credentials) == .accepted)
        }
    }

    @Test("a certificate cannot push to another app's topic")
    func otherTopic() async throws {
        try await APNSHarness.with(emulator: { $0.clientCertificateTrustRootsPEM = [CertificateFixtures.authorityPEM] })
        {
            harness in
            let request = APNSRequest(
                deviceToken: APNSHarness.token(1), environment: .production, bundleID: "com.other.app",
                payload: .background())
            let outcome = await harness.transport.send(request, credentials: Self.credentials)
            #expect(outcome.isSuspended && outcome.reasonText.contains("TopicDisallowed"))
        }
    }

    @Test("a certificate the emulator does not trust is not a client certificate: MissingProviderToken")
    func untrustedCertificate() async throws {
        try await APNSHarness.with { harness in
            let outcome = await harness.transport.send(
                harness.request(APNSHarness.token(1)), credentials: Self.credentials)
            #expect(outcome.isSuspended && outcome.reasonText.contains("MissingProviderToken"))
        }
    }

    @Test("a wrong password is an invalid-credentials error, reported without the password")
    func wrongPassword() throws {
        let wrong = APNSCredentials(
            authentication: .certificate(
                p12: Secret(bytes: CertificateFixtures.p12, source: "fixture.p12"),
                password: Secret("not-the-password", source: "env:P12_PASSWORD")))
        let transport = APNSTransport(logger: LogCapture().logger)
        #expect {
            try transport.validate(wrong)
        } throws: { error in
            let apns = error as? APNSError
            return apns?.code == .invalidCredentials && !"\(error)".contains("not-the-password")
                && "\(error)".contains("fixture.p12")
        }
    }
}
