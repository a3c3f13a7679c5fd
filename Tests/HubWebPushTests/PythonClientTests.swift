import Foundation
import HubCore
import HubEmulators
import HubTesting
import Testing

@testable import HubWebPush

/// Real Web Push client libraries from PyPI against our side: pywebpush (with py-vapid and http-ece)
/// sends to the emulator, and http-ece decrypts what our transport sends. `.ci/run` installs them;
/// elsewhere the suite runs when `python3` can import them, and always under `CI=true`.
@Suite(
    "Web Push with PyPI clients: pywebpush → emulator, our transport → http-ece", .serialized,
    .enabled(if: PythonWebPush.available || ProcessInfo.processInfo.environment["CI"] == "true"))
struct PythonClientTests {
    @Test("pywebpush's encrypted, VAPID-signed message is accepted by the emulator and decrypts")
    func pywebpushToEmulator() async throws {
        try await WebPushFixture.with { fixture in
            let subscription = fixture.subscription()
            let (keyPath, caPath) = try PythonWebPush.files(
                key: fixture.vapid.key, trust: fixture.emulator.trustRootPEM)
            let script = """
                import json, sys
                from pywebpush import webpush
                response = webpush(json.loads(sys.argv[1]), data="hello from pywebpush", vapid_private_key=sys.argv[2],
                                   vapid_claims={"sub": "mailto:ops@contoso.com"}, ttl=120,
                                   headers={"Urgency": "high", "Topic": "pyTopic1"})
                print(response.status_code)
                """
            let output = try await PythonScript.run(
                script, arguments: [subscription.json, keyPath], environment: ["REQUESTS_CA_BUNDLE": caPath])
            #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == "201")
            let message = try #require(fixture.emulator.received(by: subscription).first)
            #expect(message.text == "hello from pywebpush")
            #expect(message.subject == "mailto:ops@contoso.com")
            #expect(message.timeToLive == 120)
            #expect(message.urgency == "high")
            #expect(message.topic == "pyTopic1")
        }
    }

    @Test("pywebpush signing with another key than the subscription's is refused (403)")
    func pywebpushWrongKey() async throws {
        try await WebPushFixture.with { fixture in
            let subscription = fixture.subscription()
            let (keyPath, caPath) = try PythonWebPush.files(key: .generate(), trust: fixture.emulator.trustRootPEM)
            let script = """
                import json, sys
                from pywebpush import webpush, WebPushException
                try:
                    webpush(json.loads(sys.argv[1]), data="x", vapid_private_key=sys.argv[2],
                            vapid_claims={"sub": "mailto:ops@contoso.com"})
                    print("accepted")
                except WebPushException as error:
                    print(error.response.status_code)
                """
            let output = try await PythonScript.run(
                script, arguments: [subscription.json, keyPath], environment: ["REQUESTS_CA_BUNDLE": caPath])
            #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == "403")
            #expect(fixture.emulator.received.isEmpty)
        }
    }

    @Test("what our transport sends decrypts with http-ece (aes128gcm) and the browser's keys")
    func transportToHTTPECE() async throws {
        try await WebPushFixture.with { fixture in
            let subscription = fixture.subscription()
            let notification = WebPushFixture.notification(title: "Zmrzlina 🍦", body: "At \"noon\"")
            #expect(
                await fixture.transport.send(
                    fixture.outbound(subscription, kind: .visible, notification: notification)) == .accepted)
            let message = try #require(fixture.emulator.received(by: subscription).first)
            let script = """
                import base64, sys, http_ece
                from cryptography.hazmat.primitives.asymmetric import ec
                def b64(text): return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
                key = ec.derive_private_key(int.from_bytes(b64(sys.argv[2]), "big"), ec.SECP256R1())
                plaintext = http_ece.decrypt(b64(sys.argv[1]), private_key=key, auth_secret=b64(sys.argv[3]),
                                             version="aes128gcm")
                sys.stdout.write(plaintext.decode("utf-8"))
                """
            let output = try await PythonScript.run(
                script,
                arguments: [B64.encode(message.body), subscription.privateKeyBase64URL, B64.encode(subscription.auth)])
            #expect(output == message.text)
            let fields = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: String]
            #expect(fields?["title"] == "Zmrzlina 🍦")
            #expect(fields?["body"] == "At \"noon\"")
        }
    }
}

/// What the pywebpush and http-ece scripts need (they run with ``PythonScript``).
enum PythonWebPush {
    /// Whether `python3` can import pywebpush and http_ece.
    static let available = PythonScript.canImport("pywebpush, http_ece")

    /// `key` as a PEM file and `trust` as a CA file in a fresh temporary folder, for pywebpush
    /// (`vapid_private_key`) and requests (`REQUESTS_CA_BUNDLE`).
    static func files(key: VAPIDKey, trust: String) throws -> (key: String, ca: String) {
        let folder = try TemporaryFolder.make("webpush")
        let keyPath = folder.appendingPathComponent("vapid.pem").path
        let caPath = folder.appendingPathComponent("ca.pem").path
        try key.pemRepresentation.reveal().write(toFile: keyPath, atomically: true, encoding: .utf8)
        try trust.write(toFile: caPath, atomically: true, encoding: .utf8)
        return (keyPath, caPath)
    }
}
