import Foundation

/// The parts of a `messages:send` body the emulator records, after validation.
struct ParsedMessage {
    var token: String?
    var topic: String?
    var data: [String: String] = [:]
    var notification: [String: String] = [:]
    /// Android scalar fields (`priority`, `ttl`, `collapse_key`, …) as sent.
    var android: [String: String] = [:]
    var androidTag: String?
    var validateOnly = false
}

/// Why a body is not a valid FCM v1 message; the text is what Google would answer.
struct MessageProblem: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension FCMEmulator {
    /// Validates a `messages:send` body as FCM does (the checks PROVIDERS.md §2.3 lists).
    static func parse(_ body: [UInt8]) -> Result<ParsedMessage, MessageProblem> {
        do {
            return .success(try validate(body))
        } catch let problem as MessageProblem {
            return .failure(problem)
        } catch {
            return .failure(MessageProblem("Invalid JSON payload received."))
        }
    }

    private static func validate(_ body: [UInt8]) throws -> ParsedMessage {
        guard let root = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw MessageProblem("Invalid JSON payload received. Expected an object.")
        }
        for key in root.keys where !["message", "validate_only", "validateOnly"].contains(key) {
            throw MessageProblem("Invalid JSON payload received. Unknown name \"\(key)\": Cannot find field.")
        }
        guard let message = root["message"] as? [String: Any] else {
            throw MessageProblem("Request contains an invalid argument. 'message' is required.")
        }
        var parsed = ParsedMessage()
        parsed.validateOnly = (root["validate_only"] ?? root["validateOnly"]) as? Bool ?? false
        for key in message.keys where !messageFields.contains(key) {
            throw MessageProblem(
                "Invalid JSON payload received. Unknown name \"\(key)\" at 'message': Cannot find field.")
        }
        let targets = ["token", "topic", "condition"].filter { message[$0] != nil }
        guard targets.count == 1 else {
            throw MessageProblem("Request contains an invalid argument. Exactly one of token, topic or condition.")
        }
        parsed.token = try string(message["token"], "message.token")
        parsed.topic = try string(message["topic"], "message.topic")
        if parsed.token?.isEmpty == true {
            throw MessageProblem("The registration token is not a valid FCM registration token")
        }
        parsed.data = try stringMap(message["data"], at: "message.data")
        if let notification = message["notification"] {
            parsed.notification = try stringMap(notification, at: "message.notification")
        }
        if let android = message["android"] {
            try parseAndroid(android, into: &parsed)
        }
        let size =
            parsed.data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
            + (parsed.notification["title"]?.utf8.count ?? 0) + (parsed.notification["body"]?.utf8.count ?? 0)
        guard size <= payloadLimit else {
            throw MessageProblem("Message is too big (\(size) bytes of data and notification; the limit is 4096).")
        }
        return parsed
    }

    private static func parseAndroid(_ value: Any, into parsed: inout ParsedMessage) throws {
        guard let android = value as? [String: Any] else {
            throw MessageProblem("Invalid value at 'message.android': expected an object.")
        }
        for key in android.keys where !androidFields.contains(key) {
            throw MessageProblem("Invalid JSON payload received. Unknown name \"\(key)\" at 'message.android'.")
        }
        let scalars = [
            "collapse_key", "collapseKey", "priority", "ttl", "restricted_package_name", "restrictedPackageName",
        ]
        for key in scalars {
            if let text = try string(android[key], "message.android.\(key)") { parsed.android[key] = text }
        }
        if let priority = parsed.android["priority"], !["NORMAL", "HIGH", "normal", "high"].contains(priority) {
            throw MessageProblem("Invalid value at 'message.android.priority' (TYPE_ENUM), \"\(priority)\"")
        }
        if let ttl = parsed.android["ttl"] {
            let number = ttl.dropLast()
            guard ttl.hasSuffix("s"), !number.isEmpty, number.allSatisfy({ $0.isNumber || $0 == "." }),
                let seconds = Double(number), seconds >= 0, seconds <= maximumTTL
            else {
                throw MessageProblem(
                    "Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), \"\(ttl)\"")
            }
        }
        if let data = android["data"] { _ = try stringMap(data, at: "message.android.data") }
        if let notification = android["notification"] {
            try parseAndroidNotification(notification, into: &parsed)
        }
    }

    /// `AndroidNotification`: known fields only, texts as strings, `*_loc_args` as lists of strings,
    /// `notification_count` as a whole number.
    private static func parseAndroidNotification(_ value: Any, into parsed: inout ParsedMessage) throws {
        let at = "message.android.notification"
        guard let object = value as? [String: Any] else {
            throw MessageProblem("Invalid value at '\(at)': expected an object.")
        }
        for key in object.keys.sorted() where !androidNotificationFields.contains(key) {
            throw MessageProblem(
                "Invalid JSON payload received. Unknown name \"\(key)\" at '\(at)': Cannot find field.")
        }
        for key in androidNotificationTexts {
            _ = try string(object[key], "\(at).\(key)")
        }
        for key in ["title_loc_args", "titleLocArgs", "body_loc_args", "bodyLocArgs"] {
            guard let item = object[key] else { continue }
            guard let list = item as? [Any] else {
                throw MessageProblem("Invalid value at '\(at).\(key)': expected a list of strings, \(item)")
            }
            for (index, argument) in list.enumerated() where !(argument is String) {
                throw MessageProblem("Invalid value at '\(at).\(key)[\(index)]' (TYPE_STRING), \(argument)")
            }
        }
        for key in ["notification_count", "notificationCount"] {
            guard let item = object[key] else { continue }
            guard let number = item as? NSNumber, number.doubleValue.rounded() == number.doubleValue,
                abs(number.doubleValue) <= 2_147_483_647
            else {
                throw MessageProblem("Invalid value at '\(at).\(key)' (TYPE_INT32), \(item)")
            }
        }
        parsed.androidTag = try string(object["tag"], "\(at).tag")
    }

    private static func string(_ value: Any?, _ field: String) throws -> String? {
        guard let value else { return nil }
        guard let text = value as? String else {
            throw MessageProblem("Invalid value at '\(field)' (TYPE_STRING), \(value)")
        }
        return text
    }

    /// A map whose values must all be strings (FCM's `map<string, string>`), with reserved keys refused.
    private static func stringMap(_ value: Any?, at field: String) throws -> [String: String] {
        guard let value else { return [:] }
        guard let object = value as? [String: Any] else {
            throw MessageProblem("Invalid value at '\(field)': expected an object of strings.")
        }
        var map: [String: String] = [:]
        for (index, (key, item)) in object.sorted(by: { $0.key < $1.key }).enumerated() {
            guard let text = item as? String else {
                throw MessageProblem("Invalid value at '\(field)[\(index)].value' (TYPE_STRING), \(item)")
            }
            if field.hasSuffix(".data"), key == "from" || key == "gcm" || key.lowercased().hasPrefix("google") {
                throw MessageProblem("Invalid data payload key: '\(key)' is reserved.")
            }
            map[key] = text
        }
        return map
    }
}
