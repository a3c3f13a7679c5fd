import Foundation
import Testing

@testable import HubCore

@Suite("badge count: which notifications a badge counts, and how changes move the counters")
struct BadgeCountTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func notification(
        _ platforms: [Platform] = [], read: ReadState = .unread, action: UserActionState = .noInteraction,
        status: NotificationStatus = .active
    ) -> UserNotification {
        var notification = UserNotification(
            id: "n1", appId: "app", userId: "alice", appNotificationId: "a1",
            payload: NotificationPayload(rawContent: "{}"), expirationDateTime: now.addingTimeInterval(3600),
            createdDateTime: now, lastModifiedDateTime: now)
        notification.targetPolicy = TargetPolicy(platformTypes: platforms)
        notification.readState = read
        notification.userActionState = action
        notification.status = status
        return notification
    }

    func moves(_ before: UserNotification?, _ after: UserNotification) -> [String] {
        BadgeCount.changes(from: before, to: after).map { "\($0.scope)\($0.delta > 0 ? "+" : "")\($0.delta)" }
    }

    @Test("active, unread and not dismissed counts; read, dismissed, expired, deleted and scheduled do not")
    func counts() {
        #expect(BadgeCount.counts(Self.notification()))
        #expect(BadgeCount.counts(Self.notification(action: .activated)))
        #expect(BadgeCount.counts(Self.notification(action: .snoozed)))
        #expect(!BadgeCount.counts(Self.notification(read: .read)))
        #expect(!BadgeCount.counts(Self.notification(action: .dismissed)))
        for status in [NotificationStatus.expired, .deleted, .scheduled] {
            #expect(!BadgeCount.counts(Self.notification(status: status)), "\(status)")
        }
    }

    @Test("a change moves the counters of its scopes: every platform is '*', a targeted one its own")
    func changes() {
        #expect(moves(nil, Self.notification()) == ["*+1"])
        #expect(moves(nil, Self.notification([.ios, .android, .ios])) == ["ios+1", "android+1"])
        #expect(moves(Self.notification([.ios]), Self.notification([.ios], read: .read)) == ["ios-1"])
        #expect(moves(Self.notification([.ios]), Self.notification([.ios])) == [], "nothing changed")
        #expect(
            moves(Self.notification([.ios, .web]), Self.notification([.web, .windows])) == ["ios-1", "windows+1"])
        #expect(moves(Self.notification(read: .read), Self.notification(read: .read, status: .deleted)) == [])
        #expect(moves(nil, Self.notification(status: .scheduled)) == [])
    }

    @Test("a device's badge sums '*' and its platform, never below zero; merged deltas sum per counter")
    func badgeAndMerge() {
        #expect(BadgeCount.scopes(for: .ios) == ["*", "ios"])
        #expect(BadgeCount.badge(fromCounters: [2, 3]) == 5)
        #expect(BadgeCount.badge(fromCounters: [-1]) == 0)
        let delta = { (user: String, scope: String, by: Int) in
            BadgeDelta(appId: "app", userId: user, scope: scope, delta: by)
        }
        #expect(
            BadgeCount.merged([delta("a", "*", 1), delta("b", "*", 1), delta("a", "*", -1), delta("a", "ios", 2)])
                == [delta("b", "*", 1), delta("a", "ios", 2)])
    }
}
