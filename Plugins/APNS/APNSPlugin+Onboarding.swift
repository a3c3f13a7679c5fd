public import HubCore
import HubEmulatorKit

import struct Foundation.Data
import class Foundation.FileManager

extension APNSPlugin {
    /// `hub map-app --apns-key AuthKey.p8 --apns-key-id … --apns-team-id …` (or `--apns-certificate`
    /// with `--apns-password`), and the wizard's APNs questions for an app that maps iOS; its
    /// emulator is `hub emulate apns` (``APNSEmulator``, Emulator/).
    public var onboarding: TransportOnboarding? {
        let tenCharacters: @Sendable (String) -> String? = { value in
            value.count == 10 && value.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
                ? nil : "must be 10 letters or digits, not '\(value)'"
        }
        return TransportOnboarding(
            fields: [
                CredentialField(
                    "key", prompt: "APNs .p8 key file", help: "APNs .p8 token key file.", secret: true, input: .file
                ) { path in
                    guard let data = FileManager.default.contents(atPath: path) else { return nil }
                    return APNSCredentials.p8Problem(String(decoding: data, as: UTF8.self)).map { "the file \($0)" }
                },
                CredentialField(
                    "key-id", prompt: "APNs key ID", help: "APNs key ID (10 characters).", check: tenCharacters),
                CredentialField(
                    "team-id", prompt: "Apple team ID", help: "APNs team ID (10 characters).", check: tenCharacters),
                CredentialField(
                    "certificate", help: "APNs .p12 certificate file (instead of a .p8 key).", secret: true,
                    input: .file),
                CredentialField("password", help: "Password of the .p12, as env:NAME or file:path.", secret: true),
                CredentialField(
                    "environment", prompt: "APNs environment (production/development)",
                    help: "APNs environment: production or development.", defaultAnswer: "production"
                ) { value in
                    APNSEnvironment.known.map(\.rawValue).contains(value)
                        ? nil : "must be production or development, not '\(value)'"
                },
            ],
            credentials: { answers in
                var entries: [(key: String, value: String)] = []
                if let certificate = answers["certificate"] {
                    if answers["key"] != nil {
                        throw CredentialProblems([
                            "\(answers.flag("key")) and \(answers.flag("certificate")) exclude each other: give one"
                        ])
                    }
                    entries.append(("certificate", certificate))
                    if let password = answers["password"] { entries.append(("password", password)) }
                } else {
                    guard let key = answers["key"] else {
                        throw CredentialProblems([
                            "\(answers.flag("key-id")) and \(answers.flag("team-id")) go with \(answers.flag("key")) <AuthKey.p8> (or give \(answers.flag("certificate")) <cert.p12>)"
                        ])
                    }
                    try answers.require("team-id", "key-id")
                    entries += [("teamId", answers["team-id"]!), ("keyId", answers["key-id"]!), ("privateKey", key)]
                }
                if let environment = answers["environment"] { entries.append(("environment", environment)) }
                return entries
            },
            emulator: .command(APNSEmulatorCommand.self, name: "apns"))
    }
}
