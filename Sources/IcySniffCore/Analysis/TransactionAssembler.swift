/// Receives finished transactions (and connections) from the analysis, in completion order.
public protocol TransactionSink: AnyObject {
    func consume(_ transaction: Transaction)
    func connectionFinished(_ connection: Connection)
}

/// Pairs the requests and responses of one connection (Zeek's unanswered-requests queue, NIO's
/// queue of request heads): responses answer requests in order, 1xx replies do not pop the queue,
/// a response with no request and a request with no response are both emitted, flagged.
///
/// It is the connection's `StreamHandler` (input from reassembly) and the delegate of both HTTP
/// parsers; its output is `Transaction`s, handed to the sink in connection order.
final class TransactionAssembler: StreamHandler, HTTPParserDelegate {
    private unowned let connection: Connection
    private unowned let emitter: TransactionEmitter
    private var requestParser: HTTPStreamParser!
    private var responseParser: HTTPStreamParser!
    /// The two parsers again, unretained, for the per-packet path (they are never replaced).
    private var unretainedParsers: (request: Unmanaged<HTTPStreamParser>, response: Unmanaged<HTTPStreamParser>)!
    private var queue: [Transaction] = []
    private var head = 0
    private var depth = 0
    private var tunnelTransaction: Transaction? = nil
    private var skipped = 0

    init(connection: Connection, emitter: TransactionEmitter, options: HTTPParserOptions) {
        self.connection = connection
        self.emitter = emitter
        requestParser = HTTPStreamParser(role: .request, options: options, delegate: self)
        responseParser = HTTPStreamParser(role: .response, options: options, delegate: self)
        unretainedParsers = (Unmanaged.passUnretained(requestParser), Unmanaged.passUnretained(responseParser))
    }

    // MARK: StreamHandler

    func received(_ chunk: StreamChunk, from side: Int, on connection: Connection) {
        if connection.clientSide == nil { decideClient(firstData: chunk.bytes, side: side) }
        // Every data packet: the parser is used unretained (choosing one of two references makes
        // a retained copy); `self` holds both parsers for as long as it lives.
        let unretained = side == connection.clientSide ? unretainedParsers.request : unretainedParsers.response
        unretained._withUnsafeGuaranteedRef { $0.parse(chunk) }
    }

    func missed(_ gap: StreamGap, from side: Int, on connection: Connection) {
        if connection.clientSide == nil { decidePorts() }
        parser(for: side).gap(gap)
    }

    func ended(side: Int, reason: CloseReason, at timestamp: Timestamp, on connection: Connection) {
        if connection.clientSide == nil { decidePorts() }
        parser(for: side).finish(at: timestamp, reason: reason)
    }

    func finished(_ connection: Connection, at timestamp: Timestamp) {
        requestParser.finish(at: timestamp, reason: .flushed)
        responseParser.finish(at: timestamp, reason: .flushed)
        if let t = tunnelTransaction {
            var summary = TunnelSummary()
            summary.bytesFromClient = requestParser.tunnelBytes
            summary.bytesFromServer = responseParser.tunnelBytes
            summary.start = [requestParser.tunnelStart, responseParser.tunnelStart].compactMap { $0 }.min()
            summary.end = [requestParser.tunnelEnd, responseParser.tunnelEnd].compactMap { $0 }.max()
            t.tunnel = summary
        }
        tunnelTransaction = nil
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

    @inline(__always) private func parser(for side: Int) -> HTTPStreamParser {
        side == connection.clientSide ? requestParser : responseParser
    }

    /// Without a SYN, the content tells the client: a request line comes from it, a status line
    /// from the server; failing both, the well-known port.
    private func decideClient(firstData: UnsafeRawBufferPointer, side: Int) {
        var end = 0
        while end < firstData.count && end < 2048 && firstData[end] != 0x0A { end += 1 }
        var line = Array(firstData[0..<end])
        if line.last == 0x0D { line.removeLast() }
        if StatusLine(line[...]) != nil {
            connection.clientSide = 1 - side
            connection.clientSideEvidence = "content"
        } else if end < firstData.count, let r = RequestLine(line[...]), !r.version.isEmpty {
            connection.clientSide = side
            connection.clientSideEvidence = "content"
        } else {
            decidePorts()
        }
    }

    private func decidePorts() {
        guard connection.clientSide == nil else { return }
        let a = connection.endpoints.0.port, b = connection.endpoints.1.port
        let wellKnown: Set<UInt16> = [80, 8080, 8000, 8008, 8888, 3128, 8081, 591, 443]
        let serverSide: Int
        if wellKnown.contains(a) != wellKnown.contains(b) { serverSide = wellKnown.contains(a) ? 0 : 1 }
        else { serverSide = a < b ? 0 : 1 }
        connection.clientSide = 1 - serverSide
        connection.clientSideEvidence = "port"
    }

    // MARK: HTTPParserDelegate

    func parserBegan(_ message: HTTPMessage) {
        switch message.kind {
        case .request:
            depth += 1
            let t = Transaction(connection: ConnectionSnapshot(connection), depth: depth)
            t.request = message
            // Pipelined: an earlier request is still waiting for its response.
            if queue[head...].contains(where: { $0.response == nil || !$0.response!.ended }) { t.note(.pipelined) }
            queue.append(t)
        case .response:
            if let t = queue[head...].first(where: { $0.response == nil }) {
                t.response = message
                message.requestMethod = t.request?.method
                message.requestIsHTTP09 = t.request?.isHTTP09 ?? false
            } else {
                depth += 1
                let t = Transaction(connection: ConnectionSnapshot(connection), depth: depth)
                t.response = message
                t.note(.requestMissing)
                queue.append(t)
            }
        }
    }

    func parserCompletedHead(_ message: HTTPMessage) {
        guard message.kind == .response, let t = transaction(of: message) else { return }
        if message.isInterim {
            t.interimResponses.append(message)
            t.response = nil
            return
        }
        let method = t.request?.method
        if message.status == 101 || (method == "CONNECT" && message.status >= 200 && message.status < 300) {
            t.note(.tunnel)
            tunnelTransaction = t
            requestParser.enterTunnel()
        }
    }

    func parserEnded(_ message: HTTPMessage) {
        emitReady()
    }

    func parserExpectsHTTP09Response() -> Bool {
        queue[head...].first(where: { $0.response == nil })?.request?.isHTTP09 ?? false
    }

    func parserSkipped(_ weird: Weird, bytes: Int) {
        connection.note(weird)
        skipped += bytes
    }

    private func transaction(of response: HTTPMessage) -> Transaction? {
        queue[head...].first(where: { $0.response === response })
    }

    /// Emits, in order, the transactions at the head of the queue whose messages have both ended.
    private func emitReady() {
        while head < queue.count {
            let t = queue[head]
            guard let response = t.response, response.ended, t !== tunnelTransaction else { return }
            if let request = t.request, !request.ended { return }
            emit(t)
            head += 1
        }
        if head == queue.count {
            // Everything emitted (the usual keep-alive case): let the transactions go now.
            queue.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 64 && head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
    }

    private func emit(_ t: Transaction) {
        t.connection = ConnectionSnapshot(connection)
        emitter.emit(t)
    }
}

/// Completes transactions (timings, DNS) and hands them to the sink; shared by all connections
/// of one pipeline.
final class TransactionEmitter {
    private let sink: TransactionSink
    let dns: DNSTracker
    private var sequence: UInt64 = 0
    var captureName = ""
    private(set) var emitted: UInt64 = 0

    init(sink: TransactionSink, dns: DNSTracker) {
        self.sink = sink
        self.dns = dns
    }

    func emit(_ t: Transaction) {
        sequence += 1
        t.sequence = sequence
        t.captureName = captureName
        var lookup: DNSLookup? = nil
        if t.depth == 1, let syn = t.connection.synTime {
            lookup = dns.lookup(host: t.host, address: t.connection.server.address, before: syn)
        }
        t.timings = TransactionTimings.compute(for: t, dns: lookup)
        emitted += 1
        sink.consume(t)
    }
}
