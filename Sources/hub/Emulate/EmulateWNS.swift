import ArgumentParser

// Replaced by the wns transport work; until then the command says it is not built.
struct EmulateWNS: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wns", abstract: "Not built yet.", shouldDisplay: false)

    func run() async throws {
        throw ValidationError("'wns' is not built into this hub yet")
    }
}
