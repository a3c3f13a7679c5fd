import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix

/// Whether an AsyncHTTPClient request failed because its host was never reached: its name did
/// not resolve, or connecting failed or timed out. Such a failure says nothing about the request
/// and everything about the host, so a transport reports it (``HubCore/ProviderReply/unreachable``)
/// and the dispatcher backs off the host instead of letting every send to it wait.
public enum ConnectionFailure {
    /// What kept the request from reaching its host, or `nil` when the host was reached (or the
    /// error does not say): a provider's answer, a request that timed out on an open connection,
    /// TLS failures and cancellation are not counted.
    public static func unreachable(_ error: any Error) -> String? {
        if let error = error as? NIOConnectionError {
            if error.dnsAError != nil || error.dnsAAAAError != nil, error.connectionErrors.isEmpty {
                return "the name \(error.host) did not resolve"
            }
            let reasons = error.connectionErrors.map { "\($0.target): \($0.error)" }.joined(separator: "; ")
            return "connecting to \(error.host):\(error.port) failed (\(reasons.isEmpty ? "no address" : reasons))"
        }
        if let error = error as? HTTPClientError, error == .connectTimeout {
            return "connecting timed out"
        }
        if let error = error as? ChannelError, case .connectTimeout = error {
            return "connecting timed out"
        }
        if let error = error as? IOError,
            [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, ETIMEDOUT, EHOSTDOWN].contains(error.errnoCode)
        {
            return "connecting failed: \(error)"
        }
        if error is SocketAddressError { return "the host name did not resolve: \(error)" }
        return nil
    }
}
