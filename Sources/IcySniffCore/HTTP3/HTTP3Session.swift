/// The HTTP/3 session of one QUIC connection (RFC 9114), read passively from both directions.
///
/// Input: each QUIC stream's bytes in order, per direction, from `QUICConnectionSession` (its
/// STREAM frames reassembled), with the capture time at which they became contiguous; the ends,
/// resets and STOP_SENDINGs of streams; the end of the connection. Output: one `HTTPMessage` per
/// request, response, interim response and trailer section, paired by stream id in the
/// `StreamPairing` HTTP/2 uses too (pushes by push id).
///
/// Streams: client-initiated bidirectional streams are requests; unidirectional streams say
/// their type first: control (SETTINGS, GOAWAY, CANCEL_PUSH, MAX_PUSH_ID), push (a push id, then
/// the pushed response), QPACK encoder (fed to the decoder of the other side), QPACK decoder
/// (not needed to decode), and unknown or GREASE types, ignored. Unknown frame types are skipped
/// (§9). Field sections are decoded by `QPACKDecoder`, one per sending side.
final class HTTP3Session: QUICStreamConsumer {
    private unowned let connection: Connection
    private let options: HTTPParserOptions
    private let pairing: StreamPairing
    /// `decoders[d]`: decodes the field sections that the sender of `d` encodes, fed by that
    /// sender's encoder stream; its capacity comes from the other side's SETTINGS.
    ///
    /// A section's completion captures the session `unowned`: the decoders are the session's
    /// own, never handed out, and call a completion only from a method the session called
    /// (their `deinit` calls none), so it never runs after the session is gone. A `weak`
    /// capture, as it was, gave every session a side table at its first field section, and
    /// from then on each retain and release of it (several a STREAM frame) took the runtime's
    /// slow path: 181,859 `incrementSlow` on h3.pcap with keys.
    private let decoders: PerDirection<QPACKDecoder>
    private var streams: [StreamKey: StreamState] = [:]
    /// The stream of the last call: a transfer's frames come one stream at a time.
    private var lastState: (key: StreamKey, state: StreamState)? = nil
    private var noted = Set<Weird>()
    /// What the connection's `QUICInfo` reports of HTTP/3.
    private(set) var requests = 0
    private(set) var pushes = 0

    struct StreamKey: Hashable {
        var id: UInt64
        var direction: Direction
    }

    enum StreamKind: Equatable {
        /// A unidirectional stream whose type is still to come.
        case unknown
        case request, control, push(UInt64?), encoder, decoder, ignored
    }

    /// Where one direction of one stream stands: its type, and the frame being read.
    final class StreamState {
        var kind: StreamKind
        /// The bytes of a stream type, push id or frame header cut by the packets.
        var header: [UInt8] = []
        var inFrame = false
        var frameType: UInt64 = 0
        var remaining: UInt64 = 0
        /// A frame payload being kept (not DATA, not unknown types); `skipping`: dropped.
        var payload: [UInt8] = []
        var skipping = false
        var frameFirst: Timestamp = .zero
        /// The framing was lost (a gap outside a DATA payload): nothing more is read.
        var broken = false
        /// The message this direction of the stream is sending (its body takes DATA).
        var message: HTTPMessage? = nil
        /// Field sections of this stream still being decoded (blocked on the encoder stream):
        /// DATA waits behind them, as does the end of the stream.
        var decoding = 0
        var heldData: [UInt8] = []
        var heldEnd: Timestamp? = nil
        init(kind: StreamKind) { self.kind = kind }
    }

    init(connection: Connection, emitter: TransactionEmitter, options: HTTPParserOptions) {
        self.connection = connection
        self.options = options
        pairing = StreamPairing(connection: connection, emitter: emitter, scheme: "https", numbering: .http3)
        decoders = PerDirection { _ in QPACKDecoder(maxHeaderBytes: options.maxHeaderBytes, maxFields: options.maxHeaderFields) }
    }

    private func note(_ weird: Weird) {
        if noted.insert(weird).inserted { connection.note(weird) }
    }

    /// Streams whose field sections waited for the encoder stream, per decoding side (client,
    /// server): `qpack_blocked_streams` of the corpus.
    var blockedStreams: (clientDecoder: [UInt64], serverDecoder: [UInt64]) {
        (decoders.fromServer.blockedStreams, decoders.fromClient.blockedStreams)
    }

    private func state(_ id: UInt64, _ direction: Direction) -> StreamState {
        let key = StreamKey(id: id, direction: direction)
        if let last = lastState, last.key == key { return last.state }
        if let s = streams[key] { lastState = (key, s); return s }
        let kind: StreamKind
        if id & 2 == 0 {
            // Bidirectional: the client's are requests; a server-initiated one is not allowed (§6.1).
            kind = id & 1 == 0 ? .request : .ignored
            if id & 1 != 0 { note(.http3MalformedFrame) }
        } else {
            kind = .unknown
        }
        let s = StreamState(kind: kind)
        streams[key] = s
        lastState = (key, s)
        return s
    }

    // MARK: Stream events

    func streamData(_ id: UInt64, _ bytes: UnsafeRawBufferPointer, at ts: Timestamp, from direction: Direction) {
        let s = state(id, direction)
        guard !s.broken, s.kind != .ignored else { return }
        var i = 0
        while i < bytes.count {
            switch s.kind {
            case .ignored:
                return
            case .decoder:
                return
            case .encoder:
                decoders[direction].encoderData(UnsafeRawBufferPointer(rebasing: bytes[i...]))
                return
            case .unknown:
                i += readStreamType(s, UnsafeRawBufferPointer(rebasing: bytes[i...]), id: id, from: direction)
                continue
            case .push(nil):
                i += readPushID(s, UnsafeRawBufferPointer(rebasing: bytes[i...]), stream: id)
                continue
            case .request, .control, .push:
                break
            }
            if !s.inFrame {
                i += readFrameHeader(s, UnsafeRawBufferPointer(rebasing: bytes[i...]), at: ts, stream: id, from: direction)
                continue
            }
            let n = Int(min(UInt64(bytes.count - i), s.remaining))
            let part = UnsafeRawBufferPointer(rebasing: bytes[i..<(i + n)])
            i += n
            s.remaining -= UInt64(n)
            if s.frameType == 0 {
                data(part, on: s, at: ts)
            } else if !s.skipping {
                s.payload.append(contentsOf: part)
            }
            if s.remaining == 0 { frameEnded(s, at: ts, stream: id, from: direction) }
        }
    }

    /// A unidirectional stream's type (§6.2); answers the bytes used.
    private func readStreamType(_ s: StreamState, _ bytes: UnsafeRawBufferPointer, id: UInt64, from direction: Direction) -> Int {
        let (value, used) = takeVarint(s, bytes)
        guard let value else { return used }
        switch value {
        case 0x00:
            s.kind = .control
        case 0x01:
            // Only the server pushes.
            s.kind = direction == .fromServer ? .push(nil) : .ignored
        case 0x02: s.kind = .encoder
        case 0x03: s.kind = .decoder
        default: s.kind = .ignored   // reserved and unknown types (§6.2.3, §9)
        }
        return used
    }

    private func readPushID(_ s: StreamState, _ bytes: UnsafeRawBufferPointer, stream: UInt64) -> Int {
        let (value, used) = takeVarint(s, bytes)
        if let value {
            s.kind = .push(value)
            pairing.transaction(on: StreamPairing.pushKey(value))?.streamID = stream
        }
        return used
    }

    /// One varint, perhaps cut across calls (`s.header` keeps the start). Answers it (nil: more
    /// needed) and the bytes of `bytes` it used.
    private func takeVarint(_ s: StreamState, _ bytes: UnsafeRawBufferPointer) -> (UInt64?, Int) {
        var used = 0
        if s.header.isEmpty {
            var r = QUICReader(bytes)
            if let v = r.varint() { return (v, r.at) }
        }
        while used < bytes.count {
            s.header.append(bytes[used])
            used += 1
            let need = 1 << Int(s.header[0] >> 6)
            if s.header.count == need {
                let v = s.header.withUnsafeBytes { raw -> UInt64? in var r = QUICReader(raw); return r.varint() }
                s.header = []
                return (v, used)
            }
        }
        return (nil, used)
    }

    /// A frame's type and length (two varints, perhaps cut across calls). Answers the bytes used.
    private func readFrameHeader(_ s: StreamState, _ bytes: UnsafeRawBufferPointer, at ts: Timestamp, stream: UInt64,
                                 from direction: Direction) -> Int {
        let before = s.header.count
        let room = min(16 - before, bytes.count)
        s.header.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[0..<room]))
        let parsed = s.header.withUnsafeBytes { raw -> (UInt64, UInt64, Int)? in
            var r = QUICReader(raw)
            guard let t = r.varint(), let l = r.varint() else { return nil }
            return (t, l, r.at)
        }
        guard let (type, length, consumed) = parsed else {
            if s.header.count >= 16 { s.broken = true; note(.http3MalformedFrame) }
            return room
        }
        s.header = []
        s.inFrame = true
        s.frameType = type
        s.remaining = length
        s.frameFirst = ts
        s.payload = []
        s.skipping = false
        switch type {
        case 0x00:   // DATA
            if s.kind == .control { note(.http3MalformedFrame) }
        case 0x01, 0x05:   // HEADERS, PUSH_PROMISE
            if length > UInt64(options.maxHeaderBytes) * 4 {
                // Far past what a field section may decode to: not collected (flagged below).
                s.skipping = true
                note(.headerTooLarge)
            }
        case 0x03, 0x04, 0x07, 0x0d:   // CANCEL_PUSH, SETTINGS, GOAWAY, MAX_PUSH_ID
            if length > 1 << 16 { s.skipping = true; note(.http3MalformedFrame) }
        default:
            s.skipping = true   // reserved, GREASE and unknown frame types (§9)
        }
        if length == 0 { frameEnded(s, at: ts, stream: stream, from: direction) }
        return consumed - before
    }

    private func data(_ bytes: UnsafeRawBufferPointer, on s: StreamState, at ts: Timestamp) {
        guard s.kind != .control else { return }
        if s.decoding > 0 {
            if s.heldData.count + bytes.count <= 1 << 20 { s.heldData.append(contentsOf: bytes) }
            return
        }
        guard let m = s.message, !m.ended else { return }
        m.receiveBody(bytes, wire: bytes.count, options: options)
        m.arrival.lastByte = ts
    }

    private func frameEnded(_ s: StreamState, at ts: Timestamp, stream: UInt64, from direction: Direction) {
        s.inFrame = false
        let payload = s.payload
        s.payload = []
        if s.frameType == 0 {
            if let m = s.message { m.arrival.lastByte = max(m.arrival.lastByte, ts) }
            return
        }
        if s.skipping { return }
        switch (s.kind, s.frameType) {
        case (.request, 0x01), (.push(_?), 0x01):
            headers(payload, on: s, stream: stream, first: s.frameFirst, at: ts, from: direction)
        case (.request, 0x05) where direction == .fromServer:
            pushPromise(payload, at: ts)
        case (.control, 0x04):
            settings(payload, from: direction)
        case (.control, 0x07):
            goaway(payload, from: direction, at: ts)
        case (.control, _), (.request, _), (.push, _):
            break   // CANCEL_PUSH, MAX_PUSH_ID: nothing to report; others misplaced
        default:
            break
        }
    }

    // MARK: Frames

    private func settings(_ payload: [UInt8], from direction: Direction) {
        var capacity = 0, blocked = 0
        payload.withUnsafeBytes { raw in
            var r = QUICReader(raw)
            while r.remaining > 0 {
                guard let id = r.varint(), let value = r.varint() else { note(.http3MalformedFrame); return }
                if id == 0x01 { capacity = Int(min(value, 1 << 24)) }
                if id == 0x07 { blocked = Int(min(value, 1 << 16)) }
            }
        }
        // This side's decoder settings: they govern what the other side's encoder sends it.
        decoders[direction.reversed].configure(capacity: capacity, blockedStreams: blocked)
    }

    private func goaway(_ payload: [UInt8], from direction: Direction, at ts: Timestamp) {
        guard direction == .fromServer else { return }   // the client's names a push id
        let id = payload.withUnsafeBytes { raw -> UInt64? in var r = QUICReader(raw); return r.varint() }
        guard let id else { return note(.http3MalformedFrame) }
        // Requests on this stream id and above were not processed (§5.2).
        pairing.refuse(where: { $0 >= id && $0 < StreamPairing.pushKeyBase }, as: .http3RefusedByGoaway, at: ts)
    }

    /// A request that came after its response began (the capture saw the server's stream
    /// first: reordered, or the request's first copy lost to the capture): it takes its place,
    /// and the transaction no longer misses it.
    private static func attachLate(_ request: HTTPMessage, to t: Transaction) {
        guard t.request == nil else { return }
        t.request = request
        t.weirds.removeAll { $0 == .requestMissing }
    }

    private func pushPromise(_ payload: [UInt8], at ts: Timestamp) {
        var pushID: UInt64? = nil
        var consumed = 0
        payload.withUnsafeBytes { raw in
            var r = QUICReader(raw)
            pushID = r.varint()
            consumed = r.at
        }
        guard let pushID else { return note(.http3MalformedFrame) }
        let section = Array(payload[consumed...])
        let key = StreamPairing.pushKey(pushID)
        decoders.fromServer.decode(section, stream: 0) { [unowned self] fields, dropped in
            let request = HTTPMessage(kind: .request)
            request.version = "HTTP/3"
            if let fields {
                if let dropped { request.note(dropped) }
                request.takeFieldSection(fields, version: "HTTP/3", encodedSize: section.count, first: ts, at: ts, options: self.options)
            } else {
                self.undecodable(request, first: ts, at: ts, because: dropped)
            }
            request.endAsFramed(at: ts, options: self.options)
            if let t = self.pairing.transaction(on: key) {
                // The pushed response came first (streams are not ordered among themselves).
                Self.attachLate(request, to: t)
            } else if !self.pairing.wasClosed(key) {
                self.pairing.open(key, request: request, pushed: true)
                self.pushes += 1
            }
        }
    }

    /// A HEADERS frame: a request, a response (interim or final) or trailers, by the stream and
    /// what came before on it. Its message takes its place once the section is decoded.
    private func headers(_ section: [UInt8], on s: StreamState, stream: UInt64, first: Timestamp, at ts: Timestamp,
                         from direction: Direction) {
        let key: UInt64
        if case .push(let pushID?) = s.kind { key = StreamPairing.pushKey(pushID) } else { key = stream }
        s.decoding += 1
        decoders[direction].decode(section, stream: stream) { [unowned self, s] fields, dropped in
            s.decoding -= 1
            self.place(fields, dropped: dropped, encodedSize: section.count, on: s, key: key, stream: stream, first: first,
                       at: ts, from: direction)
            if s.decoding == 0 {
                // What waited behind the section: DATA, then the end of the stream.
                let held = s.heldData
                s.heldData = []
                if !held.isEmpty { held.withUnsafeBytes { self.data($0, on: s, at: ts) } }
                if let end = s.heldEnd {
                    s.heldEnd = nil
                    self.ended(s, key: key, at: end)
                    self.forget(stream, direction)
                }
            }
        }
    }

    private func place(_ fields: HeaderFields?, dropped: Weird?, encodedSize: Int, on s: StreamState, key: UInt64, stream: UInt64,
                       first: Timestamp, at ts: Timestamp, from direction: Direction) {
        if let current = s.message {
            // A second field section from the same side: trailers (§4.1).
            guard !current.ended else { return note(.http3MalformedFrame) }
            if let fields { current.trailers = fields } else { note(.http3HeadersUndecodable); if let dropped { note(dropped) } }
            current.arrival.lastByte = max(current.arrival.lastByte, ts)
            return
        }
        let m = HTTPMessage(kind: direction == .fromClient ? .request : .response)
        if let fields {
            if let dropped { m.note(dropped) }
            m.takeFieldSection(fields, version: "HTTP/3", encodedSize: encodedSize, first: first, at: ts, options: options)
        } else {
            undecodable(m, first: first, at: ts, because: dropped)
        }
        if pairing.wasClosed(key) { return }
        if direction == .fromClient {
            s.message = m
            if let t = pairing.transaction(on: key) { Self.attachLate(m, to: t) } else {
                pairing.open(key, request: m)
                requests += 1
            }
            return
        }
        if m.isInterim {
            m.ended = true
            m.complete = true
            pairing.responseBegan(m, on: key)
            return
        }
        s.message = m
        pairing.responseBegan(m, on: key)
        if case .push = s.kind { pairing.transaction(on: key)?.streamID = stream }
    }

    /// A message whose field section did not decode; `reason`, when the decoder named one.
    private func undecodable(_ m: HTTPMessage, first: Timestamp, at ts: Timestamp, because reason: Weird? = nil) {
        m.version = "HTTP/3"
        m.arrival.firstByte = first
        m.arrival.headersEnd = ts
        m.arrival.lastByte = ts
        m.note(.http3HeadersUndecodable)
        note(.http3HeadersUndecodable)
        if let reason {
            m.note(reason)
            note(reason)
        }
    }

    /// The stream's FIN from `direction`: its message is whole.
    func streamEnded(_ id: UInt64, at ts: Timestamp, from direction: Direction) {
        let s = state(id, direction)
        if s.inFrame || !s.header.isEmpty {
            // The stream ended inside a frame.
            note(.http3MalformedFrame)
        }
        let key: UInt64
        switch s.kind {
        case .request: key = id
        case .push(let pushID?): key = StreamPairing.pushKey(pushID)
        default: return
        }
        if s.decoding > 0 { s.heldEnd = ts; return }
        ended(s, key: key, at: ts)
        forget(id, direction)
    }

    /// A direction of a request or push stream is over (its FIN, every section decoded): its
    /// state goes (QUIC hands nothing after a FIN). Kept, 200,000 unanswered requests held
    /// their messages to the end: 194 MiB, where the pairing's cap had emitted them.
    private func forget(_ id: UInt64, _ direction: Direction) {
        let key = StreamKey(id: id, direction: direction)
        streams[key] = nil
        if lastState?.key == key { lastState = nil }
    }

    private func ended(_ s: StreamState, key: UInt64, at ts: Timestamp) {
        guard let m = s.message, !m.ended else { return }
        m.endAsFramed(at: ts, options: options)
        pairing.messageEnded(on: key)
    }

    /// Bytes of the stream that were never captured.
    func streamGap(_ id: UInt64, _ length: UInt64, at ts: Timestamp, from direction: Direction) {
        let s = state(id, direction)
        note(.quicStreamDataLost)
        switch s.kind {
        case .encoder:
            decoders[direction].encoderLost()
            note(.qpackEncoderStreamLost)
            s.kind = .ignored
        case .request, .push:
            if s.inFrame && s.frameType == 0 && length <= s.remaining {
                s.remaining -= length
                s.message?.receiveBodyGap(length)
                if s.remaining == 0 { frameEnded(s, at: ts, stream: id, from: direction) }
            } else {
                s.broken = true
                s.message?.note(direction == .fromClient ? .requestIncomplete : .responseIncomplete)
            }
        default:
            s.broken = true
        }
    }

    /// RESET_STREAM from the sender of `direction`: what it sent on the stream ends here.
    func streamReset(_ id: UInt64, at ts: Timestamp, from direction: Direction) {
        let s = state(id, direction)
        switch s.kind {
        case .request: pairing.reset(id, at: ts, as: .http3StreamReset)
        case .push(let pushID?): pairing.reset(StreamPairing.pushKey(pushID), at: ts, as: .http3StreamReset)
        default: break
        }
    }

    /// STOP_SENDING from `direction`: its side no longer wants the other's data (a cancelled
    /// download): the transaction is flagged; the reset that follows ends it.
    func stopSending(_ id: UInt64, at ts: Timestamp, from direction: Direction) {
        guard id & 3 == 0 else { return }
        pairing.transaction(on: id)?.note(.http3StreamCancelled)
    }

    /// The connection is over: sections still waiting are decoded as far as they can be, then
    /// every open stream is emitted (flagged when unfinished).
    func finish(at ts: Timestamp) {
        decoders.fromClient.finish()
        decoders.fromServer.finish()
        pairing.finish(at: ts)
    }
}
