/// Pairs the requests and responses of one HTTP/1.x connection (Zeek's unanswered-requests queue,
/// NIO's queue of request heads): responses answer requests in order, 1xx replies do not pop the
/// queue, a response with no request and a request with no response are both emitted, flagged.
///
/// Input: the messages of both directions as the session's parsers report them (began, head
/// completed, ended). Output: `Transaction`s, handed to the emitter in connection order. It
/// reads the messages; it never changes one (the parsers own them until they end).
final class InOrderPairing {
    enum HeadAction: Equatable {
        case none
        /// A 101 or a CONNECT 2xx: the rest of the connection is a tunnel.
        case tunnel
    }

    private unowned let connection: Connection
    private unowned let emitter: TransactionEmitter
    private let scheme: String
    /// The messages' offsets are the TCP stream's: emitted transactions are tied to bytes that
    /// reassembly finds contradicted by a later copy (`Connection.contradicted`).
    private let onTCPStream: Bool
    private var queue: [Transaction] = []
    private var head = 0
    private var depth = 0
    private var tunnelTransaction: Transaction? = nil
    /// Until the session knows the connection is HTTP, finished transactions wait here
    /// (`release` emits them, `discard` drops them and everything after).
    private var held: [Transaction] = []
    private var holding = true
    private var discarded = false
    /// Requests that wait for their response at once, at most. RFC 9112 sets no limit on
    /// pipelining and real clients pipeline a handful; a peer that sends requests without end
    /// (300,000 unanswered GETs: 495 MiB) must not hold memory without end. Past it the oldest
    /// waiting request is written without its response, flagged.
    static let maxWaiting = 1_000
    /// Requests written early by the cap whose responses have not come yet (their depths run
    /// from `evictedDepth`): the next responses are theirs, written on their own.
    private var evictedAwaiting = 0
    private var evictedDepth = 0
    /// The response to such a request being read: written as soon as it ends, not behind the
    /// requests that still wait (which would hold every such response).
    private var stray: Transaction? = nil

    init(connection: Connection, emitter: TransactionEmitter, scheme: String, onTCPStream: Bool = false) {
        self.connection = connection
        self.emitter = emitter
        self.scheme = scheme
        self.onTCPStream = onTCPStream
    }

    /// The connection is HTTP: what waited is emitted, in order, and nothing waits any more.
    func release() {
        holding = false
        for t in held { send(t) }
        held.removeAll()
    }

    /// The connection is not HTTP: what waited, and what is open, is dropped; nothing more is
    /// paired.
    func discard() {
        holding = false
        discarded = true
        held.removeAll()
        for t in queue[head...] { connection.releaseWaiting(t) }
        queue.removeAll()
        head = 0
        tunnelTransaction = nil
    }

    func requestBegan(_ message: HTTPMessage) {
        depth += 1
        let t = Transaction(connection: ConnectionSnapshot(openingOn: connection), depth: depth, scheme: scheme, tunnel: connection.tunnel)
        t.request = message
        // Pipelined: an earlier request is still waiting for its response.
        if queue[head...].contains(where: { $0.response == nil || !$0.response!.ended }) { t.note(.pipelined) }
        queue.append(t)
        // The shared budget of waiting state: charged while it waits, given back when emitted.
        connection.chargeWaiting(t)
        if queue.count - head > Self.maxWaiting { evictOldestWaiting() }
    }

    /// The cap on waiting requests bit: the oldest, when it is whole and no response to it has
    /// begun (the parsers are done with it), is written now, flagged.
    private func evictOldestWaiting() {
        let t = queue[head]
        guard t.response == nil, !t.lostResponse, t.request?.ended == true, t !== tunnelTransaction else { return }
        t.note(.waitingRequestsCapped)
        t.note(.responseMissing)
        connection.note(.waitingRequestsCapped)
        if evictedAwaiting == 0 { evictedDepth = t.depth }
        evictedAwaiting += 1
        emit(t)
        head += 1
        trimQueue()
    }

    func responseBegan(_ message: HTTPMessage) {
        defer {
            lastResponseStart = message.arrival.startOffset
            serverLosses.removeAll()
        }
        if let t = stray, t.response == nil {
            // The final response after an interim one.
            t.response = message
        } else if evictedAwaiting > 0 {
            // The response of a request the cap wrote early: on its own, flagged.
            if let earlier = stray { emit(earlier) }
            evictedAwaiting -= 1
            let t = Transaction(connection: ConnectionSnapshot(connection, scheme: scheme), depth: evictedDepth, scheme: scheme, tunnel: connection.tunnel)
            evictedDepth += 1
            t.response = message
            t.note(.waitingRequestsCapped)
            t.note(.requestMissing)
            stray = t
        } else if let first = firstUnansweredIndex {
            let answered = laterRequest(answeredBy: message, after: first) ?? first
            for k in first..<answered where queue[k].request != nil {
                // Its response was in bytes the capture missed: it will not come.
                queue[k].note(.responseLostInGap)
            }
            if answered > first {
                // Sent after the lost response was received, as its ACK shows: not pipelined.
                for k in (first + 1)...answered { queue[k].weirds.removeAll { $0 == .pipelined } }
            }
            queue[answered].response = message
        } else {
            depth += 1
            let t = Transaction(connection: ConnectionSnapshot(connection, scheme: scheme), depth: depth, scheme: scheme, tunnel: connection.tunnel)
            t.response = message
            t.note(.requestMissing)
            queue.append(t)
        }
    }

    /// The request the next response answers, as far as the pairing knows.
    func requestBeingAnswered() -> RequestContext {
        guard let t = firstUnanswered, let request = t.request else { return .unknown }
        let whole = !connection.midstream && (connection.tcpHalf(.fromServer)?.gaps ?? 0) == 0
        return RequestContext(method: request.method, isHTTP09: request.isHTTP09,
                              replyMayLackStatusLine: !request.isHTTP09 && t.depth == 1 && whole)
    }

    func responseHeadCompleted(_ message: HTTPMessage) -> HeadAction {
        if let t = stray, t.response === message {
            if message.isInterim {
                t.interimResponses.append(message)
                t.response = nil
            }
            return .none
        }
        guard let t = queue[head...].first(where: { $0.response === message }) else { return .none }
        if message.isInterim {
            t.interimResponses.append(message)
            t.response = nil
            return .none
        }
        let method = t.request?.method
        if message.status == 101 || (method == "CONNECT" && message.status >= 200 && message.status < 300) {
            t.note(.tunnel)
            tunnelTransaction = t
            return .tunnel
        }
        return .none
    }

    /// The authority-form target of the CONNECT whose 2xx opened the tunnel (nil: none, or an
    /// Upgrade's 101).
    var tunnelTarget: String? {
        guard let request = tunnelTransaction?.request, request.method == "CONNECT" else { return nil }
        let target = request.targetString
        return target.isEmpty || target.hasPrefix("/") ? nil : target
    }

    /// The transaction whose 101 or CONNECT 2xx made the rest of the connection a tunnel (it is
    /// emitted when the connection ends, with what the tunnel carried).
    var upgradeTransaction: Transaction? { tunnelTransaction }

    /// The connection switched to HTTP/2 after `Upgrade: h2c` and a 101: the upgrading
    /// transaction leaves this pairing (its response comes on HTTP/2 stream 1), its 101 kept as
    /// an interim response.
    func takeUpgradedTransaction() -> Transaction? {
        guard let t = tunnelTransaction, let index = queue[head...].firstIndex(where: { $0 === t }) else { return nil }
        tunnelTransaction = nil
        queue.remove(at: index)
        connection.releaseWaiting(t)
        if let switching = t.response {
            t.interimResponses.append(switching)
            t.response = nil
        }
        t.weirds.removeAll { $0 == .tunnel }
        return t
    }

    func messageEnded() {
        if let t = stray, t.response?.ended == true {
            stray = nil
            emit(t)
        }
        emitReady()
    }

    /// The connection is over: the tunnel's summary goes to its transaction, and every open
    /// transaction is emitted, flagged.
    func finish(tunnel: TunnelSummary) {
        if let t = tunnelTransaction { t.tunnel = tunnel }
        tunnelTransaction = nil
        if let t = stray {
            stray = nil
            if t.response == nil { t.note(.responseMissing) }
            emit(t)
        }
        while head < queue.count {
            let t = queue[head]
            if t.request == nil { t.note(.requestMissing) }
            if t.response == nil { t.note(.responseMissing) }
            emit(t)
            head += 1
        }
        queue.removeAll()
        head = 0
    }

    /// The first request still waiting for its response (not one whose response was lost).
    private var firstUnansweredIndex: Int? { queue[head...].firstIndex(where: { $0.response == nil && !$0.lostResponse }) }
    private var firstUnanswered: Transaction? { firstUnansweredIndex.map { queue[$0] } }

    // MARK: Lost heads

    /// Stretches of the server's stream the capture missed since the latest response began
    /// (at most `lossesKept`), and where that response began.
    private var serverLosses: [Range<UInt64>] = []
    private static let lossesKept = 16
    private var lastResponseStart: UInt64 = 0

    /// Bytes of `direction` the capture missed (a gap).
    func lost(_ range: Range<UInt64>, from direction: Direction) {
        if direction == .fromServer && serverLosses.count < Self.lossesKept { serverLosses.append(range) }
    }

    /// When a gap swallowed a response's head, the next response is not the first unanswered
    /// request's: TCP's acknowledgements say so. A client that waits for each response sends
    /// its next request having received it: the response to request k lies between what the
    /// client had received when it sent k and when it sent k+1 (their ACKs), and when the
    /// capture lost bytes there, that is where it went. The response seen answers the latest
    /// request whose predecessors all have such a loss, that was sent before the response
    /// began (its ACK at or before the response's start), and that the server had received
    /// (the response's ACK past the request's start). Nil: no such evidence — the first
    /// unanswered request, as pipelining wants.
    private func laterRequest(answeredBy message: HTTPMessage, after first: Int) -> Int? {
        guard !serverLosses.isEmpty, first + 1 < queue.count else { return nil }
        var chosen: Int? = nil
        var from = max(lastResponseStart, queue[first].request?.arrival.peerAck ?? 0)
        for j in (first + 1)..<queue.count {
            guard let request = queue[j].request, queue[j].response == nil, let acked = request.arrival.peerAck,
                  message.arrival.startOffset >= acked,
                  serverLosses.contains(where: { $0.lowerBound < acked && $0.upperBound > from }) else { break }
            if let serverAcked = message.arrival.peerAck, serverAcked <= request.arrival.startOffset { break }
            chosen = j
            from = acked
        }
        return chosen
    }

    /// Emits, in order, the transactions at the head of the queue whose messages have both ended.
    private func emitReady() {
        while head < queue.count {
            let t = queue[head]
            if let request = t.request, !request.ended { return }
            guard t.lostResponse || (t.response?.ended ?? false), t !== tunnelTransaction else { return }
            emit(t)
            head += 1
        }
        trimQueue()
    }

    /// Lets the emitted transactions at the head of the queue go.
    private func trimQueue() {
        if head == queue.count {
            // Everything emitted (the usual keep-alive case): let the transactions go now.
            queue.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 64 && head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
    }

    /// An anomaly every transaction of the connection carries, in place of `request_missing`
    /// (a TLS client answered in plain HTTP: its request was a ClientHello, not missing).
    var noteOnEach: Weird? = nil

    private func emit(_ t: Transaction) {
        connection.releaseWaiting(t)
        guard !discarded else { return }
        if let w = noteOnEach {
            t.weirds.removeAll { $0 == .requestMissing }
            t.note(w)
        }
        t.connection = ConnectionSnapshot(connection, scheme: scheme)
        if holding { held.append(t) } else { send(t) }
    }

    /// To the emitter. On the TCP stream: flagged when it holds bytes a later copy contradicted
    /// already, and remembered with where its messages lay for a copy still to come.
    private func send(_ t: Transaction) {
        guard onTCPStream else { emitter.emit(t); return }
        var ranges = Contradictions.EmittedRanges(sequence: 0, fromClient: Self.span(t.request, after: nil),
                                                  fromServer: Self.span(t.response, after: t.interimResponses.first))
        ranges.flagged = connection.tcp?.contradictions.holdsContradictedBytes(ranges) ?? false
        if ranges.flagged { t.note(.injectionSuspected) }
        ranges.sequence = emitter.emit(t)
        connection.tcp?.contradictions.emitted(ranges)
    }

    /// The stream bytes of a message (from an interim response's start, when there was one).
    private static func span(_ m: HTTPMessage?, after interim: HTTPMessage?) -> Range<UInt64>? {
        guard let m else { return nil }
        let start = min(interim?.arrival.startOffset ?? m.arrival.startOffset, m.arrival.startOffset)
        let end = m.arrival.startOffset + m.wireBytes
        return start..<max(end, start + 1)
    }
}
