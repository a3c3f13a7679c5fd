public import HubCore
import HubEmulatorKit

extension FCMPlugin {
    /// `hub map-app --fcm-service-account service-account.json`, and the wizard's FCM question for an
    /// app that maps Android; its emulator is `hub emulate fcm` (``FCMEmulator``, Emulator/).
    public var onboarding: TransportOnboarding? {
        TransportOnboarding(
            fields: [
                CredentialField(
                    "service-account", prompt: "FCM service-account JSON file", help: "FCM service-account JSON file.",
                    secret: true, input: .file)
            ],
            credentials: { answers in
                try answers.require("service-account")
                return [("serviceAccount", answers["service-account"]!)]
            },
            emulator: .command(FCMEmulatorCommand.self, name: "fcm"))
    }
}
