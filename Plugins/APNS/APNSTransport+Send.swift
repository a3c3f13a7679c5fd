public import HubCore
import NIOCore
import NIOHPACK

extension APNSTransport {
    /// Sends one request with `credentials` and maps APNs' answer to an outcome.
    ///
    /// Within one call, and within ``Configuration/requestTimeout``: an `ExpiredProviderToken`
    /// answer gets one retry with a new provider token; `IdleTimeout`, `UnrelatedKeyIdInToken`,
    /// `Shutdown` and streams the server refused unprocessed (GOAWAY, `REFUSED_STREAM`) get one
    /// retry on another connection. Everything else is left to the dispatcher's back-off.
    public func send(_ request: APNSRequest, credentials: APNSCredentials) async -> DeliveryOutcome {
        await transmit(request, credentials: credentials).outcome
    }

    /// ``send(_:credentials:)``, with the `apns-id` of the notification when APNs answered (its
    /// own header, else the request's: APNs answers with the ID it was given).
    public func transmit(_ request: APNSRequest, credentials: APNSCredentials) async -> ProviderReply {
        let deadline = NIODeadline.now() + TimeAmount(configuration.requestTimeout)
        let group: APNSCredentialGroup
        switch self.group(for: credentials) {
        case .success(let found): group = found
        case .failure(let error): return ProviderReply(.rejected(reason: error.description))
        }
        if let problem = request.headerProblem { return ProviderReply(.rejected(reason: problem)) }
        let body: [UInt8]
        do {
            body = try request.payload.encoded(trimmingAlertBody: configuration.trimsAlertBody)
        } catch {
            return ProviderReply(.rejected(reason: error.description))
        }
        let pool = group.pool(for: request.environment)
        let exchange = await exchange(request, body: body, group: group, pool: pool, deadline: deadline)
        let outcome = outcome(of: exchange, request: request, group: group, pool: pool)
        switch exchange {
        case .answered(let response), .tokenTooYoungToRenew(let response, _):
            return ProviderReply(outcome, messageId: response.apnsID ?? request.apnsID)
        case .failed:
            return ProviderReply(outcome)
        }
    }

    /// How one send ended, before it is mapped to an outcome.
    enum Exchange {
        case answered(APNSHTTPResponse)
        case failed(APNSError)
        /// APNs called a provider token expired that is younger than 20 minutes: the clocks disagree.
        case tokenTooYoungToRenew(APNSHTTPResponse, age: Duration)
    }

    private func exchange(
        _ request: APNSRequest, body: [UInt8], group: APNSCredentialGroup, pool: APNSConnectionPool,
        deadline: NIODeadline
    ) async -> Exchange {
        var token: APNSTokenProvider.Token?
        var renewed = false
        var movedConnections = 0
        while true {
            do {
                if let tokens = group.tokens, token == nil { token = try await tokens.token() }
            } catch {
                return .failed(
                    APNSError(.invalidCredentials, "signing the APNs provider token failed", underlying: error))
            }
            let connection: APNSConnection
            do {
                connection = try await pool.lease(deadline: deadline)
            } catch {
                return .failed(error)
            }
            let headers = Self.headers(for: request, authority: pool.server.authority, token: token)
            let response: APNSHTTPResponse
            do {
                response = try await connection.send(headers: headers, body: body, deadline: deadline)
                pool.release(connection)
            } catch {
                pool.release(connection)
                if case .lost = error { pool.retire(connection) }
                if case .refused = error, !connection.channel.isActive { pool.retire(connection) }
                if case .refused = error, movedConnections < 2 {
                    movedConnections += 1
                    continue
                }
                return .failed(Self.error(for: error, pool: pool))
            }
            guard response.status != 200 else { return .answered(response) }
            let reason = APNSResponseBody(response.body).reason
            switch reason?.action(status: response.status) {
            case .renewToken where !renewed:
                renewed = true
                guard let tokens = group.tokens, let rejected = token else { return .answered(response) }
                do {
                    guard let fresh = try await tokens.renew(replacing: rejected) else {
                        let age = configuration.now().timeIntervalSince(rejected.issuedAt)
                        return .tokenTooYoungToRenew(response, age: .milliseconds(Int64(age * 1000)))
                    }
                    token = fresh
                } catch {
                    return .answered(response)
                }
            case .reconnect where movedConnections < 2:
                movedConnections += 1
                pool.retire(connection)
            case .reconnect, .backOffTokenUpdates:
                pool.retire(connection)
                return .answered(response)
            case .retry where response.status == 503:
                pool.retire(connection)
                return .answered(response)
            default:
                return .answered(response)
            }
        }
    }

    private static func error(for failure: APNSStreamFailure, pool: APNSConnectionPool) -> APNSError {
        switch failure {
        case .timedOut:
            return APNSError(.timedOut, "APNs did not answer before the request timeout (\(pool.server))")
        case .refused:
            return APNSError(.connectionFailed, "APNs refused the stream repeatedly (\(pool.server))")
        case .lost(let underlying):
            return APNSError(
                .connectionFailed, "the connection to APNs (\(pool.server)) ended before the answer",
                underlying: underlying)
        }
    }

    /// The request headers, in the order and HPACK indexing Apple recommends (PROVIDERS.md §1.2):
    /// `:path` and `authorization` are never added to APNs' small dynamic table; `apns-id`,
    /// `apns-expiration` and `apns-collapse-id` only the first time on a connection (their names
    /// are then reused), which ``APNSStreams`` sees to; everything else is indexed.
    static func headers(for request: APNSRequest, authority: String, token: APNSTokenProvider.Token?) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(11)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":path", value: "/3/device/" + request.deviceToken, indexing: .nonIndexable)
        headers.add(name: ":authority", value: authority)
        headers.add(name: "apns-push-type", value: request.payload.pushType.rawValue)
        headers.add(name: "apns-topic", value: request.topic)
        headers.add(name: "apns-priority", value: request.payload.priority.description)
        // Indexed the first time on a connection, which APNSStreams takes care of.
        if let expiration = request.expiration {
            headers.add(name: "apns-expiration", value: expiration.description, indexing: .nonIndexable)
        }
        if let collapseID = request.collapseID {
            headers.add(name: "apns-collapse-id", value: collapseID.value, indexing: .nonIndexable)
        }
        headers.add(name: "apns-id", value: request.apnsID, indexing: .nonIndexable)
        if let token {
            headers.add(name: "authorization", value: token.authorization, indexing: .nonIndexable)
        }
        return headers
    }
}
