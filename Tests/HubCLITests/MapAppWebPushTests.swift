import Foundation
import HubCore
import HubWebPush
import Testing

/// `hub map-app --webpush-subject`: the VAPID key pair an app's web platform needs.
@Suite("hub map-app: Web Push VAPID keys")
struct MapAppWebPushTests {
    @Test("generates a private VAPID key, writes credentials.webpush, prints the public key; a second run keeps it")
    func generates() async throws {
        let workspace = try makeWorkspace()
        let config = workspace.appendingPathComponent("hub.yaml")
        try twoApps.write(to: config, atomically: true, encoding: .utf8)
        let arguments = [
            "map-app", "--app", "notes.contoso.com", "--web", "https://notes.contoso.com",
            "--webpush-subject", "mailto:ops@contoso.com",
        ]
        let first = try await HubProcess.run(arguments, in: workspace)
        #expect(first.status == 0, "\(first.stderr)")
        let keyPath = workspace.appendingPathComponent("vapid-notes.contoso.com.pem").path
        let pem = try String(contentsOfFile: keyPath, encoding: .utf8)
        let key = try VAPIDKey(privateKey: pem)
        #expect(try FileManager.default.attributesOfItem(atPath: keyPath)[.posixPermissions] as? Int == 0o600)
        #expect(first.stdout.contains("applicationServerKey for pushManager.subscribe: \(key.publicKeyBase64URL)"))
        #expect(!first.stdout.contains(pem.split(separator: "\n")[1]), "the private key must never be printed")
        let written = try read(config)
        #expect(written.contains("vapidPrivateKey: file:vapid-notes.contoso.com.pem"), "\(written)")
        #expect(
            written.contains("subject: mailto:ops@contoso.com")
                || written.contains(#"subject: "mailto:ops@contoso.com""#))
        let check = try await HubProcess.run(["config", "check"], in: workspace)
        #expect(check.status == 0, "\(check.stderr)")

        let second = try await HubProcess.run(arguments, in: workspace)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.contains("nothing changed"), "\(second.stdout)")
        #expect(try String(contentsOfFile: keyPath, encoding: .utf8) == pem, "an existing key is kept")
    }

    @Test("a subject that is not mailto: or https: is refused and nothing is written")
    func badSubject() async throws {
        let workspace = try makeWorkspace()
        let config = workspace.appendingPathComponent("hub.yaml")
        try twoApps.write(to: config, atomically: true, encoding: .utf8)
        let output = try await HubProcess.run(
            ["map-app", "--app", "notes.contoso.com", "--webpush-subject", "ops@contoso.com"], in: workspace)
        #expect(output.status != 0)
        #expect(output.stderr.contains("--webpush-subject"), "\(output.stderr)")
        #expect(try read(config) == twoApps)
        #expect(
            !FileManager.default.fileExists(
                atPath: workspace.appendingPathComponent("vapid-notes.contoso.com.pem").path))
    }
}
