/// The HTTP/1.x session of one connection: a request parser for the client's bytes, a response
/// parser for the server's, and the connection's in-order pairing, which their messages go to.
///
/// It is the delegate of both parsers and never calls back into the parser that is calling it;
/// it acts on the other direction's parser where HTTP/1.x needs that (a 101 or a CONNECT 2xx
/// makes the client's side a tunnel too; a response starting settles whether the request
/// before it was HTTP/0.9).
final class HTTP1Session: ConnectionSession, HTTPParserDelegate {
    let scheme: String
    private unowned let connection: Connection
    private unowned let emitter: TransactionEmitter
    private let options: HTTPParserOptions
    private let pairing: InOrderPairing
    /// After `Upgrade: h2c` and a 101: the HTTP/2 session the rest of the connection goes to.
    private var upgraded: HTTP2Session? = nil
    private var requestParser: HTTPStreamParser!
    private var responseParser: HTTPStreamParser!
    /// The two parsers again, unretained, for the per-packet path (they are never replaced).
    private var unretainedParsers: (request: Unmanaged<HTTPStreamParser>, response: Unmanaged<HTTPStreamParser>)!

    init(connection: Connection, emitter: TransactionEmitter, options: HTTPParserOptions, scheme: String) {
        self.scheme = scheme
        self.connection = connection
        self.emitter = emitter
        self.options = options
        self.pairing = InOrderPairing(connection: connection, emitter: emitter, scheme: scheme)
        requestParser = HTTPStreamParser(role: .request, options: options, delegate: self)
        responseParser = HTTPStreamParser(role: .response, options: options, delegate: self)
        unretainedParsers = (Unmanaged.passUnretained(requestParser), Unmanaged.passUnretained(responseParser))
    }

    /// A request line with a version: the client; a status line: the server.
    static func speakerHint(_ firstData: UnsafeRawBufferPointer) -> SpeakerHint {
        var end = 0
        while end < firstData.count && end < 2048 && firstData[end] != 0x0A { end += 1 }
        var line = Array(firstData[0..<end])
        if line.last == 0x0D { line.removeLast() }
        if StatusLine(line[...]) != nil { return .server }
        if end < firstData.count, let r = RequestLine(line[...]), !r.version.isEmpty { return .client }
        return .unknown
    }

    // MARK: StreamHandler

    func received(_ chunk: StreamChunk, from direction: Direction, on connection: Connection) {
        if let upgraded { return upgraded.received(chunk, from: direction, on: connection) }
        // Every data packet: the parser is used unretained (choosing one of two references makes
        // a retained copy); `self` holds both parsers for as long as it lives.
        let unretained = direction == .fromClient ? unretainedParsers.request : unretainedParsers.response
        unretained._withUnsafeGuaranteedRef { $0.parse(chunk) }
    }

    func missed(_ gap: StreamGap, from direction: Direction, on connection: Connection) {
        if let upgraded { return upgraded.missed(gap, from: direction, on: connection) }
        parser(for: direction).gap(gap)
    }

    func ended(_ direction: Direction, reason: CloseReason, at timestamp: Timestamp, on connection: Connection) {
        if let upgraded { return upgraded.ended(direction, reason: reason, at: timestamp, on: connection) }
        parser(for: direction).finish(at: timestamp, reason: reason)
    }

    func finished(_ connection: Connection, at timestamp: Timestamp) {
        requestParser.finish(at: timestamp, reason: .flushed)
        responseParser.finish(at: timestamp, reason: .flushed)
        var summary = TunnelSummary()
        summary.bytesFromClient = requestParser.tunnelBytes
        summary.bytesFromServer = responseParser.tunnelBytes
        summary.start = [requestParser.tunnelStart, responseParser.tunnelStart].compactMap { $0 }.min()
        summary.end = [requestParser.tunnelEnd, responseParser.tunnelEnd].compactMap { $0 }.max()
        pairing.finish(tunnel: summary)
        upgraded?.finished(connection, at: timestamp)
    }

    @inline(__always) private func parser(for direction: Direction) -> HTTPStreamParser {
        direction == .fromClient ? requestParser : responseParser
    }

    // MARK: HTTPParserDelegate

    func parserBegan(_ message: HTTPMessage) {
        switch message.kind {
        case .request: pairing.requestBegan(message)
        case .response: pairing.responseBegan(message)
        }
    }

    func parserCompletedHead(_ message: HTTPMessage) {
        guard message.kind == .response else { return }
        if pairing.responseHeadCompleted(message) == .tunnel {
            if message.status == 101, Self.upgradesToH2c(message), let t = pairing.takeUpgradedTransaction() {
                // h2c (RFC 7540 §3.2): both directions are HTTP/2 from here; the request that
                // asked for it is stream 1. The server's bytes after the 101 in this chunk come
                // through `parserTunnelData`, everything later straight to the HTTP/2 session.
                let h2 = HTTP2Session(connection: connection, emitter: emitter, options: options, scheme: scheme, expectsPreface: true)
                h2.adoptUpgradeRequest(t)
                upgraded = h2
                return
            }
            // The response parser tunnels on its own (its framing says so); the client's side
            // follows from here.
            requestParser.enterTunnel()
        }
    }

    /// A 101 whose Upgrade names h2c.
    private static func upgradesToH2c(_ message: HTTPMessage) -> Bool {
        guard let value = message.headers.combined(.upgrade) else { return false }
        return value.split(separator: ",").contains { $0.trimmingASCIIWhitespace().lowercased() == "h2c" }
    }

    func parserTunnelData(_ bytes: UnsafeRawBufferPointer, at ts: Timestamp) {
        upgraded?.received(StreamChunk(offset: 0, bytes: bytes, timestamp: ts), from: .fromServer, on: connection)
    }

    func parserEnded(_ message: HTTPMessage) {
        pairing.messageEnded()
    }

    func parserRequestBeingAnswered() -> RequestContext {
        // The server has started to answer: a versionless request line still waiting for what
        // comes next was HTTP/0.9.
        requestParser.resolvePendingHTTP09()
        return pairing.requestBeingAnswered()
    }

    func parserSkipped(_ weird: Weird, bytes: Int) {
        connection.note(weird)
    }
}
