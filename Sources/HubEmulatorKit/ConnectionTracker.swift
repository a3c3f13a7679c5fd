import NIOCore
import Synchronization

/// Remembers the connections a test server accepted until they close, so that shutting the server
/// down closes them too (``EmulatorHTTPServer`` and ``LocalHTTPSServer``).
final class ConnectionTracker: Sendable {
    private let state = Mutex<(open: [ObjectIdentifier: any Channel], closed: Bool)>(([:], false))

    /// Remembers `channel` until it closes; `false` once shutdown has begun (close it then).
    func track(_ channel: any Channel) -> Bool {
        let id = ObjectIdentifier(channel)
        let accepted = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.open[id] = channel
            return true
        }
        if accepted {
            channel.closeFuture.whenComplete { _ in self.state.withLock { _ = $0.open.removeValue(forKey: id) } }
        }
        return accepted
    }

    /// Refuses new connections, closes the open ones, then the server's `listener` channel.
    /// - Returns: `false` when the listener was closed already (a second shutdown).
    func shutdown(listener: any Channel) async throws -> Bool {
        let open = state.withLock { state in
            state.closed = true
            defer { state.open = [:] }
            return Array(state.open.values)
        }
        for connection in open { try? await connection.close() }
        do {
            try await listener.close()
        } catch ChannelError.alreadyClosed {
            return false
        }
        return true
    }
}
