public import HubCore
import HubEmulatorKit

extension UnifiedPushPlugin {
    /// `hub emulate unifiedpush`, a distributor's push server on 127.0.0.1. `hub map-app` asks
    /// nothing for UnifiedPush: an app has no credentials of its own for it (its Web Push VAPID key,
    /// `--webpush-key`, signs the pushes when it has one), and `transports.unifiedpush` is the
    /// hub's, not an app's.
    public var onboarding: TransportOnboarding? {
        TransportOnboarding(emulator: .command(UnifiedPushEmulatorCommand.self, name: "unifiedpush"))
    }
}
