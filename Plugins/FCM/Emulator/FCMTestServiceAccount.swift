import Foundation
import HubCore

/// A Google service account for tests and `hub emulate fcm`: a project, a client e-mail, a key ID and
/// an RSA-2048 key whose public half the ``FCMEmulator`` checks assertions against.
///
/// The two keys below were generated for this test kit and are used nowhere else; they are not
/// secrets. ``primary`` and ``secondary`` use different keys, so a test can sign with the wrong one.
public struct FCMTestServiceAccount: Sendable, Hashable {
    public var projectID: String
    public var clientEmail: String
    public var privateKeyID: String
    /// PEM PKCS#8 RSA private key.
    public var privateKeyPEM: String

    public init(projectID: String, clientEmail: String, privateKeyID: String, privateKeyPEM: String) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.privateKeyPEM = privateKeyPEM
    }

    /// Project `hub-test-project`, key `test-key-1`.
    public static let primary = FCMTestServiceAccount(
        projectID: "hub-test-project", clientEmail: "hub-sender@hub-test-project.iam.gserviceaccount.com",
        privateKeyID: "test-key-1", privateKeyPEM: firstKey)

    /// Project `hub-other-project`, key `test-key-2` (a different RSA key from ``primary``).
    public static let secondary = FCMTestServiceAccount(
        projectID: "hub-other-project", clientEmail: "hub-sender@hub-other-project.iam.gserviceaccount.com",
        privateKeyID: "test-key-2", privateKeyPEM: secondKey)

    /// The hub's credentials for this account, exchanging assertions at `tokenURI`.
    public func credentials(tokenURI: String) -> FCMCredentials {
        FCMCredentials(
            projectID: projectID, clientEmail: clientEmail, privateKeyID: privateKeyID,
            privateKey: Secret(privateKeyPEM, source: "test:\(privateKeyID)"), tokenURI: tokenURI)
    }

    /// The service-account JSON key file Google would hand out, with `token_uri` set to `tokenURI`.
    public func serviceAccountJSON(tokenURI: String) -> String {
        func quoted(_ text: String) -> String {
            "\""
                + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n") + "\""
        }
        let fields: [(String, String)] = [
            ("type", "service_account"), ("project_id", projectID), ("private_key_id", privateKeyID),
            ("private_key", privateKeyPEM), ("client_email", clientEmail), ("client_id", "100000000000000000001"),
            ("auth_uri", "https://accounts.google.com/o/oauth2/auth"), ("token_uri", tokenURI),
        ]
        return "{\n" + fields.map { "  \(quoted($0.0)): \(quoted($0.1))" }.joined(separator: ",\n") + "\n}\n"
    }
}

private let firstKey = """
    -----BEGIN PRIVATE KEY-----
    MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQC2WvVxy97Xg6C3
    FtZ/Hj8BsBwkbjITFCP+oFdUYTXCqwBkSUIG681sUp9jQlAFW9/E51rGklOAKvdo
    vwwkiSVfbpcofebXyE/RqXNA7EmixfildBO9KhVIyR0UsPKmDak1UB5cgausNCrF
    GsDKHmFigdGZ7ZKyQw2dxt4KCWTdnU/oBdIAl11yUtYP4BLT309alMe46oSbW83J
    l1c054GB+AR8jroO1yKMCx9l56ivHl0NR865l/JY2LOnDw9Lfm5E/DZjLdDElGSY
    YojIvQTM3+Pyk4aPn5zM4RU8Ia+Io0P5/IATuEvoufaXTCjwJwuYZ8RUP3e4aYl7
    JXM/8dFxAgMBAAECggEAAJK1Baz899XVxVbcvh9G638letP+/l+bCdpbOpGyzi2Z
    +uwJLrWiv9cwzEpu7zILLYaccCDmrYb6X6bwYjSCodlFKmxz3g7ReRCUjcTi/zBA
    AEAcQu/NC5KjOmI1zwGzu+NzBvolg0KSNavy+hJMnsyW5Ko8wpM9SZcbMfJL3HpC
    2Z6fPDDecpjyrBLX1yA5pC3kD27rvCJGqkuB5l3GL+TbeL+33KqeuARi1hy76MKF
    Pxj9TF0GR/hLNjnhSSutqzAkrw4cM2l9T7vPzbSHVFa3QJcDXrm3MLZ5iJiMJXI0
    edoMj1Vy6VzjKMi4PgQUr9E66oUF3/Opjp/5wQrsAQKBgQDfsAkFZF2ILBB5Cee4
    B6oxCvSWL/VufsUuNa34Fqlw9DbjAr7dYVKrVmxpcvm4wM+r+EKExIgxdZC8bTGR
    bc0R52FUifdNj52w7kowqBfK2TrDCn2sAPk4rfGGnl4dPjQJL+Jo7LSSoI9V0YLl
    hpGX8Ops5dT3eXre4c8ezLjyAQKBgQDQsnRok5pahWr+lSbQZoNndE4eYksbvZdW
    092HQd12AmIOIStx7PuspF9zFvCaiT+CYC+goVRZ/Lh80hEPYslvlyuxLYZdrtlR
    WQucAPN9jDcQeLd9WUBQOAEeWbbXO1dY9uvZC8MLFfj8OoRMLtB/858Go3kvbrBM
    tV3wKUD/cQKBgESPWQR9EanmD5p5rbsbJk/n0rWht3EJi/gw3cSXdZG4WIZV1hhW
    dxcq4wmjAuVcu4ozCnhVIIVASn9mXHX9mIgvSga2TsVICoYrUzP8oWY8FKWpNoGc
    vsZfkhK3wZLm+N4D/jo4qtPyQFyGXb9p8oAGiGOeQhsj8cQUo/4Fs34BAoGAE4vD
    L1AzsqqwPKvHeNlBEV1pO5tFIZH+LJmnM9XNYhITEPO2V/M0FxVGA0dwvWiBVDqh
    +09g0RTESpx6EJDWAOeNpgh3fyqzG9VVKwVDyMxrE9XaiZjkVx8Hq8oHP91E7wYh
    TLC3UcB7E1R/s4rm6DTu/fYtkW2ygVyzMZ0Lg2ECgYBMWIEfDrYtfRc4gJSoMK4+
    nVUCcd0dI0obzmAxEkni/isjzKeOk+8m36DvGJiqMXdfXDCCu3Qmcv6i1M5ciApu
    oc0KsHWXnEBswtC9GvzZYs/7Nz4qvVfwz2c7aDu3ds6JwRWDc/JIoTDfw1uLuLgf
    uNAJ0c+Xri2mELNYF2XDcw==
    -----END PRIVATE KEY-----
    """

private let secondKey = """
    -----BEGIN PRIVATE KEY-----
    MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQCrz6kIAv3vKB7G
    FVDpc5Bqh6Nl2eqCZnV3MWJ3DGtY2GYZdZioU6buOKUu1FUAu6l6I/C23Rr91mdv
    8ojIQQAsu3cx05tInI2/YnxeWef2pUMxaRdvecJKwCgBJqweZk61fXXGy9WoBEIO
    ny4Dvxp0CqzjK+4DJuVDZLIMvDIpmNiTTJXUpgCAEyYFmykqhC1s5SJwQF1iRweY
    /i4tL4DWOt12WKSitI6p/pDGLNeJLBObRwXfCw6JVeDfG4+a0WJgfupKRQoHUDOC
    lGq8tVJiywFysc7XBnbYBF0ObZ2bzwrgXnj40W7yDeODTR2D8YaErsxdiOJbEKyX
    nlFtGbGFAgMBAAECggEAUQIqJEVo3r0PeX0ud8xN4PTQRaMwb8iIhSkrUI9yA+OQ
    jFuGnYNHt5XMyJ5D8AMLvzO3+TiaU+omPkHgXW9MekrvwfYQhvWN3hm9Iy2H8iLs
    4hy3eI+z3NPqaNSHnhPF88vSXufX9w7+6G8EXq7Z9bHc34XkhObvfU26p8eKbVLE
    0IjGnpOWn9KSprQ6hO1iT0yKKzHvRBLyTlO/nOrRqnQTknF2ddlQfRK/Z9UqZ9rB
    7IZuI1ELFRIChu2RhD5rpWFkGlgrPSzm29Cyr5DzsFNa+CWriFav78my01cHzDsO
    cvWQwE6fjXOan+8fbeWvGXhm+/3cAjOBdgBRaG4rZwKBgQDws16rsyA+0stVK4YR
    E49z4oJMWLu9kWJ2L3wyhk5QVd4tqpWv6skN/+qghRx+/osZ/Nn06o2bHAURjqpm
    rYO1JvZYEIZTHkX4inhMKAC6wNSx6a9V/o9NyO286S+3YD8pEcXiFA/5bGzkFfjk
    c6MNIdgJ8Nyr8o0d7NbLseIl8wKBgQC2u1XU9fKXJOnY6zlu0ghWM68r35ZmOrHF
    ioNrwAt7YDlPnoTNFQIYoGhhSQIcYNCWvTin+VbWQgPgsRo6vIP+9Fs2fNT1Rjue
    eXDt8ZEnEAcPUAGEkGuXvO2nIh2TW+1ghlud5BotLPT5e4XP1PM/abYE1c5oTmV6
    f4COiS1QpwKBgB9BS2PESMWfnaObmTcScSg9G2pKg2ZkQILUO65b3kN0QvtvESzc
    serNdmwNnNuotetT+AFji6u+gbH78oiOs3GMc6SP0MFuRuu1H1XUQ/P8IiJQE+J4
    wab6FlTXesi3CLyOgEGRFVnwCFu9tqoDkgKciG8SBbWWM1jVbjbZDGKdAoGALyeI
    rrwJLhfIgMGywHZS0Gvl+FxqY1ciKOflohic3emm4HT3sDSLpe8/AFvmv4v8R+ns
    hOxDDGdcuM77Bc1AArrsDtOH4QOOvwZ3re94lav9JmZu/daG7VFDwq17FFvUleQW
    IFiMqLvBO+A0V72MSADvh6/k4+XXKhVdB2s+1mECgYAsmc4hVm1adHdo6IrhssTV
    xYj2x2jlytoK21F5pWizt1PBStgWVyRq3li13cNyJjAkWh6p7GBzZM1m/h0pGJ1j
    KERoGHA7BdS2hJaOAUCzeo5poMiG9p0RQqD1zb761F7bUPhXam607R4QKupmk9+/
    qx0P7xSLB/Sss6pCHrRVxg==
    -----END PRIVATE KEY-----
    """
