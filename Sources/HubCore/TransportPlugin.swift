public import Foundation
public import Logging

/// A transport as a plugin: what it is called, which platforms it serves, how it reads its part
/// of hub.yaml, how `hub map-app` checks an app's credentials for it, and how it makes its
/// ``Transport``.
///
/// The command line (`HubCLI`) takes a list of plugins; `hub serve`, `hub map-app` (its flags and
/// questions come from each plugin's ``onboarding``), `hub config check` and `hub emulate` know
/// exactly the transports of that list, first-party or not:
///
/// ```yaml
/// transports:
///   webhook: { url: "https://hooks.example.com/notify", timeout: 5s }   # readSettings
/// apps:
///   - id: notes.contoso.com
///     credentials:
///       webhook: { secret: env:WEBHOOK_SECRET }                        # readCredentials
/// ```
///
/// ```swift
/// struct WebhookPlugin: TransportPlugin {
///     let id = TransportID("webhook")
///     let platforms: Set<Platform> = []
///     let settingKeys = ["url", "timeout"]
///     func readSettings(_ section: ConfigSection) -> (any Sendable)? { … }
///     func makeTransport(_ context: TransportContext) throws -> (any Transport)? { … }
/// }
/// ```
///
/// Every value comes through a ``ConfigSection``, which reports problems at their file:line:column
/// and resolves `env:`/`file:` secrets; each key of `transports.<id>` can also be set with the
/// environment variable `HUB_TRANSPORTS_<ID>_<KEY>` (upper snake case).
public protocol TransportPlugin: Sendable {
    /// The transport's name: the `transport` of its endpoints and its key under `transports` and
    /// under each app's `credentials`.
    var id: TransportID { get }

    /// The platforms whose devices register with this transport; empty for every platform.
    var platforms: Set<Platform> { get }

    /// What the hub does differently for this transport's endpoints.
    var capabilities: TransportCapabilities { get }

    /// The keys of `transports.<id>` (so that `HUB_TRANSPORTS_<ID>_<KEY>` variables are known).
    var settingKeys: [String] { get }

    /// The keys of `credentials.<id>` (so that override variables of an app's credentials are known).
    var credentialKeys: [String] { get }

    /// Reads `transports.<id>` (absent when hub.yaml does not have it: return the defaults).
    /// - Returns: the settings handed to ``makeTransport(_:)`` as ``TransportContext/settings``;
    ///   `nil` when a problem was reported.
    func readSettings(_ section: ConfigSection) -> (any Sendable)?

    /// Reads one app's `credentials.<id>`.
    /// - Returns: the credentials, stored in the app's ``PushCredentials``; `nil` when a problem
    ///   was reported.
    func readCredentials(_ section: ConfigSection) -> (any TransportCredentials)?

    /// Checks credentials further than reading them can, for `hub map-app` (that a key signs, that
    /// the provider accepts them when `online`).
    /// - Parameters:
    ///   - credentials: what ``readCredentials(_:)`` returned.
    ///   - settings: what ``readSettings(_:)`` returned (where the provider is, for `online`).
    ///   - online: whether to ask the provider.
    /// - Returns: what is wrong, one sentence each saying what to do; empty when they are fine.
    func checkCredentials(
        _ credentials: any TransportCredentials, settings: any Sendable, online: Bool
    ) async
        -> [String]

    /// How `hub map-app` onboards an app onto this transport (its credential flags, the wizard's
    /// questions, the `credentials.<id>` they make) and its emulator for `hub emulate`; `nil` (the
    /// default) when it has none: its credentials are then given as `--credentials <id>='{…}'`. A
    /// transport whose apps need no credentials but that has an emulator returns
    /// ``TransportOnboarding/init(emulator:)``. Two plugins must not make the same flag or emulator
    /// name, nor a flag that is one of `map-app`'s own options: the command line refuses to start.
    /// What `hub map-app` and `hub config check` verify beyond reading the credentials is
    /// ``checkCredentials(_:settings:online:)``.
    var onboarding: TransportOnboarding? { get }

    /// Makes the transport that `hub serve` runs.
    /// - Returns: `nil` when it has nothing to do (no app has credentials for it); `hub serve`
    ///   then says so in its log.
    /// - Throws: when the settings or an app's credentials cannot be used; `hub serve` stops with
    ///   the reason.
    func makeTransport(_ context: TransportContext) throws -> (any Transport)?
}

extension TransportPlugin {
    public var platforms: Set<Platform> { [] }

    public var capabilities: TransportCapabilities { [] }

    public var settingKeys: [String] { [] }

    public var credentialKeys: [String] { [] }

    public var onboarding: TransportOnboarding? { nil }

    /// Accepts only an absent or empty section.
    public func readSettings(_ section: ConfigSection) -> (any Sendable)? {
        section.expectKeys(settingKeys) ? NoSettings() : nil
    }

    /// Reports that the transport takes no credentials.
    public func readCredentials(_ section: ConfigSection) -> (any TransportCredentials)? {
        section.error("'\(section.path)': the \(id) transport takes no credentials; remove this section")
        return nil
    }

    public func checkCredentials(
        _ credentials: any TransportCredentials, settings: any Sendable, online: Bool
    ) async
        -> [String]
    { [] }

    /// Whether a device of `platform` may register with this transport.
    public func serves(_ platform: Platform) -> Bool { platforms.isEmpty || platforms.contains(platform) }

    /// The apps of `context` that have credentials for this transport.
    public func apps(in context: TransportContext) -> [CrossDeviceApp] {
        context.apps.filter { $0.credentials[transport: id] != nil }
    }
}

/// The settings of a plugin whose `transports.<id>` takes no keys.
public struct NoSettings: Sendable, Hashable {
    public init() {}
}

/// What a plugin makes its transport from.
public struct TransportContext: Sendable {
    /// What ``TransportPlugin/readSettings(_:)`` returned for `transports.<id>`.
    public var settings: any Sendable
    /// Every configured app; those with credentials for the plugin have them in ``CrossDeviceApp/credentials``.
    public var apps: [CrossDeviceApp]
    /// What the hub announces changes of feeds to (the polling transport wakes its endpoints'
    /// waiting requests through it).
    public var signals: any FeedChangeListener
    /// A logger with `transport` metadata set to the plugin's ID.
    public var logger: Logger
    /// The hub's clock. A transport takes every date it signs, sends or compares from its
    /// ``HubClock/date`` (token issue and expiry times, `Retry-After` dates, time to live), so a
    /// test that moves the hub's clock moves the transport's with it.
    public var clock: any HubClock

    /// - Parameters:
    ///   - settings: what ``TransportPlugin/readSettings(_:)`` returned for `transports.<id>`.
    ///   - apps: every configured app.
    ///   - signals: what the hub announces changes of feeds to (``Hub/signals``).
    ///   - logger: a logger with `transport` metadata set to the plugin's ID.
    ///   - clock: the hub's clock (``Hub/clock``); the system's by default.
    public init(
        settings: any Sendable, apps: [CrossDeviceApp], signals: any FeedChangeListener, logger: Logger,
        clock: any HubClock = SystemClock()
    ) {
        self.settings = settings
        self.apps = apps
        self.signals = signals
        self.logger = logger
        self.clock = clock
    }

    /// The hub's wall-clock time, as the `now` closure of a transport's configuration.
    public var now: @Sendable () -> Date {
        let clock = clock
        return { clock.date }
    }

    /// The settings as the plugin's own type, or its defaults when they are not of that type.
    public func settings<S: Sendable>(as type: S.Type, default fallback: @autoclosure () -> S) -> S {
        settings as? S ?? fallback()
    }
}
