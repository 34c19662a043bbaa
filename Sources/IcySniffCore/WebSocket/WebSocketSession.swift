/// The WebSocket stage (RFC 6455): reads the frames of both directions of one socket after its
/// opening handshake, joins fragmented messages, unmasks the client's frames, inflates what
/// permessage-deflate compressed (RFC 7692, with and without context takeover), and notes
/// control frames (ping, pong, close with its code and reason).
///
/// Input: each direction's bytes after the handshake, in order, with the lengths of what the
/// capture missed (from the HTTP/1.1 session after a 101, or the DATA of an HTTP/2 extended
/// CONNECT stream). Output: the `WebSocketLog` of the transaction that opened the socket, and
/// its anomalies. A gap inside a frame's payload leaves that message incomplete (and, with
/// context takeover, the direction's later compressed messages not inflatable: flagged, never
/// guessed); a gap across a frame header ends what can be read of that direction.
final class WebSocketSession: CarriedStreamConsumer {
    let log = WebSocketLog()
    private let transaction: Transaction
    private let options: WebSocketOptions
    private var readers: PerDirection<WebSocketReader>! = nil
    /// Data kept over all messages of the socket.
    fileprivate var keptBytes = 0

    /// The connection that carries the socket: its anomalies are counted there too (the summary).
    private unowned let connection: Connection

    init(transaction: Transaction, response: HTTPMessage, connection: Connection, options: WebSocketOptions, budget: BodyBudget?) {
        self.transaction = transaction
        self.connection = connection
        self.options = options
        log.budget = budget
        log.extensions = response.headers.first("sec-websocket-extensions")
        log.subprotocol = response.headers.first("sec-websocket-protocol")
        let deflate = log.extensions.flatMap { PerMessageDeflate(extensions: $0) }
        readers = PerDirection(
            fromClient: WebSocketReader(fromClient: true, deflate: deflate.map { $0.clientNoContextTakeover }, session: self),
            fromServer: WebSocketReader(fromClient: false, deflate: deflate.map { $0.serverNoContextTakeover }, session: self))
        transaction.webSocket = log
    }

    func received(_ bytes: UnsafeRawBufferPointer, at ts: Timestamp, from direction: Direction) {
        readers[direction].feed(bytes, at: ts)
    }

    func missed(_ length: UInt64, at ts: Timestamp, from direction: Direction) {
        readers[direction].gap(length, at: ts)
    }

    /// One direction is over (a TCP FIN, an HTTP/2 stream's END_STREAM): a message it was still
    /// sending is recorded, incomplete.
    func ended(_ direction: Direction, reason: CloseReason, at ts: Timestamp) {
        readers[direction].finish(at: ts)
    }

    /// The socket is over: a message still being received is recorded, incomplete.
    func finished(at ts: Timestamp) {
        readers.fromClient.finish(at: ts)
        readers.fromServer.finish(at: ts)
    }

    /// An anomaly of the socket: on its transaction (once) and counted on its connection.
    fileprivate func note(_ weird: Weird) {
        transaction.note(weird)
        connection.note(weird)
    }

    /// Data of a message to keep: how much more it may take (per message, per socket).
    fileprivate func allowance(messageHas n: Int) -> Int {
        max(0, min(options.keptBytes - n, options.maxSocketBytes - keptBytes))
    }

    fileprivate var keepsData: Bool { options.keptBytes > 0 }
    fileprivate var maxInflated: Int { options.maxInflatedBytes }

    /// A finished message: counted, and listed while the caps allow.
    fileprivate func record(_ m: WebSocketLog.Message) {
        if m.fromClient {
            log.sent.messages += 1
            log.sent.bytes += m.size
        } else {
            log.received.messages += 1
            log.received.bytes += m.size
        }
        let cost = WebSocketLog.messageOverhead + (m.data?.count ?? 0)
        if log.messages.count < options.maxMessages, log.budget.map({ $0.used + cost <= $0.limit }) ?? true {
            log.budget?.charge(cost)
            log.charged += cost
            // In the order they began: a direction held back by reassembly (waiting for bytes
            // that never came) finishes its messages late.
            var i = log.messages.count
            while i > 0 && log.messages[i - 1].time > m.time { i -= 1 }
            log.messages.insert(m, at: i)
        } else {
            keptBytes -= m.data?.count ?? 0
            log.dropped += 1
            note(.websocketMessagesCapped)
        }
        if m.problem == .notInflated { note(.websocketNotInflated) }
    }

    fileprivate func addWire(_ n: Int, fromClient: Bool) {
        if fromClient { log.sent.wireBytes += n } else { log.received.wireBytes += n }
    }

    fileprivate func control(_ opcode: UInt8, payload: [UInt8], fromClient: Bool) {
        switch opcode {
        case 0x9: if fromClient { log.sent.pings += 1 } else { log.received.pings += 1 }
        case 0xA: if fromClient { log.sent.pongs += 1 } else { log.received.pongs += 1 }
        case 0x8:
            guard log.closedByClient == nil else { return }
            log.closedByClient = fromClient
            if payload.count >= 2 {
                log.closeCode = UInt16(payload[0]) << 8 | UInt16(payload[1])
                log.closeReason = payload.count > 2 ? String(decoding: payload[2...], as: UTF8.self) : nil
            } else if payload.count == 1 {
                note(.websocketMalformedFrame)
            }
        default: break
        }
    }
}

/// One direction of a WebSocket: frame headers, payloads, and the message they make.
final class WebSocketReader {
    private let fromClient: Bool
    private unowned let session: WebSocketSession
    /// The direction's DEFLATE decompressor when permessage-deflate was accepted, and whether
    /// it starts afresh for each message (no context takeover).
    private let inflater: MessageInflater?
    private let resetsEachMessage: Bool

    /// Header bytes of the frame being read, and how many the header has.
    private var head: [UInt8] = []
    private var headLength = 2
    private var frameStart = Timestamp(nanoseconds: 0)
    private var inPayload = false
    /// The rest of the direction cannot be delimited (a gap across a frame header, an
    /// impossible length).
    private var lost = false

    // The frame whose payload is being read.
    private var fin = false
    private var opcode: UInt8 = 0
    private var mask: (UInt8, UInt8, UInt8, UInt8)? = nil
    private var maskIndex = 0
    private var remaining: UInt64 = 0
    /// The frame's payload belongs to no message (a stray continuation, a reserved opcode).
    private var skipping = false

    /// The data message being received, and a control frame's payload.
    private var message: WebSocketLog.Message? = nil
    private var inflateFailed = false
    private var control: [UInt8] = []
    private var scratch: [UInt8] = []

    init(fromClient: Bool, deflate resetsEachMessage: Bool?, session: WebSocketSession) {
        self.fromClient = fromClient
        self.session = session
        self.inflater = resetsEachMessage == nil ? nil : MessageInflater()
        self.resetsEachMessage = resetsEachMessage ?? false
        head.reserveCapacity(14)
    }

    func feed(_ bytes: UnsafeRawBufferPointer, at ts: Timestamp) {
        session.addWire(bytes.count, fromClient: fromClient)
        guard !lost else { return }
        var i = 0
        while i < bytes.count {
            if !inPayload {
                if head.isEmpty { frameStart = ts }
                head.append(bytes[i])
                i += 1
                if head.count == 2 {
                    let len7 = head[1] & 0x7F
                    headLength = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + (head[1] & 0x80 != 0 ? 4 : 0)
                }
                if head.count == headLength {
                    beginFrame(at: ts)
                    if lost { return }
                }
                continue
            }
            let n = Int(min(remaining, UInt64(bytes.count - i)))
            payload(UnsafeRawBufferPointer(rebasing: bytes[i..<(i + n)]))
            i += n
            remaining -= UInt64(n)
            if remaining == 0 { endFrame(at: ts) }
        }
    }

    private func beginFrame(at ts: Timestamp) {
        let b0 = head[0], b1 = head[1]
        fin = b0 & 0x80 != 0
        let rsv1 = b0 & 0x40 != 0
        opcode = b0 & 0x0F
        var length = UInt64(b1 & 0x7F)
        var p = 2
        if length == 126 {
            length = UInt64(head[2]) << 8 | UInt64(head[3])
            p = 4
        } else if length == 127 {
            length = 0
            for k in 2..<10 { length = length << 8 | UInt64(head[k]) }
            p = 10
            // The most significant bit must be 0 (§5.2): what follows is no WebSocket frame.
            if length >> 63 != 0 { return loseFraming(.websocketMalformedFrame, at: ts) }
        }
        mask = b1 & 0x80 != 0 ? (head[p], head[p + 1], head[p + 2], head[p + 3]) : nil
        maskIndex = 0
        // A client masks every frame, a server none (§5.1); the frame is read either way.
        if fromClient && mask == nil { session.note(.websocketClientFrameUnmasked) }
        if !fromClient && mask != nil { session.note(.websocketServerFrameMasked) }
        head.removeAll(keepingCapacity: true)
        skipping = false
        if b0 & 0x30 != 0 { session.note(.websocketMalformedFrame) }   // RSV2/RSV3: no extension defines them
        switch opcode {
        case 0x8, 0x9, 0xA:
            // Control frames: whole in one frame, at most 125 bytes (§5.5); may come between
            // the fragments of a message.
            if !fin || length > 125 || rsv1 { session.note(.websocketMalformedFrame) }
            control.removeAll(keepingCapacity: true)
        case 0x1, 0x2:
            if message != nil {
                // A new message while one was unfinished (§5.4 forbids it): the first ends here.
                session.note(.websocketMalformedFrame)
                finishMessage(complete: false)
            }
            let compressed = rsv1
            if compressed && inflater == nil { session.note(.websocketMalformedFrame) }
            message = WebSocketLog.Message(fromClient: fromClient, time: frameStart, opcode: opcode, size: 0, wireSize: 0,
                                           compressed: compressed, data: session.keepsData ? [] : nil, truncated: false, problem: nil)
            inflateFailed = compressed && inflater == nil
            if compressed, let inflater {
                if resetsEachMessage { inflater.reset() }
                if inflater.broken { inflateFailed = true }
            }
        case 0x0:
            if message == nil { session.note(.websocketMalformedFrame); skipping = true }
        default:
            session.note(.websocketMalformedFrame)   // a reserved opcode: skipped by its length
            skipping = true
        }
        remaining = length
        inPayload = length > 0
        if length == 0 { endFrame(at: ts) }
    }

    /// Payload bytes of the current frame.
    private func payload(_ bytes: UnsafeRawBufferPointer) {
        if skipping { maskIndex &+= bytes.count; return }
        if opcode >= 0x8 {
            let room = 125 - control.count
            if room > 0 { control.append(contentsOf: unmasked(UnsafeRawBufferPointer(rebasing: bytes.prefix(room)))) }
            if bytes.count > room { maskIndex &+= bytes.count - max(0, room) }
            return
        }
        guard var m = message else { maskIndex &+= bytes.count; return }
        message = nil   // taken out, so that its data grows in place
        m.wireSize += bytes.count
        if m.compressed && !inflateFailed {
            let plain = unmasked(bytes)
            inflate(plain, into: &m)
        } else if m.compressed {
            maskIndex &+= bytes.count
        } else {
            m.size += bytes.count
            let room = m.data == nil ? 0 : session.allowance(messageHas: m.data!.count)
            if room > 0 {
                let kept = unmasked(UnsafeRawBufferPointer(rebasing: bytes.prefix(room)))
                m.data!.append(contentsOf: kept)
                session.keptBytes += kept.count
                maskIndex &+= bytes.count - kept.count
            } else {
                maskIndex &+= bytes.count
            }
        }
        message = m
    }

    private func inflate(_ input: ArraySlice<UInt8>, into m: inout WebSocketLog.Message) {
        guard let inflater else { return }
        let cap = session.maxInflated
        let ok = input.withUnsafeBytes { raw in
            inflater.inflate(raw) { out in
                guard m.problem != .inflateCapped else { return }
                m.size += out.count
                if m.size > cap { m.problem = .inflateCapped }
                if m.data != nil {
                    let room = session.allowance(messageHas: m.data!.count)
                    if room > 0 {
                        m.data!.append(contentsOf: out.prefix(room))
                        session.keptBytes += min(room, out.count)
                    }
                }
            }
        }
        if m.problem == .inflateCapped { inflater.markBroken(); inflateFailed = true }
        if !ok {
            inflateFailed = true
            if m.problem == nil { m.problem = .notInflated }
        }
    }

    /// The bytes unmasked into the scratch buffer (the client's frames are masked, §5.3); the
    /// mask position moves on by their count.
    private func unmasked(_ bytes: UnsafeRawBufferPointer) -> ArraySlice<UInt8> {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: bytes)
        if let mask {
            // The key read in place from the tuple: no array made per payload piece.
            withUnsafeBytes(of: mask) { key in
                for k in scratch.indices { scratch[k] ^= key[(maskIndex &+ k) & 3] }
            }
        }
        maskIndex &+= bytes.count
        return scratch[...]
    }

    private func endFrame(at ts: Timestamp) {
        inPayload = false
        headLength = 2
        if skipping { skipping = false; return }
        if opcode >= 0x8 {
            session.control(opcode, payload: control, fromClient: fromClient)
            return
        }
        if fin && message != nil { finishMessage(complete: true) }
    }

    private func finishMessage(complete: Bool) {
        guard var m = message else { return }
        message = nil
        if m.compressed {
            if complete && !inflateFailed { inflate(MessageInflater.messageTail[...], into: &m) }
            if inflateFailed && m.problem == nil { m.problem = complete ? .notInflated : .incomplete }
            if m.problem == .notInflated { m.size = max(m.size, m.wireSize) }
        }
        if !complete && m.problem == nil { m.problem = .incomplete }
        if let data = m.data { m.truncated = data.count < m.size }
        session.record(m)
    }

    /// Bytes of this direction the capture never had.
    func gap(_ length: UInt64, at ts: Timestamp) {
        session.addWire(Int(clamping: length), fromClient: fromClient)
        guard !lost else { return }
        guard inPayload && head.isEmpty && length <= remaining else { return loseFraming(.websocketFramingLost, at: ts) }
        remaining -= length
        maskIndex &+= Int(truncatingIfNeeded: length)
        if !skipping && opcode < 0x8, var m = message {
            m.wireSize += Int(clamping: length)
            if !m.compressed { m.size += Int(clamping: length) }
            m.problem = .incomplete
            if m.compressed { inflateFailed = true; inflater?.markBroken() }
            message = m
        }
        if remaining == 0 { endFrame(at: ts) }
    }

    private func loseFraming(_ weird: Weird, at ts: Timestamp) {
        lost = true
        session.note(weird)
        finishMessage(complete: false)
    }

    func finish(at ts: Timestamp) {
        finishMessage(complete: false)
    }
}
