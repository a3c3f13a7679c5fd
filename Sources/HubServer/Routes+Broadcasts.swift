import Foundation
import HubCore
import Hummingbird

extension HubAPI {
    /// Audience routes (`Authorization: Bearer <publisher key>` of the app in the path):
    ///
    /// - `PUT /v1/apps/{app}/users/{userId}/tags` with `{"tags": […]}`: replaces the user's tags
    ///   (at most 64, each an identifier); 200 with the stored tags. `GET` reads them.
    /// - `POST /v1/apps/{app}/broadcasts` with `{"audience": {"allUsers": true} | {"users": […]} |
    ///   {"tags": {"anyOf": […], "allOf": […]}}, …the publish body…}` (`appNotificationId`
    ///   generated when absent): 202 with the broadcast once it is durable, and `Location`.
    /// - `GET /v1/apps/{app}/broadcasts/{id}`: its progress; `GET /v1/apps/{app}/broadcasts`
    ///   (`limit`, `after`): the app's broadcasts, newest first.
    /// - `DELETE /v1/apps/{app}/broadcasts/{id}`: cancels what is not yet published; 200 with the
    ///   broadcast, 409 when it is done.
    func addBroadcastRoutes(to router: HubRouter) {
        let tags = "/v1/apps/:app/users/:userId/tags"
        router.put(RouterPath(tags)) { request, context in
            let app = try publisherApp(request, context)
            let user = try context.pathParameter("userId")
            var request = request
            let body = try await request.jsonObject(maxBytes: configuration.maxBodyBytes)
            var reader = FieldReader()
            let list = reader.strings(body, "tags")
            if list == nil && !reader.hasError(at: "tags") { reader.fail("tags", "is required") }
            if !reader.errors.isEmpty { throw HubError.invalid(reader.errors) }
            let stored = try await hub.replaceTags(app: app.id, user: user, tags: (list ?? []).map { $0 ?? "" })
            return try JSON.response(TagList(tags: stored))
        }
        router.get(RouterPath(tags)) { request, context in
            let app = try publisherApp(request, context)
            return try JSON.response(
                TagList(tags: try await hub.tags(app: app.id, user: try context.pathParameter("userId"))))
        }

        let broadcasts = "/v1/apps/:app/broadcasts"
        router.post(RouterPath(broadcasts)) { request, context in
            let app = try publisherApp(request, context)
            var request = request
            var body = try await request.jsonObject(
                maxBytes: max(configuration.maxBodyBytes, configuration.maxBatchBodyBytes))
            let (audience, users, audienceErrors) = Self.audience(body)
            body["audience"] = nil
            if body["appNotificationId"] == nil || body["appNotificationId"] == .null {
                body["appNotificationId"] = .string(RandomID.make())
            }
            let publish = PublishBody(body, app: app)
            if !publish.reader.errors.isEmpty || !audienceErrors.isEmpty {
                let semantic = hub.validate(publish.draft, for: app, userID: "broadcast", now: hub.now())
                throw HubError.invalid(audienceErrors + publish.merged(with: semantic))
            }
            let created = try await hub.createBroadcast(
                app: app.id, audience: audience ?? .allUsers, users: users, draft: publish.draft)
            var headers: HTTPFields = [:]
            headers[.location] = "/v1/apps/\(Self.segment(app.id))/broadcasts/\(Self.segment(created.id))"
            return try JSON.response(BroadcastResource(created), status: .accepted, headers: headers)
        }
        router.get(RouterPath(broadcasts)) { request, context in
            let app = try publisherApp(request, context)
            let query = request.uri.queryParameters
            var limit = 50
            if let text = query["limit"] {
                guard let value = Int(text), (1...100).contains(value) else {
                    throw HubError.invalid([.init(field: "limit", message: "must be a whole number from 1 to 100")])
                }
                limit = value
            }
            let after = query["after"].map(String.init)
            let page = try await hub.broadcasts(app: app.id, after: after, limit: limit)
            return try JSON.response(
                BroadcastList(
                    broadcasts: page.map(BroadcastResource.init), next: page.count == limit ? page.last?.id : nil))
        }
        router.get(RouterPath(broadcasts + "/:id")) { request, context in
            let app = try publisherApp(request, context)
            return try JSON.response(
                BroadcastResource(try await hub.broadcast(app: app.id, id: try context.pathParameter("id"))))
        }
        router.delete(RouterPath(broadcasts + "/:id")) { request, context in
            let app = try publisherApp(request, context)
            return try JSON.response(
                BroadcastResource(try await hub.cancelBroadcast(app: app.id, id: try context.pathParameter("id"))))
        }
    }

    /// The app of the path, after checking the publisher key.
    private func publisherApp(_ request: Request, _ context: HubRequestContext) throws -> CrossDeviceApp {
        let app = try hub.app(try context.pathParameter("app"))
        try authenticatePublisher(request, app: app)
        return app
    }

    /// The `audience` of a broadcast body: exactly one of `allUsers: true`, `users` or `tags`;
    /// the type errors name `audience.…` (the hub checks the identifiers and counts).
    static func audience(
        _ body: [String: JSONValue]
    ) -> (audience: BroadcastAudience?, users: [String], errors: [HubError.FieldError]) {
        var reader = FieldReader()
        guard let fields = reader.object(body, "audience") else {
            if !reader.hasError(at: "audience") {
                reader.fail(
                    "audience",
                    "is required: {\"allUsers\": true}, {\"users\": […]} or {\"tags\": {\"anyOf\": […], \"allOf\": […]}}"
                )
            }
            return (nil, [], reader.errors)
        }
        let given = ["allUsers", "users", "tags"].filter { fields[$0] != nil && fields[$0] != .null }
        guard given.count == 1 else {
            reader.fail(
                "audience",
                given.isEmpty
                    ? "give one of allUsers, users, tags"
                    : "give only one of allUsers, users, tags (got \(given.joined(separator: ", ")))")
            return (nil, [], reader.errors)
        }
        switch given[0] {
        case "allUsers":
            if reader.bool(fields, "allUsers", in: "audience") == false {
                reader.fail("audience.allUsers", "must be true (or give users or tags)")
            }
            return (.allUsers, [], reader.errors)
        case "users":
            let users = (reader.strings(fields, "users", in: "audience") ?? []).map { $0 ?? "" }
            return (.users(count: users.count), users, reader.errors)
        default:
            guard let tags = reader.object(fields, "tags", in: "audience") else { return (nil, [], reader.errors) }
            let anyOf = (reader.strings(tags, "anyOf", in: "audience.tags") ?? []).map { $0 ?? "" }
            let allOf = (reader.strings(tags, "allOf", in: "audience.tags") ?? []).map { $0 ?? "" }
            return (.tags(anyOf: anyOf, allOf: allOf), [], reader.errors)
        }
    }
}

/// `{"tags": […]}`.
struct TagList: Encodable, Sendable {
    var tags: [String]
}

/// A broadcast and its progress.
struct BroadcastResource: Encodable, Sendable {
    struct Audience: Encodable, Sendable {
        var allUsers: Bool?
        var userCount: Int?
        var tags: Tags?
    }

    struct Tags: Encodable, Sendable {
        var anyOf: [String]
        var allOf: [String]
    }

    var id: String
    var appNotificationId: String
    var audience: Audience
    var status: String
    var audienceSize: Int?
    var published: Int
    var failed: Int
    var scheduledDateTime: Date?
    var expirationDateTime: Date?
    var createdDateTime: Date
    var lastModifiedDateTime: Date
    var completedDateTime: Date?

    init(_ broadcast: Broadcast) {
        id = broadcast.id
        appNotificationId = broadcast.draft.appNotificationId
        switch broadcast.audience {
        case .allUsers: audience = Audience(allUsers: true)
        case .users(let count): audience = Audience(userCount: count)
        case .tags(let anyOf, let allOf): audience = Audience(tags: Tags(anyOf: anyOf, allOf: allOf))
        }
        status = broadcast.status.rawValue
        audienceSize = broadcast.audienceSize
        published = broadcast.published
        failed = broadcast.failed
        scheduledDateTime = broadcast.draft.scheduledDateTime
        expirationDateTime = broadcast.draft.expirationDateTime
        createdDateTime = broadcast.createdDateTime
        lastModifiedDateTime = broadcast.lastModifiedDateTime
        completedDateTime = broadcast.completedDateTime
    }
}

/// A page of broadcasts; `next` is the `after` of the next page, absent on the last.
struct BroadcastList: Encodable, Sendable {
    var broadcasts: [BroadcastResource]
    var next: String?
}
