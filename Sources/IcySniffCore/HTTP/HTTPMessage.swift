/// One header field line, as sent (name case kept, value without surrounding whitespace).
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String
    public init(name: String, value: String) { self.name = name; self.value = value }
}

extension String {
    /// Text from bytes seen on the wire: UTF-8 when valid, otherwise ISO-8859-1 (each byte one
    /// character), so nothing is replaced or lost.
    public init(wireBytes bytes: ArraySlice<UInt8>) {
        self = bytes.withUnsafeBufferPointer { String(wireBuffer: $0) }
    }

    public init(wireBytes bytes: [UInt8]) {
        self = bytes.withUnsafeBufferPointer { String(wireBuffer: $0) }
    }

    public init(wireBuffer buffer: UnsafeBufferPointer<UInt8>) {
        if isASCII(buffer) {
            self = String(decoding: buffer, as: UTF8.self)
        } else if let s = String(validating: buffer, as: UTF8.self) {
            self = s
        } else {
            var scalars = String.UnicodeScalarView()
            for b in buffer { scalars.append(Unicode.Scalar(b)) }
            self = String(scalars)
        }
    }
}

/// One HTTP request or response as seen on the wire: start line, header fields, body sizes, the
/// capture times of its first and last bytes, and what went wrong.
public final class HTTPMessage {
    public enum Kind: Sendable { case request, response }

    public let kind: Kind
    // Start line.
    public var method = ""
    public var target: [UInt8] = []
    public var version = ""
    public var status = 0
    public var reason = ""
    public var startLineParsed = false
    public var isHTTP09 = false

    public var headers = HeaderFields()
    public var trailers = HeaderFields()
    /// Bytes of the start line and header section, including the final empty line.
    public var headersSize = 0
    public var headersComplete = false

    /// The body: its framing, sizes, content decoding and the bytes kept of it (`MessageBody`).
    public internal(set) var body = MessageBody()
    /// Bytes of the message on the wire: its head and its body as sent.
    public var wireBytes: UInt64 { UInt64(max(0, headersSize)) + body.wireBytes }

    /// The message is emitted (or dropped): its kept body no longer counts against the budget.
    func releaseBodyBudget() { body.releaseBudget() }

    deinit { releaseBodyBudget() }

    /// Where in its stream the message lay and when its bytes were captured.
    public struct Arrival: Sendable {
        /// The stream offset of its first byte.
        public internal(set) var startOffset: UInt64 = 0
        /// What its sender had received of the other direction when it sent the message's first
        /// byte (the ACK of that segment, as a stream offset; nil: not known).
        public internal(set) var peerAck: UInt64? = nil
        public internal(set) var firstByte: Timestamp = .zero
        public internal(set) var headersEnd: Timestamp = .zero
        public internal(set) var lastByte: Timestamp = .zero
    }
    public internal(set) var arrival = Arrival()
    /// The message reached its end as framed (not cut short by a gap, close or end of capture).
    public var complete = false
    /// The parser is done with this message (complete or not).
    public var ended = false
    public var weirds: [Weird] = []

    /// For responses: the method of the request this answers (set by the parser from the request
    /// it paired), which frames it.
    public var requestMethod: String? = nil

    init(kind: Kind) { self.kind = kind }

    func note(_ weird: Weird) {
        if !weirds.contains(weird) { weirds.append(weird) }
    }

    /// The request-target as text (decoded once: outputs ask for it several times).
    public var targetString: String {
        if let cachedTarget, cachedTargetCount == target.count { return cachedTarget }
        let s = String(wireBytes: target)
        cachedTarget = s
        cachedTargetCount = target.count
        return s
    }
    private var cachedTarget: String? = nil
    private var cachedTargetCount = -1

    /// `body` over the target's text as UTF-8: an ASCII target's own bytes (they are its text:
    /// no String made), any other's through `targetString`. The one place that decides it for
    /// the URL, the target fields and the cache key.
    /// A target that is not UTF-8 (a client that sent Latin-1 or raw bytes) has its bytes above
    /// ASCII percent-encoded as sent (`%D9`): read as Latin-1 and encoded again they became
    /// other bytes (`%C3%99`), a URL the client never asked for.
    func withTargetUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if target.withUnsafeBufferPointer({ isASCII($0) }) { return target.withUnsafeBufferPointer(body) }
        if target.withUnsafeBufferPointer({ String(validating: $0, as: UTF8.self) }) == nil {
            var escaped: [UInt8] = []
            escaped.reserveCapacity(target.count * 3)
            let hex = Array("0123456789ABCDEF".utf8)
            for b in target {
                if b < 0x80 { escaped.append(b) } else { escaped += [0x25, hex[Int(b >> 4)], hex[Int(b & 15)]] }
            }
            return escaped.withUnsafeBufferPointer(body)
        }
        return withUTF8Bytes(of: targetString, body)
    }

    /// Whether the target starts with "/" as text reads it (a "/" followed by a combining mark is
    /// another character): CONNECT's authority-form against an extended CONNECT's path.
    var targetStartsWithSlash: Bool {
        guard target.first == UInt8(ascii: "/") else { return false }
        return target.count == 1 || target[1] < 0x80 || targetString.hasPrefix("/")
    }

    /// "HTTP/1.1" style version for outputs ("HTTP/0.9" for simple messages).
    public var versionText: String { isHTTP09 ? "HTTP/0.9" : version }

    public var isInterim: Bool { kind == .response && status >= 100 && status < 200 && status != 101 }
}
