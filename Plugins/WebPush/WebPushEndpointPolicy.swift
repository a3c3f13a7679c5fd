import Foundation
import HubCore

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
/// a public name that resolves to a private address is stopped only by the allow-list. The address
/// checks are HubCore's `HostAllowList`, shared with webhooks.
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

    private static func isExact(entry: String, host: String, port: Int) -> Bool {
        HostAllowList.isExact(entry: entry, host: host, port: port)
    }

    private static func isWildcard(entry: String, host: String) -> Bool {
        HostAllowList.isWildcard(entry: entry, host: host)
    }

    /// Why `host` is not a public push service, or `nil`.
    static func privateProblem(host: String) -> String? { HostAllowList.privateProblem(host: host) }
}
