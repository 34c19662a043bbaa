/// The keys of one TLS connection, as `QUICKeyring` holds a QUIC connection's (and rustls its key
/// schedule apart from its state machine): the hellos' randoms, the suite, the secrets the key log
/// names for the client random, and the record protections made from them — TLS 1.3's from a
/// traffic secret (RFC 8446 §7.3), TLS 1.2's from the master secret's key block (RFC 5246 §6.3).
///
/// Input: the ClientHello's and ServerHello's randoms, the suite, encrypt-then-MAC, the key log.
/// Output: the secrets and record protections per direction; nil where they are not known.
struct TLSKeyring {
    let keyLog: KeyLog?
    /// The ClientHello's random: the key log's index.
    var clientRandom: [UInt8] = []
    var serverRandom: [UInt8] = []
    /// The suite the ServerHello chose; nil: one icy-sniff cannot decrypt.
    var cipher: TLSCipherParameters? = nil
    /// TLS 1.2 CBC suites: the server agreed to encrypt-then-MAC (RFC 7366).
    var encryptThenMAC = false
    /// The secrets in use: nil until found, and when those found cannot be used.
    var secrets: TLSSecrets? = nil

    init(keyLog: KeyLog?) { self.keyLog = keyLog }

    /// The key log's secrets for the client random; `wanting`: read the log again while they
    /// lack what it asks for (live), `now`: however recently it was read.
    func lookUp(wanting: ((TLSSecrets) -> Bool)? = nil, now: Bool = false) -> TLSSecrets? {
        keyLog?.secrets(forClientRandom: clientRandom, wanting: wanting, now: now)
    }

    /// Whether `found` holds every secret a connection of this version decrypts with.
    func hasAll(_ found: TLSSecrets?, tls13: Bool, earlyData: Bool) -> Bool {
        guard let found else { return false }
        guard tls13 else { return found.masterSecret != nil }
        return found.clientHandshake != nil && found.serverHandshake != nil && found.clientTraffic0 != nil
            && found.serverTraffic0 != nil && (!earlyData || found.clientEarly != nil)
    }

    /// A TLS 1.3 traffic secret's record protection; nil without the secret or the suite.
    func protection(for secret: [UInt8]?) -> RecordProtection? {
        guard let secret, let cipher else { return nil }
        return RecordProtection(tls13Secret: secret, cipher: cipher)
    }

    /// What the secrets found set up.
    enum Setup {
        /// None, or none of those the version needs (flagged `tls_keys_not_found`).
        case notFound
        /// A suite icy-sniff cannot decrypt (CCM, Camellia, 3DES): the handshake only.
        case unsupportedSuite
        /// TLS 1.3: each direction's handshake protection (from its handshake traffic secret).
        case handshake(PerDirection<RecordProtection?>)
        /// TLS 1.2: the protection each direction's ChangeCipherSpec switches to.
        case pending(PerDirection<RecordProtection?>)
        /// TLS 1.2: the key block could not be made (the secrets are kept, nothing opens).
        case noKeyBlock
    }

    /// Takes `found` as the connection's secrets when they can be used, and makes the record
    /// protections they give.
    mutating func use(_ found: TLSSecrets?, tls13: Bool) -> Setup {
        secrets = nil
        guard let found, !found.isEmpty else { return .notFound }
        guard let cipher else { return .unsupportedSuite }
        if tls13 {
            let handshake = PerDirection(fromClient: protection(for: found.clientHandshake), fromServer: protection(for: found.serverHandshake))
            guard handshake.fromClient != nil || handshake.fromServer != nil else { return .notFound }
            secrets = found
            return .handshake(handshake)
        }
        guard let master = found.masterSecret else { return .notFound }
        secrets = found
        guard let pending = RecordProtection.tls12(master: master, clientRandom: clientRandom, serverRandom: serverRandom,
                                                   cipher: cipher, encryptThenMAC: encryptThenMAC) else { return .noKeyBlock }
        return .pending(pending)
    }
}
