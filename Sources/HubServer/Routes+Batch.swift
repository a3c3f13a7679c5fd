import Foundation
import HubCore
import HubWire
import Hummingbird

extension HubAPI {
    /// The most notifications one batch publish may hold.
    static let maxBatchItems = 1000

    /// `POST /v1/apps/{app}/notifications/batch` (publisher key of the app): many publishes in one
    /// request, `{"notifications": [{"userId": "…", …the publish body…}, …]}` with 1 to
    /// ``maxBatchItems`` items. Each item is a publish with its own outcome: 200
    /// `{"results": [{"index", "status", "notification" | "problem"}]}` in item order, where
    /// `status` is what a single publish of the item would have answered (201, 200, 400, 413, 429).
    /// The items that were accepted are durable when the answer is sent; nothing of a refused item
    /// is stored. Rate limits count items: the publisher key's bucket must hold the whole batch
    /// (else 429 for the request), and an item whose user is over `userPublishes` gets its own 429.
    /// The body may be up to ``HubServerConfiguration/maxBatchBodyBytes``.
    func addBatchRoutes(to router: HubRouter) {
        router.post("/v1/apps/:app/notifications/batch") { request, context in
            let app = try hub.app(try context.pathParameter("app"))
            do {
                try authenticatePublisher(request, app: app)
                var request = request
                let body = try await request.jsonObject(maxBytes: configuration.maxBatchBodyBytes)
                let items = try Self.batchItems(body)
                let results = try await publishBatch(items, app: app, request: request)
                return JSON.response(BatchResultList(results: results))
            } catch {
                HubMetrics.publishFailed(app: app, error: error)
                throw error
            }
        }
    }

    /// The items of a batch body.
    /// - Throws: ``Problem`` 400 when `notifications` is missing, not an array or empty; 413
    ///   `batch-too-large` beyond ``maxBatchItems``.
    static func batchItems(_ body: [String: JSONValue]) throws -> [JSONValue] {
        let shape = #"Send {"notifications": [{"userId": "…", "appNotificationId": "…", …}, …]}"#
        guard let value = body["notifications"], value != .null else {
            throw Problem(
                .invalidRequest, "\(shape): the body has no notifications.",
                errors: [.init(field: "notifications", message: "is required")])
        }
        guard case .array(let items) = value else {
            throw Problem(
                .invalidRequest, "\(shape): notifications must be an array.",
                errors: [.init(field: "notifications", message: "must be an array of objects, not \(value.kind)")])
        }
        guard !items.isEmpty else {
            throw Problem(
                .invalidRequest, "\(shape): the batch is empty.",
                errors: [.init(field: "notifications", message: "must hold 1 to \(maxBatchItems) notifications")])
        }
        guard items.count <= maxBatchItems else {
            throw Problem(
                .batchTooLarge,
                "The batch holds \(items.count) notifications; send at most \(maxBatchItems) per request (split it into several batches).",
                errors: [
                    .init(
                        field: "notifications",
                        message: "holds \(items.count) items; at most \(maxBatchItems) are allowed")
                ])
        }
        return items
    }

    /// One item of a batch, read: refused already, or a publish for the hub.
    private enum BatchEntry {
        case refused(Problem)
        case ready(user: String, body: PublishBody)
    }

    /// Reads, rate-limits and publishes `items`; one result per item, in order.
    func publishBatch(_ items: [JSONValue], app: CrossDeviceApp, request: Request) async throws -> [BatchResult] {
        let now = hub.now()
        var entries = items.enumerated().map { index, item in
            Self.batchEntry(item, index: index, app: app, hub: hub, now: now)
        }
        let users = entries.map { entry -> String? in
            if case .ready(let user, _) = entry { return user }
            return nil
        }
        for (index, limited) in try chargeBatch(request, app: app, users: users).enumerated() {
            if let limited { entries[index] = .refused(limited) }
        }
        var ready: [(index: Int, body: PublishBody)] = []
        var batch: [Hub.BatchItem] = []
        for (index, entry) in entries.enumerated() {
            guard case .ready(let user, let body) = entry else { continue }
            ready.append((index, body))
            batch.append(Hub.BatchItem(userId: user, draft: body.draft))
        }
        var results = [BatchResult?](repeating: nil, count: items.count)
        if !batch.isEmpty {
            // Counted once per batch (a metric handle per item cost a registry look-up each).
            var createdCount = 0
            var updatedCount = 0
            defer {
                HubMetrics.publish(app: app.id, result: "created", count: createdCount)
                HubMetrics.publish(app: app.id, result: "updated", count: updatedCount)
            }
            for ((index, body), outcome) in zip(ready, try await hub.publish(app: app.id, batch: batch)) {
                switch outcome {
                case .success(let (notification, created)):
                    if created { createdCount += 1 } else { updatedCount += 1 }
                    results[index] = BatchResult(
                        index: index, status: created ? 201 : 200, notification: NotificationResource(notification))
                case .failure(let error):
                    let named = HubError(error.code, error.message, fieldErrors: error.fieldErrors.map(body.named))
                    entries[index] = .refused(Problem(named))
                }
            }
        }
        for (index, entry) in entries.enumerated() {
            guard case .refused(let problem) = entry else { continue }
            HubMetrics.publishFailed(app: app, error: problem)
            results[index] = BatchResult(index: index, problem: Self.itemProblem(problem, index: index))
        }
        return results.map { $0! }
    }

    /// Reads item `index`: `userId` and the publish body (``PublishBody``, as a single publish reads
    /// it); decode errors and the hub's validation errors are reported together, as a single
    /// publish does.
    private static func batchEntry(
        _ item: JSONValue, index: Int, app: CrossDeviceApp, hub: Hub, now: Date
    ) -> BatchEntry {
        guard case .object(var fields) = item else {
            return .refused(
                Problem(
                    .invalidRequest, "The item is not a publish body.",
                    errors: [
                        .init(
                            field: "", message: "must be an object with userId and the publish body, not \(item.kind)")
                    ]))
        }
        var users = FieldReader()
        let user = users.string(fields, "userId")
        if user == nil && !users.hasError(at: "userId") { users.fail("userId", "is required") }
        fields["userId"] = nil
        let body = PublishBody(fields, app: app)
        guard users.errors.isEmpty && body.reader.errors.isEmpty, let user else {
            let semantic = hub.validate(body.draft, for: app, userID: user ?? "", now: now)
                .filter { user != nil || $0.field != "userId" }
            return .refused(Problem(HubError.invalid(users.errors + body.merged(with: semantic))))
        }
        return .ready(user: user, body: body)
    }

    /// The problem of item `index` as the results show it: its fields named from the body's root
    /// (`notifications[3].payload.visualContent.title`) and its detail saying which item it is.
    static func itemProblem(_ problem: Problem, index: Int) -> Problem {
        let prefix = "notifications[\(index)]"
        var item = problem
        item.errors = problem.errors.map {
            HubError.FieldError(field: $0.field.isEmpty ? prefix : "\(prefix).\($0.field)", message: $0.message)
        }
        if problem.kind == .invalidRequest && !item.errors.isEmpty {
            let summary = item.errors.map { "\($0.field): \($0.message)" }.joined(separator: "; ")
            item.detail = "Item \(index) has \(item.errors.count) invalid field(s): \(summary)"
        } else {
            item.detail = "Item \(index): \(problem.detail)"
        }
        return item
    }
}

/// One item's outcome in a batch publish's answer: `notification` with status 201 or 200, or a
/// `problem` (the problem+json a single publish of the item would have answered).
struct BatchResult: Encodable, Sendable {
    var index: Int
    var status: Int
    var notification: NotificationResource?
    var problem: Problem.Body?

    init(index: Int, status: Int, notification: NotificationResource) {
        self.index = index
        self.status = status
        self.notification = notification
    }

    init(index: Int, problem: Problem) {
        self.index = index
        self.status = problem.kind.status.code
        self.problem = problem.body
    }
}

/// The answer of a batch publish: `{"results": [BatchResult]}`, written straight to bytes (keys
/// sorted, as the API's encoder would).
struct BatchResultList: JSONWritable {
    var results: [BatchResult]

    func write(to json: inout JSONWriter) {
        json.object { json in
            json.key("results")
            json.array(results) { json, result in
                json.object { json in
                    json.member("index", result.index)
                    if let notification = result.notification {
                        json.key("notification")
                        notification.write(to: &json)
                    }
                    if let problem = result.problem {
                        json.key("problem")
                        problem.write(to: &json)
                    }
                    json.member("status", result.status)
                }
            }
        }
    }
}

extension Problem.Body {
    /// The problem's JSON object, as the API's encoder writes it (keys sorted).
    func write(to json: inout JSONWriter) {
        json.object { json in
            json.member("detail", detail)
            if let errors {
                json.key("errors")
                json.array(errors) { json, error in
                    json.object { json in
                        json.member("field", error.field)
                        json.member("message", error.message)
                    }
                }
            }
            json.member("status", status)
            json.member("title", title)
            json.member("type", type)
        }
    }
}
