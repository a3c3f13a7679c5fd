import ArgumentParser
import HubConfig
import NIOCore
import NIOPosix

/// Checks before anything starts that `server.listen` can be bound, so a busy port is reported as
/// the hub.yaml key to change instead of a socket error after the dispatcher has started.
enum ListenCheck {
    static func ensureAvailable(_ file: HubFile) async throws {
        let server = file.server
        guard server.port != 0 else { return }
        do {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: server.host, port: server.port).get()
            try await channel.close()
        } catch {
            printError("\(file.path): server.listen: \(message(for: error, host: server.host, port: server.port))")
            throw ExitCode(1)
        }
    }

    static func message(for error: any Error, host: String, port: Int) -> String {
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let change = "change server.listen in hub.yaml (or set HUB_SERVER_LISTEN)"
        switch (error as? IOError)?.errnoCode {
        case EADDRINUSE:
            return "\(address) is already in use by another process (another hub?); stop it, or \(change)"
        case EACCES:
            return "\(address) needs privileges (ports below 1024); \(change) to a port above 1023"
        case EADDRNOTAVAIL:
            return "\(host) is not an address of this machine; \(change)"
        default:
            return "\(address) cannot be listened on (\(error)); \(change)"
        }
    }
}
