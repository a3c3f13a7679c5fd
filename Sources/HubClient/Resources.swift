import Foundation

// The JSON shapes of the hub's device API (openapi.yaml): camelCase keys, ISO 8601 UTC times with
// or without fractional seconds, unknown keys ignored so a newer hub never breaks this client.

enum HubJSON {
    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = date(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "'\(text)' is not an ISO 8601 date-time")
            }
            return date
        }
        return decoder
    }

    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.formatted(fractional))
        }
        return encoder
    }

    private static let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// Parses `2025-01-31T12:00:00.000Z`, with or without fractions, `Z` or an offset.
    static func date(_ text: String) -> Date? {
        (try? fractional.parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text))
    }
}

/// A notification as the hub sends it.
struct NotificationResource: Codable, Sendable, Hashable {
    struct Payload: Codable, Sendable, Hashable {
        var rawContent: String?
        var visualContent: VisualContent?
    }
    struct Target: Codable, Sendable, Hashable {
        var platformTypes: [Platform]?
    }

    var id: String
    var appNotificationId: String
    var groupName: String?
    var priority: NotificationPriority
    var payload: Payload
    var targetPolicy: Target?
    var displayTimeToLive: Int?
    var expirationDateTime: Date
    var createdDateTime: Date
    var lastModifiedDateTime: Date
    var readState: ReadState
    var userActionState: UserActionState
    var status: NotificationStatus
    var changeVersion: Int64
}

struct NotificationList: Decodable, Sendable {
    var notifications: [NotificationResource]
}

/// One page of the feed.
struct FeedPageResource: Decodable, Sendable {
    var changes: [NotificationResource]
    var cursor: String
    var hasMore: Bool
}

struct EndpointList: Decodable, Sendable {
    var endpoints: [Endpoint]
}

/// The body of `PATCH …/me/notifications/{id}`.
struct StateChangeBody: Encodable, Sendable {
    var readState: ReadState?
    var userActionState: UserActionState?
}

/// The body of `PUT …/me/endpoints/{id}`.
struct RegistrationBody: Encodable, Sendable {
    var platform: Platform
    var appId: String
    var transport: TransportID
    var token: String?
    var environment: APNSEnvironment?
    var appDisplayName: String?
}
