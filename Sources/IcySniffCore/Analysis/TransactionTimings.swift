/// HAR 1.2 timings of a transaction, in milliseconds, from packet timestamps (docs/TIMINGS.md).
/// -1 marks a phase that was not observed.
public struct TransactionTimings: Sendable {
    public var blocked: Double = -1
    public var dns: Double = -1
    public var connect: Double = -1
    public var ssl: Double = -1
    public var send: Double = 0
    public var wait: Double = 0
    public var receive: Double = 0
    /// Start of the first counted phase.
    public var start: Timestamp = .zero

    /// Sum of the non-negative phases (HAR's entry.time).
    public var total: Double {
        max(0, blocked) + max(0, dns) + max(0, connect) + max(0, send) + max(0, wait) + max(0, receive)
    }

    /// - connect, first request of a connection only: its set-up (`ConnectionSetup`) — the
    ///   transport's handshake (TCP: first SYN to the client's ACK of the SYN-ACK) and then the
    ///   TLS handshake, which is ssl (included in connect, HAR 1.2), as far as it came before the
    ///   request (0-RTT sends it earlier); QUIC has no handshake apart from TLS's, so its connect
    ///   and ssl are the same span; a set-up not seen from its start gives neither;
    /// - send: first to last byte of the request; wait: last request byte to first response byte;
    /// - receive: first to last response byte; dns: a matching captured lookup, when one is given.
    static func compute(for t: Transaction, dns lookup: DNSLookup?) -> TransactionTimings {
        var timings = TransactionTimings()
        let req = t.request
        let resp = t.response
        let firstRequestByte = req?.arrival.firstByte ?? resp?.arrival.firstByte ?? .zero
        var start = firstRequestByte
        let setup = t.connection.setup
        if t.depth == 1, let begin = setup.start, begin <= firstRequestByte {
            // When the transport could carry the TLS handshake.
            var ready: Timestamp? = begin
            if let transport = setup.transport, let end = transport.end {
                ready = end >= transport.start ? end : nil
                if ready != nil { timings.connect = end.milliseconds(since: transport.start) }
            }
            if let ready {
                start = begin
                if let secure = setup.secure, secure.start >= ready {
                    let end = min(secure.end ?? firstRequestByte, firstRequestByte)
                    if end >= secure.start {
                        timings.ssl = end.milliseconds(since: secure.start)
                        timings.connect = end.milliseconds(since: begin)
                    }
                }
                if let lookup, lookup.answered <= begin {
                    timings.dns = lookup.answered.milliseconds(since: lookup.queried)
                    start = lookup.queried
                    // The time between the answer and the set-up is the client's: not part of any phase.
                }
            }
        }
        if let req {
            timings.send = max(0, req.arrival.lastByte.milliseconds(since: req.arrival.firstByte))
        }
        if let resp {
            // An interim 1xx reply (100 Continue) is part of the exchange, not of the final response.
            let responseStart = resp.arrival.firstByte
            if let req {
                timings.wait = max(0, responseStart.milliseconds(since: req.arrival.lastByte))
            }
            timings.receive = max(0, resp.arrival.lastByte.milliseconds(since: responseStart))
        }
        timings.start = start
        return timings
    }
}
