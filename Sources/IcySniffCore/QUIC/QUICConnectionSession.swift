#if canImport(Glibc)
import Glibc
#endif

/// One QUIC connection (RFC 9000, 9001, 9369), read passively from both directions.
///
/// Without keys: its versions (Version Negotiation, Retry, compatible negotiation v1→v2), its
/// connection IDs, the client's address changes, its handshake time (the client's first Initial
/// to the datagram with its first Handshake packet), bytes and datagrams each way; and, from the
/// Initial packets, which anyone can decrypt (keys from the client's first Destination Connection
/// ID and the version's salt), the ClientHello and ServerHello (`TLSHandshakeObserver`): SNI,
/// ALPN offered, cipher suite, group, resumption, 0-RTT offered.
///
/// With the connection's secrets in a key log (found by the ClientHello random, TLS 1.3 labels):
/// Handshake, 0-RTT and 1-RTT packets are decrypted too (header protection, packet numbers per
/// space, key updates with the old phase's keys kept for late packets), the server's
/// EncryptedExtensions read (ALPN, 0-RTT accepted), and each stream's data reassembled
/// (`OffsetReassembler`) for the `HTTP3Session`. A packet that does not authenticate is counted
/// and flagged, never parsed.
///
/// Input: the UDP datagrams `QUICTracker` finds to belong to it. Output: transactions (through
/// its HTTP/3 session) and, at its end, its `Connection` with `quic` and `tls` set.
///
/// This file is the packet loop: datagrams, packets, their protection and their frames.
/// QUICConnectionSession+Keys.swift is when the keys come (held packets, the live wait, the
/// handshake's events, a key-log search, the end's verdicts); the state both read is internal
/// rather than private for that (the type itself is the module's own).
final class QUICConnectionSession {
    let connection: Connection
    /// Its keys, from the Initial DCIDs and the key log (`QUICKeyring`).
    var keyring: QUICKeyring
    var keyLog: KeyLog? { keyring.keyLog }
    /// A key log that holds secrets, or that a client is writing (live): one may be this
    /// connection's. Asked for every short-header packet: `hasSecrets` is lock-free (a property
    /// of the keyring answering this copied the whole keyring, 380 instructions), and the key
    /// log is read unretained (bound with `guard let`, a retain and a release a packet): the
    /// keyring's `let` holds it for the session's life.
    var mayHaveKeys: Bool {
        guard let keyLog = keyring.keyLog.map(Unmanaged.passUnretained) else { return false }
        return keyLog._withUnsafeGuaranteedRef { $0.hasSecrets || $0.growing }
    }
    var info = QUICInfo()
    /// The TLS handshake in its CRYPTO frames, and the connection's TLS facts (`QUICHandshake`).
    var handshake = QUICHandshake() {
        didSet { connection.tls = handshake.tls }
    }
    /// Where the client's packets come from now (NAT rebinding and migration move it).
    private(set) var clientEndpoint: Endpoint
    let serverEndpoint: Endpoint
    /// A Version Negotiation or Retry answered the first Initial: the next one restarts the
    /// handshake, perhaps with other connection IDs.
    private(set) var restarted = false
    /// A packet decrypted (or a Version Negotiation seen): this is QUIC, not UDP that looks like it.
    var confirmed = false
    /// The capture time of its last datagram (the tracker ends idle connections by it).
    var lastSeen: Timestamp { connection.times.last }
    /// Every CID either side announced (`QUICConnectionIDs`), and those the tracker is still to
    /// route to this connection (`takeNewCIDs`).
    var cids: QUICConnectionIDs
    var hasNewCIDs: Bool { !cids.announced.isEmpty }
    func takeNewCIDs() -> [[UInt8]] { cids.takeAnnounced() }
    /// The negotiated version (the server's first Initial or Handshake says it).
    var negotiatedVersion: QUICVersion?
    /// Each direction's streams, open and over, and HTTP/3 reading them.
    private var streams: QUICStreamTable<HTTP3Session>
    /// The stateless reset tokens each direction's sender issued (`QUICResetTokens`), and
    /// whether a packet ended with one of them: the sender had lost the connection's state.
    var resetTokens = QUICResetTokens()

    unowned let emitter: TransactionEmitter
    /// Where 1-RTT packets are opened (reading a file: the second core, `DecryptionQueue`); nil:
    /// here, as they come. Whatever reads streams waits its turn behind the packets there.
    let decryption: DecryptionQueue?
    /// The same queue unretained, for the per-packet path (`open`): `decryption` holds it as long
    /// as the session lives. Bound with `if let`, the property cost a retain and a release a packet.
    private let decryptionQueue: Unmanaged<DecryptionQueue>?
    /// Packets that came before their keys could be known (ServerHello not yet read; live, the
    /// key log's secrets not yet written): copies, handled once they are (`QUICHeldPackets`).
    var held = QUICHeldPackets()
    /// Where a packet is unprotected and decrypted (`QUICPacketOpener`), one at a time, into the
    /// tracker's `PacketWorkspace`: its frames are read from there (nothing re-enters packet
    /// handling while they are: held packets are replayed after the datagram, `held.replayDue`).
    private var opener: QUICPacketOpener
    /// The same workspace, for the run's budgets (estimates, key-log searches): a constant
    /// reference, read per packet without a retain.
    let workspace: PacketWorkspace

    /// Without keys: its packets' sizes (`QUICPacketPattern`).
    private var pattern = QUICPacketPattern()

    init(id: UInt64, client: Endpoint, server: Endpoint, dcid: [UInt8], scid: [UInt8], version: UInt32, at ts: Timestamp,
         keyLog: KeyLog?, emitter: TransactionEmitter, options: HTTPParserOptions, decryption: DecryptionQueue? = nil,
         workspace: PacketWorkspace = PacketWorkspace()) {
        self.decryption = decryption
        decryptionQueue = decryption.map(Unmanaged.passUnretained)
        opener = QUICPacketOpener(workspace: workspace)
        self.workspace = workspace
        connection = Connection(id: id, first: client, second: server, timestamp: ts, transport: .quic)
        connection.clientSide = 0
        clientEndpoint = client
        serverEndpoint = server
        keyring = QUICKeyring(keyLog: keyLog, dcid: dcid)
        self.emitter = emitter
        streams = QUICStreamTable { [connection, unowned emitter] in HTTP3Session(connection: connection, emitter: emitter, options: options) }
        cids = QUICConnectionIDs(dcid, scid)
        info.cids.originalDCID = dcid
        info.cids.clientCID = scid
        info.initialVersion = version
        info.version = version
        info.handshakeStart = ts
        info.clientPorts = [client.port]
        handshake.tls.handshakeStart = ts
        handshake.tls.version = 0x0304
        connection.tls = handshake.tls
        connection.quic = info
    }

    // MARK: Datagrams

    /// Which way a datagram of this connection goes; a client datagram from a new address moves
    /// the client (migration, NAT rebinding).
    func direction(source: Endpoint, destination: Endpoint) -> Direction {
        if source == serverEndpoint { return .fromServer }
        if destination == serverEndpoint { return .fromClient }
        return source == clientEndpoint ? .fromClient : .fromServer
    }

    /// One UDP datagram of the connection: its packets (coalesced, RFC 9000 §12.2), each handled
    /// in turn; bytes after the last packet that parses (padding, junk) are ignored.
    func datagram(_ payload: UnsafeRawBufferPointer, from source: Endpoint, to destination: Endpoint, at ts: Timestamp) {
        let direction = direction(source: source, destination: destination)
        connection.times.last = ts
        connection.packets += 1
        if direction == .fromClient {
            info.traffic.bytesFromClient += UInt64(payload.count)
            info.traffic.datagramsFromClient += 1
            if source != clientEndpoint {
                clientEndpoint = source
                // Requests read from now on came from there; those still on the decryption
                // thread came from before.
                let moved = { [connection] in connection.movedClient = source }
                if let decryption, decryption.isHolding { decryption.later(moved) } else { moved() }
                info.migrated = true
                pattern.pathProbes = PerDirection(true)
                if !info.clientPorts.contains(source.port) { info.clientPorts.append(source.port) }
            }
        } else {
            info.traffic.bytesFromServer += UInt64(payload.count)
            info.traffic.datagramsFromServer += 1
        }
        var at = 0
        pattern.datagramStarts()
        while at < payload.count {
            let rest = UnsafeRawBufferPointer(rebasing: payload[at...])
            guard let used = packet(rest, at: ts, from: direction, startsDatagram: at == 0), used > 0 else { break }
            at += used
        }
        if held.replayDue { replayHeld() }
    }

    /// A Version Negotiation packet from the server: the versions it offers.
    func versionNegotiation(_ versions: [UInt32]) {
        guard !info.versionNegotiation else { return }
        info.versionNegotiation = true
        info.offeredVersions = versions
        restarted = true
        confirmed = true
        restartHandshake()
    }

    /// After a Retry or a Version Negotiation the server kept nothing: the handshake starts again
    /// (`QUICHandshake.restart`), perhaps with a new ClientHello whose random names other secrets.
    private func restartHandshake() {
        handshake.restart()
        keyring.forgetSecrets()
    }

    /// One packet at the start of `bytes`; answers its length (nil: not a packet).
    /// `startsDatagram`: `bytes` begin a datagram the tracker gave this connection (or a packet
    /// held and handled again).
    func packet(_ bytes: UnsafeRawBufferPointer, at ts: Timestamp, from direction: Direction, startsDatagram: Bool) -> Int? {
        guard let first = bytes.first else { return nil }
        if first & 0x80 == 0 {
            // A short header. The first in its datagram is a packet: the tracker found its
            // connection by its DCID, or by the address pair (the receiver's CID is empty), so
            // its fixed bit may be 0 (greased, RFC 9287) and nothing else could tell. Behind
            // another packet (coalesced, RFC 9000 §12.2) its fixed bit is set or its DCID is this
            // connection's; anything else there is the padding after a long-header packet, or junk.
            guard startsDatagram || first & 0x40 != 0 || startsWithConnectionID(bytes, from: direction) else { return nil }
            return shortPacket(bytes, at: ts, from: direction)
        }
        pattern.sawLongHeader()
        guard let header = QUICLongHeader(bytes), header.versionNumber != 0 else { return nil }
        guard let version = header.version else {
            // A version icy-sniff cannot read (the reserved one that asks for Version Negotiation).
            return bytes.count
        }
        let versionNumber = header.versionNumber, scid = header.scid
        let type = header.type(version)
        if type == .retry {
            guard direction == .fromServer else { return bytes.count }
            // The client's next Initial goes to the Retry's SCID, and its keys derive from it.
            info.retry = true
            restarted = true
            restartHandshake()
            let newDCID = Array(scid)
            keyring.useInitialDCID(newDCID)
            cids.announce(newDCID)
            return bytes.count
        }
        guard let (pnOffset, end) = header.extent(of: type, in: bytes) else { return nil }
        let length = end - pnOffset
        let whole = UnsafeRawBufferPointer(rebasing: bytes[0..<end])
        if direction == .fromClient {
            if info.version != versionNumber && negotiatedVersion == nil { info.version = versionNumber }
            if type == .handshake && info.handshakeEnd == nil {
                info.handshakeEnd = ts
                handshake.tls.handshakeEnd = ts
            }
            // Counted when it came: a 0-RTT packet held for the ServerHello comes by again.
            if type == .zeroRTT && !held.replaying {
                info.zeroRTTPackets += 1
                if !info.decrypted { estimate(frameBytes: length - 16, at: ts, from: direction) }
            }
        } else {
            if negotiatedVersion == nil && (type == .initial || type == .handshake) {
                negotiatedVersion = version
                info.version = versionNumber
            }
            if type == .initial && info.cids.serverCID == nil {
                info.cids.serverCID = Array(scid)
                cids.announce(Array(scid))
            }
        }
        if type == .initial, direction == .fromClient, !scid.isEmpty, Array(scid) != info.cids.clientCID, restarted {
            cids.announce(Array(scid))
        }
        let space: QUICSpace = type == .initial ? .initial : (type == .handshake ? .handshake : .application)
        let keys: QUICPacketKeys?
        switch type {
        case .initial:
            pattern.sawInitial()
            openInitial(whole, pnOffset: pnOffset, version: version, at: ts, from: direction)
            return end
        case .handshake, .zeroRTT:
            guard type == .handshake || direction == .fromClient else { return end }
            if type == .handshake && keyring.clientRandom.isEmpty { searchKeyLog(whole, from: direction) }
            if keyring.cipher == nil {
                // Before the ServerHello (0-RTT; a Handshake packet overtaking a lost Initial):
                // kept until the cipher suite is known, if there may be keys for it.
                if mayHaveKeys { hold(whole, at: ts, from: direction) }
                return end
            }
            keys = type == .handshake ? keyring.handshake(direction, version: version) : keyring.zeroRTT(version: version)
        default:
            return end
        }
        guard let keys else {
            if type == .handshake { holdForKeys(whole, at: ts, from: direction) }
            return end
        }
        if held.waitingSince != nil { stopWaitingForKeys() }
        guard let plaintext = opener.open(whole, pnOffset: pnOffset, keys: keys, space: space, from: direction, longHeader: true) else {
            packetFailed()
            return end
        }
        packetOpened(application: space == .application)
        if type == .handshake { frames(plaintext, space: .handshake, at: ts, from: direction) } else { applicationFrames(plaintext, at: ts, from: direction) }
        return end
    }

    /// The CID the receiver of `direction` chose first (nil: the server's is not known yet). Its
    /// later ones have the same length, a short header's DCID length.
    private func receiverCID(_ direction: Direction) -> [UInt8]? {
        direction == .fromClient ? info.cids.serverCID : info.cids.clientCID
    }

    /// How long the DCID of a short header of `direction` is.
    private func receiverCIDLength(_ direction: Direction) -> Int { receiverCID(direction)?.count ?? 0 }

    private func startsWithConnectionID(_ bytes: UnsafeRawBufferPointer, from direction: Direction) -> Bool {
        // Most packets carry the receiver's first CID: compared before the look-up among all.
        guard let first = receiverCID(direction) else { return false }
        let length = first.count
        guard length > 0, bytes.count > length else { return false }
        if first.withUnsafeBytes({ memcmp($0.baseAddress!, bytes.baseAddress! + 1, length) }) == 0 { return true }
        return cids.contains(CIDKey(bytes, at: 1, length: length))
    }

    private func shortPacket(_ whole: UnsafeRawBufferPointer, at ts: Timestamp, from direction: Direction) -> Int? {
        var end = whole.count
        if whole.count > 1500 {
            // A GSO super-datagram: one segment at a time (the shortest QUIC packet is well over 20 bytes).
            let dcid = Array(whole[1..<min(whole.count, 1 + receiverCIDLength(direction))])
            end = QUICShortHeader.nextSegment(whole, dcid: dcid, minimum: 21 + dcid.count) ?? whole.count
        }
        let bytes = UnsafeRawBufferPointer(rebasing: whole[0..<end])
        // Not one held and read again: it was measured when it came.
        if !info.decrypted && !held.replaying,
           pattern.shortPacket(frameBytes: bytes.count - 1 - receiverCIDLength(direction) - 16, at: ts, from: direction, in: workspace) {
            connection.note(.quicEstimatesLimited)
        }
        // Without a secret in the key log (none given, or none read yet) nothing to open.
        if confirmed && mayHaveKeys { open(bytes, at: ts, from: direction) }
        return end
    }

    /// Without keys (so far): the packet's size for the requests estimated from them.
    private func estimate(frameBytes: Int, at ts: Timestamp, from direction: Direction) {
        if pattern.measure(frameBytes: frameBytes, at: ts, from: direction, in: workspace) { connection.note(.quicEstimatesLimited) }
    }

    /// One short-header packet (a GSO datagram's segment), opened here or on the decryption
    /// thread, when the key log may hold its connection's secrets.
    private func open(_ bytes: UnsafeRawBufferPointer, at ts: Timestamp, from direction: Direction) {
        // Checked before header protection is removed: a reset's bits are random, and its key
        // phase bit must not start a key update.
        if resetTokens.isReset(bytes, from: direction) { return }
        guard keyring.cipher != nil else {
            // Overtook the ServerHello (reordered, or its Initial was retransmitted): kept.
            hold(bytes, at: ts, from: direction)
            return
        }
        let pnOffset = 1 + receiverCIDLength(direction)
        guard bytes.count >= pnOffset + 4 + 16 else { return }
        // The keys exist (the common case, checked without copying them out), or can be made.
        if keyring.application[direction] == nil {
            guard let version = negotiatedVersion ?? QUICVersion(info.version), keyring.application(direction, version: version) != nil else {
                holdForKeys(bytes, at: ts, from: direction)
                return
            }
            // Keys that a live key log wrote late: the packets held for them first.
            if held.waitingSince != nil { stopWaitingForKeys() }
        }
        // The keys are named unretained while the opener and the queue use them: the keyring
        // holds a direction's `PhaseKeys` from when they are made for the connection's life, and
        // neither replaces them (the opener changes only what they hold); an opened packet's
        // frames, which move the connection on, are read after. Bound with `guard let`, they
        // cost a retain and a release a packet.
        guard let keys = keyring.application[direction].map(Unmanaged.passUnretained) else { return }
        if let queue = decryptionQueue, queue._withUnsafeGuaranteedRef({ $0.willTake(packetBytes: bytes.count) }) {
            switch keys._withUnsafeGuaranteedRef({ opener.prepareShort(bytes, pnOffset: pnOffset, keys: $0, from: direction) }) {
            case .prepared(let p):
                queue._withUnsafeGuaranteedRef {
                    $0.submit(header: p.header, sealed: p.sealed, packetNumber: p.packetNumber, keys: p.keys, of: self,
                              from: direction, at: ts)
                }
                return
            case .failed:
                return packetFailed()
            case .openHere:
                break   // whether it authenticates decides how the packets after it are read
            }
        }
        switch keys._withUnsafeGuaranteedRef({ opener.openShort(bytes, pnOffset: pnOffset, keys: $0, from: direction) }) {
        case .opened(let plaintext):
            packetOpened(application: true)
            applicationFrames(plaintext, at: ts, from: direction)
        case .failed:
            guard let decryption, decryption.isHolding else { return packetFailed() }
            // Judged in its turn, as the thread's packets are: it may be a reset whose token is in
            // a packet still on the thread.
            let copy = Array(bytes)
            decryption.later { [self] in copy.withUnsafeBytes { opened(nil, packet: $0, at: ts, from: direction) } }
        case .untried:
            break
        }
    }

    // MARK: Keys

    /// Initial packets: tried with the keys of each DCID the client has used, newest first.
    private func openInitial(_ whole: UnsafeRawBufferPointer, pnOffset: Int, version: QUICVersion, at ts: Timestamp,
                             from direction: Direction) {
        for dcid in keyring.initialDCIDs {
            guard let keys = keyring.initial(version: version, dcid: dcid, direction: direction) else { continue }
            if let plaintext = opener.open(whole, pnOffset: pnOffset, keys: keys, space: .initial, from: direction, longHeader: true) {
                packetOpened(application: false)
                confirmed = true
                return frames(plaintext, space: .initial, at: ts, from: direction)
            }
        }
        info.packetsUndecryptable += 1
    }

    // MARK: Packet protection

    private func packetFailed() {
        info.packetsUndecryptable += 1
        connection.note(.quicDecryptionFailed)
    }

    /// The frames of a 0-RTT or 1-RTT packet opened here: at once, or — while packets before it
    /// wait on the decryption thread — in its turn (streams are read in the capture's order).
    private func applicationFrames(_ plaintext: UnsafeRawBufferPointer, at ts: Timestamp, from direction: Direction) {
        guard let decryption, decryption.isHolding else { return frames(plaintext, space: .application, at: ts, from: direction) }
        let copy = Array(plaintext)
        decryption.later { [self] in copy.withUnsafeBytes { frames($0, space: .application, at: ts, from: direction) } }
    }

    /// A packet the decryption thread opened (nil: it did not authenticate), in its turn.
    /// `packet`: the whole packet as it came (its last 16 bytes are left as they were when
    /// it does not authenticate).
    func opened(_ plaintext: UnsafeRawBufferPointer?, packet: UnsafeRawBufferPointer, at ts: Timestamp, from direction: Direction) {
        guard let plaintext else {
            // A reset whose token came in a packet still on the thread when the reset was read.
            if resetTokens.isReset(packet, from: direction) { return }
            return packetFailed()
        }
        packetOpened(application: true)
        frames(plaintext, space: .application, at: ts, from: direction)
    }

    /// A packet authenticated, here or on the decryption thread. The connection is decrypted
    /// once a packet of its application data (0-RTT, 1-RTT: always with a key log's secrets) is,
    /// as a TLS connection is once an application record is: one definition for the summary,
    /// `--stats`, the report and the outputs (with the handshake's secrets alone it was
    /// "decrypted" and `quic_keys_not_found` at once).
    private func packetOpened(application: Bool) {
        info.packetsDecrypted += 1
        if application && !info.decrypted { info.decrypted = true; handshake.tls.decrypted = true }
    }

    // MARK: Frames

    /// What the frames of a decrypted packet (`QUICFrameParser`) mean for the connection: CRYPTO
    /// data to the handshake of its packet number space, STREAM data to HTTP/3, CIDs and reset
    /// tokens to the connection, CONNECTION_CLOSE to how it ended.
    private func frames(_ plaintext: UnsafeRawBufferPointer, space: QUICSpace, at ts: Timestamp, from direction: Direction) {
        // The plaintext lies in the workspace: nothing here opens another packet.
        for frame in QUICFrameParser(plaintext) {
            switch frame {
            case .other:
                continue
            case .resetStream(let id, _):
                streams.reset(id, at: ts, from: direction)
            case .stopSending(let id):
                streams.consumer?.stopSending(id, at: ts, from: direction)
            case .crypto(let offset, let data):
                for event in handshake.received(data, at: offset, space: space, from: direction) { handshakeEvent(event) }
            case .stream(let id, let offset, let data, let fin):
                streams.data(id, data, at: offset, fin: fin, at: ts, from: direction)
            case .newConnectionID(let cid, let resetToken):
                cids.announce(Array(cid))
                resetTokens.add(resetToken, from: direction)
            case .connectionClose(let application):
                info.end = application ? "application_close" : "connection_close"
            }
        }
    }

    // MARK: End

    /// The connection is over (idle, closed, or the capture ended): streams still open are
    /// handed on with their holes declared lost, then the HTTP/3 session ends, then the
    /// connection's facts are published for its outputs.
    func finish(at ts: Timestamp) {
        endKeyWait()
        streams.flush(at: ts)
        if let h3 = streams.consumer {
            h3.finish(at: ts)
            info.requests = h3.requests
            info.pushes = h3.pushes
        }
        if info.end == nil { info.end = resetTokens.sawReset ? "stateless_reset" : "idle" }
        info.keyUpdates = max(keyring.application.fromClient?.updates ?? 0, keyring.application.fromServer?.updates ?? 0)
        // Without keys: what its packets say of its requests.
        if let inferred = pattern.finish(alpnOffered: handshake.tls.alpnOffered, decrypted: info.decrypted, in: workspace) {
            handshake.tls.inferred = inferred
        }
        connection.quic = info
        connection.tls = handshake.tls
        connection.times.finished = ts
    }
}
