/// What the sizes, directions and times of an encrypted connection's records say when no key
/// opens them: the protocol inside, and for HTTP/1.1 each exchange — a TLS record carries exactly
/// the bytes the application wrote, less the cipher's overhead. An estimate, labelled as such
/// everywhere it is shown (`inferred`); a decrypted connection has its transactions instead.
///
/// HTTP/1.1 is one request, then its response: a client record after server records begins the
/// next exchange; server records before any request are not a response (TLS 1.3's
/// NewSessionTickets, sent after the client's Finished). HTTP/2 is told by its connection set-up:
/// the server's SETTINGS, sent unasked after the handshake (smaller than any NewSessionTicket),
/// or a SETTINGS acknowledgement (a 9-byte record) early on; its requests are multiplexed and not
/// estimated here.
public struct InferredTraffic: Sendable, Equatable {
    /// `http/1.1`, `h2` or `h3`.
    public var protocolName: String
    /// Told by the record pattern, not shown by the handshake (TLS 1.3 and QUIC encrypt the
    /// negotiated ALPN).
    public var protocolInferred: Bool
    /// The exchanges in order (at most `RecordPattern.maxExchanges`): HTTP/1.1's, and the
    /// requests of HTTP/2 and HTTP/3 (`RequestSeries`: response fields only where alone).
    public var exchanges: [EncryptedExchange] = []
    /// How many exchanges (nil: not estimated); exact unless a cap or a lost record made it a
    /// lower bound (HTTP/2 and HTTP/3: never exact).
    public var exchangeCount: Int?
    public var exact: Bool = true
}

/// One exchange seen in record (or packet) sizes: the request's records, then the response's.
/// Bytes are the HTTP messages as sent (head and body as transferred), from the record lengths
/// less the cipher's overhead (for CBC suites, whose padding is not known, an estimate).
public struct EncryptedExchange: Sendable, Equatable {
    public var requestStart: Timestamp
    public var requestEnd: Timestamp
    public var requestBytes: Int
    public var responseStart: Timestamp?
    public var responseEnd: Timestamp?
    public var responseBytes: Int?
    public var requestRecords: Int
    public var responseRecords: Int
    /// No other exchange was in flight: its response bytes and times are its own (always for
    /// HTTP/1.1; for HTTP/2 and HTTP/3 see `RequestSeries`).
    public var alone: Bool = true
}

extension EncryptedExchange {
    /// Its phases in ms, as every output writes them (rows, the HAR's estimates, the report):
    /// the request's own time and the whole only when it was alone (otherwise the response's
    /// fields are nil, and so are these).
    var sendMilliseconds: Double? { alone ? Self.span(requestStart, requestEnd) : nil }
    var waitMilliseconds: Double? { Self.span(requestEnd, responseStart) }
    var receiveMilliseconds: Double? { Self.span(responseStart, responseEnd) }
    var totalMilliseconds: Double? { alone ? Self.span(requestStart, responseEnd ?? requestEnd) : nil }
    /// From the request's first byte to the response's (send + wait).
    var firstByteMilliseconds: Double? { Self.span(requestStart, responseStart) }

    private static func span(_ a: Timestamp?, _ b: Timestamp?) -> Double? {
        guard let a, let b else { return nil }
        return max(0, b.milliseconds(since: a))
    }
}

/// Reads the application-data records of one TLS connection (`record`), then answers what they
/// say (`result`). Memory: the exchanges, at most `maxExchanges`.
struct RecordPattern {
    static let maxExchanges = 10_000
    /// What a kept exchange is charged in the connection's `StateBudget`: its 80 bytes and its
    /// share of the array. Past the budget the table ends the longest idle connections
    /// (`state_budget_exceeded`), whose estimates are then written.
    static let bytesPerExchange = 96
    /// Exchanges kept so far, HTTP/1.1's and HTTP/2's (the session charges the new ones).
    var kept: Int { keptHTTP1 + h2.exchanges.count }
    private var keptHTTP1 = 0
    /// The plaintext lengths taken for TLS 1.3 NewSessionTickets (here and by `TLSSession`); a
    /// record smaller, sent unasked, is HTTP/2's SETTINGS.
    static let ticketLengths = 100...400

    private var exchanges: [EncryptedExchange] = []
    /// The exchange being read (`open`), changed where it lies: once per record.
    private var current = EncryptedExchange(requestStart: .zero, requestEnd: .zero, requestBytes: 0, responseStart: nil, responseEnd: nil,
                                            responseBytes: nil, requestRecords: 0, responseRecords: 0)
    private var open = false
    private var dropped = 0
    private var sawClientData = false
    private var h2Signs = 0
    private var records = 0
    private var lost = false
    /// Plaintext lengths of the first response's records: the leading NewSessionTickets of a
    /// TLS 1.3 server whose client sent its first request with its Finished are taken off.
    private var firstResponse: [Int] = []
    private var firstRequestWithFinished = false
    /// HTTP/2: the client's records that may carry a request's HEADERS (`countH2Request`), and
    /// the server's between them: read beside HTTP/1.1's exchanges until the end decides which.
    private var h2 = RequestSeries(responseFraming: 9)
    private var clientRecords = 0
    var overhead = 0

    /// An application-data record after the handshake (TLS 1.3: not the encrypted handshake,
    /// not the client's Finished). `withFinished`: the client's first request came within a
    /// millisecond of its Finished (in the same flight).
    mutating func record(fromClient: Bool, length: Int, first: Timestamp, last: Timestamp, withFinished: Bool = false, lost recordLost: Bool = false) {
        let plaintext = max(0, length - overhead)
        // TLS 1.3 sends its alerts (close_notify) as application data: two bytes. Nor is
        // anything under 16 bytes an HTTP/1.1 message (the shortest request line is 16).
        if plaintext == 2 { return }
        records += 1
        if recordLost { lost = true }
        if records <= 8 && plaintext == 9 { h2Signs += 1 }
        if fromClient { countH2Request(plaintext, first: first, last: last) } else { h2Response(plaintext, first: first, last: last) }
        if fromClient {
            let inRequest = open && current.responseStart == nil
            guard plaintext >= 16 || inRequest else { return }
            if !sawClientData { firstRequestWithFinished = withFinished }
            sawClientData = true
            if inRequest {
                current.requestBytes += plaintext
                current.requestEnd = last
                current.requestRecords += 1
                return
            }
            close()
            current = EncryptedExchange(requestStart: first, requestEnd: last, requestBytes: plaintext, responseStart: nil, responseEnd: nil,
                                        responseBytes: nil, requestRecords: 1, responseRecords: 0)
            open = true
        } else {
            guard open else {
                // Before any request: TLS 1.3 tickets, or HTTP/2's SETTINGS.
                if !sawClientData && plaintext < Self.ticketLengths.lowerBound { h2Signs += 1 }
                return
            }
            if exchanges.isEmpty && firstResponse.count < 8 { firstResponse.append(plaintext) }
            if current.responseStart == nil { current.responseStart = first }
            current.responseEnd = last
            current.responseBytes = (current.responseBytes ?? 0) + plaintext
            current.responseRecords += 1
        }
    }

    /// HTTP/2's requests, as a browser or curl writes them: the client's first record is the
    /// preface (24 bytes), SETTINGS and a WINDOW_UPDATE, with a request's HEADERS when larger
    /// than those can be; a later record carries a request unless it is a bare control frame
    /// (SETTINGS acknowledgement 9, WINDOW_UPDATE or RST_STREAM 13, PRIORITY 14, PING 17) or a
    /// request body's full DATA frame (1,200 bytes and more). Several requests in one record
    /// count once, a small request body as a request: an estimate, never marked exact.
    /// The request's bytes are its HEADERS frame's block (the record less a frame header; the
    /// first record less the preface, SETTINGS and WINDOW_UPDATE too).
    private mutating func countH2Request(_ plaintext: Int, first: Timestamp, last: Timestamp) {
        clientRecords += 1
        let setUp = 24 + 9 + 6 * 8 + 13
        if clientRecords == 1 {
            if plaintext > setUp { h2.request(first: first, last: last, bytes: plaintext - setUp - 9) }
        } else {
            switch plaintext {
            case 9, 13, 14, 17: break
            case 1200...: h2.requestContinued(last: last, bytes: plaintext - 9)
            default: h2.request(first: first, last: last, bytes: plaintext - 9)
            }
        }
    }

    /// A server record of HTTP/2: response data unless a bare control frame (a SETTINGS
    /// acknowledgement, WINDOW_UPDATE, PING); less one frame header a record.
    private mutating func h2Response(_ plaintext: Int, first: Timestamp, last: Timestamp) {
        switch plaintext {
        case 9, 13, 17: break
        default: h2.response(first: first, last: last, bytes: max(0, plaintext - 9))
        }
    }

    private mutating func close() {
        guard open else { return }
        open = false
        var c = current
        if exchanges.isEmpty && firstRequestWithFinished {
            // TLS 1.3 tickets the server sent as it read the client's Finished, ahead of the
            // response to the request that came with it: their size, several records before
            // the last.
            var taken = 0
            for length in firstResponse.dropLast() where Self.ticketLengths.contains(length) && taken < 2 {
                taken += 1
                c.responseBytes = (c.responseBytes ?? 0) - length
                c.responseRecords -= 1
            }
        }
        if exchanges.count < Self.maxExchanges {
            exchanges.append(c)
            keptHTTP1 += 1
        } else {
            dropped += 1
        }
    }

    /// What the records said. `offered`: the ClientHello's ALPN list; `negotiated`: the ALPN the
    /// handshake shows (TLS 1.2), which decides.
    mutating func result(offered: [String]?, negotiated: String?) -> InferredTraffic? {
        close()
        let protocolName: String
        var inferred = false
        if let negotiated, negotiated == "h2" || negotiated == "http/1.1" {
            protocolName = negotiated
        } else if h2Signs > 0 && (offered ?? []).contains("h2") {
            protocolName = "h2"
            inferred = true
        } else {
            protocolName = "http/1.1"
            inferred = !(offered == nil || offered == ["http/1.1"])
        }
        guard records > 0 || negotiated != nil else { return nil }
        var out = InferredTraffic(protocolName: protocolName, protocolInferred: inferred)
        if protocolName == "http/1.1" {
            out.exchanges = exchanges
            out.exchangeCount = exchanges.count + dropped
            out.exact = dropped == 0 && !lost
        } else if protocolName == "h2" {
            out.exchanges = h2.result()
            out.exchangeCount = h2.count
            out.exact = false
        }
        return out
    }
}
