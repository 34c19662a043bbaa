/// Pairs the requests and responses of one HTTP/2 connection by stream id (RFC 9113 §5): each
/// stream is one transaction, whatever the order in which streams interleave and finish. A
/// stream is emitted when both of its messages have ended, when it is reset, when a GOAWAY says
/// it was never processed, or when the connection ends (flagged, with what arrived).
///
/// Input: the messages of both directions as the HTTP/2 session builds them, with their stream
/// ids. Output: `Transaction`s to the emitter, in completion order. Stream positions (`depth`)
/// follow the order in which streams open, which for a client's streams is the order of their
/// ids (nginx's `$connection_requests`).
final class StreamPairing {
    private unowned let connection: Connection
    private unowned let emitter: TransactionEmitter
    private let scheme: String
    private var open: [UInt32: Transaction] = [:]
    private var depth = 0
    /// The highest stream id opened so far, of odd (client) and even (pushed) ids: streams
    /// open in increasing order (§5.1.1), so a lower id that is not open was closed already.
    private var highest: (odd: UInt32, even: UInt32) = (0, 0)

    init(connection: Connection, emitter: TransactionEmitter, scheme: String) {
        self.connection = connection
        self.emitter = emitter
        self.scheme = scheme
        if connection.http2 == nil { connection.http2 = HTTP2Stats() }
    }

    var openStreams: Int { open.count }

    func transaction(on stream: UInt32) -> Transaction? { open[stream] }

    /// Whether the stream was emitted already (a frame for it now is a straggler).
    func wasClosed(_ stream: UInt32) -> Bool {
        open[stream] == nil && stream <= (stream % 2 == 1 ? highest.odd : highest.even)
    }

    /// A new stream: the request the client sent (or the server promised) on it.
    @discardableResult
    func open(_ stream: UInt32, request: HTTPMessage?, pushed: Bool = false) -> Transaction {
        depth += 1
        let t = Transaction(connection: ConnectionSnapshot(connection, scheme: scheme), depth: depth, scheme: scheme, tunnel: connection.tunnel)
        t.request = request
        t.http2Stream = stream
        t.pushed = pushed
        open[stream] = t
        countOpened(pushed: pushed)
        if stream % 2 == 1 { highest.odd = max(highest.odd, stream) } else { highest.even = max(highest.even, stream) }
        return t
    }

    /// h2c after Upgrade: the HTTP/1.1 request that asked for it is stream 1, whose response
    /// comes as HTTP/2 (RFC 7540 §3.2). The transaction keeps its place on the connection.
    func adopt(_ t: Transaction, as stream: UInt32) {
        t.http2Stream = stream
        open[stream] = t
        depth = max(depth, t.depth)
        highest.odd = max(highest.odd, stream)
        countOpened(pushed: false)
    }

    /// The connection's stream figures (the report's): one more stream, open with the others.
    private func countOpened(pushed: Bool) {
        var stats = connection.http2 ?? HTTP2Stats()
        stats.streams += 1
        if pushed { stats.pushed += 1 }
        stats.peakConcurrentStreams = max(stats.peakConcurrentStreams, open.count)
        connection.http2 = stats
    }

    /// Response headers on a stream: an interim 1xx, the final response, or (after it) trailers
    /// are the session's to tell; here the message takes its place.
    func responseBegan(_ message: HTTPMessage, on stream: UInt32) {
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
    func messageEnded(on stream: UInt32) {
        guard let t = open[stream] else { return }
        if let response = t.response, response.ended, t.request?.ended ?? true {
            close(stream, t)
        }
    }

    /// RST_STREAM: what arrived is reported, the unfinished messages flagged.
    func reset(_ stream: UInt32, at ts: Timestamp) {
        guard let t = open[stream] else { return }
        t.note(.http2StreamReset)
        connection.http2?.reset += 1
        endUnfinished(t, at: ts)
        close(stream, t)
    }

    /// GOAWAY from the server: the client's streams above `lastStream` were never processed.
    func refuse(above lastStream: UInt32, clientInitiated: Bool, at ts: Timestamp) {
        let refused = open.keys.filter { $0 > lastStream && ($0 % 2 == 1) == clientInitiated }.sorted()
        for stream in refused {
            let t = open[stream]!
            t.note(.http2RefusedByGoaway)
            endUnfinished(t, at: ts)
            close(stream, t)
        }
    }

    /// The connection is over: every open stream is emitted, in stream order, flagged.
    func finish(at ts: Timestamp) {
        for stream in open.keys.sorted() {
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
            if m.lastByte < m.firstByte { m.lastByte = m.firstByte }
        }
    }

    private func close(_ stream: UInt32, _ t: Transaction) {
        open[stream] = nil
        t.connection = ConnectionSnapshot(connection, scheme: scheme)
        emitter.emit(t)
    }
}
