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
    private let pairing: InOrderPairing
    private var requestParser: HTTPStreamParser!
    private var responseParser: HTTPStreamParser!
    /// The two parsers again, unretained, for the per-packet path (they are never replaced).
    private var unretainedParsers: (request: Unmanaged<HTTPStreamParser>, response: Unmanaged<HTTPStreamParser>)!

    init(connection: Connection, emitter: TransactionEmitter, options: HTTPParserOptions, scheme: String) {
        self.scheme = scheme
        self.connection = connection
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
        // Every data packet: the parser is used unretained (choosing one of two references makes
        // a retained copy); `self` holds both parsers for as long as it lives.
        let unretained = direction == .fromClient ? unretainedParsers.request : unretainedParsers.response
        unretained._withUnsafeGuaranteedRef { $0.parse(chunk) }
    }

    func missed(_ gap: StreamGap, from direction: Direction, on connection: Connection) {
        parser(for: direction).gap(gap)
    }

    func ended(_ direction: Direction, reason: CloseReason, at timestamp: Timestamp, on connection: Connection) {
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
            // The response parser tunnels on its own (its framing says so); the client's side
            // follows from here.
            requestParser.enterTunnel()
        }
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
