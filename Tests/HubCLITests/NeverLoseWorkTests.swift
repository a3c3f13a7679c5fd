import Foundation
import Testing

/// Point 2 of issue 18: map-app keeps answers that name unset variables; emulators never replace a
/// key hub.yaml uses, and keep their state private.
@Suite("map-app and emulate never lose work")
struct NeverLoseWorkTests {
    static let sid = "ms-app://s-1-15-2-1234567890-1234567890-1234567890-1234567890-1234567890-1234567890-123456789"

    @Test("interactive: an env: reference to an unset variable is flagged at its question, can be re-typed or kept")
    func unsetVariableKept() async throws {
        let workspace = try makeWorkspace()
        let answers = [
            "chat.contoso.com", "", "windows", "Contoso.Chat_8wekyb3d8bbwe", "", "",
            Self.sid, "env:HUB_TEST_TYPO_SECRET", "n",  // flagged, and re-typed
            "env:HUB_TEST_WNS_SECRET_UNSET", "",  // flagged, kept (the default)
            "backend", "env:HUB_TEST_PUBLISHER_UNSET", "y",  // flagged, kept
            "y",  // save
        ]
        let output = try await HubProcess.run(
            ["map-app", "--interactive"], in: workspace, input: answers.joined(separator: "\n") + "\n")
        #expect(output.status == 0, "\(output.stderr)\n\(output.stdout)")
        #expect(output.stdout.contains("! HUB_TEST_TYPO_SECRET is not set in this shell"), "\(output.stdout)")
        #expect(output.stdout.contains("! HUB_TEST_WNS_SECRET_UNSET is not set in this shell"))
        #expect(output.stdout.contains("! HUB_TEST_PUBLISHER_UNSET is not set in this shell"))
        #expect(!output.stdout.contains("Not saved."))
        #expect(output.stderr.contains("warning:") && output.stderr.contains("HUB_TEST_WNS_SECRET_UNSET"))
        let yaml = try read(workspace.appendingPathComponent("hub.yaml"))
        #expect(yaml.contains("env:HUB_TEST_WNS_SECRET_UNSET"), "\(yaml)")
        #expect(yaml.contains("env:HUB_TEST_PUBLISHER_UNSET"))
        #expect(!yaml.contains("HUB_TEST_TYPO_SECRET"))
        // With the variables set (as at deploy time) the file checks clean.
        let check = try await HubProcess.run(
            ["config", "check"], in: workspace,
            environment: ["HUB_TEST_WNS_SECRET_UNSET": "s3cret", "HUB_TEST_PUBLISHER_UNSET": "key-0123456789abcdef"])
        #expect(check.status == 0, "\(check.stderr)")
    }

    @Test("with flags: --wns-secret env:UNSET writes the mapping and warns instead of throwing it away")
    func unsetVariableWithFlags() async throws {
        let workspace = try makeWorkspace()
        let output = try await HubProcess.run(
            [
                "map-app", "--app", "chat.contoso.com", "--windows", "Contoso.Chat_8wekyb3d8bbwe", "--wns-sid",
                Self.sid,
                "--wns-secret", "env:HUB_TEST_WNS_SECRET_UNSET",
            ], in: workspace)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.contains("HUB_TEST_WNS_SECRET_UNSET"))
        #expect(try read(workspace.appendingPathComponent("hub.yaml")).contains("env:HUB_TEST_WNS_SECRET_UNSET"))
    }

    @Test("emulate apns keeps the key file hub.yaml refers to, even when hub.yaml has an unrelated error; 0700/0600")
    func emulatorKeepsKey() async throws {
        let workspace = try makeWorkspace()
        let first = try await RunningEmulator(
            ["apns", "--config", "absent.yaml", "--port", "0", "--directory", "emu"], in: workspace,
            readyWhen: "Requests follow")
        first.signal(SIGTERM)
        #expect(await first.waitForExit() == 0)
        let keyPath = workspace.appendingPathComponent("emu/AuthKey_EMULATOR01.p8").path
        let key = try read(URL(fileURLWithPath: keyPath))
        #expect(key.contains("BEGIN PRIVATE KEY"))
        try """
        serverr: { listen: "127.0.0.1:0" }
        apps:
          - id: notes.contoso.com
            platforms: { ios: { appIds: [com.contoso.notes] } }
            credentials: { apns: { teamId: EMULATORTM, keyId: EMULATOR01, privateKey: file:emu/AuthKey_EMULATOR01.p8 } }
            publishers: [ { name: backend, key: file:publisher.key } ]
        """.write(to: workspace.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
        let second = try await RunningEmulator(
            ["apns", "--config", "hub.yaml", "--port", "0", "--directory", "emu"], in: workspace,
            readyWhen: "Requests follow")
        second.signal(SIGTERM)
        #expect(await second.waitForExit() == 0)
        #expect(second.errors.contains("unknown key 'serverr'"), "\(second.errors)")
        #expect(second.output.contains("reusing the development key"), "\(second.output)")
        #expect(try read(URL(fileURLWithPath: keyPath)) == key, "the key hub.yaml refers to must not change")
        for (path, mode) in [
            ("emu", 0o700), ("emu/AuthKey_EMULATOR01.p8", 0o600), ("emu/ca.pem", 0o600),
        ] {
            let attributes = try FileManager.default.attributesOfItem(
                atPath: workspace.appendingPathComponent(path).path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == mode, "\(path)")
        }
    }

    @Test("emulate fcm does not replace a service-account file that is not its own")
    func emulatorKeepsForeignAccount() async throws {
        let workspace = try makeWorkspace()
        try FileManager.default.createDirectory(
            at: workspace.appendingPathComponent("fcm"), withIntermediateDirectories: true)
        let mine = try read(workspace.appendingPathComponent("service-account.json"))
        try mine.write(
            to: workspace.appendingPathComponent("fcm/service-account.json"), atomically: true, encoding: .utf8)
        let output = try await HubProcess.run(["emulate", "fcm", "--port", "0", "--directory", "fcm"], in: workspace)
        #expect(output.status != 0)
        #expect(output.stderr.contains("is not the emulator's"), "\(output.stderr)")
        #expect(try read(workspace.appendingPathComponent("fcm/service-account.json")) == mine)
    }

    @Test(".gitignore keeps emulator and device-simulator state out of git")
    func gitignore() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let lines = try read(root.appendingPathComponent(".gitignore")).split(separator: "\n")
        #expect(lines.contains(".hub-emulator/"))
        #expect(lines.contains(".device-simulator/"))
    }
}
