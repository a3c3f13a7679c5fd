import Foundation

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
        if channelURI.unicodeScalars.contains(where: {
            $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F
        }) {
            return "must not contain spaces or control characters"
        }
        guard let components = URLComponents(string: channelURI), let scheme = components.scheme else {
            return "is not a URL; give the channel URI exactly as WNS issued it"
        }
        guard scheme.lowercased() == "https" else { return "must be an https URL (it is \(scheme))" }
        guard components.percentEncodedUser == nil, components.percentEncodedPassword == nil else {
            return "must not contain user information"
        }
        guard let encodedHost = components.percentEncodedHost, !encodedHost.isEmpty, !encodedHost.contains("%")
        else { return "has no usable host" }
        let host = encodedHost.lowercased()
        if isAdditional(host: host, port: components.port) { return nil }
        let suffix = "." + Self.wnsDomain
        guard host.hasSuffix(suffix), host.count > suffix.count else {
            return "must be a WNS channel on *.\(Self.wnsDomain); the host '\(host)' is not allowed"
        }
        if let port = components.port, port != 443 {
            return "must use the default https port; port \(port) is not allowed"
        }
        return nil
    }

    /// Whether `host` (lower-cased, as in the URI) and `port` match an entry of ``additionalHosts``.
    private func isAdditional(host: String, port: Int?) -> Bool {
        additionalHosts.contains { entry in
            let (allowedHost, allowedPort) = Self.split(entry.lowercased())
            guard allowedHost == host else { return false }
            guard let allowedPort else { return true }
            return allowedPort == (port ?? 443)
        }
    }

    /// Splits `host[:port]`, keeping an IPv6 literal's brackets as URLComponents does.
    private static func split(_ entry: String) -> (String, Int?) {
        if entry.hasPrefix("["), let close = entry.firstIndex(of: "]") {
            let host = String(entry[...close])
            let rest = entry[entry.index(after: close)...]
            return (host, rest.hasPrefix(":") ? Int(rest.dropFirst()) : nil)
        }
        let parts = entry.split(separator: ":", maxSplits: 1)
        return (String(parts.first ?? ""), parts.count > 1 ? Int(parts[1]) : nil)
    }
}
