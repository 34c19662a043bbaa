/// The HTTP/2 session of one connection (RFC 9113), read passively from both directions: h2
/// inside decrypted TLS (ALPN h2), h2c with prior knowledge (the client preface), h2c after an
/// `Upgrade: h2c` (handed over by the HTTP/1.1 session, its request being stream 1), and a
/// connection picked up mid-stream whose bytes are frames.
///
/// Input: Reassembly's calls (or the TLS session's plaintext). Each direction's bytes go through
/// an `HTTP2FrameReader`; header blocks (HEADERS / PUSH_PROMISE + CONTINUATION) are decoded by
/// that direction's `HPACKDecoder`; DATA payloads (padding removed) are the bodies, decoded and
/// kept exactly as HTTP/1.x bodies are. Output: one `HTTPMessage` per request, response, interim
/// response and trailer section, paired by stream id in `StreamPairing`.
///
/// A capture gap inside DATA is counted on its stream; inside a header block it leaves that
/// direction's HPACK table unknown, so later headers are not decoded (flagged, never guessed)
/// while DATA of open streams is still counted; across a frame header it ends what can be read
/// of that direction.
final class HTTP2Session: ConnectionSession, HTTP2FrameHandler {
    let scheme: String
    private unowned let connection: Connection
    private let options: HTTPParserOptions
    private let pairing: StreamPairing
    /// Each direction's frame reader.
    private var frames: PerDirection<HTTP2FrameReader>
    /// The decoder of each direction's header blocks.
    private let decoders = PerDirection { _ in HPACKDecoder() }
    /// A header block whose CONTINUATION frames are still to come, per direction (§6.10: nothing
    /// else may come between them on the connection).
    private var pendingBlock = PerDirection<HeaderBlock?>(nil)
    /// SETTINGS_HEADER_TABLE_SIZE values a direction's endpoint sent, waiting for its peer's ACK
    /// (from then on the peer's encoder may use them: RFC 7541 §4.2).
    private var unackedTableSizes = PerDirection<[Int]>([])
    /// SETTINGS_MAX_FRAME_SIZE each direction's endpoint advertised (limits what it receives).
    private var maxFrameSize = PerDirection(HTTP2FrameHeader.defaultMaxFrameSize)
    private var noted = Set<Weird>()
    /// Fields of the block being turned into a message were dropped at a cap (flagged on it).
    private var droppedFields: Weird? = nil
    /// Streams whose DATA an extended CONNECT (RFC 8441) gave to another protocol: a WebSocket's
    /// frames.
    private var carried: [UInt32: any CarriedStreamConsumer] = [:]

    struct HeaderBlock {
        var stream: UInt32
        var type: HTTP2FrameType
        var endStream: Bool
        var promised: UInt32
        var bytes: [UInt8]
        var first: Timestamp
        /// Header block fragment bytes on the wire (HPACK-encoded; no frame headers, padding or
        /// priority fields): HAR `headersSize` for HTTP/2.
        var encodedSize: Int { bytes.count }
    }

    /// - expectsPreface: the client's bytes start with the connection preface (h2 and h2c from
    ///   the start); false for a connection picked up mid-stream.
    init(connection: Connection, emitter: TransactionEmitter, options: HTTPParserOptions, scheme: String, expectsPreface: Bool) {
        self.scheme = scheme
        self.connection = connection
        self.options = options
        self.pairing = StreamPairing(connection: connection, emitter: emitter, scheme: scheme)
        // Picked up mid-stream, the tables' state is unknown: blocks that use only the static
        // table and literals still decode, and a reference to an entry not seen fails (flagged).
        frames = PerDirection { HTTP2FrameReader(direction: $0, expectsPreface: $0 == .fromClient && expectsPreface) }
    }

    /// h2c after `Upgrade: h2c` and a 101: the upgrading HTTP/1.1 request is stream 1, half
    /// closed from the client (RFC 9113 §3.2 of RFC 7540); its response comes as HTTP/2.
    func adoptUpgradeRequest(_ t: Transaction) {
        pairing.adopt(t, as: 1)
    }

    // MARK: StreamHandler

    func received(_ chunk: StreamChunk, from direction: Direction, on connection: Connection) {
        frames[direction].feed(chunk.bytes, at: chunk.timestamp, to: self)
    }

    func missed(_ gap: StreamGap, from direction: Direction, on connection: Connection) {
        frames[direction].gap(gap.length, at: gap.timestamp, to: self)
    }

    func ended(_ direction: Direction, reason: CloseReason, at timestamp: Timestamp, on connection: Connection) {}

    func finished(_ connection: Connection, at timestamp: Timestamp) {
        for stream in carried.keys.sorted() { carried[stream]?.finished(at: timestamp) }
        carried = [:]
        pairing.finish(at: timestamp)
    }

    private func note(_ weird: Weird) {
        if noted.insert(weird).inserted { connection.note(weird) }
    }

    // MARK: HTTP2FrameHandler

    func frame(_ h: HTTP2FrameHeader, payload: UnsafeRawBufferPointer, first: Timestamp, last: Timestamp, from direction: Direction) {
        if h.length > maxFrameSize[direction.reversed] { note(.http2FrameTooLarge) }
        if pendingBlock[direction] != nil && h.type != HTTP2FrameType.continuation.rawValue {
            // §6.10: a header block is followed by its CONTINUATIONs and nothing else.
            note(.http2MalformedFrame)
            abandonBlock(from: direction, at: last)
        }
        guard let kind = h.kind else { return }   // unknown types are ignored (§4.1)
        switch kind {
        case .headers, .pushPromise:
            guard h.stream != 0, let fragment = headerFragment(h, payload) else { return malformed() }
            var block = HeaderBlock(stream: h.stream, type: kind, endStream: kind == .headers && h.endStream,
                                    promised: 0, bytes: [], first: first)
            var bytes = fragment
            if kind == .pushPromise {
                guard bytes.count >= 4 else { return malformed() }
                block.promised = readUInt31(bytes)
                bytes = UnsafeRawBufferPointer(rebasing: bytes[4...])
            }
            block.bytes = Array(bytes)
            if h.endHeaders {
                blockComplete(block, at: last, from: direction)
            } else {
                pendingBlock[direction] = block
            }
        case .continuation:
            guard var block = pendingBlock[direction], block.stream == h.stream else { return malformed() }
            // Taken out, so that `block` holds the only reference to its bytes and the append
            // below is in place: a copy per frame made a CONTINUATION flood quadratic (600,000
            // empty frames after a 1 MB block: 26 s).
            pendingBlock[direction] = nil
            if block.bytes.count + payload.count > options.maxHeaderBytes {
                // A CONTINUATION flood: the block is not collected past the cap. Its fields are
                // lost, and with them the direction's HPACK state.
                note(.headerTooLarge)
                pendingBlock[direction] = block
                return abandonBlock(from: direction, at: last)
            }
            block.bytes.append(contentsOf: payload)
            if h.endHeaders {
                blockComplete(block, at: last, from: direction)
            } else {
                pendingBlock[direction] = block
            }
        case .rstStream:
            guard h.length == 4, h.stream != 0 else { return malformed() }
            let error = readUInt32(payload)
            if !carried.isEmpty, let c = carried.removeValue(forKey: h.stream) { c.finished(at: last) }
            pairing.reset(UInt64(h.stream), at: last, noError: error == 0, byServer: direction == .fromServer)
        case .settings:
            guard h.stream == 0, h.length % 6 == 0 else { return malformed() }
            if h.ack {
                // The peer's settings now hold for what this direction sends.
                if !unackedTableSizes[direction.reversed].isEmpty {
                    let size = unackedTableSizes[direction.reversed].removeFirst()
                    if size >= 0 { decoders[direction].setTableSizeLimit(size) }
                }
                return
            }
            var tableSize: Int? = nil
            var i = 0
            while i + 6 <= payload.count {
                let id = UInt16(payload[i]) << 8 | UInt16(payload[i + 1])
                let value = Int(readUInt32(UnsafeRawBufferPointer(rebasing: payload[(i + 2)...])))
                switch id {
                case 0x1: tableSize = value
                case 0x5: if value >= HTTP2FrameHeader.defaultMaxFrameSize && value <= HTTP2FrameHeader.maxLength { maxFrameSize[direction] = value }
                default: break
                }
                i += 6
            }
            // One entry per SETTINGS frame, so that ACKs pair with frames in order.
            unackedTableSizes[direction].append(tableSize ?? -1)
            if unackedTableSizes[direction].count > 64 { unackedTableSizes[direction].removeFirst() }
        case .goaway:
            guard h.stream == 0, h.length >= 8 else { return malformed() }
            let lastStream = readUInt31(payload)
            let error = readUInt32(UnsafeRawBufferPointer(rebasing: payload[4...]))
            if error != 0 { note(.http2GoawayError) }
            // The streams the sender's peer opened above its last id were never processed.
            pairing.refuse(above: lastStream, clientInitiated: direction == .fromServer, at: last)
        case .priority:
            if h.length != 5 || h.stream == 0 { malformed() }
        case .ping:
            if h.length != 8 || h.stream != 0 { malformed() }
        case .windowUpdate:
            if h.length != 4 { malformed() }
        case .data:
            break   // DATA comes through dataBegan/data/dataEnded
        }
    }

    private func malformed() { note(.http2MalformedFrame) }

    /// The header block fragment of a HEADERS or PUSH_PROMISE payload: without the pad length,
    /// the priority fields and the padding. Nil when the padding is longer than the payload.
    private func headerFragment(_ h: HTTP2FrameHeader, _ payload: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        var start = 0
        var end = payload.count
        if h.padded {
            guard payload.count >= 1 else { return nil }
            let padding = Int(payload[0])
            start = 1
            end -= padding
        }
        if h.type == HTTP2FrameType.headers.rawValue && h.hasPriority { start += 5 }
        guard start <= end else { return nil }
        return UnsafeRawBufferPointer(rebasing: payload[start..<end])
    }

    private func readUInt32(_ p: UnsafeRawBufferPointer) -> UInt32 {
        UInt32(p[0]) << 24 | UInt32(p[1]) << 16 | UInt32(p[2]) << 8 | UInt32(p[3])
    }

    private func readUInt31(_ p: UnsafeRawBufferPointer) -> UInt32 { readUInt32(p) & 0x7FFF_FFFF }

    func dataBegan(_ h: HTTP2FrameHeader, at ts: Timestamp, from direction: Direction) {
        if h.length > maxFrameSize[direction.reversed] { note(.http2FrameTooLarge) }
        if pendingBlock[direction] != nil {
            note(.http2MalformedFrame)
            abandonBlock(from: direction, at: ts)
        }
        if h.stream == 0 { note(.http2MalformedFrame) }
    }

    /// The message DATA of this direction on this stream belongs to, if it has one.
    @inline(__always)
    private func bodyMessage(_ stream: UInt32, from direction: Direction) -> HTTPMessage? {
        guard let t = pairing.transaction(on: UInt64(stream)) else { return nil }
        let m = direction == .fromClient ? t.request : t.response
        guard let m, !m.ended else { return nil }
        return m
    }

    func data(_ bytes: UnsafeRawBufferPointer, of h: HTTP2FrameHeader, at ts: Timestamp, from direction: Direction) {
        guard let m = bodyMessage(h.stream, from: direction) else { return strayData(h.stream) }
        if !carried.isEmpty, let c = carried[h.stream] { c.received(bytes, at: ts, from: direction) }
        m.receiveBody(bytes, wire: bytes.count, options: options)
        m.arrival.lastByte = ts
    }

    func dataLost(_ length: UInt64, of h: HTTP2FrameHeader, at ts: Timestamp, from direction: Direction) {
        guard let m = bodyMessage(h.stream, from: direction) else { return }
        if !carried.isEmpty, let c = carried[h.stream] { c.missed(length, at: ts, from: direction) }
        m.receiveBodyGap(length)
    }

    func dataEnded(_ h: HTTP2FrameHeader, at ts: Timestamp, from direction: Direction) {
        guard let m = bodyMessage(h.stream, from: direction) else { return }
        m.arrival.lastByte = ts
        if h.endStream {
            if !carried.isEmpty, let c = carried[h.stream] { c.ended(direction, reason: .fin, at: ts) }
            end(m, on: h.stream, at: ts)
            if !carried.isEmpty, pairing.transaction(on: UInt64(h.stream)) == nil { carried[h.stream] = nil }
        }
    }

    private func strayData(_ stream: UInt32) {
        // DATA for a stream already emitted (after a reset, say) is late, not new.
        if stream != 0 && !pairing.wasClosed(UInt64(stream)) { note(.http2DataWithoutHeaders) }
    }

    func frameLost(_ h: HTTP2FrameHeader, at ts: Timestamp, from direction: Direction) {
        switch h.kind {
        case .headers, .pushPromise, .continuation:
            note(.http2HeaderBlockLost)
            decoders[direction].markBroken()
            pendingBlock[direction] = nil
            if h.kind == .headers {
                // The stream's headers are unknown, but the stream is there.
                headersUnknown(on: h.stream, endStream: h.endStream, first: ts, at: ts, from: direction)
            }
        default:
            break
        }
    }

    func framingLost(_ weird: Weird, at ts: Timestamp, from direction: Direction) {
        note(weird)
        pendingBlock[direction] = nil
    }

    private func abandonBlock(from direction: Direction, at ts: Timestamp) {
        guard let block = pendingBlock[direction] else { return }
        pendingBlock[direction] = nil
        // Its fragments were not all seen: the table cannot be trusted after it.
        decoders[direction].markBroken()
        if block.type == .headers { headersUnknown(on: block.stream, endStream: block.endStream, first: block.first, at: ts, from: direction) }
    }

    // MARK: Header blocks

    private func blockComplete(_ block: HeaderBlock, at ts: Timestamp, from direction: Direction) {
        var fields = HeaderFields()
        // What a block decodes to is bounded as an HTTP/1.x head is (an HPACK bomb repeats a
        // large table entry by one-byte references): past the caps the fields are dropped,
        // flagged, while decoding goes on so that the table stays right.
        var decodedBytes = 0
        var dropped: Weird? = nil
        let maxBytes = options.maxHeaderBytes, maxFields = options.maxHeaderFields
        let decoded = block.bytes.withUnsafeBytes { raw in
            decoders[direction].decode(raw) { name, value in
                decodedBytes += name.count + value.count + 4
                if decodedBytes > maxBytes { dropped = .headerTooLarge; return }
                if fields.count >= maxFields { dropped = .tooManyHeaders; return }
                fields.append(name: name, value: value)
            }
        }
        guard decoded else {
            note(.http2HeaderBlockLost)
            if block.type == .headers { headersUnknown(on: block.stream, endStream: block.endStream, first: block.first, at: ts, from: direction) }
            return
        }
        droppedFields = dropped
        if block.type == .pushPromise {
            // The server's promise: the request of a new, even-numbered stream (§8.4).
            guard direction == .fromServer, block.promised != 0 else { return malformed() }
            let request = HTTPMessage(kind: .request)
            fill(request, fields, block, at: ts)
            end(request, on: nil, at: ts)
            pairing.open(UInt64(block.promised), request: request, pushed: true)
            return
        }
        headersArrived(fields, block, at: ts, from: direction)
    }

    private func headersArrived(_ fields: HeaderFields, _ block: HeaderBlock, at ts: Timestamp, from direction: Direction) {
        let stream = block.stream
        if direction == .fromClient {
            if let t = pairing.transaction(on: UInt64(stream)), let request = t.request {
                return trailersArrived(fields, for: request, block, at: ts)
            }
            var outOfOrder = false
            if pairing.wasClosed(UInt64(stream)) {
                // Trailers of a stream already written are late. A request (it has :method)
                // on an id at or below one the client used breaks §5.1.1; a passive tool
                // shows it, and its answer if one comes, and names what happened.
                guard fields.contains(":method") else { return }
                outOfOrder = true
                note(.http2StreamIDOutOfOrder)
            }
            let request = HTTPMessage(kind: .request)
            fill(request, fields, block, at: ts)
            if let t = pairing.transaction(on: UInt64(stream)) { t.request = request } else {
                let t = pairing.open(UInt64(stream), request: request)
                if outOfOrder { t.note(.http2StreamIDOutOfOrder) }
            }
            if block.endStream { end(request, on: stream, at: ts) }
            return
        }
        if pairing.wasClosed(UInt64(stream)) { return }
        if let t = pairing.transaction(on: UInt64(stream)), let response = t.response {
            return trailersArrived(fields, for: response, block, at: ts)
        }
        let response = HTTPMessage(kind: .response)
        fill(response, fields, block, at: ts)
        if response.isInterim {
            // 1xx: complete in itself; the final response follows on the same stream.
            response.ended = true
            response.complete = true
            pairing.responseBegan(response, on: UInt64(stream))
            return
        }
        pairing.responseBegan(response, on: UInt64(stream))
        if let t = pairing.transaction(on: UInt64(stream)), let method = t.request?.method,
           method == "CONNECT", response.status >= 200 && response.status < 300 {
            // CONNECT (and extended CONNECT, RFC 8441): the stream's DATA is the tunnel; a
            // WebSocket's is its frames.
            t.note(.tunnel)
            if t.request?.headers.first(":protocol")?.lowercased() == "websocket" {
                carried[stream] = WebSocketSession(transaction: t, response: response, connection: connection, options: options.webSocket, budget: options.webSocketBudget)
            }
        }
        if block.endStream { end(response, on: stream, at: ts) }
    }

    /// A second header block from the same side of a stream: trailers (§8.1); after the message
    /// ended, malformed.
    private func trailersArrived(_ fields: HeaderFields, for m: HTTPMessage, _ block: HeaderBlock, at ts: Timestamp) {
        guard !m.ended else { return malformed() }
        m.trailers = fields
        m.arrival.lastByte = ts
        if block.endStream { end(m, on: block.stream, at: ts) }
    }

    /// A message whose header block could not be decoded: it is there, its fields are not.
    private func headersUnknown(on stream: UInt32, endStream: Bool, first: Timestamp, at ts: Timestamp, from direction: Direction) {
        guard !pairing.wasClosed(UInt64(stream)) else { return }
        let m = HTTPMessage(kind: direction == .fromClient ? .request : .response)
        m.version = "HTTP/2.0"
        m.arrival.firstByte = first
        m.arrival.headersEnd = ts
        m.arrival.lastByte = ts
        m.note(.http2HeadersUndecodable)
        if direction == .fromClient {
            if let t = pairing.transaction(on: UInt64(stream)) {
                if t.request == nil { t.request = m } else { return }
            } else {
                pairing.open(UInt64(stream), request: m)
            }
        } else {
            if let t = pairing.transaction(on: UInt64(stream)), t.response != nil { return }
            pairing.responseBegan(m, on: UInt64(stream))
        }
        if endStream { end(m, on: stream, at: ts) }
    }

    /// Start line and fields of a message from its decoded header block.
    private func fill(_ m: HTTPMessage, _ fields: HeaderFields, _ block: HeaderBlock, at ts: Timestamp) {
        if let dropped = droppedFields { m.note(dropped); droppedFields = nil }
        m.takeFieldSection(fields, version: "HTTP/2.0", encodedSize: block.encodedSize, first: block.first, at: ts, options: options)
    }

    /// END_STREAM (or the end of a promised request): the message is whole.
    private func end(_ m: HTTPMessage, on stream: UInt32?, at ts: Timestamp) {
        m.endAsFramed(at: ts, options: options)
        if let stream { pairing.messageEnded(on: UInt64(stream)) }
    }
}
