/// A run of in-order bytes of one direction of a TCP connection.
///
/// `offset` is the position of the first byte in the direction's stream, counted in 64 bits from
/// the first byte after the SYN (or from the first byte seen, for a stream picked up mid-way), so it
/// never wraps. `timestamp` is the capture time at which these bytes became contiguous. `bytes`
/// are borrowed for the duration of the call.
public struct StreamChunk {
    public var offset: UInt64
    public var bytes: UnsafeRawBufferPointer
    public var timestamp: Timestamp
    /// The other direction's stream offset that the segment carrying these bytes acknowledged:
    /// what the sender had received of the peer's bytes when it sent them (nil: no ACK, or not
    /// known). Tells which request a response can answer.
    public var peerAck: UInt64?

    public init(offset: UInt64, bytes: UnsafeRawBufferPointer, timestamp: Timestamp, peerAck: UInt64? = nil) {
        self.offset = offset
        self.bytes = bytes
        self.timestamp = timestamp
        self.peerAck = peerAck
    }
}

/// Bytes of a direction that were never captured: `length` bytes starting at `offset`.
public struct StreamGap: Sendable {
    public var offset: UInt64
    public var length: UInt64
    public var timestamp: Timestamp
}

/// Why a direction ended.
public enum CloseReason: Sendable {
    case fin
    case reset
    /// End of capture, idle timeout or eviction: the connection may have gone on.
    case flushed
}

/// Which way bytes flow on a connection. Reassembly decides which endpoint is the client before
/// it delivers anything (`ClientEvidence` says how), so a consumer never guesses.
public enum Direction: Sendable, Hashable, CaseIterable {
    case fromClient
    case fromServer

    public var reversed: Direction { self == .fromClient ? .fromServer : .fromClient }
}

/// How Reassembly recognised the client of a connection.
public enum ClientEvidence: String, Sendable {
    /// The SYN (or SYN-ACK) was captured.
    case syn
    /// The SYN was captured, but the side that accepted the connection opened the protocol on it
    /// as only a client does (`SessionFactory.opensAsClient`: a reverse SOCKS proxy's client).
    case reverse
    /// No handshake: the first bytes read like a client's or a server's (`SpeakerHint`).
    case content
    /// Neither: the endpoint on a well-known port, else the lower port, is the server.
    case port
}

/// What the first bytes of a direction say about who sent them, as the protocols on top read
/// them (an HTTP request line: the client; a status line: the server). Reassembly asks for it
/// only when the handshake was not captured.
public enum SpeakerHint: Sendable {
    case client, server, unknown
}

/// What the reassembler calls, per connection. Call order, per direction: `received` and `missed`
/// zero or more times in stream order, then `ended` once; after both directions, `finished` once.
/// A handler is created for a connection when it first carries data. The direction of every
/// call is decided (`Connection.clientEvidence`) before the first one.
public protocol StreamHandler: AnyObject {
    func received(_ chunk: StreamChunk, from direction: Direction, on connection: Connection)
    func missed(_ gap: StreamGap, from direction: Direction, on connection: Connection)
    func ended(_ direction: Direction, reason: CloseReason, at timestamp: Timestamp, on connection: Connection)
    func finished(_ connection: Connection, at timestamp: Timestamp)
}

/// What reads a byte stream carried inside another protocol's: the two directions of an HTTP/1.1
/// connection after a 101 or a CONNECT answered 2xx, of a SOCKS connection after its grant, of an
/// HTTP/2 extended CONNECT stream's DATA. `StreamHandler`'s events without the connection's own
/// offsets and `Connection` (the carrier knows them; a consumer that needs offsets counts its
/// own, as `TunnelRelay` does): bytes and holes per direction in order, `ended` per direction,
/// and `finished` when the carrier ends while the stream is still open (the connection's end, an
/// HTTP/2 RST_STREAM); all of it before the carrier's own transaction is emitted (what the stream
/// held is part of that transaction: a WebSocket's messages, a tunnel's inner transactions).
protocol CarriedStreamConsumer: AnyObject {
    func received(_ bytes: UnsafeRawBufferPointer, at ts: Timestamp, from direction: Direction)
    func missed(_ length: UInt64, at ts: Timestamp, from direction: Direction)
    func ended(_ direction: Direction, reason: CloseReason, at ts: Timestamp)
    func finished(at ts: Timestamp)
}
