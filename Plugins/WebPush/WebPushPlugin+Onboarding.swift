import Foundation
public import HubCore
import HubEmulatorKit

extension WebPushPlugin {
    /// `hub map-app --webpush-subject mailto:… [--webpush-key vapid.pem]`, and the wizard's Web Push
    /// questions for an app that maps the web: `credentials.webpush` with the VAPID key file, made
    /// (a new P-256 key, mode 0600, never printed) when it does not exist; its public key, the
    /// `applicationServerKey` pages subscribe with, is printed. Its emulator is `hub emulate webpush`
    /// (``WebPushEmulator``, Emulator/).
    public var onboarding: TransportOnboarding? {
        TransportOnboarding(
            fields: [
                CredentialField(
                    "subject", prompt: "Web Push VAPID contact (a mailto: or https: URL)",
                    help: "Web Push VAPID contact: a mailto: or https: URL. Writes credentials.webpush.",
                    check: { VAPIDCredentials.subjectProblem($0) }),
                CredentialField(
                    "key", prompt: "VAPID private key file (PEM; empty: vapid-<app>.pem, generated)",
                    help: "Web Push VAPID private key file (PEM); generated (mode 0600) when it does not exist.",
                    defaultAnswer: ""),
            ],
            credentials: { answers in
                guard let subject = answers["subject"] else {
                    throw CredentialProblems([
                        "\(answers.flag("key")) goes with \(answers.flag("subject")) <mailto:… or https://…>"
                    ])
                }
                let given = answers["key"].flatMap { $0.isEmpty ? nil : $0 } ?? "vapid-\(answers.appID).pem"
                let path =
                    given.hasPrefix("/")
                    ? given : URL(fileURLWithPath: answers.directory).appendingPathComponent(given).path
                let key: VAPIDKey
                if let existing = FileManager.default.contents(atPath: path) {
                    do {
                        key = try VAPIDKey(privateKey: String(decoding: existing, as: UTF8.self))
                    } catch {
                        throw CredentialProblems(["\(answers.flag("key")): \(path): \(error)"])
                    }
                } else {
                    key = VAPIDKey.generate()
                    try Self.createPrivateFile(path, contents: Data(key.pemRepresentation.reveal().utf8), answers)
                    answers.note(
                        "webpush: wrote a new VAPID key to \(path) (mode 0600; keep it private and back it up)")
                }
                answers.note("webpush: applicationServerKey for pushManager.subscribe: \(key.publicKeyBase64URL)")
                return [("vapidPrivateKey", answers.fileReference(path)), ("subject", subject)]
            },
            emulator: .command(WebPushEmulatorCommand.self, name: "webpush"))
    }

    /// Creates `path` with mode 0600; fails instead of replacing an existing file.
    private static func createPrivateFile(_ path: String, contents: Data, _ answers: CredentialAnswers) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else {
            throw CredentialProblems([
                "\(answers.flag("key")): \(path) could not be created: \(String(cString: strerror(errno)))"
            ])
        }
        defer { close(descriptor) }
        let written = contents.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == contents.count else {
            throw CredentialProblems(["\(answers.flag("key")): \(path) could not be written"])
        }
    }
}
