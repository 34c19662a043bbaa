/// What runs on the byte streams of one TCP connection: HTTP/1.x, HTTP/2, TLS (wrapping one of
/// them), a proxy tunnel; chosen by a `SessionFactory` from the first bytes.
///
/// Input: Reassembly's calls (`StreamHandler`, in its documented order, each with its
/// `Direction`). Output: `HTTPMessage`s paired into `Transaction`s by the session's pairing
/// (HTTP/1.x: in order; HTTP/2: by stream id), which hands them to the `TransactionEmitter`.
public protocol ConnectionSession: StreamHandler {
    /// The URL scheme of what the session carries ("http"; "https" inside TLS).
    var scheme: String { get }
}

/// Chooses the session of each connection, by content: the pipeline asks it once per connection,
/// with the first bytes the connection delivers (nil when it starts with a gap or ends without
/// data); a session may later hand its connection on to another one (`SessionSlot.handOver`) —
/// a CONNECT tunnel or an Upgrade to another protocol.
public protocol SessionFactory {
    func makeSession(for connection: Connection, emitter: TransactionEmitter,
                     firstBytes: UnsafeRawBufferPointer?, from direction: Direction) -> any ConnectionSession
    /// Reads the first bytes of a connection whose handshake was not captured: do they look like
    /// a client's or a server's? (Reassembly decides the direction with it.)
    func speakerHint(_ firstBytes: UnsafeRawBufferPointer) -> SpeakerHint
    /// Whether these first bytes are too few to choose by (the slot holds them until more come).
    func needsMoreBytes(_ firstBytes: UnsafeRawBufferPointer) -> Bool
    /// Whether the first bytes of a connection open a protocol that only its client opens with,
    /// so firmly that they are believed over the TCP handshake when the side that accepted the
    /// connection sends them (a reverse proxy: Reassembly then makes that side the client).
    func opensAsClient(_ firstBytes: UnsafeRawBufferPointer) -> Bool
}

extension SessionFactory {
    public func opensAsClient(_ firstBytes: UnsafeRawBufferPointer) -> Bool { false }
}

/// The factory a pipeline uses, by content on any port: TLS where the first bytes are a TLS
/// handshake record; HTTP/2 (h2c) where they are the client's connection preface, the server's
/// SETTINGS, or, on a connection picked up mid-stream, HTTP/2 frames; SOCKS where the client
/// greets a SOCKS proxy; HTTP/1.x otherwise. What a proxy tunnel carries is chosen the same way.
public struct StandardSessionFactory: SessionFactory {
    public var options: HTTPParserOptions
    /// TLS secrets (`--keylog`); nil: TLS connections show their handshakes only.
    public var keyLog: KeyLog?
    /// Where TLS application data is decrypted (offline: the second core); nil: as it comes.
    /// Only for TLS on the TCP connection itself: what a tunnel carries is read as it comes.
    var decryption: DecryptionQueue? = nil
    /// How many proxy tunnels the connection is inside (CONNECT in SOCKS in CONNECT…).
    private var tunnelDepth = 0
    /// Tunnels nested deeper than this are left opaque.
    static let maxTunnelDepth = 4
    public init(options: HTTPParserOptions, keyLog: KeyLog? = nil) {
        self.options = options
        self.keyLog = keyLog
    }

    /// The factory for what a proxy tunnel carries (nil: nested too deep; left opaque).
    var insideTunnel: StandardSessionFactory? {
        guard tunnelDepth < Self.maxTunnelDepth else { return nil }
        var inner = self
        inner.tunnelDepth += 1
        inner.decryption = nil
        return inner
    }

    public func makeSession(for connection: Connection, emitter: TransactionEmitter,
                            firstBytes: UnsafeRawBufferPointer?, from direction: Direction) -> any ConnectionSession {
        let hello = direction == .fromClient ? TLSHandshakeType.clientHello : TLSHandshakeType.serverHello
        if let firstBytes, TLSRecordReader.looksLikeRecord(firstBytes, handshakeType: hello) {
            return TLSSession(connection: connection, emitter: emitter, options: options, keyLog: keyLog, decryption: decryption)
        }
        if let firstBytes, let preface = Self.http2Start(firstBytes, from: direction, on: connection) {
            return HTTP2Session(connection: connection, emitter: emitter, options: options, scheme: "http", expectsPreface: preface)
        }
        if let firstBytes, direction == .fromClient, connection.tcpHalf(.fromClient)?.midstream == false, SOCKSHandshake.isGreeting(firstBytes) {
            return SOCKSSession(connection: connection, emitter: emitter, version: firstBytes[0], tunnels: insideTunnel)
        }
        return HTTP1Session(connection: connection, emitter: emitter, options: options, scheme: "http", tunnels: insideTunnel,
                            onTCPStream: tunnelDepth == 0)
    }

    /// Whether a connection starts as HTTP/2 in clear, and if so whether the client's preface is
    /// to come (nil: not HTTP/2).
    static func http2Start(_ bytes: UnsafeRawBufferPointer, from direction: Direction, on connection: Connection) -> Bool? {
        let midstream = connection.midstream
        if direction == .fromClient && bytes.starts(with: HTTP2FrameHeader.preface.prefix(16)) { return true }
        if direction == .fromServer && !midstream && HTTP2FrameHeader.looksLikeSettings(bytes) { return true }
        if midstream && HTTP2FrameHeader.looksLikeFrames(bytes) { return false }
        return nil
    }

    /// A TLS record header, the HTTP/2 preface or a SOCKS greeting cut by the segmenting: more
    /// is needed to tell.
    public func needsMoreBytes(_ firstBytes: UnsafeRawBufferPointer) -> Bool {
        if firstBytes.count < 16 && !firstBytes.isEmpty && HTTP2FrameHeader.preface.starts(with: firstBytes) { return true }
        if SOCKSHandshake.mayBeGreetingPrefix(firstBytes) { return true }
        return firstBytes.count < TLSRecordReader.bytesToRecognise && TLSRecordReader.mayBeginHandshakeRecord(firstBytes)
    }

    /// A SOCKS greeting: reverse SOCKS proxies (Zeek's `socks*_reverse` signatures) have the
    /// proxy open the TCP connection to the client, which then greets it.
    public func opensAsClient(_ firstBytes: UnsafeRawBufferPointer) -> Bool { SOCKSHandshake.isGreeting(firstBytes) }

    public func speakerHint(_ firstBytes: UnsafeRawBufferPointer) -> SpeakerHint {
        // A TLS ClientHello comes from the client, a ServerHello from the server.
        if TLSRecordReader.looksLikeRecord(firstBytes, handshakeType: TLSHandshakeType.clientHello) { return .client }
        if TLSRecordReader.looksLikeRecord(firstBytes, handshakeType: TLSHandshakeType.serverHello) { return .server }
        // The HTTP/2 preface is the client's (it also reads as a request line).
        if firstBytes.starts(with: HTTP2FrameHeader.preface.prefix(16)) { return .client }
        return HTTP1Session.speakerHint(firstBytes)
    }
}

/// The handler Reassembly holds for each connection: it owns the connection's session and passes
/// every call on to it. A session can be replaced (`handOver`) between two calls, so that one
/// protocol can hand the rest of the connection to another.
public final class SessionSlot: StreamHandler {
    private let factory: any SessionFactory
    private unowned let emitter: TransactionEmitter
    /// Chosen with the connection's first bytes.
    public private(set) var session: (any ConnectionSession)? = nil
    /// `session` again, unretained, for the per-packet path: reading the `var` to call it would
    /// retain and release it on every packet. `session` owns it; both change together.
    private unowned(unsafe) var current: (any ConnectionSession)? = nil

    init(factory: any SessionFactory, emitter: TransactionEmitter) {
        self.factory = factory
        self.emitter = emitter
    }

    /// From the next call on, the connection's bytes go to `next`.
    public func handOver(to next: any ConnectionSession) {
        session = next
        current = next
    }

    private func choose(_ connection: Connection, firstBytes: UnsafeRawBufferPointer?, from direction: Direction) -> any ConnectionSession {
        let chosen = factory.makeSession(for: connection, emitter: emitter, firstBytes: firstBytes, from: direction)
        handOver(to: chosen)
        return chosen
    }

    /// The first bytes, while too few for the factory to choose by.
    private var held: [UInt8] = []
    private var heldOffset: UInt64 = 0
    private var heldTime: Timestamp = .zero
    private var heldDirection = Direction.fromClient

    @inline(__always)
    public func received(_ chunk: StreamChunk, from direction: Direction, on connection: Connection) {
        if let current {
            current.received(chunk, from: direction, on: connection)
        } else {
            firstReceived(chunk, from: direction, on: connection)
        }
    }

    /// Until a session is chosen. First bytes too few for the factory to choose by are held
    /// and delivered, with their own offset and time, once it has chosen.
    private func firstReceived(_ chunk: StreamChunk, from direction: Direction, on connection: Connection) {
        if held.isEmpty {
            if factory.needsMoreBytes(chunk.bytes) {
                held = Array(chunk.bytes)
                heldOffset = chunk.offset
                heldTime = chunk.timestamp
                heldDirection = direction
                return
            }
            choose(connection, firstBytes: chunk.bytes, from: direction).received(chunk, from: direction, on: connection)
            return
        }
        if direction == heldDirection {
            let all = held + chunk.bytes
            if all.withUnsafeBytes({ factory.needsMoreBytes($0) }) {
                held = all
                return
            }
            let chosen = all.withUnsafeBytes { choose(connection, firstBytes: $0, from: direction) }
            deliverHeld(to: chosen, on: connection)
            chosen.received(chunk, from: direction, on: connection)
            return
        }
        // The other side spoke first after all: choose with what is held.
        releaseHeld(on: connection)
        session!.received(chunk, from: direction, on: connection)
    }

    private func deliverHeld(to chosen: any ConnectionSession, on connection: Connection) {
        let bytes = held
        held = []
        bytes.withUnsafeBytes { raw in
            chosen.received(StreamChunk(offset: heldOffset, bytes: raw, timestamp: heldTime), from: heldDirection, on: connection)
        }
    }

    private func releaseHeld(on connection: Connection) {
        guard session == nil, !held.isEmpty else { return }
        let chosen = held.withUnsafeBytes { choose(connection, firstBytes: $0, from: heldDirection) }
        deliverHeld(to: chosen, on: connection)
    }

    public func missed(_ gap: StreamGap, from direction: Direction, on connection: Connection) {
        releaseHeld(on: connection)
        (session ?? choose(connection, firstBytes: nil, from: direction)).missed(gap, from: direction, on: connection)
    }

    public func ended(_ direction: Direction, reason: CloseReason, at timestamp: Timestamp, on connection: Connection) {
        releaseHeld(on: connection)
        (session ?? choose(connection, firstBytes: nil, from: direction)).ended(direction, reason: reason, at: timestamp, on: connection)
    }

    public func finished(_ connection: Connection, at timestamp: Timestamp) {
        releaseHeld(on: connection)
        session?.finished(connection, at: timestamp)
    }
}
