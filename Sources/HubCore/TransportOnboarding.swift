import Foundation

/// How `hub map-app` onboards an app onto a transport: the credentials it asks for (as flags and as
/// the wizard's questions), how the answers become the app's `credentials.<id>` in hub.yaml, and
/// the transport's emulator for `hub emulate`.
///
/// A plugin returns it as its ``TransportPlugin/onboarding``. Each field is a `map-app` flag named
/// `--<id>-<name>` and, when it has a ``CredentialField/prompt``, a question of the wizard's
/// credentials step (asked when the app maps one of the plugin's platforms):
///
/// ```swift
/// var onboarding: TransportOnboarding? {
///     TransportOnboarding(
///         fields: [
///             CredentialField("url", prompt: "Pager URL", help: "Where the pager listens (https://…).") {
///                 $0.hasPrefix("https://") ? nil : "must start with https://"
///             },
///             CredentialField("token", prompt: "Pager token reference", help: "The pager's token.", secret: true),
///         ],
///         credentials: { answers in
///             try answers.require("url", "token")
///             return [("url", answers["url"]!), ("token", answers["token"]!)]
///         })
/// }
/// ```
///
/// `hub map-app --app notes.contoso.com --pager-url https://pager.example --pager-token env:PAGER`
/// then writes `credentials: { pager: { url: …, token: env:PAGER } }`, and the plugin's
/// ``TransportPlugin/readCredentials(_:)`` and ``TransportPlugin/checkCredentials(_:settings:online:)``
/// check the result before anything is saved (the same checks `hub config check` and `hub serve` make).
public struct TransportOnboarding: Sendable {
    /// The credentials asked for, in the order of the wizard's questions and of `--help`.
    public var fields: [CredentialField]

    /// Makes the entries of `credentials.<id>` from the answers; called when at least one field was
    /// given. Each field's own ``CredentialField/check`` has passed by then; this checks how they go
    /// together.
    /// - Throws: ``CredentialProblems`` naming the flags to add or fix.
    public var credentials: @Sendable (_ answers: CredentialAnswers) throws -> [(key: String, value: String)]

    /// The transport's emulator, run by `hub emulate <name>`; `nil` when it has none.
    public var emulator: TransportEmulator?

    /// - Parameters:
    ///   - fields: the credentials asked for, in order.
    ///   - credentials: makes the entries of `credentials.<id>` from the answers.
    ///   - emulator: the transport's emulator for `hub emulate`, if any.
    public init(
        fields: [CredentialField],
        credentials: @escaping @Sendable (_ answers: CredentialAnswers) throws -> [(key: String, value: String)],
        emulator: TransportEmulator? = nil
    ) {
        self.fields = fields
        self.credentials = credentials
        self.emulator = emulator
    }
}

extension TransportOnboarding {
    /// The onboarding of a transport whose apps need no credentials of their own (`map-app` has no
    /// flags or questions for it), only an emulator for `hub emulate`.
    /// - Parameter emulator: the transport's emulator.
    public init(emulator: TransportEmulator) {
        self.init(fields: [], credentials: { _ in [] }, emulator: emulator)
    }
}

/// One credential of a transport: a `map-app` flag, a wizard question, and its check.
public struct CredentialField: Sendable {
    /// How the value is given.
    public enum Input: Sendable, Hashable {
        /// A value written as given (a key ID, an environment).
        case value
        /// A file: a path (relative to the working directory) becomes a `file:` reference relative to
        /// hub.yaml's folder; `file:…` and `env:…` are kept as given.
        case file
    }

    /// The flag without the transport's prefix: `key-id` is `--apns-key-id`.
    public var name: String
    /// The wizard's question; `nil` when the wizard does not ask it (a flag only).
    public var prompt: String?
    /// The flag's help, one sentence.
    public var help: String
    /// Whether the value is secret: as a ``Input/value`` it must then be a reference (`env:NAME` or
    /// `file:path`), never the secret itself, so that hub.yaml and the terminal never hold it.
    public var secret: Bool
    /// How the value is given.
    public var input: Input
    /// The wizard's answer when the question is left empty; `""` lets it be skipped.
    public var defaultAnswer: String?
    /// What is wrong with a value as typed (for a ``Input/file``, the path), one phrase saying what to
    /// fix, such as `must be 10 letters or digits`; `nil` when it is fine.
    public var check: @Sendable (_ value: String) -> String?

    /// - Parameters:
    ///   - name: the flag without the transport's prefix (`key-id` for `--apns-key-id`).
    ///   - prompt: the wizard's question; `nil` for a flag the wizard does not ask.
    ///   - help: the flag's help, one sentence.
    ///   - secret: whether the value is secret (then given as `env:NAME` or `file:path`).
    ///   - input: a plain value or a file.
    ///   - defaultAnswer: the wizard's answer to an empty line (`""`: the question may be skipped).
    ///   - check: what is wrong with a value, or `nil`; accepts everything by default.
    public init(
        _ name: String, prompt: String? = nil, help: String, secret: Bool = false, input: Input = .value,
        defaultAnswer: String? = nil, check: @escaping @Sendable (_ value: String) -> String? = { _ in nil }
    ) {
        self.name = name
        self.prompt = prompt
        self.help = help
        self.secret = secret
        self.input = input
        self.defaultAnswer = defaultAnswer
        self.check = check
    }

    /// What is wrong with a value as given, one phrase saying what to fix; `nil` when it is fine.
    /// A secret ``Input/value`` must be a reference (`env:NAME`, `file:path`); a ``Input/file`` path
    /// must exist (a reference is taken as is); then ``check`` has its say.
    /// - Parameter value: the flag's value or the wizard's answer.
    public func problem(_ value: String) -> String? {
        let isReference = value.hasPrefix("env:") || value.hasPrefix("file:")
        switch input {
        case .value:
            if secret && !isReference { return "is a secret: give a reference, env:NAME or file:path, not the value" }
        case .file:
            if isReference { return nil }
            if !FileManager.default.fileExists(atPath: value) { return "\(value) does not exist" }
        }
        return check(value)
    }
}

/// The answers given for one transport's fields, handed to ``TransportOnboarding/credentials``.
public struct CredentialAnswers: Sendable {
    /// The transport being onboarded.
    public var transport: TransportID
    /// The app's domain (`--app`).
    public var appID: String
    /// The folder of hub.yaml (paths written as `file:` references are relative to it).
    public var directory: String
    /// The answers by field name; ``CredentialField/Input/file`` values are already `file:` references.
    public var values: [String: String]
    /// Prints a line for the operator (a generated key's location, a public key to copy).
    public var note: @Sendable (String) -> Void

    /// - Parameters:
    ///   - transport: the transport being onboarded.
    ///   - appID: the app's domain.
    ///   - directory: the folder of hub.yaml.
    ///   - values: the answers by field name.
    ///   - note: prints a line for the operator.
    public init(
        transport: TransportID, appID: String, directory: String, values: [String: String],
        note: @escaping @Sendable (String) -> Void = { print($0) }
    ) {
        self.transport = transport
        self.appID = appID
        self.directory = directory
        self.values = values
        self.note = note
    }

    /// The answer for a field, if given.
    public subscript(name: String) -> String? { values[name] }

    /// The flag of a field as the operator types it: `--apns-key-id` for `key-id`.
    public func flag(_ name: String) -> String { "--\(transport.rawValue)-\(name)" }

    /// A path as a hub.yaml `file:` reference: relative to hub.yaml's folder when it is inside it.
    /// - Parameter path: absolute, or relative to the working directory.
    public func fileReference(_ path: String) -> String { Self.fileReference(path, directory: directory) }

    /// A path as a hub.yaml `file:` reference: relative to `directory` when it is inside it.
    /// - Parameters:
    ///   - path: absolute, or relative to the working directory.
    ///   - directory: the folder of hub.yaml.
    public static func fileReference(_ path: String, directory: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        let standardized = URL(fileURLWithPath: absolute).standardizedFileURL.path
        let base = URL(fileURLWithPath: directory).standardizedFileURL.path
        if standardized.hasPrefix(base + "/") { return "file:" + standardized.dropFirst(base.count + 1) }
        return "file:" + standardized
    }

    /// Throws one problem per field of `names` that was not given, saying which flags it goes with.
    public func require(_ names: String...) throws {
        let given = values.keys.sorted().map(flag).joined(separator: ", ")
        let missing = names.filter { values[$0] == nil }
        guard !missing.isEmpty else { return }
        throw CredentialProblems(missing.map { "\(flag($0)) is required with \(given)" })
    }
}

/// Why answers cannot make a transport's credentials: one sentence each, naming the flag to fix.
public struct CredentialProblems: Error, Sendable, CustomStringConvertible {
    /// The problems.
    public var problems: [String]

    /// - Parameter problems: one sentence each, naming the flag to fix.
    public init(_ problems: [String]) { self.problems = problems }

    /// The problems, one per line.
    public var description: String { problems.joined(separator: "\n") }
}

/// A transport's emulator: a stand-in for the provider on loopback, run by `hub emulate <name>`.
///
/// The first-party plugins bring theirs (`hub emulate apns|fcm|wns|webpush|unifiedpush|webhook`);
/// `hub emulate` offers exactly the emulators of the plugins the command line was given, and says
/// so in `hub emulate --help`.
public struct TransportEmulator: Sendable {
    /// The name after `hub emulate`.
    public var name: String
    /// One line for `hub emulate --help`.
    public var abstract: String
    /// Runs the emulator with what `hub emulate <name>` was given until the process is stopped.
    /// - Throws: when the arguments are wrong or it cannot start; the message says what to fix.
    public var run: @Sendable (_ context: EmulatorContext) async throws -> Void

    /// An emulator that needs only the arguments after its name.
    /// - Parameters:
    ///   - name: the name after `hub emulate`.
    ///   - abstract: one line for `hub emulate --help`.
    ///   - run: runs the emulator with the arguments after its name.
    public init(
        name: String, abstract: String, run: @escaping @Sendable (_ arguments: [String]) async throws -> Void
    ) {
        self.init(name: name, abstract: abstract, runWith: { context in try await run(context.arguments) })
    }

    /// An emulator that reads more of what the command line knows (hub.yaml's apps, say).
    /// - Parameters:
    ///   - name: the name after `hub emulate`.
    ///   - abstract: one line for `hub emulate --help`.
    ///   - run: runs the emulator with the arguments after its name and the command line's context.
    public init(
        name: String, abstract: String,
        runWith run: @escaping @Sendable (_ context: EmulatorContext) async throws -> Void
    ) {
        self.name = name
        self.abstract = abstract
        self.run = run
    }
}

/// What `hub emulate <name>` hands a plugin's emulator.
public struct EmulatorContext: Sendable {
    /// The arguments after the emulator's name.
    public var arguments: [String]
    /// Reads hub.yaml at a path with the command line's plugins and prints its problems (file:line:
    /// column) to standard error; returns its apps, or `nil` when it could not be read at all.
    public var apps: @Sendable (_ configPath: String) -> [CrossDeviceApp]?
    /// Prints a line where the command line prints its errors (standard error).
    public var printError: @Sendable (_ line: String) -> Void

    /// - Parameters:
    ///   - arguments: the arguments after the emulator's name.
    ///   - apps: reads the apps of a hub.yaml; none by default.
    ///   - printError: prints a line of error output; to standard error by default.
    public init(
        arguments: [String], apps: @escaping @Sendable (_ configPath: String) -> [CrossDeviceApp]? = { _ in nil },
        printError: @escaping @Sendable (_ line: String) -> Void = EmulatorContext.writeToStandardError
    ) {
        self.arguments = arguments
        self.apps = apps
        self.printError = printError
    }

    /// Writes a line to standard error.
    /// - Parameter line: the line, without its line feed.
    public static func writeToStandardError(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
