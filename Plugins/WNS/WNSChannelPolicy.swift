import HubCore

/// Which channel URIs the hub posts to. A send carries the app's bearer access token, so a channel
/// URI from a device is trusted only when it names WNS (Microsoft: "always check that the channel
/// URI uses the domain notify.windows.com") or a host the operator allowed.
///
/// A URI is accepted when, after parsing:
/// - the scheme is `https`, there is no user information, and nothing in it is whitespace or a
///   control character; and
/// - the host ends with `.notify.windows.com` on a label boundary (`cloud.notify.windows.com` yes,
///   `evilnotify.windows.com` and `notify.windows.com.evil.example` no) and the port is the default
///   (none or 443); or
/// - the host is in ``additionalHosts``: an entry `host:port` allows exactly that host and port, an
///   entry `host` allows that host on any port. Use it for emulators (`127.0.0.1:8443`, `localhost`),
///   never to loosen the WNS rule.
///
/// The transport checks at registration and again before every send.
public struct WNSChannelPolicy: Sendable, Hashable {
    /// The WNS send domain.
    public static let wnsDomain = "notify.windows.com"

    /// Extra hosts the operator allows, as `host` or `host:port` (IPv6 as `[::1]:8443`).
    public var additionalHosts: [String]

    public init(additionalHosts: [String] = []) {
        self.additionalHosts = additionalHosts
    }

    /// Why `channelURI` must not receive notifications, or `nil` when it may. The text names the host
    /// but never repeats the URI (its query is the device's channel token).
    public func problem(with channelURI: String) -> String? {
        let url: ProviderURL
        do {
            url = try ProviderURL(
                checking: channelURI, notAURL: "is not a URL; give the channel URI exactly as WNS issued it")
        } catch {
            return error.message
        }
        let host = url.host
        if isAdditional(host: host, port: url.port) { return nil }
        let suffix = "." + Self.wnsDomain
        guard host.hasSuffix(suffix), host.count > suffix.count else {
            return "must be a WNS channel on *.\(Self.wnsDomain); the host '\(host)' is not allowed"
        }
        if let port = url.port, port != 443 {
            return "must use the default https port; port \(port) is not allowed"
        }
        return nil
    }

    /// Whether `host` (lower-cased, as in the URI) and `port` match an entry of ``additionalHosts``.
    private func isAdditional(host: String, port: Int?) -> Bool {
        additionalHosts.contains { entry in
            let (allowedHost, allowedPort) = ProviderURL.split(entry.lowercased())
            guard allowedHost == host else { return false }
            guard let allowedPort else { return true }
            return allowedPort == (port ?? 443)
        }
    }
}
