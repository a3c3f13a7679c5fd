import Foundation
import HubEmulators
import Testing

/// An existing hub.yaml with comments and two apps, to check that map-app edits only what it must.
let twoApps = """
    # Our hub
    server: { listen: "127.0.0.1:8080" }   # loopback only

    apps:
      # Notes, the first app
      - id: notes.contoso.com
        name: Contoso Notes
        platforms:
          ios: { appIds: [com.contoso.notes] }    # store build
          android: { appIds: [com.contoso.notes] }
        delivery: { mode: shoulderTap }   # keep taps silent

      # Photos, the second app
      - id: photos.contoso.com
        name: Photos
        platforms:
          android:
            appIds:
              - com.contoso.photos   # main
    """

@Suite("hub map-app")
struct MapAppCommandTests {
    @Test("eleven --ios IDs exit non-zero naming the limit and write nothing")
    func elevenIDs() async throws {
        let workspace = try makeWorkspace()
        let config = workspace.appendingPathComponent("hub.yaml")
        try twoApps.write(to: config, atomically: true, encoding: .utf8)
        let ids = (1...11).flatMap { ["--ios", "com.contoso.app\($0)"] }
        let output = try await HubProcess.run(["map-app", "--app", "new.contoso.com"] + ids, in: workspace)
        #expect(output.status != 0)
        #expect(output.stderr.contains("at most 10"), "\(output.stderr)")
        #expect(try read(config) == twoApps)
    }

    @Test("a publisher key or HS256 secret too short, or a key another publisher has: refused, nothing written")
    func weakSecretsRefused() async throws {
        let workspace = try makeWorkspace()
        let config = workspace.appendingPathComponent("hub.yaml")
        try twoApps.write(to: config, atomically: true, encoding: .utf8)
        try "short-key".write(to: workspace.appendingPathComponent("short.key"), atomically: true, encoding: .utf8)
        try "too-short-for-hs256".write(
            to: workspace.appendingPathComponent("short.secret"), atomically: true, encoding: .utf8)
        for (flags, message) in [
            (["--publisher", "backend=file:short.key"], "'apps[2].publishers[0].key' is shorter than 16 characters"),
            (
                [
                    "--issuer", "https://login.contoso.com", "--audience", "new", "--identity-secret",
                    "file:short.secret",
                ],
                "'apps[2].identity[0].secret' is 19 bytes long; it must have at least 32"
            ),
            (
                ["--publisher", "backend=file:publisher.key", "--publisher", "ops=file:publisher.key"],
                "'apps[2].publishers[1].key' has the same value as 'apps[2].publishers[0].key'"
            ),
        ] {
            let output = try await HubProcess.run(
                ["map-app", "--app", "new.contoso.com", "--android", "com.contoso.new"] + flags, in: workspace)
            #expect(output.status != 0, "\(flags)")
            #expect(output.stderr.contains(message), "\(flags): \(output.stderr)")
            #expect(try read(config) == twoApps, "\(flags)")
        }
    }

    @Test("two --ios IDs are written, config check passes, and a second run changes nothing")
    func twoIDsIdempotent() async throws {
        let workspace = try makeWorkspace()
        let config = workspace.appendingPathComponent("hub.yaml")
        try twoApps.write(to: config, atomically: true, encoding: .utf8)
        let arguments = [
            "map-app", "--app", "new.contoso.com", "--name", "New App",
            "--ios", "com.contoso.new", "--ios", "com.contoso.new.beta",
        ]
        let first = try await HubProcess.run(arguments, in: workspace)
        #expect(first.status == 0, "\(first.stderr)")
        let written = try read(config)
        #expect(written.hasPrefix(twoApps), "the existing text must stay as it was")
        #expect(written.contains("com.contoso.new.beta"))
        #expect(written.contains("hub-verify="))
        let check = try await HubProcess.run(["config", "check"], in: workspace)
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stdout.contains("new.contoso.com (New App)"))
        let second = try await HubProcess.run(arguments, in: workspace)
        #expect(second.status == 0)
        #expect(second.stdout.contains("nothing changed"))
        #expect(try read(config) == written)
    }

    @Test("updating one app changes only the intended line and keeps every comment")
    func minimalEdit() async throws {
        let workspace = try makeWorkspace()
        let config = workspace.appendingPathComponent("hub.yaml")
        try twoApps.write(to: config, atomically: true, encoding: .utf8)
        let output = try await HubProcess.run(
            ["map-app", "--app", "notes.contoso.com", "--android", "com.contoso.notes.lite"], in: workspace)
        #expect(output.status == 0, "\(output.stderr)")
        let before = twoApps.split(separator: "\n", omittingEmptySubsequences: false)
        let after = try read(config).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(before.count == after.count)
        let changed = zip(before, after).filter { $0 != $1 }
        #expect(changed.count == 1)
        #expect(changed.first?.1.contains("com.contoso.notes.lite") == true)
        #expect(changed.first?.1.contains("android") == true)
    }

    @Test("--dry-run prints the change and leaves the file alone")
    func dryRun() async throws {
        let workspace = try makeWorkspace()
        let config = workspace.appendingPathComponent("hub.yaml")
        try twoApps.write(to: config, atomically: true, encoding: .utf8)
        let output = try await HubProcess.run(
            ["map-app", "--app", "photos.contoso.com", "--ios", "com.contoso.photos", "--dry-run"], in: workspace)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("+"))
        #expect(output.stdout.contains("com.contoso.photos"))
        #expect(try read(config) == twoApps)
    }

    @Test("a malformed ID and a bad WNS SID are refused with what to fix")
    func badInput() async throws {
        let workspace = try makeWorkspace()
        let output = try await HubProcess.run(
            [
                "map-app", "--app", "a.contoso.com", "--ios", "not a bundle", "--windows", "Contoso.App_8wekyb3d8bbwe",
                "--wns-sid", "s-1-15-2-1", "--wns-secret", "env:WNS_SECRET",
            ],
            in: workspace, environment: ["WNS_SECRET": "x"])
        #expect(output.status != 0)
        #expect(output.stderr.contains("'not a bundle' is not a valid iOS bundle ID"))
        #expect(output.stderr.contains("ms-app://s-1-15-2-"))
        #expect(!FileManager.default.fileExists(atPath: workspace.appendingPathComponent("hub.yaml").path))
    }

    @Test("--check-online asks FCM (validate_only) and WNS (a token) at their emulators; a refusal exits 1")
    func checkOnline() async throws {
        let fcm = try await FCMEmulator.start()
        let wns = try await WNSEmulator.start(authority: fcm.authority)
        defer {
            Task {
                try? await fcm.shutdown()
                try? await wns.shutdown()
            }
        }
        try await fcm.register(.primary)
        let sid = "ms-app://s-1-15-2-1234567890-1234567890-1234567890-1234567890-1234567890-1234567890-123456789"
        wns.registerPackage(sid: sid, secret: "package-secret")
        let workspace = try makeWorkspace()
        try FCMTestServiceAccount.primary.serviceAccountJSON(tokenURI: fcm.tokenURI).write(
            to: workspace.appendingPathComponent("emulated-account.json"), atomically: true, encoding: .utf8)
        try fcm.trustRootPEM.write(to: workspace.appendingPathComponent("ca.pem"), atomically: true, encoding: .utf8)
        let environment = [
            "HUB_TRANSPORTS_FCM_SEND_URL": fcm.baseURL,
            "HUB_TRANSPORTS_FCM_TRUST_ROOTS": workspace.appendingPathComponent("ca.pem").path,
            "HUB_TRANSPORTS_WNS_TOKEN_URL": wns.classicTokenURL,
            "HUB_TRANSPORTS_WNS_TRUST_ROOTS": workspace.appendingPathComponent("ca.pem").path,
            "WNS_SECRET": "package-secret",
        ]
        let arguments = [
            "map-app", "--app", "notes.contoso.com", "--android", "com.contoso.notes", "--windows",
            "Contoso.Notes_8wekyb3d8bbwe", "--fcm-service-account", "emulated-account.json", "--wns-sid", sid,
            "--wns-secret", "env:WNS_SECRET", "--check-online",
        ]
        let good = try await HubProcess.run(arguments, in: workspace, environment: environment)
        #expect(good.status == 0, "\(good.stderr)")
        #expect(good.stdout.contains("fcm: the credentials (service account"), "\(good.stdout)")
        #expect(good.stdout.contains("wns: the credentials (package SID) check out with the provider"))
        #expect(fcm.messages.isEmpty || fcm.messages.allSatisfy(\.validateOnly), "validate_only delivers nothing")
        #expect(!good.stdout.contains("package-secret") && !good.stderr.contains("package-secret"))

        // The wrong WNS secret and an account the FCM emulator does not know: both named, nothing written.
        try? FileManager.default.removeItem(at: workspace.appendingPathComponent("hub.yaml"))
        try FCMTestServiceAccount.secondary.serviceAccountJSON(tokenURI: fcm.tokenURI).write(
            to: workspace.appendingPathComponent("emulated-account.json"), atomically: true, encoding: .utf8)
        var wrong = environment
        wrong["WNS_SECRET"] = "not-the-secret"
        let refused = try await HubProcess.run(arguments, in: workspace, environment: wrong)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("credentials.fcm: FCM refused the service account"), "\(refused.stderr)")
        #expect(refused.stderr.contains("credentials.wns: WNS refused the credentials"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("not-the-secret"))
        #expect(!FileManager.default.fileExists(atPath: workspace.appendingPathComponent("hub.yaml").path))
    }

    @Test("credentials are checked by signing: the .p8 with ES256 and the service account with RS256")
    func credentials() async throws {
        let workspace = try makeWorkspace()
        let good = try await HubProcess.run(
            [
                "map-app", "--app", "notes.contoso.com", "--ios", "com.contoso.notes", "--android", "com.contoso.notes",
                "--apns-key", "AuthKey_TEST123456.p8", "--apns-key-id", "TEST123456", "--apns-team-id", "ABCDE12345",
                "--fcm-service-account", "service-account.json", "--windows", "Contoso.Notes_8wekyb3d8bbwe",
                "--wns-sid", "ms-app://s-1-15-2-12-34", "--wns-secret", "env:WNS_SECRET",
            ],
            in: workspace, environment: ["WNS_SECRET": "wns-secret-value"])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(good.stdout.contains("apns: the credentials (token (.p8), production"), "\(good.stdout)")
        #expect(good.stdout.contains("fcm: the credentials (service account"), "\(good.stdout)")
        let yaml = try read(workspace.appendingPathComponent("hub.yaml"))
        #expect(yaml.contains("privateKey: file:AuthKey_TEST123456.p8"))
        #expect(yaml.contains("serviceAccount: file:service-account.json"))
        #expect(!yaml.contains("wns-secret-value"))
        let check = try await HubProcess.run(["config", "check"], in: workspace, environment: ["WNS_SECRET": "v"])
        #expect(check.status == 0, "\(check.stderr)")

        let wrongCurve = try await HubProcess.run(
            [
                "map-app", "--app", "b.contoso.com", "--ios", "com.contoso.b", "--apns-key", "AuthKey_P384.p8",
                "--apns-key-id", "TEST123456", "--apns-team-id", "ABCDE12345",
            ], in: workspace)
        #expect(wrongCurve.status != 0)
        #expect(wrongCurve.stderr.contains("P-256"))
    }

    @Test("interactive answers are validated as typed: a bad bundle ID is re-asked, an 11th ID refused")
    func interactive() async throws {
        let workspace = try makeWorkspace()
        let ids = (1...11).map { "com.contoso.i\($0)" }
        let answers =
            ["chat.contoso.com", "Contoso Chat", "ios", "bad id!"] + ids + [
                "", "", "", "y",
            ]
        let output = try await HubProcess.run(
            ["map-app", "--interactive"], in: workspace, input: answers.joined(separator: "\n") + "\n")
        #expect(output.status == 0, "\(output.stderr)\n\(output.stdout)")
        #expect(output.stdout.contains("✗ 'bad id!' is not a valid iOS bundle ID"))
        #expect(output.stdout.contains("'com.contoso.i11' not added: the limit of 10 ios app IDs is reached"))
        let yaml = try read(workspace.appendingPathComponent("hub.yaml"))
        #expect(yaml.contains("com.contoso.i10"))
        #expect(!yaml.contains("com.contoso.i11"))
        #expect(try await HubProcess.run(["config", "check"], in: workspace).status == 0)
    }

    @Test("interactive: declining the save writes nothing")
    func interactiveDecline() async throws {
        let workspace = try makeWorkspace()
        let answers = ["chat.contoso.com", "", "android", "com.contoso.chat", "", "", "", "", "n"]
        let output = try await HubProcess.run(
            ["map-app", "--interactive"], in: workspace, input: answers.joined(separator: "\n") + "\n")
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("Not saved."))
        #expect(!FileManager.default.fileExists(atPath: workspace.appendingPathComponent("hub.yaml").path))
    }

    @Test("list shows the apps; remove-id removes an ID")
    func listAndRemove() async throws {
        let workspace = try makeWorkspace()
        let config = workspace.appendingPathComponent("hub.yaml")
        try twoApps.write(to: config, atomically: true, encoding: .utf8)
        let list = try await HubProcess.run(["map-app", "list"], in: workspace)
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains("notes.contoso.com\tContoso Notes\tios 1, android 1"))
        #expect(list.stdout.contains("photos.contoso.com"))
        let remove = try await HubProcess.run(
            ["map-app", "remove-id", "--app", "notes.contoso.com", "--ios", "com.contoso.notes"], in: workspace)
        #expect(remove.status == 0, "\(remove.stderr)")
        let yaml = try read(config)
        #expect(!yaml.contains("ios: { appIds: [com.contoso.notes] }"))
        #expect(yaml.contains("# Photos, the second app"))
        let missing = try await HubProcess.run(
            ["map-app", "remove-id", "--app", "notes.contoso.com", "--android", "com.contoso.other"], in: workspace)
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("not mapped"))
    }
}
