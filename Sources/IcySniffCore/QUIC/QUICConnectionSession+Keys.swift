/// When a QUIC connection's keys come, and what comes before them: packets held until the
/// ServerHello names the suite, or until a live key log writes the secrets (`QUICHeldPackets`),
/// replayed in arrival order; the handshake's events that set up the keys (`QUICHandshake`);
/// a key-log search when the ClientHello was lost (`QUICKeyTrial`); and, at the end, what is
/// said of the keys. The packet loop in QUICConnectionSession.swift asks for these; they write
/// the keyring, the held packets and the connection's notes.
extension QUICConnectionSession {
    /// A live key log (`KeyLog.growing`) that has not written this connection's secrets yet: a
    /// browser under load writes them after its first packets went out. Its Handshake and 1-RTT
    /// packets are held (at most `QUICHeldPackets.maxBytes`) for `TLSKeyWait.maxWait` of capture time
    /// and read once the secrets are there; after that, counted and flagged `quic_keys_late`.
    func holdForKeys(_ packet: UnsafeRawBufferPointer, at ts: Timestamp, from direction: Direction) {
        guard keyLog?.growing == true, !keyring.clientRandom.isEmpty, !held.gaveUp else { return }
        switch held.waitForKeys(packet, at: ts, from: direction) {
        case .held:
            break
        case .full:
            connection.note(.quicPacketsHeld)
        case .gaveUp(let packets):
            if packets > 0 { connection.note(.quicKeysLate) }
            info.packetsUndecryptable += UInt64(packets)
        }
    }

    /// The secrets came: what was held for them is read, in the order it came.
    func stopWaitingForKeys() {
        held.waitingSince = nil
        if !held.isEmpty && !held.replaying { replayHeld() }
    }

    func hold(_ packet: UnsafeRawBufferPointer, at ts: Timestamp, from direction: Direction) {
        if !held.hold(packet, at: ts, from: direction) { connection.note(.quicPacketsHeld) }
    }

    // MARK: CRYPTO: the TLS handshake

    /// What the handshake's messages mean for the keys and the packets.
    func handshakeEvent(_ event: QUICHandshake.Event) {
        switch event {
        case .clientRandom(let random):
            keyring.clientRandom = random
            keyring.lookUpSecrets()
        case .suite(let suite):
            guard keyring.cipher == nil else { return }
            keyring.cipher = TLSCipherParameters(suite: suite)
            if handshake.tls.earlyDataOffered && keyLog != nil { handshake.tls.earlyDataAccepted = false }
            keyring.lookUpSecrets()
            held.replayDue = !held.isEmpty
            connection.quic = info
            // A live key log may still write them (looked up again as packets need them); if it
            // never does, the connection's end says so.
            emitter.secured(connection, keys: keyring.secrets != nil ? .found : keyLog?.growing == true ? .awaited : .none)
        case .serverResetToken(let token):
            resetTokens.add(token, from: .fromServer)
        }
    }

    /// A Handshake packet of a connection whose ClientHello was not read (an Initial of the
    /// client's lost or damaged): its secrets searched for in the key log (`QUICKeyTrial`), once.
    /// Only in a connection an Initial of the client's opened: one made of a server's Initial
    /// (the client's never seen) has its sides the wrong way round, and is the tracker's to
    /// search for (`QUICTracker.recover`). The secret found must be the sender's.
    func searchKeyLog(_ packet: UnsafeRawBufferPointer, from direction: Direction) {
        guard confirmed, !keyring.searched, mayHaveKeys, let keyLog else { return }
        keyring.searched = true
        guard workspace.searches.take() else { return connection.note(.quicKeySearchLimited) }
        if let found = QUICKeyTrial.search(packet, keyLog: keyLog, suite: keyring.cipher == nil ? nil : handshake.tls.cipherSuite),
           found.fromServer == (direction == .fromServer) {
            adopt(found)
        }
    }

    /// The connection's secrets, found by a key-log search: its client random (and, when its
    /// ServerHello was not read either, the suite and the server's CID) as if its hellos had
    /// been read. `originalDCIDKnown`: false when the connection was made from the packet found
    /// (its first Initial, whose DCID that is, never seen).
    func adopt(_ found: QUICKeyTrial.Found, originalDCIDKnown: Bool = true) {
        keyring.searched = true
        keyring.clientRandom = found.clientRandom
        if !originalDCIDKnown { info.cids.originalDCID = [] }
        let serverCID = found.fromServer ? found.scid : found.dcid
        if info.cids.serverCID == nil {
            info.cids.serverCID = serverCID
            cids.announce(serverCID)
        }
        if negotiatedVersion == nil { negotiatedVersion = found.version }
        confirmed = true
        connection.note(.quicKeysFoundBySearch)
        keyring.lookUpSecrets()
        held.replayDue = !held.isEmpty
        guard keyring.cipher == nil else { return }
        keyring.cipher = found.cipher
        handshake.tls.cipherSuite = found.suite
        connection.quic = info
        emitter.secured(connection, keys: .found)
    }

    /// Packets held until the ServerHello gave the cipher suite: handled now, in arrival order.
    func replayHeld() {
        let items = held.startReplay()
        defer { held.endReplay() }
        for item in items {
            item.bytes.withUnsafeBytes { bytes in
                // A held remainder may hold several packets (GSO segments).
                var at = 0
                while at < bytes.count,
                      let used = packet(UnsafeRawBufferPointer(rebasing: bytes[at...]), at: item.at, from: item.direction, startsDatagram: at == 0),
                      used > 0 {
                    at += used
                }
            }
        }
    }

    /// At the connection's end: a live key log's last chance to open what waits, then what is
    /// said of its keys (late, not found, or a ClientHello that could not be read); nothing
    /// stays held.
    func endKeyWait() {
        // A live key log's last chance: secrets written since the last packet open what waits.
        if held.waitingSince != nil, !held.isEmpty {
            keyring.lookUpLateSecrets()
            if keyring.secrets?.clientTraffic0 != nil || keyring.secrets?.serverTraffic0 != nil || keyring.secrets?.clientHandshake != nil {
                stopWaitingForKeys()
            } else {
                connection.note(.quicKeysLate)
            }
        }
        // Without the ClientHello's random the key log cannot be searched: that is said, not
        // blamed on the key log.
        if keyring.clientRandom.isEmpty && confirmed && (mayHaveKeys || !held.isEmpty) { connection.note(.quicClientHelloUnreadable) }
        else if !held.isEmpty { connection.note(.quicKeysNotFound) }
        _ = held.take()
        if mayHaveKeys, !keyring.clientRandom.isEmpty {
            // The key log has no secrets for this connection, or not those of its traffic.
            if keyring.secrets == nil { keyring.lookUpSecrets() }
            if keyring.secrets?.clientTraffic0 == nil || keyring.secrets?.serverTraffic0 == nil { connection.note(.quicKeysNotFound) }
        }
    }
}
