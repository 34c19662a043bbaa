/// What one WebSocket carried (RFC 6455): the output of the WebSocket stage, attached to the
/// transaction that opened the socket (the HTTP/1.1 `Upgrade: websocket` answered 101, or an
/// HTTP/2 extended CONNECT with `:protocol websocket` answered 2xx, RFC 8441).
///
/// Counts are exact whatever is kept. The messages themselves are kept up to caps (per socket
/// and, through the pipeline's `BodyBudget` for messages, over all sockets together), each
/// with at most `WebSocketOptions.keptBytes` of its data: a socket open for days does not grow
/// memory. Messages past a cap are counted in `dropped` (flagged `websocket_messages_capped`).
public final class WebSocketLog: @unchecked Sendable {
    /// One data message (text or binary, its fragments joined, inflated when permessage-deflate
    /// compressed it). Control frames are counted in `Direction`, not listed.
    public struct Message: Sendable {
        public enum Problem: String, Sendable {
            /// Bytes of the message were never captured, or the socket ended inside it.
            case incomplete
            /// permessage-deflate data that could not be inflated (its context was lost to a gap
            /// or an earlier failure, or the data is not DEFLATE): `size` is the wire size.
            case notInflated = "not_inflated"
            /// Inflating stopped at the cap on a message's size (a decompression bomb).
            case inflateCapped = "inflate_capped"
        }
        public var fromClient: Bool
        /// When the message's first frame began (the packet carrying its first byte).
        public var time: Timestamp
        /// 1 text, 2 binary (the opcode of its first frame).
        public var opcode: UInt8
        /// The message's length: after inflating when it was compressed.
        public var size: Int
        /// Its payload bytes on the wire (compressed size when compressed), without frame headers.
        public var wireSize: Int
        public var compressed: Bool
        /// The data kept (the first `keptBytes`): nil when none is kept.
        public var data: [UInt8]?
        /// `data` holds less than `size` bytes.
        public var truncated: Bool
        public var problem: Problem?
    }

    /// One direction's totals, over every frame whether or not its message was kept.
    public struct Direction: Sendable {
        public var messages = 0
        /// Data messages' sizes (inflated).
        public var bytes = 0
        /// Frame bytes on the wire (headers included).
        public var wireBytes = 0
        public var pings = 0
        public var pongs = 0
    }

    /// The extensions the server accepted (`Sec-WebSocket-Extensions` of its answer), as sent.
    public internal(set) var extensions: String?
    /// The subprotocol the server chose (`Sec-WebSocket-Protocol`).
    public internal(set) var subprotocol: String?
    public internal(set) var messages: [Message] = []
    public internal(set) var sent = Direction()
    public internal(set) var received = Direction()
    /// Messages counted but not listed (past the caps).
    public internal(set) var dropped = 0
    /// The first Close frame: its status code (nil: none, or a Close without one), reason, and
    /// who sent it.
    public internal(set) var closeCode: UInt16?
    public internal(set) var closeReason: String?
    public internal(set) var closedByClient: Bool?
    /// What the messages kept hold of the pipeline's budget, given back at emission.
    var charged = 0
    var budget: BodyBudget?

    init() {}

    /// Bytes a kept message costs besides its data (the budget's unit).
    static let messageOverhead = 64

    func releaseBudget() {
        if charged > 0 { budget?.give(charged) }
        charged = 0
    }

    deinit { releaseBudget() }
}

/// What the WebSocket stage keeps (a value type, as `HTTPParserOptions`).
public struct WebSocketOptions: Sendable {
    /// Data kept per message (0: none, only sizes): `--bodies` keeps up to 1 MiB, `-V` a preview.
    public var keptBytes = 0
    /// Messages listed per socket; the rest are counted.
    public var maxMessages = 10_000
    /// Data kept per socket over all its messages.
    public var maxSocketBytes = 8 << 20
    /// A compressed message is inflated up to this size (then flagged; its size a lower bound).
    public var maxInflatedBytes = 64 << 20
    public init() {}
}
