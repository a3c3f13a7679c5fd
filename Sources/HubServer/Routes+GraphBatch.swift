import Foundation
import HubCore
import Hummingbird

// `POST /beta/$batch`: Microsoft Graph's JSON batching for the publishes Graph clients send.
//
// The body is Graph's `{"requests": [{"id", "method", "url", "headers", "body", "dependsOn"}]}`,
// 1 to 20 requests; the answer is 200 `{"responses": [{"id", "status", "headers", "body"}]}`, one
// per request, in request order (Graph allows any order; `id` correlates). A request publishes
// when it is `POST` to `/me/notifications` (relative to the batch's version, as Graph clients
// send it; `me/notifications` too), with its `X-UNS-ID` and `Content-Type` in its own `headers`,
// and answers as `POST /beta/me/notifications` would, in Graph's shapes; any other request gets
// the error Graph gives for it (another method: 405; another resource: 400 "Resource not found
// for the segment"). A request whose `dependsOn` names one that did not succeed gets 424. The
// batch runs in waves: each wave holds the requests whose dependencies are answered, and its
// publishes are one ``Hub/publish(app:batch:)`` per app. A malformed batch (no `requests`, more
// than 20, an ID missing or repeated, a dependency on no request or a cycle) gets 400 problem+json
// and runs nothing.
extension HubAPI {
    /// The most requests one Graph batch may hold (Graph's own limit).
    static let maxGraphBatchRequests = 20

    func addGraphBatchRoute(to router: HubRouter) {
        router.post("/beta/$batch") { request, context in
            let keyApps = try authenticatePublisherOfAnyApp(request)
            var request = request
            let batch = try GraphBatch(try await request.jsonObject(maxBytes: configuration.maxBatchBodyBytes))
            let responses = await runGraphBatch(batch, keyApps: keyApps, request: request, context: context)
            return try JSON.response(GraphBatchResponse(responses: responses))
        }
    }

    /// Runs `batch` wave by wave; one response per request, in request order.
    private func runGraphBatch(
        _ batch: GraphBatch, keyApps: Set<String>, request: Request, context: HubRequestContext
    ) async -> [GraphBatchResponse.Item] {
        var responses = [GraphBatchResponse.Item?](repeating: nil, count: batch.requests.count)
        for wave in batch.waves {
            var publishes: [String: [(index: Int, user: String, body: PublishBody)]] = [:]
            for index in wave {
                let item = batch.requests[index]
                if let failed = item.dependsOn.first(where: { !(responses[$0]?.succeeded ?? false) }) {
                    responses[index] = .failure(
                        item.id,
                        GraphError(
                            status: .failedDependency, code: "FailedDependency",
                            message:
                                "The request depends on request '\(batch.requests[failed].id)', which did not succeed.")
                    )
                    continue
                }
                do {
                    let (app, user, body) = try graphPublish(item, keyApps: keyApps)
                    publishes[app.id, default: []].append((index, user, body))
                } catch {
                    responses[index] = .failure(item.id, GraphError(error, context: context))
                }
            }
            for (appID, jobs) in publishes.sorted(by: { $0.key < $1.key }) {
                guard let app = try? hub.app(appID) else { continue }
                for (index, response) in await publishGraph(
                    jobs, app: app, batch: batch, request: request, context: context)
                {
                    responses[index] = response
                }
            }
        }
        return responses.enumerated().map { index, response in
            response
                ?? .failure(
                    batch.requests[index].id,
                    GraphError(
                        status: .internalServerError, code: "InternalServerError", message: "The request was not run."))
        }
    }

    /// The app, user and body of a request of a batch that publishes.
    /// - Throws: the Graph error of a request that is not a publish, or not a valid one.
    private func graphPublish(
        _ item: GraphBatch.Request, keyApps: Set<String>
    ) throws -> (CrossDeviceApp, String, PublishBody) {
        try GraphBatch.route(item)
        let subscription = try graphSubscription(id: item.header("X-UNS-ID"))
        guard keyApps.contains(subscription.app) else {
            throw Problem.unauthorized("The publisher key is not one of the app '\(subscription.app)'.")
        }
        let app = try hub.app(subscription.app)
        guard case .object(let fields)? = item.body else {
            throw Problem(
                .invalidRequest, "The request needs the notification as its JSON body.",
                errors: [.init(field: "body", message: item.body == nil ? "is required" : "must be a JSON object")])
        }
        guard let type = item.header("Content-Type") else {
            throw Problem(
                .invalidRequest, "A request with a body must give its Content-Type in headers (Graph's rule).",
                errors: [.init(field: "headers.Content-Type", message: "is required when body is given")])
        }
        guard Request.isJSON(type) else {
            throw Problem(
                .unsupportedMediaType, "Send the body as application/json (the request said '\(type.prefix(100))').")
        }
        let body = PublishBody(fields, app: app)
        if !body.reader.errors.isEmpty {
            let semantic = hub.validate(body.draft, for: app, userID: subscription.user, now: hub.now())
            throw HubError.invalid(body.merged(with: semantic))
        }
        return (app, subscription.user, body)
    }

    /// Publishes one app's requests of a wave together; answers each as
    /// `POST /beta/me/notifications` would.
    private func publishGraph(
        _ jobs: [(index: Int, user: String, body: PublishBody)], app: CrossDeviceApp, batch: GraphBatch,
        request: Request, context: HubRequestContext
    ) async -> [(Int, GraphBatchResponse.Item)] {
        func id(_ index: Int) -> String { batch.requests[index].id }
        var answered: [(Int, GraphBatchResponse.Item)] = []
        var ready = jobs
        do {
            let limited = try chargeBatch(request, app: app, users: jobs.map(\.user), charged: 0)
            ready = []
            for (job, problem) in zip(jobs, limited) {
                if let problem {
                    answered.append((job.index, .failure(id(job.index), GraphError(problem, context: context))))
                } else {
                    ready.append(job)
                }
            }
            guard !ready.isEmpty else { return answered }
            let outcomes = try await hub.publish(
                app: app.id, batch: ready.map { Hub.BatchItem(userId: $0.user, draft: $0.body.draft) })
            for (job, outcome) in zip(ready, outcomes) {
                switch outcome {
                case .success(let (notification, created)):
                    HubMetrics.publish(app: app.id, result: created ? "created" : "updated")
                    var headers = ["Content-Type": "application/json"]
                    if created {
                        headers["Location"] =
                            "/v1/apps/\(Self.segment(app.id))/users/\(Self.segment(job.user))/notifications/\(Self.segment(notification.id))"
                    }
                    answered.append(
                        (
                            job.index,
                            GraphBatchResponse.Item(
                                id: id(job.index), status: created ? 201 : 200, headers: headers,
                                body: .notification(GraphNotificationResource(notification)))
                        ))
                case .failure(let error):
                    let named = HubError(error.code, error.message, fieldErrors: error.fieldErrors.map(job.body.named))
                    HubMetrics.publishFailed(app: app, error: named)
                    answered.append((job.index, .failure(id(job.index), GraphError(named, context: context))))
                }
            }
        } catch {
            HubMetrics.publishFailed(app: app, error: error)
            let answeredIndices = Set(answered.map(\.0))
            for job in jobs where !answeredIndices.contains(job.index) {
                answered.append((job.index, .failure(id(job.index), GraphError(error, context: context))))
            }
        }
        return answered
    }
}

/// A Graph JSON batch, read and checked: its requests and the waves they run in.
struct GraphBatch {
    struct Request {
        var id: String
        var method: String
        var url: String
        /// Header names lowercased.
        var headers: [String: String]
        var body: JSONValue?
        /// The indices of the requests this one waits for.
        var dependsOn: [Int]

        func header(_ name: String) -> String? { headers[name.lowercased()] }
    }

    var requests: [Request]
    /// The indices of the requests, in waves: each request after every one it depends on.
    var waves: [[Int]]

    /// - Throws: ``Problem`` 400 `invalid-request`, naming every malformed field
    ///   (`requests[2].id`), when the batch cannot be run.
    init(_ body: [String: JSONValue]) throws {
        let limit = HubAPI.maxGraphBatchRequests
        let shape =
            #"Send Graph's batch: {"requests": [{"id": "1", "method": "POST", "url": "/me/notifications", "headers": {…}, "body": {…}}]}"#
        guard case .array(let items)? = body["requests"] else {
            throw Problem(
                .invalidRequest, "\(shape).",
                errors: [
                    .init(field: "requests", message: body["requests"] == nil ? "is required" : "must be an array")
                ])
        }
        guard (1...limit).contains(items.count) else {
            throw Problem(
                .invalidRequest,
                "A batch holds 1 to \(limit) requests (Graph's limit); this one holds \(items.count). Split it into several batches.",
                errors: [.init(field: "requests", message: "must hold 1 to \(limit) requests, not \(items.count)")])
        }
        var reader = FieldReader()
        var read: [(request: Request, dependsOn: [String])] = []
        for (index, item) in items.enumerated() {
            let prefix = "requests[\(index)]"
            guard case .object(let fields) = item else {
                reader.fail(prefix, "must be an object, not \(item.kind)")
                continue
            }
            func required(_ key: String) -> String {
                let value = reader.string(fields, key, in: prefix)
                if (value ?? "").isEmpty && !reader.hasError(at: "\(prefix).\(key)") {
                    reader.fail("\(prefix).\(key)", "is required")
                }
                return value ?? ""
            }
            let id = required("id")
            let method = required("method")
            let url = required("url")
            var headers: [String: String] = [:]
            if let object = reader.object(fields, "headers", in: prefix) {
                for key in object.keys.sorted() {
                    if let value = reader.string(object, key, in: "\(prefix).headers") {
                        headers[key.lowercased()] = value
                    }
                }
            }
            let dependsOn = (reader.strings(fields, "dependsOn", in: prefix) ?? []).compactMap { $0 }
            let body = fields["body"].flatMap { $0 == .null ? nil : $0 }
            read.append(
                (Request(id: id, method: method, url: url, headers: headers, body: body, dependsOn: []), dependsOn))
        }
        // IDs are not case-sensitive and unique in the batch.
        var positions: [String: Int] = [:]
        for (index, item) in read.enumerated() where !item.request.id.isEmpty {
            if positions.updateValue(index, forKey: item.request.id.lowercased()) != nil {
                reader.fail("requests[\(index)].id", "'\(item.request.id)' is the ID of another request of the batch")
            }
        }
        requests = []
        for (index, item) in read.enumerated() {
            var request = item.request
            for (position, name) in item.dependsOn.enumerated() {
                if let target = positions[name.lowercased()], target != index {
                    request.dependsOn.append(target)
                } else {
                    reader.fail(
                        "requests[\(index)].dependsOn[\(position)]", "'\(name)' is not the ID of another request")
                }
            }
            requests.append(request)
        }
        if !reader.errors.isEmpty {
            throw Problem(.invalidRequest, "The batch is malformed; nothing of it ran.", errors: reader.errors)
        }
        var done = Set<Int>()
        waves = []
        while done.count < requests.count {
            let wave = requests.indices.filter {
                !done.contains($0) && requests[$0].dependsOn.allSatisfy(done.contains)
            }
            guard !wave.isEmpty else {
                let cycle = requests.indices.filter { !done.contains($0) }.map { requests[$0].id }
                throw Problem(
                    .invalidRequest,
                    "The requests \(cycle.joined(separator: ", ")) depend on each other in a cycle; nothing ran.",
                    errors: [.init(field: "requests", message: "dependsOn forms a cycle")])
            }
            waves.append(wave)
            done.formUnion(wave)
        }
    }

    /// Checks that `request` is a publish (`POST /me/notifications`).
    /// - Throws: the error Graph gives a request it cannot route: 405 for another method, 400
    ///   naming the first segment this hub does not serve.
    static func route(_ request: Request) throws {
        if request.url.contains("://") {
            throw GraphError(
                status: .badRequest, code: "BadRequest",
                message: "The url of a batched request is relative to the batch's version, such as /me/notifications.")
        }
        let path = request.url.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let segments = path.split(separator: "/")
        let served = ["me", "notifications"]
        for (index, segment) in segments.enumerated() where index >= served.count || segment != served[index] {
            throw GraphError(
                status: .badRequest, code: "BadRequest", message: "Resource not found for the segment '\(segment)'.")
        }
        guard segments.count == served.count else {
            throw GraphError(
                status: .badRequest, code: "BadRequest",
                message:
                    "Resource not found for the segment '\(segments.last ?? "")'; this hub serves /me/notifications.")
        }
        guard request.method.uppercased() == "POST" else {
            throw GraphError(
                status: .methodNotAllowed, code: "MethodNotAllowed",
                message:
                    "Specified HTTP method '\(request.method.prefix(20))' is not allowed for the request target: this hub takes POST /me/notifications."
            )
        }
    }
}
