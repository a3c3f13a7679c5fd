import ArgumentParser

// Replaced by the fcm transport work; until then the command says it is not built.
struct EmulateFCM: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm", abstract: "Not built yet.", shouldDisplay: false)

    func run() async throws {
        throw ValidationError("'fcm' is not built into this hub yet")
    }
}
