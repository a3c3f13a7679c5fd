import ArgumentParser
import Foundation
import HubConfig
import HubWebPush

extension MapAppCommand.Map {
    /// `credentials.webpush` from `--webpush-subject` and `--webpush-key` (as `--credentials webpush='{…}'`
    /// would give it): the key file is made
    /// (a new P-256 key, mode 0600, never printed) when it does not exist, and its public key, the
    /// `applicationServerKey` pages subscribe with, is printed.
    func webpushCredentials(app: String, base: String) throws -> (transport: String, yaml: String)? {
        guard webpushSubject != nil || webpushKey != nil else { return nil }
        guard let subject = webpushSubject else {
            throw ValidationError("--webpush-key goes with --webpush-subject <mailto:… or https://…>")
        }
        if let problem = VAPIDCredentials.subjectProblem(subject) {
            throw ValidationError("--webpush-subject \(problem)")
        }
        let given = webpushKey ?? "vapid-\(app).pem"
        let path = given.hasPrefix("/") ? given : URL(fileURLWithPath: base).appendingPathComponent(given).path
        let key: VAPIDKey
        if let existing = FileManager.default.contents(atPath: path) {
            do {
                key = try VAPIDKey(privateKey: String(decoding: existing, as: UTF8.self))
            } catch {
                throw ValidationError("--webpush-key: \(path): \(error.message)")
            }
        } else {
            key = VAPIDKey.generate()
            try PrivateFiles.create(path, contents: Data(key.pemRepresentation.reveal().utf8))
            print("webpush: wrote a new VAPID key to \(path) (mode 0600; keep it private and back it up)")
        }
        print("webpush: applicationServerKey for pushManager.subscribe: \(key.publicKeyBase64URL)")
        func quoted(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        let reference = FlagPath.reference(path, base: base)
        return ("webpush", "{vapidPrivateKey: \(quoted(reference)), subject: \(quoted(subject))}")
    }
}
