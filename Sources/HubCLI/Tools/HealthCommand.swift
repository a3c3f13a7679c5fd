import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore

/// `hub health`: exit 0 when the hub answers GET /readyz with 200, else 1 (container health checks).
struct HealthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Ask a running hub whether it is ready (GET /readyz): exit 0 if so, 1 if not.",
        discussion: """
            For container and orchestrator health checks, such as the Dockerfile's \
            HEALTHCHECK CMD ["hub", "health", "--url", "http://127.0.0.1:8080"]. Prints one line saying why on failure.
            """)

    @Option(help: "The hub's base URL.") var url = "http://127.0.0.1:8080"
    @Option(help: "Seconds to wait for the answer.") var timeout = 3

    func run() async throws {
        let base = url.hasSuffix("/") ? String(url.dropLast()) : url
        var request = HTTPClientRequest(url: base + "/readyz")
        request.method = .GET
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(Int64(timeout)))
            let body = String(buffer: try await response.body.collect(upTo: 64 * 1024))
            guard response.status == .ok else {
                printError("not ready: \(base)/readyz answered \(response.status.code) \(body.prefix(300))")
                throw ExitCode(1)
            }
            print("ready: \(base)")
        } catch let exit as ExitCode {
            throw exit
        } catch {
            printError("not ready: \(base)/readyz could not be reached: \(error)")
            throw ExitCode(1)
        }
    }
}
