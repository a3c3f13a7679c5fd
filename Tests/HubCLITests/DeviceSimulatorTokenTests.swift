import Foundation
import Testing

@testable import device_simulator

@Suite("device-simulator: development tokens")
struct DeviceSimulatorTokenTests {
    /// An HS256 token whose signature was computed independently (Python's hmac and hashlib).
    static let expected =
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
        + "eyJhdWQiOiJub3RpZmljYXRpb25odWIiLCJleHAiOjE3MDAwMDM2MDAsImlhdCI6MTcwMDAwMDAwMCwiaXNzIjoiY29udG9zby1ub3RlcyIs"
        + "InN1YiI6ImFsaWNlIn0.UdgqHaSpve5ChnSMHC21dV6FWclK9jwkgE-XtgAtkbk"

    @Test("signs with HMAC-SHA256 of the secret file's bytes, without its final line break")
    func signed() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try "dev-secret\n".write(to: file, atomically: true, encoding: .utf8)
        let token = try DevelopmentToken(
            secretFile: file.path, issuer: "contoso-notes", audience: "notificationhub", user: "alice")
        #expect(try token.signed(now: Date(timeIntervalSince1970: 1_700_000_000)) == Self.expected)
    }

    @Test("a secret longer than a SHA-256 block is hashed first, as HMAC requires")
    func longSecret() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try String(repeating: "k", count: 100).write(to: file, atomically: true, encoding: .utf8)
        let token = try DevelopmentToken(
            secretFile: file.path, issuer: "contoso-notes", audience: "notificationhub", user: "alice")
        let signature = try token.signed(now: Date(timeIntervalSince1970: 1_700_000_000)).split(separator: ".").last
        #expect(signature == "22hCoZTtQVb4H8wEYpJdeALDa8SqqTeAIObpNbiFJQM")
    }
}
