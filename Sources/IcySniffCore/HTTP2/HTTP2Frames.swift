/// HTTP/2 framing (RFC 9113 §4, §6): the frame header, the types and flags icy-sniff reads, and
/// an incremental reader of one direction's frames.

enum HTTP2FrameType: UInt8 {
    case data = 0, headers = 1, priority = 2, rstStream = 3, settings = 4, pushPromise = 5,
         ping = 6, goaway = 7, windowUpdate = 8, continuation = 9
}

struct HTTP2FrameHeader: Equatable {
    static let size = 9
    /// The largest payload the length field can say (2^24 - 1); SETTINGS_MAX_FRAME_SIZE limits it.
    static let maxLength = (1 << 24) - 1
    static let defaultMaxFrameSize = 16_384

    var length: Int
    var type: UInt8
    var flags: UInt8
    var stream: UInt32

    init(length: Int, type: UInt8, flags: UInt8, stream: UInt32) {
        self.length = length
        self.type = type
        self.flags = flags
        self.stream = stream
    }

    /// Reads the 9 header bytes at `p` (the reserved bit of the stream id is ignored, §4.1).
    init(_ p: UnsafeRawBufferPointer) {
        length = Int(p[0]) << 16 | Int(p[1]) << 8 | Int(p[2])
        type = p[3]
        flags = p[4]
        stream = (UInt32(p[5]) << 24 | UInt32(p[6]) << 16 | UInt32(p[7]) << 8 | UInt32(p[8])) & 0x7FFF_FFFF
    }

    var kind: HTTP2FrameType? { HTTP2FrameType(rawValue: type) }
    /// DATA, HEADERS: the sender's last frame on the stream.
    var endStream: Bool { flags & 0x01 != 0 }
    /// SETTINGS, PING: an acknowledgement.
    var ack: Bool { flags & 0x01 != 0 }
    /// HEADERS, PUSH_PROMISE, CONTINUATION: the header block ends here.
    var endHeaders: Bool { flags & 0x04 != 0 }
    /// DATA, HEADERS, PUSH_PROMISE: a pad-length byte leads, padding trails.
    var padded: Bool { flags & 0x08 != 0 }
    /// HEADERS: 5 bytes of priority follow the pad length.
    var hasPriority: Bool { flags & 0x20 != 0 }

    /// The connection preface a client starts with (§3.4).
    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// Whether `bytes` begin like HTTP/2 frames, for a connection whose start was not seen: a
    /// known frame type, a length within the default frame size, stream 0 exactly for the
    /// connection's frames; and, where the bytes hold the next frame's header, that one too.
    static func looksLikeFrames(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        var checked = 0
        while bytes.count - offset >= size && checked < 3 {
            let h = HTTP2FrameHeader(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + size)]))
            guard let kind = h.kind, h.length <= defaultMaxFrameSize, bytes[offset + 5] & 0x80 == 0 else { return false }
            switch kind {
            case .settings, .ping, .goaway: if h.stream != 0 { return false }
            case .windowUpdate: break
            default: if h.stream == 0 { return false }
            }
            if kind == .settings && h.length % 6 != 0 { return false }
            if kind == .ping && h.length != 8 { return false }
            checked += 1
            offset += size + h.length
        }
        // A whole frame, ending where the bytes end or followed by another plausible header.
        return checked > 0 && (offset == bytes.count || checked >= 2)
    }

    /// A server's first frame: SETTINGS on stream 0 (§3.4), whole in `bytes` or not.
    static func looksLikeSettings(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= size else { return false }
        let h = HTTP2FrameHeader(UnsafeRawBufferPointer(rebasing: bytes[0..<size]))
        return h.type == HTTP2FrameType.settings.rawValue && h.flags & 0xFE == 0 && h.stream == 0
            && h.length % 6 == 0 && h.length <= defaultMaxFrameSize && bytes[5] & 0x80 == 0
    }
}

/// Receives the frames of one direction as its reader finds them.
protocol HTTP2FrameHandler: AnyObject {
    /// A whole frame other than DATA: its payload as sent (padding included), the capture times
    /// of its first and last bytes.
    func frame(_ header: HTTP2FrameHeader, payload: UnsafeRawBufferPointer, first: Timestamp, last: Timestamp, from direction: Direction)
    /// A DATA frame starts (its header is read).
    func dataBegan(_ header: HTTP2FrameHeader, at ts: Timestamp, from direction: Direction)
    /// Data of the current DATA frame, padding removed, in pieces as they arrive.
    func data(_ bytes: UnsafeRawBufferPointer, of header: HTTP2FrameHeader, at ts: Timestamp, from direction: Direction)
    /// Data of the current DATA frame lost in a capture gap (the framing is intact).
    func dataLost(_ length: UInt64, of header: HTTP2FrameHeader, at ts: Timestamp, from direction: Direction)
    /// The current DATA frame is over (its last byte, padding included, arrived at `ts`).
    func dataEnded(_ header: HTTP2FrameHeader, at ts: Timestamp, from direction: Direction)
    /// A frame other than DATA was partly lost in a capture gap; the framing is intact.
    func frameLost(_ header: HTTP2FrameHeader, at ts: Timestamp, from direction: Direction)
    /// The framing is lost (a gap across a frame header, a bad preface): nothing more is read.
    func framingLost(_ weird: Weird, at ts: Timestamp, from direction: Direction)
}

/// Reads one direction's frames from its in-order bytes, split anywhere. DATA payloads are
/// streamed to the handler without a copy; other payloads are handed over whole (copied only
/// when a frame spans chunks). Memory: one frame header and at most one non-DATA payload.
struct HTTP2FrameReader {
    private enum State {
        /// The client's connection preface: `matched` bytes of it so far.
        case preface(matched: Int)
        case header
        /// A non-DATA payload being collected in `buffer`.
        case payload(HTTP2FrameHeader)
        case padLength(HTTP2FrameHeader)
        case dataContent(HTTP2FrameHeader, remaining: Int, padding: Int)
        case dataPadding(HTTP2FrameHeader, remaining: Int)
        /// A partly lost non-DATA payload, skipped to its end.
        case skipping(HTTP2FrameHeader, remaining: Int)
        case lost
    }

    let direction: Direction
    private var state: State
    private var headerBytes: [UInt8] = []
    private var buffer: [UInt8] = []
    private var frameStart: Timestamp = .zero

    init(direction: Direction, expectsPreface: Bool) {
        self.direction = direction
        state = expectsPreface ? .preface(matched: 0) : .header
        headerBytes.reserveCapacity(HTTP2FrameHeader.size)
    }

    var isLost: Bool { if case .lost = state { return true }; return false }

    mutating func feed<H: HTTP2FrameHandler>(_ bytes: UnsafeRawBufferPointer, at ts: Timestamp, to handler: H) {
        var i = 0
        let n = bytes.count
        while i < n {
            switch state {
            case .preface(let matched):
                let preface = HTTP2FrameHeader.preface
                var m = matched
                while i < n && m < preface.count {
                    if bytes[i] != preface[m] {
                        state = .lost
                        handler.framingLost(.http2BadPreface, at: ts, from: direction)
                        return
                    }
                    i += 1; m += 1
                }
                state = m == preface.count ? .header : .preface(matched: m)
            case .header:
                if headerBytes.isEmpty { frameStart = ts }
                if headerBytes.isEmpty && n - i >= HTTP2FrameHeader.size {
                    let h = HTTP2FrameHeader(UnsafeRawBufferPointer(rebasing: bytes[i..<(i + HTTP2FrameHeader.size)]))
                    i += HTTP2FrameHeader.size
                    begin(h, at: ts, to: handler)
                    continue
                }
                let take = min(HTTP2FrameHeader.size - headerBytes.count, n - i)
                headerBytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)]))
                i += take
                if headerBytes.count == HTTP2FrameHeader.size {
                    let h = headerBytes.withUnsafeBytes { HTTP2FrameHeader($0) }
                    headerBytes.removeAll(keepingCapacity: true)
                    begin(h, at: ts, to: handler)
                }
            case .payload(let h):
                if buffer.isEmpty && n - i >= h.length {
                    // The whole payload is here: no copy.
                    let payload = UnsafeRawBufferPointer(rebasing: bytes[i..<(i + h.length)])
                    i += h.length
                    state = .header
                    handler.frame(h, payload: payload, first: frameStart, last: ts, from: direction)
                    continue
                }
                let take = min(h.length - buffer.count, n - i)
                buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)]))
                i += take
                if buffer.count == h.length {
                    state = .header
                    buffer.withUnsafeBytes { handler.frame(h, payload: $0, first: frameStart, last: ts, from: direction) }
                    buffer.removeAll(keepingCapacity: buffer.capacity <= 65_536)
                }
            case .padLength(let h):
                let padding = Int(bytes[i])
                i += 1
                if padding > h.length - 1 {
                    state = .lost
                    handler.framingLost(.http2MalformedFrame, at: ts, from: direction)
                    return
                }
                enterData(h, content: h.length - 1 - padding, padding: padding, at: ts, to: handler)
            case .dataContent(let h, let remaining, let padding):
                let take = min(remaining, n - i)
                handler.data(UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)]), of: h, at: ts, from: direction)
                i += take
                enterData(h, content: remaining - take, padding: padding, at: ts, to: handler)
            case .dataPadding(let h, let remaining):
                let take = min(remaining, n - i)
                i += take
                if take == remaining {
                    state = .header
                    handler.dataEnded(h, at: ts, from: direction)
                } else {
                    state = .dataPadding(h, remaining: remaining - take)
                }
            case .skipping(let h, let remaining):
                let take = min(remaining, n - i)
                i += take
                state = take == remaining ? .header : .skipping(h, remaining: remaining - take)
            case .lost:
                return
            }
        }
    }

    private mutating func begin<H: HTTP2FrameHandler>(_ h: HTTP2FrameHeader, at ts: Timestamp, to handler: H) {
        if h.type == HTTP2FrameType.data.rawValue {
            handler.dataBegan(h, at: frameStart, from: direction)
            if h.padded {
                if h.length == 0 {
                    state = .lost
                    handler.framingLost(.http2MalformedFrame, at: ts, from: direction)
                    return
                }
                state = .padLength(h)
            } else {
                enterData(h, content: h.length, padding: 0, at: ts, to: handler)
            }
        } else if h.length == 0 {
            state = .header
            handler.frame(h, payload: UnsafeRawBufferPointer(start: nil, count: 0), first: frameStart, last: ts, from: direction)
        } else {
            state = .payload(h)
        }
    }

    /// In a DATA frame with `content` bytes of data and then `padding` to go.
    private mutating func enterData<H: HTTP2FrameHandler>(_ h: HTTP2FrameHeader, content: Int, padding: Int, at ts: Timestamp, to handler: H) {
        if content > 0 {
            state = .dataContent(h, remaining: content, padding: padding)
        } else if padding > 0 {
            state = .dataPadding(h, remaining: padding)
        } else {
            state = .header
            handler.dataEnded(h, at: ts, from: direction)
        }
    }

    /// `length` bytes missing from the capture. Inside a DATA frame's data or padding, or inside
    /// another frame's payload, the framing survives; across a frame header it is lost.
    mutating func gap<H: HTTP2FrameHandler>(_ length: UInt64, at ts: Timestamp, to handler: H) {
        var left = length
        while left > 0 {
            switch state {
            case .dataContent(let h, let remaining, let padding):
                let take = min(UInt64(remaining), left)
                handler.dataLost(take, of: h, at: ts, from: direction)
                left -= take
                enterData(h, content: remaining - Int(take), padding: padding, at: ts, to: handler)
            case .dataPadding(let h, let remaining):
                let take = min(UInt64(remaining), left)
                left -= take
                if take == UInt64(remaining) {
                    state = .header
                    handler.dataEnded(h, at: ts, from: direction)
                } else {
                    state = .dataPadding(h, remaining: remaining - Int(take))
                }
            case .payload(let h):
                let remaining = h.length - buffer.count
                buffer.removeAll(keepingCapacity: false)
                handler.frameLost(h, at: ts, from: direction)
                let take = min(UInt64(remaining), left)
                left -= take
                state = take == UInt64(remaining) ? .header : .skipping(h, remaining: remaining - Int(take))
            case .skipping(let h, let remaining):
                let take = min(UInt64(remaining), left)
                left -= take
                state = take == UInt64(remaining) ? .header : .skipping(h, remaining: remaining - Int(take))
            case .lost:
                return
            case .preface, .header, .padLength:
                state = .lost
                headerBytes.removeAll()
                handler.framingLost(.http2FramingLost, at: ts, from: direction)
                return
            }
        }
    }
}
