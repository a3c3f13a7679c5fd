public import Foundation

/// Reads a `Retry-After` header: delay-seconds or an HTTP date (RFC 9110 §10.2.3), as a delay
/// from `now`; `nil` when absent or neither. Shared by the transports that talk HTTP to a provider
/// and by HubClient.
public enum RetryAfter {
    public static func parse(_ value: String?, now: Date) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value) { return .seconds(max(0, seconds)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return .seconds(max(0, Int(date.timeIntervalSince(now).rounded(.up))))
    }
}
