import HubTesting
import Testing

/// `Store` is a composition of small protocols; the conformance suite says which checks test
/// which, so a store written one protocol at a time knows what it passes so far.
@Suite("Store conformance groups")
struct StoreConformanceGroupsTests {
    @Test("Every conformance check belongs to exactly one protocol's group")
    func everyCheckGrouped() {
        let grouped = StoreConformance.groups.flatMap(\.checks)
        let names = StoreConformance.all.map(\.name)
        #expect(Set(grouped).count == grouped.count, "a check is in two groups: \(grouped)")
        #expect(Set(names).subtracting(grouped).isEmpty, "not in any group: \(Set(names).subtracting(grouped))")
        #expect(Set(grouped).subtracting(names).isEmpty, "no such check: \(Set(grouped).subtracting(names))")
        #expect(StoreConformance.groups.map(\.checks.count).reduce(0, +) == names.count)
        #expect(!StoreConformance.checks(of: "OutboxStore").isEmpty)
    }
}
