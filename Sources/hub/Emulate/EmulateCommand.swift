import ArgumentParser

/// `hub emulate …`: local emulators of the push providers, for development against a hub.
struct EmulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emulate",
        abstract: "Run a local emulator of APNs, FCM or WNS that enforces what the real service enforces.",
        subcommands: [EmulateAPNS.self, EmulateFCM.self, EmulateWNS.self]
    )
}
