// The emulators for tests and benchmarks, in one import: each lives with its plugin
// (Plugins/<provider>/Emulator, reached by `hub emulate <name>` through the plugin's onboarding),
// the pieces they share in HubEmulatorKit. This module re-exports exactly the emulators' types,
// not the plugins' whole API, and adds the test identity tokens (TestUserClaims).
@_exported import HubEmulatorKit

@_exported import class HubAPNS.APNSEmulator
@_exported import struct HubAPNS.APNSTestKey
@_exported import class HubFCM.FCMEmulator
@_exported import struct HubFCM.FCMTestServiceAccount
@_exported import class HubWNS.WNSEmulator
@_exported import class HubWebPush.WebPushEmulator
@_exported import class HubWebhooks.WebhookEmulator
@_exported import struct HubWebhooks.WebhookEmulatorError
