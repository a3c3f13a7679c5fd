import Foundation
import Testing

@testable import HubCore

@Suite("delivery planner: the delivery rules, once")
struct DeliveryPlannerTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func endpoint(
        _ id: String, _ platform: Platform = .ios, _ transport: TransportID = .apns, state: EndpointState = .active
    ) -> Endpoint {
        Endpoint(
            id: id, appId: "app", userId: "alice", platform: platform, platformAppId: "com.contoso.notes",
            transport: transport, token: "t-\(id)", state: state, registeredAt: now)
    }

    static let endpoints = [
        endpoint("phone"), endpoint("tablet"), endpoint("android", .android, .fcm), endpoint("web", .web, .polling),
        endpoint("old", state: .inactive),
    ]

    static func notification(
        priority: NotificationPriority = .none, fallback: Int? = nil, platforms: [Platform] = [],
        visual: Bool = true
    ) -> UserNotification {
        var notification = UserNotification(
            id: "n1", appId: "app", userId: "alice", appNotificationId: "a1",
            payload: NotificationPayload(
                rawContent: "{}", visualContent: visual ? VisualContent(title: "Hello") : nil),
            expirationDateTime: now.addingTimeInterval(3600), createdDateTime: now, lastModifiedDateTime: now,
            changeVersion: 7)
        notification.priority = priority
        notification.targetPolicy = TargetPolicy(platformTypes: platforms)
        notification.fallbackPolicy = fallback.map { FallbackPolicy(timeoutSeconds: $0) }
        return notification
    }

    func plan(_ notification: UserNotification, _ change: DeliveryPlanner.Change) -> [String] {
        DeliveryPlanner.standard.plan(notification, change, endpoints: Self.endpoints, now: Self.now).map {
            "\($0.endpointId):\($0.kind):\(Int($0.dueAt.timeIntervalSince(Self.now)))"
        }
    }

    @Test("a publish taps every active push endpoint; polling and inactive endpoints get no rows")
    func taps() {
        #expect(
            plan(Self.notification(), .published(mode: .shoulderTap))
                == ["phone:shoulderTap:0", "tablet:shoulderTap:0", "android:shoulderTap:0"])
    }

    @Test("an app with badges taps the other endpoints of a state change after the badge window; others at once")
    func badgeWindow() {
        let badges = DeliveryPlanner(inProcessTransports: [TransportID("polling")], badgeApps: ["app"])
        let window = DeliveryPlanner.badgeUpdateWindow
        func plan(_ planner: DeliveryPlanner, _ change: DeliveryPlanner.Change) -> [String] {
            planner.plan(Self.notification(), change, endpoints: Self.endpoints, now: Self.now).map {
                "\($0.endpointId):\($0.dueAt.timeIntervalSince(Self.now))"
            }
        }
        #expect(
            plan(badges, .stateChanged(except: "phone")) == ["tablet:\(window)", "android:\(window)"],
            "a read waits for more reads to merge")
        #expect(plan(badges, .published(mode: .shoulderTap)) == ["phone:0.0", "tablet:0.0", "android:0.0"])
        #expect(plan(badges, .deleted) == ["phone:0.0", "tablet:0.0", "android:0.0"])
        #expect(plan(.standard, .stateChanged(except: "phone")) == ["tablet:0.0", "android:0.0"], "no badges: at once")
    }

    @Test("visible mode with visual content: one visible delivery each; without visual content: taps")
    func visible() {
        #expect(
            plan(Self.notification(), .published(mode: .visible))
                == ["phone:visible:0", "tablet:visible:0", "android:visible:0"])
        #expect(
            plan(Self.notification(visual: false), .published(mode: .visible))
                == ["phone:shoulderTap:0", "tablet:shoulderTap:0", "android:shoulderTap:0"])
    }

    @Test("the target policy filters platforms; a high-priority tap with a fallback policy schedules its fallback")
    func targetingAndFallback() {
        #expect(
            plan(Self.notification(priority: .high, fallback: 90, platforms: [.ios]), .published(mode: .shoulderTap))
                == ["phone:shoulderTap:0", "phone:fallback:90", "tablet:shoulderTap:0", "tablet:fallback:90"])
        #expect(
            plan(Self.notification(priority: .low, fallback: 90, platforms: [.ios]), .published(mode: .shoulderTap))
                == ["phone:shoulderTap:0", "tablet:shoulderTap:0"], "no fallback below high priority")
        #expect(
            plan(Self.notification(priority: .high, fallback: 90), .published(mode: .visible))
                == ["phone:visible:0", "tablet:visible:0", "android:visible:0"], "no fallback beside a visible delivery"
        )
    }

    @Test("state changes tap every targeted endpoint but the one that made them; deletes and expiries tap the targeted")
    func otherChanges() {
        // An Android device never shows an iOS-only notification (its feed leaves it out), so no
        // change of it taps Android.
        let iosOnly = Self.notification(platforms: [.ios])
        #expect(plan(iosOnly, .stateChanged(except: "phone")) == ["tablet:shoulderTap:0"])
        #expect(plan(iosOnly, .deleted) == ["phone:shoulderTap:0", "tablet:shoulderTap:0"])
        #expect(plan(iosOnly, .expired) == ["phone:shoulderTap:0", "tablet:shoulderTap:0"])
        let everywhere = Self.notification()
        #expect(plan(everywhere, .stateChanged(except: "phone")) == ["tablet:shoulderTap:0", "android:shoulderTap:0"])
        #expect(plan(everywhere, .deleted) == ["phone:shoulderTap:0", "tablet:shoulderTap:0", "android:shoulderTap:0"])
    }

    @Test("a fallback policy's platforms narrow its fallbacks to their endpoints")
    func fallbackPlatforms() {
        var notification = Self.notification(priority: .high)
        notification.fallbackPolicy = FallbackPolicy(timeoutSeconds: 90, platformTypes: [.android])
        #expect(
            plan(notification, .published(mode: .shoulderTap))
                == ["phone:shoulderTap:0", "tablet:shoulderTap:0", "android:shoulderTap:0", "android:fallback:90"])
    }

    @Test("only taps coalesce; the in-process transports are the planner's to name")
    func coalescingAndInProcess() {
        let planned = DeliveryPlanner.standard.plan(
            Self.notification(priority: .high, fallback: 60), .published(mode: .shoulderTap),
            endpoints: Self.endpoints, now: Self.now)
        #expect(planned.filter(\.coalesces).map(\.kind) == [.shoulderTap, .shoulderTap, .shoulderTap])
        let custom = DeliveryPlanner(inProcessTransports: [.polling, .fcm])
        #expect(
            custom.plan(Self.notification(), .deleted, endpoints: Self.endpoints, now: Self.now).map(\.endpointId)
                == ["phone", "tablet"])
    }
}
