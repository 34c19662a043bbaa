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

    public init(offset: UInt64, bytes: UnsafeRawBufferPointer, timestamp: Timestamp) {
        self.offset = offset
        self.bytes = bytes
        self.timestamp = timestamp
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

/// What the reassembler calls, per connection. Call order, per direction: `received` and `missed`
/// zero or more times in stream order, then `ended` once; after both directions, `finished` once.
/// A handler is created for a connection when it first carries data.
public protocol StreamHandler: AnyObject {
    func received(_ chunk: StreamChunk, from side: Int, on connection: Connection)
    func missed(_ gap: StreamGap, from side: Int, on connection: Connection)
    func ended(side: Int, reason: CloseReason, at timestamp: Timestamp, on connection: Connection)
    func finished(_ connection: Connection, at timestamp: Timestamp)
}
