import HubCore

import struct Foundation.Date
import struct Foundation.UUID

/// A refusal: status, Apple's reason, and what exactly was wrong (kept in the record only).
struct APNSEmulatorRejection: Error {
    var status: Int
    var reason: String
    var note: String

    init(_ status: Int, _ reason: String, _ note: String) {
        self.status = status
        self.reason = reason
        self.note = note
    }
}

extension APNSEmulator {
    /// Apple's push types with their topic suffix and payload limit (PROVIDERS.md §1.3).
    static let pushTypes: [String: (suffix: String, limit: Int)] = [
        "alert": ("", 4096), "background": ("", 4096), "voip": (".voip", 5120),
        "complication": (".complication", 4096), "fileprovider": (".pushkit.fileprovider", 4096),
        "liveactivity": (".push-type.liveactivity", 4096), "location": (".location-query", 4096),
        "pushtotalk": (".voip-ptt", 4096), "widgets": (".push-type.widgets", 4096),
        "controls": (".push-type.controls", 4096), "mdm": ("", 4096),
    ]

    /// Judges one request in the order of the type's documentation, records it and says how to answer.
    func evaluate(_ incoming: APNSEmulatorIncoming, on connection: APNSEmulatorConnection) -> APNSEmulatorVerdict {
        let now = configuration.now()
        let apnsID = incoming.first("apns-id") ?? UUID().uuidString.lowercased()
        let path = incoming.first(":path") ?? ""
        let token = path.hasPrefix("/3/device/") ? String(path.dropFirst("/3/device/".count)) : ""
        var verdict = APNSEmulatorVerdict(status: 200, apnsID: apnsID)
        var note: String?
        do throws(APNSEmulatorRejection) {
            let pushType = try checkHeaders(incoming, token: token, now: now)
            let authenticated = try authenticate(incoming, on: connection, now: now)
            verdict.raiseLimit = authenticated.firstValidRequest
            let bundleID = try checkTopic(incoming, pushType: pushType, allowed: authenticated)
            let payloadProblem = Self.payloadProblem(incoming.body, pushType: pushType)
            try state.withLock { state throws(APNSEmulatorRejection) in
                if state.unregisteredAtFirstSend.remove(token) != nil { state.unregistered[token] = now }
                try Self.checkDevice(token, bundleID: bundleID, environment: configuration.environment, state: state)
                if let payloadProblem { throw payloadProblem }
                if let failure = state.takeFailure(for: token) {
                    verdict.status = failure.status
                    verdict.reason = failure.reason
                    verdict.retryAfter = failure.retryAfter
                    verdict.timestamp = failure.status == 410 ? now : nil
                    note = "scripted failure"
                }
                verdict.hold = state.held.contains(token)
                verdict.delay = state.responseDelay
            }
        } catch {
            verdict.status = error.status
            verdict.reason = error.reason
            note = error.note
            if error.reason == "Unregistered" {
                verdict.timestamp = state.withLock { $0.unregistered[token] }
            }
        }
        record(incoming, token: token, connection: connection, verdict: verdict, note: note, at: now)
        return verdict
    }

    /// Method, path, duplicates and the `apns-*` headers; returns the push type.
    private func checkHeaders(
        _ incoming: APNSEmulatorIncoming, token: String, now: Date
    ) throws(APNSEmulatorRejection) -> String {
        guard incoming.first(":method") == "POST" else {
            throw .init(405, "MethodNotAllowed", "only POST is accepted")
        }
        guard (incoming.first(":path") ?? "").hasPrefix("/3/device/") else {
            throw .init(404, "BadPath", "the path must be /3/device/<token>")
        }
        if token.isEmpty { throw .init(400, "MissingDeviceToken", "no token after /3/device/") }
        guard token.utf8.count % 2 == 0, token.utf8.allSatisfy(Self.isHexDigit) else {
            throw .init(400, "BadDeviceToken", "the token is not hex text of whole bytes")
        }
        if let repeated = Self.repeatedName(in: incoming.fields) {
            throw .init(400, "DuplicateHeaders", "'\(repeated)' appears more than once")
        }
        if let id = incoming.first("apns-id"), !Self.isCanonicalUUID(id) {
            throw .init(400, "BadMessageId", "apns-id must be a lowercase UUID")
        }
        guard let pushType = incoming.first("apns-push-type"), Self.pushTypes[pushType] != nil else {
            throw .init(400, "InvalidPushType", "apns-push-type is missing or not one of Apple's push types")
        }
        let priority = incoming.first("apns-priority") ?? "10"
        guard priority == "1" || priority == "5" || priority == "10" else {
            throw .init(400, "BadPriority", "apns-priority must be 1, 5 or 10")
        }
        if pushType == "background" && priority != "5" {
            throw .init(400, "BadPriority", "background pushes must use apns-priority 5 (the default is 10)")
        }
        if let expiration = incoming.first("apns-expiration") {
            let latest = Int64(now.timeIntervalSince1970) + 31 * 86_400
            guard let seconds = Int64(expiration), seconds >= 0, seconds <= latest else {
                throw .init(400, "BadExpirationDate", "apns-expiration must be UNIX seconds, at most 30 days ahead")
            }
        }
        if let collapseID = incoming.first("apns-collapse-id"), collapseID.utf8.count > 64 {
            throw .init(400, "BadCollapseId", "apns-collapse-id is longer than 64 bytes")
        }
        return pushType
    }

    /// `apns-topic` against the push type's suffix and the bundle IDs the credentials may use.
    private func checkTopic(
        _ incoming: APNSEmulatorIncoming, pushType: String, allowed: APNSEmulatorAuthentication
    ) throws(APNSEmulatorRejection) -> String {
        let suffix = Self.pushTypes[pushType]?.suffix ?? ""
        var topic = incoming.first("apns-topic")
        if topic == nil, allowed.isCertificate, allowed.bundleIDs.count == 1 {
            topic = allowed.bundleIDs.first! + suffix
        }
        guard let topic, !topic.isEmpty else {
            throw .init(400, "MissingTopic", "apns-topic is required")
        }
        let bundleID = topic.hasSuffix(suffix) ? String(topic.dropLast(suffix.count)) : topic
        guard topic.hasSuffix(suffix), Self.isWellFormedBundleID(bundleID) else {
            throw .init(400, "BadTopic", "'\(topic)' is not a bundle ID followed by '\(suffix)' for \(pushType) pushes")
        }
        if allowed.bundleIDs.contains(bundleID) { return bundleID }
        let otherType = Self.pushTypes.values.contains { other in
            !other.suffix.isEmpty && topic.hasSuffix(other.suffix)
                && allowed.bundleIDs.contains(String(topic.dropLast(other.suffix.count)))
        }
        if otherType {
            throw .init(400, "BadTopic", "'\(topic)' is the topic of another push type than \(pushType)")
        }
        throw .init(400, "TopicDisallowed", "'\(bundleID)' is not registered for these credentials")
    }

    /// Dead, foreign-environment and foreign-app tokens.
    private static func checkDevice(
        _ token: String, bundleID: String, environment: APNSEnvironment, state: APNSEmulatorState
    ) throws(APNSEmulatorRejection) {
        if state.unregistered[token] != nil {
            throw .init(410, "Unregistered", "the token was marked unregistered")
        }
        guard let device = state.devices[token] else { return }
        if device.environment != environment {
            throw .init(400, "BadDeviceToken", "the token belongs to the \(device.environment) environment")
        }
        if device.bundleID != bundleID {
            throw .init(400, "DeviceTokenNotForTopic", "the token belongs to \(device.bundleID)")
        }
    }

    /// Counts the request and, when something wants it (``requests``, ``Configuration/onRequest``,
    /// ``Configuration/onRefusal``), keeps it as a ``Request``.
    private func record(
        _ incoming: APNSEmulatorIncoming, token: String, connection: APNSEmulatorConnection,
        verdict: APNSEmulatorVerdict, note: String?, at now: Date
    ) {
        let onRefusal = verdict.status == 200 ? nil : configuration.onRefusal
        var request: Request?
        if configuration.recordsRequests || configuration.onRequest != nil || onRefusal != nil {
            request = Request(
                connectionID: connection.id, deviceToken: token,
                headers: Dictionary(
                    incoming.fields.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first }),
                payload: incoming.body, status: verdict.status, reason: verdict.reason, note: note, receivedAt: now,
                unindexedHeaders: incoming.unindexed)
        }
        state.withLock { state in
            state.requestCount += 1
            state.statusCounts[verdict.status, default: 0] += 1
            if state.recording, let request { state.records.append(request) }
        }
        guard let request else { return }
        configuration.onRequest?(request)
        onRefusal?(request)
    }

    /// The first header name that appears twice. Requests carry a dozen fields, so comparing pairs
    /// beats building a set; long lists still get one.
    static func repeatedName(in fields: [(name: String, value: String)]) -> String? {
        guard fields.count <= 32 else {
            var seen = Set<String>()
            return fields.first { !seen.insert($0.name).inserted }?.name
        }
        for index in fields.indices.dropFirst() {
            let name = fields[index].name
            if fields[..<index].contains(where: { $0.name == name }) { return name }
        }
        return nil
    }

    /// Two or more non-empty labels separated by dots, of ASCII letters, digits and `-`.
    static func isWellFormedBundleID(_ bundleID: String) -> Bool {
        var labels = 1
        var labelLength = 0
        for byte in bundleID.utf8 {
            switch byte {
            case UInt8(ascii: "."):
                guard labelLength > 0 else { return false }
                labels += 1
                labelLength = 0
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                labelLength += 1
            default:
                return false
            }
        }
        return labels >= 2 && labelLength > 0
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }

    static func isCanonicalUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(index) {
                guard byte == UInt8(ascii: "-") else { return false }
            } else if !((0x30...0x39).contains(byte) || (0x61...0x66).contains(byte)) {
                return false
            }
        }
        return true
    }
}
