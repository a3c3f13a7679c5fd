import Foundation
import HubCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Which push-service URLs the hub posts to. A subscription comes from a browser (and so from
/// whoever controls the page), so its endpoint is checked before the hub sends anything there:
/// otherwise a crafted subscription would make the hub POST to its own network (SSRF).
///
/// A URL is accepted when, after parsing:
/// - the scheme is `https`, there is no user information, and nothing in it is whitespace or a
///   control character;
/// - the host is not `localhost` (or `*.localhost`), a single-label name, nor an IP literal in a
///   private, loopback, link-local, shared, multicast or unspecified range (IPv4 in any form
///   `inet_aton` reads, such as `0x7f.1`; IPv6 including IPv4-mapped addresses), and the port is the
///   default (none or 443); and
/// - the host matches an entry of ``allowedHosts``, by default the push services of the major
///   browsers (``wellKnownServices``).
///
/// Entries of ``allowedHosts``: `host` (that host on the default port), `host:port` (exactly that
/// host and port), `*.domain` (any host under `domain` on a label boundary, default port) or `*`
/// (any public host). An exact entry also allows a private or loopback host: that is how tests and
/// `hub emulate webpush` reach the emulator on `127.0.0.1:<port>`. A wildcard never does.
///
/// The transport checks at registration and again before every send. Host names are not resolved:
/// a public name that resolves to a private address is stopped only by the allow-list.
public struct WebPushEndpointPolicy: Sendable, Hashable {
    /// The push services of the major browsers: Chrome and the Chromium family (FCM), Firefox
    /// (autopush), Edge (WNS) and Safari (Apple). The default allow-list.
    public static let wellKnownServices = [
        "fcm.googleapis.com", "*.push.services.mozilla.com", "*.notify.windows.com", "*.push.apple.com",
    ]

    /// The push services allowed; `*` allows any public https host.
    public var allowedHosts: [String]

    public init(allowedHosts: [String] = Self.wellKnownServices) {
        self.allowedHosts = allowedHosts
    }

    /// Why the hub must not post to `url`, or `nil` when it may. The text names the host but never
    /// repeats the URL (its path is the subscription's secret-ish identifier).
    public func problem(with url: String) -> String? {
        let checked: ProviderURL
        do {
            checked = try ProviderURL(
                checking: url, notAURL: "is not a URL; give the subscription's endpoint exactly as the browser gave it")
        } catch {
            return error.message
        }
        let host = checked.host
        let port = checked.port ?? 443
        if allowedHosts.contains(where: { Self.isExact(entry: $0, host: host, port: port) }) { return nil }
        if let problem = Self.privateProblem(host: host) { return problem }
        guard port == 443 else { return "must use the default https port; port \(port) is not allowed" }
        if !allowedHosts.contains(where: { Self.isWildcard(entry: $0, host: host) }) {
            return
                "names the push service '\(host)', which is not on this hub's allow-list (transports.webpush.allowedHosts)"
        }
        return nil
    }

    /// Whether an entry of ``allowedHosts`` names `host` on `port`, by the same entry rules, without
    /// the address checks of ``problem(with:)``: for lists of hosts that are not an allow-list
    /// (``WebPushConfiguration/declarativeHosts``).
    func names(host: String, port: Int) -> Bool {
        allowedHosts.contains { Self.isExact(entry: $0, host: host, port: port) }
            || (port == 443 && allowedHosts.contains { Self.isWildcard(entry: $0, host: host) })
    }

    /// Whether `entry` is `host` or `host:port` naming exactly this host and port.
    private static func isExact(entry: String, host: String, port: Int) -> Bool {
        let (allowedHost, allowedPort) = ProviderURL.split(entry.lowercased())
        guard !allowedHost.hasPrefix("*."), allowedHost == host else { return false }
        return (allowedPort ?? 443) == port
    }

    /// Whether `entry` is `*.domain` and `host` is under it (or `entry` names `host` itself).
    private static func isWildcard(entry: String, host: String) -> Bool {
        let lower = entry.lowercased()
        if lower == "*" { return true }
        if lower.hasPrefix("*.") {
            let suffix = String(lower.dropFirst(1))
            return host.hasSuffix(suffix) && host.count > suffix.count
        }
        return ProviderURL.split(lower) == (host, nil)
    }

    /// Why `host` is not a public push service, or `nil`.
    static func privateProblem(host: String) -> String? {
        if host.hasPrefix("[") {
            let literal = String(host.dropFirst().dropLast())
            var address = in6_addr()
            guard inet_pton(AF_INET6, literal, &address) == 1 else { return "has an unreadable IPv6 address" }
            let bytes = withUnsafeBytes(of: &address) { Array($0) }
            return isPrivate(ipv6: bytes) ? "names a private, loopback or reserved address (\(host))" : nil
        }
        var address = in_addr()
        if inet_aton(host, &address) != 0 {
            let bytes = withUnsafeBytes(of: &address.s_addr) { Array($0) }
            return isPrivate(ipv4: bytes) ? "names a private, loopback or reserved address (\(host))" : nil
        }
        if host == "localhost" || host.hasSuffix(".localhost") || host.hasSuffix(".local")
            || host.hasSuffix(".internal")
        {
            return "names a local host (\(host))"
        }
        if !host.contains(".") { return "names a single-label host (\(host)); push services have public names" }
        return nil
    }

    static func isPrivate(ipv4 bytes: [UInt8]) -> Bool {
        let (a, b) = (bytes[0], bytes[1])
        return a == 0 || a == 10 || a == 127 || (a == 100 && (64...127).contains(b)) || (a == 169 && b == 254)
            || (a == 172 && (16...31).contains(b)) || (a == 192 && b == 168) || (a == 192 && b == 0 && bytes[2] == 0)
            || (a == 198 && (18...19).contains(b)) || a >= 224
    }

    static func isPrivate(ipv6 bytes: [UInt8]) -> Bool {
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return isPrivate(ipv4: Array(bytes[12..<16]))  // ::ffff:a.b.c.d
        }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) { return true }  // :: and ::1
        if bytes[0] & 0xFE == 0xFC { return true }  // fc00::/7 unique local
        if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 { return true }  // fe80::/10 link-local
        if bytes[0] == 0xFF { return true }  // multicast
        // 2001:db8::/32, documentation.
        if bytes[0] == 0x20 && bytes[1] == 0x01 && bytes[2] == 0x0D && bytes[3] == 0xB8 { return true }
        return bytes[0] == 0x00 && bytes[1] == 0x64 && bytes[2] == 0xFF && bytes[3] == 0x9B  // NAT64 64:ff9b::/96
    }
}
