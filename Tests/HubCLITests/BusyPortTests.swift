import Foundation
import Testing

@Suite("hub serve on a busy port")
struct BusyPortTests {
    @Test("a port another process listens on is reported as server.listen to change, before anything starts")
    func busyPort() async throws {
        let listener = try Listener()
        defer { listener.close() }
        let workspace = try makeWorkspace()
        try writeServeConfig(in: workspace)
        let config = workspace.appendingPathComponent("hub.yaml")
        try read(config).replacingOccurrences(of: "127.0.0.1:0", with: "127.0.0.1:\(listener.port)")
            .write(to: config, atomically: true, encoding: .utf8)
        let output = try await HubProcess.run(["serve", "--config", "hub.yaml"], in: workspace)
        #expect(output.status == 1)
        #expect(
            output.stderr.contains("server.listen: 127.0.0.1:\(listener.port) is already in use"), "\(output.stderr)")
        #expect(output.stderr.contains("change server.listen in hub.yaml"))
        #expect(!output.stderr.contains("bind(descriptor"))
        #expect(!output.stderr.contains("dispatcher started"), "nothing starts before the check")
        #expect(!output.stderr.contains("store:"), "the store is not opened either")
    }
}

/// A TCP socket listening on 127.0.0.1 on a free port, as another program would.
final class Listener {
    let descriptor: Int32
    let port: Int

    init() throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = descriptor
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard ok else { throw CocoaError(.fileReadUnknown) }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { Glibc.close(descriptor) }
}
