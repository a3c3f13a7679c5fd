import Foundation
import HubCore
import HubTesting
import Testing

@testable import HubPostgres

@Suite("PostgreSQL URLs with several hosts")
struct FailoverConfigurationTests {
    @Test("Several hosts are kept in order, with their ports, IPv6 in brackets, 5432 by default")
    func parsesHosts() throws {
        let configuration = try PostgresStore.Configuration(
            url: Secret("postgres://hub:s3cret@db1.example:6543,[::1]:5433,db3,[fe80::2]/hub?sslmode=disable"))
        #expect(
            configuration.hosts == [
                .init(host: "db1.example", port: 6543), .init(host: "::1", port: 5433),
                .init(host: "db3", port: 5432), .init(host: "fe80::2", port: 5432),
            ])
        #expect(configuration.host == "db1.example" && configuration.port == 6543)
        #expect(configuration.username == "hub" && configuration.password?.reveal() == "s3cret")
        #expect(configuration.database == "hub" && configuration.tls == .disable)
        // Several hosts: read-write unless told otherwise (the hub writes on every publish).
        #expect(configuration.targetSessionAttributes == .readWrite)
        #expect(configuration.description.contains("db1.example:6543,[::1]:5433,db3:5432,[fe80::2]:5432"))
        #expect(configuration.description.contains("target: read-write"))
        #expect(!configuration.description.contains("s3cret"))
    }

    @Test("target_session_attrs: read-write, primary and any are taken; one host defaults to any")
    func targetSessionAttributes() throws {
        let cases: [(String, PostgresStore.TargetSessionAttributes)] = [
            ("postgres://u@h1,h2/db?target_session_attrs=read-write", .readWrite),
            ("postgres://u@h1,h2/db?target_session_attrs=primary", .primary),
            ("postgres://u@h1,h2/db?target_session_attrs=any", .any),
            ("postgres://u@h1/db", .any),
            ("postgres://u@h1/db?target_session_attrs=read-write", .readWrite),
        ]
        for (text, expected) in cases {
            #expect(try PostgresStore.Configuration(url: Secret(text)).targetSessionAttributes == expected, "\(text)")
        }
    }

    @Test(
        "Bad host lists and read-only targets are refused with what to fix, never the password",
        arguments: [
            ("postgres://u:s3cret@/db", "has no host"),
            ("postgres://u:s3cret@h1,,h3/db", "host 2 of the database URL is empty"),
            ("postgres://u:s3cret@h1,h2:99999/db", "host 2 of the database URL (h2) has port '99999'"),
            ("postgres://u:s3cret@h1:0/db", "host 1 of the database URL (h1) has port '0'"),
            ("postgres://u:s3cret@h1:54x2/db", "has port '54x2'"),
            ("postgres://u:s3cret@h1:/db", "has port ''"),
            ("postgres://u:s3cret@[::1/db", "host 1 of the database URL lacks the ']'"),
            ("postgres://u:s3cret@[::1]5432/db", "use [address]:port"),
            ("postgres://u:s3cret@h1,h2/db?target_session_attrs=standby", "read-only server"),
            ("postgres://u:s3cret@h1,h2/db?target_session_attrs=read-only", "read-only server"),
            ("postgres://u:s3cret@h1,h2/db?target_session_attrs=prefer-standby", "read-only server"),
            ("postgres://u:s3cret@h1,h2/db?target_session_attrs=sometimes", "is not known"),
        ])
    func refusesBadHosts(url: String, message: String) {
        let error = #expect(throws: PostgresStoreError.self) { try PostgresStore.Configuration(url: Secret(url)) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains(message) == true, "\(error.map { "\($0)" } ?? "no error")")
        #expect(error.map { !"\($0)".contains("s3cret") } ?? false)
    }

    @Test("With no host reachable, a call fails at once as unavailable, naming each host and why")
    func namesEveryHostTried() async throws {
        // Nothing listens on ports 1 and 2.
        var configuration = try PostgresStore.Configuration(
            url: Secret("postgres://hub:s3cret@127.0.0.1:1,127.0.0.1:2/hub?sslmode=disable"), poolSize: 2)
        configuration.leaseTimeout = .seconds(2)
        configuration.statisticsInterval = nil
        let store = PostgresStore(configuration: configuration)
        let runner = Task { await store.run() }
        defer { runner.cancel() }
        let start = ContinuousClock.now
        let error = await #expect(throws: HubError.self) { try await store.nextDueDate() }
        #expect(ContinuousClock.now - start < .seconds(2))
        #expect(error?.code == .unavailable)
        let text = error.map { "\($0)" } ?? ""
        #expect(
            text.contains("127.0.0.1:1 could not be reached") && text.contains("127.0.0.1:2 could not be reached"),
            "\(text)")
        #expect(!text.contains("s3cret"))
        // Answered from memory until the next search: still unavailable, still at once.
        let again = await #expect(throws: HubError.self) { try await store.nextDueDate() }
        #expect(again?.code == .unavailable)
    }

    @Test("A host that accepts the connection and then says nothing holds no call")
    func silentHost() async throws {
        let silent = try SilentListener()
        defer { silent.close() }
        var configuration = try PostgresStore.Configuration(
            url: Secret("postgres://hub:s3cret@127.0.0.1:\(silent.port),127.0.0.1:1/hub?sslmode=disable"), poolSize: 2)
        configuration.leaseTimeout = .seconds(1)
        configuration.connectTimeout = .milliseconds(500)
        configuration.statisticsInterval = nil
        let store = PostgresStore(configuration: configuration)
        let runner = Task { await store.run() }
        defer { runner.cancel() }
        let start = ContinuousClock.now
        let first = await #expect(throws: HubError.self) { try await store.nextDueDate() }
        #expect(first?.code == .unavailable)
        #expect(ContinuousClock.now - start < .seconds(3), "the first call waited \(ContinuousClock.now - start)")
        // The search ends on its own (twice the connect timeout per host): later calls name both hosts.
        let named = await eventually(timeout: .seconds(10)) {
            do {
                _ = try await store.nextDueDate()
                return false
            } catch {
                let text = "\(error)"
                return text.contains("127.0.0.1:\(silent.port) ") && text.contains("127.0.0.1:1 ")
            }
        }
        #expect(named)
    }
}

/// A TCP port on loopback whose connections the kernel accepts and nobody ever answers.
final class SilentListener: Sendable {
    let descriptor: Int32
    let port: Int

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && listen(descriptor, 16) == 0
                    && getsockname(descriptor, address, &length) == 0
            }
        }
        guard descriptor >= 0, bound else {
            throw PostgresStoreError(.server, "a loopback listener failed (errno \(errno))")
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { _ = Glibc.close(descriptor) }
}
