import Foundation
public import HubCore
import Logging

/// The FCM transport as a plugin: `transports.fcm` in hub.yaml sets where FCM is, each app's
/// `credentials.fcm` its service account.
///
/// ```yaml
/// transports:
///   fcm: { sendUrl: "https://127.0.0.1:4443", trustRoots: emulator-ca.pem, timeout: 15s }
/// apps:
///   - credentials:
///       fcm: { serviceAccount: file:service-account.json }
/// ```
public struct FCMPlugin: TransportPlugin {
    public init() {}

    public var id: TransportID { .fcm }
    public var platforms: Set<Platform> { [.android] }
    public var settingKeys: [String] { ["sendUrl", "tokenUrl", "trustRoots", "timeout"] }
    public var credentialKeys: [String] { ["serviceAccount"] }

    /// Reads `transports.fcm` into an ``FCMConfiguration``:
    /// - `sendUrl`: the send API's base URL (`https://fcm.googleapis.com`);
    /// - `tokenUrl`: replaces every service account's `token_uri` (an emulator's);
    /// - `trustRoots`: a PEM file of certificates trusted besides the system's;
    /// - `timeout`: one HTTP exchange (15s).
    public func readSettings(_ section: ConfigSection) -> (any Sendable)? {
        guard section.expectKeys(settingKeys) else { return nil }
        var configuration = FCMConfiguration()
        if let url = section.url("sendUrl") { configuration.sendBaseURL = url }
        if let url = section.url("tokenUrl") { configuration.tokenURI = url }
        if let pem = section.fileText("trustRoots") { configuration.trustRootsPEM = [pem] }
        if let timeout = section.duration("timeout") { configuration.requestTimeout = timeout }
        return section.hasErrors ? nil : configuration
    }

    /// Reads one app's `credentials.fcm`: `serviceAccount`, the service account's JSON key file.
    public func readCredentials(_ section: ConfigSection) -> (any TransportCredentials)? {
        guard section.expectKeys(credentialKeys, required: ["serviceAccount"]),
            let account = section.secret("serviceAccount", inline: false)
        else { return nil }
        switch FCMCredentials.parse(serviceAccount: account.revealBytes(), source: account.source) {
        case .success(let credentials):
            return credentials
        case .failure(let problem):
            section.error(
                "'\(section.path).serviceAccount' (\(account.source)) \(problem.message)", at: "serviceAccount")
            return nil
        }
    }

    /// Signs an RS256 assertion with the service account's key; `online`, also sends FCM a
    /// validate-only message (nothing is delivered).
    public func checkCredentials(
        _ credentials: any TransportCredentials, settings: any Sendable, online: Bool
    ) async
        -> [String]
    {
        guard let account = credentials as? FCMCredentials else { return [] }
        do {
            _ = try await account.signAssertion()
        } catch {
            return ["the service account's key could not sign an RS256 assertion: \(error)"]
        }
        guard online else { return [] }
        do {
            let client = try FCMClient(configuration: settings as? FCMConfiguration ?? FCMConfiguration())
            var problems: [String] = []
            do {
                try await client.validate(credentials: account)
            } catch {
                problems.append("FCM refused the service account \(account.clientEmail): \(error.message)")
            }
            try? await client.shutdown()
            return problems
        } catch {
            return ["FCM could not be checked: \(error)"]
        }
    }

    /// The transport for the apps with `credentials.fcm`; `nil` when none has.
    public func makeTransport(_ context: TransportContext) throws -> (any Transport)? {
        let apps = apps(in: context)
        guard !apps.isEmpty else { return nil }
        var configuration = context.settings(as: FCMConfiguration.self, default: FCMConfiguration())
        configuration.now = context.now
        context.logger.info(
            "fcm transport enabled",
            metadata: ["apps": "\(apps.map(\.id).joined(separator: ","))", "sendURL": "\(configuration.sendBaseURL)"])
        return try FCMTransport(configuration: configuration, logger: context.logger)
    }
}
