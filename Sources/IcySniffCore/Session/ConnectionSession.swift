/// What runs on the byte streams of one TCP connection: HTTP/1.x today; TLS (wrapping an HTTP
/// session) and HTTP/2 plug in here.
///
/// Input: Reassembly's calls (`StreamHandler`, in its documented order, each with its
/// `Direction`). Output: `HTTPMessage`s paired into `Transaction`s by the session's pairing
/// (HTTP/1.x: in order; HTTP/2: by stream id), which hands them to the `TransactionEmitter`.
public protocol ConnectionSession: StreamHandler {
    /// The URL scheme of what the session carries ("http"; "https" inside TLS).
    var scheme: String { get }
}

/// Chooses the session of each connection. The pipeline asks it once per connection, when the
/// connection first carries data; a session may later hand its connection on to another one
/// (`SessionSlot.handOver`) — a CONNECT tunnel or an Upgrade to another protocol.
public protocol SessionFactory {
    func makeSession(for connection: Connection, emitter: TransactionEmitter) -> any ConnectionSession
    /// Reads the first bytes of a connection whose handshake was not captured: do they look like
    /// a client's or a server's? (Reassembly decides the direction with it.)
    func speakerHint(_ firstBytes: UnsafeRawBufferPointer) -> SpeakerHint
}

/// Today's factory: every connection is HTTP/1.x in the clear.
public struct HTTPSessionFactory: SessionFactory {
    public var options: HTTPParserOptions
    public init(options: HTTPParserOptions) { self.options = options }

    public func makeSession(for connection: Connection, emitter: TransactionEmitter) -> any ConnectionSession {
        HTTP1Session(connection: connection, emitter: emitter, options: options, scheme: "http")
    }

    public func speakerHint(_ firstBytes: UnsafeRawBufferPointer) -> SpeakerHint {
        HTTP1Session.speakerHint(firstBytes)
    }
}

/// The handler Reassembly holds for each connection: it owns the connection's session and passes
/// every call on to it. A session can be replaced (`handOver`) between two calls, so that one
/// protocol can hand the rest of the connection to another.
public final class SessionSlot: StreamHandler {
    public private(set) var session: any ConnectionSession
    /// `session` again, unretained, for the per-packet path: reading the `var` to call it would
    /// retain and release it on every packet. `session` owns it; both change together.
    private unowned(unsafe) var current: any ConnectionSession

    init(_ session: any ConnectionSession) {
        self.session = session
        self.current = session
    }

    /// From the next call on, the connection's bytes go to `next`.
    public func handOver(to next: any ConnectionSession) {
        session = next
        current = next
    }

    @inline(__always)
    public func received(_ chunk: StreamChunk, from direction: Direction, on connection: Connection) {
        current.received(chunk, from: direction, on: connection)
    }

    public func missed(_ gap: StreamGap, from direction: Direction, on connection: Connection) {
        session.missed(gap, from: direction, on: connection)
    }

    public func ended(_ direction: Direction, reason: CloseReason, at timestamp: Timestamp, on connection: Connection) {
        session.ended(direction, reason: reason, at: timestamp, on: connection)
    }

    public func finished(_ connection: Connection, at timestamp: Timestamp) {
        session.finished(connection, at: timestamp)
    }
}
