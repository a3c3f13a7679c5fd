import ArgumentParser
import Foundation
import HubCore
import HubEmulatorKit

/// `hub emulate wns`: WNS's classic and Entra ID token endpoints and channel endpoints on 127.0.0.1,
/// enforcing what WNS enforces, with channels ready for devices.
struct WNSEmulatorCommand: EmulatorCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub emulate wns",
        abstract: "Run a WNS emulator (token endpoints and channel URIs) on 127.0.0.1.",
        discussion: """
            Registers one Store app (package SID and secret) and one Entra ID app, creates channels for \
            the Store app, writes the emulator's CA certificate, prints how to point the hub at it, then \
            prints every notification it accepts until interrupted (Ctrl-C).
            """)

    @Option(help: "Port on 127.0.0.1; 0 picks a free one.") var port = 0
    @Option(help: "Folder for ca.pem.") var directory = ".hub-emulator/wns"
    @Option(help: "The package SID of the emulated Store app.")
    var packageSid = "ms-app://s-1-15-2-1111111111-2222222222-3333333333-4444444444-5555555555-6666666666-777777777"
    @Option(help: "The client secret of the emulated apps; a random one by default.") var clientSecret: String?
    @Option(help: "The tenant ID of the emulated Entra ID app.") var tenantId = "emulated-tenant"
    @Option(help: "The client ID of the emulated Entra ID app.") var clientId = "00000000-0000-4000-8000-00000000e001"
    @Option(help: "Channels to create for the Store app.") var channels = 3

    func run(in context: EmulatorContext) async throws {
        let emulator = try await WNSEmulator.start(port: port)
        let secret = clientSecret ?? UUID().uuidString.lowercased()
        emulator.registerPackage(sid: packageSid, secret: secret)
        emulator.registerEntraApp(tenantID: tenantId, clientID: clientId, secret: secret)
        let uris = (0..<max(channels, 0)).map { _ in emulator.makeChannel(forApp: packageSid) }

        let folder = URL(fileURLWithPath: directory, isDirectory: true).standardizedFileURL
        try EmulatorFiles.createDirectory(folder)
        let caPath = folder.appendingPathComponent("ca.pem").path
        try emulator.authority.writeCertificatePEM(to: caPath)
        try EmulatorFiles.restrict(caPath)

        let banner =
            ("""
            WNS emulator on \(emulator.baseURL) (HTTP/1.1)
              classic token    \(emulator.classicTokenURL)   package SID \(packageSid)
              Entra ID token   \(emulator.entraAuthority)/\(tenantId)/oauth2/v2.0/token   client ID \(clientId)
              client secret    \(secret) (both apps; an emulator value, not a real secret)
              CA certificate   \(caPath)
              channel URIs for the Store app (register them as Windows endpoints):
            \(uris.map { "    \($0)" }.joined(separator: "\n"))

            Point a hub at it: in hub.yaml, give the app
                credentials: { wns: { packageSid: "\(packageSid)", clientSecret: env:WNS_SECRET } }
            and start it with
                WNS_SECRET=\(secret) HUB_TRANSPORTS_WNS_TOKEN_URL=\(emulator.classicTokenURL) \\
                HUB_TRANSPORTS_WNS_ENTRA_AUTHORITY=\(emulator.entraAuthority) HUB_TRANSPORTS_WNS_ALLOWED_HOSTS=\(emulator.host) \\
                HUB_TRANSPORTS_WNS_TRUST_ROOTS=\(caPath) hub serve --config hub.yaml

            Accepted notifications follow (Ctrl-C or SIGTERM stops the emulator).
            """)
        try await EmulatorConsole.printUntilTerminated(banner: banner, { emulator.received }) { notification in
            "accepted \(notification.type) on channel \(notification.channelID) ttl \(notification.timeToLive ?? "-") "
                + "cache \(notification.cachePolicy ?? "-") tag \(notification.tag ?? "-"): \(notification.text.prefix(120))"
        }
        try await emulator.shutdown()
    }
}
