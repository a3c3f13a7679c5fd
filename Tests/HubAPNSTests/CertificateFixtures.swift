import Foundation

/// A provider certificate for `com.contoso.notes` (subject UID, as Apple's certificates have it)
/// as a `.p12` with password `hub-test`, and the CA that issued it. Made once with OpenSSL 3 and
/// valid until 2126; kept as constants because the test target has no resources:
///
///     openssl ecparam -name prime256v1 -genkey -noout -out ca.key
///     openssl req -x509 -new -key ca.key -sha256 -days 36500 -subj "/O=NotificationHub tests/CN=…" -out ca.pem
///     openssl ecparam -name prime256v1 -genkey -noout -out client.key
///     openssl req -new -key client.key -subj "/UID=com.contoso.notes/CN=Apple Push Services: com.contoso.notes/…"
///     openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -days 36500 -extfile clientAuth.cnf -out client.pem
///     openssl pkcs12 -export -inkey client.key -in client.pem -passout pass:hub-test -out client.p12
enum CertificateFixtures {
    static let password = "hub-test"

    static let p12 = Array(Data(base64Encoded: p12Base64)!)

    private static let p12Base64 =
        "MIIE7AIBAzCCBKIGCSqGSIb3DQEHAaCCBJMEggSPMIIEizCCA0IGCSqGSIb3DQEHBqCCAzMwggMvAgEAMIIDKAYJKoZIhvcNAQcB"
        + "MFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAhrTT4Fxdf2YgICCAAwDAYIKoZIhvcNAgkFADAdBglghkgBZQMEASoEEPct"
        + "Bu7mKei14LWQ2MDGZMuAggLA8HCYFbymIJXG1unao6y1Fm5masfcnVDORX42qQ19dRugO6wvxyM9QLIx6KsEHmgvyJJRt8PJJVLm"
        + "uoWGyOFx+R9sJqKTYaZnUaviSCcPrHC2c8znn2SdzPobpO9WZ2xS0IJxq8sRDtSTZPk7Ab2ZPMLnCQe4CB0/DtaUAdYJcmB1lfcR"
        + "hU7yk90W35+qX1+/CHxDjDu+Zu7H+w2f7/O9VMbCQlHAo4R7NG7Gb2bg9nQdn9v+5us9BceGSI8h9E7lMmNtl4Nr3dNX7/7p2i8C"
        + "U82irrXHE5XMnDKn01k7pbxiwNs1071+3z/NkfVdOcqBm7CQ8i9GJkhPEDDhDYhiDInvh/8xJXJiP2/nLfzKl3td2Np26DHW9yB3"
        + "nvL86niDuVlE42m4FzJIVPoDsGlTX66WyfJb+9tngbnVsJlUxo1Xp0nRBZCQ0bYUMMTk/3/lQK/Qk58o8xYoPe53sVKG+7+z1LOX"
        + "ReFvsyUmhvyQ1QZSlU6KuOKHZx3vHwBUaU7iT4t8T9C6llzHqZ8KTY/EjPRTTD3wmYrMgFZbyoRA09IeynCCZ9uJ/ZKJ/11Rek4x"
        + "HIHWmGOWDoRDsdvHVQAQbtM49l8u4FRRgT05nAvVphze+2nNkd1IugNUANQ/myOJpkunYdjiwIQhN7MMPojMpYoIM5CZaDGB+CkX"
        + "rE06rzBrvIA9TECLZOKu7gbCgTodmumXJ91tCiAv9OTEv+7k000HRgWXwBl9UYmtkF579PD1u619ZlYRj+zt+ci2jCi/6hd7xGyH"
        + "YZagKyXVtf3bu1lwdmqQfUYd/sfeI4a8eDxzZVQ6NQOQvzyxXzBhYRzafq9vjUWraWONe/PjemsFmtMvpTAshSJBr/tPAQXDXxxM"
        + "o5OcUTqwJ7kRkxgBsAW2Yd3Qs4gmjdFkeGUxFIDWx18UbnJEG55zCMn3sThmhFEwggFBBgkqhkiG9w0BBwGgggEyBIIBLjCCASow"
        + "ggEmBgsqhkiG9w0BDAoBAqCB7zCB7DBXBgkqhkiG9w0BBQ0wSjApBgkqhkiG9w0BBQwwHAQIPGkbqEYY+UYCAggAMAwGCCqGSIb3"
        + "DQIJBQAwHQYJYIZIAWUDBAEqBBCqfTXRcpvhOJdR0xPgk84jBIGQVQ5vF17Iedr8ERne7uoA9f7qAPK7rUeLSpSDYvlBsRkcOX/I"
        + "dY5AuKhtbxq3SGlwE/SZ8QpAEvFtjaN5BkdUyyad63XEVtKWjCvIMa4sifuVuo4l0spXRC3+qOjhuOpijqt0EvcsfEfV3LtNB1Wf"
        + "fU5PehmEV6odi9bn6AbdVI+YZjn9/RUubOgJPr7gnWTIMSUwIwYJKoZIhvcNAQkVMRYEFH9EMFOZFTWrwxdNP6ngBfn++HpUMEEw"
        + "MTANBglghkgBZQMEAgEFAAQgnbit7RAiKVaFEa/sAu9Ql7vIg5XpbFB2oT4CeE5biicECP3NE0D7/JCXAgIIAA=="

    static let authorityPEM = """
        -----BEGIN CERTIFICATE-----
        MIICCDCCAa+gAwIBAgIUbRdtySNlSG+uocyg5Ssz8YTdxMEwCgYIKoZIzj0EAwIw
        WTEeMBwGA1UECgwVTm90aWZpY2F0aW9uSHViIHRlc3RzMTcwNQYDVQQDDC5GaXh0
        dXJlIEFwcGxlIFdvcmxkd2lkZSBEZXZlbG9wZXIgUmVsYXRpb25zIENBMCAXDTI2
        MTEyMjAzNTIxM1oYDzIxMjYxMDI5MDM1MjEzWjBZMR4wHAYDVQQKDBVOb3RpZmlj
        YXRpb25IdWIgdGVzdHMxNzA1BgNVBAMMLkZpeHR1cmUgQXBwbGUgV29ybGR3aWRl
        IERldmVsb3BlciBSZWxhdGlvbnMgQ0EwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNC
        AAROmUd0wybVgHE1hPPIX5VzGF/h64FEsO9B0lD95dlyAbQXo04qkMBSXgLNo0pl
        y+JC4ff7hqVJA2fdPYuSj36bo1MwUTAdBgNVHQ4EFgQU+LwJBQLE671gnCn9aAPg
        od3ezRkwHwYDVR0jBBgwFoAU+LwJBQLE671gnCn9aAPgod3ezRkwDwYDVR0TAQH/
        BAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiBOl7mYNahuQVCYkXVIn1OXF8kr3RWc
        T9nQExcm6fq20wIgQzU+uvQe13aJ54r34TyaOiPWejy1nz1V29Xb3PlIrZ0=
        -----END CERTIFICATE-----
        """
}
