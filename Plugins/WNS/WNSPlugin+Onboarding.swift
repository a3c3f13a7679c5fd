public import HubCore
import HubEmulatorKit

extension WNSPlugin {
    /// `hub map-app --wns-sid ms-app://… --wns-secret env:NAME` (or an Entra ID app with
    /// `--wns-tenant` and `--wns-client-id`), and the wizard's WNS questions for an app that maps
    /// Windows; its emulator is `hub emulate wns` (``WNSEmulator``, Emulator/).
    public var onboarding: TransportOnboarding? {
        TransportOnboarding(
            fields: [
                CredentialField(
                    "sid", prompt: "WNS package SID (ms-app://s-1-15-2-…)",
                    help: "WNS package SID (ms-app://s-1-15-2-…).",
                    check: { WNSCredentials.packageSIDProblem($0) }),
                CredentialField(
                    "secret", prompt: "WNS client secret reference (env:NAME or file:path)",
                    help: "WNS client secret, as env:NAME or file:path.", secret: true),
                CredentialField("tenant", help: "WNS Entra ID tenant."),
                CredentialField("client-id", help: "WNS Entra ID client ID."),
            ],
            credentials: { answers in
                if let sid = answers["sid"] {
                    guard let secret = answers["secret"] else {
                        throw CredentialProblems(["\(answers.flag("secret")) is required with \(answers.flag("sid"))"])
                    }
                    return [("packageSid", sid), ("clientSecret", secret)]
                }
                guard let tenant = answers["tenant"], let client = answers["client-id"], let secret = answers["secret"]
                else {
                    throw CredentialProblems([
                        "WNS needs \(answers.flag("sid")) and \(answers.flag("secret")), or \(answers.flag("tenant")), \(answers.flag("client-id")) and \(answers.flag("secret"))"
                    ])
                }
                return [("tenantId", tenant), ("clientId", client), ("clientSecret", secret)]
            },
            emulator: .command(WNSEmulatorCommand.self, name: "wns"))
    }
}
