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

    /// - connect: first SYN to the client's ACK of the SYN-ACK, first request of a connection only;
    ///   over TLS, first SYN to the end of the TLS handshake, and ssl is the handshake (included
    ///   in connect, HAR 1.2) — as far as it came before the request (0-RTT sends it earlier);
    ///   over QUIC, connect and ssl are both the QUIC handshake, up to the request at most;
    /// - send: first to last byte of the request; wait: last request byte to first response byte;
    /// - receive: first to last response byte; dns: a matching captured lookup, when one is given.
    static func compute(for t: Transaction, dns lookup: DNSLookup?) -> TransactionTimings {
        var timings = TransactionTimings()
        let req = t.request
        let resp = t.response
        let firstRequestByte = req?.firstByte ?? resp?.firstByte ?? .zero
        var start = firstRequestByte
        if t.depth == 1, t.connection.quic, let start0 = t.connection.tlsHandshakeStart, start0 <= firstRequestByte {
            // QUIC: the connection is its handshake (TLS 1.3 inside QUIC), so connect and ssl are
            // the same span, from the client's first Initial to its Finished — or to the request,
            // sent before that as 0-RTT.
            let end = min(t.connection.tlsHandshakeEnd ?? firstRequestByte, firstRequestByte)
            timings.connect = end.milliseconds(since: start0)
            timings.ssl = timings.connect
            start = start0
        } else if t.depth == 1, let syn = t.connection.synTime, let ack = t.connection.handshakeAckTime, ack >= syn, syn <= firstRequestByte {
            timings.connect = ack.milliseconds(since: syn)
            start = syn
            if let tlsStart = t.connection.tlsHandshakeStart, tlsStart >= ack {
                // 0-RTT: the request went before the handshake ended (even before it is known).
                let end = min(t.connection.tlsHandshakeEnd ?? firstRequestByte, firstRequestByte)
                if end >= tlsStart {
                    timings.ssl = end.milliseconds(since: tlsStart)
                    timings.connect = end.milliseconds(since: syn)
                }
            }
            if let lookup, lookup.answered <= syn {
                timings.dns = lookup.answered.milliseconds(since: lookup.queried)
                start = lookup.queried
                // The time between the answer and the SYN is the client's: not part of any phase.
            }
        }
        if let req {
            timings.send = max(0, req.lastByte.milliseconds(since: req.firstByte))
        }
        if let resp {
            // An interim 1xx reply (100 Continue) is part of the exchange, not of the final response.
            let responseStart = resp.firstByte
            if let req {
                timings.wait = max(0, responseStart.milliseconds(since: req.lastByte))
            }
            timings.receive = max(0, resp.lastByte.milliseconds(since: responseStart))
        }
        timings.start = start
        return timings
    }
}
