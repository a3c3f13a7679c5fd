/// Transport credentials with a public key that the app's devices subscribe with: Web Push's VAPID
/// public key, the `applicationServerKey` a page passes to `pushManager.subscribe`.
///
/// The hub serves the key to the app's signed-in devices (`GET /v1/apps/{app}/webpush`), so a
/// conforming type returns only what is public by nature, never a private key or a secret.
public protocol ApplicationServerKeyCredentials: TransportCredentials {
    /// The public key in URL-safe base64 without padding (for VAPID, the 65-byte uncompressed P-256 point).
    var applicationServerKey: String { get }
}
