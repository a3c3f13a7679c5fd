import Foundation
import HubWire

// The JSON shapes of the hub's device API (openapi.yaml): camelCase keys, ISO 8601 UTC times with
// or without fractional seconds, unknown keys ignored so a newer hub never breaks this client. The
// notification resources and the conventions are HubWire's, shared with the hub.

enum HubJSON {
    static var decoder: JSONDecoder { WireJSON.decoder() }
    static var encoder: JSONEncoder { WireJSON.encoder() }
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
