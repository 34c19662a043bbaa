/// The exchanges of a multiplexed connection seen without keys (HTTP/2 in TLS records, HTTP/3 in
/// QUIC packets): a request at each client unit the protocol's reader takes for one
/// (`RecordPattern`, `QUICPacketPattern`), and what the server sent until the next.
///
/// An exchange is *alone* when server data came between it and the request before it, and
/// between it and the request after it: the client waited for a response before it asked again,
/// so what the server sent in between was that response. Only then are its response bytes and
/// times kept; requests written in one burst (a browser's page load) share the data that follows,
/// which cannot be told apart: their response fields stay nil, never guessed. Wrong when a
/// request is sent while the previous response is still streaming (both then look alone).
/// Memory: at most `maxExchanges` exchanges; past it they are counted (`dropped`).
struct RequestSeries {
    static let maxExchanges = RecordPattern.maxExchanges
    private(set) var exchanges: [EncryptedExchange] = []
    private(set) var dropped = 0
    /// Server data came since the last request (true before the first: nothing before it).
    private var serverDataSinceRequest = true
    /// The last request is the last kept exchange (not dropped past the cap).
    private var open = false
    /// What a response's bytes in the units hold besides its header block and body, once per
    /// response (its HEADERS and first DATA frames' headers: the per-unit framing is the
    /// reader's to take off).
    let responseFraming: Int

    init(responseFraming: Int) { self.responseFraming = responseFraming }

    var count: Int { exchanges.count + dropped }
    /// A request was sent and no server data came since.
    var awaitingResponse: Bool { open && !serverDataSinceRequest }

    /// A client unit that carries a request. `keep`: false when a budget beyond this connection
    /// has no room for it (it is then counted only, as past `maxExchanges`).
    mutating func request(first: Timestamp, last: Timestamp, bytes: Int, keep: Bool = true) {
        close()
        guard keep && exchanges.count < Self.maxExchanges else { dropped += 1; open = false; serverDataSinceRequest = false; return }
        exchanges.append(EncryptedExchange(requestStart: first, requestEnd: last, requestBytes: bytes, responseStart: nil, responseEnd: nil,
                                           responseBytes: nil, requestRecords: 1, responseRecords: 0, alone: serverDataSinceRequest))
        open = true
        serverDataSinceRequest = false
    }

    /// A client unit that continues the request (a body), before any response came.
    mutating func requestContinued(last: Timestamp, bytes: Int) {
        guard open, !serverDataSinceRequest else { return }
        let i = exchanges.count - 1
        exchanges[i].requestEnd = last
        exchanges[i].requestBytes += bytes
        exchanges[i].requestRecords += 1
    }

    /// A server unit of response data (not a bare control frame or acknowledgement).
    mutating func response(first: Timestamp, last: Timestamp, bytes: Int) {
        guard open else { return }
        serverDataSinceRequest = true
        let i = exchanges.count - 1
        if exchanges[i].responseStart == nil {
            exchanges[i].responseStart = first
            exchanges[i].responseBytes = -responseFraming
        }
        exchanges[i].responseEnd = last
        exchanges[i].responseBytes = max(0, (exchanges[i].responseBytes ?? 0) + bytes)
        exchanges[i].responseRecords += 1
    }

    /// The last exchange is over when the next request comes (or the connection ends): alone if
    /// server data came after it too; if not, its response is not known.
    private mutating func close() {
        guard open else { return }
        open = false
        let i = exchanges.count - 1
        exchanges[i].alone = exchanges[i].alone && serverDataSinceRequest
        if !exchanges[i].alone {
            exchanges[i].responseStart = nil
            exchanges[i].responseEnd = nil
            exchanges[i].responseBytes = nil
        }
    }

    /// Takes back the last request when no server data followed it and it carried fewer than
    /// `bytes` (a connection's closing frames, which look like a small request).
    mutating func dropUnansweredLast(under bytes: Int) {
        guard open, !serverDataSinceRequest, let last = exchanges.last, last.requestBytes < bytes, last.requestRecords == 1 else { return }
        exchanges.removeLast()
        open = false
    }

    /// The exchanges, the last one closed.
    mutating func result() -> [EncryptedExchange] {
        close()
        return exchanges
    }
}
