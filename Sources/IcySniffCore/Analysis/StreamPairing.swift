/// Pairs the requests and responses of one HTTP/2 or HTTP/3 connection by stream id (RFC 9113
/// §5, RFC 9114 §6.1): each stream is one transaction, whatever the order in which streams interleave and finish. A
/// stream is emitted when both of its messages have ended, when it is reset, when a GOAWAY says
/// it was never processed, or when the connection ends (flagged, with what arrived).
///
/// Input: the messages of both directions as the HTTP/2 session builds them, with their stream
/// ids. Output: `Transaction`s to the emitter, in completion order. Stream positions (`depth`)
/// follow the order in which streams open, which for a client's streams is the order of their
/// ids (nginx's `$connection_requests`); HTTP/3's are its request stream ids' order (id / 4 + 1),
/// since QUIC may deliver a later stream's first bytes first, and its pushes have none (0).
///
/// Stream ids are 64-bit keys. Each protocol says how its ids fall into classes that open in
/// increasing order on the wire (`Numbering`): HTTP/2's odd (client) and even (pushed) ids; HTTP/3's client
/// request streams (ids 0, 4, 8, …) and its pushes, keyed by push id (`pushKey`), since a push's
/// response comes on a unidirectional stream whose id says nothing of its order.
final class StreamPairing {
    enum Numbering {
        case http2, http3
        /// The class of a stream key: ids of one class open in increasing order.
        @inline(__always) func kind(of key: UInt64) -> Int {
            switch self {
            case .http2: return Int(key & 1)
            case .http3: return key >= StreamPairing.pushKeyBase ? 1 : 0
            }
        }
    }
    /// HTTP/3 pushes are keyed by push id above every stream id (62 bits).
    static let pushKeyBase: UInt64 = 1 << 62
    static func pushKey(_ pushID: UInt64) -> UInt64 { pushKeyBase | pushID }

    private unowned let connection: Connection
    private unowned let emitter: TransactionEmitter
    private let scheme: String
    private let numbering: Numbering
    /// The open streams, each with its transaction (`OpenStreams`).
    private var open = OpenStreams()
    private var depth = 0
    /// Streams open at once, at most: a peer that opens streams without end and never answers
    /// (200,000 unanswered h2c streams: 272 MiB) must not hold memory without end. Far above
    /// what servers allow (nginx 128, most 100 to 1,000 concurrent streams). Past it the oldest
    /// open stream whose request is whole and unanswered is written now, flagged.
    static let maxOpen = 1_000
    /// Streams written early by the cap (the latest 4,096): a response that comes for one is
    /// written on its own, flagged, not dropped as a straggler.
    private var evicted = BoundedLRU<UInt64, Bool>(capacity: 4096)
    /// The streams that are over (`ClosedStreams`).
    private var closed: ClosedStreams

    init(connection: Connection, emitter: TransactionEmitter, scheme: String, numbering: Numbering = .http2) {
        self.connection = connection
        self.emitter = emitter
        self.scheme = scheme
        self.numbering = numbering
        closed = ClosedStreams(numbering: numbering)
        if numbering == .http2, connection.http2 == nil { connection.http2 = HTTP2Stats() }
    }

    /// Where a stream stands (RFC 9113 §5.1, RFC 9000 §3, as the pairing sees it: a stream is open
    /// from its first message to its transaction's emission).
    enum State {
        /// Not opened yet (or, HTTP/2, an id above every one opened in its class).
        case idle
        case open(Transaction)
        /// Written early by the cap on open streams: its response, if it comes, is written alone.
        case writtenEarly
        /// Emitted: a frame for it now is a straggler.
        case closed
    }

    func state(of stream: UInt64) -> State {
        if let t = open[stream] { return .open(t) }
        if evicted.peek(stream) != nil { return .writtenEarly }
        return closed.contains(stream) ? .closed : .idle
    }

    func transaction(on stream: UInt64) -> Transaction? { open[stream] }

    /// Whether the stream was emitted already (a frame for it now is a straggler).
    func wasClosed(_ stream: UInt64) -> Bool {
        if case .closed = state(of: stream) { return true }
        return false
    }

    /// Streams remembered one by one (HTTP/3: emitted above the watermark): tests.
    var closedAboveWatermark: Int { closed.aboveWatermark }

    /// A new stream: the request the client sent (or the server promised) on it.
    @discardableResult
    func open(_ stream: UInt64, request: HTTPMessage?, pushed: Bool = false) -> Transaction {
        let position: Int
        if numbering == .http3 {
            // HTTP/3: the request stream's place among the client's (ids 0, 4, 8, …), whatever
            // order their first frames arrived in; a push is no request of the client's (0).
            position = pushed ? 0 : Int(clamping: stream / 4) + 1
        } else {
            depth += 1
            position = depth
        }
        let t = Transaction(connection: ConnectionSnapshot(openingOn: connection), depth: position, scheme: scheme, tunnel: connection.tunnel)
        t.request = request
        t.streamID = numbering == .http3 && pushed ? nil : stream
        t.pushed = pushed
        if evicted.peek(stream) != nil {
            // The response of a stream the cap wrote early: on its own, flagged.
            evicted.update(stream) { $0 = nil }
            t.note(.waitingRequestsCapped)
        }
        open.add(stream, t, limit: Self.maxOpen)
        connection.chargeWaiting(t)
        countOpened(pushed: pushed)
        closed.opened(stream)
        if open.count > Self.maxOpen { evictOldestWaiting() }
        return t
    }

    /// The cap on open streams bit: the oldest open stream whose request is whole and has no
    /// response yet (the session is done with it) is written now, flagged.
    private func evictOldestWaiting() {
        if let (stream, t) = open.oldest(where: { $0.response == nil && $0.interimResponses.isEmpty && $0.request?.ended == true }) {
            t.note(.waitingRequestsCapped)
            t.note(.responseMissing)
            connection.note(.waitingRequestsCapped)
            _ = evicted.set(stream, true)
            close(stream, t)
        }
        open.compact()
    }

    /// h2c after Upgrade: the HTTP/1.1 request that asked for it is stream 1, whose response
    /// comes as HTTP/2 (RFC 7540 §3.2). The transaction keeps its place on the connection.
    func adopt(_ t: Transaction, as stream: UInt64) {
        t.streamID = stream
        open[stream] = t
        depth = max(depth, t.depth)
        closed.opened(stream)
        countOpened(pushed: false)
    }

    /// The connection's stream figures (the report's): one more stream, open with the others.
    private func countOpened(pushed: Bool) {
        guard numbering == .http2 else { return }
        var stats = connection.http2 ?? HTTP2Stats()
        stats.streams += 1
        if pushed { stats.pushed += 1 }
        stats.peakConcurrentStreams = max(stats.peakConcurrentStreams, open.count)
        connection.http2 = stats
    }

    /// Response headers on a stream: an interim 1xx, the final response, or (after it) trailers
    /// are the session's to tell; here the message takes its place.
    func responseBegan(_ message: HTTPMessage, on stream: UInt64) {
        let t = open[stream] ?? {
            let t = self.open(stream, request: nil)
            t.note(.requestMissing)
            return t
        }()
        if message.isInterim {
            t.interimResponses.append(message)
        } else {
            t.response = message
        }
    }

    /// A message of the stream ended: emitted once both have (a request the server answered
    /// before the client finished it waits for the client, or a reset).
    func messageEnded(on stream: UInt64) {
        guard let t = open[stream] else { return }
        if let response = t.response, response.ended, t.request?.ended ?? true {
            close(stream, t)
        }
    }

    /// Streams whose server answered in full and then asked the client to stop sending its
    /// request (RST_STREAM NO_ERROR, RFC 9113 §8.1): open for the request's DATA still coming.
    private var stoppedRequests = Set<UInt64>()

    /// RST_STREAM: what arrived is reported, the unfinished messages flagged.
    ///
    /// A server's RST_STREAM with NO_ERROR after a complete response is no failure: it tells the
    /// client to stop sending a request the server needs no more of (nginx answers a POST so,
    /// before reading its body). The DATA the client sent before it knew still comes, often
    /// after the reset in the capture: the stream stays open for it, and is written when the
    /// request ends, the client resets the stream, or the connection ends.
    func reset(_ stream: UInt64, at ts: Timestamp, as weird: Weird = .http2StreamReset, noError: Bool = false, byServer: Bool = false) {
        guard let t = open[stream] else { return }
        if noError && byServer, let response = t.response, response.ended, t.request?.ended == false {
            stoppedRequests.insert(stream)
            return
        }
        if stoppedRequests.remove(stream) == nil { t.note(weird) }
        if numbering == .http2 { connection.http2?.reset += 1 }
        endUnfinished(t, at: ts)
        close(stream, t)
    }

    /// GOAWAY from the server: the client's streams above `lastStream` were never processed.
    func refuse(above lastStream: UInt32, clientInitiated: Bool, at ts: Timestamp) {
        refuse(where: { $0 > UInt64(lastStream) && ($0 % 2 == 1) == clientInitiated }, as: .http2RefusedByGoaway, at: ts)
    }

    /// GOAWAY: the open streams `unprocessed` names were never processed.
    func refuse(where unprocessed: (UInt64) -> Bool, as weird: Weird, at ts: Timestamp) {
        for stream in open.streams.filter(unprocessed).sorted() {
            let t = open[stream]!
            t.note(weird)
            endUnfinished(t, at: ts)
            close(stream, t)
        }
    }

    /// The connection is over: every open stream is emitted, in stream order, flagged.
    func finish(at ts: Timestamp) {
        for stream in open.streams.sorted() {
            let t = open[stream]!
            if t.request == nil { t.note(.requestMissing) }
            if t.response == nil { t.note(.responseMissing) }
            endUnfinished(t, at: ts)
            close(stream, t)
        }
    }

    private func endUnfinished(_ t: Transaction, at ts: Timestamp) {
        for m in [t.request, t.response].compactMap({ $0 }) where !m.ended {
            m.ended = true
            m.complete = false
            m.note(m.kind == .request ? .requestIncomplete : .responseIncomplete)
            if m.arrival.lastByte < m.arrival.firstByte { m.arrival.lastByte = m.arrival.firstByte }
        }
    }

    private func close(_ stream: UInt64, _ t: Transaction) {
        open[stream] = nil
        if !stoppedRequests.isEmpty { stoppedRequests.remove(stream) }
        connection.releaseWaiting(t)
        closed.closed(stream)
        t.connection = ConnectionSnapshot(connection, scheme: scheme)
        emitter.emit(t)
    }
}

/// A connection's open streams and their transactions, and the order they opened in (for the
/// cap on open streams: the oldest waiting one goes first).
struct OpenStreams {
    private var byStream: [UInt64: Transaction] = [:]
    /// The open streams' keys in the order they opened (closed ones are skipped lazily, and the
    /// list compacted when they are most of it).
    private var order: [UInt64] = []
    private var head = 0

    var count: Int { byStream.count }
    var streams: Dictionary<UInt64, Transaction>.Keys { byStream.keys }

    subscript(stream: UInt64) -> Transaction? {
        get { byStream[stream] }
        set { byStream[stream] = newValue }
    }

    /// A stream opened (`limit`: the cap on open streams, which bounds the order list too).
    mutating func add(_ stream: UInt64, _ t: Transaction, limit: Int) {
        byStream[stream] = t
        order.append(stream)
        if order.count > 4 * limit + 64 {
            // Mostly closed streams: keep the open ones, in order (amortised O(1) per stream).
            order = order[head...].filter { byStream[$0] != nil }
            head = 0
        }
    }

    /// The oldest open stream (among the first 64 still open) that `waiting` says may go. The
    /// closed ones it passes at the head are skipped for good (`compact` after).
    mutating func oldest(where waiting: (Transaction) -> Bool) -> (UInt64, Transaction)? {
        var i = head
        var scanned = 0
        while i < order.count && scanned < 64 {
            let stream = order[i]
            if let t = byStream[stream] {
                scanned += 1
                if waiting(t) { return (stream, t) }
            } else if i == head {
                head += 1
            }
            i += 1
        }
        return nil
    }

    /// Skips the closed streams at the head of the order, and drops them when they are most of it.
    mutating func compact() {
        while head < order.count && byStream[order[head]] == nil { head += 1 }
        if head > 64 && head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}

/// Which streams of a connection are over, by the rule of its numbering. HTTP/2: streams open in
/// increasing order in each class (RFC 9113 §5.1.1), so one at or below the highest opened that
/// is not open was closed (or skipped, which closes it implicitly). HTTP/3: QUIC delivers each
/// stream in order, not the streams among themselves (a lower id can open after a higher one),
/// so the streams emitted are remembered, as a watermark per class (request streams 0, 4, 8, …;
/// pushes by push id) below which every one was, and the ones above it: a long connection does
/// not keep one entry per stream it ever had.
struct ClosedStreams {
    let numbering: StreamPairing.Numbering
    /// The highest key opened so far in each class.
    private var highest: [UInt64?] = [nil, nil]
    private var above = Set<UInt64>()
    private var below: [UInt64] = [0, StreamPairing.pushKeyBase]

    init(numbering: StreamPairing.Numbering) { self.numbering = numbering }

    var aboveWatermark: Int { above.count }

    /// Whether `stream`, not open now, is over.
    func contains(_ stream: UInt64) -> Bool {
        if numbering == .http3 {
            return stream < below[Self.watermarkClass(stream)] || above.contains(stream)
        }
        guard let h = highest[numbering.kind(of: stream)] else { return false }
        return stream <= h
    }

    mutating func opened(_ stream: UInt64) {
        let k = numbering.kind(of: stream)
        highest[k] = max(highest[k] ?? 0, stream)
    }

    mutating func closed(_ stream: UInt64) {
        guard numbering == .http3 else { return }
        let c = Self.watermarkClass(stream), step: UInt64 = stream >= StreamPairing.pushKeyBase ? 1 : 4
        guard stream >= below[c] else { return }
        above.insert(stream)
        while above.remove(below[c]) != nil { below[c] += step }
    }

    private static func watermarkClass(_ key: UInt64) -> Int { key >= StreamPairing.pushKeyBase ? 1 : 0 }
}
