import HubCore
import Testing

@Suite("platform app IDs, domains and secrets")
struct PlatformTests {
    @Test(
        "iOS bundle IDs",
        arguments: [
            ("com.contoso.notes", true), ("com.contoso.notes-beta", true), ("notes", false), ("com..notes", false),
            ("com.contoso.notes_beta", false), ("com.contoso.nötes", false),
        ])
    func bundleIDs(id: String, valid: Bool) {
        #expect((Platform.ios.problem(withAppID: id) == nil) == valid)
    }

    @Test(
        "Android package names",
        arguments: [
            ("com.contoso.notes", true), ("com.contoso.notes_lite", true), ("com.1contoso.notes", false),
            ("notes", false), ("com.contoso-notes.app", false),
        ])
    func packageNames(id: String, valid: Bool) {
        #expect((Platform.android.problem(withAppID: id) == nil) == valid)
    }

    @Test(
        "Windows package family names",
        arguments: [
            ("Contoso.Notes_8wekyb3d8bbwe", true), ("Microsoft.WindowsCalculator_8wekyb3d8bbwe", true),
            ("Contoso.Notes", false), ("Contoso.Notes_8wekyb3d8bbw", false), ("Contoso.Notes_8WEKYB3D8BBWE", false),
            ("ab_8wekyb3d8bbwe", false), ("Contoso.Notes_8wekyb3d8bbwi", false),
        ])
    func packageFamilyNames(id: String, valid: Bool) {
        #expect((Platform.windows.problem(withAppID: id) == nil) == valid)
    }

    @Test(
        "web origins",
        arguments: [
            ("https://notes.contoso.com", true), ("https://notes.contoso.com:8443", true),
            ("http://localhost:3000", true),
            ("https://notes.contoso.com/", false), ("ftp://notes.contoso.com", false), ("notes.contoso.com", false),
            ("https://notes.contoso.com:99999", false), ("https://user@notes.contoso.com", false),
        ])
    func webOrigins(id: String, valid: Bool) {
        #expect((Platform.web.problem(withAppID: id) == nil) == valid)
    }

    @Test("domains and package SIDs")
    func domainsAndSIDs() {
        #expect(DomainName.problem("notes.contoso.com") == nil)
        #expect(DomainName.problem("localhost") == nil)
        #expect(DomainName.problem("notes") != nil)
        #expect(DomainName.problem("-bad.contoso.com") != nil)
        #expect(DomainName.problem("under_score.contoso.com") != nil)
    }

    @Test("secrets never show their value and compare in constant time")
    func secrets() {
        let secret = Secret("hunter2-very-secret", source: "env:PASSWORD")
        #expect("\(secret)" == "<secret from env:PASSWORD>")
        #expect(String(reflecting: secret) == "<secret from env:PASSWORD>")
        #expect(!"\([secret])".contains("hunter2"))
        #expect(secret.constantTimeEquals("hunter2-very-secret"))
        #expect(!secret.constantTimeEquals("hunter2-very-secreT"))
        #expect(!secret.constantTimeEquals("hunter2"))
        #expect(!secret.constantTimeEquals(""))
    }

    @Test("a platform app ID mapped by two apps is refused by the router")
    func routerConflicts() throws {
        let a = CrossDeviceApp(id: "a.contoso.com", name: "A", platforms: [.ios: ["com.contoso.shared"]])
        let b = CrossDeviceApp(id: "b.contoso.com", name: "B", platforms: [.ios: ["com.contoso.shared"]])
        #expect(throws: HubError.self) { try Router(apps: [a, b], transports: []) }
        let router = try Router(apps: [a], transports: [])
        #expect(router.app(for: .ios, appID: "com.contoso.shared")?.id == "a.contoso.com")
        #expect(router.app(for: .android, appID: "com.contoso.shared") == nil)
    }
}
