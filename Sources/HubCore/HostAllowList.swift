import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The address checks every URL the hub posts to on someone's say-so goes through (a Web Push
/// subscription's endpoint, an app's webhook): an allow-list of hosts, and no private, loopback or
/// reserved address unless the list names it exactly. Written once; each policy words its own refusals.
///
/// Entries: `host` (that host on the default port), `host:port` (exactly that host and port),
/// `*.domain` (any host under `domain` on a label boundary, default port) or `*` (any public host).
/// An exact entry also allows a private or loopback host; a wildcard never does. Host names are
/// not resolved: a public name that resolves to a private address is stopped only by the list.
public enum HostAllowList {
    /// Whether `entry` is `host` or `host:port` naming exactly this host and port (`defaultPort`
    /// when the entry gives none).
    /// - Parameters:
    ///   - entry: the allow-list entry.
    ///   - host: the URL's host (``ProviderURL/host``).
    ///   - port: the URL's port, or the scheme's default.
    ///   - defaultPort: the port an entry without one stands for.
    public static func isExact(entry: String, host: String, port: Int, defaultPort: Int = 443) -> Bool {
        let (allowedHost, allowedPort) = ProviderURL.split(entry.lowercased())
        guard !allowedHost.hasPrefix("*."), allowedHost == host else { return false }
        return (allowedPort ?? defaultPort) == port
    }

    /// Whether `entry` is `*.domain` and `host` is under it, `*`, or names `host` itself.
    /// - Parameters:
    ///   - entry: the allow-list entry.
    ///   - host: the URL's host (``ProviderURL/host``).
    public static func isWildcard(entry: String, host: String) -> Bool {
        let lower = entry.lowercased()
        if lower == "*" { return true }
        if lower.hasPrefix("*.") {
            let suffix = String(lower.dropFirst(1))
            return host.hasSuffix(suffix) && host.count > suffix.count
        }
        return ProviderURL.split(lower) == (host, nil)
    }

    /// Why `host` is not a public host, or `nil`: a private, loopback or reserved address, a local
    /// or single-label name. Names are not resolved.
    /// - Parameter host: the URL's host (``ProviderURL/host``).
    /// - Returns: the reason, worded to follow the URL's name ("names a local host (…)").
    public static func privateProblem(host: String) -> String? {
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
        if !host.contains(".") { return "names a single-label host (\(host)); public services have dotted names" }
        return nil
    }

    package static func isPrivate(ipv4 bytes: [UInt8]) -> Bool {
        let (a, b) = (bytes[0], bytes[1])
        return a == 0 || a == 10 || a == 127 || (a == 100 && (64...127).contains(b)) || (a == 169 && b == 254)
            || (a == 172 && (16...31).contains(b)) || (a == 192 && b == 168) || (a == 192 && b == 0 && bytes[2] == 0)
            || (a == 198 && (18...19).contains(b)) || a >= 224
    }

    package static func isPrivate(ipv6 bytes: [UInt8]) -> Bool {
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
