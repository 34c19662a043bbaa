/// The packet protection keys of one QUIC connection (RFC 9001 §5), as quic-go's crypto setup
/// holds them apart from its connection: the Initial keys of each DCID the client used, and, from
/// the key log's secrets for its ClientHello random, the Handshake, 0-RTT and 1-RTT keys
/// (`PhaseKeys`: the current phase, the one before and the next). Each is derived when a packet
/// first needs it, for the direction that needs it.
///
/// Input: the client's Initial DCIDs, its ClientHello random, the ServerHello's suite (or what a
/// key-log search found), the key log. Output: keys per space and direction; nil where the secrets
/// or the suite are not known (yet).
struct QUICKeyring {
    let keyLog: KeyLog?
    /// The client's Initial DCIDs, newest first: the Initial keys derive from the current one
    /// (after a Retry, the Retry's SCID).
    private(set) var initialDCIDs: [[UInt8]]
    private var initialKeys: [(version: UInt32, dcid: [UInt8], secret: [UInt8]?, keys: PerDirection<QUICPacketKeys?>)] = []
    /// The ClientHello's random: the key log's index.
    var clientRandom: [UInt8] = []
    /// The key log was searched for this connection's secrets by trial (`QUICKeyTrial`: at most
    /// once, for a connection whose ClientHello was not read).
    var searched = false
    /// The suite the ServerHello chose.
    var cipher: TLSCipherParameters? = nil
    private(set) var secrets: TLSSecrets? = nil
    private var handshakeKeys = PerDirection<QUICPacketKeys?>(nil)
    private var earlyKeys: QUICPacketKeys? = nil
    /// The 1-RTT keys of each direction, once derived.
    private(set) var application = PerDirection<QUICConnectionSession.PhaseKeys?>(nil)

    init(keyLog: KeyLog?, dcid: [UInt8]) {
        self.keyLog = keyLog
        initialDCIDs = [dcid]
    }

    /// The client's next Initials go to `dcid` (a Retry's SCID).
    mutating func useInitialDCID(_ dcid: [UInt8]) {
        if !initialDCIDs.contains(dcid) { initialDCIDs.insert(dcid, at: 0) }
    }

    /// The handshake starts again (a Retry, a Version Negotiation): perhaps with a new
    /// ClientHello, whose random names other secrets.
    mutating func forgetSecrets() { secrets = nil }

    /// The Initial keys of one direction, derived when a packet of that direction first needs
    /// them (a client Initial that no server answers costs one direction's contexts, not two).
    /// The Initial secret both derive from is kept beside them: extracted once, not once a
    /// direction (27,000 instructions a connection).
    mutating func initial(version: QUICVersion, dcid: [UInt8], direction: Direction) -> QUICPacketKeys? {
        let i: Int
        if let found = initialKeys.firstIndex(where: { $0.version == version.number && $0.dcid == dcid }) { i = found } else {
            initialKeys.append((version.number, dcid, QUICPacketKeys.initialSecret(dcid: dcid, version: version), PerDirection(nil)))
            i = initialKeys.count - 1
        }
        if let keys = initialKeys[i].keys[direction] { return keys }
        guard let secret = initialKeys[i].secret else { return nil }
        let keys = QUICPacketKeys.initial(secret: secret, version: version, server: direction == .fromServer)
        initialKeys[i].keys[direction] = keys
        return keys
    }

    /// A secret this packet needs is missing: a key log being written (live) may have it by now;
    /// a finished one was read when the ClientHello and the ServerHello came, and holds no more.
    mutating func lookUpLateSecrets() {
        if keyLog?.growing == true { lookUpSecrets() }
    }

    mutating func lookUpSecrets() {
        guard let keyLog, !clientRandom.isEmpty else { return }
        if secrets == nil || keyLog.growing {
            secrets = keyLog.secrets(forClientRandom: clientRandom, wanting: { $0.clientTraffic0 == nil || $0.serverTraffic0 == nil })
        }
    }

    mutating func handshake(_ direction: Direction, version: QUICVersion) -> QUICPacketKeys? {
        if let k = handshakeKeys[direction] { return k }
        guard let cipher else { return nil }
        if secrets?.clientHandshake == nil { lookUpLateSecrets() }
        guard let secret = direction == .fromClient ? secrets?.clientHandshake : secrets?.serverHandshake else { return nil }
        let k = QUICPacketKeys(secret: secret, cipher: cipher, version: version)
        handshakeKeys[direction] = k
        return k
    }

    mutating func zeroRTT(version: QUICVersion) -> QUICPacketKeys? {
        if let earlyKeys { return earlyKeys }
        if secrets?.clientEarly == nil { lookUpLateSecrets() }
        // The early secret's suite is the resumed session's: the one the server picks again.
        guard let secret = secrets?.clientEarly, let cipher else { return nil }
        earlyKeys = QUICPacketKeys(secret: secret, cipher: cipher, version: version)
        return earlyKeys
    }

    mutating func application(_ direction: Direction, version: QUICVersion) -> QUICConnectionSession.PhaseKeys? {
        if let k = application[direction] { return k }
        guard let cipher else { return nil }
        if (direction == .fromClient ? secrets?.clientTraffic0 : secrets?.serverTraffic0) == nil { lookUpLateSecrets() }
        guard let secret = direction == .fromClient ? secrets?.clientTraffic0 : secrets?.serverTraffic0,
              let keys = QUICPacketKeys(secret: secret, cipher: cipher, version: version) else { return nil }
        application[direction] = QUICConnectionSession.PhaseKeys(current: keys)
        return application[direction]
    }
}
