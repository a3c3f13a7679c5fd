import Foundation

/// The UnifiedPush endpoint check (UnifiedPush server specification): a GET of the full endpoint
/// URL must answer `{"unifiedpush":{"version":1}}` before an application server uses the endpoint.
/// It keeps the hub from posting to addresses that are not push servers (SSRF).
enum UnifiedPushEndpointCheck {
    /// The answer a UnifiedPush push server gives to a GET of an endpoint.
    static let expected = #"{"unifiedpush":{"version":1}}"#

    /// Why the GET's answer (`status`, `body`) is not a UnifiedPush endpoint's, or `nil` when it is.
    static func problem(status: Int, body: String) -> String? {
        if (300...399).contains(status) {
            return "the endpoint check failed: the GET answered \(status), a redirect; UnifiedPush endpoints are "
                + "used as given and redirects are not followed"
        }
        guard status == 200 else {
            return "the endpoint check failed: the GET answered \(status) instead of 200 with \(expected); "
                + "is this the endpoint the distributor gave?"
        }
        let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        guard let unifiedpush = object?["unifiedpush"] as? [String: Any] else {
            return "the endpoint check failed: the GET answered 200 without \(expected); "
                + "the URL is not a UnifiedPush endpoint"
        }
        guard unifiedpush["version"] as? Int == 1 else {
            return "the endpoint check failed: the distributor answered unifiedpush.version "
                + "\(unifiedpush["version"].map { "\($0)" } ?? "(none)"); this hub speaks version 1"
        }
        return nil
    }
}
