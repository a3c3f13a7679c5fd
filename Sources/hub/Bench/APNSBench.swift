import ArgumentParser

// Replaced by the apns transport work; until then the command says it is not built.
struct APNSBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns", abstract: "Not built yet.", shouldDisplay: false)

    func run() async throws {
        throw ValidationError("'apns' is not built into this hub yet")
    }
}
