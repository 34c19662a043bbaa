/// The HTTP/1.x session of one connection: a request parser for the client's bytes, a response
/// parser for the server's, and the connection's in-order pairing, which their messages go to.
///
/// It is the delegate of both parsers and never calls back into the parser that is calling it;
/// it acts on the other direction's parser where HTTP/1.x needs that (a 101 or a CONNECT 2xx
/// makes the client's side a tunnel too; a response starting settles whether the request
/// before it was HTTP/0.9).
///
/// It is also the one place that decides whether the connection is HTTP at all: a request
/// line with an HTTP version or a status line says yes; a server that speaks first (SMTP, FTP,
/// POP3, IMAP banners), a first client line that is no HTTP request (IRC, SIP, RTSP) or an
/// HTTP/0.9 GET answered with another protocol's reply says no. Until it is decided, the
/// pairing holds the transactions back; a connection that is not HTTP emits none, and its
/// first lines go to `Connection.notHTTP`.
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

    enum Verdict { case undecided, http, notHTTP }
    private(set) var verdict = Verdict.undecided
    /// The first bytes of each direction, kept while the verdict is open.
    private var firstClientBytes: [UInt8] = []
    private var firstServerBytes: [UInt8] = []
    private static let sampleLength = 128

    /// Chooses the sessions of what a CONNECT tunnel carries (nil: tunnels stay opaque).
    private let tunnels: StandardSessionFactory?
    /// What reads the connection's bytes once the HTTP exchange made it something else: a
    /// WebSocket after `Upgrade: websocket` and a 101, a `TunnelRelay` after a CONNECT answered
    /// 2xx. (An h2c upgrade is `upgraded`: HTTP/2 reads the connection's own stream.)
    private var carried: (any CarriedStreamConsumer)? = nil

    /// `onTCPStream`: its stream offsets are the TCP connection's own (not inside TLS or a
    /// proxy tunnel), so bytes that reassembly finds contradicted can be tied to its transactions.
    init(connection: Connection, emitter: TransactionEmitter, options: HTTPParserOptions, scheme: String,
         tunnels: StandardSessionFactory? = nil, onTCPStream: Bool = false) {
        self.tunnels = tunnels
        self.scheme = scheme
        self.connection = connection
        self.emitter = emitter
        self.options = options
        self.pairing = InOrderPairing(connection: connection, emitter: emitter, scheme: scheme, onTCPStream: onTCPStream)
        requestParser = HTTPStreamParser(role: .request, options: options, delegate: self)
        responseParser = HTTPStreamParser(role: .response, options: options, delegate: self)
        unretainedParsers = (Unmanaged.passUnretained(requestParser), Unmanaged.passUnretained(responseParser))
    }

    /// Every transaction of the connection is flagged `weird` (in place of `request_missing`).
    func flagEveryTransaction(_ weird: Weird) { pairing.noteOnEach = weird }

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
        if verdict != .http {
            if verdict == .notHTTP { return }
            if !sample(chunk, from: direction) { return }
        }
        // Every data packet: the parser is used unretained (choosing one of two references makes
        // a retained copy); `self` holds both parsers for as long as it lives.
        let unretained = direction == .fromClient ? unretainedParsers.request : unretainedParsers.response
        unretained._withUnsafeGuaranteedRef { $0.parse(chunk) }
    }

    func missed(_ gap: StreamGap, from direction: Direction, on connection: Connection) {
        if let upgraded { return upgraded.missed(gap, from: direction, on: connection) }
        if verdict == .notHTTP { return }
        let parser = parser(for: direction)
        let inTunnel = parser.isTunnel
        if !inTunnel { pairing.lost(gap.offset..<(gap.offset + gap.length), from: direction) }
        parser.gap(gap)
        if inTunnel { carried?.missed(gap.length, at: gap.timestamp, from: direction) }
    }

    func ended(_ direction: Direction, reason: CloseReason, at timestamp: Timestamp, on connection: Connection) {
        if let upgraded { return upgraded.ended(direction, reason: reason, at: timestamp, on: connection) }
        if verdict == .notHTTP { return }
        parser(for: direction).finish(at: timestamp, reason: reason)
        carried?.ended(direction, reason: reason, at: timestamp)
    }

    func finished(_ connection: Connection, at timestamp: Timestamp) {
        if verdict != .notHTTP {
            requestParser.finish(at: timestamp, reason: .flushed)
            responseParser.finish(at: timestamp, reason: .flushed)
        }
        if verdict == .undecided {
            // Bytes from a connection whose handshake was seen, and never an HTTP message start
            // (an HTTP/0.9 GET without an answer among them): not HTTP. A connection picked up
            // mid-stream may just have shown the inside of a body: left as it is.
            if !connection.midstream && (!firstClientBytes.isEmpty || !firstServerBytes.isEmpty) {
                decideNotHTTP("no HTTP message start")
            } else {
                decideHTTP()
            }
        }
        var summary = TunnelSummary()
        summary.bytesFromClient = requestParser.tunnelBytes
        summary.bytesFromServer = responseParser.tunnelBytes
        summary.start = [requestParser.tunnelStart, responseParser.tunnelStart].compactMap { $0 }.min()
        summary.end = [requestParser.tunnelEnd, responseParser.tunnelEnd].compactMap { $0 }.max()
        carried?.finished(at: timestamp)
        pairing.finish(tunnel: summary)
        upgraded?.finished(connection, at: timestamp)
    }

    @inline(__always) private func parser(for direction: Direction) -> HTTPStreamParser {
        direction == .fromClient ? requestParser : responseParser
    }

    // MARK: Is it HTTP?

    /// Keeps the first bytes of a direction while undecided, and judges a server that speaks
    /// first. False when the chunk is not to be parsed (the connection is not HTTP).
    private func sample(_ chunk: StreamChunk, from direction: Direction) -> Bool {
        let room = Self.sampleLength - (direction == .fromClient ? firstClientBytes.count : firstServerBytes.count)
        if room > 0 {
            let part = chunk.bytes.prefix(room)
            if direction == .fromClient { firstClientBytes.append(contentsOf: part) } else { firstServerBytes.append(contentsOf: part) }
        }
        // HTTP servers never speak first; banner protocols do. (Except an HTTP status line: a
        // server may send 408 on a connection that stayed idle.)
        if direction == .fromServer, firstClientBytes.isEmpty, let client = connection.tcpHalf(.fromClient), client.sawSYN, client.gaps == 0,
           !firstServerBytes.starts(with: Array("HTTP/".utf8).prefix(firstServerBytes.count)) {
            decideNotHTTP("the server spoke first")
            return false
        }
        return true
    }

    /// The method of the first request line without a version (an HTTP/0.9 candidate).
    private var versionlessMethod: String? = nil

    /// What a message that began says about the connection.
    private func judge(_ message: HTTPMessage) {
        switch message.kind {
        case .request:
            // A version says HTTP; a versionless line waits for its answer.
            if !message.version.isEmpty { return decideHTTP() }
            if versionlessMethod == nil { versionlessMethod = message.method }
        case .response:
            // A status line says HTTP. A reply without one (HTTP/0.9) does when it answers an
            // HTTP method and is not another protocol's reply line.
            guard message.isHTTP09 else { return decideHTTP() }
            if let method = versionlessMethod, HTTPMethods.known.contains(method), !OtherProtocols.looksLikeReply(firstServerBytes[...]) {
                decideHTTP()
            } else {
                decideNotHTTP("the client's first line is not an HTTP request, and no status line answered it")
            }
        }
    }

    private func decideHTTP() {
        verdict = .http
        firstClientBytes = []
        firstServerBytes = []
        pairing.release()
    }

    private func decideNotHTTP(_ reason: String) {
        verdict = .notHTTP
        pairing.discard()
        // Inside a CONNECT tunnel the connection did carry HTTP (the CONNECT): only what the
        // tunnel carried is not.
        let inTunnel = connection.tunnel != nil
        connection.notHTTP = NonHTTPSample(reason: inTunnel ? "inside the tunnel, \(reason)" : reason, client: NonHTTPSample.firstLine(firstClientBytes),
                                           server: NonHTTPSample.firstLine(firstServerBytes))
        // What the HTTP parsers said about these bytes does not apply to them.
        for weird in [Weird.unexpectedClientData, .unexpectedServerData, .garbageSkipped, .badStatusLine, .badHeaderLine] {
            connection.forget(weird)
        }
        if connection.tunnel?.kind != .connect { connection.note(.notHTTP) }
        firstClientBytes = []
        firstServerBytes = []
    }

    // MARK: HTTPParserDelegate

    func parserBegan(_ message: HTTPMessage) {
        if verdict != .http {
            if verdict == .undecided { judge(message) }
            if verdict == .notHTTP { return }
        }
        switch message.kind {
        case .request: pairing.requestBegan(message)
        case .response: pairing.responseBegan(message)
        }
    }

    func parserCompletedHead(_ message: HTTPMessage) {
        guard message.kind == .response, verdict != .notHTTP else { return }
        if pairing.responseHeadCompleted(message) == .tunnel {
            if message.status == 101, Self.upgrades(message, to: "h2c"), let t = pairing.takeUpgradedTransaction() {
                // h2c (RFC 7540 §3.2): both directions are HTTP/2 from here; the request that
                // asked for it is stream 1. The server's bytes after the 101 in this chunk come
                // through `parserTunnelData`, everything later straight to the HTTP/2 session.
                let h2 = HTTP2Session(connection: connection, emitter: emitter, options: options, scheme: scheme, expectsPreface: true)
                h2.adoptUpgradeRequest(t)
                upgraded = h2
                return
            }
            if message.status == 101, Self.upgrades(message, to: "websocket"), let t = pairing.upgradeTransaction {
                // RFC 6455: both directions are WebSocket frames from here.
                carried = WebSocketSession(transaction: t, response: message, connection: connection, options: options.webSocket, budget: options.webSocketBudget)
            }
            // The response parser tunnels on its own (its framing says so); the client's side
            // follows from here.
            requestParser.enterTunnel()
            // A CONNECT answered 2xx: what the tunnel carries is chosen by its content (TLS,
            // HTTP, HTTP/2), as a connection's is; the transactions found inside it are flagged.
            if message.status != 101, let tunnels, let target = pairing.tunnelTarget {
                connection.tunnel = ProxyTunnel(kind: .connect, target: target)
                carried = TunnelRelay(connection: connection, factory: tunnels, emitter: emitter)
            }
        }
    }

    /// A 101 whose Upgrade names `protocolName` (lower case; "h2c", "websocket").
    private static func upgrades(_ message: HTTPMessage, to protocolName: String) -> Bool {
        guard let value = message.headers.combined(.upgrade) else { return false }
        return value.split(separator: ",").contains { $0.trimmingASCIIWhitespace().lowercased() == protocolName }
    }

    func parserTunnelData(_ bytes: UnsafeRawBufferPointer, at ts: Timestamp, from role: HTTPMessage.Kind) {
        let direction: Direction = role == .request ? .fromClient : .fromServer
        if let upgraded {
            upgraded.received(StreamChunk(offset: 0, bytes: bytes, timestamp: ts), from: .fromServer, on: connection)
        } else {
            carried?.received(bytes, at: ts, from: direction)
        }
    }

    func parserEnded(_ message: HTTPMessage) {
        guard verdict != .notHTTP else { return }
        pairing.messageEnded()
    }

    func parserRequestBeingAnswered() -> RequestContext {
        // The server has started to answer: a versionless request line still waiting for what
        // comes next was HTTP/0.9.
        requestParser.resolvePendingHTTP09()
        return pairing.requestBeingAnswered()
    }

    func parserSkipped(_ weird: Weird, bytes: Int) {
        guard verdict != .notHTTP else { return }
        connection.note(weird)
    }
}
