/// Reassembles TCP streams per connection and direction.
///
/// Input: `TCPSegment`. Output: calls on the `StreamHandler` of each connection, in stream order,
/// with gaps as explicit events. In-order data is delivered straight from the packet (no copy);
/// only out-of-order data is copied, and only until the hole before it is filled or declared a gap.
public final class ConnectionTable<Handler: StreamHandler> {
    var flows: [ConnectionKey: Flow] = [:]
    /// Where each direction of a recently finished connection ended, so that its segments
    /// retransmitted after the end are known for what they are (not a new connection picked up
    /// mid-stream, whose transactions would be a second copy). Bounded: the oldest go first.
    private struct Ended {
        var lower: Endpoint
        /// The sequence number after the last byte each endpoint sent (lower, upper).
        var ends: (UInt32, UInt32)
        var at: Timestamp
    }
    private var recentlyEnded = BoundedLRU<ConnectionKey, Ended>(capacity: 4096)
    /// Segments of finished connections dropped as retransmissions, since the last `take`.
    private var retransmissionsAfterEnd: UInt64 = 0
    /// How long after its end a connection's retransmissions are recognised (capture time).
    static var retransmissionMemory: Int64 { 120_000_000_000 }
    /// The flow of the previous segment: packets of one connection come in runs (a window of
    /// data, its ACKs), and a key compare is much cheaper than hashing the 4-tuple.
    /// Unretained: `flows` holds it, and `finish` clears this before the flow leaves `flows`.
    private var recentKey: ConnectionKey? = nil
    private var recentFlow: Unmanaged<Flow>? = nil
    /// Flows finished during the current call, kept alive until it returns: a flow is used
    /// unretained while its segment is processed, and processing can finish it (FIN, RST), so it
    /// is released after the closure that uses it returns, never inside it.
    var retired: [Flow] = []
    private let makeHandler: (Connection) -> Handler
    /// Reads the first bytes of a connection whose handshake was not captured (the protocols on
    /// top know what a client's first bytes look like).
    private let speakerHint: (UnsafeRawBufferPointer) -> SpeakerHint
    private let opensAsClient: (UnsafeRawBufferPointer) -> Bool
    private var nextID: UInt64 = 1
    /// A connection id for a connection of another transport (QUIC): ids are one sequence per run.
    func takeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }
    /// The id just taken was not used after all (a UDP flow that turned out not to be QUIC).
    func giveBack(_ id: UInt64) {
        if id == nextID - 1 { nextID -= 1 }
    }
    public var limits: ReassemblyLimits
    /// Shared by the connections' HTTP sessions (they charge what waits).
    public let budget: StateBudget
    public private(set) var connectionsSeen: UInt64 = 0
    /// Connections whose analysis began mid-stream (a half's first data without its SYN), as
    /// they begin: the driver names those that begin in a later piece of a set.
    public private(set) var connectionsPickedUpMidstream: UInt64 = 0
    /// Called with every connection when it is finished, whether or not it carried data.
    public var onFinished: ((Connection) -> Void)?

    public init(limits: ReassemblyLimits = ReassemblyLimits(),
                speakerHint: @escaping (UnsafeRawBufferPointer) -> SpeakerHint = { _ in .unknown },
                opensAsClient: @escaping (UnsafeRawBufferPointer) -> Bool = { _ in false },
                makeHandler: @escaping (Connection) -> Handler) {
        self.limits = limits
        self.budget = StateBudget(limit: limits.stateBudget)
        self.speakerHint = speakerHint
        self.opensAsClient = opensAsClient
        self.makeHandler = makeHandler
        flows.reserveCapacity(1024)
    }

    public var openConnections: Int { flows.count }

    /// Every open connection (the live `--stats` line counts the TLS ones seen so far).
    public func forEachOpen(_ body: (Connection) -> Void) {
        for flow in flows.values { body(flow.connection) }
    }

    public func ingest(_ segment: TCPSegment) {
        let key = ConnectionKey(segment.source, segment.destination)
        let flags = segment.flags
        let isSYN = flags.contains(.syn)
        // The usual packet: the connection of the one before, no new SYN. Processed with the flow
        // unretained (`flows` holds it; only `finish`, as process's last step, lets it go).
        if recentKey == key, let recent = recentFlow, !isSYN || flags.contains(.ack) {
            #if DEBUG
            precondition(flows[key] === recent.takeUnretainedValue(), "ConnectionTable: the unretained flow shortcut outlived its flow")
            #endif
            recent._withUnsafeGuaranteedRef { process(segment, flow: $0, key: key) }
            if budget.exceeded { evictOverBudget(now: segment.timestamp) }
            if !retired.isEmpty { retired.removeAll(keepingCapacity: true) }
            return
        }
        var flow = flows[key]
        if let existing = flow, isSYN, !flags.contains(.ack) {
            let c = existing.connection
            let s = c.side(of: segment.source)
            let h = existing.tcp.half(s), other = existing.tcp.half(1 - s)
            // A new SYN after close, or with another ISN while data flowed: the ports were reused.
            if h.closed || other.closed || (h.sawSYN && h.nextSequence != segment.sequence &+ 1 && h.bytes > 0) || (!h.sawSYN && h.bytes > 0) {
                if !(h.closed || other.closed) { c.note(.connectionReused) }
                finish(existing, key: key, at: segment.timestamp)
                flow = nil
            }
        }
        if flow == nil {
            // Pure ACKs, FINs and RSTs of connections we do not know carry nothing to analyse.
            guard isSYN || segment.payload.count > 0 || segment.missingPayload > 0 else { return }
            if !isSYN, isRetransmissionAfterEnd(segment, key: key) {
                retransmissionsAfterEnd &+= 1
                return
            }
            if flows.count >= limits.maxConnections { evictIdle(now: segment.timestamp, keep: limits.maxConnections * 3 / 4) }
            let tcp = TCPAdapter()
            let connection = Connection(id: nextID, first: segment.source, second: segment.destination, timestamp: segment.timestamp, tcp: tcp)
            connection.budget = StateBudget.Account(budget)
            nextID += 1
            connectionsSeen += 1
            let created = Flow(connection: connection, tcp: tcp)
            flows[key] = created
            flow = created
        }
        guard let flow else { return }
        recentKey = key
        recentFlow = Unmanaged.passUnretained(flow)
        process(segment, flow: flow, key: key)
        if budget.exceeded { evictOverBudget(now: segment.timestamp) }
        if !retired.isEmpty { retired.removeAll(keepingCapacity: true) }
    }

    /// The server's sequence space starts after the SYN/ACK of `plusOne - 1` after all.
    private func useServerISN(plusOne: UInt32, half: HalfStream, tcp: TCPAdapter) {
        half.nextSequence = plusOne
        half.nextOffset = 0
        tcp.serverISNPlusOne = plusOne
        tcp.replacedServerISNsPlusOne = []
    }

    @inline(__always)
    private func process(_ segment: TCPSegment, flow: Flow, key: ConnectionKey) {
        #if DEBUG
        precondition(!flow.isFinished, "ConnectionTable: a segment processed on a finished flow")
        #endif
        let c = flow.connection
        let side = c.side(of: segment.source)
        flow.tcp.withHalves(side) { half, other in process(segment, flow: flow, key: key, side: side, half: half, other: other) }
    }

    @inline(__always)
    private func process(_ segment: TCPSegment, flow: Flow, key: ConnectionKey, side: Int, half: HalfStream, other: HalfStream) {
        let c = flow.connection, t = flow.tcp
        let ts = segment.timestamp
        c.times.last = ts
        c.packets &+= 1
        let flags = segment.flags
        half.segments &+= 1

        if flags.contains(.syn) {
            if flags.contains(.ack) {
                if t.synAck == nil { t.synAck = ts }
                if c.clientSide == nil { c.clientSide = 1 - side; c.clientEvidence = .syn }
                if t.serverISNPlusOne != 0, t.serverISNPlusOne != segment.sequence &+ 1, t.handshakeAck == nil {
                    if t.replacedServerISNsPlusOne.count == 4 { t.replacedServerISNsPlusOne.removeFirst() }
                    t.replacedServerISNsPlusOne.append(t.serverISNPlusOne)
                }
                t.serverISNPlusOne = segment.sequence &+ 1
                c.record("h", side: side)
            } else {
                if t.syn == nil { t.syn = ts }
                if c.clientSide == nil { c.clientSide = side; c.clientEvidence = .syn }
                c.record("S", side: side)
            }
            // A SYN (SYN/ACK) sent again with another initial sequence number replaces the first
            // until the peer has answered (acknowledged) one: a client may send several SYNs
            // before one is answered, and the SYN/ACK says which. A SYN/ACK that comes after the
            // client's ACK (a stale or forged one) changes nothing.
            let answered = flags.contains(.ack) ? t.handshakeAck != nil : t.synAck != nil
            if !half.started || (half.isUnused && !answered) {
                half.started = true
                half.sawSYN = true
                half.nextSequence = segment.sequence &+ 1
                half.nextOffset = 0
            }
            // The SYN/ACK acknowledges the SYN it answers: that one's sequence space is the
            // client's, whichever SYN came last.
            if flags.contains(.ack), !answered, other.sawSYN, other.isUnused {
                other.nextSequence = segment.acknowledgement
            }
        } else if flags.contains(.ack), t.handshakeAck == nil, t.synAck != nil, side == c.clientSide {
            if segment.acknowledgement == t.serverISNPlusOne {
                t.handshakeAck = ts
            } else if t.replacedServerISNsPlusOne.contains(segment.acknowledgement), other.sawSYN, other.isUnused {
                // Two SYN/ACKs with different initial sequence numbers, and the client answered
                // an earlier one: its sequence space is the server's.
                useServerISN(plusOne: segment.acknowledgement, half: other, tcp: t)
                t.handshakeAck = ts
            }
        }

        let payloadCount = segment.payload.count
        if payloadCount > 0, !t.replacedServerISNsPlusOne.isEmpty, t.handshakeAck == nil, side != c.clientSide, half.sawSYN, half.isUnused,
           segment.sequence != half.nextSequence, t.replacedServerISNsPlusOne.contains(segment.sequence) {
            // The server's data follows an earlier SYN/ACK than the last (the client's ACK was
            // not captured).
            useServerISN(plusOne: segment.sequence, half: half, tcp: t)
        }
        if (payloadCount > 0 || segment.missingPayload > 0) && !half.started {
            half.started = true
            half.midstream = true
            half.nextSequence = segment.sequence
            half.nextOffset = 0
            if c.weirds[.midstreamPickup] == nil { connectionsPickedUpMidstream += 1 }
            c.note(.midstreamPickup)
        }

        // Where the segment's ACK falls in the peer's stream: what the sender had received of it
        // (nil: no ACK, or the peer's stream has not started). Receiving this segment's data does
        // not move the peer's stream.
        let acked: Int64? = flags.contains(.ack) && other.started ? other.offset(of: segment.acknowledgement) : nil

        if flags.contains(.rst) && payloadCount > 0 {
            // RFC 9293 §3.5.3 / RFC 1122 §4.2.2.12: data in a RST is a diagnostic, not stream data.
            c.note(.rstWithData)
        } else if half.started && (payloadCount > 0 || segment.missingPayload > 0) {
            // Data in a SYN (TCP Fast Open) starts after the SYN's own sequence number.
            let seq = flags.contains(.syn) ? segment.sequence &+ 1 : segment.sequence
            receive(seq: seq, payload: segment.payload, missing: segment.missingPayload, side: side, half: half, flow: flow, timestamp: ts,
                    peerAck: acked.flatMap { $0 >= 0 ? UInt64($0) : nil })
        }

        // The peer acknowledged bytes beyond a hole we hold data after: the hole was never captured.
        if let acked, !other.pending.isEmpty {
            if acked > Int64(other.nextOffset), UInt64(acked) >= other.pending.minimum!.offset {
                declareGap(other, side: 1 - side, flow: flow, timestamp: ts)
            }
        }

        if flags.contains(.fin) && half.started {
            let seq = flags.contains(.syn) ? segment.sequence &+ 1 : segment.sequence
            let end = half.offset(of: seq) + Int64(payloadCount + segment.missingPayload)
            if end >= 0 { half.finOffset = UInt64(end) }
            c.record("f", side: side)
            closeIfComplete(half, side: side, flow: flow, timestamp: ts)
        }
        if flags.contains(.rst) {
            t.resetSeen = true
            c.record("r", side: side)
            c.note(.connectionReset)
            for s in 0...1 { flushHalf(t.half(s), side: s, flow: flow, reason: .reset, timestamp: ts) }
        }
        if t.halves.0.closed && t.halves.1.closed {
            finish(flow, key: key, at: ts)
        }
    }

    /// Handles the payload of one segment at `seq`.
    @inline(__always)
    private func receive(seq: UInt32, payload: UnsafeRawBufferPointer, missing: Int, side: Int, half: HalfStream,
                         flow: Flow, timestamp: Timestamp, peerAck: UInt64?) {
        let start = half.offset(of: seq)
        let count = Int64(payload.count)
        let end = start + count
        let next = Int64(half.nextOffset)
        if start < next && count > 0 {
            // A copy of bytes already delivered, also once the direction closed (an injector ends
            // what it forged with a FIN or a RST, and the real answer comes after). A keep-alive
            // probe, one byte just below the next, carries any byte: it is no copy.
            let probe = count == 1 && end == next
            if !probe { compareWithDelivered(payload, at: start, half: half, side: side, flow: flow) }
        }
        if half.closed {
            if payload.count > 0 && start >= next { flow.connection.note(.dataAfterClose) }
            return
        }
        if end <= next {
            if count > 0 { half.retransmittedSegments &+= 1 }
            if missing == 0 || end + Int64(missing) <= next { return }
        }
        if start <= next {
            if end > next {
                let skip = Int(next - start)
                deliver(UnsafeRawBufferPointer(rebasing: payload[skip...]), half: half, side: side, flow: flow, timestamp: timestamp,
                        peerAck: peerAck)
            }
            if missing > 0 {
                // The snaplen cut this packet: the rest of its payload is a gap of known length.
                flow.connection.note(.snaplenTruncated)
                let gapEnd = UInt64(end + Int64(missing))
                if gapEnd > half.nextOffset {
                    emitGap(half, length: gapEnd - half.nextOffset, side: side, flow: flow, timestamp: timestamp)
                }
            }
            drain(half, side: side, flow: flow, timestamp: timestamp)
            closeIfComplete(half, side: side, flow: flow, timestamp: timestamp)
            return
        }
        // Out of order: copy and keep until the hole is filled or declared a gap.
        let distance = UInt64(start - next)
        if distance > limits.maxWindow {
            flow.connection.note(.segmentOutsideWindow)
            return
        }
        store(half, offset: UInt64(start), payload: payload, peerAck: peerAck)
        if missing > 0 {
            flow.connection.note(.snaplenTruncated)
        }
        if half.pendingBytes > limits.maxBufferedBytesPerDirection {
            flow.connection.note(.outOfOrderBufferFull)
            declareGap(half, side: side, flow: flow, timestamp: timestamp)
        }
    }

    /// `payload`, a copy of bytes from `start` on that were delivered already, must agree with
    /// them: where it does not, the connection says so (`Connection.contradicted`).
    private func compareWithDelivered(_ payload: UnsafeRawBufferPointer, at start: Int64, half: HalfStream, side: Int, flow: Flow) {
        guard let offset = half.contradiction(payload, at: start) else { return }
        flow.connection.contradicted(at: offset, from: direction(of: side, flow.connection))
    }

    private func store(_ half: HalfStream, offset: UInt64, payload: UnsafeRawBufferPointer, peerAck: UInt64?) {
        half.pending.push(offset: offset, data: Array(payload), peerAck: peerAck)
        half.pendingBytes += payload.count
    }

    @inline(__always)
    private func deliver(_ bytes: UnsafeRawBufferPointer, half: HalfStream, side: Int, flow: Flow, timestamp: Timestamp,
                         peerAck: UInt64?) {
        guard bytes.count > 0 else { return }
        let c = flow.connection
        if c.clientSide == nil {
            decideClient(c, firstBytes: bytes, from: side)
        } else if side != c.clientSide, c.clientEvidence == .syn, half.bytes == 0, flow.tcp.half(1 - side).bytes == 0,
                  flow.handler == nil, opensAsClient(bytes) {
            // The connection's first bytes, from the side that accepted it, open a protocol only
            // a client opens (a reverse SOCKS proxy): that side is the client.
            c.clientSide = side
            c.clientEvidence = .reverse
        }
        let chunk = StreamChunk(offset: half.nextOffset, bytes: bytes, timestamp: timestamp, peerAck: peerAck)
        half.remember(bytes)
        half.nextOffset &+= UInt64(bytes.count)
        half.nextSequence = half.nextSequence &+ UInt32(truncatingIfNeeded: bytes.count)
        half.bytes &+= UInt64(bytes.count)
        if flow.handler == nil { flow.setHandler(makeHandler(c)) }
        c.record("d", side: side)
        let direction = c.direction(ofSide: side)
        flow.unretainedHandler!._withUnsafeGuaranteedRef { $0.received(chunk, from: direction, on: c) }
    }

    /// Decides the client of a connection whose handshake was not captured, before its first
    /// delivery: the first bytes as the protocols on top read them, else the ports.
    private func decideClient(_ c: Connection, firstBytes: UnsafeRawBufferPointer?, from side: Int) {
        if let firstBytes {
            switch speakerHint(firstBytes) {
            case .client: c.clientSide = side; c.clientEvidence = .content; return
            case .server: c.clientSide = 1 - side; c.clientEvidence = .content; return
            case .unknown: break
            }
        }
        let a = c.endpoints.0.port, b = c.endpoints.1.port
        let aKnown = wellKnownServerPorts.contains(a), bKnown = wellKnownServerPorts.contains(b)
        let serverSide = aKnown != bKnown ? (aKnown ? 0 : 1) : (a < b ? 0 : 1)
        c.clientSide = 1 - serverSide
        c.clientEvidence = .port
    }


    @inline(__always) private func direction(of side: Int, _ c: Connection) -> Direction {
        if c.clientSide == nil { decideClient(c, firstBytes: nil, from: side) }
        return c.direction(ofSide: side)
    }

    private func emitGap(_ half: HalfStream, length: UInt64, side: Int, flow: Flow, timestamp: Timestamp) {
        guard length > 0 else { return }
        let gap = StreamGap(offset: half.nextOffset, length: length, timestamp: timestamp)
        half.nextOffset &+= length
        half.forgetHistory()
        half.nextSequence = half.nextSequence &+ UInt32(truncatingIfNeeded: length)
        half.gapBytes &+= length
        half.gaps += 1
        let c = flow.connection
        c.note(.contentGap)
        c.record("g", side: side)
        let direction = direction(of: side, c)
        if flow.handler == nil { flow.setHandler(makeHandler(c)) }
        flow.handler!.missed(gap, from: direction, on: c)
    }

    /// Delivers buffered segments that have become contiguous. Copies of bytes already delivered
    /// are compared with the segment delivered just before them: different bytes are recorded
    /// (the first copy wins).
    private func drain(_ half: HalfStream, side: Int, flow: Flow, timestamp: Timestamp) {
        var previous: PendingSegment? = nil
        while let first = half.pending.minimum, first.offset <= half.nextOffset {
            _ = half.pending.popMinimum()
            half.pendingBytes -= first.data.count
            if previous == nil, first.offset < half.nextOffset {
                // A buffered copy of bytes delivered before it.
                first.data.withUnsafeBytes { compareWithDelivered($0, at: Int64(first.offset), half: half, side: side, flow: flow) }
            }
            if let p = previous, first.offset < p.end {
                let lo = max(first.offset, p.offset), hi = min(first.end, p.end)
                if lo < hi {
                    var differs = false
                    for i in lo..<hi where p.data[Int(i - p.offset)] != first.data[Int(i - first.offset)] { differs = true; break }
                    if differs { flow.connection.note(.retransmissionInconsistency) }
                }
            }
            if first.end > half.nextOffset {
                let skip = Int(half.nextOffset - first.offset)
                first.data.withUnsafeBytes { raw in
                    deliver(UnsafeRawBufferPointer(rebasing: raw[skip...]), half: half, side: side, flow: flow, timestamp: timestamp,
                            peerAck: first.peerAck)
                }
                previous = first
            } else {
                half.retransmittedSegments &+= 1
                if previous == nil || first.end > previous!.end { previous = first }
            }
        }
    }

    /// Declares the hole before the first buffered segment a gap, then delivers what follows.
    private func declareGap(_ half: HalfStream, side: Int, flow: Flow, timestamp: Timestamp) {
        guard let first = half.pending.minimum, first.offset > half.nextOffset else {
            drain(half, side: side, flow: flow, timestamp: timestamp)
            return
        }
        emitGap(half, length: first.offset - half.nextOffset, side: side, flow: flow, timestamp: timestamp)
        drain(half, side: side, flow: flow, timestamp: timestamp)
        closeIfComplete(half, side: side, flow: flow, timestamp: timestamp)
    }

    private func closeIfComplete(_ half: HalfStream, side: Int, flow: Flow, timestamp: Timestamp) {
        guard !half.closed, let fin = half.finOffset, half.nextOffset >= fin, half.pending.isEmpty else { return }
        half.closed = true
        guard let handler = flow.handler else { return }
        handler.ended(direction(of: side, flow.connection), reason: .fin, at: timestamp, on: flow.connection)
    }

    /// Delivers everything buffered (holes become gaps, up to a seen FIN) and ends the direction.
    private func flushHalf(_ half: HalfStream, side: Int, flow: Flow, reason: CloseReason, timestamp: Timestamp) {
        guard !half.closed else { return }
        while !half.pending.isEmpty {
            declareGap(half, side: side, flow: flow, timestamp: timestamp)
            if half.closed { return }
        }
        if let fin = half.finOffset, fin > half.nextOffset, half.started {
            emitGap(half, length: fin - half.nextOffset, side: side, flow: flow, timestamp: timestamp)
        }
        half.closed = true
        guard let handler = flow.handler else { return }
        handler.ended(direction(of: side, flow.connection), reason: half.finOffset != nil && reason != .reset ? .fin : reason,
                      at: timestamp, on: flow.connection)
    }

    func finish(_ flow: Flow, key: ConnectionKey, at timestamp: Timestamp) {
        let c = flow.connection, t = flow.tcp
        // The client's side first, so requests are known before their responses are framed.
        let first = c.clientSide ?? 0
        flushHalf(t.half(first), side: first, flow: flow, reason: .flushed, timestamp: timestamp)
        flushHalf(t.half(1 - first), side: 1 - first, flow: flow, reason: .flushed, timestamp: timestamp)
        c.times.finished = timestamp
        // Only a connection that delivered bytes has transactions a late copy could repeat; the
        // others (a SYN flood's) are not remembered, which keeps churn cheap.
        if t.deliveredBytes {
            let ends = (t.halves.0.nextSequence, t.halves.1.nextSequence)
            let lowerIsSide0 = key.lower == c.endpoints.0
            _ = recentlyEnded.set(key, Ended(lower: key.lower, ends: lowerIsSide0 ? ends : (ends.1, ends.0), at: timestamp))
        }
        flow.handler?.finished(c, at: timestamp)
        c.releaseAllBudget()
        onFinished?(c)
        if recentKey == key { recentKey = nil; recentFlow = nil }
        #if DEBUG
        flow.isFinished = true
        #endif
        // Released when the current call returns (see `retired`).
        retired.append(flow)
        flows[key] = nil
    }

    /// A data segment of a connection that ended lately, at or before where its sender's
    /// direction ended: a retransmission (or a late copy) of bytes already analysed.
    private func isRetransmissionAfterEnd(_ segment: TCPSegment, key: ConnectionKey) -> Bool {
        guard let ended = recentlyEnded.peek(key),
              segment.timestamp.nanoseconds - ended.at.nanoseconds < Self.retransmissionMemory else { return false }
        let end = segment.source == ended.lower ? ended.ends.0 : ended.ends.1
        let last = segment.sequence &+ UInt32(truncatingIfNeeded: segment.payload.count + segment.missingPayload)
        // Within a window before the end, by serial-number arithmetic (RFC 1982).
        let beforeEnd = Int32(bitPattern: end &- last)
        return beforeEnd >= 0 && beforeEnd < 1 << 30
    }

    /// Segments dropped as retransmissions of connections that had ended, since the last call.
    public func takeRetransmissionsAfterEnd() -> UInt64 {
        defer { retransmissionsAfterEnd = 0 }
        return retransmissionsAfterEnd
    }
}
