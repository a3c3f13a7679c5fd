import HubClient

/// What the simulated device knows of the user's notifications, and the commands that change them.
actor Inbox {
    let reader: UserNotificationReader
    /// The latest copy of every notification seen, by hub ID.
    private var notifications: [String: UserNotification] = [:]

    init(reader: UserNotificationReader) {
        self.reader = reader
    }

    /// Prints a change from the feed, and remembers it.
    func received(_ change: UserNotification) {
        let known = notifications[change.id] != nil
        notifications[change.id] = change
        let verb =
            switch (change.status, change.userActionState) {
            case (.deleted, _): "deleted"
            case (.expired, _): "expired"
            case (_, .dismissed): "dismissed"
            default: known ? "updated" : "new"
            }
        print("← \(verb): \(Self.line(change))")
    }

    /// Runs one command line.
    /// - Returns: `false` to quit.
    func perform(_ line: String) async throws -> Bool {
        let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard let command = words.first?.lowercased() else { return true }
        do {
            switch command {
            case "list", "ls":
                try await list()
            case "read", "dismiss":
                guard words.count == 2 else {
                    print("usage: \(command) <id>  (the appNotificationId, or the start of the hub's ID)")
                    return true
                }
                try await update(words[1], dismiss: command == "dismiss")
            case "quit", "exit", "q":
                return false
            case "help", "?":
                print("list | read <id> | dismiss <id> | quit")
            default:
                print("unknown command '\(command)'; try help")
            }
        } catch let error as HubClientError {
            print("! \(error)")
        }
        return true
    }

    /// Prints the active notifications, newest first.
    func list() async throws {
        let batch = try await reader.readBatch(maxSize: 50)
        for notification in batch { notifications[notification.id] = notification }
        print(batch.isEmpty ? "no active notifications" : "\(batch.count) active notification(s):")
        for notification in batch { print("  " + Self.line(notification)) }
    }

    /// Marks a notification read, or dismisses it (universal dismiss).
    private func update(_ key: String, dismiss: Bool) async throws {
        guard var notification = find(key) else {
            print("no notification '\(key)'; list shows them")
            return
        }
        if dismiss {
            notification.userActionState = .dismissed
        } else {
            notification.readState = .read
        }
        try await notification.save()
        notifications[notification.id] = notification
        print("→ saved: \(Self.line(notification))")
    }

    private func find(_ key: String) -> UserNotification? {
        notifications.values.first { $0.appNotificationId == key }
            ?? notifications.values.filter { $0.id.hasPrefix(key) }.onlyElement
    }

    private static func line(_ notification: UserNotification) -> String {
        let text =
            notification.visualContent.map { "\($0.title)\($0.body.map { " — " + $0 } ?? "")" }
            ?? notification.rawContent ?? ""
        return "\(notification.appNotificationId) [\(notification.readState), \(notification.userActionState)] "
            + "\(text)  (id \(notification.id.prefix(8)))"
    }
}

extension Array {
    /// The element of a one-element array.
    fileprivate var onlyElement: Element? { count == 1 ? first : nil }
}
