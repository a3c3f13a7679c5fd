import Foundation

extension WebPushEmulator {
    /// What the emulator makes of a message's plaintext as a declarative push message (W3C Push
    /// API draft, "declarative push message"; WebKit's Declarative Web Push).
    public enum DeclarativeReading: Sendable, Hashable {
        /// Not JSON with a `web_push` member: a classic message for a service worker.
        case classic
        /// A valid declarative push message.
        case declarative
        /// JSON with `web_push` that fails the checks: a browser would not show it declaratively.
        case invalid(String)
    }

    /// Reads `plaintext` as a declarative push message. The checks, from the parser of the W3C
    /// Push API draft and WebKit's "Meet Declarative Web Push": `web_push` is the integer 8030;
    /// `notification` is an object; its `title` a non-empty string; its `navigate` a string holding
    /// an absolute http(s) URL; `dir`, when given, `auto`, `ltr` or `rtl`; `lang`, `body`, `tag`,
    /// `icon` strings and `silent`, `renotify`, `require_interaction` booleans when given; the
    /// top-level `mutable` a boolean and `app_badge` an integer from 0 when given. (The draft's
    /// parser ignores some wrongly typed optional members; the emulator refuses them, so that the
    /// hub never sends them.)
    public static func readDeclarative(_ plaintext: [UInt8]) -> DeclarativeReading {
        guard case .object(let message)? = try? JSONDecoder().decode(JSONValue.self, from: Data(plaintext)),
            let magic = message["web_push"]
        else { return .classic }
        guard case .number(8030) = magic else { return .invalid("web_push must be the integer 8030") }
        guard case .object(let notification)? = message["notification"] else {
            return .invalid("notification must be an object")
        }
        guard case .string(let title)? = notification["title"], !title.isEmpty else {
            return .invalid("notification.title must be a non-empty string")
        }
        guard case .string(let navigate)? = notification["navigate"], let url = URL(string: navigate),
            let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http", url.host != nil
        else { return .invalid("notification.navigate must be an absolute http(s) URL") }
        if let dir = notification["dir"], !["auto", "ltr", "rtl"].contains(where: { dir == .string($0) }) {
            return .invalid("notification.dir must be auto, ltr or rtl")
        }
        for key in ["lang", "body", "tag", "icon"] {
            if let value = notification[key], case .string = value {
            } else if notification[key] != nil {
                return .invalid("notification.\(key) must be a string")
            }
        }
        for key in ["silent", "renotify", "require_interaction"] {
            if let value = notification[key], case .bool = value {
            } else if notification[key] != nil {
                return .invalid("notification.\(key) must be a boolean")
            }
        }
        if let value = message["mutable"], case .bool = value {
        } else if message["mutable"] != nil {
            return .invalid("mutable must be a boolean")
        }
        if let badge = message["app_badge"] {
            guard case .number(let count) = badge, count >= 0, count == count.rounded() else {
                return .invalid("app_badge must be an integer from 0")
            }
        }
        return .declarative
    }

    /// JSON as read, telling booleans from numbers.
    enum JSONValue: Decodable, Equatable {
        case bool(Bool), number(Double), string(String), array([JSONValue]), object([String: JSONValue]), null

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Double.self) {
                self = .number(value)
            } else if let value = try? container.decode(String.self) {
                self = .string(value)
            } else if let value = try? container.decode([String: JSONValue].self) {
                self = .object(value)
            } else {
                self = .array(try container.decode([JSONValue].self))
            }
        }
    }
}
