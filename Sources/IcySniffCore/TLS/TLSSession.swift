/// The session of a connection that carries TLS (recognised by content, on any port).
///
/// Always, without keys: it reads what the handshake shows in clear (`TLSInfo`: SNI, ALPN
/// offered, version, cipher suite, group, resumption, HelloRetryRequest, handshake start and end)
/// and counts the application-data records each way; the connection is listed in HAR
/// `log._connections` with its `tls` object.
///
/// With the connection's secrets in a key log (found by the ClientHello random): it decrypts the
/// records (TLS 1.3: handshake, application and 0-RTT traffic secrets, KeyUpdate; TLS 1.2: the
/// master secret's key block; AES-GCM, ChaCha20-Poly1305 and CBC suites, through OpenSSL) and
/// hands the plaintext to the inner session its ALPN or content chooses (HTTP/1.x, HTTP/2), each
/// record with the capture time of the segment that completed it, so the transactions are timed
/// like cleartext ones (their URLs are `https`). A record that does not authenticate is flagged
/// and nothing after it in that direction is passed on; a record partly lost is a gap in the
/// plaintext.
///
/// Live (`KeyLog.growing`), a client logs a connection's secrets only once the ServerHello has
/// reached it, about when the capture sees that ServerHello: the connection then waits for them.
/// What comes after the ServerHello is held in arrival order (records and ends), the key log
/// read again as each chunk comes, and everything held is handled as it came once the secrets
/// are there — or without them (flagged tls_keys_not_found) after `TLSKeyWait.maxWait` of capture
/// time or `TLSKeyWait.maxHeld` bytes, or at the connection's end. A client that logs its keys does
/// so within milliseconds; most apps on a hotspot never do, and must cost little.
final class TLSSession: ConnectionSession {
    let scheme = "https"
    private unowned let connection: Connection
    private unowned let emitter: TransactionEmitter
    private let options: HTTPParserOptions
    /// Its randoms, suite, secrets and the record protections made from them (`TLSKeyring`).
    private var keyring: TLSKeyring
    private var cipher: TLSCipherParameters? { keyring.cipher }
    private var secrets: TLSSecrets? { keyring.secrets }
    /// TLS 1.3 0-RTT: early records held until the server says (EncryptedExtensions) whether it
    /// accepted them, and the early-data protection (`TLSEarlyData`).
    private var early = TLSEarlyData()
    /// Live: waiting for the key log to name this connection's secrets, and what came since.
    private var keyWait = TLSKeyWait()
    /// Where application data is decrypted (offline: on the second core, `DecryptionQueue`);
    /// nil: here, as records come. Everything that follows a record there (the plaintext's way
    /// into the inner session, a direction's end, the connection's end) waits its turn (`inTurn`).
    private let decryption: DecryptionQueue?
    /// The decrypted plaintext, to the session of what it carries, and where records are
    /// decrypted to (`TLSPlaintextStream`).
    private let inner: TLSPlaintextStream
    /// The server answered the ClientHello in plain HTTP (a TLS client sent to an HTTP port):
    /// the server's bytes go to an HTTP/1.x session, so that its answer (nginx's 400) is shown.
    private var plainAnswer: HTTP1Session? = nil
    private var serverSpoke = false
    /// What the handshake showed so far. The connection carries a copy, kept current here, so
    /// that the transactions it emits (and the outputs at its end) see the same; the byte counts
    /// are added when the connection ends (`applicationBytes`).
    private(set) var info = TLSInfo() {
        didSet { connection.tls = info }
    }

    private func markDecrypted() {
        if !info.decrypted && !secretsIncomplete { info.decrypted = true }
    }
    /// The key log lacked a direction's application traffic secret: the connection is not
    /// decrypted, whatever its handshake was.
    private var secretsIncomplete = false
    /// What each direction holds (`half(_:)`; `client`, `server`).
    private let halves = PerDirection { _ in Half() }
    private var client: Half { halves.fromClient }
    private var server: Half { halves.fromServer }
    private func half(_ direction: Direction) -> Half { halves[direction] }

    private var clientHellos = 0
    private var ticketOffered = false
    /// The ServerHello (not a HelloRetryRequest) has been read.
    private var sawServerHello = false
    /// What each encrypted record is (handshake, ticket, data), and, without keys, what the
    /// records' sizes and times say (`TLSRecordRoles`, `RecordPattern`).
    private var roles = TLSRecordRoles()
    /// TLS 1.2: the server's Certificate came (a full handshake).
    private var sawCertificate = false

    init(connection: Connection, emitter: TransactionEmitter, options: HTTPParserOptions, keyLog: KeyLog?,
         decryption: DecryptionQueue? = nil) {
        self.decryption = decryption
        self.connection = connection
        self.emitter = emitter
        self.options = options
        keyring = TLSKeyring(keyLog: keyLog)
        inner = TLSPlaintextStream(connection: connection, emitter: emitter, options: options)
    }

    /// Whether a record of `type` from `direction` is to be kept whole: cleartext handshake
    /// records, and everything that may be decrypted.
    private func keeps(_ type: UInt8, _ direction: Direction) -> Bool {
        if type == TLSContentType.handshake && !half(direction).encrypted { return true }
        if keyWait.waiting { return (TLSContentType.changeCipherSpec...TLSContentType.applicationData).contains(type) }
        guard secrets != nil, !half(direction).decryptionFailed, (TLSContentType.alert...TLSContentType.applicationData).contains(type) else { return false }
        return true
    }

    private var isTLS13: Bool { info.version == 0x0304 }

    // MARK: StreamHandler

    func received(_ chunk: StreamChunk, from direction: Direction, on connection: Connection) {
        if direction == .fromServer && !serverSpoke {
            serverSpoke = true
            if chunk.bytes.starts(with: "HTTP/".utf8) { answeredInPlainHTTP() }
        }
        if let plainAnswer {
            if direction == .fromServer { plainAnswer.received(chunk, from: direction, on: connection) }
            return
        }
        if keyWait.waiting { lookForKeys(final: false) }
        // Whether a record's body is kept is decided when its header arrives, by the state the
        // records before it (in the same chunk too) left. The reader is named unretained (read
        // through `halves`, a retain and a release a chunk): both halves and their readers are
        // `let`s made with the session, so it lives as long as the session this call has.
        let reader = Unmanaged.passUnretained(half(direction).records)
        reader._withUnsafeGuaranteedRef {
            $0.feed(chunk.bytes, at: chunk.timestamp, keep: { self.keeps($0, direction) }) {
                if direction == .fromClient { clientRecord($0) } else { serverRecord($0) }
            }
        }
        if client.records.broken || server.records.broken { noteBroken() }
    }

    /// The server's first bytes are an HTTP status line, not a TLS record.
    private func answeredInPlainHTTP() {
        connection.note(.tlsAnsweredInPlainHTTP)
        info.incomplete = true
        let http = HTTP1Session(connection: connection, emitter: emitter, options: options, scheme: "http")
        http.flagEveryTransaction(.tlsAnsweredInPlainHTTP)
        plainAnswer = http
    }

    func missed(_ gap: StreamGap, from direction: Direction, on connection: Connection) {
        if let plainAnswer {
            if direction == .fromServer { plainAnswer.missed(gap, from: direction, on: connection) }
            return
        }
        if keyWait.waiting { lookForKeys(final: false) }
        let reader = half(direction).records
        let wasBroken = reader.broken
        reader.gap(gap.length, at: gap.timestamp) { direction == .fromClient ? clientRecord($0) : serverRecord($0) }
        if reader.broken {
            noteBroken()
            // The record framing is lost: the plaintext of the rest of the direction is unknown.
            if !wasBroken { inTurn { self.inner.missed(gap.length, at: gap.timestamp, from: direction) } }
        }
    }

    func ended(_ direction: Direction, reason: CloseReason, at timestamp: Timestamp, on connection: Connection) {
        if let plainAnswer { return plainAnswer.ended(direction, reason: reason, at: timestamp, on: connection) }
        if keyWait.waiting { keyWait.hold(end: direction, reason: reason, at: timestamp); return }
        inTurn { self.inner.session?.ended(direction, reason: reason, at: timestamp, on: connection) }
    }

    func finished(_ connection: Connection, at timestamp: Timestamp) {
        plainAnswer?.finished(connection, at: timestamp)
        if keyWait.waiting { lookForKeys(final: true) }
        if client.records.midRecord || server.records.midRecord { connection.note(.tlsRecordCut) }
        info.applicationBytesFromClient = client.applicationBytes
        info.applicationBytesFromServer = server.applicationBytes
        if info.handshakeEnd == nil || client.handshake.overflowed || server.handshake.overflowed { info.incomplete = true }
        if info.version != 0 && !isTLS13 { info.earlyDataAccepted = false }
        if early.isHolding { settleEarlyData(accepted: info.earlyDataAccepted ?? false) }
        // No keys: the records' sizes and times are what there is.
        if secrets == nil && sawServerHello { info.inferred = roles.inferred(offered: info.alpnOffered, negotiated: info.alpn) }
        inTurn { self.inner.session?.finished(connection, at: timestamp) }
    }

    /// Runs `step` (a call into the inner session) now, or after the records before it that the
    /// decryption queue still holds: the inner session sees everything in the capture's order.
    private func inTurn(_ step: @escaping () -> Void) {
        guard let decryption else { return step() }
        decryption.later { [connection] in withExtendedLifetime(connection, step) }
    }

    private func noteBroken() {
        if info.handshakeEnd == nil { info.incomplete = true }
        if !framingLostNoted {
            framingLostNoted = true
            connection.note(.tlsRecordFramingLost)
        }
    }
    private var framingLostNoted = false

    // MARK: Records

    private func clientRecord(_ r: TLSRecordReader.Record) {
        if keyWait.waiting { return hold(r, from: .fromClient) }
        switch r.type {
        case TLSContentType.handshake where !client.encrypted:
            if let body = r.body {
                if info.handshakeStart == nil { info.handshakeStart = r.firstByte }
                client.handshake.append(body) { type, message in
                    if type == TLSHandshakeType.clientHello { clientHello(message) }
                }
            }
        case TLSContentType.handshake:
            // TLS 1.2: the client's first record after its ChangeCipherSpec is its Finished.
            if info.handshakeEnd == nil { info.handshakeEnd = r.lastByte }
            sealed(r, from: .fromClient)
        case TLSContentType.changeCipherSpec:
            // TLS 1.3 sends a ChangeCipherSpec only for middlebox compatibility: it changes nothing.
            if sawServerHello && !isTLS13 {
                client.encrypted = true
                handOver(.fromClient, protection: client.pending, secret: nil)
            }
        case TLSContentType.applicationData:
            client.applicationBytes &+= UInt64(r.length + 5)
            if !sawServerHello {
                roles.early(r)
                // 0-RTT early data, sent with the ClientHello: held until the server's
                // EncryptedExtensions say whether it was accepted.
                if r.body != nil || r.lost { early.hold(r) }
                return
            }
            switch roles.client(r, tls13: isTLS13, earlyDataOffered: info.earlyDataOffered) {
            case .handshake:
                // TLS 1.3: the client's first encrypted record after the ServerHello ends its flight.
                if info.handshakeEnd == nil { info.handshakeEnd = r.lastByte }
            case .data(let withFinished):
                // Keys found: the records are decrypted, nothing is estimated.
                if secrets == nil { estimate(r, fromClient: true, withFinished: withFinished) }
            }
            sealed(r, from: .fromClient)
        case TLSContentType.alert:
            sealed(r, from: .fromClient)
        default:
            break
        }
    }

    /// An application-data record for the estimates (`RecordPattern`): the exchanges it adds are
    /// charged to the connection's state budget, whichever way the record came (0-RTT too).
    private func estimate(_ r: TLSRecordReader.Record, fromClient: Bool, withFinished: Bool = false) {
        let added = roles.estimate(r, fromClient: fromClient, withFinished: withFinished)
        if added != 0 { connection.chargeEstimates(added * RecordPattern.bytesPerExchange) }
    }

    private func serverRecord(_ r: TLSRecordReader.Record) {
        if keyWait.waiting { return hold(r, from: .fromServer) }
        switch r.type {
        case TLSContentType.handshake where !server.encrypted:
            guard let body = r.body else { return }
            server.handshake.append(body) { type, message in
                switch type {
                case TLSHandshakeType.serverHello: serverHello(message)
                case TLSHandshakeType.certificate: sawCertificate = true
                case TLSHandshakeType.serverKeyExchange: TLSHandshakeObserver.serverKeyExchange(message, into: &info)
                default: break
                }
            }
        case TLSContentType.handshake, TLSContentType.alert:
            sealed(r, from: .fromServer)
        case TLSContentType.changeCipherSpec:
            if sawServerHello && !isTLS13 {
                server.encrypted = true
                handOver(.fromServer, protection: server.pending, secret: nil)
                // An abbreviated handshake: ChangeCipherSpec right after the ServerHello.
                if !sawCertificate {
                    info.resumed = true
                    info.resumption = ticketOffered ? "ticket" : "session-id"
                }
            }
        case TLSContentType.applicationData:
            server.applicationBytes &+= UInt64(r.length + 5)
            if roles.server(r, tls13: isTLS13, finishedLength: cipher.map { 4 + $0.hashLength }) == .data, secrets == nil {
                estimate(r, fromClient: false)
            }
            sealed(r, from: .fromServer)
        default:
            break
        }
    }

    // MARK: Decryption

    /// An encrypted record of `direction`: opened with the direction's protection (once its
    /// handshake is over: by its decryptor, here or on the decryption queue), then its content
    /// handled by type.
    private func sealed(_ r: TLSRecordReader.Record, from direction: Direction, with protection: RecordProtection? = nil) {
        let side = half(direction)
        guard secrets != nil, !side.decryptionFailed else { return }
        if protection == nil, let d = side.decryptor {
            if let decryption, decryption.submit(r, from: direction, of: self, with: d) {
                // The batch holds the body: the reader reads the next record into a spare one.
                if r.body != nil { side.records.bodyTaken(replacement: decryption.spareBody()) }
                return
            }
            let out = inner.buffer
            return opened(d.open(r, into: out), plaintext: UnsafeRawBufferPointer(out), at: r.lastByte, from: direction)
        }
        let chosen: RecordProtection?
        if let protection { chosen = protection }
        else if direction == .fromClient { chosen = early.active ? early.protection : client.protection }
        else { chosen = server.protection }
        guard let p = chosen else { return }
        let out = inner.buffer
        let result = OpenedRecord.open(r, with: p, tls13: isTLS13, cipher: cipher, into: out)
        if case .handshake(let n) = result {
            // TLS 1.3 handshake messages: they move this session's state on, here and now.
            markDecrypted()
            let plaintext = Array(UnsafeRawBufferPointer(rebasing: out[0..<n]))
            side.sealedHandshake.append(plaintext) { t, m in
                if direction == .fromClient { clientSealedMessage(t, m) } else { serverSealedMessage(t, m) }
            }
            return
        }
        guard let decryption, decryption.isHolding else {
            return opened(result, plaintext: UnsafeRawBufferPointer(out), at: r.lastByte, from: direction)
        }
        // A failure stops the direction at once, as without the queue: the records after it are
        // not tried (only its flag waits for its turn). Left to its turn, the records read
        // meanwhile were opened with the same keys and each failure was counted again.
        if case .failed = result { side.decryptionFailed = true }
        // Opened here (0-RTT data) while records before it wait on the queue: in its turn.
        var kept: [UInt8] = []
        if case .data(let n) = result { kept = Array(UnsafeRawBufferPointer(rebasing: out[0..<n])) }
        decryption.later { [connection, lastByte = r.lastByte] in
            withExtendedLifetime(connection) {
                kept.withUnsafeBytes { self.opened(result, plaintext: $0, at: lastByte, from: direction) }
            }
        }
    }

    /// What came of opening a record of `direction` (`plaintext` starts with what it holds): its
    /// plaintext to the inner session, a lost record's gap, a failure flagged (nothing after it
    /// in that direction is passed on). Called in the capture's order (by the decryption queue,
    /// in the turn of the record).
    func opened(_ result: OpenedRecord, plaintext: UnsafeRawBufferPointer, at lastByte: Timestamp, from direction: Direction) {
        switch result {
        case .data(let n):
            markDecrypted()
            inner.received(UnsafeRawBufferPointer(rebasing: plaintext[0..<n]), at: lastByte, from: direction, alpn: info.alpn)
        case .handshake, .other:
            // TLS 1.2 Finished, alerts; after the handshake, TLS 1.3 tickets and KeyUpdate (the
            // direction's decryptor applied it).
            markDecrypted()
        case .lost(let estimate):
            // Not captured whole: the record cannot be opened; its plaintext is a gap.
            connection.note(.tlsRecordLost)
            if let estimate { inner.missed(estimate, at: lastByte, from: direction) }
        case .failed:
            half(direction).decryptionFailed = true
            connection.note(.tlsDecryptionFailed)
        case .skipped:
            break
        }
    }

    /// The direction's handshake is over: its records are opened by a decryptor from here on
    /// (`secret`: TLS 1.3's traffic secret, which KeyUpdate advances).
    private func handOver(_ direction: Direction, protection: RecordProtection?, secret: [UInt8]?) {
        // Without the keys (a secret the key log lacks) nothing more of the direction is opened.
        var d: DirectionDecryptor? = nil
        if let protection, let cipher { d = DirectionDecryptor(protection: protection, secret: secret, cipher: cipher, tls13: isTLS13) }
        if d == nil, secret == nil, isTLS13, let found = secrets, !found.isEmpty, !secretsIncomplete {
            // Handshake secrets without this direction's traffic secret: said, never silent.
            secretsIncomplete = true
            info.decrypted = false
            connection.note(.tlsSecretsIncomplete)
        }
        let side = half(direction)
        side.decryptor = d
        side.protection = nil
    }

    private func serverSealedMessage(_ type: UInt8, _ message: ArraySlice<UInt8>) {
        switch type {
        case TLSHandshakeType.encryptedExtensions:   // the negotiated ALPN, and whether 0-RTT was accepted
            settleEarlyData(accepted: TLSHandshakeObserver.encryptedExtensions(message, into: &info))
        case TLSHandshakeType.finished:   // the server's application traffic keys from here
            handOver(.fromServer, protection: keyring.protection(for: secrets?.serverTraffic0), secret: secrets?.serverTraffic0)
        default:
            break
        }
    }

    private func clientSealedMessage(_ type: UInt8, _ message: ArraySlice<UInt8>) {
        switch type {
        case TLSHandshakeType.endOfEarlyData:   // the client's handshake keys from here
            early.active = false
        case TLSHandshakeType.finished:   // the client's application traffic keys from here
            early.active = false
            handOver(.fromClient, protection: keyring.protection(for: secrets?.clientTraffic0), secret: secrets?.clientTraffic0)
        default:
            break
        }
    }

    /// 0-RTT records held since the ClientHello: decrypted with the early traffic secret when
    /// the server accepted them; otherwise the server never read them, and neither do we.
    private func settleEarlyData(accepted: Bool) {
        let held = early.take()
        guard accepted || !held.isEmpty else { return }
        guard accepted, let protection = keyring.protection(for: secrets?.clientEarly) else {
            connection.note(accepted ? .tlsKeysNotFound : .tlsEarlyDataRejected)
            return
        }
        early.protection = protection
        for r in held { sealed(r, from: .fromClient, with: protection) }
        if early.dropped { connection.note(.tlsRecordLost) }
        // The client's records after the server's flight use the early keys until EndOfEarlyData.
        early.active = true
    }

    // MARK: Keys

    /// After the ServerHello: the keys of both directions, from the key log. Live, a connection
    /// whose secrets are not all logged yet waits for them.
    private func setUpKeys() {
        guard let keyLog = keyring.keyLog, keyLog.count > 0 || keyLog.growing else { return }
        let found = keyring.lookUp(wanting: keyLog.growing ? { !self.hasAllSecrets($0) } : nil)
        if keyLog.growing && cipher != nil && !hasAllSecrets(found) {
            keyWait.start(at: connection.times.last)
            return
        }
        useKeys(found)
    }

    /// Whether `found` holds every secret this connection's version decrypts with.
    private func hasAllSecrets(_ found: TLSSecrets?) -> Bool {
        keyring.hasAll(found, tls13: isTLS13, earlyData: info.earlyDataOffered)
    }

    /// Sets up the record protections with the secrets found (nil or none: flagged).
    private func useKeys(_ found: TLSSecrets?) {
        switch keyring.use(found, tls13: isTLS13) {
        case .notFound:
            connection.note(.tlsKeysNotFound)
        case .unsupportedSuite, .noKeyBlock:
            break
        case .handshake(let protection):
            client.protection = protection.fromClient
            server.protection = protection.fromServer
        case .pending(let pending):
            client.pending = pending.fromClient
            server.pending = pending.fromServer
        }
    }

    /// A record that came while the connection waits for its secrets.
    private func hold(_ r: TLSRecordReader.Record, from direction: Direction) {
        if keyWait.hold(r, from: direction) { lookForKeys(final: true) }
    }

    /// Reads the key log again (however recently it was: only waiting connections ask, and each
    /// for at most `TLSKeyWait.maxWait`); once every secret is there (or `final`: waited long
    /// enough, or the connection ended; with what there is), handles what was held.
    private func lookForKeys(final: Bool) {
        let found = keyring.lookUp(wanting: { !self.hasAllSecrets($0) }, now: true)
        if hasAllSecrets(found) || final { stopWaiting(with: found) }
    }

    /// Sets up the keys found (none: flagged), then handles everything held, in arrival order,
    /// as if it came now.
    private func stopWaiting(with found: TLSSecrets?) {
        let held = keyWait.stop()
        useKeys(found)
        if secrets == nil { emitter.secured(connection, keys: .none) }
        for item in held {
            switch item {
            case .record(let r, .fromClient): clientRecord(r)
            case .record(let r, .fromServer): serverRecord(r)
            case .ended(let direction, let reason, let timestamp): inner.session?.ended(direction, reason: reason, at: timestamp, on: connection)
            }
        }
    }

    // MARK: Handshake messages

    /// The client's offer (`TLSHandshakeObserver`); the key log is looked up with its random.
    private func clientHello(_ message: ArraySlice<UInt8>) {
        // After a HelloRetryRequest the second ClientHello repeats the offer: the first one counts.
        guard let hello = TLSHandshakeObserver.clientHello(message, into: &info, first: clientHellos == 0) else { return }
        clientHellos += 1
        guard clientHellos == 1 else { return }
        keyring.clientRandom = hello.random
        if hello.ticketOffered { ticketOffered = true }
        // Looked up now: 0-RTT records follow the ClientHello before the ServerHello (looked up
        // again there, for what was logged since).
        if let found = keyring.lookUp(), !found.isEmpty { keyring.secrets = found }
    }

    private func serverHello(_ message: ArraySlice<UInt8>) {
        guard let hello = TLSHandshakeObserver.serverHello(message, into: &info), !hello.helloRetry else { return }
        if hello.encryptThenMAC { keyring.encryptThenMAC = true }
        sawServerHello = true
        keyring.serverRandom = hello.random
        keyring.cipher = TLSCipherParameters(suite: hello.cipherSuite)
        // A request sent as 0-RTT data is the first exchange's.
        for r in roles.suiteKnown(overhead: cipher?.recordOverhead(tls13: hello.version == 0x0304) ?? 0) { estimate(r, fromClient: true) }
        if cipher == nil && (keyring.keyLog?.count ?? 0) > 0 { connection.note(.tlsCipherUnsupported) }
        if hello.version == 0x0304 { server.encrypted = true }
        setUpKeys()
        emitter.secured(connection, keys: keyWait.waiting ? .awaited : secrets == nil ? .none : .found)
    }
}
