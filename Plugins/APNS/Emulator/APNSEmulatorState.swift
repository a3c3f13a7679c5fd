import HubCore
import NIOCore
import NIOHTTP2
import Synchronization

import struct Foundation.Date

/// What the emulator knows and has seen, guarded by its lock.
struct APNSEmulatorState {
    struct RegisteredKey {
        var teamID: String
        var publicKeyPEM: String
        var environment: APNSEnvironment?
    }

    struct Device {
        var bundleID: String
        var environment: APNSEnvironment
    }

    /// A scripted answer for the next `remaining` matching requests.
    struct Failure {
        var status: Int
        var reason: String
        var retryAfter: String?
        var remaining: Int
        var token: String?
    }

    var keys: [String: RegisteredKey] = [:]
    var teamBundles: [String: Set<String>] = [:]
    var devices: [String: Device] = [:]
    /// Tokens that answer `410 Unregistered` from this time on, with it as the timestamp.
    var unregistered: [String: Date] = [:]
    /// Tokens that become unregistered at their first valid request (see `markUnregisteredFromFirstSend`).
    var unregisteredAtFirstSend: Set<String> = []
    var failures: [Failure] = []
    var held: Set<String> = []
    var responseDelay: Duration?
    var maxConcurrentStreams: Int
    var recording: Bool
    var records: [APNSEmulator.Request] = []
    var connections: [Int: APNSEmulatorConnection] = [:]
    var nextConnectionID = 0
    var connectionsAccepted = 0
    var requestCount = 0
    var pingsReceived = 0
    var statusCounts: [Int: Int] = [:]
    var isShutDown = false

    init(configuration: APNSEmulator.Configuration) {
        maxConcurrentStreams = configuration.maxConcurrentStreams
        recording = configuration.recordsRequests
    }

    /// Takes the first scripted failure that matches `token`, counting it down.
    mutating func takeFailure(for token: String) -> Failure? {
        guard let index = failures.firstIndex(where: { $0.token == nil || $0.token == token }) else { return nil }
        let failure = failures[index]
        failures[index].remaining -= 1
        if failures[index].remaining <= 0 { failures.remove(at: index) }
        return failure
    }
}

/// One accepted connection: its authentication state and stream counts. Touched from its own
/// event loop (streams, requests) and from knobs, hence the lock.
final class APNSEmulatorConnection: Sendable {
    struct Verified {
        var keyID: String
        var teamID: String
        var issuedAt: Date
    }

    struct State {
        /// Team and key of the first valid token; later tokens must match.
        var pinnedTeam: String?
        var pinnedKey: String?
        /// The token in use and since when (emulator clock), for the 20-minute rule.
        var currentToken: String?
        var tokenSince: Date?
        /// Tokens whose signature verified on this connection (verified once, then looked up).
        var verified: [String: Verified] = [:]
        /// Whether the limit was raised after the first valid request.
        var raisedLimit = false
        var activeStreams = 0
        var maxActiveStreams = 0
        var highestStreamID = 0
        var goingAway = false
        /// The client certificate's bundle IDs, once read (`[]` when there is none).
        var certificateBundleIDs: [String]?
        var isClosed = false
    }

    let id: Int
    /// The connection's channel; `nil` only for connections made up by unit tests.
    let channel: (any Channel)?
    let state = Mutex(State())

    init(id: Int, channel: (any Channel)?) {
        self.id = id
        self.channel = channel
        channel?.closeFuture.whenComplete { [weak self] _ in self?.state.withLock { $0.isClosed = true } }
    }

    func streamCreated(_ id: HTTP2StreamID) {
        state.withLock { state in
            state.activeStreams += 1
            state.maxActiveStreams = max(state.maxActiveStreams, state.activeStreams)
            state.highestStreamID = max(state.highestStreamID, Int(Int32(id)))
        }
    }

    func streamClosed(_ id: HTTP2StreamID) {
        let closeNow = state.withLock { state in
            state.activeStreams -= 1
            return state.goingAway && state.activeStreams == 0
        }
        // After the current write is flushed: closing inside it would drop the last answer.
        if closeNow, let parent = self.channel { parent.eventLoop.execute { parent.close(promise: nil) } }
    }
}
