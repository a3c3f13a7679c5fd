import ArgumentParser
import HubConfig
import NIOCore
import NIOPosix

/// Checks before anything starts that `server.listen` can be bound, so a busy port is reported as
/// the hub.yaml key to change instead of a socket error after the dispatcher has started.
enum ListenCheck {
    static func ensureAvailable(_ file: HubFile) async throws {
        var addresses = [("listen", ListenAddress(host: file.server.host, port: file.server.port))]
        if let metrics = file.server.metricsListen { addresses.append(("metricsListen", metrics)) }
        for (key, address) in addresses where address.port != 0 {
            do {
                let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                    .bind(host: address.host, port: address.port).get()
                try await channel.close()
            } catch {
                printError(
                    "\(file.path): server.\(key): \(message(for: error, host: address.host, port: address.port, key: key))"
                )
                throw ExitCode(1)
            }
        }
    }

    static func message(for error: any Error, host: String, port: Int, key: String = "listen") -> String {
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let change =
            "change server.\(key) in hub.yaml (or set \(key == "listen" ? "HUB_SERVER_LISTEN" : "HUB_SERVER_METRICS_LISTEN"))"
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
