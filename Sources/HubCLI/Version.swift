/// The version of this build of `hub`: `hub --version`, the start-up line of `hub serve`, and
/// CHANGELOG.md's newest heading.
enum HubVersion {
    static let current = "0.9.0"
}
